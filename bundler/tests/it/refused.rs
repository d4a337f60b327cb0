//! What create does when the check of what it wrote refuses it (#47): the
//! check is the mirror's import check in the binary; here a check that
//! records what it was given and refuses, standing in for one that found a
//! fault. Nothing is published at `--out`: a bundle is moved to
//! `OUT.refused`, a set of volumes each to `NAME.refused`, and create
//! fails with `RefusedAsWritten` naming where.

// A test that unwraps panics with the error: that is its failure message.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use llmgw_bundler::{
    CheckWritten, CreateError, CreateSettings, CreateSpec, Options, RetryPolicy, SpecEnv, create,
};
use llmgw_fixture::{Fixture, FixtureOptions};
use llmgw_shared::BundleId;

type Refusal = Box<dyn std::error::Error + Send + Sync>;

/// Refuses everything, keeping what it was asked to check.
#[derive(Default)]
struct Refuses {
    bundles: Mutex<Vec<(PathBuf, BundleId)>>,
    volume_sets: Mutex<Vec<(Vec<PathBuf>, BundleId)>>,
}

impl CheckWritten for Refuses {
    fn check(&self, path: &Path, sha256: &BundleId) -> Result<(), Refusal> {
        self.bundles
            .lock()
            .unwrap()
            .push((path.to_path_buf(), sha256.clone()));
        Err("a fault import would find".into())
    }

    fn check_volumes(&self, paths: &[PathBuf], sha256: &BundleId) -> Result<(), Refusal> {
        assert!(paths.iter().all(|p| p.is_file()), "{paths:?}");
        self.volume_sets
            .lock()
            .unwrap()
            .push((paths.to_vec(), sha256.clone()));
        Err("a fault import would find".into())
    }
}

fn spec(fx: &Fixture, dir: &Path, out: &str, volume_size: Option<&str>) -> CreateSpec {
    CreateSpec::resolve(
        CreateSettings {
            out: Some(dir.join(out)),
            arch: vec!["amd64".into()],
            models: vec!["acme/tiny".into()],
            hf_endpoint: Some(fx.hf_endpoint()),
            cache: Some(dir.join("cache")),
            volume_size: volume_size.map(str::to_string),
            ..Default::default()
        },
        &SpecEnv::default(),
    )
    .unwrap()
}

fn opts(check: Arc<Refuses>) -> Options {
    Options {
        progress: Arc::new(llmgw_shared::progress::Quiet),
        hf_token: None,
        retry: RetryPolicy::default(),
        source_date_epoch: Some(0),
        password: llmgw_shared::Password::Unavailable,
        check: Some(check),
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "cache")
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_bundle_or_set_of_volumes_is_moved_aside_never_published() {
    let fx = Fixture::start(FixtureOptions::default()).await.unwrap();
    let d = tempfile::tempdir().unwrap();

    let check = Arc::new(Refuses::default());
    let e = create(&spec(&fx, d.path(), "b.tar", None), &opts(check.clone()))
        .await
        .unwrap_err();
    let CreateError::RefusedAsWritten { kept, .. } = &e else {
        panic!("{e}");
    };
    assert_eq!(*kept, d.path().join("b.tar.refused"));
    assert_eq!(check.bundles.lock().unwrap().len(), 1);
    assert_eq!(names(d.path()), ["b.tar.refused"]);

    let check = Arc::new(Refuses::default());
    let e = create(
        &spec(&fx, d.path(), "v.tar", Some("300K")),
        &opts(check.clone()),
    )
    .await
    .unwrap_err();
    let CreateError::RefusedAsWritten { kept, .. } = &e else {
        panic!("{e}");
    };
    let sets = check.volume_sets.lock().unwrap();
    assert_eq!(sets.len(), 1, "the set is checked once, whole");
    let (paths, _) = &sets[0];
    assert!(paths.len() >= 2, "{paths:?}");
    let mut expected: Vec<String> = paths
        .iter()
        .map(|p| format!("{}.refused", p.file_name().unwrap().to_string_lossy()))
        .collect();
    expected.push("v.sha256.refused".into());
    expected.push("b.tar.refused".into());
    expected.sort();
    assert_eq!(names(d.path()), expected);
    assert_eq!(
        *kept,
        PathBuf::from(format!("{}.refused", paths[0].display()))
    );
}
