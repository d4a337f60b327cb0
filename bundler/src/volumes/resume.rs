//! Carrying on a volume set that an earlier run of the same request left
//! half-written (killed, or out of disk, while writing volume 7 of 12).
//!
//! Invariant: a volume already under its final name is kept only when its
//! bytes are exactly the ones this run plans for it — every head byte,
//! tar header and padding byte equal, every piece hashing to the sha256
//! the manifest records — and it is never overwritten unless it is the
//! planned volume cut short (every byte it has as planned). One that
//! differs is refused by name, with what to do, before anything is
//! written. A volume is written into `.NAME.partial` beside it, locked
//! while this run writes it, and renamed into place only when whole; the
//! next run reuses that name, so a killed run leaves nothing behind.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use llmgw_shared::manifest::{MANIFEST_NAME, MAX_MANIFEST_BYTES, SIGNATURE_NAME};

use super::write::{Seg, copy_exact, sha256_of_next};
use crate::error::{CreateError, OutError};

/// A signature file is a few hundred bytes; anything larger is not one.
const MAX_SIGNATURE_BYTES: u64 = 64 << 10;

/// The head entries of a volume: its manifest's bytes and, when signed,
/// its signature's (both bounded). `None` when the file does not start
/// with them.
pub fn read_head(path: &Path) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    let mut a = tar::Archive::new(File::open(path).ok()?);
    let mut entries = a.entries().ok()?;
    let mut first = entries.next()?.ok()?;
    let size = first.header().entry_size().ok()?;
    if first.path_bytes().as_ref() != MANIFEST_NAME.as_bytes() || size > MAX_MANIFEST_BYTES {
        return None;
    }
    let mut manifest = Vec::new();
    (&mut first)
        .take(MAX_MANIFEST_BYTES)
        .read_to_end(&mut manifest)
        .ok()?;
    drop(first);
    let signature = match entries.next() {
        Some(Ok(mut e)) if e.path_bytes().as_ref() == SIGNATURE_NAME.as_bytes() => {
            if e.header().entry_size().ok()? > MAX_SIGNATURE_BYTES {
                return None;
            }
            let mut sig = Vec::new();
            (&mut e)
                .take(MAX_SIGNATURE_BYTES)
                .read_to_end(&mut sig)
                .ok()?;
            Some(sig)
        }
        _ => None,
    };
    Some((manifest, signature))
}

/// How a file an earlier run left compares with the volume planned.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Exactly the planned bytes.
    Same,
    /// The planned bytes, cut short after `have` of `want`.
    CutShort { have: u64, want: u64 },
    /// Something else; why, in words.
    Differs(String),
}

/// Compares the file at `path` with the volume `segs` plans, reading it
/// once: pieces are hashed (and only a piece it cuts short is compared
/// with its source file), everything else compared byte for byte.
pub fn compare(path: &Path, segs: &[Seg]) -> io::Result<Verdict> {
    let want = super::write::planned_len(segs);
    let have = std::fs::metadata(path)?.len();
    if have > want {
        return Ok(Verdict::Differs(format!(
            "it is {have} bytes, longer than the {want} planned"
        )));
    }
    let mut f = io::BufReader::with_capacity(1 << 20, File::open(path)?);
    let mut buf = vec![0u8; 1 << 20];
    let mut at = 0u64;
    for seg in segs {
        let left = have - at;
        match seg {
            Seg::Bytes(b) => {
                let n = (b.len() as u64).min(left) as usize;
                for (i, planned) in b[..n].chunks(buf.len()).enumerate() {
                    let got = &mut buf[..planned.len()];
                    f.read_exact(got)?;
                    if let Some(j) = got.iter().zip(planned).position(|(x, y)| x != y) {
                        return Ok(Verdict::Differs(format!(
                            "its byte at offset {} is not the planned one (the tar headers \
                             and manifest of another request, or damaged)",
                            at + (i * buf.len() + j) as u64
                        )));
                    }
                }
                at += n as u64;
            }
            Seg::Piece {
                name, size, sha256, ..
            } if left >= *size => {
                let got = sha256_of_next(&mut f, *size, &mut buf)?;
                if got != *sha256 {
                    return Ok(Verdict::Differs(format!(
                        "its entry {name} hashes to {got}, the plan's to {sha256}"
                    )));
                }
                at += size;
            }
            Seg::Piece {
                name, from, offset, ..
            } => {
                // Cut inside this piece: what is there must be its start.
                let mut src = File::open(from)?;
                io::Seek::seek(&mut src, io::SeekFrom::Start(*offset))?;
                let mut other = vec![0u8; buf.len()];
                let mut same = true;
                copy_exact(&mut f, left, &mut buf, |b| {
                    src.read_exact(&mut other[..b.len()])?;
                    same &= other[..b.len()] == *b;
                    Ok(())
                })?;
                if !same {
                    return Ok(Verdict::Differs(format!(
                        "its entry {name}, cut short, is not the start of the planned one"
                    )));
                }
                at += left;
            }
        }
        if at == have && have < want {
            return Ok(Verdict::CutShort { have, want });
        }
    }
    Ok(Verdict::Same)
}

/// The head of the first volume of the set at `out` an earlier run left
/// (any of `NAME.v*-of-*.tar`, `NAME.p*-of-*.tar` whose manifest is whole).
pub fn earlier_head(out: &Path) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    let names = super::set_files(out).ok()?;
    names.iter().find_map(|p| {
        read_head(p).filter(|(m, _)| llmgw_shared::manifest::Manifest::from_json_bytes(m).is_ok())
    })
}

/// The signature the volumes carry: an earlier run's, when it signed these
/// very manifest bytes with this key and the same trusted comment (minisign
/// signatures are randomized, and every volume of a set must carry the
/// same one), else a new one.
pub fn signature(
    series: &crate::series::Series,
    manifest: &llmgw_shared::manifest::Manifest,
    bytes: &[u8],
    earlier: Option<&(Vec<u8>, Option<Vec<u8>>)>,
) -> Result<Option<Vec<u8>>, CreateError> {
    let fresh = series.sign(manifest, bytes)?;
    let (Some(new), Some(key), Some((old_bytes, Some(old)))) = (&fresh, &series.key, earlier)
    else {
        return Ok(fresh);
    };
    use llmgw_shared::signing::{Signature, verify_with_trusted};
    let parse = |b: &[u8]| {
        std::str::from_utf8(b)
            .ok()
            .and_then(|t| Signature::parse(SIGNATURE_NAME, t).ok())
    };
    let keep = old_bytes.as_slice() == bytes
        && match (parse(old), parse(new)) {
            (Some(o), Some(n)) => {
                o.trusted_comment() == n.trusted_comment()
                    && verify_with_trusted(
                        MANIFEST_NAME,
                        bytes,
                        &o,
                        std::slice::from_ref(key.public_key()),
                    )
                    .is_ok()
            }
            _ => false,
        };
    Ok(Some(if keep { old.clone() } else { new.clone() }))
}

/// Why a volume's head is not the planned one, in words an operator acts on.
pub fn head_differs(path: &Path, planned: &[u8], planned_sig: Option<&[u8]>) -> Option<String> {
    use llmgw_shared::manifest::Manifest;
    let Some((old, sig)) = read_head(path) else {
        return Some("it does not start with a manifest.json (not a volume)".into());
    };
    if old == planned {
        return (sig.as_deref() != planned_sig)
            .then(|| signature_differs(sig.as_deref(), planned_sig));
    }
    let sha = llmgw_shared::sha256_hex(&old);
    let mut why = format!(
        "it belongs to bundle {sha}, not to this run's {}",
        llmgw_shared::sha256_hex(planned)
    );
    if let (Ok(o), Ok(n)) = (
        Manifest::from_json_bytes(&old),
        Manifest::from_json_bytes(planned),
    ) && o.sequence != n.sequence
        && let Some(seq) = o.sequence
    {
        why.push_str(&format!(
            " (it is sequence {seq} of the series; to carry that set on, run again with \
             --sequence {seq})"
        ));
    }
    Some(why)
}

/// Why a volume holding this run's manifest under another signature is
/// not kept, and what to do: every volume of a set must carry one
/// signature, and this run's key did not make the one it has (or one of
/// the two runs signed and the other did not), so keeping it would mix
/// two signatures in one set.
fn signature_differs(old: Option<&[u8]>, planned: Option<&[u8]>) -> String {
    use llmgw_shared::signing::Signature;
    let key_of = |b: &[u8]| {
        std::str::from_utf8(b)
            .ok()
            .and_then(|t| Signature::parse(SIGNATURE_NAME, t).ok())
            .map_or_else(
                || "an unreadable key".to_string(),
                |s| format!("key {}", s.key_id()),
            )
    };
    match (old, planned) {
        (None, _) => "it holds this run's manifest unsigned, and this run signs it \
                      (--sign-key): run again without --sign-key to keep it, or remove it to \
                      have it written signed"
            .into(),
        (Some(o), None) => format!(
            "it holds this run's manifest signed by {}, and this run signs nothing: run again \
             with --sign-key and the key that signed it to keep it, or remove it",
            key_of(o)
        ),
        (Some(o), Some(n)) if key_of(o) == key_of(n) => format!(
            "it holds this run's manifest with a signature by this run's {} that does not \
             verify (damaged): remove it to have it written anew",
            key_of(n)
        ),
        (Some(o), Some(n)) => format!(
            "it holds this run's manifest signed by {}, which this run's --sign-key ({}) did \
             not make: run again with the key that signed it to keep it, or remove it to have \
             it signed anew",
            key_of(o),
            key_of(n)
        ),
    }
}

/// What an earlier run of the set left, against the plan: answers the
/// volumes to write, each with whether a copy cut short is there to be
/// replaced. Refuses, naming each and before anything is written, a
/// volume that differs from its plan, a file of the set's names the plan
/// has no volume for, and a `NAME.sha256` naming another manifest.
pub fn check_earlier(
    out: &Path,
    planned: &[(PathBuf, Vec<Seg>)],
    manifest: &[u8],
    signature: Option<&[u8]>,
    sha256_file: &Path,
    sha256_text: &str,
    progress: &crate::progress::Events,
) -> Result<std::collections::BTreeMap<PathBuf, bool>, CreateError> {
    use std::io::Read;
    let mut todo = std::collections::BTreeMap::new();
    let mut refused = Vec::new();
    let names: std::collections::BTreeSet<&Path> =
        planned.iter().map(|(p, _)| p.as_path()).collect();
    for f in super::set_files(out)? {
        if !names.contains(f.as_path()) {
            refused.push(format!(
                "{}: this run plans {} volumes, and this is none of them (a run that \
                 planned another set left it)",
                f.display(),
                planned.len()
            ));
        }
    }
    for (dest, segs) in planned {
        if !dest.exists() {
            todo.insert(dest.clone(), false);
            continue;
        }
        progress.message(&format!(
            "{}: written by an earlier run; checking it against the plan",
            dest.display()
        ));
        match compare(dest, segs).map_err(|e| CreateError::io(dest, e))? {
            Verdict::Same => {}
            Verdict::CutShort { have, want } => {
                progress.message(&format!(
                    "{}: cut short ({have} of {want} bytes, each as planned); writing it again",
                    dest.display()
                ));
                todo.insert(dest.clone(), true);
            }
            Verdict::Differs(why) => {
                // Another manifest says more than the first byte that differs.
                let why = head_differs(dest, manifest, signature).unwrap_or(why);
                refused.push(format!("{}: {why}", dest.display()));
            }
        }
    }
    if sha256_file.exists() {
        let mut text = Vec::new();
        std::fs::File::open(sha256_file)
            .and_then(|f| f.take(4096).read_to_end(&mut text))
            .map_err(|e| CreateError::io(sha256_file, e))?;
        if text != sha256_text.as_bytes() {
            refused.push(format!(
                "{}: it does not name this run's manifest ({})",
                sha256_file.display(),
                sha256_text.trim_end()
            ));
        }
    }
    if refused.is_empty() {
        return Ok(todo);
    }
    Err(OutError::EarlierRun {
        out: out.to_path_buf(),
        refused,
    }
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan of a head, one piece of `src` (bytes 100..700), padding and
    /// an end, and the file it plans.
    fn plan(dir: &Path) -> (Vec<Seg>, Vec<u8>) {
        let src: Vec<u8> = (0..1000u32).map(|i| (i * 31 % 256) as u8).collect();
        let from = dir.join("src");
        std::fs::write(&from, &src).unwrap();
        let piece = &src[100..700];
        let segs = vec![
            Seg::Bytes(b"HEAD".repeat(32)),
            Seg::Piece {
                name: "chunks/x".into(),
                from,
                offset: 100,
                size: 600,
                sha256: llmgw_shared::Sha256::of(piece),
            },
            Seg::Bytes(vec![0u8; 424]),
        ];
        let mut file = b"HEAD".repeat(32);
        file.extend_from_slice(piece);
        file.extend_from_slice(&[0u8; 424]);
        (segs, file)
    }

    fn verdict(dir: &Path, segs: &[Seg], bytes: &[u8]) -> Verdict {
        let p = dir.join("volume");
        std::fs::write(&p, bytes).unwrap();
        compare(&p, segs).unwrap()
    }

    #[test]
    fn the_planned_bytes_their_prefixes_and_anything_else() {
        let dir = tempfile::tempdir().unwrap();
        let (segs, file) = plan(dir.path());
        let want = file.len() as u64;
        assert_eq!(super::super::write::planned_len(&segs), want);
        assert_eq!(verdict(dir.path(), &segs, &file), Verdict::Same);
        // Cut in the head, inside the piece, at its end, in the padding.
        for cut in [0usize, 5, 128, 300, 728, 900] {
            assert_eq!(
                verdict(dir.path(), &segs, &file[..cut]),
                Verdict::CutShort {
                    have: cut as u64,
                    want
                },
                "cut at {cut}"
            );
        }
        // A byte changed in the head, in the piece (whole or cut short),
        // in the padding; a byte too many.
        for (at, len, what) in [
            (3usize, file.len(), "offset 3"),
            (400, file.len(), "hashes to"),
            (400, 500, "not the start"),
            (1000, file.len(), "offset 1000"),
        ] {
            let mut bad = file[..len].to_vec();
            bad[at] ^= 1;
            match verdict(dir.path(), &segs, &bad) {
                Verdict::Differs(why) => assert!(why.contains(what), "{at}: {why}"),
                v => panic!("{at}: {v:?}"),
            }
        }
        let mut longer = file.clone();
        longer.push(0);
        assert!(matches!(
            verdict(dir.path(), &segs, &longer),
            Verdict::Differs(w) if w.contains("longer")
        ));
    }
}
