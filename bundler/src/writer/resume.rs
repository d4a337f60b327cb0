//! Reading back the temporary bundle a killed or failed run left, to carry
//! on from it instead of downloading again.
//!
//! The invariant: nothing in the old file is trusted. It is read front to
//! back against the [`Layout`] the new run computed: every header, the
//! manifest and every padding byte must be exactly what the new run would
//! write, and every whole blob must hash to its name. The run continues
//! from the first byte that is not (or from the end), with the hash of a
//! blob cut there carried over; a `.tar.zst` continues after its last
//! complete frame, the only places where a frame boundary is known to be.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};

use sha2::{Digest, Sha256};

use super::layout::{Layout, What};

/// What the old file holds of a blob.
pub enum Have {
    None,
    /// Whole and verified.
    Complete,
    /// Its first bytes, and their hash.
    Prefix(u64, Sha256),
}

/// Where to carry on.
pub struct Found {
    /// The stream position to continue at.
    pub pos: u64,
    /// The file length to keep (the same as `pos` for a `.tar`).
    pub file_len: u64,
    pub have: Vec<Have>,
}

/// The manifest the old file starts with (at most `cap` bytes), if it can
/// be read.
pub fn manifest(file: &File, zst: bool, cap: u64) -> Option<Vec<u8>> {
    let mut f = file.try_clone().ok()?;
    f.seek(SeekFrom::Start(0)).ok()?;
    let mut r: Box<dyn Read> = if zst {
        Box::new(zstd::stream::read::Decoder::new(f).ok()?)
    } else {
        Box::new(BufReader::new(f))
    };
    let mut h = [0u8; 512];
    r.read_exact(&mut h).ok()?;
    let h = tar::Header::from_byte_slice(&h);
    let size = h.entry_size().ok()?;
    if h.path_bytes().as_ref() != llmgw_shared::manifest::MANIFEST_NAME.as_bytes() || size > cap {
        return None;
    }
    let mut m = vec![0u8; size as usize];
    r.read_exact(&mut m).ok()?;
    Some(m)
}

/// Checks the old file against `layout`; see the module's doc.
pub fn scan(file: &File, zst: bool, layout: &Layout) -> io::Result<Found> {
    let mut f = file.try_clone()?;
    f.seek(SeekFrom::Start(0))?;
    let mut w = Walker::new(layout);
    // Frame ends, for a .tar.zst: (stream position, file offset).
    let mut ends = vec![(0u64, 0u64)];
    let mut buf = vec![0u8; 1 << 20];
    if zst {
        let mut d = zstd::zstd_safe::DCtx::create();
        let mut out = vec![0u8; 1 << 20];
        let mut frame = Vec::new();
        let mut read = 0u64;
        'file: loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            let mut input = zstd::zstd_safe::InBuffer::around(&buf[..n]);
            loop {
                let mut o = zstd::zstd_safe::OutBuffer::around(&mut out[..]);
                let Ok(left) = d.decompress_stream(&mut o, &mut input) else {
                    break 'file;
                };
                let made = o.pos();
                frame.extend_from_slice(&out[..made]);
                if frame.len() as u64 > super::layout::SEGMENT {
                    break 'file;
                }
                if left == 0 {
                    w.feed(&frame);
                    frame.clear();
                    ends.push((w.pos, read + input.pos() as u64));
                    if w.bad.is_some() {
                        break 'file;
                    }
                }
                if input.pos() == n && made < out.len() {
                    break;
                }
            }
            read += n as u64;
        }
    } else {
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 || w.bad.is_some() {
                break;
            }
            w.feed(&buf[..n]);
        }
    }
    let (pos, have) = w.finish();
    if !zst {
        return Ok(Found {
            pos,
            file_len: pos,
            have,
        });
    }
    // A .tar.zst's stopping point is always a frame end: the walker was
    // fed whole frames, and a wrong entry starts where a frame starts.
    Ok(match ends.iter().find(|(p, _)| *p == pos) {
        Some((_, c)) => Found {
            pos,
            file_len: *c,
            have,
        },
        None => Found {
            pos: 0,
            file_len: 0,
            have: (0..layout.blobs.len()).map(|_| Have::None).collect(),
        },
    })
}

/// Follows the stream through the layout, checking as it goes.
struct Walker<'a> {
    layout: &'a Layout,
    pos: u64,
    /// Where the first byte that is not right is (an entry's start).
    bad: Option<u64>,
    /// The blob being hashed.
    hashing: Option<(usize, Sha256)>,
    complete: Vec<bool>,
}

impl<'a> Walker<'a> {
    fn new(layout: &'a Layout) -> Self {
        Self {
            layout,
            pos: 0,
            bad: None,
            hashing: None,
            complete: vec![false; layout.blobs.len()],
        }
    }

    fn feed(&mut self, mut bytes: &[u8]) {
        let total = self.layout.total();
        while !bytes.is_empty() && self.bad.is_none() {
            if self.pos >= total {
                // More than a bundle: cut it at the end.
                self.bad = Some(total);
                return;
            }
            let e = &self.layout.entries[self.layout.entry_at(self.pos)];
            let (region_end, ok_n) = if self.pos < e.data() {
                let at = (self.pos - e.start) as usize;
                let n = (e.head.len() - at).min(bytes.len());
                (n, bytes[..n] == e.head[at..at + n])
            } else if self.pos < e.data_end() {
                let at = self.pos - e.data();
                let n = ((e.size - at) as usize).min(bytes.len());
                let ok = match e.what {
                    What::Head(i) => {
                        bytes[..n] == self.layout.heads[i][at as usize..at as usize + n]
                    }
                    What::Blob(k) => {
                        let h = match &mut self.hashing {
                            Some((i, h)) if *i == k => h,
                            _ => &mut self.hashing.insert((k, Sha256::new())).1,
                        };
                        h.update(&bytes[..n]);
                        if at + n as u64 == e.size {
                            let got = hex::encode(h.clone().finalize());
                            self.complete[k] = got == self.layout.blobs[k].0;
                            self.complete[k]
                        } else {
                            true
                        }
                    }
                    What::Trailer => true,
                };
                (n, ok)
            } else {
                let n = ((e.end() - self.pos) as usize).min(bytes.len());
                (n, bytes[..n].iter().all(|b| *b == 0))
            };
            if !ok_n {
                self.bad = Some(e.start);
                return;
            }
            self.pos += region_end as u64;
            bytes = &bytes[region_end..];
        }
    }

    fn finish(self) -> (u64, Vec<Have>) {
        let pos = self.bad.unwrap_or(self.pos);
        let mut have: Vec<Have> = (0..self.layout.blobs.len()).map(|_| Have::None).collect();
        for (k, h) in have.iter_mut().enumerate() {
            let e = self.layout.blob_entry(k);
            if e.end() <= pos && self.complete[k] {
                *h = Have::Complete;
            } else if e.data() < pos
                && pos < e.end()
                && let Some((i, s)) = self.hashing.clone()
                && i == k
            {
                *h = Have::Prefix((pos - e.data()).min(e.size), s);
            }
        }
        (pos, have)
    }
}
