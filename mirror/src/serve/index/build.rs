//! [`Index::build`]: the tables made from the held manifests, in one pass
//! over the bundles in index order. Each part of a manifest is added by a
//! phase of its own — the bundle's line, its runtime extras, its releases,
//! its Hub repositories — and each repository's snapshots are made once
//! every bundle is read, from manifests read whole: a rebuild is given
//! most bundles as heads (without their Hub file lists, [`crate::serve::index::hub::heads`])
//! and reads again only the bundles carrying a repository it builds again.
//!
//! Invariant: a name (a release tag's asset list, a branch, a tag, what a
//! repository's `main` and latest import are) changes hands only where
//! [`Authority::moves`] says so, and what a name lists is the first
//! bundle's to carry it at the standing that holds it: a later bundle of
//! the same standing adds names, never changes the bytes a name serves.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use llmgw_shared::BundleId;
use llmgw_shared::manifest::{HfRepo, Manifest, RefKind, Release, RepoKind};
use llmgw_shared::repo_key;
use sha2::Digest;
use sha2::Sha256;

use super::{AssetEntry, Blob, BundleInfo, Index, ReleaseEntry, stable_id};
use crate::serve::index::hub::heads::Heads;
use crate::serve::index::hub::snapshot::{self, FilePool, HubRepo};
use crate::store::series::follow::Authority;
use crate::store::{Held, StoreError};

/// Manifests given whole, their Hub file lists in them: what
/// [`Index::build`] takes, and tests give.
pub struct Whole;

/// A held bundle a build needed whole again and could not read: the build
/// is made again without it, as a bundle never read is left out.
#[derive(Debug)]
pub struct Unreadable {
    /// The bundle.
    pub id: BundleId,
    /// Why its manifest could not be read.
    pub error: Box<StoreError>,
}

/// A commit's files: path → number in the repository's pool.
type Files<'m> = BTreeMap<&'m str, u32>;

/// A file as the manifests say it, borrowed from them.
type FileKey<'m> = (
    &'m str,
    &'m llmgw_shared::Sha256,
    &'m llmgw_shared::GitOid,
    bool,
);

/// One Hub repository as the bundles read so far carry it: which bundles,
/// and the names they move. Its files are pooled only once every bundle is
/// read and its version says the last index's part cannot be kept
/// ([`Settled::make`]).
struct RepoAcc<'m> {
    kind: RepoKind,
    id: String,
    /// Each bundle carrying it, in index order.
    carriers: Vec<Carrier<'m>>,
    refs: BTreeMap<String, String>,
    tags: std::collections::BTreeSet<String>,
    /// The commit of the latest import carrying the repo.
    latest: String,
    /// The bundle each ref, and `latest` (`None`), is served from now.
    holders: HashMap<Option<String>, String>,
    /// The bundles carrying the repo, in index order.
    carried_by: Sha256,
}

/// One bundle's copy of a repository: where it is among the bundles and in
/// the bundle's manifest (to find it in the manifest read whole again),
/// what the manifest given says of it, and the bundle's `created`.
#[derive(Clone, Copy)]
struct Carrier<'m> {
    bundle: usize,
    repo: usize,
    given: &'m HfRepo,
    created: &'m str,
}

/// A repository once every bundle is read: its names and version settled,
/// its snapshots still to make if the index served now has no part of the
/// same version.
struct Settled<'m> {
    kind: RepoKind,
    id: String,
    carriers: Vec<Carrier<'m>>,
    refs: BTreeMap<String, String>,
    tags: BTreeSet<String>,
    default_commit: String,
    version: [u8; 32],
}

/// The index being built, and what the build keeps only while it runs.
struct Builder<'m> {
    index: Index,
    authority: &'m Authority,
    /// The index served now, whose repositories are kept where their
    /// version is unchanged.
    old: Option<&'m Index>,
    /// The bundle each release tag's asset list is served from now.
    release_holders: HashMap<(String, String), &'m str>,
    repos: HashMap<(RepoKind, String), RepoAcc<'m>>,
}

impl Index {
    /// Builds the index from the manifests held, given in index order
    /// (oldest import first, a signed series by sequence), so that a later
    /// bundle's revision names win where `authority` lets it move them.
    pub fn build(bundles: &[Held], authority: &Authority) -> Self {
        match Self::build_from(bundles, authority, None, &Whole) {
            Ok(index) => index,
            Err(e) => unreachable!("manifests given whole are never read again: {e:?}"),
        }
    }

    /// [`Index::build`], keeping from `old` (the index served now) every
    /// Hub repository whose [`HubRepo::version`] is unchanged: the same
    /// `Arc`, so a rebuild allocates only the repositories an import
    /// changed, and the old and new index share the rest (issue 35: no
    /// doubling during a rebuild). Equal versions mean equal parts: the
    /// version stands for the bundles carrying the repository, in order,
    /// and the names they serve ([`repo_version`]).
    ///
    /// `bundles` may be heads ([`crate::serve::index::hub::heads`]): a repository built again
    /// is made from its carriers' manifests read whole through `heads`, and
    /// each bundle's bytes are asked of it. A bundle that cannot be read
    /// again fails the build, naming it.
    pub fn build_from(
        bundles: &[Held],
        authority: &Authority,
        old: Option<&Index>,
        heads: &dyn Heads,
    ) -> Result<Self, Unreadable> {
        let mut b = Builder {
            index: Index {
                pypi: super::pypi::PypiIndex::build(bundles, authority),
                ..Index::default()
            },
            authority,
            old,
            release_holders: HashMap::new(),
            repos: HashMap::new(),
        };
        for (at, held) in bundles.iter().enumerate() {
            let Held { id, manifest: m } = held;
            b.bundle_line(id, m, heads.bytes(held));
            b.extras(m);
            for r in &m.releases {
                b.release(id, m, r);
            }
            for (n, r) in m.repos.iter().enumerate() {
                let carrier = Carrier {
                    bundle: at,
                    repo: n,
                    given: r,
                    created: &m.created,
                };
                b.repo(id, carrier);
            }
        }
        let mut index = b.finish(bundles, heads)?;
        (index.blob_count, index.blob_bytes) = super::blob_count::count_blobs(&index, bundles);
        Ok(index)
    }
}

impl<'m> Builder<'m> {
    /// The bundle's line in `/-/bundles` and on the front page.
    fn bundle_line(&mut self, id: &BundleId, m: &Manifest, bytes: u64) {
        self.index.bundles.push(BundleInfo {
            id: id.clone(),
            created: m.created.clone(),
            tool: m.tool.clone(),
            arches: m.arches.clone(),
            channel: m.channel.clone(),
            sequence: m.sequence,
            expires: m.expires.clone(),
            bytes,
            sbom: m.evidence.as_ref().map(|e| Blob {
                sha256: e.sbom.sha256.clone(),
                size: e.sbom.size,
            }),
            signatures: m
                .evidence
                .as_ref()
                .and_then(|e| e.signatures.clone())
                .map(Box::new),
        });
    }

    /// Runtime extras: the first bundle to carry one keeps it (the recipe
    /// table pins its bytes, so all agree); and those left out as gaps.
    fn extras(&mut self, m: &Manifest) {
        for e in &m.extras {
            self.index
                .extras
                .entry((e.host.clone(), e.path.clone()))
                .or_insert_with(|| {
                    let blob = Blob {
                        sha256: e.sha256.clone(),
                        size: e.size,
                    };
                    (blob, e.engines.clone())
                });
        }
        for g in m.gaps.iter().filter(|g| g.is_runtime_extra()) {
            self.index
                .extras_left_out
                .entry(g.what.clone())
                .or_insert_with(|| g.reason.clone());
        }
    }

    /// A release tag's assets, where bundle `id` may move the tag.
    fn release(&mut self, id: &'m str, m: &Manifest, r: &Release) {
        let key = (repo_key(&r.repo), r.tag.clone());
        let holder = self.release_holders.get(&key).copied();
        if !self.authority.moves(holder, id) {
            return;
        }
        if holder.is_some_and(|h| self.authority.standing(h) < self.authority.standing(id)) {
            // Taken over: the tag lists what the new holder's standing
            // carries, nothing of the bundles below it.
            self.index.releases.remove(&key);
        }
        self.release_holders.insert(key.clone(), id);
        let entry = self
            .index
            .releases
            .entry(key)
            .or_insert_with(|| ReleaseEntry {
                repo: r.repo.to_string(),
                tag: r.tag.clone(),
                engine: r.engine.clone(),
                version: r.version.clone(),
                created: m.created.clone(),
                id: stable_id(&[&repo_key(&r.repo), &r.tag]),
                assets: BTreeMap::new(),
            });
        for a in &r.assets {
            // The first bundle to carry a name keeps it: import checked
            // both, and a name never changes bytes upstream without a new
            // tag.
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

    /// A Hub repository at one commit: its files pooled, the commit's time,
    /// and the revision it was carried as, where bundle `id` may move it.
    fn repo(&mut self, id: &str, carrier: Carrier<'m>) {
        let r = carrier.given;
        let acc = self
            .repos
            .entry((r.kind, repo_key(&r.id)))
            .or_insert_with(|| RepoAcc {
                kind: r.kind,
                id: r.id.to_string(),
                carriers: Vec::new(),
                refs: BTreeMap::new(),
                tags: Default::default(),
                latest: String::new(),
                holders: HashMap::new(),
                carried_by: Sha256::new(),
            });
        acc.carried_by.update(id.as_bytes());
        acc.carried_by.update([0]);
        if self
            .authority
            .moves(acc.holders.get(&None).map(String::as_str), id)
        {
            acc.latest = r.commit.clone();
            acc.holders.insert(None, id.to_string());
        }
        acc.carriers.push(carrier);
        let rev = Some(r.revision.clone());
        if r.revision != r.commit
            && r.ref_kind != Some(RefKind::Commit)
            && self
                .authority
                .moves(acc.holders.get(&rev).map(String::as_str), id)
        {
            acc.holders.insert(rev, id.to_string());
            acc.refs.insert(r.revision.clone(), r.commit.clone());
            if r.ref_kind == Some(RefKind::Tag) {
                acc.tags.insert(r.revision.clone());
            } else {
                acc.tags.remove(&r.revision);
            }
        }
    }

    /// Every repository's part: the index served now lends each one whose
    /// version is unchanged; the rest are made from their carriers read
    /// whole, each bundle read at most once.
    fn finish(mut self, bundles: &'m [Held], heads: &dyn Heads) -> Result<Index, Unreadable> {
        let mut to_make = Vec::new();
        let mut wanted = BTreeSet::new();
        for (key, acc) in self.repos {
            let settled = acc.settle();
            let old = self.old.and_then(|o| o.repos.get(&key));
            match old.filter(|o| o.version == settled.version) {
                Some(old) => {
                    self.index.repos.insert(key, Arc::clone(old));
                }
                None => {
                    wanted.extend(settled.carriers.iter().map(|c| c.bundle));
                    to_make.push((key, settled));
                }
            }
        }
        let mut whole: HashMap<usize, Manifest> = HashMap::new();
        for at in wanted {
            let id = &bundles[at].id;
            if let Some(read) = heads.whole(id) {
                let m = read.map_err(|error| Unreadable {
                    id: id.clone(),
                    error: Box::new(error),
                })?;
                whole.insert(at, m);
            }
        }
        for (key, settled) in to_make {
            // The same bytes (a read checks them against the id), so the
            // same repository at the same place in the manifest.
            let files = |c: &Carrier<'m>| -> Option<&HfRepo> {
                let m = whole.get(&c.bundle)?;
                m.repos.get(c.repo).filter(|r| r.commit == c.given.commit)
            };
            let carriers: Vec<(&HfRepo, &str)> = settled
                .carriers
                .iter()
                .map(|c| (files(c).unwrap_or(c.given), c.created))
                .collect();
            let part = settled.make(&carriers);
            self.index.repos.insert(key, part);
        }
        Ok(self.index)
    }
}

impl<'m> RepoAcc<'m> {
    /// The repository's names and version, once every bundle is read.
    fn settle(self) -> Settled<'m> {
        let default_commit = self.refs.get("main").cloned().unwrap_or(self.latest);
        // A repo imported only at tags (or commits) still has a default
        // branch, since llama.cpp's -hf reads only branches: `main`, at the
        // default commit.
        let mut refs = self.refs;
        if !default_commit.is_empty() && refs.keys().all(|r| self.tags.contains(r)) {
            refs.insert("main".into(), default_commit.clone());
        }
        let version = repo_version(
            self.carried_by,
            &self.id,
            &refs,
            &self.tags,
            &default_commit,
        );
        Settled {
            kind: self.kind,
            id: self.id,
            carriers: self.carriers,
            refs,
            tags: self.tags,
            default_commit,
            version,
        }
    }
}

impl Settled<'_> {
    /// The repository as served, its snapshots made from `carriers`: what
    /// each bundle carrying it carries (read whole), with its `created`.
    fn make(self, carriers: &[(&HfRepo, &str)]) -> Arc<HubRepo> {
        Arc::new(HubRepo {
            kind: self.kind,
            snapshots: snapshots(carriers),
            id: self.id,
            refs: self.refs,
            tags: self.tags,
            default_commit: self.default_commit,
            version: self.version,
            ahead: Default::default(),
            trusted_publisher: carriers
                .iter()
                .rev()
                .find_map(|(r, _)| r.kernel.as_ref())
                .is_some_and(|k| k.trusted_publisher),
        })
    }
}

/// Every commit's snapshot, from what each bundle carrying the repository
/// carries (in index order): each distinct file pooled once; a path a
/// commit lists already keeps its first bundle's file; a commit's time is
/// the last bundle's to carry it.
fn snapshots(carriers: &[(&HfRepo, &str)]) -> BTreeMap<String, snapshot::Snapshot> {
    let mut pool = FilePool::default();
    let mut numbers: HashMap<FileKey<'_>, u32> = HashMap::new();
    // commit → (last modified, files by path).
    let mut commits: BTreeMap<&str, (&str, Files<'_>)> = BTreeMap::new();
    for &(r, created) in carriers {
        let (last, files) = commits
            .entry(r.commit.as_str())
            .or_insert_with(|| (created, BTreeMap::new()));
        *last = created;
        for f in &r.files {
            if files.contains_key(f.path.as_str()) {
                continue;
            }
            let key = (f.path.as_str(), &f.sha256, &f.git_oid, f.lfs);
            let n = *numbers.entry(key).or_insert_with(|| {
                let blob = Blob {
                    sha256: f.sha256.clone(),
                    size: f.size,
                };
                pool.push(&f.path, blob, f.git_oid.clone(), f.lfs)
            });
            files.insert(f.path.as_str(), n);
        }
    }
    drop(numbers);
    pool.shrink();
    let pool = Arc::new(pool);
    commits
        .into_iter()
        .map(|(commit, (last, files))| {
            let snap = snapshot::build(commit.to_string(), last.to_string(), &files, &pool);
            (commit.to_string(), snap)
        })
        .collect()
}

/// A repository's [`HubRepo::version`]. Its snapshots (which files each
/// commit lists, the first bundle carrying a path giving it; each commit's
/// time, from the last bundle carrying it) are a function of the bundles
/// that carry it, in index order, whose ids are their manifests' sha256: so
/// `carried_by` stands for them. Which commit each name serves also depends
/// on the store's policy and signatures (`Authority`), so the names are
/// hashed as they came out. Every Hub answer about the repository is built
/// from these alone (`hub/shapes.rs`).
fn repo_version(
    mut carried_by: Sha256,
    id: &str,
    refs: &BTreeMap<String, String>,
    tags: &std::collections::BTreeSet<String>,
    default_commit: &str,
) -> [u8; 32] {
    let mut field = |s: &str| {
        carried_by.update(s.as_bytes());
        carried_by.update([0]);
    };
    field(id);
    field(default_commit);
    for (name, commit) in refs {
        field(name);
        field(commit);
    }
    field("\u{1}tags");
    for t in tags {
        field(t);
    }
    carried_by.finalize().into()
}
