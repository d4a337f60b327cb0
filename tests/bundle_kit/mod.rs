//! Builds bundles for the import tests, good and deliberately damaged:
//! a manifest (the real `llmgw_shared` types, canonical JSON) plus blobs,
//! written as a directory, a tar or a tar.zst — with raw tar headers where
//! a test needs what no honest writer makes (`../` names, absolute paths,
//! links, devices, duplicates, lying sizes).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use llmgw_shared::manifest::{
    Asset, DigestSource, HfFile, HfRepo, Manifest, PublisherDigest, Release, ReleaseSignature,
    RepoKind,
};
use llmgw_shared::sha256_hex;
use llmgw_shared::signing::PublicKey;

mod server;
#[allow(unused_imports)]
pub use server::{Server, serve_args, spawn_serve};

/// A minisign key pair made with the Rust crate, and its id as the CLI
/// prints it.
pub struct Key {
    pub kp: minisign::KeyPair,
    pub id: String,
    pub pub_text: String,
}

impl Key {
    pub fn new() -> Self {
        let kp = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
        let pub_text = kp.pk.to_box().unwrap().into_string();
        let id = PublicKey::parse("k", &pub_text).unwrap().key_id();
        Self { kp, id, pub_text }
    }

    /// A prehashed signature of `data` for the kit's llmgw release, as
    /// `minisign -S -t "llmgw v1.0.0"` writes it.
    pub fn sign(&self, data: &[u8]) -> Vec<u8> {
        self.sign_with_comment(data, &format!("llmgw {LLMGW_TAG}"))
    }

    /// A prehashed signature of `data` with this trusted comment.
    pub fn sign_with_comment(&self, data: &[u8], comment: &str) -> Vec<u8> {
        minisign::sign(
            Some(&self.kp.pk),
            &self.kp.sk,
            Cursor::new(data),
            Some(comment),
            None,
        )
        .unwrap()
        .to_string()
        .into_bytes()
    }

    pub fn write_pub(&self, dir: &Path) -> PathBuf {
        let p = dir.join(format!("{}.pub", self.id));
        std::fs::write(&p, &self.pub_text).unwrap();
        p
    }
}

/// The tag of the kit's llmgw release (`acme/llmgw`).
pub const LLMGW_TAG: &str = "v1.0.0";

/// A bundle being put together.
#[derive(Clone)]
pub struct Kit {
    pub manifest: Manifest,
    pub blobs: BTreeMap<String, Vec<u8>>,
}

fn digest(source: DigestSource, value: &str) -> Vec<PublisherDigest> {
    vec![PublisherDigest {
        source,
        value: value.to_string(),
    }]
}

impl Kit {
    pub fn new() -> Self {
        Self {
            manifest: Manifest::new(vec!["amd64".into()], 0),
            blobs: BTreeMap::new(),
        }
    }

    /// Adds an LFS file of a model repo.
    pub fn model_file(&mut self, repo: &str, path: &str, body: &[u8]) -> String {
        let sha = sha256_hex(body);
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let file = HfFile::describing(path, body, true);
        match self.manifest.repos.iter_mut().find(|r| r.id == repo) {
            Some(r) => r.files.push(file),
            None => self.manifest.repos.push(HfRepo {
                kind: RepoKind::Model,
                id: repo.parse().unwrap(),
                revision: "main".into(),
                ref_kind: None,
                commit: commit.into(),
                patterns: vec![],
                files: vec![file],
            }),
        }
        self.blobs.insert(sha.clone(), body.to_vec());
        sha
    }

    /// Adds llmgw's release: the assets, a SHA256SUMS listing them, and its
    /// signature by `key` (or the given signature bytes and key id).
    pub fn llmgw_release(&mut self, key: &Key, assets: &[(&str, &[u8])]) {
        let sums = sums_text(assets);
        let sig = key.sign(sums.as_bytes());
        self.llmgw_release_with(assets, sums.as_bytes(), &sig, &key.id);
    }

    pub fn llmgw_release_with(
        &mut self,
        assets: &[(&str, &[u8])],
        sums: &[u8],
        minisig: &[u8],
        key_id: &str,
    ) {
        let mut list = Vec::new();
        let mut all: Vec<(&str, &[u8])> = assets.to_vec();
        all.push(("SHA256SUMS", sums));
        all.push(("SHA256SUMS.minisig", minisig));
        for (name, body) in all {
            let sha = sha256_hex(body);
            list.push(Asset {
                name: name.into(),
                size: body.len() as u64,
                sha256: sha.parse().unwrap(),
                publisher_digests: digest(DigestSource::GithubAssetDigest, &sha),
                content_type: None,
            });
            self.blobs.insert(sha, body.to_vec());
        }
        self.manifest.releases.push(Release {
            repo: "acme/llmgw".parse().unwrap(),
            tag: LLMGW_TAG.into(),
            engine: "llmgw".into(),
            version: "1.0.0".into(),
            builds: vec![],
            assets: list,
            signature: Some(ReleaseSignature {
                sums: "SHA256SUMS".into(),
                minisig: "SHA256SUMS.minisig".into(),
                key_id: key_id.into(),
            }),
        });
    }

    pub fn manifest_bytes(&self) -> Vec<u8> {
        self.manifest.to_canonical_json()
    }

    pub fn sha256(&self) -> String {
        sha256_hex(&self.manifest_bytes())
    }

    /// The entries an honest writer would make: manifest first, then each
    /// blob once, sorted by hash.
    pub fn entries(&self) -> Vec<Entry> {
        let mut v = vec![Entry::file("manifest.json", &self.manifest_bytes())];
        for (sha, body) in &self.blobs {
            v.push(Entry::file(&format!("blobs/sha256/{sha}"), body));
        }
        v
    }
}

/// `sha256sum` output for these files.
pub fn sums_text(assets: &[(&str, &[u8])]) -> String {
    assets
        .iter()
        .map(|(n, b)| format!("{}  {n}\n", sha256_hex(b)))
        .collect()
}

/// One tar entry, honest or not.
#[derive(Clone, Debug)]
pub enum Entry {
    File {
        name: String,
        data: Vec<u8>,
        /// The size the header claims, when it should lie.
        size: Option<u64>,
    },
    Dir(String),
    Symlink(String, String),
    HardLink(String, String),
    CharDevice(String),
}

impl Entry {
    pub fn file(name: &str, data: &[u8]) -> Self {
        Entry::File {
            name: name.into(),
            data: data.to_vec(),
            size: None,
        }
    }
}

/// Writes the tar with raw headers: names are copied byte for byte.
pub fn tar_bytes(entries: &[Entry]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        let (name, link, data): (&str, Option<&str>, &[u8]) = match e {
            Entry::File { name, data, size } => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_size(size.unwrap_or(data.len() as u64));
                (name, None, data)
            }
            Entry::Dir(n) => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_size(0);
                (n, None, &[])
            }
            Entry::Symlink(n, t) => {
                h.set_entry_type(tar::EntryType::Symlink);
                h.set_size(0);
                (n, Some(t), &[])
            }
            Entry::HardLink(n, t) => {
                h.set_entry_type(tar::EntryType::Link);
                h.set_size(0);
                (n, Some(t), &[])
            }
            Entry::CharDevice(n) => {
                h.set_entry_type(tar::EntryType::Char);
                h.set_size(0);
                (n, None, &[])
            }
        };
        let old = h.as_old_mut();
        assert!(name.len() < 100, "test names fit the old header");
        old.name = [0; 100];
        old.name[..name.len()].copy_from_slice(name.as_bytes());
        if let Some(t) = link {
            old.linkname = [0; 100];
            old.linkname[..t.len()].copy_from_slice(t.as_bytes());
        }
        h.set_cksum();
        b.append(&h, data).unwrap();
    }
    b.into_inner().unwrap()
}

pub fn write_tar(path: &Path, entries: &[Entry]) {
    std::fs::write(path, tar_bytes(entries)).unwrap();
}

pub fn write_tar_zst(path: &Path, entries: &[Entry]) {
    std::fs::write(path, zstd::encode_all(&tar_bytes(entries)[..], 3).unwrap()).unwrap();
}

/// Writes a directory bundle (files and dirs only; links made as asked).
pub fn write_dir(root: &Path, entries: &[Entry]) {
    std::fs::create_dir_all(root).unwrap();
    for e in entries {
        match e {
            Entry::File { name, data, .. } => {
                let p = root.join(name);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::File::create(&p).unwrap().write_all(data).unwrap();
            }
            Entry::Dir(n) => std::fs::create_dir_all(root.join(n)).unwrap(),
            Entry::Symlink(n, t) => {
                let p = root.join(n);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::os::unix::fs::symlink(t, p).unwrap();
            }
            Entry::HardLink(n, t) => std::fs::hard_link(root.join(t), root.join(n)).unwrap(),
            Entry::CharDevice(_) => panic!("no devices in directory bundles"),
        }
    }
}

/// Every file and folder under `root` with its kind and content hash: two
/// equal snapshots mean nothing was added, removed or changed.
pub fn snapshot(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if !root.exists() {
        return out;
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                out.insert(rel, "dir".into());
                stack.push(p);
            } else if m.is_file() {
                out.insert(rel, sha256_hex(&std::fs::read(&p).unwrap()));
            } else {
                out.insert(rel, "other".into());
            }
        }
    }
    out
}

/// Runs an import that must be refused and checks the refusal: exit code
/// 1, every `expect` in the message, `store` exactly as before and no
/// staging left in its `tmp/`. Returns the message.
pub fn assert_refused(
    case: &str,
    store: &Path,
    expect: &[&str],
    import: impl FnOnce() -> Output,
) -> String {
    let before = snapshot(store);
    let o = import();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{case}: {err}\n{}", stdout(&o));
    for e in expect {
        assert!(err.contains(e), "{case}: expected {e:?} in: {err}");
    }
    assert_eq!(before, snapshot(store), "{case}: the store changed");
    let tmp: Vec<_> = std::fs::read_dir(store.join("tmp")).unwrap().collect();
    assert!(tmp.is_empty(), "{case}: staging left behind: {tmp:?}");
    err
}

/// The pinned uv (`.venv-py` from scripts/setup.sh, or `LLMGW_VENV_PY`).
pub fn uv_bin() -> PathBuf {
    let dir = std::env::var_os("LLMGW_VENV_PY")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-py"));
    let p = dir.join("bin/uv");
    assert!(
        p.exists(),
        "{} is missing: run scripts/setup.sh",
        p.display()
    );
    p
}

/// The `llmgw` binary under test.
pub fn llmgw() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_llmgw"));
    c.env_remove("LLMGW_STORE");
    c
}

/// Runs `llmgw` with these arguments.
pub fn run(args: &[&str]) -> Output {
    llmgw().args(args).output().unwrap()
}

/// `llmgw bundle import BUNDLE --sha256 SHA256 --store STORE`, then `extra`.
pub fn import_bundle(bundle: &Path, sha256: &str, store: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "bundle",
        "import",
        bundle.to_str().unwrap(),
        "--sha256",
        sha256,
        "--store",
        store.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
