//! Where every byte of a tar bundle goes, worked out from the manifest and
//! the list of blobs alone, before any of their bytes arrive.
//!
//! The invariant: a bundle's tar stream is a pure function of (manifest,
//! signature, blobs with their sizes, mtime). The [`super::head_entries`]
//! first (`manifest.json`, and `manifest.json.minisig` when signed), then
//! `blobs/sha256/<hex>` in hex order, each a deterministic GNU header, the
//! data, zero padding to 512 bytes, and two zero blocks at the end. So the
//! writer can put bytes straight into their place, and a later run can read
//! back what a killed one wrote and check it against the same layout.
//!
//! The layout also fixes where a `.tar.zst` cuts its zstd frames
//! ([`Layout::segment_end`]): at every entry's start and every
//! [`SEGMENT`] bytes into an entry, never where timing happens to put it,
//! so the compressed bytes are reproducible too.

use std::io;

use llmgw_shared::Sha256;
use llmgw_shared::manifest::BLOB_DIR;

/// The most uncompressed bytes in one zstd frame of a `.tar.zst`.
pub const SEGMENT: u64 = 4 << 20;

/// What an entry of the stream holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    /// One of the [`super::head_entries`]: its bytes are in `Layout::heads`.
    Head(usize),
    /// The blob at this index of the sorted blob list.
    Blob(usize),
    /// The two zero blocks that end a tar.
    Trailer,
}

/// One entry: `head` (a 512-byte header, or nothing for the trailer),
/// `size` data bytes, then `pad` zero bytes.
#[derive(Debug, Clone)]
pub struct Entry {
    pub what: What,
    pub start: u64,
    pub head: Vec<u8>,
    pub size: u64,
    pub pad: u64,
}

impl Entry {
    /// Where the data starts.
    pub fn data(&self) -> u64 {
        self.start + self.head.len() as u64
    }

    /// Where the data ends and the padding starts.
    pub fn data_end(&self) -> u64 {
        self.data() + self.size
    }

    /// The first byte after the entry.
    pub fn end(&self) -> u64 {
        self.data_end() + self.pad
    }
}

/// The whole stream.
#[derive(Debug, Clone)]
pub struct Layout {
    pub entries: Vec<Entry>,
    /// The blobs, sorted by sha256: (sha256, size).
    pub blobs: Vec<(Sha256, u64)>,
    /// The bytes of the head entries (the manifest, its signature).
    pub heads: Vec<Vec<u8>>,
}

fn pad(n: u64) -> u64 {
    (512 - n % 512) % 512
}

impl Layout {
    /// `blobs` may come in any order and hold duplicates.
    pub fn new(
        manifest: &[u8],
        signature: Option<&[u8]>,
        blobs: &[(Sha256, u64)],
        mtime: u64,
    ) -> io::Result<Self> {
        let mut blobs = blobs.to_vec();
        blobs.sort();
        blobs.dedup_by(|a, b| a.0 == b.0);
        let mut entries = Vec::with_capacity(blobs.len() + 2);
        let mut at = 0u64;
        let mut push = |what, head: Vec<u8>, size: u64, pad: u64| {
            let e = Entry {
                what,
                start: at,
                head,
                size,
                pad,
            };
            at = e.end();
            entries.push(e);
        };
        let mut heads = Vec::new();
        for (i, (name, bytes)) in super::head_entries(manifest, signature)
            .into_iter()
            .enumerate()
        {
            let n = bytes.len() as u64;
            push(
                What::Head(i),
                header(name, n, mtime)?.as_bytes().to_vec(),
                n,
                pad(n),
            );
            heads.push(bytes.to_vec());
        }
        for (i, (sha, size)) in blobs.iter().enumerate() {
            let name = format!("{BLOB_DIR}/{sha}");
            push(
                What::Blob(i),
                header(&name, *size, mtime)?.as_bytes().to_vec(),
                *size,
                pad(*size),
            );
        }
        push(What::Trailer, Vec::new(), 0, 1024);
        Ok(Self {
            entries,
            blobs,
            heads,
        })
    }

    /// The stream's length.
    pub fn total(&self) -> u64 {
        self.entries.last().map_or(0, Entry::end)
    }

    /// The index of the entry holding byte `pos` (the last one past the end).
    pub fn entry_at(&self, pos: u64) -> usize {
        self.entries
            .partition_point(|e| e.end() <= pos)
            .min(self.entries.len() - 1)
    }

    /// The entry of blob `i`.
    pub fn blob_entry(&self, i: usize) -> &Entry {
        &self.entries[i + self.heads.len()]
    }

    /// Where the head entries end and the first blob starts.
    pub fn head_end(&self) -> u64 {
        self.entries[self.heads.len() - 1].end()
    }

    /// Where the zstd frame that holds byte `pos` ends: the entry's end or
    /// the next multiple of [`SEGMENT`] from the entry's start, whichever
    /// comes first.
    pub fn segment_end(&self, pos: u64) -> u64 {
        let e = &self.entries[self.entry_at(pos)];
        let k = (pos - e.start) / SEGMENT + 1;
        (e.start + k * SEGMENT).min(e.end())
    }
}

/// A deterministic GNU tar header for a regular file: mode 0644, uid and
/// gid 0, no user or group names, the given mtime.
pub fn header(path: &str, size: u64, mtime: u64) -> io::Result<tar::Header> {
    let mut h = tar::Header::new_gnu();
    h.set_path(path)?;
    h.set_entry_type(tar::EntryType::Regular);
    h.set_size(size);
    h.set_mode(0o644);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(mtime);
    h.set_cksum();
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_and_segments() {
        let blobs = vec![
            ("bb".repeat(32).parse().unwrap(), 10 << 20),
            ("aa".repeat(32).parse().unwrap(), 512),
        ];
        let l = Layout::new(b"{}\n", None, &blobs, 0).unwrap();
        assert_eq!(l.entries.len(), 4);
        assert_eq!(l.blobs[0].0, "aa".repeat(32));
        let m = &l.entries[0];
        assert_eq!((m.start, m.data(), m.end()), (0, 512, 1024));
        let a = l.blob_entry(0);
        assert_eq!((a.start, a.data(), a.pad, a.end()), (1024, 1536, 0, 2048));
        let b = l.blob_entry(1);
        assert_eq!(b.start, 2048);
        assert_eq!(l.total(), b.end() + 1024);
        assert_eq!(l.entry_at(0), 0);
        assert_eq!(l.entry_at(2047), 1);
        assert_eq!(l.entry_at(l.total() - 1), 3);
        // Frames end at entry ends and every SEGMENT bytes into an entry.
        assert_eq!(l.segment_end(0), 1024);
        assert_eq!(l.segment_end(1500), 2048);
        assert_eq!(l.segment_end(2048), 2048 + SEGMENT);
        assert_eq!(l.segment_end(2048 + SEGMENT), 2048 + 2 * SEGMENT);
        assert_eq!(l.segment_end(2048 + 2 * SEGMENT + 7), b.end());
        assert_eq!(l.head_end(), 1024);
        // Signed: the signature is the second entry.
        let s = Layout::new(b"{}\n", Some(b"sig"), &blobs, 0).unwrap();
        assert_eq!(s.entries.len(), 5);
        assert_eq!(s.head_end(), 2048);
        assert_eq!(s.blob_entry(0).start, 2048);
    }
}
