//! What stopped processes left in `STORE/tmp/`, and when it may go.
//!
//! `tmp/` holds an import's staging (`import-<sha>/`), a volume import in
//! progress (the same, with its `volumes.json`), a state file being written
//! (`state-<name>-<pid>`, [`crate::store::state::write_file`]: written by
//! imports, `gc`, and a serving mirror, which holds no store lock) and a
//! trusted key being added (`trust-<id>.pub.tmp`). A `kill -9` between the
//! write and the rename leaves the file behind, and a rerun (another pid)
//! never writes that name again.
//!
//! Invariant: an entry of `tmp/` is removed only by a process holding the
//! store lock (the type asks for it), and never while a live process may
//! hold it: a volume import in progress is kept (several runs add to it),
//! a state file whose writer's pid is alive is kept, and an import keeps
//! every other import's staging (a rerun of that import resumes from it;
//! `gc` removes it). Everything else, no running process holds.

use std::path::{Path, PathBuf};

use crate::store::fsutil::StoreLock;
use crate::store::{Store, StoreError};

/// Who sweeps: what is kept differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sweeper {
    /// An import, before it stages: other imports' staging is kept.
    Import,
    /// `mirror gc`: stopped imports' staging goes too.
    Gc,
}

/// What a sweep removed (or, in a dry run, would remove) and kept.
#[derive(Debug, Default)]
pub struct Swept {
    pub removed: Vec<PathBuf>,
    pub kept: Vec<PathBuf>,
}

/// Sweeps `tmp/` by the rules of the module's invariant. The lock is the
/// proof that no import (or other locked writer) is running.
pub fn sweep(
    store: &Store,
    _held: &StoreLock,
    who: Sweeper,
    dry_run: bool,
) -> Result<Swept, StoreError> {
    let mut swept = Swept::default();
    let tmp = store.tmp_dir();
    let Ok(entries) = std::fs::read_dir(&tmp) else {
        return Ok(swept);
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if held(&path, who) {
            swept.kept.push(path);
            continue;
        }
        if !dry_run {
            let r = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            match r {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(StoreError::io(&path, e));
                }
                _ => {}
            }
        }
        swept.removed.push(path);
    }
    Ok(swept)
}

/// Whether a live process (or a later run) may still need `path`.
fn held(path: &Path, who: Sweeper) -> bool {
    if super::layout::volume_import_in_progress(path) {
        return true;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    if name.starts_with("import-") && path.is_dir() {
        return who == Sweeper::Import;
    }
    match writer_pid(&name) {
        Some(pid) => pid == std::process::id() || alive(pid),
        None => false,
    }
}

/// The writer's pid of a state file being written (`state-<name>-<pid>`).
fn writer_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("state-")?;
    let (_, pid) = rest.rsplit_once('-')?;
    pid.parse().ok()
}

/// Whether process `pid` is alive; when that cannot be known (no
/// `/proc`), it counts as alive, so its file is kept.
fn alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    !proc.join("self").exists() || proc.join(pid.to_string()).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pid of a process that has exited.
    fn dead_pid() -> u32 {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        pid
    }

    #[test]
    fn only_what_no_live_process_holds_goes() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::at(d.path());
        store.create_dirs().unwrap();
        let tmp = store.tmp_dir();
        let dead = tmp.join(format!("state-imports.json-{}", dead_pid()));
        let mut live_child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let live = tmp.join(format!("state-misses-{}", live_child.id()));
        let trust = tmp.join("trust-ABCD.pub.tmp");
        for f in [&dead, &live, &trust] {
            std::fs::write(f, b"x").unwrap();
        }
        let staging = tmp.join("import-aa");
        let volumes = tmp.join("import-bb");
        std::fs::create_dir_all(&staging).unwrap();
        std::fs::create_dir_all(&volumes).unwrap();
        std::fs::write(volumes.join(super::super::layout::VOLUME_STATE), b"{}").unwrap();
        let lock = StoreLock::acquire(&store.lock_path(), "the test").unwrap();

        let s = sweep(&store, &lock, Sweeper::Import, false).unwrap();
        let _ = live_child.kill();
        let _ = live_child.wait();
        assert!(!dead.exists() && !trust.exists(), "{s:?}");
        assert!(
            live.exists() && staging.exists() && volumes.exists(),
            "{s:?}"
        );

        let s = sweep(&store, &lock, Sweeper::Gc, false).unwrap();
        assert!(!live.exists(), "its writer is gone: {s:?}");
        assert!(!staging.exists(), "{s:?}");
        assert!(volumes.exists(), "{s:?}");
        assert_eq!(writer_pid("state-a-b.json-12"), Some(12));
        assert_eq!(writer_pid("state-x"), None);
    }
}
