//! The driver over small bundles written here: what a target is asked, in
//! which order, and that its own error comes back as it is.

use std::path::Path;

use llmgw_shared::manifest::{HfFile, HfRepo, MANIFEST_NAME, Manifest, RepoKind};
use llmgw_shared::{Sha256, sha256_hex};

use super::*;
use llmgw_shared::progress::Quiet;

const CONFIG: &[u8] = b"{\"tiny\": true}";

fn manifest() -> Manifest {
    let mut m = Manifest::new(vec!["amd64".into()], 0);
    m.repos.push(HfRepo {
        kind: RepoKind::Model,
        id: "acme/tiny".parse().unwrap(),
        revision: "main".into(),
        ref_kind: None,
        commit: "0123456789abcdef0123456789abcdef01234567".into(),
        patterns: vec![],
        files: vec![HfFile::describing("config.json", CONFIG, false)],
        kernel: None,
    });
    m
}

/// A tar of the manifest and `blob` (filed as the config's); returns the
/// manifest's sha256.
fn write_bundle(path: &Path, blob: &[u8]) -> llmgw_shared::BundleId {
    let m = manifest().to_canonical_json();
    let mut b = tar::Builder::new(Vec::new());
    let blob_name = format!("blobs/sha256/{}", sha256_hex(CONFIG));
    for (name, data) in [(MANIFEST_NAME, &m[..]), (blob_name.as_str(), blob)] {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, name, data).unwrap();
    }
    std::fs::write(path, b.into_inner().unwrap()).unwrap();
    llmgw_shared::BundleId::of(&m)
}

/// A target's own failure, or a refusal handed to it.
#[derive(Debug)]
enum Failed {
    NoRoom { sha256: String },
    Refused(VerifyError),
}

impl From<VerifyError> for Failed {
    fn from(e: VerifyError) -> Self {
        Failed::Refused(e)
    }
}

/// Records what it is asked; fails `begin` when told to.
#[derive(Default)]
struct Recorder {
    calls: Vec<String>,
    full: bool,
    stop: bool,
}

impl Target for Recorder {
    type Error = Failed;
    fn have(&self, _: &Sha256, _: u64) -> bool {
        false
    }
    fn read_have(&self, sha256: &Sha256) -> Result<Vec<u8>, Failed> {
        Err(Failed::NoRoom {
            sha256: sha256.to_string(),
        })
    }
    fn on_manifest(&mut self, _: &Manifest, to_read: u64) -> Result<bool, Failed> {
        self.calls.push(format!("manifest {to_read}"));
        Ok(!self.stop)
    }
    fn begin(&mut self, sha256: &str) -> Result<Option<Box<dyn BlobSink<Failed>>>, Failed> {
        self.calls.push("begin".into());
        if self.full {
            return Err(Failed::NoRoom {
                sha256: sha256.into(),
            });
        }
        Ok(None)
    }
    fn keep(&mut self, _: &str) -> Result<(), Failed> {
        self.calls.push("keep".into());
        Ok(())
    }
    fn discard(&mut self, _: &str) {
        self.calls.push("discard".into());
    }
}

#[test]
fn a_good_bundle_is_streamed_then_kept() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("b.tar");
    let sha = write_bundle(&p, CONFIG);
    let mut t = Recorder::default();
    let Ok(Outcome::Verified(v)) = check_bundle(&p, &sha, &[], &mut t, &Quiet) else {
        panic!("not verified: {:?}", t.calls);
    };
    assert_eq!(
        (v.proved.blobs_hashed, v.proved.bytes_hashed),
        (1, CONFIG.len() as u64)
    );
    assert_eq!(v.manifest_sha256, sha);
    let to_read = format!("manifest {}", CONFIG.len());
    assert_eq!(t.calls, [to_read.as_str(), "begin", "keep"]);
    // `bundle verify`'s target: the same verdict.
    assert!(matches!(
        check_bundle(&p, &sha, &[], &mut HashOnly, &Quiet),
        Ok(Outcome::Verified(_))
    ));
}

#[test]
fn the_targets_own_error_comes_back_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("b.tar");
    let sha = write_bundle(&p, CONFIG);
    let mut t = Recorder {
        full: true,
        ..Recorder::default()
    };
    match check_bundle(&p, &sha, &[], &mut t, &Quiet) {
        Err(Failed::NoRoom { sha256 }) => assert_eq!(sha256, sha256_hex(CONFIG)),
        other => panic!("expected the target's error, got {other:?}"),
    }
}

#[test]
fn a_damaged_blob_is_discarded_and_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("b.tar");
    let mut damaged = CONFIG.to_vec();
    damaged[0] ^= 1;
    let sha = write_bundle(&p, &damaged);
    let mut t = Recorder::default();
    match check_bundle(&p, &sha, &[], &mut t, &Quiet) {
        Err(Failed::Refused(VerifyError::HashMismatch { what, .. })) => {
            assert_eq!(what, "acme/tiny config.json");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(t.calls.last().map(String::as_str), Some("discard"));
}

#[test]
fn a_target_may_stop_after_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("b.tar");
    let sha = write_bundle(&p, CONFIG);
    let mut t = Recorder {
        stop: true,
        ..Recorder::default()
    };
    let Ok(Outcome::Stopped {
        manifest_sha256, ..
    }) = check_bundle(&p, &sha, &[], &mut t, &Quiet)
    else {
        panic!("did not stop");
    };
    assert_eq!(manifest_sha256, sha);
    assert_eq!(t.calls.len(), 1);
    // The wrong hash is refused before the target hears of the manifest.
    let mut t = Recorder::default();
    let wrong: llmgw_shared::BundleId = "0".repeat(64).parse().unwrap();
    assert!(matches!(
        check_bundle(&p, &wrong, &[], &mut t, &Quiet),
        Err(Failed::Refused(VerifyError::ManifestHash { .. }))
    ));
    assert!(t.calls.is_empty());
}
