//! Publishers' signatures at create: for each release asset whose
//! publisher the recipe table (or the site, `--identity`) names a signer
//! for, the GitHub artifact attestations of its sha256 are fetched
//! (and for each file of an environment from PyPI, its PEP 740
//! provenance: [`pypi`]),
//! verified offline against the trusted root, and held against who may
//! sign; the one that passes is carried (format 7's
//! `evidence.signatures`), and import verifies it again.
//!
//! Why nothing is asked without a policy: "any valid signature" proves
//! nothing (anyone can sign anything with Sigstore), so a source nobody
//! named a signer for is not looked up at all, and its artifacts carry
//! only their publisher digests, as before.
//!
//! Invariant: a run either carries, for an asset with a policy, a bundle
//! that verified and names an admitted signer; or records it unsigned
//! (nothing offered, and either nothing required or
//! `--allow-unsigned-upstream`); or stops, naming the asset and why.
//! Evidence that verifies for another signer, or does not verify, always
//! stops the run: it is an attack or a fault, never a gap.

mod github;
mod policy;
pub mod pypi;

pub use policy::SignaturePolicy;

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{
    AdmittedBy, BlobRef, PublisherSignature, SignatureKind, Signatures, UnsignedArtifact,
};
use llmgw_shared::provenance::{self, Identity};

use crate::cache::Cache;
use crate::error::{CreateError, SignatureError};
use crate::http::Http;

/// A verified attestation, held until the manifest is written (its bytes
/// become a blob then).
#[derive(Debug, Clone)]
pub struct Attested {
    /// The signed artifact.
    pub artifact: Sha256,
    /// What it is, for people.
    pub what: String,
    /// The Sigstore bundle's bytes as served.
    pub bundle: Vec<u8>,
    /// Who signed, and when.
    pub signed: provenance::Signed,
    /// What kind of evidence it is.
    pub kind: SignatureKind,
    /// The file name its statement names (PEP 740).
    pub file_name: Option<String>,
    /// The policy that admitted its signer (PEP 740).
    pub admitted_by: Option<AdmittedBy>,
}

/// What the plan gathered about publishers' signatures.
#[derive(Debug, Clone, Default)]
pub struct Gathered {
    /// Verified attestations.
    pub attested: Vec<Attested>,
    /// Artifacts let in without the signature their policy expects.
    pub unsigned: Vec<UnsignedArtifact>,
}

impl Gathered {
    /// Adds what [`seek`] or [`pypi::seek`] found, once per artifact (a
    /// wheel two environments share is looked up for each).
    pub fn add(&mut self, found: Option<Found>) {
        let known = |sha: &Sha256, g: &Self| {
            g.attested.iter().any(|a| &a.artifact == sha)
                || g.unsigned.iter().any(|u| &u.artifact == sha)
        };
        match found {
            Some(Found::Attested(a)) if !known(&a.artifact, self) => self.attested.push(a),
            Some(Found::Unsigned(u)) if !known(&u.artifact, self) => self.unsigned.push(u),
            _ => {}
        }
    }
}

/// What [`seek`] found for one artifact that goes on record.
#[derive(Debug, Clone)]
pub enum Found {
    /// A verified attestation by an admitted signer.
    Attested(Attested),
    /// None, where one was expected, let in by `--allow-unsigned-upstream`.
    Unsigned(UnsignedArtifact),
}

/// Seeks and checks the attestations of release asset `sha256` of `repo`
/// (`what` names it in messages): what goes on record, if anything.
pub async fn seek(
    http: &Http,
    (api, policy): (&str, &SignaturePolicy),
    repo: &str,
    what: String,
    sha256: &Sha256,
) -> Result<Option<Found>, CreateError> {
    let Some((signers, required)) = policy.signers_for_release(repo) else {
        return Ok(None);
    };
    let expected = describe(&signers);
    let (url, bundles) = github::attestations(http, api, repo, sha256, &what).await?;
    let mut wrong = None;
    for bundle in bundles {
        let signed = provenance::verify(&bundle, sha256, policy.root()).map_err(|source| {
            SignatureError::Unverified {
                what: what.clone(),
                url: url.clone(),
                source,
            }
        })?;
        if signers.iter().any(|s| s.admits(&signed)) {
            return Ok(Some(Found::Attested(Attested {
                artifact: sha256.clone(),
                what,
                bundle,
                signed,
                kind: SignatureKind::GithubAttestation,
                file_name: None,
                admitted_by: None,
            })));
        }
        wrong.get_or_insert(signed);
    }
    if let Some(signed) = wrong {
        return Err(SignatureError::WrongSigner {
            what,
            expected,
            issuer: signed.issuer,
            identity: signed.identity,
        }
        .into());
    }
    if required && !policy.allow_unsigned() {
        return Err(SignatureError::Missing {
            what,
            url,
            expected,
        }
        .into());
    }
    Ok(required.then(|| {
        Found::Unsigned(UnsignedArtifact {
            artifact: sha256.clone(),
            what,
            expected,
            allowed_by: "--allow-unsigned-upstream".to_string(),
        })
    }))
}

/// The manifest's record of what was gathered (the bundles and the root
/// put in `cache`, answered as blobs for the writer); `None` when nothing
/// was signed or let in unsigned.
pub fn record(
    gathered: Gathered,
    policy: &SignaturePolicy,
    cache: &Cache,
) -> Result<Option<(Signatures, Vec<crate::writer::Blob>)>, CreateError> {
    if gathered.attested.is_empty() && gathered.unsigned.is_empty() {
        return Ok(None);
    }
    let mut blobs = Vec::new();
    let mut put = |bytes: &[u8]| -> Result<BlobRef, CreateError> {
        let (sha256, path) = cache
            .put_bytes(bytes)
            .map_err(|e| CreateError::io(cache.root(), e))?;
        let size = bytes.len() as u64;
        blobs.push(crate::writer::Blob {
            sha256: sha256.clone(),
            size,
            path,
        });
        Ok(BlobRef { sha256, size })
    };
    let trusted_root = put(policy.root().json())?;
    let mut signed = Vec::new();
    for a in gathered.attested {
        signed.push(PublisherSignature {
            artifact: a.artifact,
            what: a.what,
            kind: a.kind,
            bundle: put(&a.bundle)?,
            issuer: a.signed.issuer,
            identity: a.signed.identity,
            signed_at: a.signed.signed_at,
            file_name: a.file_name,
            admitted_by: a.admitted_by,
        });
    }
    let mut signatures = Signatures {
        trusted_root,
        trusted_root_from: policy.root_from().to_string(),
        signed,
        unsigned: gathered.unsigned,
    };
    signatures.sort();
    Ok(Some((signatures, blobs)))
}

/// Who may sign, for messages: "A or B".
fn describe(signers: &[Identity]) -> String {
    signers
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" or ")
}
