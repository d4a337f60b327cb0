//! A blob written into a folder: its bytes go to a temporary file through a
//! hashing reader, and the file takes the blob's name only when it holds
//! exactly `size` bytes hashing to the blob's sha256. So a cut or damaged
//! copy never appears under a blob's name; the temporary file is removed on
//! any failure. Used by the folder backend and by a replica's read-through
//! cache.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use llmgw_shared::{HashReader, Sha256};
use sha2::Digest as _;

use super::StoreError;
use super::backend::hex_of;
use crate::store::fsutil;

/// Copies `reader` to `tmp`, checks it against `sha256` and `size`, and
/// renames it onto `dest` (folders made, synced). `key` names the blob in a
/// refusal: its path or its object's URL.
pub(super) fn write_checked(
    reader: &mut dyn Read,
    tmp: &Path,
    dest: &Path,
    sha256: &Sha256,
    size: u64,
    key: &str,
) -> Result<(), StoreError> {
    let written = (|| {
        let mut out = File::create(tmp).map_err(|e| StoreError::io(tmp, e))?;
        // One byte more than promised is enough to know it is too long.
        let mut hashed = HashReader::new(reader.take(size + 1), sha2::Sha256::new());
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let k = match hashed.read(&mut buf) {
                Ok(0) => break,
                Ok(k) => k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(StoreError::io(tmp, e)),
            };
            out.write_all(&buf[..k])
                .map_err(|e| StoreError::io(tmp, e))?;
        }
        let n = hashed.len();
        let actual = hex_of(hashed.into_hasher());
        if actual != sha256.as_str() || n != size {
            return Err(StoreError::BlobMismatch {
                key: key.to_string(),
                expected: sha256.to_string(),
                expected_size: size,
                actual,
                actual_size: n,
            });
        }
        crate::store::fsutil::sync_file(&out).map_err(|e| StoreError::io(tmp, e))
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(tmp);
        return Err(e);
    }
    let parent = dest.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| StoreError::io(parent, e))?;
    std::fs::rename(tmp, dest).map_err(|e| StoreError::io(dest, e))?;
    fsutil::fsync_dir(parent)
}
