//! The writer without a network: blobs from files, a download simulated by
//! pieces sent by hand, and runs stopped half-way then carried on.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use llmgw_shared::sha256_hex;

use super::layout::Layout;
use super::resume::Have;
use super::sink::Keep;
use super::stream::{Source, Stream, StreamBlob};
use super::temp::{TempBundle, resume_name};
use super::*;
use crate::cache::Cache;
use crate::error::CreateError;
use crate::pieces::{Msg, Piece};

fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn blobs(dir: &Path) -> Vec<Blob> {
    let mut out = Vec::new();
    let big = noise(9 << 20, 7);
    for body in [
        &b"second"[..],
        b"first",
        b"second",
        &vec![7u8; 70_000],
        &big,
    ] {
        let sha = llmgw_shared::Sha256::of(body);
        let p = dir.join(sha.as_str());
        fs::write(&p, body).unwrap();
        out.push(Blob {
            sha256: sha,
            size: body.len() as u64,
            path: p,
        });
    }
    out
}

fn entries(bytes: &[u8]) -> Vec<(String, Vec<u8>, u64, u32)> {
    let mut a = tar::Archive::new(bytes);
    a.entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let (mtime, mode) = (e.header().mtime().unwrap(), e.header().mode().unwrap());
            let mut v = Vec::new();
            e.read_to_end(&mut v).unwrap();
            (name, v, mtime, mode)
        })
        .collect()
}

/// How a test run gets blob `k`.
#[derive(Clone, Copy)]
enum Feed {
    /// Over "the network": the first `n` bytes, then a failure.
    NetFailingAfter(u64),
}

/// Writes `out` like `create` does, from the files of `bl`, except that
/// blob index `net.0` comes as pieces per `net.1`.
fn write(
    out: &Path,
    zstd: Option<(i32, usize)>,
    bl: &[Blob],
    mtime: u64,
    net: Option<(usize, Feed)>,
) -> Result<(), CreateError> {
    let cache_dir = out.parent().unwrap().join("cache");
    let cache = Cache::open(&cache_dir).unwrap();
    let list: Vec<(Sha256, u64)> = bl.iter().map(|b| (b.sha256.clone(), b.size)).collect();
    let layout = Arc::new(Layout::new(b"{}\n", None, &list, mtime).unwrap());
    let temp = TempBundle::open(out, zstd.is_some())?;
    let mut found = temp.scan(&layout)?;
    let by_sha: std::collections::BTreeMap<_, _> = bl
        .iter()
        .map(|b| (b.sha256.clone(), b.path.clone()))
        .collect();
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let mut stream_blobs = Vec::new();
    for (k, (sha, _)) in layout.blobs.iter().enumerate() {
        let have = std::mem::replace(&mut found.have[k], Have::None);
        let (source, prefix) = match have {
            Have::Complete => (Source::Done, None),
            Have::Prefix(n, h) => (Source::File(by_sha[sha].clone()), Some((n, h))),
            Have::None => match net {
                Some((i, Feed::NetFailingAfter(n))) if i == k => {
                    let body = fs::read(&by_sha[sha]).unwrap();
                    let (ptx, prx) = tokio::sync::mpsc::unbounded_channel();
                    ptx.send(Ok(Msg::Data(body[..n as usize].to_vec().into())))
                        .unwrap();
                    ptx.send(Ok(Msg::Flush)).unwrap();
                    let cut = crate::http::HttpError::Protocol {
                        url: "http://h/f".into(),
                        detail: "the network went away".into(),
                    };
                    ptx.send(Err(CreateError::Http(cut))).unwrap();
                    tx.try_send(Piece::for_test(k, 0, body.len() as u64, prx))
                        .unwrap();
                    (Source::Net, None)
                }
                _ => (Source::File(by_sha[sha].clone()), None),
            },
        };
        stream_blobs.push(StreamBlob {
            label: format!("blob {k}"),
            source,
            prefix,
            keep: false,
            reused: false,
            counted: false,
        });
    }
    drop(tx);
    let mut sink = temp.sink(layout.clone(), &found, zstd)?;
    let progress: crate::progress::Events = std::sync::Arc::new(llmgw_shared::progress::Quiet);
    let stream = Stream {
        layout: &layout,
        blobs: stream_blobs,
        cache: &cache,
        progress: &progress,
        path: &temp.path,
    };
    match stream.run(&mut sink, Some(&mut rx)) {
        Ok(_) => {
            sink.finish().unwrap();
            temp.finish(out, None)
        }
        Err(e) => {
            let keep = match e {
                CreateError::WrongBytes { .. } => Keep::Verified,
                _ => Keep::All,
            };
            sink.abandon(keep).unwrap();
            temp.keep_if_longer(layout.head_end());
            Err(e)
        }
    }
}

#[test]
fn formats_from_names() {
    assert_eq!(Format::of(Path::new("a/b.tar.zst")), Format::TarZst);
    assert_eq!(Format::of(Path::new("b.TAR")), Format::Tar);
    assert_eq!(Format::of(Path::new("bundle")), Format::Dir);
}

#[test]
fn tar_is_ordered_deduplicated_and_reproducible() {
    let d = tempfile::tempdir().unwrap();
    let bl = blobs(d.path());
    let out = d.path().join("b.tar");
    write(&out, None, &bl, 1234, None).unwrap();
    let bytes = fs::read(&out).unwrap();
    let es = entries(&bytes);
    assert_eq!(es.len(), 5);
    assert_eq!(es[0].0, "manifest.json");
    assert_eq!(es[0].1, b"{}\n");
    let names: Vec<&str> = es[1..].iter().map(|e| e.0.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    for e in &es[1..] {
        assert_eq!(e.0, format!("blobs/sha256/{}", sha256_hex(&e.1)));
        assert_eq!((e.2, e.3), (1234, 0o644));
    }
    let out2 = d.path().join("c.tar");
    write(&out2, None, &bl, 1234, None).unwrap();
    assert_eq!(bytes, fs::read(&out2).unwrap());
    // No temporary left, and GNU tar agrees it is a tar.
    assert!(!resume_name(&out).exists());
    let listed = std::process::Command::new("tar")
        .arg("-tf")
        .arg(&out)
        .output()
        .expect("tar");
    assert_eq!(String::from_utf8_lossy(&listed.stdout).lines().count(), 5);
}

#[test]
fn zst_holds_the_same_tar_whatever_the_thread_count() {
    let d = tempfile::tempdir().unwrap();
    let bl = blobs(d.path());
    let tar = d.path().join("b.tar");
    write(&tar, None, &bl, 0, None).unwrap();
    let one = d.path().join("one.tar.zst");
    write(&one, Some((3, 1)), &bl, 0, None).unwrap();
    let three = d.path().join("three.tar.zst");
    write(&three, Some((3, 3)), &bl, 0, None).unwrap();
    let z = fs::read(&one).unwrap();
    assert_eq!(z, fs::read(&three).unwrap());
    assert_eq!(
        zstd::decode_all(&z[..]).unwrap(),
        fs::read(&tar).unwrap(),
        "the .tar.zst holds the .tar"
    );
    // The 9 MiB of noise were stored, not squeezed: a few bytes per 128 KiB.
    let t = fs::metadata(&tar).unwrap().len();
    assert!(z.len() as u64 <= t + t / 1000, "{} vs {t}", z.len());
    assert!(z.len() as u64 > (9 << 20), "{}", z.len());
    // Another level, other bytes (the compressible blob).
    let nine = d.path().join("nine.tar.zst");
    write(&nine, Some((9, 2)), &bl, 0, None).unwrap();
    assert_ne!(z, fs::read(&nine).unwrap());
}

#[test]
fn a_stopped_run_is_carried_on_to_the_same_bytes() {
    let d = tempfile::tempdir().unwrap();
    let bl = blobs(d.path());
    // The big blob's index in hex order.
    let mut list: Vec<&Blob> = bl.iter().collect();
    list.sort_by(|a, b| a.sha256.cmp(&b.sha256));
    list.dedup_by(|a, b| a.sha256 == b.sha256);
    let big = list.iter().position(|b| b.size == 9 << 20).unwrap();
    for (name, zstd) in [("x.tar", None), ("x.tar.zst", Some((3, 2)))] {
        let whole = d.path().join(format!("whole-{name}"));
        write(&whole, zstd, &bl, 0, None).unwrap();
        let out = d.path().join(name);
        // 6 MiB of the big blob arrive, then the network fails.
        let err = write(
            &out,
            zstd,
            &bl,
            0,
            Some((big, Feed::NetFailingAfter(6 << 20))),
        )
        .unwrap_err();
        assert!(err.to_string().contains("went away"), "{err}");
        assert!(!out.exists());
        let kept = fs::metadata(resume_name(&out)).unwrap().len();
        assert!(kept > 1 << 20, "{name}: kept {kept}");
        write(&out, zstd, &bl, 0, None).unwrap();
        assert!(
            fs::read(&out).unwrap() == fs::read(&whole).unwrap(),
            "{name}: carried on to other bytes"
        );
        assert!(!resume_name(&out).exists());
    }
}

#[test]
fn bytes_left_by_a_stopped_run_are_checked_not_trusted() {
    let d = tempfile::tempdir().unwrap();
    let bl = blobs(d.path());
    let whole = d.path().join("whole.tar");
    write(&whole, None, &bl, 0, None).unwrap();
    let good = fs::read(&whole).unwrap();
    // A left-over file whose first blob is damaged and whose end is cut.
    let out = d.path().join("x.tar");
    let mut left = good[..good.len() - 5000].to_vec();
    left[1024 + 512] ^= 1;
    fs::write(resume_name(&out), &left).unwrap();
    write(&out, None, &bl, 0, None).unwrap();
    assert!(fs::read(&out).unwrap() == good);
    // One that belongs to other content entirely is written over.
    let out = d.path().join("y.tar");
    fs::write(resume_name(&out), noise(100_000, 3)).unwrap();
    write(&out, None, &bl, 0, None).unwrap();
    assert!(fs::read(&out).unwrap() == good);
}

#[test]
fn wrong_bytes_are_cut_back_to_the_last_verified_blob() {
    let d = tempfile::tempdir().unwrap();
    let mut bl = blobs(d.path());
    // The file of the last blob in hex order is not what its name says.
    let last = bl.iter().map(|b| b.sha256.clone()).max().unwrap();
    let b = bl.iter_mut().find(|b| b.sha256 == last).unwrap();
    let mut body = fs::read(&b.path).unwrap();
    body[0] ^= 1;
    let bad = d.path().join("bad");
    fs::write(&bad, &body).unwrap();
    b.path = bad;
    let out = d.path().join("b.tar");
    let err = write(&out, None, &bl, 0, None).unwrap_err();
    assert!(matches!(err, CreateError::WrongBytes { .. }), "{err}");
    assert!(
        err.to_string().contains(&format!("expected {last}")),
        "{err}"
    );
    assert!(!out.exists());
    // What is kept ends where the bad blob's entry began: all verified.
    let kept = fs::read(resume_name(&out)).unwrap();
    let es = entries(&[&kept[..], &[0u8; 1024]].concat());
    assert_eq!(es.len(), 4);
    for e in &es[1..] {
        assert_eq!(e.0, format!("blobs/sha256/{}", sha256_hex(&e.1)));
    }
}

#[test]
fn dir_bundle_links_or_copies() {
    let d = tempfile::tempdir().unwrap();
    let bl = blobs(d.path());
    let dir = d.path().join("bundle");
    write_dir_bundle(&dir, b"{}\n", None, &bl, None).unwrap();
    assert_eq!(fs::read(dir.join("manifest.json")).unwrap(), b"{}\n");
    assert_eq!(fs::read_dir(dir.join("blobs/sha256")).unwrap().count(), 4);
}

#[test]
fn a_failed_dir_write_leaves_nothing() {
    let d = tempfile::tempdir().unwrap();
    let mut bl = blobs(d.path());
    bl[0].size += 1; // the cache file is not what was verified
    let out = d.path().join("b");
    let err = write_dir_bundle(&out, b"{}\n", None, &bl, None).unwrap_err();
    let err = llmgw_shared::chain(&err);
    assert!(err.contains("not the 7 verified"), "{err}");
    assert!(!out.exists());
    assert!(!temp_name(&out).exists());
}

#[test]
fn one_run_at_a_time() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("b.tar");
    let first = TempBundle::open(&out, false).unwrap();
    let err = llmgw_shared::chain(&TempBundle::open(&out, false).err().unwrap());
    assert!(err.contains("another `llmgw bundle create`"), "{err}");
    drop(first);
    assert!(TempBundle::open(&out, false).is_ok());
}

/// A bundle the check before publishing refuses is moved to `OUT.refused`
/// (an older one there replaced), never to `--out`; the error says where
/// and carries the check's reason.
#[test]
fn a_bundle_the_check_refuses_is_kept_aside_not_published() {
    let d = tempfile::tempdir().unwrap();
    let bl = blobs(d.path());
    let out = d.path().join("b");
    let refused = d.path().join("b.refused");
    fs::create_dir_all(refused.join("old")).unwrap();
    let check = |path: &Path| -> Result<(), super::CheckError> {
        assert!(
            path.join("manifest.json").is_file(),
            "checked before the rename"
        );
        Err("image acme/app: blob 00 is carried, but no manifest names it".into())
    };
    let err = write_dir_bundle(&out, b"{}\n", None, &bl, Some(&check)).unwrap_err();
    let text = llmgw_shared::chain(&err);
    assert!(
        text.contains("would be refused at import")
            && text.contains(&format!("kept at {}", refused.display()))
            && text.ends_with("no manifest names it"),
        "{text}"
    );
    assert!(!out.exists());
    assert!(!temp_name(&out).exists());
    assert_eq!(fs::read(refused.join("manifest.json")).unwrap(), b"{}\n");
    assert!(!refused.join("old").exists(), "the older one was replaced");
}
