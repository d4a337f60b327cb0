//! What import refuses, each refusal named, with the store left exactly as
//! it was.

use super::common::*;
use crate::bundle_kit::*;

#[test]
fn every_kind_of_damage_is_refused_and_the_store_is_unchanged() {
    let env = Env::new();
    let kit = good_kit(&env.key);
    let sha = kit.sha256();
    let good = kit.entries();
    let msha = model_sha(&kit);
    let mi = blob_entry_index(&good, &msha);
    let blob_name = format!("blobs/sha256/{msha}");

    // A flipped byte in a blob.
    let mut e = good.clone();
    if let Entry::File { data, .. } = &mut e[mi] {
        data[1000] ^= 1;
    }
    env.refuse_entries(
        "flipped byte",
        &e,
        &sha,
        &[&blob_name, "acme/tiny model.gguf", "is damaged", &msha],
    );

    // The wrong hash given.
    let wrong = "ab".repeat(32);
    env.refuse_entries(
        "wrong hash",
        &good,
        &wrong,
        &[&wrong, &sha, "not the bundle whose hash you were given"],
    );

    // llmgw's release signed by a key the store does not trust.
    let other = Key::new();
    let bad = good_kit(&other);
    env.refuse_entries(
        "other key",
        &bad.entries(),
        &bad.sha256(),
        &[
            &format!("signed by key {}", other.id),
            "not trusted here",
            &env.key.id,
        ],
    );

    // An unsigned llmgw release.
    let mut unsigned = good_kit(&env.key);
    unsigned.manifest.releases[0].signature = None;
    env.refuse_entries(
        "unsigned",
        &unsigned.entries(),
        &unsigned.sha256(),
        &["acme/llmgw v1.0.0 carries no signature"],
    );

    // SHA256SUMS, correctly signed, that disagrees with the manifest.
    let mut liar = Kit::new();
    let sums = sums_text(&[("llmgw-linux-amd64.tar.gz", b"something else")]);
    let sig = env.key.sign(sums.as_bytes());
    liar.llmgw_release_with(
        &[("llmgw-linux-amd64.tar.gz", b"llmgw for amd64")],
        sums.as_bytes(),
        &sig,
        &env.key.id,
    );
    env.refuse_entries(
        "sums disagree",
        &liar.entries(),
        &liar.sha256(),
        &[
            "asset llmgw-linux-amd64.tar.gz: the signed SHA256SUMS says sha256",
            &llmgw_shared::sha256_hex(b"llmgw for amd64"),
        ],
    );

    // A `../` entry, an absolute path.
    let mut e = good.clone();
    e.insert(2, Entry::file("../escape", b"x"));
    env.refuse_entries("dotdot", &e, &sha, &["\"../escape\"", "'..'"]);
    let mut e = good.clone();
    e.insert(2, Entry::file("blobs/sha256/../../../etc/cron.d/x", b"x"));
    env.refuse_entries("dotdot inside", &e, &sha, &["'..'"]);
    let mut e = good.clone();
    e.insert(2, Entry::file("/etc/cron.d/evil", b"x"));
    env.refuse_entries("absolute", &e, &sha, &["\"/etc/cron.d/evil\"", "absolute"]);

    // A symlink and a hard link in place of a blob; a device.
    let mut e = good.clone();
    e[mi] = Entry::Symlink(blob_name.clone(), "/etc/passwd".into());
    env.refuse_entries(
        "symlink",
        &e,
        &sha,
        &[&blob_name, "symbolic link to \"/etc/passwd\""],
    );
    let mut e = good.clone();
    e[mi] = Entry::HardLink(blob_name.clone(), "manifest.json".into());
    env.refuse_entries(
        "hard link",
        &e,
        &sha,
        &[&blob_name, "hard link to \"manifest.json\""],
    );
    let mut e = good.clone();
    e.insert(2, Entry::CharDevice("blobs/sha256/null".into()));
    env.refuse_entries("device", &e, &sha, &["character device"]);

    // A truncated tar: inside a blob, and at an entry boundary.
    let bytes = tar_bytes(&good);
    let p = env.path("truncated.tar");
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    env.refuse("truncated inside", &p, &sha, &["truncated"]);
    let whole: usize = good
        .iter()
        .map(|e| match e {
            Entry::File { data, .. } => 512 + data.len().div_ceil(512) * 512,
            _ => 512,
        })
        .sum();
    std::fs::write(&p, &bytes[..whole]).unwrap();
    env.refuse(
        "truncated at boundary",
        &p,
        &sha,
        &["truncated", "end-of-archive marker"],
    );
    let z = env.path("truncated.tar.zst");
    let comp = zstd::encode_all(&bytes[..], 3).unwrap();
    std::fs::write(&z, &comp[..comp.len() * 2 / 3]).unwrap();
    env.refuse("truncated zstd", &z, &sha, &["import of"]);

    // A duplicate entry.
    let mut e = good.clone();
    e.push(good[mi].clone());
    env.refuse_entries(
        "duplicate",
        &e,
        &sha,
        &[&format!("{blob_name} appears twice")],
    );
    let mut e = good.clone();
    e.push(good[0].clone());
    env.refuse_entries(
        "duplicate manifest",
        &e,
        &sha,
        &["manifest.json appears twice"],
    );

    // Extra files: an unknown name, a blob the manifest does not name, a
    // stray directory.
    let mut e = good.clone();
    e.push(Entry::file("README.txt", b"hello"));
    env.refuse_entries(
        "unknown file",
        &e,
        &sha,
        &["README.txt is not part of the bundle format"],
    );
    let extra = llmgw_shared::sha256_hex(b"extra");
    let mut e = good.clone();
    e.push(Entry::file(&format!("blobs/sha256/{extra}"), b"extra"));
    env.refuse_entries("unlisted blob", &e, &sha, &[&extra, "does not name"]);
    let mut e = good.clone();
    e.insert(1, Entry::Dir("blobs/sha512".into()));
    env.refuse_entries("stray dir", &e, &sha, &["blobs/sha512 is a directory"]);

    // A manifest that lies about a size (consistently, so it parses).
    let mut liar = good_kit(&env.key);
    let f = liar.manifest.repos[0]
        .files
        .iter_mut()
        .find(|f| f.path == "model.gguf")
        .unwrap();
    f.size += 1;
    env.refuse_entries(
        "lying size",
        &liar.entries(),
        &liar.sha256(),
        &[
            &blob_name,
            "is 300000 bytes, but the manifest declares 300001 bytes",
        ],
    );
    // A tar header that claims more than the manifest declares.
    let mut e = good.clone();
    if let Entry::File { size, data, .. } = &mut e[mi] {
        *size = Some(data.len() as u64 * 2);
        data.resize(data.len() * 2, 0);
    }
    env.refuse_entries(
        "oversize entry",
        &e,
        &sha,
        &["is 600000 bytes, but the manifest declares 300000"],
    );

    // The manifest not first; a blob missing from the bundle and the store.
    let mut e = good.clone();
    e.swap(0, 1);
    env.refuse_entries(
        "manifest not first",
        &e,
        &sha,
        &["first entry of the bundle must be manifest.json"],
    );
    let mut e = good.clone();
    e.remove(mi);
    env.refuse_entries(
        "missing blob",
        &e,
        &sha,
        &["lacks 1 blob", &msha, "acme/tiny model.gguf"],
    );
    let mut nosig = good.clone();
    let sig_sha = kit.manifest.releases[0]
        .assets
        .iter()
        .find(|a| a.name == "SHA256SUMS.minisig")
        .unwrap()
        .sha256
        .clone();
    nosig.remove(blob_entry_index(&nosig, &sig_sha));
    env.refuse_entries(
        "missing signature",
        &nosig,
        &sha,
        &["lacks 1 blob", "SHA256SUMS.minisig"],
    );

    // Directory bundles get the same checks.
    let d = env.path("linked-dir");
    let mut e = good.clone();
    e[mi] = Entry::Symlink(blob_name.clone(), "/etc/passwd".into());
    write_dir(&d, &e);
    env.refuse("dir symlink", &d, &sha, &["symbolic link"]);
    let d = env.path("extra-dir");
    let mut e = good.clone();
    e.push(Entry::file("notes/x.txt", b"x"));
    write_dir(&d, &e);
    env.refuse("dir extra", &d, &sha, &["notes is a directory"]);
}

#[test]
fn no_trusted_key_is_refused_naming_the_signer() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let key = Key::new();
    let kit = good_kit(&key);
    let p = dir.path().join("b.tar");
    write_tar(&p, &kit.entries());
    let o = import_bundle(&p, &kit.sha256(), &store, &[]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains(&format!("signed by key {}", key.id)), "{err}");
    assert!(err.contains("trusted: none"), "{err}");
    assert!(err.contains("llmgw bundle trust add"), "{err}");
    // The store did not exist before this import: it is not left behind.
    assert!(!store.exists(), "{err}");
}

#[test]
fn more_refusals_each_named() {
    let env = Env::new();
    let kit = good_kit(&env.key);
    let sha = kit.sha256();
    let good = kit.entries();

    // A manifest entry claiming more than the limit is refused unread.
    let mut e = good.clone();
    if let Entry::File { size, .. } = &mut e[0] {
        *size = Some(65 << 20);
    }
    let p = env.path("huge-manifest.tar");
    let mut bytes = tar_bytes(&e[..1]);
    bytes.truncate(1024);
    std::fs::write(&p, &bytes).unwrap();
    env.refuse(
        "huge manifest",
        &p,
        &sha,
        &["manifest.json is 68157440 bytes; at most 67108864"],
    );

    // The manifest as a symlink; an empty bundle; a name that is not UTF-8.
    env.refuse_entries(
        "manifest symlink",
        &[Entry::Symlink("manifest.json".into(), "/etc/passwd".into())],
        &sha,
        &["manifest.json is a symbolic link"],
    );
    let p = env.path("empty.tar");
    std::fs::write(&p, [0u8; 1024]).unwrap();
    env.refuse("empty", &p, &sha, &["is empty: expected manifest.json"]);
    let mut raw = tar_bytes(&good);
    let idx = (0..raw.len() - 512)
        .step_by(512)
        .rfind(|&o| raw[o..o + 13] == *b"blobs/sha256/")
        .unwrap();
    raw[idx + 13] = 0xff;
    let mut h = tar::Header::new_old();
    h.as_mut_bytes().copy_from_slice(&raw[idx..idx + 512]);
    h.set_cksum();
    raw[idx..idx + 512].copy_from_slice(h.as_bytes());
    let p = env.path("latin1.tar");
    std::fs::write(&p, &raw).unwrap();
    env.refuse("not utf-8", &p, &sha, &["an entry name is not UTF-8"]);

    // The manifest names the wrong signer (signed by a trusted key).
    let mut k = good_kit(&env.key);
    k.manifest.releases[0].signature.as_mut().unwrap().key_id = "ABCDEF".into();
    env.refuse_entries(
        "claimed key",
        &k.entries(),
        &k.sha256(),
        &[&format!(
            "signed by key {}, but the manifest says key ABCDEF",
            env.key.id
        )],
    );

    // A signed SHA256SUMS that is not a checksum file.
    let assets: &[(&str, &[u8])] = &[("llmgw-linux-amd64.tar.gz", b"x")];
    let sums = b"this is not a checksum file\n";
    let mut k = Kit::new();
    k.llmgw_release_with(assets, sums, &env.key.sign(sums), &env.key.id);
    env.refuse_entries(
        "bad sums",
        &k.entries(),
        &k.sha256(),
        &["SHA256SUMS line 1: expected `<64 hex digits>  <file name>`"],
    );

    // A signature file too big to be one is refused before it is read.
    let big_sums = vec![b'#'; 2 << 20];
    let mut k = Kit::new();
    k.llmgw_release_with(assets, &big_sums, &env.key.sign(&big_sums), &env.key.id);
    env.refuse_entries(
        "huge sums",
        &k.entries(),
        &k.sha256(),
        &["SHA256SUMS of release acme/llmgw v1.0.0 is 2097152 bytes; at most 1048576"],
    );

    // A signature that is not minisign at all.
    let mut k = Kit::new();
    k.llmgw_release_with(
        assets,
        sums,
        b"untrusted comment: x\nnot base64\n",
        &env.key.id,
    );
    env.refuse_entries(
        "garbage signature",
        &k.entries(),
        &k.sha256(),
        &["SHA256SUMS.minisig is not a minisign signature"],
    );
}

#[test]
fn a_busy_store_is_refused() {
    use std::os::unix::io::AsRawFd;
    let env = Env::new();
    let lock = std::fs::File::open(env.store.join("lock")).unwrap();
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
    let kit = good_kit(&env.key);
    let p = env.path("b.tar");
    write_tar(&p, &kit.entries());
    let o = env.import(&p, &kit.sha256());
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("the store is busy"), "{}", stderr(&o));
    let o = run(&["mirror", "gc", "--store", s(&env.store)]);
    assert!(stderr(&o).contains("the store is busy"), "{}", stderr(&o));
    drop(lock);
    assert!(env.import(&p, &kit.sha256()).status.success());
}
