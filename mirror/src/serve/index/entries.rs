//! The entries of the index: what one bundle's release, repository,
//! snapshot and file become once merged, and how a snapshot's folder tree
//! and git tree ids are computed from the files held.
//!
//! Invariant: an entry names a blob only by its sha256 and size from a
//! verified manifest; nothing here holds a path on disk.

use std::collections::{BTreeMap, BTreeSet};

use llmgw_shared::lfs_pointer;
use llmgw_shared::manifest::RepoKind;
use llmgw_shared::{GitOid, Sha256, TreeItem};

/// A bundle held, as `/v1/index` lists it.
#[derive(Debug, Clone)]
pub struct BundleInfo {
    pub id: String,
    pub created: String,
    pub tool: String,
    pub arches: Vec<String>,
    /// The series it belongs to, as the manifest says (shown only).
    pub channel: Option<String>,
    pub sequence: Option<u64>,
    pub expires: Option<String>,
    /// The total size of its distinct blobs.
    pub bytes: u64,
}

/// A blob and how big it is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Blob {
    pub sha256: Sha256,
    pub size: u64,
}

/// A release asset.
#[derive(Debug, Clone)]
pub struct AssetEntry {
    pub name: String,
    pub blob: Blob,
    pub content_type: Option<String>,
    /// A stable number for GitHub's `id`, from the repo, tag and name.
    pub id: u64,
}

/// One release of one repository, merged over every bundle carrying it.
#[derive(Debug, Clone)]
pub struct ReleaseEntry {
    /// `owner/repo` as the manifest spells it.
    pub repo: String,
    pub tag: String,
    pub engine: String,
    pub version: String,
    /// When the first bundle carrying it was made: GitHub's `created_at`.
    pub created: String,
    pub id: u64,
    /// By name.
    pub assets: BTreeMap<String, AssetEntry>,
}

/// A file of a Hugging Face repository at one commit.
#[derive(Debug, Clone)]
pub struct HubFile {
    pub path: String,
    pub blob: Blob,
    /// git blob sha1: of the content, or of the LFS pointer.
    pub git_oid: GitOid,
    pub lfs: bool,
}

impl HubFile {
    /// The ETag the Hub gives: the sha256 for LFS files, else the git oid.
    pub fn etag(&self) -> &str {
        if self.lfs {
            &self.blob.sha256
        } else {
            &self.git_oid
        }
    }

    /// The size of the LFS pointer the Hub would store in git.
    pub fn pointer_size(&self) -> usize {
        lfs_pointer(&self.blob.sha256, self.blob.size).len()
    }
}

/// One entry of a repository's tree: a file or a folder.
#[derive(Debug, Clone)]
pub enum TreeEntry {
    File(HubFile),
    Dir { path: String, oid: String },
}

impl TreeEntry {
    pub fn path(&self) -> &str {
        match self {
            TreeEntry::File(f) => &f.path,
            TreeEntry::Dir { path, .. } => path,
        }
    }
}

/// A Hugging Face repository at one commit, merged over every bundle
/// carrying that commit (bundles may hold different files of it).
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub commit: String,
    /// When the latest bundle carrying it was made: the Hub's `lastModified`.
    pub last_modified: String,
    /// Every file and folder by path; folders have their git tree sha1.
    pub entries: BTreeMap<String, TreeEntry>,
    /// Each folder's direct children (paths), `""` being the root.
    pub children: BTreeMap<String, Vec<String>>,
}

impl Snapshot {
    pub fn file(&self, path: &str) -> Option<&HubFile> {
        match self.entries.get(path) {
            Some(TreeEntry::File(f)) => Some(f),
            _ => None,
        }
    }

    pub fn files(&self) -> impl Iterator<Item = &HubFile> {
        self.entries.values().filter_map(|e| match e {
            TreeEntry::File(f) => Some(f),
            TreeEntry::Dir { .. } => None,
        })
    }

    pub fn is_dir(&self, path: &str) -> bool {
        path.is_empty() || matches!(self.entries.get(path), Some(TreeEntry::Dir { .. }))
    }
}

/// A Hugging Face repository: every commit held, and which revision names
/// (branches, tags) point at which commit.
#[derive(Debug, Clone)]
pub struct HubRepo {
    pub kind: RepoKind,
    /// `org/name` as the manifest spells it.
    pub id: String,
    pub snapshots: BTreeMap<String, Snapshot>,
    /// Revision name -> commit. When bundles disagree, the later import wins.
    pub refs: BTreeMap<String, String>,
    /// Which of `refs` were tags when imported (format 2 says; a format 1
    /// manifest does not, and its revisions are served as branches).
    pub tags: std::collections::BTreeSet<String>,
    /// The commit `/api/models/{repo}` (no revision) answers with: `main`
    /// if held, else the commit of the latest import carrying the repo.
    pub default_commit: String,
}

impl HubRepo {
    /// The snapshot a revision names: a held commit, or a branch or tag
    /// name that was imported.
    pub fn resolve(&self, rev: &str) -> Option<&Snapshot> {
        if let Some(s) = self.snapshots.get(rev) {
            return Some(s);
        }
        self.refs.get(rev).and_then(|c| self.snapshots.get(c))
    }

    pub fn default_snapshot(&self) -> Option<&Snapshot> {
        self.snapshots.get(&self.default_commit)
    }
}

/// Compares strings treating runs of digits as numbers, so `b10828` sorts
/// after `b6123` and `0.10.0` after `0.9.1`.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn chunks(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = s.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &s[start..i]));
                start = i;
            }
        }
        out
    }
    let (ca, cb) = (chunks(a), chunks(b));
    for (x, y) in ca.iter().zip(cb.iter()) {
        let ord = match (x, y) {
            ((true, x), (true, y)) => {
                let (xt, yt) = (x.trim_start_matches('0'), y.trim_start_matches('0'));
                xt.len().cmp(&yt.len()).then_with(|| xt.cmp(yt))
            }
            ((_, x), (_, y)) => x.cmp(y),
        };
        if ord != std::cmp::Ordering::Equal {
            return ord;
        }
    }
    ca.len().cmp(&cb.len()).then_with(|| a.cmp(b))
}

/// Builds a snapshot's folder tree, with git tree sha1s computed from what
/// is held (so they match upstream when every file of the commit is held).
pub(super) fn snapshot(
    commit: String,
    last_modified: String,
    files: BTreeMap<String, HubFile>,
) -> Snapshot {
    let mut entries: BTreeMap<String, TreeEntry> = BTreeMap::new();
    let mut children: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    children.insert(String::new(), BTreeSet::new());
    for (path, f) in files {
        let mut parent = String::new();
        let parts: Vec<&str> = path.split('/').collect();
        for (i, _) in parts.iter().enumerate().take(parts.len() - 1) {
            let dir = parts[..=i].join("/");
            children
                .entry(parent.clone())
                .or_default()
                .insert(dir.clone());
            children.entry(dir.clone()).or_default();
            parent = dir;
        }
        children.entry(parent).or_default().insert(path.clone());
        entries.insert(path, TreeEntry::File(f));
    }
    // Deepest folders first, so each folder's children are hashed before it.
    let mut dirs: Vec<String> = children.keys().filter(|d| !d.is_empty()).cloned().collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.matches('/').count()));
    for dir in dirs {
        let oid = tree_oid(&dir, &children[&dir], &entries);
        entries.insert(dir.clone(), TreeEntry::Dir { path: dir, oid });
    }
    Snapshot {
        commit,
        last_modified,
        entries,
        children: children
            .into_iter()
            .map(|(k, v)| (k, v.into_iter().collect()))
            .collect(),
    }
}

/// The git tree sha1 of a folder: entries `<mode> <name>\0<20-byte oid>`,
/// sorted as git sorts them (a folder's name compares as if it ended in '/').
fn tree_oid(dir: &str, kids: &BTreeSet<String>, entries: &BTreeMap<String, TreeEntry>) -> String {
    let prefix = format!("{dir}/");
    let items: Vec<TreeItem<'_>> = kids
        .iter()
        .filter_map(|path| {
            let name = path.strip_prefix(&prefix).unwrap_or(path);
            match entries.get(path)? {
                TreeEntry::File(f) => Some(TreeItem {
                    name,
                    is_dir: false,
                    oid: &f.git_oid,
                }),
                TreeEntry::Dir { oid, .. } => Some(TreeItem {
                    name,
                    is_dir: true,
                    oid,
                }),
            }
        })
        .collect();
    llmgw_shared::tree_oid(&items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_of_tags() {
        use std::cmp::Ordering::*;
        assert_eq!(natural_cmp("b10828", "b6123"), Greater);
        assert_eq!(natural_cmp("0.10.0", "0.9.1"), Greater);
        assert_eq!(natural_cmp("v1.0", "v1.0"), Equal);
        assert_eq!(natural_cmp("v1.0", "v1.0.1"), Less);
    }

    #[test]
    fn tree_oid_matches_git() {
        // `git mktree` of "100644 blob <hello\n>\tb" and
        // "100644 blob <empty>\ta" gives this tree id.
        let mk = |p: &str, oid: &str| HubFile {
            path: p.into(),
            blob: Blob {
                sha256: Sha256::of(b""),
                size: 0,
            },
            git_oid: oid.parse().unwrap(),
            lfs: false,
        };
        let mut files = BTreeMap::new();
        files.insert(
            "d/b".to_string(),
            mk("d/b", "ce013625030ba8dba906f756967f9e9ca394464a"),
        );
        files.insert(
            "d/a".to_string(),
            mk("d/a", "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"),
        );
        let s = snapshot("c".into(), "t".into(), files);
        match s.entries.get("d") {
            Some(TreeEntry::Dir { oid, .. }) => {
                assert_eq!(oid, &git_mktree_expected());
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(s.children[""], vec!["d".to_string()]);
        assert_eq!(s.children["d"], vec!["d/a".to_string(), "d/b".to_string()]);
    }

    /// Computed with `printf '100644 blob e69d...\ta\n100644 blob ce01...\tb\n' | git mktree`.
    fn git_mktree_expected() -> String {
        "2d8b0675a9fc9c8f8c0f67036aeb3d6dec878ebd".to_string()
    }
}
