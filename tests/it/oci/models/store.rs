//! The store the model OCI tests serve: `acme/tiny` at one commit (`main`)
//! with weights, configs, a README, a nested file and one whose tar path
//! is past ustar's 100 bytes (a PAX header), imported from a bundle the
//! kit writes; and what its tar layers must be, assembled with the `tar`
//! crate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::bundle_kit::{Kit, Server, import_bundle, stderr, stdout, write_dir};

pub const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

/// The repository's files, by path.
pub fn files() -> BTreeMap<String, Vec<u8>> {
    let mut f = BTreeMap::new();
    f.insert(
        "config.json".to_string(),
        br#"{"architectures":["TinyForCausalLM"],"model_type":"tiny"}"#.to_vec(),
    );
    // Not a multiple of 512: the layer has padding.
    let weights: Vec<u8> = (0..70_001u32).map(|i| (i * 7 % 251) as u8).collect();
    f.insert("model.safetensors".to_string(), weights);
    f.insert("README.md".to_string(), b"# tiny\n".to_vec());
    f.insert(
        "tokenizer/tokenizer.json".to_string(),
        br#"{"model":{"type":"BPE"}}"#.to_vec(),
    );
    let long = format!("shards/{}/part-00001.bin", "d".repeat(110));
    f.insert(long, vec![3u8; 512]);
    f
}

/// A store holding `acme/tiny` and a server on it (its log in `log`).
pub struct Served {
    pub dir: tempfile::TempDir,
    pub store: PathBuf,
    pub server: Server,
}

impl Served {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut kit = Kit::new();
        for (path, body) in files() {
            kit.model_file("acme/tiny", &path, &body);
        }
        let bundle = dir.path().join("bundle");
        write_dir(&bundle, &kit.entries());
        let store = dir.path().join("store");
        let o = import_bundle(&bundle, &kit.sha256(), &store, &[]);
        assert!(o.status.success(), "import: {}{}", stdout(&o), stderr(&o));
        let server = start(&store, &dir.path().join("serve-1.log"));
        Served { dir, store, server }
    }

    pub fn host(&self) -> &str {
        self.server.url.trim_start_matches("http://")
    }

    pub fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }
}

/// Starts a server on `store` and waits until the image is served (its
/// tar layers hashed).
pub fn start(store: &Path, log: &Path) -> Server {
    let server = Server::start_logged(store, log);
    server.wait_for("/v2/models/acme/tiny/manifests/main", 200);
    server
}

/// The tar layer of one file as the `tar` crate writes it: a ustar header
/// (mode 0444, uid/gid 0, mtime 0), the bytes, padding, two zero blocks.
/// For paths that fit ustar's name field.
pub fn assembled_layer(path: &str, body: &[u8]) -> Vec<u8> {
    let mut h = tar::Header::new_ustar();
    h.set_path(path).unwrap();
    h.set_size(body.len() as u64);
    h.set_mode(0o444);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(0);
    h.set_entry_type(tar::EntryType::Regular);
    h.set_cksum();
    let mut out = h.as_bytes().to_vec();
    out.extend_from_slice(body);
    out.resize(out.len().div_ceil(512) * 512 + 1024, 0);
    out
}
