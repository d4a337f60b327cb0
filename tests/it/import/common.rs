//! What every import test starts from: a store that trusts one key and
//! already holds a bundle ([`Env`]), and a bundle like create makes
//! ([`good_kit`]).

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::bundle_kit::*;

/// A store that trusts one key and already holds one small bundle, so
/// "unchanged" is checked against a store with content.
pub struct Env {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub store: PathBuf,
    pub key: Key,
}

impl Env {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let store = root.join("store");
        let key = Key::new();
        let pubf = key.write_pub(&root);
        let o = run(&["bundle", "trust", "add", s(&pubf), "--store", s(&store)]);
        assert!(o.status.success(), "{}", stderr(&o));
        let env = Self {
            _dir: dir,
            root,
            store,
            key,
        };
        let mut first = Kit::new();
        first.model_file("acme/first", "weights.bin", b"the first bundle's only file");
        let p = env.path("first.tar");
        write_tar(&p, &first.entries());
        let o = env.import(&p, &first.sha256());
        assert!(o.status.success(), "{}", stderr(&o));
        env
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    pub fn import(&self, bundle: &Path, sha: &str) -> Output {
        import_bundle(bundle, sha, &self.store, &[])
    }

    /// Imports `entries` as a tar and checks the refusal: exit code 1,
    /// every `expect` in the message, and the store exactly as before with
    /// no staging left behind.
    pub fn refuse_entries(&self, case: &str, entries: &[Entry], sha: &str, expect: &[&str]) {
        let p = self.path(&format!("{}.tar", case.replace(' ', "-")));
        write_tar(&p, entries);
        self.refuse(case, &p, sha, expect);
    }

    pub fn refuse(&self, case: &str, bundle: &Path, sha: &str, expect: &[&str]) {
        assert_refused(case, &self.store, expect, || self.import(bundle, sha));
    }
}

/// A bundle like create makes: llmgw's signed release and a model.
pub fn good_kit(key: &Key) -> Kit {
    let mut k = Kit::new();
    k.llmgw_release(
        key,
        &[
            ("llmgw-linux-amd64.tar.gz", b"llmgw for amd64"),
            ("llmgw-linux-arm64.tar.gz", b"llmgw for arm64"),
        ],
    );
    let weights: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    k.model_file("acme/tiny", "model.gguf", &weights);
    k.model_file("acme/tiny", "config.json", b"{\"hidden\": 8}");
    k
}

pub fn blob_entry_index(entries: &[Entry], sha: &str) -> usize {
    entries
        .iter()
        .position(|e| matches!(e, Entry::File { name, .. } if name.ends_with(sha)))
        .unwrap()
}

pub fn model_sha(k: &Kit) -> String {
    k.manifest.repos[0]
        .files
        .iter()
        .find(|f| f.path == "model.gguf")
        .unwrap()
        .sha256
        .to_string()
}
