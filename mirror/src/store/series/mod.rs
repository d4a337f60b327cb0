//! Signed bundles in a store: who signed a bundle, its place in that
//! signer's channel, and the rules that keep an old bundle from rolling
//! nodes back.
//!
//! Invariants:
//! - `STORE/state/series.json` holds, per (bundle key id, channel), the
//!   highest sequence accepted and its manifest sha256; it is written only
//!   through [`crate::store::state::write_file`] (temp, fsync, rename) and only
//!   ever moves up — a lower sequence is refused unless the operator allows
//!   a rollback, and even then the bundle is held but does not become
//!   current; the same sequence with another manifest is equivocation and
//!   is always refused.
//! - `STORE/state/policy.json` holds what the operator decided
//!   (`require_signature`, `enforce_expiry`; missing means both off) and
//!   which series the store follows ([`follow`]: which bundle may move a
//!   name).
//! - A signature counts only when it verifies, prehashed, over the exact
//!   manifest bytes with a key of role `bundle` ([`crate::store::trust::Role`]).

use std::io::Read;
use std::path::Path;

use llmgw_shared::manifest::{MANIFEST_NAME, MAX_MANIFEST_BYTES, Manifest, SIGNATURE_NAME};
use llmgw_shared::signing::{self, PublicKey, SigningError};
use llmgw_shared::{BundleId, HeldSeries, shown};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::bundle::reader::{self, ReadError};
use crate::store::state;
use crate::store::{Held, StateFault, StateFile, Store, StoreError};

pub mod follow;

pub use crate::bundle::MAX_SIGNATURE_BYTES;

/// How far in the future a bundle's `created` may be before import warns
/// (clocks on either side of the gap drift).
pub const CLOCK_SKEW_SECS: u64 = 300;

/// Why a signed (or unsigned) bundle may not join the store.
#[derive(Debug, Error)]
pub enum SeriesError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("reading {entry} from the bundle")]
    Entry {
        entry: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{entry} is {actual} bytes; at most {max} are accepted")]
    TooLarge {
        entry: &'static str,
        actual: u64,
        max: u64,
    },
    #[error(
        "checking {SIGNATURE_NAME}; keys that sign bundles are trusted with `llmgw bundle trust \
         add KEY.pub --role bundle`"
    )]
    Signature {
        #[source]
        source: SigningError,
    },
    #[error(
        "the bundle is signed (key {key_id}) but its manifest has no sequence, so it cannot be \
         placed in a series; sign only bundles made with --sequence or --sign-key"
    )]
    NoSequence { key_id: String },
    #[error(
        "no --sha256 was given and the bundle is not signed; give the manifest sha256 carried \
         apart from the bundle (--sha256 HEX or FILE.sha256), or sign the bundle with a key this \
         store trusts for bundles"
    )]
    NoProof,
    #[error(
        "this store requires signed bundles (`llmgw mirror policy require-signature on`) and \
         this one has no {SIGNATURE_NAME}; sign it with `llmgw bundle sign BUNDLE --key KEY`"
    )]
    Unsigned,
    #[error(
        "rollback: key {key_id} channel {} is at sequence {held} (bundle {held_sha256}), and \
         this bundle is sequence {sequence}; an older bundle is refused so that nodes are not \
         rolled back. If you mean it, import again with --allow-rollback (the bundle is then \
         held, but what nodes are served does not go back)",
        shown(.channel)
    )]
    Rollback {
        key_id: String,
        channel: String,
        held: u64,
        held_sha256: String,
        sequence: u64,
    },
    #[error(
        "equivocation: key {key_id} signed two different bundles as channel {} sequence \
         {sequence}: the store accepted {held_sha256}, this one is {sha256}; refused (the signer \
         must give every bundle of a channel its own, higher sequence)",
        shown(.channel)
    )]
    Equivocation {
        key_id: String,
        channel: String,
        sequence: u64,
        held_sha256: String,
        sha256: String,
    },
    #[error(
        "the bundle expired at {expires} (now {now}) and this store enforces expiry (`llmgw \
         mirror policy enforce-expiry off` to allow it); ask for a fresh bundle"
    )]
    Expired { expires: String, now: String },
}

/// Who signed a bundle, and where it stands in their series.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignedBy {
    pub key_id: String,
    pub channel: String,
    pub sequence: u64,
}

/// The start of a bundle: its manifest bytes and, if it has one, its
/// signature.
#[derive(Debug, Clone)]
pub struct Head {
    pub manifest_bytes: Vec<u8>,
    pub manifest_sha256: BundleId,
    pub signature: Option<Vec<u8>>,
}

/// Reads only the first two entries of a bundle.
pub fn read_head(bundle: &Path) -> Result<Head, SeriesError> {
    let mut manifest: Option<Vec<u8>> = None;
    let mut signature = None;
    enum Flow {
        Err(SeriesError),
        Done,
    }
    impl From<ReadError> for Flow {
        fn from(e: ReadError) -> Self {
            Flow::Err(e.into())
        }
    }
    let read = |entry: &'static str, size: u64, max: u64, data: &mut dyn Read| {
        if size > max {
            return Err(Flow::Err(SeriesError::TooLarge {
                entry,
                actual: size,
                max,
            }));
        }
        let mut v = Vec::with_capacity(size as usize);
        data.take(max)
            .read_to_end(&mut v)
            .map_err(|source| Flow::Err(SeriesError::Entry { entry, source }))?;
        Ok(v)
    };
    let r = reader::for_each_entry(bundle, |head, data| {
        if manifest.is_none() {
            // check_bundle names a wrong first entry; here it is just read.
            if head.path != MANIFEST_NAME {
                return Err(Flow::Done);
            }
            manifest = Some(read(MANIFEST_NAME, head.size, MAX_MANIFEST_BYTES, data)?);
            return Ok(());
        }
        if head.path == SIGNATURE_NAME {
            signature = Some(read(SIGNATURE_NAME, head.size, MAX_SIGNATURE_BYTES, data)?);
        }
        Err(Flow::Done)
    });
    match r {
        Ok(_) | Err(Flow::Done) => {}
        Err(Flow::Err(e)) => return Err(e),
    }
    let manifest_bytes = manifest.unwrap_or_default();
    Ok(Head {
        manifest_sha256: BundleId::of(&manifest_bytes),
        manifest_bytes,
        signature,
    })
}

/// Verifies the bundle's signature, if it has one, with the keys trusted
/// for bundles. A signature that is there must verify: a bundle whose
/// signature is bad or whose signer is not trusted is refused, never
/// quietly taken as unsigned.
pub fn check_signature(
    head: &Head,
    manifest: &Manifest,
    bundle_keys: &[PublicKey],
) -> Result<Option<SignedBy>, SeriesError> {
    let Some(sig) = &head.signature else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(sig);
    let signature = signing::Signature::parse(SIGNATURE_NAME, &text)
        .map_err(|source| SeriesError::Signature { source })?;
    let key_id =
        signing::verify_with_trusted(MANIFEST_NAME, &head.manifest_bytes, &signature, bundle_keys)
            .map_err(|source| SeriesError::Signature { source })?;
    let Some(sequence) = manifest.sequence else {
        return Err(SeriesError::NoSequence { key_id });
    };
    Ok(Some(SignedBy {
        key_id,
        channel: manifest.channel().to_string(),
        sequence,
    }))
}

/// The key id that signed a held bundle, from `bundles/<sha>.json.minisig`
/// (verified when it was imported); `None` for an unsigned one.
pub fn held_signer(store: &Store, manifest_sha256: &BundleId) -> Option<String> {
    let path = store
        .bundles_dir()
        .join(signature_file_name(manifest_sha256));
    let bytes = crate::store::fsutil::read_bounded(&path, MAX_SIGNATURE_BYTES).ok()?;
    signing::Signature::parse(SIGNATURE_NAME, &String::from_utf8_lossy(&bytes))
        .ok()
        .map(|s| s.key_id())
}

/// Reorders held bundles, given in import order, so that among the bundles
/// of one (signing key, channel) the higher sequence comes later — and so
/// wins where bundles disagree about what a branch or tag names — while
/// every bundle keeps one of the places its group held. Unsigned bundles,
/// and bundles of different series, keep the import order.
pub fn order_by_sequence(store: &Store, bundles: &mut [Held]) {
    let mut groups: std::collections::BTreeMap<(String, String), Vec<usize>> = Default::default();
    for (i, Held { id, manifest: m }) in bundles.iter().enumerate() {
        if let (Some(key), Some(_)) = (held_signer(store, id), m.sequence) {
            groups
                .entry((key, m.channel().to_string()))
                .or_default()
                .push(i);
        }
    }
    for places in groups.values() {
        let mut members: Vec<Held> = places.iter().map(|&i| bundles[i].clone()).collect();
        members.sort_by_key(|Held { manifest: m, .. }| m.sequence);
        for (&i, b) in places.iter().zip(members) {
            bundles[i] = b;
        }
    }
}

/// `<sha>.json.minisig`: where the store keeps a bundle's signature.
pub fn signature_file_name(manifest_sha256: &BundleId) -> String {
    format!("{manifest_sha256}.json.minisig")
}

/// The store's decisions about signatures and expiry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Refuse a bundle no trusted bundle key signed, even with its sha256.
    #[serde(default)]
    pub require_signature: bool,
    /// Refuse a bundle past its `expires`, rather than warn.
    #[serde(default)]
    pub enforce_expiry: bool,
    /// The signed series whose bundles move names ([`follow`]): the first
    /// one imported, and those added by `llmgw mirror policy follow`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub follow: Vec<follow::Followed>,
    /// Unsigned bundles (manifest sha256) imported with
    /// `--allow-unsigned-override`: they move names as a followed series does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsigned_overrides: Vec<String>,
    /// Which model files import accepts (`mirror policy model-files`).
    #[serde(
        default,
        skip_serializing_if = "crate::store::model_files::ModelFiles::is_allow"
    )]
    pub model_files: crate::store::model_files::ModelFiles,
}

const POLICY_FILE: &str = "policy.json";
const SERIES_FILE: &str = "series.json";

impl Policy {
    /// The policy in `STORE/state/policy.json`; a missing file is the
    /// default (nothing required), an unreadable one an error.
    pub fn load(store: &Store) -> Result<Self, StoreError> {
        load_json(store, POLICY_FILE, StateFile::Policy)
    }

    /// Writes `policy.json` durably (temp file, fsync, rename), so a crash
    /// leaves the old policy or the new one, never half of it.
    pub fn save(&self, store: &Store) -> Result<(), StoreError> {
        save_json(store, POLICY_FILE, self)
    }
}

/// `STORE/state/series.json`: each (key, channel) the store follows and
/// the highest sequence accepted in it — the same record a have-list
/// carries, so `mirror have` copies it as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Series {
    #[serde(default)]
    pub series: Vec<HeldSeries>,
}

/// What importing a signed bundle does to its series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Higher than what is held (or the first): it becomes current.
    Advance,
    /// The very bundle the series is at: nothing changes.
    Same,
    /// Lower, allowed by the operator: held, not current.
    Rollback { held: u64 },
}

impl Series {
    pub fn load(store: &Store) -> Result<Self, StoreError> {
        load_json(store, SERIES_FILE, StateFile::Series)
    }

    pub fn save(&self, store: &Store) -> Result<(), StoreError> {
        let mut s = self.clone();
        s.series.sort();
        save_json(store, SERIES_FILE, &s)
    }

    pub fn get(&self, key_id: &str, channel: &str) -> Option<&HeldSeries> {
        self.series
            .iter()
            .find(|e| e.key_id == key_id && e.channel == channel)
    }

    /// Decides what a bundle signed as `by`, whose manifest hashes to
    /// `sha256`, does to its series.
    pub fn decide(
        &self,
        by: &SignedBy,
        sha256: &BundleId,
        allow_rollback: bool,
    ) -> Result<Step, SeriesError> {
        let Some(held) = self.get(&by.key_id, &by.channel) else {
            return Ok(Step::Advance);
        };
        use std::cmp::Ordering::*;
        match by.sequence.cmp(&held.sequence) {
            Greater => Ok(Step::Advance),
            Equal if held.manifest_sha256 == *sha256 => Ok(Step::Same),
            Equal => Err(SeriesError::Equivocation {
                key_id: by.key_id.clone(),
                channel: by.channel.clone(),
                sequence: by.sequence,
                held_sha256: held.manifest_sha256.to_string(),
                sha256: sha256.to_string(),
            }),
            Less if allow_rollback => Ok(Step::Rollback {
                held: held.sequence,
            }),
            Less => Err(SeriesError::Rollback {
                key_id: by.key_id.clone(),
                channel: by.channel.clone(),
                held: held.sequence,
                held_sha256: held.manifest_sha256.to_string(),
                sequence: by.sequence,
            }),
        }
    }

    /// Records `by` as its series' highest.
    pub fn advance(&mut self, by: &SignedBy, sha256: &BundleId) {
        self.series
            .retain(|e| !(e.key_id == by.key_id && e.channel == by.channel));
        self.series.push(HeldSeries {
            key_id: by.key_id.clone(),
            channel: by.channel.clone(),
            sequence: by.sequence,
            manifest_sha256: sha256.clone(),
        });
        self.series.sort();
    }
}

/// Warnings about a bundle's times, or a refusal of an expired bundle
/// where the store enforces expiry. `now` is Unix seconds.
pub fn check_times(m: &Manifest, now: u64, policy: &Policy) -> Result<Vec<String>, SeriesError> {
    let mut notes = Vec::new();
    let now_text = llmgw_shared::rfc3339_utc(now);
    if let Some(expires) = &m.expires
        && llmgw_shared::parse_rfc3339_utc(expires).is_some_and(|t| t <= now)
    {
        if policy.enforce_expiry {
            return Err(SeriesError::Expired {
                expires: expires.clone(),
                now: now_text,
            });
        }
        notes.push(format!(
            "the bundle expired at {expires} (now {now_text}); imported anyway because this \
             store does not enforce expiry (`llmgw mirror policy enforce-expiry on` refuses it)"
        ));
    }
    if llmgw_shared::parse_rfc3339_utc(&m.created)
        .is_some_and(|t| t > now.saturating_add(CLOCK_SKEW_SECS))
    {
        notes.push(format!(
            "the bundle says it was created at {}, after this machine's clock ({now_text}); \
             check the clock here and on the machine that made it",
            m.created
        ));
    }
    Ok(notes)
}

fn load_json<T: Default + for<'de> Deserialize<'de>>(
    store: &Store,
    name: &str,
    file: StateFile,
) -> Result<T, StoreError> {
    match state::read_file(store, name)? {
        None => Ok(T::default()),
        Some(bytes) => serde_json::from_slice(&bytes).map_err(|e| StoreError::BadState {
            path: store.state_dir().join(name),
            file,
            fault: StateFault::NotJson,
            cause: Some(e),
        }),
    }
}

fn save_json<T: Serialize>(store: &Store, name: &str, value: &T) -> Result<(), StoreError> {
    let mut bytes = serde_json::to_vec_pretty(value).unwrap_or_default();
    bytes.push(b'\n');
    state::write_file(store, name, &bytes)
}

#[cfg(test)]
mod tests;
