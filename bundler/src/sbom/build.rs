//! The SBOM of a manifest: one component per blob the bundle carries (its
//! SHA-256, the purl of what it is, the licence its publisher states), and
//! one per grouping — a Hub repository at its commit
//! (`pkg:huggingface/ORG/REPO@COMMIT`, each revision carried a `revision`
//! property: one commit under two revisions is one component), a release (`pkg:github/OWNER/REPO@TAG`),
//! a Python environment, an image (`pkg:oci/NAME@sha256:…`) or chart —
//! whose `dependencies` entry lists its blobs.
//!
//! Invariant: every blob the manifest names but the SBOM itself is exactly
//! one component (`bom-ref` `blob:<sha256>`), described by the first place
//! that names it in manifest order, every place listed as an `llmgw:place`
//! property; the output is a function of the manifest (its `created` and
//! evidence excepted) and the wheels' metadata, nothing else.

use std::collections::BTreeMap;

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{Manifest, OciImage, RepoEvidence, RepoKind, Signatures};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use super::cdx::{
    BOM_FORMAT, Bom, Component, Dependency, Hash, Licence, LicenceName, Metadata, Property,
    SPEC_VERSION, Tools,
};

/// What purl leaves unencoded in a segment (its spec: unreserved characters).
const PURL: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'.')
    .remove(b'-')
    .remove(b'_')
    .remove(b'~');

/// The blobs' components, keyed by sha256, and the groupings in order.
struct Builder<'a> {
    blobs: BTreeMap<Sha256, Component>,
    groups: Vec<(Component, Vec<String>)>,
    wheel_licence: &'a dyn Fn(&Sha256) -> Option<Licence>,
}

/// The SBOM of `manifest` (whose `evidence.repos` gives the Hub's licence
/// tags); `wheel_licence` reads a wheel's licence from the `.metadata` blob
/// of that sha256.
pub fn bom(
    manifest: &Manifest,
    (repos, signatures): (&[RepoEvidence], Option<&Signatures>),
    wheel_licence: &dyn Fn(&Sha256) -> Option<Licence>,
) -> Bom {
    let mut b = Builder {
        blobs: BTreeMap::new(),
        groups: Vec::new(),
        wheel_licence,
    };
    b.releases(manifest);
    b.repos(manifest, repos);
    b.envs(manifest);
    b.extras(manifest);
    for image in &manifest.images {
        b.image(image, "container", image_label(image));
    }
    for chart in &manifest.charts {
        let label = format!("chart {}:{}", chart.name, chart.version);
        b.image(&chart.artifact, "application", label);
    }
    if let Some(delta) = &manifest.delta {
        for r in &delta.repairs {
            b.blob(
                &r.sha256,
                "file",
                "repair blob".into(),
                None,
                "repair blob".into(),
            );
        }
    }
    if let Some(s) = signatures {
        b.signers(s);
    }
    let mut components: Vec<Component> = Vec::new();
    let mut dependencies = Vec::new();
    for (g, refs) in b.groups {
        let mut refs = refs;
        refs.sort();
        refs.dedup();
        if let Some(r) = &g.bom_ref {
            dependencies.push(Dependency {
                reference: r.clone(),
                depends_on: refs,
            });
        }
        components.push(g);
    }
    components.extend(b.blobs.into_values());
    Bom {
        bom_format: BOM_FORMAT,
        spec_version: SPEC_VERSION,
        serial_number: serial_number(manifest),
        version: 1,
        metadata: Metadata {
            tools: Tools {
                components: vec![Component {
                    kind: "application",
                    bom_ref: None,
                    name: "llmgw".into(),
                    version: Some(env!("CARGO_PKG_VERSION").into()),
                    description: None,
                    hashes: Vec::new(),
                    licenses: Vec::new(),
                    purl: None,
                    properties: Vec::new(),
                }],
            },
            properties: vec![Property::new("arches", manifest.arches.join(","))],
        },
        components,
        dependencies,
    }
}

impl Builder<'_> {
    /// Adds a place of blob `sha`: the first place describes the component.
    fn blob(
        &mut self,
        sha: &Sha256,
        kind: &'static str,
        name: String,
        purl: Option<String>,
        place: String,
    ) -> String {
        let bom_ref = format!("blob:{sha}");
        let c = self.blobs.entry(sha.clone()).or_insert_with(|| Component {
            kind,
            bom_ref: Some(bom_ref.clone()),
            name,
            version: None,
            description: None,
            hashes: vec![Hash::sha256(sha.as_str())],
            licenses: Vec::new(),
            purl,
            properties: Vec::new(),
        });
        // A place named twice (one commit under two revisions) is one.
        let place = Property::new("place", place);
        if !c
            .properties
            .iter()
            .any(|p| p.name == place.name && p.value == place.value)
        {
            c.properties.push(place);
        }
        bom_ref
    }

    /// Each runtime extra, a `data` file at its upstream URL
    /// (`pkg:generic`, the URL as `download_url`).
    fn extras(&mut self, m: &Manifest) {
        for e in &m.extras {
            let url = llmgw_shared::recipe::upstream_url(&e.host, &e.path);
            let name = e.path.rsplit('/').next().unwrap_or(&e.path).to_string();
            let purl = format!("pkg:generic/{}?download_url={}", enc(&name), enc(&url));
            let place = format!(
                "runtime extra {}/{} of {}",
                e.host,
                e.path,
                e.engines.join(", ")
            );
            self.blob(&e.sha256, "data", name, Some(purl), place);
        }
    }

    /// Each signed artifact's verified signer (`signer`, `signer_issuer`,
    /// `signed_at`, and for a PEP 740 attestation `signer_policy`: the
    /// table, the site, or the publisher PyPI names); each artifact let in
    /// unsigned says so and who should have signed.
    fn signers(&mut self, s: &Signatures) {
        for sig in &s.signed {
            if let Some(c) = self.blobs.get_mut(&sig.artifact) {
                c.properties
                    .push(Property::new("signer", sig.identity.clone()));
                c.properties
                    .push(Property::new("signer_issuer", sig.issuer.clone()));
                c.properties
                    .push(Property::new("signed_at", sig.signed_at.clone()));
                if let Some(by) = sig.admitted_by {
                    c.properties
                        .push(Property::new("signer_policy", by.to_string()));
                }
            }
        }
        for u in &s.unsigned {
            if let Some(c) = self.blobs.get_mut(&u.artifact) {
                c.properties.push(Property::new(
                    "signer",
                    format!(
                        "none (expected {}; allowed by {})",
                        u.expected, u.allowed_by
                    ),
                ));
            }
        }
    }

    fn group(&mut self, c: Component, refs: Vec<String>) {
        self.groups.push((c, refs));
    }

    fn releases(&mut self, m: &Manifest) {
        for r in &m.releases {
            let base = format!("pkg:github/{}@{}", purl_path(r.repo.as_str()), enc(&r.tag));
            let what = format!("release {}@{}", r.repo, r.tag);
            let refs = r
                .assets
                .iter()
                .map(|a| {
                    let purl = format!("{base}#{}", purl_path(&a.name));
                    self.blob(
                        &a.sha256,
                        "file",
                        a.name.clone(),
                        Some(purl),
                        format!("{what} {}", a.name),
                    )
                })
                .collect();
            let mut g = group(
                "application",
                format!("ref:{what}"),
                r.repo.to_string(),
                Some(r.tag.clone()),
                Some(base),
            );
            g.properties.push(Property::new("engine", r.engine.clone()));
            // GitHub's release API does not state the repository's licence.
            g.properties
                .push(Property::new("license", "not stated by the release source"));
            self.group(g, refs);
        }
    }

    fn repos(&mut self, m: &Manifest, evidence: &[RepoEvidence]) {
        for r in &m.repos {
            let base = format!("pkg:huggingface/{}@{}", purl_path(r.id.as_str()), r.commit);
            let kind = r.kind.singular();
            let what = format!("{kind} {}@{}", r.id, r.commit);
            let refs: Vec<String> = r
                .files
                .iter()
                .map(|f| {
                    let purl = format!("{base}#{}", purl_path(&f.path));
                    self.blob(
                        &f.sha256,
                        "file",
                        f.path.clone(),
                        Some(purl),
                        format!("{what} {}", f.path),
                    )
                })
                .collect();
            // One commit carried under several revisions is one component,
            // each revision a property of it.
            let bom_ref = format!("ref:{what}");
            if let Some((g, known)) = self
                .groups
                .iter_mut()
                .find(|(g, _)| g.bom_ref.as_ref() == Some(&bom_ref))
            {
                g.properties
                    .push(Property::new("revision", r.revision.clone()));
                known.extend(refs);
                continue;
            }
            let ctype = match r.kind {
                RepoKind::Model => "machine-learning-model",
                RepoKind::Dataset => "data",
                RepoKind::Kernel => "library",
            };
            let mut g = group(
                ctype,
                bom_ref,
                r.id.to_string(),
                Some(r.commit.clone()),
                Some(base),
            );
            g.properties
                .push(Property::new("revision", r.revision.clone()));
            let e = evidence
                .iter()
                .find(|e| e.kind == r.kind && e.id == r.id && e.commit == r.commit);
            if let Some(l) = e.and_then(|e| e.license.clone()) {
                g.licenses.push(Licence::Named {
                    license: LicenceName { name: l },
                });
            }
            self.group(g, refs);
        }
    }

    fn envs(&mut self, m: &Manifest) {
        for env in &m.python_envs {
            let what = format!("environment {}", env.name);
            // A site's lock under its own name (`uv.lock`), with the
            // project file `uv sync` reads beside it.
            let site = env.site_lock.as_ref();
            let lock_name = site.map_or("pylock.toml", |s| s.file_name.as_str());
            let mut refs = vec![self.blob(
                &env.lock.sha256,
                "file",
                lock_name.into(),
                None,
                format!("{what} lock"),
            )];
            if let Some(project) = site.and_then(|s| s.project.as_ref()) {
                refs.push(self.blob(
                    &project.sha256,
                    "file",
                    "pyproject.toml".into(),
                    None,
                    format!("{what} pyproject.toml"),
                ));
            }
            for f in &env.files {
                let purl = format!(
                    "pkg:pypi/{}@{}?file_name={}",
                    enc(&f.project),
                    enc(&f.version),
                    enc(&f.filename)
                );
                let r = self.blob(
                    &f.sha256,
                    "library",
                    f.project.clone(),
                    Some(purl),
                    format!("{what} {}", f.filename),
                );
                if let Some(c) = self.blobs.get_mut(&f.sha256)
                    && c.version.is_none()
                {
                    c.version = Some(f.version.clone());
                    c.properties
                        .push(Property::new("file_name", f.filename.clone()));
                    if let Some(l) = f
                        .metadata
                        .as_ref()
                        .and_then(|md| (self.wheel_licence)(&md.sha256))
                    {
                        c.licenses.push(l);
                    }
                }
                refs.push(r);
                if let Some(md) = &f.metadata {
                    let name = format!("{}.metadata", f.filename);
                    refs.push(self.blob(
                        &md.sha256,
                        "file",
                        name.clone(),
                        None,
                        format!("{what} {name}"),
                    ));
                }
            }
            let mut g = group(
                "platform",
                format!("ref:{what}"),
                env.name.clone(),
                None,
                None,
            );
            g.properties
                .push(Property::new("python", env.python.clone()));
            g.properties
                .push(Property::new("platform", env.platform.clone()));
            // What the operator changed of the engine's resolution: each
            // `--override` and `--constraint` as given.
            for o in &env.overrides {
                g.properties.push(Property::new("override", o.clone()));
            }
            for c in &env.constraints {
                g.properties.push(Property::new("constraint", c.clone()));
            }
            if let Some(i) = &env.interpreter {
                g.properties.push(Property::new(
                    "interpreter",
                    format!("{}@{} {}", i.repo, i.tag, i.name),
                ));
            }
            self.group(g, refs);
        }
    }

    fn image(&mut self, image: &OciImage, kind: &'static str, label: String) {
        let name = image
            .repository
            .rsplit('/')
            .next()
            .unwrap_or(&image.repository);
        let mut purl = format!("pkg:oci/{}@sha256%3A{}", enc(name), image.digest);
        let mut quals = Vec::new();
        let url = match &image.registry {
            Some(r) => format!("{r}/{}", image.repository),
            None => image.repository.clone(),
        };
        quals.push(format!("repository_url={}", enc(&url)));
        if let Some(t) = &image.tag {
            quals.push(format!("tag={}", enc(t)));
        }
        purl.push('?');
        purl.push_str(&quals.join("&"));
        let refs = image
            .all_blobs()
            .map(|d| {
                let what = match &d.platform {
                    Some(p) => format!("{} ({p})", d.media_type),
                    None => d.media_type.clone(),
                };
                self.blob(
                    &d.sha256,
                    "file",
                    what.clone(),
                    None,
                    format!("{label} {what}"),
                )
            })
            .collect();
        let g = group(
            kind,
            format!("ref:{label}"),
            image.repository.clone(),
            Some(format!("sha256:{}", image.digest)),
            Some(purl),
        );
        self.group(g, refs);
    }
}

fn group(
    kind: &'static str,
    bom_ref: String,
    name: String,
    version: Option<String>,
    purl: Option<String>,
) -> Component {
    Component {
        kind,
        bom_ref: Some(bom_ref),
        name,
        version,
        description: None,
        hashes: Vec::new(),
        licenses: Vec::new(),
        purl,
        properties: Vec::new(),
    }
}

fn image_label(image: &OciImage) -> String {
    let reg = image
        .registry
        .as_deref()
        .map(|r| format!("{r}/"))
        .unwrap_or_default();
    let tag = image
        .tag
        .as_deref()
        .map(|t| format!(":{t}"))
        .unwrap_or_default();
    format!(
        "image {reg}{}{tag}@sha256:{}",
        image.repository, image.digest
    )
}

/// One purl segment, percent-encoded.
fn enc(s: &str) -> String {
    utf8_percent_encode(s, PURL).to_string()
}

/// A `/`-separated purl path (namespace/name, or a subpath), each segment encoded.
fn purl_path(s: &str) -> String {
    s.split('/').map(enc).collect::<Vec<_>>().join("/")
}

/// A name-based UUID (version 5's layout, from SHA-256 rather than SHA-1)
/// of the manifest without its time and evidence: the same content, the
/// same serial number.
fn serial_number(m: &Manifest) -> String {
    let mut m = m.clone();
    m.created = String::new();
    m.evidence = None;
    let h = Sha256::of(&m.to_canonical_json());
    let hex = h.as_str();
    let mut b: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap_or(0))
        .collect();
    b[6] = (b[6] & 0x0f) | 0x50;
    b[8] = (b[8] & 0x3f) | 0x80;
    let x: String = b.iter().map(|v| format!("{v:02x}")).collect();
    format!(
        "urn:uuid:{}-{}-{}-{}-{}",
        &x[0..8],
        &x[8..12],
        &x[12..16],
        &x[16..20],
        &x[20..32]
    )
}
