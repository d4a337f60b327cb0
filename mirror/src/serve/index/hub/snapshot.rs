//! A Hugging Face repository as the mirror holds it, and each held commit
//! of it (a snapshot): its files as numbers into the repository's pool, its folders with the git
//! tree ids computed from the files held, and listings in path order.
//!
//! Invariant: a file names a blob only by its sha256 and size from a
//! verified manifest; nothing here holds a path on disk.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use llmgw_shared::lfs_pointer;
use llmgw_shared::manifest::RepoKind;
use llmgw_shared::{GitOid, TreeItem};

use crate::serve::index::entries::Blob;

/// A file of a Hugging Face repository at one commit, as read from its
/// repository's [`FilePool`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HubFile<'a> {
    pub path: &'a str,
    pub blob: &'a Blob,
    /// git blob sha1: of the content, or of the LFS pointer.
    pub git_oid: &'a GitOid,
    pub lfs: bool,
}

impl<'a> HubFile<'a> {
    /// The ETag the Hub gives: the sha256 for LFS files, else the git oid.
    pub fn etag(&self) -> &'a str {
        if self.lfs {
            self.blob.sha256.as_str()
        } else {
            self.git_oid.as_str()
        }
    }

    /// The size of the LFS pointer the Hub would store in git.
    pub fn pointer_size(&self) -> usize {
        lfs_pointer(&self.blob.sha256, self.blob.size).len()
    }
}

/// Every distinct file of one repository over all its held commits, in
/// two allocations (the files, and their paths as one text), so a store of
/// a million files costs no allocation per file and no heap left in holes
/// between them (issue 35). A snapshot lists its files as numbers into the
/// pool: a file the same at 80 revisions is held once, and 4 bytes each.
#[derive(Debug, Default)]
pub struct FilePool {
    files: Vec<Pooled>,
    paths: String,
}

#[derive(Debug)]
struct Pooled {
    /// Where its path is in [`FilePool::paths`].
    path: std::ops::Range<usize>,
    blob: Blob,
    git_oid: GitOid,
    lfs: bool,
}

impl FilePool {
    /// Adds a file, giving its number.
    pub(in crate::serve::index) fn push(
        &mut self,
        path: &str,
        blob: Blob,
        git_oid: GitOid,
        lfs: bool,
    ) -> u32 {
        let start = self.paths.len();
        self.paths.push_str(path);
        self.files.push(Pooled {
            path: start..self.paths.len(),
            blob,
            git_oid,
            lfs,
        });
        // Never past u32: a manifest is at most 64 MiB, a few hundred
        // thousand files, and a store would need ten thousand such bundles
        // of one repository, all different, to pass 4 billion.
        (self.files.len() - 1) as u32
    }

    /// Gives back what growing left unused.
    pub(in crate::serve::index) fn shrink(&mut self) {
        self.files.shrink_to_fit();
        self.paths.shrink_to_fit();
    }

    /// Every pooled file's blob.
    fn blobs(&self) -> impl Iterator<Item = &Blob> {
        self.files.iter().map(|f| &f.blob)
    }

    fn get(&self, n: u32) -> HubFile<'_> {
        let f = &self.files[n as usize];
        HubFile {
            path: &self.paths[f.path.clone()],
            blob: &f.blob,
            git_oid: &f.git_oid,
            lfs: f.lfs,
        }
    }
}

/// One entry of a repository's tree: a file or a folder.
#[derive(Debug, Clone, Copy)]
pub enum TreeEntry<'a> {
    File(HubFile<'a>),
    Dir { path: &'a str, oid: &'a str },
}

impl<'a> TreeEntry<'a> {
    pub fn path(&self) -> &'a str {
        match self {
            TreeEntry::File(f) => f.path,
            TreeEntry::Dir { path, .. } => path,
        }
    }
}

/// A Hugging Face repository at one commit, merged over every bundle
/// carrying that commit (bundles may hold different files of it).
///
/// Kept small, since a store holds millions of files over years of
/// revisions (issue 35): each file is a number into the repository's
/// [`FilePool`], in path order; folders, far fewer, are listed apart.
/// Listings merge the two in path order, as one sorted map of both did.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub commit: String,
    /// When the latest bundle carrying it was made: the Hub's `lastModified`.
    pub last_modified: String,
    pool: Arc<FilePool>,
    /// Every file, as its number in `pool`, sorted by path (bytes).
    files: Vec<u32>,
    /// Every folder by path, with its git tree sha1.
    dirs: BTreeMap<Box<str>, String>,
}

impl Snapshot {
    fn at(&self, i: usize) -> HubFile<'_> {
        self.pool.get(self.files[i])
    }

    fn find(&self, path: &str) -> Option<HubFile<'_>> {
        self.files
            .binary_search_by(|&n| self.pool.get(n).path.cmp(path))
            .ok()
            .map(|i| self.at(i))
    }

    pub fn file(&self, path: &str) -> Option<HubFile<'_>> {
        self.find(path)
    }

    pub fn files(&self) -> impl Iterator<Item = HubFile<'_>> {
        self.files.iter().map(|&n| self.pool.get(n))
    }

    /// Every file with its number in the repository's pool, in path order:
    /// what stands for the file in tables kept beside the index (the
    /// models' tar layers, [`crate::serve::index::oci::made::MadeFrom::tars`]).
    pub fn numbered_files(&self) -> impl Iterator<Item = (u32, HubFile<'_>)> {
        self.files.iter().map(|&n| (n, self.pool.get(n)))
    }

    /// How many files it has.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// The index of the first file whose path is not before `key`
    /// (`inclusive`) or after it.
    fn seek(&self, key: &str, inclusive: bool) -> usize {
        self.files.partition_point(|&n| {
            let p = self.pool.get(n).path;
            if inclusive { p < key } else { p <= key }
        })
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
        let files = (first..self.files.len())
            .map(|i| self.at(i))
            .take_while(move |f| f.path.starts_with(&under))
            .map(TreeEntry::File);
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
            while at < self.files.len() {
                let f = self.at(at);
                let rest = f.path.strip_prefix(under.as_str())?;
                match rest.find('/') {
                    None => {
                        at += 1;
                        return Some(TreeEntry::File(f));
                    }
                    // Everything in `sub/` sorts before `sub0` ('0' follows '/').
                    Some(slash) => {
                        let end = format!("{}0", &f.path[..under.len() + slash]);
                        at = at.max(self.seek(&end, true));
                    }
                }
            }
            None
        });
        merge_by_path(files, self.dirs_under(prefix, after, true))
    }

    /// The index of the first file under `prefix` and after `after`.
    fn first_file(&self, prefix: &str, after: Option<&str>) -> usize {
        let from = self.seek(prefix, true);
        match after {
            Some(a) => from.max(self.seek(a, false)),
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
    /// What this repository serves, as one number: the sha256 of the
    /// bundles that carry it, in index order, and of the names above. Two
    /// builds of the index give it the same version only when every answer
    /// about it is the same, so the JSON cache keeps its answers across an
    /// import that did not touch it ([`crate::serve::index::Index::build`] says why).
    pub version: [u8; 32],
    /// The large answers about it made before an index holding it is
    /// served (set once, by the index thread: [`super::ahead`]).
    pub ahead: std::sync::OnceLock<super::ahead::Ahead>,
    /// For a kernel repository, whether the Hub named its owner a trusted
    /// kernel publisher, as the last bundle carrying it recorded.
    pub trusted_publisher: bool,
}

impl HubRepo {
    /// The snapshot a revision names: a held commit, or a branch or tag
    /// name that was imported — by its short name (`main`, `v1.0`) or its
    /// full ref as the Hub also takes it (`refs/heads/main` names a branch
    /// only, `refs/tags/v1.0` a tag only; the `kernels` client asks so).
    pub fn resolve(&self, rev: &str) -> Option<&Snapshot> {
        if let Some(s) = self.snapshots.get(rev) {
            return Some(s);
        }
        let name = if let Some(branch) = rev.strip_prefix("refs/heads/") {
            Some(branch).filter(|b| !self.tags.contains(*b))
        } else if let Some(tag) = rev.strip_prefix("refs/tags/") {
            Some(tag).filter(|t| self.tags.contains(*t))
        } else {
            Some(rev)
        };
        name.and_then(|n| self.refs.get(n))
            .and_then(|c| self.snapshots.get(c))
    }

    pub fn default_snapshot(&self) -> Option<&Snapshot> {
        self.snapshots.get(&self.default_commit)
    }

    /// The blob of every distinct file of every commit held (one pool per
    /// build of the repository, which its snapshots share; each pool once).
    pub fn blobs(&self) -> impl Iterator<Item = &Blob> {
        let mut pools: Vec<&Arc<FilePool>> = Vec::new();
        for s in self.snapshots.values() {
            if !pools.iter().any(|p| Arc::ptr_eq(p, &s.pool)) {
                pools.push(&s.pool);
            }
        }
        pools.into_iter().flat_map(|p| p.blobs())
    }
}

/// Builds a snapshot's folder tree, with git tree sha1s computed from what
/// is held (so they match upstream when every file of the commit is held).
pub(in crate::serve::index) fn build(
    commit: String,
    last_modified: String,
    files: &BTreeMap<&str, u32>,
    pool: &Arc<FilePool>,
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
        let oid = tree_oid(dir, &children[dir], files, pool, &dirs);
        dirs.insert(dir.as_str().into(), oid);
    }
    Snapshot {
        commit,
        last_modified,
        pool: pool.clone(),
        files: files.values().copied().collect(),
        dirs,
    }
}

/// The git tree sha1 of a folder: entries `<mode> <name>\0<20-byte oid>`,
/// sorted as git sorts them (a folder's name compares as if it ended in '/').
fn tree_oid(
    dir: &str,
    kids: &BTreeSet<(String, bool)>,
    files: &BTreeMap<&str, u32>,
    pool: &FilePool,
    dirs: &BTreeMap<Box<str>, String>,
) -> String {
    let items: Vec<TreeItem<'_>> = kids
        .iter()
        .filter_map(|(name, is_dir)| {
            let path = format!("{dir}/{name}");
            let oid: &str = if *is_dir {
                dirs.get(path.as_str())?
            } else {
                pool.get(*files.get(path.as_str())?).git_oid
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
    use llmgw_shared::Sha256;

    /// A snapshot of `files` (path, git oid) in a pool of their own.
    fn snapshot_of(files: &[(&'static str, &str)]) -> Snapshot {
        let mut pool = FilePool::default();
        let mut numbers = BTreeMap::new();
        for (path, oid) in files {
            let blob = Blob {
                sha256: Sha256::of(path.as_bytes()),
                size: 1,
            };
            numbers.insert(*path, pool.push(path, blob, oid.parse().unwrap(), false));
        }
        build("c".into(), "t".into(), &numbers, &Arc::new(pool))
    }

    fn paths(it: &mut dyn Iterator<Item = TreeEntry<'_>>) -> Vec<String> {
        it.map(|e| e.path().to_string()).collect()
    }

    #[test]
    fn tree_oid_matches_git() {
        // `git mktree` of "100644 blob <hello\n>\tb" and
        // "100644 blob <empty>\ta" gives this tree id.
        let s = snapshot_of(&[
            ("d/b", "ce013625030ba8dba906f756967f9e9ca394464a"),
            ("d/a", "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"),
        ]);
        match s.entry("d") {
            Some(TreeEntry::Dir { oid, .. }) => assert_eq!(oid, git_mktree_expected()),
            other => panic!("{other:?}"),
        }
        assert_eq!(paths(&mut s.children("", None)), ["d"]);
        assert_eq!(paths(&mut s.children("d", None)), ["d/a", "d/b"]);
    }

    /// Listings merge files and folders in path order, jump over a
    /// sub-folder's files, and start after a cursor.
    #[test]
    fn listings_in_path_order_from_a_cursor() {
        const EMPTY: &str = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";
        let s = snapshot_of(
            &["a.txt", "a/x", "a/y/z", "a0", "b", "a/y/w", "c/d/e"].map(|p| (p, EMPTY)),
        );
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
