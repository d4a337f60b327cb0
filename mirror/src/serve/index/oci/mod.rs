//! The OCI part of the index: every image and chart the held manifests
//! carry, as the registry API and the classic chart repository look them
//! up.
//!
//! Invariants:
//! - A tag changes hands as every other name does: walking the bundles in
//!   index order (import order, a signed series by sequence), a bundle
//!   that names a tag takes it over only where [`Authority::moves`] lets
//!   it (so an unsigned bundle, or one of a series the store does not
//!   follow, adds tags but never moves one a followed series serves, and
//!   a chart's version in the classic repository goes with its tag).
//!   Every held manifest stays servable by digest.
//! - A manifest or blob is served under a name only when a held image of
//!   that (registry, name) lists it: a blob another image carries is not
//!   reachable through this name.
//! - Names, tags and media types from a manifest are checked against the
//!   spec's grammar here; an image that fails is left out (and logged),
//!   never served under a name the grammar would refuse in a URL.
//! - Carried manifest bytes are read (bounded) only here, off the request
//!   path, to learn their `subject` (the referrers, kept by digest between
//!   builds: [`ParsedManifests`]) and a chart's metadata.
//!
//! Beside it: the referrers ([`referrers`]), the documents the mirror
//! makes itself ([`made`]) and the models' OCI profiles ([`models`]).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{HelmChart, OciImage, RepoKind};
use llmgw_shared::shown;
use serde_json::{Map, Value};

pub mod made;
pub mod models;
pub mod referrers;

use crate::serve::index::entries::Blob;
use crate::store::Held;
use crate::store::series::follow::Authority;
use llmgw_shared::manifest::{is_repository as is_name, is_tag, registry_key};
use made::{Made, MadeFrom};
pub use referrers::{MAX_MANIFEST_BYTES, ParsedManifests, Referrer};

/// Largest chart config (Chart.yaml as JSON) read for the classic index.
pub const MAX_CHART_CONFIG_BYTES: u64 = 1 << 20;

/// Helm's config media type: the chart's metadata as JSON.
pub const HELM_CONFIG: &str = "application/vnd.cncf.helm.config.v1+json";

/// The Chart.yaml keys the classic index repeats (Helm's `Metadata`).
const CHART_KEYS: [&str; 17] = [
    "name",
    "home",
    "sources",
    "version",
    "description",
    "keywords",
    "maintainers",
    "icon",
    "apiVersion",
    "condition",
    "tags",
    "appVersion",
    "deprecated",
    "annotations",
    "kubeVersion",
    "dependencies",
    "type",
];

/// Reads a held blob, at most `max` bytes; `None` when it cannot be read
/// (the caller logs nothing more: the reader says why).
pub type ReadBlob<'a> = &'a dyn Fn(&Sha256, u64) -> Option<Vec<u8>>;

/// Every image and chart held.
#[derive(Debug, Clone, Default)]
pub struct OciIndex {
    /// Name -> registry (`None`: an image with no registry) -> repository.
    repos: BTreeMap<String, BTreeMap<Option<String>, OciRepo>>,
    /// Chart name -> version -> chart.
    charts: BTreeMap<String, BTreeMap<String, ChartEntry>>,
    /// `<name>-<version>.tgz` -> (name, version).
    chart_files: BTreeMap<String, (String, String)>,
    /// Repositories made rather than carried (the models' profiles,
    /// [`crate::serve::index::oci::models`]), by name; their names are the
    /// mirror's own, so a carried image of the same name never answers.
    generated: BTreeMap<String, Arc<OciRepo>>,
    /// Each Hub repository's two profiles as they were made, by (kind,
    /// lower-case id): what the next build keeps while the repository is
    /// unchanged ([`crate::serve::index::oci::models::add`]).
    pub profiles: HashMap<(RepoKind, String), Profiles>,
}

/// One Hub repository's two made profiles (ModelPack and image; one with no
/// manifest is kept here but not served), as one build of the index made
/// them.
#[derive(Debug, Clone)]
pub struct Profiles {
    /// The repository's [`HubRepo::version`](crate::serve::index::HubRepo::version) they were made from.
    pub version: [u8; 32],
    /// Whether every tar layer's digest was known and every `config.json`
    /// could be read: profiles made without one are made again at the next
    /// build.
    pub complete: bool,
    pub pack: Arc<OciRepo>,
    pub image: Arc<OciRepo>,
}

/// One repository of one registry, merged over every bundle carrying it.
#[derive(Debug, Clone, Default)]
pub struct OciRepo {
    pub registry: Option<String>,
    pub name: String,
    /// Tag -> the top manifest's digest, as the bundle serving the tag
    /// carries it.
    pub tags: BTreeMap<String, Sha256>,
    /// Tag -> the bundle (manifest sha256) it is served from: who a later
    /// bundle must be able to move it from ([`Authority::moves`]).
    pub tag_bundles: BTreeMap<String, String>,
    /// Every manifest or index held under this name.
    pub manifests: BTreeMap<Sha256, ManifestEntry>,
    /// Every blob (config, layer, and the manifests) a held manifest of
    /// this name lists.
    pub blobs: BTreeMap<Sha256, u64>,
    /// Subject digest -> the held manifests whose `subject` it is.
    pub referrers: BTreeMap<Sha256, Vec<Referrer>>,
    /// The manifests and blobs above that were made, not carried (empty
    /// for a carried image): made again from the index when asked for, or
    /// sent as a tar around a stored blob.
    pub made: BTreeMap<Sha256, Made>,
    /// For a made repository, the Hub repository it is made from.
    pub made_from: Option<Box<MadeFrom>>,
}

/// A manifest or index and what it is.
#[derive(Debug, Clone)]
pub struct ManifestEntry {
    pub blob: Blob,
    /// Borrowed for a made manifest: a thousand revisions' manifests share
    /// four media types.
    pub media_type: Cow<'static, str>,
}

/// One chart version, for the classic repository.
#[derive(Debug, Clone)]
pub struct ChartEntry {
    pub name: String,
    pub version: String,
    pub package: Blob,
    /// Chart.yaml's fields as the chart's config carries them (Helm's keys
    /// only), with `name`, `version` and `appVersion` from the manifest.
    pub metadata: Map<String, Value>,
    /// The `created` of the bundle that carried it last.
    pub created: String,
}

/// What a name (and `ns`) finds.
#[derive(Debug)]
pub enum Lookup<'a> {
    Found(&'a OciRepo),
    /// No registry holds the name.
    Unknown,
    /// Several registries hold it and no `ns` picked one.
    Ambiguous(Vec<String>),
    /// `ns` names a registry that does not hold it; these do.
    NotFrom {
        ns: String,
        held: Vec<String>,
    },
}

/// What adding an image did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Added {
    /// Left out: it fails the grammar (logged).
    Refused,
    /// Held and served by digest; its tag (if any) stays where it was.
    ByDigest,
    /// Held, and its tag now names its top digest.
    TagMoved,
}

/// How a registry is named to people: `(no registry)` for a local image.
pub fn registry_label(r: &Option<String>) -> String {
    r.clone().unwrap_or_else(|| "(no registry)".to_string())
}

/// Whether a media type may go into a header: `type/subtype`, printable.
fn is_media_type(t: &str) -> bool {
    t.len() <= 255
        && t.split_once('/')
            .is_some_and(|(a, b)| !a.is_empty() && !b.is_empty())
        && t.bytes().all(|b| b.is_ascii_graphic())
}

impl OciIndex {
    /// Builds the tables from the manifests in index order (import order,
    /// a signed series by sequence), each tag moving only where
    /// `authority` lets it; `read` gives carried manifests and chart
    /// configs, and `parsed` keeps what earlier builds parsed of them.
    pub fn build(
        bundles: &[Held],
        authority: &Authority,
        read: ReadBlob<'_>,
        parsed: &mut ParsedManifests,
    ) -> Self {
        let mut out = OciIndex::default();
        for Held { id, manifest: m } in bundles {
            for image in &m.images {
                out.add_image(id, image, authority);
            }
            for chart in &m.charts {
                if out.add_image(id, &chart.artifact, authority) == Added::TagMoved {
                    out.add_chart(id, &m.created, chart, read);
                }
            }
        }
        out.find_referrers(read, parsed);
        out
    }

    /// Adds one image (a log line when it cannot be served), and moves its
    /// tag to it where `authority` says the bundle may.
    fn add_image(&mut self, bundle: &str, image: &OciImage, authority: &Authority) -> Added {
        let refuse = |why: &str| {
            tracing::warn!(
                bundle,
                repository = %shown(&image.repository),
                why,
                "image not served"
            );
            Added::Refused
        };
        if !is_name(&image.repository) {
            return refuse("its repository is not an OCI name");
        }
        let registry = match &image.registry {
            None => None,
            Some(r) => match registry_key(r) {
                Some(k) => Some(k),
                None => return refuse("its registry is not a host[:port]"),
            },
        };
        if image.tag.as_deref().is_some_and(|t| !is_tag(t)) {
            return refuse("its tag is not an OCI tag");
        }
        if !image.manifests.iter().any(|d| d.sha256 == image.digest) {
            return refuse("its top digest is not among its manifests");
        }
        if let Some(d) = image.all_blobs().find(|d| !is_media_type(&d.media_type)) {
            tracing::warn!(bundle, blob = %d.sha256, "media type is not type/subtype");
            return refuse("a descriptor's media type is not a media type");
        }
        let repo = self
            .repos
            .entry(image.repository.clone())
            .or_default()
            .entry(registry.clone())
            .or_insert_with(|| OciRepo {
                registry,
                name: image.repository.clone(),
                ..OciRepo::default()
            });
        for d in &image.manifests {
            repo.manifests
                .entry(d.sha256.clone())
                .or_insert_with(|| ManifestEntry {
                    blob: Blob {
                        sha256: d.sha256.clone(),
                        size: d.size,
                    },
                    media_type: d.media_type.clone().into(),
                });
        }
        for d in image.all_blobs() {
            repo.blobs.insert(d.sha256.clone(), d.size);
        }
        let Some(tag) = &image.tag else {
            return Added::ByDigest;
        };
        let holder = repo.tag_bundles.get(tag).map(String::as_str);
        if !authority.moves(holder, bundle) {
            return Added::ByDigest;
        }
        repo.tags.insert(tag.clone(), image.digest.clone());
        repo.tag_bundles.insert(tag.clone(), bundle.to_string());
        Added::TagMoved
    }

    /// Adds a chart version to the classic repository.
    fn add_chart(&mut self, bundle: &str, created: &str, chart: &HelmChart, read: ReadBlob<'_>) {
        let safe = |s: &str| {
            !s.is_empty()
                && s.len() <= 128
                && !s.starts_with(['.', '-'])
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
        };
        if !safe(&chart.name) || !safe(&chart.version) {
            tracing::warn!(bundle, chart = %shown(&chart.name), "chart name or version not served");
            return;
        }
        let Some(size) = chart
            .artifact
            .blobs
            .iter()
            .find(|d| d.sha256 == chart.package)
            .map(|d| d.size)
        else {
            tracing::warn!(bundle, chart = %shown(&chart.name), "chart package not in its artifact");
            return;
        };
        let mut metadata = chart
            .artifact
            .blobs
            .iter()
            .find(|d| d.media_type == HELM_CONFIG && d.size <= MAX_CHART_CONFIG_BYTES)
            .and_then(|d| read(&d.sha256, MAX_CHART_CONFIG_BYTES))
            .and_then(|b| serde_json::from_slice::<Map<String, Value>>(&b).ok())
            .unwrap_or_default();
        metadata.retain(|k, _| CHART_KEYS.contains(&k.as_str()));
        metadata.entry("apiVersion").or_insert_with(|| "v2".into());
        metadata.insert("name".into(), chart.name.clone().into());
        metadata.insert("version".into(), chart.version.clone().into());
        if let Some(a) = &chart.app_version {
            metadata.insert("appVersion".into(), a.clone().into());
        }
        let file = format!("{}-{}.tgz", chart.name, chart.version);
        self.chart_files
            .insert(file, (chart.name.clone(), chart.version.clone()));
        self.charts.entry(chart.name.clone()).or_default().insert(
            chart.version.clone(),
            ChartEntry {
                name: chart.name.clone(),
                version: chart.version.clone(),
                package: Blob {
                    sha256: chart.package.clone(),
                    size,
                },
                metadata,
                created: created.to_string(),
            },
        );
    }

    /// Files each held OCI manifest with a `subject` under it, in each
    /// name that holds it; `parsed` reads each digest once, over builds.
    fn find_referrers(&mut self, read: ReadBlob<'_>, parsed: &mut ParsedManifests) {
        for repo in self.repos.values_mut().flat_map(|r| r.values_mut()) {
            for m in repo.manifests.values() {
                if let Some((subject, r)) = parsed.referrer(&m.blob, &m.media_type, read) {
                    repo.referrers.entry(subject).or_default().push(r);
                }
            }
        }
        parsed.finish_build();
    }

    /// The repository `name` names, with `ns` (containerd's upstream
    /// registry) picking among registries holding it; an image with no
    /// registry answers whatever `ns` says, when no registry of that name
    /// holds the path.
    pub fn lookup(&self, name: &str, ns: Option<&str>) -> Lookup<'_> {
        // A made repository has no registry: it answers whatever `ns`. Its
        // name is the mirror's own, whatever a bundle carried under it.
        if let Some(r) = self.generated.get(name) {
            return Lookup::Found(r);
        }
        let Some(holders) = self.repos.get(name) else {
            return Lookup::Unknown;
        };
        let held = || holders.keys().map(registry_label).collect::<Vec<_>>();
        match ns {
            Some(ns) => {
                let key = registry_key(ns);
                if let Some(r) = key.clone().and_then(|k| holders.get(&Some(k))) {
                    return Lookup::Found(r);
                }
                match holders.get(&None) {
                    Some(r) => Lookup::Found(r),
                    None => Lookup::NotFrom {
                        ns: key.unwrap_or_else(|| ns.to_string()),
                        held: held(),
                    },
                }
            }
            None => match holders.values().collect::<Vec<_>>().as_slice() {
                [one] => Lookup::Found(one),
                _ => Lookup::Ambiguous(held()),
            },
        }
    }

    /// Whether any registry holds `name`, or it was made.
    pub fn holds(&self, name: &str) -> bool {
        self.repos.contains_key(name) || self.generated.contains_key(name)
    }

    /// Every name held or made, in lexical order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        let mut all: Vec<&str> = self
            .repos
            .keys()
            .chain(self.generated.keys())
            .map(String::as_str)
            .collect();
        all.sort_unstable();
        all.dedup();
        all.into_iter()
    }

    /// Adds a made repository (one with a manifest). Its name is reserved
    /// ([`llmgw_shared::manifest::reserved_prefix`]): no manifest naming a
    /// carried image under it validates, and should one be held all the same
    /// the made repository wins ([`Self::lookup`] asks it first).
    fn add_generated(&mut self, repo: Arc<OciRepo>) {
        if repo.manifests.is_empty() {
            return;
        }
        if self.repos.contains_key(&repo.name) {
            tracing::warn!(name = %shown(&repo.name), "a carried image has a name the mirror makes: the model's profile is served under it, the image is not");
        }
        self.generated.insert(repo.name.clone(), repo);
    }

    /// Adds a Hub repository's two made profiles ([`Self::add_generated`]
    /// each), and keeps them for the next build.
    pub fn add_profiles(&mut self, at: (RepoKind, String), profiles: Profiles) {
        self.add_generated(Arc::clone(&profiles.pack));
        self.add_generated(Arc::clone(&profiles.image));
        self.profiles.insert(at, profiles);
    }

    /// The made repository of that name.
    pub fn generated(&self, name: &str) -> Option<&OciRepo> {
        self.generated.get(name).map(|r| &**r)
    }

    /// Every repository held, by name, then registry.
    pub fn repos(&self) -> impl Iterator<Item = &OciRepo> {
        self.repos.values().flat_map(|r| r.values())
    }

    /// Every chart, by name, each version by version.
    pub fn charts(&self) -> &BTreeMap<String, BTreeMap<String, ChartEntry>> {
        &self.charts
    }

    /// The chart a classic repository file name (`acme-0.1.0.tgz`) names.
    pub fn chart_file(&self, file: &str) -> Option<&ChartEntry> {
        let (name, version) = self.chart_files.get(file)?;
        self.charts.get(name)?.get(version)
    }
}

#[cfg(test)]
mod tests;
