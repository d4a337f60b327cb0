//! What a `.NAME.partial` left by a run for other content still holds that
//! the new run wants (#53 item 5): a rerun with other flags (`--no-extras`,
//! one more model) makes another manifest, so the old file cannot be
//! carried on from ([`super::resume`] needs the same layout); its whole
//! blobs are copied into the cache first, so none is downloaded again.
//!
//! Invariant: nothing in the old file is trusted. It is read as a tar (a
//! zstd stream for `.tar.zst`) from the front; only an entry named
//! `blobs/sha256/<hex>` whose hex the new manifest carries, with exactly
//! the size it gives, is copied, hashed on the way, and enters the cache
//! only when it hashes to its name; the first entry that cannot be read
//! (the cut where the old run stopped) ends the reading. A blob cut there
//! is not kept: its download starts again.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use llmgw_shared::Sha256;
use llmgw_shared::manifest::BLOB_DIR;

use crate::cache::{Cache, Expect};

/// The blobs copied into the cache, and their bytes.
#[derive(Debug, Default)]
pub struct Salvaged {
    /// Each blob put in the cache, which it did not hold before.
    pub blobs: Vec<Sha256>,
    pub bytes: u64,
}

/// Copies every whole blob of the old `file` that `wanted` (sha256 →
/// size) names and `cache` lacks into `cache`; see the module's doc.
pub fn salvage(
    file: &File,
    zst: bool,
    wanted: &BTreeMap<Sha256, u64>,
    cache: &Cache,
) -> io::Result<Salvaged> {
    let mut f = file.try_clone()?;
    f.seek(SeekFrom::Start(0))?;
    let r: Box<dyn Read> = if zst {
        Box::new(zstd::stream::read::Decoder::new(f)?)
    } else {
        Box::new(BufReader::with_capacity(1 << 20, f))
    };
    let mut tar = tar::Archive::new(r);
    let mut out = Salvaged::default();
    let Ok(entries) = tar.entries() else {
        return Ok(out);
    };
    for entry in entries {
        // The cut where the old run stopped, or bytes that are no tar.
        let Ok(mut entry) = entry else { break };
        let Some(sha) = blob_name(&entry) else {
            continue;
        };
        let Some(&size) = wanted.get(&sha) else {
            continue;
        };
        let expect = Expect::Sha256(sha.clone());
        if entry.size() != size || cache.known_sha256(&expect).is_some() {
            continue;
        }
        match copy(&mut entry, &sha, size, cache)? {
            Copied::Whole(tmp) => {
                cache.commit(&tmp, &sha, &expect)?;
                out.bytes += size;
                out.blobs.push(sha);
            }
            Copied::Wrong => continue,
            Copied::Cut => break,
        }
    }
    Ok(out)
}

/// The sha256 an entry is named by, when it is a blob's.
fn blob_name<R: Read>(entry: &tar::Entry<'_, R>) -> Option<Sha256> {
    let path = entry.path_bytes();
    let name = std::str::from_utf8(&path).ok()?;
    let hex = name.strip_prefix(BLOB_DIR)?.strip_prefix('/')?;
    Sha256::parse_exact("blob name", hex).ok()
}

/// How copying one entry ended.
enum Copied {
    /// All `size` bytes, hashing to the name: the temporary file holding them.
    Whole(PathBuf),
    /// All bytes, but another hash: not kept.
    Wrong,
    /// The file ended first: not kept, and nothing after it can be read.
    Cut,
}

/// Copies `size` bytes of `r` into a temporary file of the cache, hashing;
/// an error reading `r` is the cut, an error writing the cache is an error.
fn copy(r: &mut impl Read, sha: &Sha256, size: u64, cache: &Cache) -> io::Result<Copied> {
    let tmp = cache.root().join("partial").join(format!("{sha}.salvage"));
    let written = write_out(r, size, &tmp);
    let outcome = match written {
        Ok(Some(got)) if got == *sha => return Ok(Copied::Whole(tmp)),
        Ok(Some(_)) => Copied::Wrong,
        Ok(None) => Copied::Cut,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    let _ = std::fs::remove_file(&tmp);
    Ok(outcome)
}

/// Writes `size` bytes of `r` to `to`: their sha256, or `None` when `r`
/// ended or failed first.
fn write_out(r: &mut impl Read, size: u64, to: &std::path::Path) -> io::Result<Option<Sha256>> {
    let mut w = io::BufWriter::with_capacity(1 << 20, File::create(to)?);
    let mut hasher = llmgw_shared::StreamHasher::sha256();
    let mut buf = vec![0u8; 1 << 20];
    let mut left = size;
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = match r.read(&mut buf[..want]) {
            Ok(0) | Err(_) => return Ok(None),
            Ok(n) => n,
        };
        hasher.update(&buf[..n]);
        w.write_all(&buf[..n])?;
        left -= n as u64;
    }
    w.flush()?;
    Ok(Some(hasher.finalize().sha256))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tar of `entries` (name, bytes), cut to `keep` bytes.
    fn tar_of(entries: &[(&str, &[u8])], keep: Option<usize>) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (name, body) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(body.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, name, *body).unwrap();
        }
        let mut bytes = b.into_inner().unwrap();
        if let Some(k) = keep {
            bytes.truncate(k);
        }
        bytes
    }

    #[test]
    fn whole_wanted_blobs_enter_the_cache_and_nothing_else() {
        let (a, b, c) = (vec![b'a'; 700], vec![b'b'; 1500], vec![b'c'; 3000]);
        let (sa, sb, sc) = (Sha256::of(&a), Sha256::of(&b), Sha256::of(&c));
        let lie = Sha256::of(b"not these bytes");
        let name = |s: &Sha256| format!("{BLOB_DIR}/{s}");
        let bytes = tar_of(
            &[
                ("manifest.json", b"{}"),
                (&name(&lie), &b[..]),
                (&name(&sa), &a[..]),
                (&name(&sb), &b[..]),
                (&name(&sc), &c[..]),
            ],
            // manifest 1024, the lie 2048, a 1536, b 2048; c cut half-way.
            Some(1024 + 2048 + 1536 + 2048 + 512 + 1000),
        );
        for zst in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let cache = Cache::open(&dir.path().join("cache")).unwrap();
            let path = dir.path().join("old");
            let body = if zst {
                zstd::encode_all(&bytes[..], 3).unwrap()
            } else {
                bytes.clone()
            };
            std::fs::write(&path, body).unwrap();
            let wanted: BTreeMap<Sha256, u64> =
                [(sa.clone(), 700), (sc.clone(), 3000), (lie.clone(), 1500)].into();
            let got = salvage(&File::open(&path).unwrap(), zst, &wanted, &cache).unwrap();
            // a: wanted and whole. b: not wanted. c: cut. The lie: wrong bytes.
            assert_eq!(got.blobs, std::slice::from_ref(&sa), "zst {zst}");
            assert_eq!(got.bytes, 700);
            assert_eq!(std::fs::read(cache.blob_path(&sa)).unwrap(), a);
            for s in [&sb, &sc, &lie] {
                assert!(!cache.blob_path(s).exists(), "zst {zst}: {s}");
            }
            let left = std::fs::read_dir(dir.path().join("cache/partial")).unwrap();
            assert_eq!(left.count(), 0, "zst {zst}: a temporary file was left");
            // Held already: not copied again.
            let again = salvage(&File::open(&path).unwrap(), zst, &wanted, &cache).unwrap();
            assert!(again.blobs.is_empty());
        }
    }
}
