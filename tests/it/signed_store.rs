//! A store that trusts one key and holds a signed llmgw release, and a
//! running `llmgw mirror serve` over it, for the attacks to aim at.

use std::path::{Path, PathBuf};
use std::process::Output;

pub use crate::bundle_kit::*;

/// The signed release every store here holds (`acme/llmgw v1.0.0`).
pub const SIGNED_ASSET: &str = "llmgw-linux-amd64.tar.gz";
pub const SIGNED_BYTES: &[u8] = b"the real llmgw for amd64";

pub struct Env {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub store: PathBuf,
    pub key: Key,
    /// The bundle holding the signed release.
    pub signed_id: String,
}

impl Env {
    /// A store trusting `key` and holding its signed llmgw release.
    pub fn new() -> Self {
        let mut env = Self::empty();
        let mut kit = Kit::new();
        kit.llmgw_release(
            &env.key,
            &[
                (SIGNED_ASSET, SIGNED_BYTES),
                ("llmgw-linux-arm64.tar.gz", b"the real llmgw for arm64"),
            ],
        );
        env.signed_id = env.import_kit("signed", &kit);
        env
    }

    /// A store trusting `key` and holding nothing.
    pub fn empty() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let store = root.join("store");
        let key = Key::new();
        let o = run(&[
            "bundle",
            "trust",
            "add",
            s(&key.write_pub(&root)),
            "--store",
            s(&store),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        Self {
            _dir: dir,
            root,
            store,
            key,
            signed_id: String::new(),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    pub fn import(&self, bundle: &Path, sha: &str) -> Output {
        import_bundle(bundle, sha, &self.store, &[])
    }

    /// Writes the kit as a tar and imports it; it must succeed.
    pub fn import_kit(&self, name: &str, kit: &Kit) -> String {
        let p = self.path(&format!("{name}.tar"));
        write_tar(&p, &kit.entries());
        let o = self.import(&p, &kit.sha256());
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        kit.sha256()
    }

    /// Imports the kit, which must be refused with exit code 1, every
    /// `expect` in the message, the store exactly as before and no staging
    /// left behind. Returns the message.
    pub fn refuse_kit(&self, case: &str, kit: &Kit, expect: &[&str]) -> String {
        let p = self.path(&format!("{}.tar", case.replace(' ', "-")));
        write_tar(&p, &kit.entries());
        self.refuse(case, &p, &kit.sha256(), expect)
    }

    pub fn refuse(&self, case: &str, bundle: &Path, sha: &str, expect: &[&str]) -> String {
        assert_refused(case, &self.store, expect, || self.import(bundle, sha))
    }
}

/// A release of `repo` at `tag` that nobody signed, as a second bundle
/// would carry it.
pub fn unsigned_release(
    kit: &mut Kit,
    repo: &str,
    tag: &str,
    engine: &str,
    assets: &[(&str, &[u8])],
) {
    use llmgw_shared::manifest::{Asset, DigestSource, PublisherDigest, Release};
    use llmgw_shared::sha256_hex;
    let mut list = Vec::new();
    for (name, body) in assets {
        let sha = sha256_hex(body);
        list.push(Asset {
            name: (*name).into(),
            size: body.len() as u64,
            sha256: sha.parse().unwrap(),
            publisher_digests: vec![PublisherDigest {
                source: DigestSource::GithubAssetDigest,
                value: sha.clone(),
            }],
            content_type: None,
        });
        kit.blobs.insert(sha, body.to_vec());
    }
    kit.manifest.releases.push(Release {
        repo: repo.parse().unwrap(),
        tag: tag.into(),
        engine: engine.into(),
        version: tag.into(),
        builds: vec![],
        assets: list,
        signature: None,
    });
}
