//! What the mirror serves, as lookup tables built from the manifests held.
//!
//! Every route answers from these tables: a URL names a release, a repo,
//! a revision and a path, and the tables give back a blob's sha256 and
//! size. The sha256 is the only thing that ever becomes a path on disk
//! (through [`crate::store::Store::blob_path`]), so nothing a client sends
//! can reach a file the manifests do not name.
//!
//! The index is immutable; a new one is built whenever `bundles/` changes
//! and swapped in whole (see [`super::state`]).
//!
//! Bundles are merged in the store's import order ([`crate::state`]):
//! where bundles disagree about what a branch or tag names, the later
//! import wins — never the bundle with the later `created` date, which is
//! whatever its maker wrote. Repository ids are merged case-insensitively
//! ([`llmgw_shared::names::repo_key`]), as GitHub and the Hub match them.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use llmgw_shared::digest::lfs_pointer;
use llmgw_shared::git::TreeItem;
use llmgw_shared::manifest::{Manifest, RefKind, RepoKind};
use llmgw_shared::names::repo_key;
use sha2::Digest;
use sha2::Sha256;

/// A bundle held, as `/v1/index` lists it.
#[derive(Debug, Clone)]
pub struct BundleInfo {
    pub id: String,
    pub created: String,
    pub tool: String,
    pub arches: Vec<String>,
}

/// A blob and how big it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    pub sha256: String,
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
    pub git_oid: String,
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

/// Everything the store holds, ready to answer requests.
#[derive(Debug, Clone, Default)]
pub struct Index {
    /// Which build of the index this is (answers cached from an older
    /// one are not reused).
    pub generation: u64,
    pub bundles: Vec<BundleInfo>,
    /// By (lower-case `owner/repo`, tag): GitHub names are case-insensitive.
    pub releases: BTreeMap<(String, String), ReleaseEntry>,
    /// By (kind, lower-case `org/name`).
    pub repos: HashMap<(RepoKind, String), HubRepo>,
    /// Every blob named, with its size.
    pub blobs: BTreeMap<String, u64>,
    /// Python environments and interpreters.
    pub pypi: super::index_pypi::PypiIndex,
    /// By lower-case `owner/repo`: the tag `latest` names where a signed
    /// bundle carries the repo ([`super::freshness::signed_latest`]);
    /// other repos' latest is their highest tag.
    pub latest: HashMap<String, String>,
}

/// A number for GitHub's `id` fields that stays the same across restarts
/// and mirrors: the first 6 bytes of a sha256 (below 2^53, so JavaScript
/// clients read it exactly).
pub fn stable_id(parts: &[&str]) -> u64 {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    let d = h.finalize();
    let mut n = 0u64;
    for b in &d[..6] {
        n = (n << 8) | u64::from(*b);
    }
    n.max(1)
}

impl Index {
    /// Builds the index from the manifests held, given in import order
    /// (oldest first), so that a later import's revision names win.
    pub fn build(bundles: &[(String, Manifest)]) -> Self {
        let mut index = Index {
            pypi: super::index_pypi::PypiIndex::build(bundles),
            ..Index::default()
        };
        // (kind, key) -> (id, commit -> (last_modified, files by path), refs)
        type Files = BTreeMap<String, HubFile>;
        struct RepoAcc {
            kind: RepoKind,
            id: String,
            commits: BTreeMap<String, (String, Files)>,
            refs: BTreeMap<String, String>,
            tags: std::collections::BTreeSet<String>,
            /// The commit of the latest import carrying the repo.
            latest: String,
        }
        let mut repos: HashMap<(RepoKind, String), RepoAcc> = HashMap::new();

        for (id, m) in bundles {
            index.bundles.push(BundleInfo {
                id: id.clone(),
                created: m.created.clone(),
                tool: m.tool.clone(),
                arches: m.arches.clone(),
            });
            for (sha, size) in m.blobs() {
                index.blobs.insert(sha, size);
            }
            for r in &m.releases {
                let key = (repo_key(&r.repo), r.tag.clone());
                let entry = index.releases.entry(key).or_insert_with(|| ReleaseEntry {
                    repo: r.repo.clone(),
                    tag: r.tag.clone(),
                    engine: r.engine.clone(),
                    version: r.version.clone(),
                    created: m.created.clone(),
                    id: stable_id(&[&repo_key(&r.repo), &r.tag]),
                    assets: BTreeMap::new(),
                });
                for a in &r.assets {
                    // The first bundle to carry a name keeps it: import
                    // checked both, and a name never changes bytes upstream
                    // without a new tag.
                    entry
                        .assets
                        .entry(a.name.clone())
                        .or_insert_with(|| AssetEntry {
                            name: a.name.clone(),
                            blob: Blob {
                                sha256: a.sha256.clone(),
                                size: a.size,
                            },
                            content_type: a.content_type.clone(),
                            id: stable_id(&[&repo_key(&r.repo), &r.tag, &a.name]),
                        });
                }
            }
            for r in &m.repos {
                let acc = repos
                    .entry((r.kind, repo_key(&r.id)))
                    .or_insert_with(|| RepoAcc {
                        kind: r.kind,
                        id: r.id.clone(),
                        commits: BTreeMap::new(),
                        refs: BTreeMap::new(),
                        tags: Default::default(),
                        latest: String::new(),
                    });
                acc.latest = r.commit.clone();
                let (last, files) = acc
                    .commits
                    .entry(r.commit.clone())
                    .or_insert_with(|| (m.created.clone(), BTreeMap::new()));
                *last = m.created.clone();
                for f in &r.files {
                    files.entry(f.path.clone()).or_insert_with(|| HubFile {
                        path: f.path.clone(),
                        blob: Blob {
                            sha256: f.sha256.clone(),
                            size: f.size,
                        },
                        git_oid: f.git_oid.clone(),
                        lfs: f.lfs,
                    });
                }
                if r.revision != r.commit && r.ref_kind != Some(RefKind::Commit) {
                    acc.refs.insert(r.revision.clone(), r.commit.clone());
                    if r.ref_kind == Some(RefKind::Tag) {
                        acc.tags.insert(r.revision.clone());
                    } else {
                        acc.tags.remove(&r.revision);
                    }
                }
            }
        }

        for (key, acc) in repos {
            let mut snapshots = BTreeMap::new();
            for (commit, (last, files)) in acc.commits {
                snapshots.insert(commit.clone(), snapshot(commit, last, files));
            }
            let default_commit = acc.refs.get("main").cloned().unwrap_or(acc.latest);
            // A repo imported only at tags (or commits) still has a default
            // branch, since llama.cpp's -hf reads only branches: `main`, at
            // the default commit.
            let mut refs = acc.refs;
            if !default_commit.is_empty() && refs.keys().all(|r| acc.tags.contains(r)) {
                refs.insert("main".into(), default_commit.clone());
            }
            index.repos.insert(
                key,
                HubRepo {
                    kind: acc.kind,
                    id: acc.id,
                    snapshots,
                    refs,
                    tags: acc.tags,
                    default_commit,
                },
            );
        }
        index
    }

    /// A release by repo (any case) and tag.
    pub fn release(&self, repo: &str, tag: &str) -> Option<&ReleaseEntry> {
        self.releases.get(&(repo_key(repo), tag.to_string()))
    }

    /// Every release of one repo, newest first (by tag, compared as
    /// numbers where both have digits: b10828 after b6123), except that
    /// the release a signed series makes `latest` comes first.
    pub fn releases_of(&self, repo: &str) -> Vec<&ReleaseEntry> {
        let key = repo_key(repo);
        let mut out: Vec<&ReleaseEntry> = self
            .releases
            .iter()
            .filter(|((r, _), _)| *r == key)
            .map(|(_, e)| e)
            .collect();
        out.sort_by(|a, b| natural_cmp(&b.tag, &a.tag));
        // `latest` first: what the highest signed sequence carries.
        if let Some(at) = self
            .latest
            .get(&key)
            .and_then(|tag| out.iter().position(|r| &r.tag == tag))
        {
            out[..=at].rotate_right(1);
        }
        out
    }

    pub fn repo(&self, kind: RepoKind, id: &str) -> Option<&HubRepo> {
        self.repos.get(&(kind, repo_key(id)))
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
fn snapshot(commit: String, last_modified: String, files: BTreeMap<String, HubFile>) -> Snapshot {
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
    llmgw_shared::git::tree_oid(&items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_commit(id: &str, commit: &str, created: &str) -> Manifest {
        use llmgw_shared::manifest::{DigestSource, HfFile, HfRepo, PublisherDigest};
        let sha = "a".repeat(64);
        let mut m = Manifest::new(vec!["amd64".into()], 0);
        m.created = created.into();
        m.repos.push(HfRepo {
            kind: RepoKind::Model,
            id: id.into(),
            revision: "main".into(),
            ref_kind: None,
            commit: commit.into(),
            patterns: vec![],
            files: vec![HfFile {
                path: "w.bin".into(),
                size: 1,
                sha256: sha.clone(),
                git_oid: "b".repeat(40),
                lfs: true,
                publisher_digests: vec![PublisherDigest {
                    source: DigestSource::HfLfsSha256,
                    value: sha,
                }],
            }],
        });
        m
    }

    #[test]
    fn the_later_import_names_main_whatever_the_dates_say() {
        let future = at_commit("acme/tiny", &"f".repeat(40), "9999-12-31T23:59:59Z");
        let past = at_commit("ACME/Tiny", &"1".repeat(40), "2020-01-01T00:00:00Z");
        let index = Index::build(&[("x".into(), future.clone()), ("y".into(), past.clone())]);
        let repo = index.repo(RepoKind::Model, "Acme/TINY").unwrap();
        assert_eq!(repo.snapshots.len(), 2);
        assert_eq!(repo.refs["main"], "1".repeat(40));
        assert_eq!(repo.default_commit, "1".repeat(40));
        let index = Index::build(&[("y".into(), past), ("x".into(), future)]);
        let repo = index.repo(RepoKind::Model, "acme/tiny").unwrap();
        assert_eq!(repo.default_commit, "f".repeat(40));
        assert_eq!(index.bundles[0].id, "y");
    }

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
                sha256: String::new(),
                size: 0,
            },
            git_oid: oid.into(),
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
