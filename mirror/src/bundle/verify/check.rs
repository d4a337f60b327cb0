//! The streaming driver: one pass over a bundle's entries, each step in
//! the order the bundle format promises (see [`super`]), every blob
//! streamed once into the caller's [`Target`].
//!
//! Invariant: a blob is kept by the target only after its bytes hashed to
//! its name, and the check succeeds only if every blob the manifest names
//! was verified (now or before) and every signed release was proven; the
//! first refusal, or the target's own error, ends the pass and is returned
//! as it is.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use llmgw_shared::manifest::Manifest;
use llmgw_shared::signing::PublicKey;
use llmgw_shared::{BundleId, Sha256};

use super::classify::{self, Entry};
use super::error::VerifyError;
use super::manifest::{self, Gated};
use super::oci::OciTrees;
use super::publisher::{PublisherChecks, PublisherVerified};
use super::signature::Signatures;
use super::stream::stream_blob;
use super::target::Target;
use crate::bundle::reader::{self, BundleFormat, EntryHead, ReadError};
use crate::bundle::signed::SignedRelease;
use llmgw_shared::progress::Progress;

/// What reading a bundle proved, reported alike by `bundle verify` and
/// `bundle import` (flattened into their reports).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Proved {
    /// How the bundle came (directory, `.tar`, `.tar.zst`).
    pub format: BundleFormat,
    /// Each signed release, verified: what its signature proves (for
    /// [`crate::store::claims`]); reported as its release and key id.
    #[serde(
        rename = "signatures",
        serialize_with = "crate::bundle::signed::serialize_signatures"
    )]
    pub signed: Vec<SignedRelease>,
    /// Each publisher's Sigstore signature verified again (format 7).
    #[serde(rename = "publisher_signatures")]
    pub publishers: Vec<PublisherVerified>,
    /// Blobs read from the bundle and hashed by this run.
    pub blobs_hashed: usize,
    /// Their bytes.
    pub bytes_hashed: u64,
}

/// What a successful check proved. Serialized, it is what `bundle verify
/// --json` reports of it (the manifest itself, and what only an import
/// uses, are left out).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Verified {
    pub manifest_sha256: BundleId,
    #[serde(skip)]
    pub manifest: Manifest,
    /// The manifest's exact bytes (what `bundles/<sha>.json` holds).
    #[serde(skip)]
    pub manifest_bytes: Vec<u8>,
    #[serde(flatten)]
    pub proved: Proved,
    /// Blobs verified before (store or earlier staging), not read again.
    #[serde(skip)]
    pub blobs_at_hand: usize,
    #[serde(skip)]
    pub bytes_at_hand: u64,
    /// What this check could not prove because it is not in the bundle (a
    /// delta's prerequisites, without a store), in words.
    #[serde(rename = "not_checked")]
    pub unchecked: Vec<String>,
}

/// How a check ended.
#[derive(Debug)]
pub enum Outcome {
    /// Every step ran and passed: what was checked.
    Verified(Box<Verified>),
    /// The target stopped the check after the manifest (see
    /// `Target::on_manifest`); only step 1 ran.
    Stopped {
        /// The sha256 the manifest hashed to (as expected, or signed).
        manifest_sha256: BundleId,
        /// The manifest, which passed its own checks.
        manifest: Box<Manifest>,
    },
}

/// Internal: a refusal or the target's error, or the target's request to
/// stop.
enum Flow<E> {
    Refused(E),
    Stop,
}

impl<E: From<VerifyError>> From<VerifyError> for Flow<E> {
    fn from(e: VerifyError) -> Self {
        Flow::Refused(e.into())
    }
}

impl<E: From<VerifyError>> From<ReadError> for Flow<E> {
    fn from(e: ReadError) -> Self {
        Flow::Refused(VerifyError::Read(e).into())
    }
}

/// What step 1 and the start of step 2 established.
struct Started<'k> {
    gated: Gated,
    signatures: Signatures<'k>,
    oci: OciTrees,
    publishers: PublisherChecks,
}

/// What the pass has seen so far.
#[derive(Default)]
struct Tally {
    /// Entries after the manifest: the signature may only be the first.
    after_manifest: usize,
    /// Blobs the bundle carried, by name.
    seen: BTreeSet<String>,
    hashed: (usize, u64),
    at_hand: (usize, u64),
}

/// Runs every check on the bundle at `path`, streaming its blobs into
/// `target`. `expected_sha256` is the manifest hash the operator carried;
/// `trusted` the keys a signed release must verify with.
pub fn check_bundle<T: Target + ?Sized>(
    path: &Path,
    expected_sha256: &BundleId,
    trusted: &[PublicKey],
    target: &mut T,
    progress: &dyn Progress,
) -> Result<Outcome, T::Error> {
    let mut state: Option<Started<'_>> = None;
    let mut tally = Tally::default();
    let mut stopped = false;

    let visit = |head: &EntryHead, data: &mut dyn Read| -> Result<(), Flow<T::Error>> {
        let Some(st) = state.as_mut() else {
            let gated = manifest::gate(head, data, expected_sha256)?;
            let signatures =
                Signatures::start(&gated.manifest, trusted, &*target).map_err(Flow::Refused)?;
            let oci = OciTrees::start(&gated.manifest, &*target).map_err(Flow::Refused)?;
            let publishers =
                PublisherChecks::start(&gated.manifest, &*target).map_err(Flow::Refused)?;
            let to_read: u64 = gated
                .blobs
                .iter()
                .filter(|(sha, size)| !target.have(sha, **size))
                .map(|(_, size)| size)
                .sum();
            let go_on = target
                .on_manifest(&gated.manifest, to_read)
                .map_err(Flow::Refused)?;
            state = Some(Started {
                gated,
                signatures,
                oci,
                publishers,
            });
            if !go_on {
                stopped = true;
                return Err(Flow::Stop);
            }
            progress.begin(None, to_read);
            return Ok(());
        };
        tally.after_manifest += 1;
        match classify::after_manifest(&head.path, &head.kind, head.size, tally.after_manifest)? {
            Entry::Signature if !target.signature_checked() => {
                Err(VerifyError::UncheckedSignature.into())
            }
            Entry::Signature | Entry::BlobDir => Ok(()),
            Entry::Blob { sha256 } => {
                take_blob(st, &mut tally, &mut *target, head, sha256, data, progress)
                    .map_err(Flow::Refused)
            }
        }
    };
    let result = reader::for_each_entry(path, visit);
    progress.finish();
    let format = match result {
        Ok(f) => f,
        Err(Flow::Stop) => BundleFormat::Tar,
        Err(Flow::Refused(e)) => return Err(e),
    };
    let Some(st) = state else {
        // for_each_entry reports an empty bundle itself; this is a guard.
        return Err(VerifyError::FirstEntry {
            found: "nothing".into(),
            kind: "empty bundle".into(),
        }
        .into());
    };
    if stopped {
        return Ok(Outcome::Stopped {
            manifest_sha256: st.gated.sha256,
            manifest: Box::new(st.gated.manifest),
        });
    }
    conclude(st, &tally, &*target, format)
        .map(|v| Outcome::Verified(Box::new(v)))
        .map_err(Into::into)
}

/// Step 3 for one blob entry named `sha`: the manifest names it, once, at
/// this size; its bytes hash to its name. Only then does `target` keep it.
fn take_blob<T: Target + ?Sized>(
    st: &mut Started<'_>,
    tally: &mut Tally,
    target: &mut T,
    head: &EntryHead,
    sha: &str,
    data: &mut dyn Read,
    progress: &dyn Progress,
) -> Result<(), T::Error> {
    // The entry's name as the manifest's digest: only a name it lists
    // goes further.
    let Some((digest, &declared)) = st.gated.blobs.get_key_value(sha) else {
        return Err(VerifyError::UnlistedBlob {
            entry: head.path.clone(),
        }
        .into());
    };
    if !tally.seen.insert(sha.to_string()) {
        return Err(VerifyError::Duplicate {
            entry: head.path.clone(),
        }
        .into());
    }
    let what = st.gated.names.get(sha).cloned().unwrap_or_default();
    if head.size != declared {
        return Err(VerifyError::SizeMismatch {
            entry: head.path.clone(),
            what,
            expected: declared,
            actual: head.size,
        }
        .into());
    }
    let wants_bytes = st.signatures.wants(sha) || st.oci.wants(sha) || st.publishers.wants(sha);
    if (target.have(digest, declared) || target.hashed_before(digest)) && !wants_bytes {
        // Verified earlier; the reader skips its bytes.
        tally.at_hand.0 += 1;
        tally.at_hand.1 += declared;
        return Ok(());
    }
    progress.started(&head.path, declared);
    let mut capture = wants_bytes.then(Vec::new);
    let sink = target.begin(sha)?;
    let actual = match stream_blob(&head.path, data, sink, capture.as_mut(), progress) {
        Ok(actual) => actual,
        Err(e) => {
            target.discard(sha);
            return Err(e);
        }
    };
    if actual != sha {
        target.discard(sha);
        return Err(VerifyError::HashMismatch {
            entry: head.path.clone(),
            what,
            expected: sha.to_string(),
            actual,
        }
        .into());
    }
    target.keep(sha)?;
    tally.hashed.0 += 1;
    tally.hashed.1 += declared;
    if let Some(bytes) = capture {
        st.signatures.offer(sha, &bytes)?;
        st.oci.offer(sha, &bytes)?;
        st.publishers.offer(sha, &bytes);
    }
    Ok(())
}

/// After the last entry: every blob named is verified or at hand (or,
/// without a store, a delta's prerequisite, listed as unchecked), and
/// every signed release proven.
fn conclude<T: Target + ?Sized>(
    st: Started<'_>,
    tally: &Tally,
    target: &T,
    format: BundleFormat,
) -> Result<Verified, VerifyError> {
    let Started {
        gated,
        signatures,
        oci,
        publishers,
    } = st;
    let seen = &tally.seen;
    // Without a store, a delta's prerequisites cannot be checked: listed.
    let elsewhere: BTreeSet<&str> = match (&gated.manifest.delta, target.checks_prerequisites()) {
        (Some(d), false) => d.prerequisites.iter().map(|p| p.sha256.as_str()).collect(),
        _ => BTreeSet::new(),
    };
    let mut unchecked = Vec::new();
    if !elsewhere.is_empty() {
        let bytes: u64 = gated
            .blobs
            .iter()
            .filter(|(sha, _)| elsewhere.contains(sha.as_str()) && !seen.contains(sha.as_str()))
            .map(|(_, s)| s)
            .sum();
        unchecked.push(format!(
            "{} prerequisite blob(s) ({bytes} bytes) the bundle relies on the store holding: \
             import checks them against the store before staging anything",
            elsewhere.len()
        ));
    }
    let missing: Vec<String> = gated
        .blobs
        .iter()
        .filter(|(sha, size)| {
            !seen.contains(sha.as_str())
                && !target.have(sha, **size)
                && !elsewhere.contains(sha.as_str())
        })
        .map(|(sha, _)| format!("{} ({})", sha, name_of(&gated.names, sha)))
        .collect();
    if !missing.is_empty() {
        let count = missing.len();
        let mut list = missing.into_iter().take(5).collect::<Vec<_>>().join(", ");
        if count > 5 {
            list.push_str(&format!(" and {} more", count - 5));
        }
        return Err(VerifyError::Missing { count, list });
    }
    let signed = signatures.settle(&elsewhere, &mut unchecked)?;
    oci.settle(&elsewhere, &mut unchecked)?;
    let publishers = publishers.settle(&elsewhere, &mut unchecked)?;
    let not_read = gated
        .blobs
        .iter()
        .filter(|(sha, _)| !seen.contains(sha.as_str()));
    let (blobs_not_read, bytes_not_read) = not_read.fold((0, 0), |(n, b), (_, s)| (n + 1, b + s));
    Ok(Verified {
        manifest_sha256: gated.sha256,
        manifest: gated.manifest,
        manifest_bytes: gated.bytes,
        proved: Proved {
            format,
            signed,
            publishers,
            blobs_hashed: tally.hashed.0,
            bytes_hashed: tally.hashed.1,
        },
        blobs_at_hand: tally.at_hand.0 + blobs_not_read,
        bytes_at_hand: tally.at_hand.1 + bytes_not_read,
        unchecked,
    })
}

fn name_of<'a>(names: &'a BTreeMap<Sha256, String>, sha: &str) -> &'a str {
    names.get(sha).map_or("", String::as_str)
}
