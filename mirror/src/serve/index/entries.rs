//! The entries of the index: what one bundle's release, repository,
//! snapshot and file become once merged, and how a snapshot's folder tree
//! and git tree ids are computed from the files held.
//!
//! Invariant: an entry names a blob only by its sha256 and size from a
//! verified manifest; nothing here holds a path on disk.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

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
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
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

/// A file of a Hugging Face repository at one commit. A file the same at
/// several commits is one value, shared by their snapshots.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HubFile {
    pub path: Box<str>,
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
#[derive(Debug, Clone, Copy)]
pub enum TreeEntry<'a> {
    File(&'a HubFile),
    Dir { path: &'a str, oid: &'a str },
}

impl<'a> TreeEntry<'a> {
    pub fn path(&self) -> &'a str {
        match self {
            TreeEntry::File(f) => &f.path,
            TreeEntry::Dir { path, .. } => path,
        }
    }
}

/// A Hugging Face repository at one commit, merged over every bundle
/// carrying that commit (bundles may hold different files of it).
///
/// Kept small, since a store holds millions of files over years of
/// revisions (issue 35): each file is one shared [`HubFile`] and a pointer
/// in a sorted list; folders, far fewer, are listed apart. Listings merge
/// the two in path order, as one sorted map of both gave them before.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub commit: String,
    /// When the latest bundle carrying it was made: the Hub's `lastModified`.
    pub last_modified: String,
    /// Every file, sorted by path (bytes).
    files: Vec<Arc<HubFile>>,
    /// Every folder by path, with its git tree sha1.
    dirs: BTreeMap<Box<str>, String>,
}

impl Snapshot {
    fn find(&self, path: &str) -> Option<&HubFile> {
        self.files
            .binary_search_by(|f| (*f.path).cmp(path))
            .ok()
            .map(|i| &*self.files[i])
    }

    pub fn file(&self, path: &str) -> Option<&HubFile> {
        self.find(path)
    }

    pub fn files(&self) -> impl Iterator<Item = &HubFile> {
        self.files.iter().map(|f| &**f)
    }

    pub fn is_dir(&self, path: &str) -> bool {
        path.is_empty() || self.dirs.contains_key(path)
    }

    /// The file or folder at `path`.
    pub fn entry(&self, path: &str) -> Option<TreeEntry<'_>> {
        if let Some(f) = self.find(path) {
            return Some(TreeEntry::File(f));
        }
        self.dirs
            .get_key_value(path)
            .map(|(path, oid)| TreeEntry::Dir { path, oid })
    }

    /// Every file and folder under `dir` (`""` the root), at any depth, in
    /// path order, those after `after` only.
    pub fn descendants<'a>(
        &'a self,
        dir: &str,
        after: Option<&str>,
    ) -> impl Iterator<Item = TreeEntry<'a>> + 'a {
        let prefix = folder_prefix(dir);
        let first = self.first_file(&prefix, after);
        let under = prefix.clone();
        let files = self.files[first..]
            .iter()
            .take_while(move |f| f.path.starts_with(&under))
            .map(|f| TreeEntry::File(f));
        merge_by_path(files, self.dirs_under(prefix, after, false))
    }

    /// The files and folders directly in `dir`, in path order, those after
    /// `after` only. A sub-folder's files are jumped over, not walked.
    pub fn children<'a>(
        &'a self,
        dir: &str,
        after: Option<&str>,
    ) -> impl Iterator<Item = TreeEntry<'a>> + 'a {
        let prefix = folder_prefix(dir);
        let mut at = self.first_file(&prefix, after);
        let under = prefix.clone();
        let files = std::iter::from_fn(move || {
            loop {
                let f = self.files.get(at)?;
                let rest = f.path.strip_prefix(under.as_str())?;
                match rest.find('/') {
                    None => {
                        at += 1;
                        return Some(TreeEntry::File(&**f));
                    }
                    // Everything in `sub/` sorts before `sub0` ('0' follows '/').
                    Some(slash) => {
                        let end = format!("{}0", &f.path[..under.len() + slash]);
                        at += self.files[at..].partition_point(|g| *g.path < *end);
                    }
                }
            }
        });
        merge_by_path(files, self.dirs_under(prefix, after, true))
    }

    /// The index of the first file under `prefix` and after `after`.
    fn first_file(&self, prefix: &str, after: Option<&str>) -> usize {
        let from = self.files.partition_point(|f| *f.path < *prefix);
        match after {
            Some(a) => from.max(self.files.partition_point(|f| *f.path <= *a)),
            None => from,
        }
    }

    fn dirs_under<'a>(
        &'a self,
        prefix: String,
        after: Option<&str>,
        direct: bool,
    ) -> impl Iterator<Item = TreeEntry<'a>> + 'a {
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let lower = match after {
            Some(a) if *a >= *prefix => Excluded(Box::<str>::from(a)),
            _ => Included(Box::<str>::from(prefix.as_str())),
        };
        self.dirs
            .range::<Box<str>, _>((lower, Unbounded))
            .map_while(move |(path, oid)| {
                let rest = path.strip_prefix(prefix.as_str())?;
                Some((rest, TreeEntry::Dir { path, oid }))
            })
            .filter(move |(rest, _)| !direct || !rest.contains('/'))
            .map(|(_, entry)| entry)
    }
}

/// `dir/`, or nothing for the root.
fn folder_prefix(dir: &str) -> String {
    if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    }
}

/// Two iterators sorted by path, as one.
fn merge_by_path<'a>(
    a: impl Iterator<Item = TreeEntry<'a>>,
    b: impl Iterator<Item = TreeEntry<'a>>,
) -> impl Iterator<Item = TreeEntry<'a>> {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    std::iter::from_fn(move || match (a.peek(), b.peek()) {
        (Some(x), Some(y)) if y.path() < x.path() => b.next(),
        (Some(_), _) => a.next(),
        (None, _) => b.next(),
    })
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
    files: BTreeMap<String, Arc<HubFile>>,
) -> Snapshot {
    // Each folder's direct children: `(name, is_dir)`; `""` is the root.
    let mut children: BTreeMap<String, BTreeSet<(String, bool)>> = BTreeMap::new();
    for path in files.keys() {
        let parts: Vec<&str> = path.split('/').collect();
        let mut parent = String::new();
        for (i, part) in parts.iter().enumerate() {
            let is_dir = i + 1 < parts.len();
            children
                .entry(parent.clone())
                .or_default()
                .insert((part.to_string(), is_dir));
            if is_dir {
                parent = parts[..=i].join("/");
            }
        }
    }
    // Deepest folders first, so each folder's children are hashed before it.
    let mut order: Vec<&String> = children.keys().filter(|d| !d.is_empty()).collect();
    order.sort_by_key(|d| std::cmp::Reverse(d.matches('/').count()));
    let mut dirs: BTreeMap<Box<str>, String> = BTreeMap::new();
    for dir in order {
        let oid = tree_oid(dir, &children[dir], &files, &dirs);
        dirs.insert(dir.as_str().into(), oid);
    }
    Snapshot {
        commit,
        last_modified,
        files: files.into_values().collect(),
        dirs,
    }
}

/// The git tree sha1 of a folder: entries `<mode> <name>\0<20-byte oid>`,
/// sorted as git sorts them (a folder's name compares as if it ended in '/').
fn tree_oid(
    dir: &str,
    kids: &BTreeSet<(String, bool)>,
    files: &BTreeMap<String, Arc<HubFile>>,
    dirs: &BTreeMap<Box<str>, String>,
) -> String {
    let items: Vec<TreeItem<'_>> = kids
        .iter()
        .filter_map(|(name, is_dir)| {
            let path = format!("{dir}/{name}");
            let oid: &str = if *is_dir {
                dirs.get(path.as_str())?
            } else {
                &files.get(&path)?.git_oid
            };
            Some(TreeItem {
                name,
                is_dir: *is_dir,
                oid,
            })
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
            Arc::new(mk("d/b", "ce013625030ba8dba906f756967f9e9ca394464a")),
        );
        files.insert(
            "d/a".to_string(),
            Arc::new(mk("d/a", "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")),
        );
        let s = snapshot("c".into(), "t".into(), files);
        match s.entry("d") {
            Some(TreeEntry::Dir { oid, .. }) => assert_eq!(oid, git_mktree_expected()),
            other => panic!("{other:?}"),
        }
        let paths = |it: &mut dyn Iterator<Item = TreeEntry<'_>>| -> Vec<String> {
            it.map(|e| e.path().to_string()).collect()
        };
        assert_eq!(paths(&mut s.children("", None)), ["d"]);
        assert_eq!(paths(&mut s.children("d", None)), ["d/a", "d/b"]);
    }

    /// Listings merge files and folders in path order, jump over a
    /// sub-folder's files, and start after a cursor.
    #[test]
    fn listings_in_path_order_from_a_cursor() {
        let mut files = BTreeMap::new();
        for p in ["a.txt", "a/x", "a/y/z", "a0", "b", "a/y/w", "c/d/e"] {
            let f = HubFile {
                path: p.into(),
                blob: Blob {
                    sha256: Sha256::of(p.as_bytes()),
                    size: 1,
                },
                git_oid: "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391".parse().unwrap(),
                lfs: false,
            };
            files.insert(p.to_string(), Arc::new(f));
        }
        let s = snapshot("c".into(), "t".into(), files);
        let paths = |it: &mut dyn Iterator<Item = TreeEntry<'_>>| -> Vec<String> {
            it.map(|e| e.path().to_string()).collect()
        };
        assert_eq!(
            paths(&mut s.children("", None)),
            ["a", "a.txt", "a0", "b", "c"]
        );
        assert_eq!(paths(&mut s.children("", Some("a.txt"))), ["a0", "b", "c"]);
        assert_eq!(paths(&mut s.children("a", None)), ["a/x", "a/y"]);
        assert_eq!(
            paths(&mut s.descendants("", None)),
            [
                "a", "a.txt", "a/x", "a/y", "a/y/w", "a/y/z", "a0", "b", "c", "c/d", "c/d/e"
            ]
        );
        assert_eq!(
            paths(&mut s.descendants("a", Some("a/y"))),
            ["a/y/w", "a/y/z"]
        );
        assert_eq!(paths(&mut s.descendants("c/d", None)), ["c/d/e"]);
        assert!(s.is_dir("c/d") && !s.is_dir("c/d/e") && s.file("c/d/e").is_some());
    }

    /// Computed with `printf '100644 blob e69d...\ta\n100644 blob ce01...\tb\n' | git mktree`.
    fn git_mktree_expected() -> String {
        "2d8b0675a9fc9c8f8c0f67036aeb3d6dec878ebd".to_string()
    }
}
