//! The minisign public keys a store trusts for llmgw releases:
//! `STORE/trust/<KEYID>.pub`, one key per file, in minisign's own format,
//! named by the key id as the minisign CLI prints it.

use std::path::{Path, PathBuf};

use llmgw_shared::signing::{PublicKey, SigningError};
use thiserror::Error;

use crate::fsutil::{self, StoreLock};
use crate::store::{Store, StoreError};

#[derive(Debug, Error)]
pub enum TrustError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Key(#[from] SigningError),
    #[error(
        "{path} holds key {found}, but its name says {named}; the trust folder was changed by \
         hand: remove the file or rename it to {found}.pub"
    )]
    Misnamed {
        path: PathBuf,
        named: String,
        found: String,
    },
    #[error(
        "key {key_id} is not trusted by this store (trusted: {trusted}); `llmgw bundle trust list` \
         shows the key ids"
    )]
    NotTrusted { key_id: String, trusted: String },
}

/// What `trust add` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Added {
    New(String),
    AlreadyTrusted(String),
}

/// Every trusted key, sorted by key id. A file that is not a valid key, or
/// whose name does not match its key, is an error rather than skipped: an
/// operator should know their trust list is not what they think.
pub fn load(store: &Store) -> Result<Vec<(PathBuf, PublicKey)>, TrustError> {
    let dir = store.trust_dir();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StoreError::io(&dir, e).into()),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io(&dir, e))?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(named) = name.strip_suffix(".pub") else {
            continue;
        };
        let key = read_key_file(&path)?;
        if !key.key_id().eq_ignore_ascii_case(named) {
            return Err(TrustError::Misnamed {
                path,
                named: named.to_string(),
                found: key.key_id(),
            });
        }
        out.push((path, key));
    }
    out.sort_by_key(|(_, k)| k.key_id());
    Ok(out)
}

/// The trusted keys alone.
pub fn keys(store: &Store) -> Result<Vec<PublicKey>, TrustError> {
    Ok(load(store)?.into_iter().map(|(_, k)| k).collect())
}

/// A key file larger than this is not read: minisign's are 100 bytes.
pub const MAX_KEY_FILE_BYTES: u64 = 4096;

/// Reads a public key file as the minisign CLI writes it (at most
/// [`MAX_KEY_FILE_BYTES`] of it).
pub fn read_key_file(path: &Path) -> Result<PublicKey, TrustError> {
    let bytes = fsutil::read_bounded(path, MAX_KEY_FILE_BYTES)?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(PublicKey::parse(&path.display().to_string(), &text)?)
}

/// Trusts the key in `key_file`: writes `trust/<KEYID>.pub` atomically.
pub fn add(store: &Store, key_file: &Path) -> Result<Added, TrustError> {
    let key = read_key_file(key_file)?;
    store.create_dirs()?;
    let _lock = StoreLock::acquire(&store.lock_path(), "`llmgw bundle trust add`")?;
    let id = key.key_id();
    let dest = store.trust_dir().join(format!("{id}.pub"));
    if let Ok(text) = std::fs::read_to_string(&dest)
        && PublicKey::parse("existing", &text).is_ok_and(|k| k.to_file_text() == key.to_file_text())
    {
        return Ok(Added::AlreadyTrusted(id));
    }
    let tmp = store.tmp_dir().join(format!("trust-{id}.pub.tmp"));
    fsutil::write_durable(&tmp, key.to_file_text().as_bytes())?;
    std::fs::rename(&tmp, &dest).map_err(|e| StoreError::io(&dest, e))?;
    fsutil::fsync_dir(&store.trust_dir())?;
    Ok(Added::New(id))
}

/// Stops trusting a key (by id, any case). Bundles already imported stay.
pub fn remove(store: &Store, key_id: &str) -> Result<String, TrustError> {
    let _lock = StoreLock::acquire(&store.lock_path(), "`llmgw bundle trust remove`")?;
    let keys = load(store)?;
    let Some((path, key)) = keys
        .iter()
        .find(|(_, k)| k.key_id().eq_ignore_ascii_case(key_id.trim()))
    else {
        let ids: Vec<String> = keys.iter().map(|(_, k)| k.key_id()).collect();
        return Err(TrustError::NotTrusted {
            key_id: key_id.to_string(),
            trusted: if ids.is_empty() {
                "none".into()
            } else {
                ids.join(", ")
            },
        });
    };
    std::fs::remove_file(path).map_err(|e| StoreError::io(path, e))?;
    fsutil::fsync_dir(&store.trust_dir())?;
    Ok(key.key_id())
}
