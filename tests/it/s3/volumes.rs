//! A volume set taken into a bucket over several runs, with no
//! `--work-dir`: a command that writes to a bucket keeps its work folder
//! (where the accepted volumes are staged) under the cache folder, keyed by
//! the store, so the second run picks up where the first stopped.

use super::server::on_each;
use crate::bundle_kit::*;
use crate::volumes::kit::{self as volume_kit, s};

#[test]
fn a_volume_set_taken_in_over_two_runs_needs_no_work_dir() {
    let fx = volume_kit::fixture();
    let dir = tempfile::tempdir().unwrap();
    let set = volume_kit::create(&fx, dir.path(), "set", &[]);
    assert!(set.data.len() >= 2, "{} volumes", set.data.len());
    on_each(|s3| {
        let url = s3.url("volumes");
        let import = |files: &[std::path::PathBuf]| {
            let o = s3
                .llmgw()
                .args(["bundle", "import", "--store", &url, "--sha256", &set.sha256])
                .args(files.iter().map(|p| s(p)))
                .output()
                .unwrap();
            assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
            stdout(&o)
        };
        let manifest = format!("bundles/{}.json", set.sha256);

        // Run 1: the first volume only. Nothing is visible yet.
        let out = import(&set.data[..1]);
        assert!(out.contains("accepted so far, not imported yet"), "{out}");
        assert!(!s3.keys("volumes").contains(&manifest));
        let kept = s3.cache_home().join("llmgw/s3");
        let folders: Vec<_> = std::fs::read_dir(&kept).unwrap().collect();
        assert_eq!(folders.len(), 1, "one work folder for the store");

        // Run 2, a new process with no --work-dir: the rest completes it
        // (a fresh folder would have lacked the first volume).
        let out = import(&set.data[1..]);
        assert!(!out.contains("accepted so far"), "{out}");
        let keys = s3.keys("volumes");
        assert!(keys.contains(&manifest), "{keys:?}");
        let o = s3
            .llmgw()
            .args(["mirror", "verify", "--store", &url])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    });
}

/// A cache folder that cannot be made (here a file is in its way, as a
/// read-only home is in a container) does not stop a writer: it works in a
/// temporary folder, as before, and says a stopped import will not resume.
#[test]
fn a_cache_folder_that_cannot_be_made_falls_back_to_a_temporary_one() {
    on_each(|s3| {
        let dir = tempfile::tempdir().unwrap();
        let (kit, bundle) = super::import::model_bundle(dir.path(), "t", &[300]);
        let in_the_way = dir.path().join("not-a-folder");
        std::fs::write(&in_the_way, b"a file").unwrap();
        let url = s3.url("fallback");
        let o = s3
            .llmgw()
            .args(["bundle", "import", s(&bundle), "--sha256", &kit.sha256()])
            .args(["--store", &url])
            .env("XDG_CACHE_HOME", &in_the_way)
            .env("RUST_LOG", "warn")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stderr(&o).contains("give --work-dir"), "{}", stderr(&o));
        assert!(
            s3.keys("fallback")
                .contains(&format!("bundles/{}.json", kit.sha256()))
        );
    });
}
