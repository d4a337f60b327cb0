//! What import refuses, each refusal named, with the store left exactly as
//! it was. Each kind of damage is a test of its own (`refused!`), on a
//! store of its own: a failing case names itself and hides no other.

use super::common::*;
use crate::bundle_kit::*;

/// A store that trusts one key, and the good bundle every case damages.
struct Good {
    env: Env,
    kit: Kit,
    /// The good bundle's sha256.
    sha: String,
    /// Its entries as an honest writer makes them.
    good: Vec<Entry>,
    /// The sha256 of `acme/tiny model.gguf`, and its entry's index.
    msha: String,
    mi: usize,
    /// `blobs/sha256/{msha}`.
    blob_name: String,
}

impl Good {
    fn new() -> Self {
        let env = Env::new();
        let kit = good_kit(&env.key);
        let good = kit.entries();
        let msha = model_sha(&kit);
        Self {
            sha: kit.sha256(),
            mi: blob_entry_index(&good, &msha),
            blob_name: format!("blobs/sha256/{msha}"),
            env,
            kit,
            good,
            msha,
        }
    }

    /// The good entries with `change` made to them.
    fn with(&self, change: impl FnOnce(&mut Vec<Entry>)) -> Vec<Entry> {
        let mut e = self.good.clone();
        change(&mut e);
        e
    }
}

/// One `#[test]` per refusal: `refused!(name, |g| body)` runs `body` on a
/// fresh [`Good`].
macro_rules! refused {
    ($name:ident, |$g:ident| $body:block) => {
        #[test]
        fn $name() {
            let $g = Good::new();
            $body
        }
    };
}

refused!(a_flipped_byte_in_a_blob, |g| {
    let e = g.with(|e| {
        if let Entry::File { data, .. } = &mut e[g.mi] {
            data[1000] ^= 1;
        }
    });
    let expect = [
        g.blob_name.as_str(),
        "acme/tiny model.gguf",
        "is damaged",
        &g.msha,
    ];
    g.env.refuse_entries("flipped byte", &e, &g.sha, &expect);
});

refused!(the_wrong_hash_given, |g| {
    let wrong = "ab".repeat(32);
    let expect = [
        wrong.as_str(),
        &g.sha,
        "not the bundle whose hash you were given",
    ];
    g.env.refuse_entries("wrong hash", &g.good, &wrong, &expect);
});

refused!(a_release_signed_by_a_key_not_trusted, |g| {
    let other = Key::new();
    let bad = good_kit(&other);
    let signed_by = format!("signed by key {}", other.id);
    let expect = [signed_by.as_str(), "not trusted here", &g.env.key.id];
    g.env
        .refuse_entries("other key", &bad.entries(), &bad.sha256(), &expect);
});

refused!(an_unsigned_llmgw_release, |g| {
    let mut unsigned = good_kit(&g.env.key);
    unsigned.manifest.releases[0].signature = None;
    let expect = ["acme/llmgw v1.0.0 carries no signature"];
    g.env
        .refuse_entries("unsigned", &unsigned.entries(), &unsigned.sha256(), &expect);
});

refused!(signed_sums_that_disagree_with_the_manifest, |g| {
    let mut liar = Kit::new();
    let sums = sums_text(&[("llmgw-linux-amd64.tar.gz", b"something else")]);
    let sig = g.env.key.sign(sums.as_bytes());
    liar.llmgw_release_with(
        &[("llmgw-linux-amd64.tar.gz", b"llmgw for amd64")],
        sums.as_bytes(),
        &sig,
        &g.env.key.id,
    );
    let actual = llmgw_shared::sha256_hex(b"llmgw for amd64");
    let expect = [
        "asset llmgw-linux-amd64.tar.gz: the signed SHA256SUMS says sha256",
        &actual,
    ];
    g.env
        .refuse_entries("sums disagree", &liar.entries(), &liar.sha256(), &expect);
});

refused!(a_dotdot_entry, |g| {
    let e = g.with(|e| e.insert(2, Entry::file("../escape", b"x")));
    g.env
        .refuse_entries("dotdot", &e, &g.sha, &["\"../escape\"", "'..'"]);
});

refused!(a_dotdot_inside_a_blob_name, |g| {
    let e = g.with(|e| e.insert(2, Entry::file("blobs/sha256/../../../etc/cron.d/x", b"x")));
    g.env.refuse_entries("dotdot inside", &e, &g.sha, &["'..'"]);
});

refused!(an_absolute_path, |g| {
    let e = g.with(|e| e.insert(2, Entry::file("/etc/cron.d/evil", b"x")));
    let expect = ["\"/etc/cron.d/evil\"", "absolute"];
    g.env.refuse_entries("absolute", &e, &g.sha, &expect);
});

refused!(a_symlink_in_place_of_a_blob, |g| {
    let e = g.with(|e| e[g.mi] = Entry::Symlink(g.blob_name.clone(), "/etc/passwd".into()));
    let expect = [g.blob_name.as_str(), "symbolic link to \"/etc/passwd\""];
    g.env.refuse_entries("symlink", &e, &g.sha, &expect);
});

refused!(a_hard_link_in_place_of_a_blob, |g| {
    let e = g.with(|e| e[g.mi] = Entry::HardLink(g.blob_name.clone(), "manifest.json".into()));
    let expect = [g.blob_name.as_str(), "hard link to \"manifest.json\""];
    g.env.refuse_entries("hard link", &e, &g.sha, &expect);
});

refused!(a_device, |g| {
    let e = g.with(|e| e.insert(2, Entry::CharDevice("blobs/sha256/null".into())));
    g.env
        .refuse_entries("device", &e, &g.sha, &["character device"]);
});

refused!(a_tar_truncated_inside_a_blob, |g| {
    let bytes = tar_bytes(&g.good);
    let p = g.env.path("truncated.tar");
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    g.env.refuse("truncated inside", &p, &g.sha, &["truncated"]);
});

refused!(a_tar_truncated_at_an_entry_boundary, |g| {
    let bytes = tar_bytes(&g.good);
    let whole: usize = g
        .good
        .iter()
        .map(|e| match e {
            Entry::File { data, .. } => 512 + data.len().div_ceil(512) * 512,
            _ => 512,
        })
        .sum();
    let p = g.env.path("truncated.tar");
    std::fs::write(&p, &bytes[..whole]).unwrap();
    let expect = ["truncated", "end-of-archive marker"];
    g.env.refuse("truncated at boundary", &p, &g.sha, &expect);
});

refused!(a_truncated_zstd_stream, |g| {
    let z = g.env.path("truncated.tar.zst");
    let comp = zstd::encode_all(&tar_bytes(&g.good)[..], 3).unwrap();
    std::fs::write(&z, &comp[..comp.len() * 2 / 3]).unwrap();
    g.env.refuse("truncated zstd", &z, &g.sha, &["import of"]);
});

refused!(a_duplicate_blob_entry, |g| {
    let e = g.with(|e| e.push(g.good[g.mi].clone()));
    let twice = format!("{} appears twice", g.blob_name);
    g.env.refuse_entries("duplicate", &e, &g.sha, &[&twice]);
});

refused!(a_duplicate_manifest, |g| {
    let e = g.with(|e| e.push(g.good[0].clone()));
    let expect = ["manifest.json appears twice"];
    g.env
        .refuse_entries("duplicate manifest", &e, &g.sha, &expect);
});

refused!(an_unknown_file, |g| {
    let e = g.with(|e| e.push(Entry::file("README.txt", b"hello")));
    let expect = ["README.txt is not part of the bundle format"];
    g.env.refuse_entries("unknown file", &e, &g.sha, &expect);
});

refused!(a_blob_the_manifest_does_not_name, |g| {
    let extra = llmgw_shared::sha256_hex(b"extra");
    let e = g.with(|e| e.push(Entry::file(&format!("blobs/sha256/{extra}"), b"extra")));
    g.env
        .refuse_entries("unlisted blob", &e, &g.sha, &[&extra, "does not name"]);
});

refused!(a_stray_directory, |g| {
    let e = g.with(|e| e.insert(1, Entry::Dir("blobs/sha512".into())));
    let expect = ["blobs/sha512 is a directory"];
    g.env.refuse_entries("stray dir", &e, &g.sha, &expect);
});

refused!(a_manifest_that_lies_about_a_size, |g| {
    // Consistently, so it parses.
    let mut liar = good_kit(&g.env.key);
    let f = liar.manifest.repos[0]
        .files
        .iter_mut()
        .find(|f| f.path == "model.gguf")
        .unwrap();
    f.size += 1;
    let expect = [
        g.blob_name.as_str(),
        "is 300000 bytes, but the manifest declares 300001 bytes",
    ];
    g.env
        .refuse_entries("lying size", &liar.entries(), &liar.sha256(), &expect);
});

refused!(a_tar_header_claiming_more_than_the_manifest, |g| {
    let e = g.with(|e| {
        if let Entry::File { size, data, .. } = &mut e[g.mi] {
            *size = Some(data.len() as u64 * 2);
            data.resize(data.len() * 2, 0);
        }
    });
    let expect = ["is 600000 bytes, but the manifest declares 300000"];
    g.env.refuse_entries("oversize entry", &e, &g.sha, &expect);
});

refused!(the_manifest_not_first, |g| {
    let e = g.with(|e| e.swap(0, 1));
    let expect = ["first entry of the bundle must be manifest.json"];
    g.env
        .refuse_entries("manifest not first", &e, &g.sha, &expect);
});

refused!(a_blob_missing_from_the_bundle_and_the_store, |g| {
    let e = g.with(|e| {
        e.remove(g.mi);
    });
    let expect = ["lacks 1 blob", &g.msha, "acme/tiny model.gguf"];
    g.env.refuse_entries("missing blob", &e, &g.sha, &expect);
});

refused!(a_missing_signature, |g| {
    let sig_sha = g.kit.manifest.releases[0]
        .assets
        .iter()
        .find(|a| a.name == "SHA256SUMS.minisig")
        .unwrap()
        .sha256
        .to_string();
    let e = g.with(|e| {
        let i = blob_entry_index(e, &sig_sha);
        e.remove(i);
    });
    let expect = ["lacks 1 blob", "SHA256SUMS.minisig"];
    g.env
        .refuse_entries("missing signature", &e, &g.sha, &expect);
});

refused!(a_symlink_in_a_directory_bundle, |g| {
    let d = g.env.path("linked-dir");
    write_dir(
        &d,
        &g.with(|e| e[g.mi] = Entry::Symlink(g.blob_name.clone(), "/etc/passwd".into())),
    );
    g.env.refuse("dir symlink", &d, &g.sha, &["symbolic link"]);
});

refused!(an_extra_folder_in_a_directory_bundle, |g| {
    let d = g.env.path("extra-dir");
    write_dir(&d, &g.with(|e| e.push(Entry::file("notes/x.txt", b"x"))));
    g.env
        .refuse("dir extra", &d, &g.sha, &["notes is a directory"]);
});

refused!(
    a_manifest_entry_claiming_more_than_the_limit_is_not_read,
    |g| {
        let e = g.with(|e| {
            if let Entry::File { size, .. } = &mut e[0] {
                *size = Some(65 << 20);
            }
        });
        let p = g.env.path("huge-manifest.tar");
        let mut bytes = tar_bytes(&e[..1]);
        bytes.truncate(1024);
        std::fs::write(&p, &bytes).unwrap();
        let expect = ["manifest.json is 68157440 bytes; at most 67108864"];
        g.env.refuse("huge manifest", &p, &g.sha, &expect);
    }
);

refused!(the_manifest_as_a_symlink, |g| {
    g.env.refuse_entries(
        "manifest symlink",
        &[Entry::Symlink("manifest.json".into(), "/etc/passwd".into())],
        &g.sha,
        &["manifest.json is a symbolic link"],
    );
});

refused!(an_empty_bundle, |g| {
    let p = g.env.path("empty.tar");
    std::fs::write(&p, [0u8; 1024]).unwrap();
    g.env
        .refuse("empty", &p, &g.sha, &["is empty: expected manifest.json"]);
});

refused!(a_name_that_is_not_utf8, |g| {
    let mut raw = tar_bytes(&g.good);
    let idx = (0..raw.len() - 512)
        .step_by(512)
        .rfind(|&o| raw[o..o + 13] == *b"blobs/sha256/")
        .unwrap();
    raw[idx + 13] = 0xff;
    let mut h = tar::Header::new_old();
    h.as_mut_bytes().copy_from_slice(&raw[idx..idx + 512]);
    h.set_cksum();
    raw[idx..idx + 512].copy_from_slice(h.as_bytes());
    let p = g.env.path("latin1.tar");
    std::fs::write(&p, &raw).unwrap();
    g.env
        .refuse("not utf-8", &p, &g.sha, &["an entry name is not UTF-8"]);
});

refused!(a_manifest_naming_the_wrong_signer, |g| {
    // Signed by a trusted key, but not the one the manifest names.
    let mut k = good_kit(&g.env.key);
    k.manifest.releases[0].signature.as_mut().unwrap().key_id = "ABCDEF".into();
    let expect = format!(
        "signed by key {}, but the manifest says key ABCDEF",
        g.env.key.id
    );
    g.env
        .refuse_entries("claimed key", &k.entries(), &k.sha256(), &[&expect]);
});

/// The one asset of the releases whose SHA256SUMS is not one.
const ASSETS: &[(&str, &[u8])] = &[("llmgw-linux-amd64.tar.gz", b"x")];
const NOT_SUMS: &[u8] = b"this is not a checksum file\n";

refused!(a_signed_sums_that_is_not_a_checksum_file, |g| {
    let mut k = Kit::new();
    k.llmgw_release_with(ASSETS, NOT_SUMS, &g.env.key.sign(NOT_SUMS), &g.env.key.id);
    let expect = ["SHA256SUMS line 1: expected `<64 hex digits>  <file name>`"];
    g.env
        .refuse_entries("bad sums", &k.entries(), &k.sha256(), &expect);
});

refused!(a_sums_file_too_big_is_not_read, |g| {
    let big_sums = vec![b'#'; 2 << 20];
    let mut k = Kit::new();
    k.llmgw_release_with(ASSETS, &big_sums, &g.env.key.sign(&big_sums), &g.env.key.id);
    let expect = ["SHA256SUMS of release acme/llmgw v1.0.0 is 2097152 bytes; at most 1048576"];
    g.env
        .refuse_entries("huge sums", &k.entries(), &k.sha256(), &expect);
});

refused!(a_signature_that_is_not_minisign, |g| {
    let mut k = Kit::new();
    let garbage = b"untrusted comment: x\nnot base64\n";
    k.llmgw_release_with(ASSETS, NOT_SUMS, garbage, &g.env.key.id);
    let expect = ["SHA256SUMS.minisig is not a minisign signature"];
    g.env
        .refuse_entries("garbage signature", &k.entries(), &k.sha256(), &expect);
});

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
