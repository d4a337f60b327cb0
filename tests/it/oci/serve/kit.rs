//! Makes OCI images and a Helm chart artifact the way a registry holds
//! them — random gzipped tar layers, configs whose `diff_ids` match, an
//! amd64 + arm64 index with a BuildKit-style attestation manifest, and an
//! SBOM whose `subject` is the index — and the format 3 bundle that carries
//! them, without the create side.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{HelmChart, Manifest, OciDescriptor, OciImage};
use serde_json::{Value, json};

pub const INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const CONFIG: &str = "application/vnd.oci.image.config.v1+json";
pub const LAYER: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
pub const SBOM: &str = "application/spdx+json";

/// Bytes no other run makes: the process, the time and a counter hashed.
pub fn random_bytes(n: usize) -> Vec<u8> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let seed = format!(
        "{}-{:?}-{}",
        std::process::id(),
        std::time::SystemTime::now(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let mut out = Vec::with_capacity(n + 32);
    let mut h = Sha256::of(seed.as_bytes());
    while out.len() < n {
        out.extend_from_slice(h.as_bytes());
        h = Sha256::of(h.as_bytes());
    }
    out.truncate(n);
    out
}

/// A tar of these files, and the same gzipped.
pub fn tar_gz(files: &[(&str, &[u8])]) -> (Vec<u8>, Vec<u8>) {
    let mut b = tar::Builder::new(Vec::new());
    for (name, data) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_cksum();
        b.append_data(&mut h, name, *data).unwrap();
    }
    let tar = b.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).unwrap();
    (tar, gz.finish().unwrap())
}

/// Blobs and the descriptors naming them, gathered as an image is made.
#[derive(Default)]
pub struct Blobs {
    pub bytes: BTreeMap<String, Vec<u8>>,
}

impl Blobs {
    /// Keeps `bytes` and returns its descriptor (OCI JSON and ours).
    pub fn put(&mut self, bytes: Vec<u8>, media_type: &str) -> (Value, OciDescriptor) {
        let sha = Sha256::of(&bytes);
        let d = OciDescriptor {
            sha256: sha.clone(),
            size: bytes.len() as u64,
            media_type: media_type.into(),
            platform: None,
        };
        let v = json!({"mediaType": media_type, "digest": format!("sha256:{sha}"), "size": bytes.len()});
        self.bytes.insert(sha.to_string(), bytes);
        (v, d)
    }

    /// A JSON document as a blob (compact, as registries store them).
    pub fn put_json(&mut self, v: &Value, media_type: &str) -> (Value, OciDescriptor) {
        self.put(serde_json::to_vec(v).unwrap(), media_type)
    }
}

/// One image as made: its record for the manifest, and its index bytes.
pub struct Made {
    pub image: OciImage,
    pub index_bytes: Vec<u8>,
    /// The linux/amd64 manifest's digest.
    pub amd64: Sha256,
    /// The SBOM whose subject is the index.
    pub sbom: Sha256,
    /// The SBOM as the bundle carries a referrer: an image of its own
    /// (same name, no tag, the SBOM its top digest), since it is outside
    /// the index's tree (the index does not name it; it names the index).
    pub referrer: OciImage,
}

/// A single-platform image manifest with one random layer.
fn platform_manifest(blobs: &mut Blobs, arch: &str) -> (Value, OciDescriptor, Vec<OciDescriptor>) {
    let content = random_bytes(4096);
    let (tar, gz) = tar_gz(&[("hello.txt", &content), ("etc/arch", arch.as_bytes())]);
    let (layer, layer_d) = blobs.put(gz, LAYER);
    let config = json!({
        "architecture": arch, "os": "linux",
        "config": {"Cmd": ["/bin/true"]},
        "rootfs": {"type": "layers", "diff_ids": [format!("sha256:{}", Sha256::of(&tar))]},
    });
    let (config, config_d) = blobs.put_json(&config, CONFIG);
    let m = json!({"schemaVersion": 2, "mediaType": MANIFEST, "config": config, "layers": [layer]});
    let (v, d) = blobs.put_json(&m, MANIFEST);
    (v, d, vec![config_d, layer_d])
}

/// An amd64 + arm64 image with an attestation manifest (BuildKit's
/// `unknown/unknown` child) and an SBOM referrer whose subject is the index.
pub fn image(blobs: &mut Blobs, registry: Option<&str>, repository: &str, tag: &str) -> Made {
    let mut manifests = Vec::new();
    let mut others = Vec::new();
    let mut children = Vec::new();
    let mut amd64 = None;
    for arch in ["amd64", "arm64"] {
        let (mut v, mut d, rest) = platform_manifest(blobs, arch);
        v["platform"] = json!({"architecture": arch, "os": "linux"});
        d.platform = Some(format!("linux/{arch}"));
        if arch == "amd64" {
            amd64 = Some(d.sha256.clone());
        }
        children.push(v);
        manifests.push(d);
        others.extend(rest);
    }
    // The attestation manifest, as BuildKit attaches it.
    let (statement, statement_d) = blobs.put(
        br#"{"_type":"https://in-toto.io/Statement/v0.1","predicateType":"https://spdx.dev/Document"}"#.to_vec(),
        "application/vnd.in-toto+json",
    );
    let (config, config_d) = blobs.put_json(&json!({"architecture": "unknown", "os": "unknown", "rootfs": {"type": "layers", "diff_ids": []}}), CONFIG);
    let att =
        json!({"schemaVersion": 2, "mediaType": MANIFEST, "config": config, "layers": [statement]});
    let (mut att_v, mut att_d) = blobs.put_json(&att, MANIFEST);
    att_v["platform"] = json!({"architecture": "unknown", "os": "unknown"});
    att_v["annotations"] = json!({
        "vnd.docker.reference.type": "attestation-manifest",
        "vnd.docker.reference.digest": format!("sha256:{}", manifests[0].sha256),
    });
    att_d.platform = Some("unknown/unknown".into());
    children.push(att_v);
    manifests.push(att_d);
    others.extend([statement_d, config_d]);
    let index = json!({"schemaVersion": 2, "mediaType": INDEX, "manifests": children});
    let (index_v, index_d) = blobs.put_json(&index, INDEX);
    let index_bytes = blobs.bytes[index_d.sha256.as_str()].clone();
    // An SBOM attached to the index (OCI 1.1 referrer).
    let (empty, empty_d) = blobs.put(b"{}".to_vec(), "application/vnd.oci.empty.v1+json");
    let (doc, doc_d) = blobs.put(random_bytes(100), SBOM);
    let sbom = json!({
        "schemaVersion": 2, "mediaType": MANIFEST, "artifactType": SBOM,
        "config": empty, "layers": [doc], "subject": index_v,
        "annotations": {"org.example.sbom": "yes"},
    });
    let (_, sbom_d) = blobs.put_json(&sbom, MANIFEST);
    let sbom_sha = sbom_d.sha256.clone();
    let referrer = OciImage {
        registry: registry.map(str::to_string),
        repository: repository.into(),
        tag: None,
        digest: sbom_sha.clone(),
        manifests: vec![sbom_d],
        blobs: vec![empty_d, doc_d],
        left_out: vec![],
    };
    manifests.push(index_d.clone());
    let image = OciImage {
        registry: registry.map(str::to_string),
        repository: repository.into(),
        tag: Some(tag.into()),
        digest: index_d.sha256,
        manifests,
        blobs: others,
        left_out: vec![],
    };
    Made {
        image,
        index_bytes,
        amd64: amd64.unwrap(),
        sbom: sbom_sha,
        referrer,
    }
}

/// A packaged chart (`acme-0.1.0.tgz` as `helm package` lays it out) and
/// its OCI artifact as `helm push` makes it, served as `charts/acme`.
pub fn chart(blobs: &mut Blobs, name: &str, version: &str) -> (HelmChart, Vec<u8>) {
    chart_described(blobs, name, version, "a test chart")
}

/// [`chart`] with its own description (two builds of one version differ).
pub fn chart_described(
    blobs: &mut Blobs,
    name: &str,
    version: &str,
    description: &str,
) -> (HelmChart, Vec<u8>) {
    let chart_yaml = format!(
        "apiVersion: v2\nname: {name}\nversion: {version}\nappVersion: \"1.0\"\ndescription: {description}\ntype: application\n"
    );
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  k: {{ .Values.k | quote }}\n";
    let (_, tgz) = tar_gz(&[
        (&format!("{name}/Chart.yaml"), chart_yaml.as_bytes()),
        (&format!("{name}/values.yaml"), b"k: v\n"),
        (&format!("{name}/templates/configmap.yaml"), cm.as_bytes()),
    ]);
    let config = json!({"apiVersion": "v2", "name": name, "version": version, "appVersion": "1.0", "description": description, "type": "application"});
    let (config_v, config_d) = blobs.put_json(&config, "application/vnd.cncf.helm.config.v1+json");
    let (layer_v, layer_d) = blobs.put(
        tgz.clone(),
        "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
    );
    let m = json!({
        "schemaVersion": 2, "mediaType": MANIFEST, "config": config_v, "layers": [layer_v],
        "annotations": {"org.opencontainers.image.title": name, "org.opencontainers.image.version": version},
    });
    let (_, m_d) = blobs.put_json(&m, MANIFEST);
    let artifact = OciImage {
        registry: None,
        repository: format!("charts/{name}"),
        tag: Some(version.into()),
        digest: m_d.sha256.clone(),
        manifests: vec![m_d],
        blobs: vec![config_d, layer_d.clone()],
        left_out: vec![],
    };
    let chart = HelmChart {
        name: name.into(),
        version: version.into(),
        app_version: Some("1.0".into()),
        package: layer_d.sha256,
        artifact,
    };
    (chart, tgz)
}

/// A format 3 manifest carrying these images and charts.
pub fn manifest(images: Vec<OciImage>, charts: Vec<HelmChart>) -> Manifest {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut m = Manifest::new(vec!["amd64".into(), "arm64".into()], now);
    m.images = images;
    m.charts = charts;
    m.format_version = m.needed_format();
    m
}
