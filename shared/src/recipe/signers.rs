//! Who may sign each publisher's release assets: the identity policy the
//! bundler holds GitHub artifact attestations against. Never "any valid
//! signature": an attestation made by another workflow, or another
//! repository's, verifies just as well and proves nothing about this
//! release.
//!
//! Each row names the OIDC issuer and the certificate identity of the
//! workflow that signs; an identity ending in `@` admits any ref of that
//! workflow (each release is signed from its own tag). A site adds its
//! own rows with `bundle create --identity github:OWNER/REPO=ISSUER,IDENTITY`;
//! the PyPI table ([`PYPI_SIGNERS`]) names who may attest a project's
//! files (PEP 740), `--identity pypi:PROJECT=ISSUER,IDENTITY` a site's.

use crate::provenance::GITHUB_ACTIONS_ISSUER;

/// One publisher's signer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signer {
    /// The release repository, `owner/name`.
    pub repo: &'static str,
    /// The OIDC issuer.
    pub issuer: &'static str,
    /// The certificate identity, exactly or up to a trailing `@`.
    pub identity: &'static str,
    /// Whether every release the table accepts is signed, so a missing
    /// attestation is refused rather than recorded.
    pub always_signs: bool,
}

/// The table.
pub const SIGNERS: &[Signer] = &[
    // llama.cpp attests its release assets with GitHub artifact
    // attestations from its release workflow since 2026-08
    // (ggml-org/llama.cpp#25933, #27389). Older `bNNNN` tags, which the
    // table still accepts, have none: not "always".
    Signer {
        repo: "ggml-org/llama.cpp",
        issuer: GITHUB_ACTIONS_ISSUER,
        identity: "https://github.com/ggml-org/llama.cpp/.github/workflows/release.yml@",
        always_signs: false,
    },
    // uv attests its release archives, installers and dist-manifest
    // (astral-sh/uv#11357, "Add uv release artifact attestations"), made
    // possible for its custom build by attesting in cargo-dist's host job
    // (axodotdev/cargo-dist#2000), which runs in the generated
    // `release.yml`. Read from those threads, not from a signed uv release:
    // if the signer differs, create refuses naming both identities, and a
    // site admits the right one with `--identity`. Releases before the
    // change have none: not "always".
    Signer {
        repo: "astral-sh/uv",
        issuer: GITHUB_ACTIONS_ISSUER,
        identity: "https://github.com/astral-sh/uv/.github/workflows/release.yml@",
        always_signs: false,
    },
];

/// The signers the table names for release repository `repo`.
pub fn signers_of(repo: &str) -> impl Iterator<Item = &'static Signer> + '_ {
    SIGNERS
        .iter()
        .filter(move |s| s.repo.eq_ignore_ascii_case(repo))
}

/// One PyPI project's Trusted Publisher, for its files' PEP 740
/// attestations (`--identity pypi:PROJECT=ISSUER,IDENTITY` adds a site's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PypiSigner {
    /// The project, PEP 503 normalized.
    pub project: &'static str,
    /// The OIDC issuer.
    pub issuer: &'static str,
    /// The certificate identity, exactly or up to a trailing `@`.
    pub identity: &'static str,
    /// Whether every file the table accepts is attested, so a file PyPI
    /// offers no provenance for is refused rather than recorded.
    pub always_signs: bool,
}

/// The PyPI table: empty, on purpose. A row needs a source that says who
/// publishes the project's files *with attestations*, and none of the
/// projects the recipe carries from PyPI has one here: uv, the likeliest,
/// uploads from `.github/workflows/publish-pypi.yml` (called by
/// `release.yml`) with `uv publish`, which uploads no attestation it was
/// not handed, so its files may carry none — a guessed row would refuse
/// them. A project no row names is held against the Trusted Publisher
/// PyPI's own provenance names for the file (the check
/// `pypi-attestations verify pypi` makes), recorded as such.
pub const PYPI_SIGNERS: &[PypiSigner] = &[];

/// The signers the table names for PyPI project `project` (normalized).
pub fn pypi_signers_of(project: &str) -> impl Iterator<Item = &'static PypiSigner> + '_ {
    PYPI_SIGNERS.iter().filter(move |s| s.project == project)
}
