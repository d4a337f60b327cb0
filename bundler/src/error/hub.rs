//! Why a Hugging Face repository could not be used: one variant per kind
//! of fault, each naming the repository (`model ORG/NAME@REV`) and what to
//! do where there is something to do.
//!
//! Invariant: a message is the same words the operator has always been
//! shown (tests and docs quote them); a cause is a `#[source]`, printed
//! after it by `llmgw_shared::chain`, never repeated in it.

use thiserror::Error;

/// What to do about a refusal, with or without a token given.
fn token_hint(have_token: &bool) -> &'static str {
    if *have_token {
        "HF_TOKEN is set, but the Hub refused it: check that its account has accepted the \
         repository's terms and the token can read it"
    } else {
        "set HF_TOKEN to a token of an account that has accepted its terms"
    }
}

/// What the Hub said with a refusal, for a message: ` (the Hub said: …)`.
fn hub_said(message: &Option<String>) -> String {
    message
        .as_deref()
        .map(|m| format!(" (the Hub said: {m})"))
        .unwrap_or_default()
}

/// A Hugging Face repository that could not be used.
#[derive(Debug, Error)]
pub enum HubError {
    /// The Hub refused the repository: gated or private (401, 403, or
    /// `X-Error-Code: GatedRepo`).
    #[error(
        "{what}: the repository is gated or private ({status}){}; {}",
        hub_said(message),
        token_hint(have_token)
    )]
    Gated {
        /// The repository at its revision (`model org/m@main`).
        what: String,
        status: u16,
        /// What the Hub said, when it said something.
        message: Option<String>,
        have_token: bool,
    },

    /// The endpoint has no such revision of the repository.
    #[error("{what}: {endpoint} has no revision {revision}{}", hub_said(message))]
    NoRevision {
        what: String,
        endpoint: String,
        revision: String,
        message: Option<String>,
    },

    /// The endpoint has no such repository (or hides it).
    #[error(
        "{what}: {endpoint} has no such repository{}; check the name (if it is private or \
         gated, {})",
        hub_said(message),
        token_hint(have_token)
    )]
    NoRepository {
        what: String,
        endpoint: String,
        message: Option<String>,
        have_token: bool,
    },

    /// A file's download was refused (401/403): `hint` says how to give
    /// a token.
    #[error("{label}: {url} answered {status}; {hint}")]
    Denied {
        /// The download (`org/m config.json`).
        label: String,
        url: String,
        status: reqwest::StatusCode,
        hint: String,
    },

    /// The revision answer names no commit.
    #[error("{what}: the Hub's revision answer has no 40-hex commit `sha` (found {found:?})")]
    NoCommit { what: String, found: String },

    /// Listing the branches and tags failed (not with a 404, which means
    /// the endpoint has no such listing).
    #[error("{what}: listing its branches and tags ({url}) failed")]
    Refs {
        what: String,
        url: String,
        #[source]
        error: Box<crate::error::CreateError>,
    },

    /// The tree listing does not end.
    #[error(
        "{what}: the tree listing has more than {max_pages} pages (the last asked for was \
         {last}); refusing a listing that does not end"
    )]
    EndlessTree {
        what: String,
        max_pages: usize,
        /// The last page asked for (shown: printable, bounded).
        last: String,
    },

    /// The tree listing names a page already fetched as its next.
    #[error(
        "{what}: the tree listing loops: {page} names {next} as its next page \
         (`Link: rel=\"next\"`), which was already fetched"
    )]
    TreeLoops {
        what: String,
        page: String,
        next: String,
    },

    /// A file of the tree has no git oid.
    #[error("{what}: {path}: the tree gives no 40-hex git oid (found {found:?})")]
    NoGitOid {
        what: String,
        path: String,
        found: String,
    },

    /// A file's LFS oid is not a sha256.
    #[error("{what}: {path}: its LFS oid {oid:?} is not a sha256")]
    LfsOid {
        what: String,
        path: String,
        oid: String,
    },

    /// A file's `xetHash` is not a Xet hash (64 hex digits).
    #[error(
        "{what}: {path}: the tree lists its xetHash as {found:?}, not 64 hex digits; the \
         Hub's answer is damaged or not the Hub's: try again, or point --hf-endpoint at the Hub"
    )]
    XetHash {
        what: String,
        path: String,
        /// At most its first 80 characters.
        found: String,
    },

    /// A file's size in the tree and in its LFS pointer differ.
    #[error("{what}: {path}: the tree lists size {tree} but LFS size {lfs}")]
    LfsSize {
        what: String,
        path: String,
        tree: u64,
        lfs: u64,
    },

    /// No file of the repository is chosen: it has none, or none the
    /// globs match.
    #[error("{what}: {reason}")]
    NothingChosen { what: String, reason: String },

    /// A planned file's bytes were fetched but never recorded (a bug).
    #[error("{repo} {path}: fetched but not recorded")]
    NotRecorded { repo: String, path: String },
}
