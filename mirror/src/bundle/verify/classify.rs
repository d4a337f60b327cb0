//! What a bundle entry is, from its header alone: its name, kind, size and
//! place in the bundle.
//!
//! Invariant: pure — nothing here reads bytes, the manifest or the disk,
//! so the same header always gets the same answer. Only three things pass
//! after the manifest: the signature as the second entry, the two folders
//! `blobs` and `blobs/sha256`, and regular files named
//! `blobs/sha256/<64 lower-case hex>`. Anything else (links, devices, other
//! folders or files, a second manifest) is refused here, naming the entry.
//! Whether a blob is one the manifest names is the driver's question.

use llmgw_shared::manifest::{BLOB_DIR, MANIFEST_NAME, MAX_MANIFEST_BYTES, SIGNATURE_NAME};
use llmgw_shared::{check_relative_path, is_sha256_hex};

use super::error::VerifyError;
use crate::bundle::MAX_SIGNATURE_BYTES;
use crate::bundle::reader::EntryKind;

/// What an entry after the manifest is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry<'a> {
    /// `manifest.json.minisig`, as the second entry: its bytes were
    /// checked before this pass (see [`crate::store::series`]).
    Signature,
    /// `blobs` or `blobs/sha256`: nothing to read.
    BlobDir,
    /// `blobs/sha256/<hex>`: a blob, by its name.
    Blob { sha256: &'a str },
}

/// Checks the bundle's first entry, which must be `manifest.json`: a
/// regular file no larger than [`MAX_MANIFEST_BYTES`].
pub(crate) fn first(path: &str, kind: &EntryKind, size: u64) -> Result<(), VerifyError> {
    if path != MANIFEST_NAME {
        check_relative_path("bundle entry", path).map_err(VerifyError::UnsafeEntry)?;
        return Err(VerifyError::FirstEntry {
            found: path.to_string(),
            kind: kind.describe(),
        });
    }
    if *kind != EntryKind::File {
        return Err(VerifyError::EntryType {
            entry: path.to_string(),
            kind: kind.describe(),
        });
    }
    if size > MAX_MANIFEST_BYTES {
        return Err(VerifyError::ManifestTooLarge {
            actual: size,
            max: MAX_MANIFEST_BYTES,
        });
    }
    Ok(())
}

/// Says what an entry after the manifest is, or why it is refused.
/// `position` counts the entries after the manifest from 1, this one
/// included: the signature may only be the first of them.
pub(crate) fn after_manifest<'a>(
    path: &'a str,
    kind: &EntryKind,
    size: u64,
    position: usize,
) -> Result<Entry<'a>, VerifyError> {
    check_relative_path("bundle entry", path).map_err(VerifyError::UnsafeEntry)?;
    if path == SIGNATURE_NAME {
        if position != 1 || *kind != EntryKind::File || size > MAX_SIGNATURE_BYTES {
            return Err(VerifyError::MisplacedSignature {
                size,
                max: MAX_SIGNATURE_BYTES,
            });
        }
        return Ok(Entry::Signature);
    }
    match kind {
        EntryKind::File => {}
        EntryKind::Dir if path == "blobs" || path == BLOB_DIR => return Ok(Entry::BlobDir),
        EntryKind::Dir => {
            return Err(VerifyError::UnexpectedDir {
                entry: path.to_string(),
            });
        }
        other => {
            return Err(VerifyError::EntryType {
                entry: path.to_string(),
                kind: other.describe(),
            });
        }
    }
    if path == MANIFEST_NAME {
        return Err(VerifyError::Duplicate {
            entry: path.to_string(),
        });
    }
    path.strip_prefix(BLOB_DIR)
        .and_then(|r| r.strip_prefix('/'))
        .filter(|h| is_sha256_hex(h))
        .map(|sha256| Entry::Blob { sha256 })
        .ok_or_else(|| VerifyError::UnknownEntry {
            entry: path.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> EntryKind {
        EntryKind::File
    }

    fn link(to: &str) -> EntryKind {
        EntryKind::Symlink { target: to.into() }
    }

    /// (name, kind, size, position) → what it is, or the refusal's name.
    type Row<'a> = (
        &'a str,
        EntryKind,
        u64,
        usize,
        Result<Entry<'a>, &'static str>,
    );

    /// The variant's name, which is what a table compares.
    fn refusal(e: &VerifyError) -> &'static str {
        match e {
            VerifyError::UnsafeEntry(_) => "UnsafeEntry",
            VerifyError::FirstEntry { .. } => "FirstEntry",
            VerifyError::EntryType { .. } => "EntryType",
            VerifyError::ManifestTooLarge { .. } => "ManifestTooLarge",
            VerifyError::UnexpectedDir { .. } => "UnexpectedDir",
            VerifyError::UnknownEntry { .. } => "UnknownEntry",
            VerifyError::MisplacedSignature { .. } => "MisplacedSignature",
            VerifyError::Duplicate { .. } => "Duplicate",
            _ => "other",
        }
    }

    #[test]
    fn entries_after_the_manifest() {
        let hex = "ab".repeat(32);
        let blob = format!("blobs/sha256/{hex}");
        let upper = format!("blobs/sha256/{}", "AB".repeat(32));
        let short = format!("blobs/sha256/{}", "ab".repeat(31));
        let nested = format!("blobs/sha256/ab/{hex}");
        let big = MAX_SIGNATURE_BYTES + 1;
        let dev = EntryKind::Other("character device".into());
        let hard = EntryKind::HardLink {
            target: "manifest.json".into(),
        };
        // (name, kind, size, position) → what it is, or the refusal.
        let table: &[Row<'_>] = &[
            (&blob, file(), 5, 1, Ok(Entry::Blob { sha256: &hex })),
            (&blob, file(), 0, 9, Ok(Entry::Blob { sha256: &hex })),
            ("blobs", EntryKind::Dir, 0, 1, Ok(Entry::BlobDir)),
            ("blobs/sha256", EntryKind::Dir, 0, 3, Ok(Entry::BlobDir)),
            (SIGNATURE_NAME, file(), 300, 1, Ok(Entry::Signature)),
            (SIGNATURE_NAME, file(), 300, 2, Err("MisplacedSignature")),
            (SIGNATURE_NAME, file(), big, 1, Err("MisplacedSignature")),
            (SIGNATURE_NAME, link("x"), 0, 1, Err("MisplacedSignature")),
            (MANIFEST_NAME, file(), 2, 1, Err("Duplicate")),
            (MANIFEST_NAME, EntryKind::Dir, 0, 1, Err("UnexpectedDir")),
            ("blobs/other", EntryKind::Dir, 0, 2, Err("UnexpectedDir")),
            (&blob, link("/etc/passwd"), 0, 1, Err("EntryType")),
            (&blob, hard, 0, 1, Err("EntryType")),
            (&blob, dev, 0, 1, Err("EntryType")),
            (&upper, file(), 5, 1, Err("UnknownEntry")),
            (&short, file(), 5, 1, Err("UnknownEntry")),
            (&nested, file(), 5, 1, Err("UnknownEntry")),
            ("README", file(), 5, 1, Err("UnknownEntry")),
            ("blobs/sha256/", file(), 5, 1, Err("UnsafeEntry")),
            ("../blobs/x", file(), 5, 1, Err("UnsafeEntry")),
            ("/etc/passwd", file(), 5, 1, Err("UnsafeEntry")),
            ("blobs/./sha256", EntryKind::Dir, 0, 1, Err("UnsafeEntry")),
        ];
        for (path, kind, size, position, want) in table {
            let got = after_manifest(path, kind, *size, *position);
            match (want, &got) {
                (Ok(w), Ok(g)) => assert_eq!(w, g, "{path}"),
                (Err(w), Err(e)) => assert_eq!(*w, refusal(e), "{path}: {e}"),
                _ => {
                    panic!("{path} ({kind:?}, {size}, {position}): expected {want:?}, got {got:?}")
                }
            }
        }
    }

    #[test]
    fn the_first_entry() {
        let max = MAX_MANIFEST_BYTES;
        let table: &[(&str, EntryKind, u64, Result<(), &str>)] = &[
            (MANIFEST_NAME, file(), 0, Ok(())),
            (MANIFEST_NAME, file(), max, Ok(())),
            (MANIFEST_NAME, file(), max + 1, Err("ManifestTooLarge")),
            (MANIFEST_NAME, EntryKind::Dir, 0, Err("EntryType")),
            (MANIFEST_NAME, link("/etc/passwd"), 0, Err("EntryType")),
            ("blobs", EntryKind::Dir, 0, Err("FirstEntry")),
            (SIGNATURE_NAME, file(), 10, Err("FirstEntry")),
            ("../manifest.json", file(), 10, Err("UnsafeEntry")),
        ];
        for (path, kind, size, want) in table {
            let got = first(path, kind, *size);
            match (want, &got) {
                (Ok(()), Ok(())) => {}
                (Err(w), Err(e)) => assert_eq!(*w, refusal(e), "{path}: {e}"),
                _ => panic!("{path} ({kind:?}, {size}): expected {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn refusals_name_the_entry_escaped() {
        let e = after_manifest("blobs/x\u{1b}[2J", &file(), 1, 1).unwrap_err();
        // What the user sees: the refusal and its cause (the name's check).
        let text = llmgw_shared::chain(&e);
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(text.contains("blobs/x"), "{text}");
        let e = after_manifest("blobs/sha256/aa", &link("/etc/passwd"), 0, 1).unwrap_err();
        assert!(
            e.to_string().contains("symbolic link to \"/etc/passwd\""),
            "{e}"
        );
    }
}
