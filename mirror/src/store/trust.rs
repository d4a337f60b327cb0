//! The minisign public keys a store trusts, by role: for llmgw releases
//! (`release`: `STORE/trust/<KEYID>.pub`, what signs llmgw's `SHA256SUMS`)
//! and for whole bundles (`bundle`: `STORE/trust/bundle/<KEYID>.pub`, the
//! site's own key that signs manifests). One key per file, in minisign's
//! own format, named by the key id as the minisign CLI prints it. A key
//! may hold both roles as two files; trusting it for one never trusts it
//! for the other.

use std::path::{Path, PathBuf};

use llmgw_shared::signing::{PublicKey, SigningError};
use thiserror::Error;

use crate::store::fsutil::{self, StoreLock};
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

/// What a trusted key may sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// llmgw's release `SHA256SUMS`.
    Release,
    /// A bundle's `manifest.json` (`manifest.json.minisig`).
    Bundle,
}

impl Role {
    /// The role as the CLI and messages spell it.
    pub fn name(self) -> &'static str {
        match self {
            Role::Release => "release",
            Role::Bundle => "bundle",
        }
    }

    /// The folder its keys live in.
    pub fn dir(self, store: &Store) -> PathBuf {
        match self {
            Role::Release => store.trust_dir(),
            Role::Bundle => store.trust_dir().join("bundle"),
        }
    }
}

/// What `trust add` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Added {
    /// The key, by this key id, is trusted now.
    New(String),
    /// A key of this id was already trusted for the role: nothing written.
    AlreadyTrusted(String),
}

/// Every key trusted for `role`, sorted by key id. A file that is not a
/// valid key, or whose name does not match its key, is an error rather than
/// skipped: an operator should know their trust list is not what they think.
pub fn load_role(store: &Store, role: Role) -> Result<Vec<(PathBuf, PublicKey)>, TrustError> {
    let dir = role.dir(store);
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
        if path.is_dir() {
            continue;
        }
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

/// The keys trusted for llmgw releases alone.
pub fn keys(store: &Store) -> Result<Vec<PublicKey>, TrustError> {
    role_keys(store, Role::Release)
}

/// The keys trusted for `role` alone.
pub fn role_keys(store: &Store, role: Role) -> Result<Vec<PublicKey>, TrustError> {
    Ok(load_role(store, role)?
        .into_iter()
        .map(|(_, k)| k)
        .collect())
}

/// A key file larger than this is not read: minisign's are 100 bytes.
pub const MAX_KEY_FILE_BYTES: u64 = 4096;

/// Reads a public key file as the minisign CLI writes it (at most
/// `MAX_KEY_FILE_BYTES` (4 KiB) of it).
pub fn read_key_file(path: &Path) -> Result<PublicKey, TrustError> {
    let bytes = fsutil::read_bounded(path, MAX_KEY_FILE_BYTES)?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(PublicKey::parse(&path.display().to_string(), &text)?)
}

/// Trusts the key in `key_file` for `role`: writes `<KEYID>.pub` into the
/// role's folder atomically.
pub fn add(store: &Store, key_file: &Path, role: Role) -> Result<Added, TrustError> {
    let key = read_key_file(key_file)?;
    store.create_dirs()?;
    let _lock = StoreLock::acquire(&store.lock_path(), "`llmgw bundle trust add`")?;
    let id = key.key_id();
    let dir = role.dir(store);
    std::fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
    let dest = dir.join(format!("{id}.pub"));
    if let Ok(text) = std::fs::read_to_string(&dest)
        && PublicKey::parse("existing", &text).is_ok_and(|k| k.to_file_text() == key.to_file_text())
    {
        return Ok(Added::AlreadyTrusted(id));
    }
    let tmp = store.tmp_dir().join(format!("trust-{id}.pub.tmp"));
    fsutil::write_durable(&tmp, key.to_file_text().as_bytes())?;
    std::fs::rename(&tmp, &dest).map_err(|e| StoreError::io(&dest, e))?;
    fsutil::fsync_dir(&dir)?;
    Ok(Added::New(id))
}

/// Stops trusting a key (by id, any case) for `role`. Bundles already
/// imported stay.
pub fn remove(store: &Store, key_id: &str, role: Role) -> Result<String, TrustError> {
    let _lock = StoreLock::acquire(&store.lock_path(), "`llmgw bundle trust remove`")?;
    let keys = load_role(store, role)?;
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
    fsutil::fsync_dir(&role.dir(store))?;
    Ok(key.key_id())
}
