//! The JSON documents of the two model profiles: the ModelPack artifact's
//! config and manifest (`modelpack/model-spec`), and the mountable image's
//! per-platform configs, manifests and index.
//!
//! Invariant: each document is a function of the repository id, the
//! commit and the layers alone (no clock, no bundle date), written with
//! its keys in a fixed order and no whitespace, so one commit has one
//! digest on every mirror whatever names point at it.

use llmgw_shared::Sha256;
use llmgw_shared::manifest::RepoKind;
use serde_json::{Value, json};

/// `artifactType` of a ModelPack manifest.
pub const MODEL_ARTIFACT: &str = "application/vnd.cncf.model.manifest.v1+json";
pub use crate::serve::index::oci::made::{MODEL_CONFIG, OCI_CONFIG, OCI_INDEX, OCI_MANIFEST};
/// The layer annotation ModelPack names a file's path with.
pub const FILEPATH: &str = "org.cncf.model.filepath";
/// The OCI annotation a file's name goes in (ORAS writes a pulled layer
/// under it).
pub const TITLE: &str = "org.opencontainers.image.title";

/// The platforms the mountable image is offered for: a model's files are
/// the same on every node, but containerd unpacks an image only for its
/// own platform, so each gets a manifest (configs differ in
/// `architecture` only; the layers are shared).
pub const PLATFORMS: [&str; 2] = ["amd64", "arm64"];

/// A layer as a manifest lists it.
#[derive(Debug, Clone)]
pub struct Layer {
    pub media_type: &'static str,
    pub digest: Sha256,
    pub size: u64,
    /// The file's path in the repository.
    pub path: String,
}

impl Layer {
    /// The layer as a manifest lists it: its media type, digest and size.
    fn descriptor(&self) -> Value {
        json!({
            "mediaType": self.media_type,
            "digest": format!("sha256:{}", self.digest),
            "size": self.size,
        })
    }
}

/// A config's diff ids: the layers are the files themselves, stored
/// uncompressed, so each layer's id is its digest.
fn diff_ids(layers: &[Layer]) -> Vec<String> {
    layers
        .iter()
        .map(|l| format!("sha256:{}", l.digest))
        .collect()
}

/// What the Hub says of the repository at one commit.
pub struct Source<'a> {
    pub kind: RepoKind,
    /// As the manifest spells it (`acme/Tiny`).
    pub id: &'a str,
    pub commit: &'a str,
    /// From `config.json`'s `architectures[0]` (or `model_type`), when held.
    pub architecture: Option<String>,
}

impl Source<'_> {
    /// The repository's page on the Hub.
    pub fn url(&self) -> String {
        format!(
            "https://huggingface.co/{}{}",
            self.kind.url_prefix(),
            self.id
        )
    }

    fn annotations(&self) -> Value {
        json!({
            "org.opencontainers.image.source": self.url(),
            "org.opencontainers.image.revision": self.commit,
            "org.opencontainers.image.title": self.id,
        })
    }
}

/// The ModelPack config (its schema: `config-schema.json` of the spec).
pub fn modelpack_config(src: &Source<'_>, layers: &[Layer]) -> Vec<u8> {
    let mut config = serde_json::Map::new();
    if let Some(a) = &src.architecture {
        config.insert("architecture".into(), a.clone().into());
    }
    if let Some(f) = format_of(layers) {
        config.insert("format".into(), f.into());
    }
    to_bytes(&json!({
        "descriptor": {
            "name": src.id,
            "sourceURL": src.url(),
            "revision": src.commit,
        },
        "config": config,
        "modelfs": {"type": "layers", "diffIds": diff_ids(layers)},
    }))
}

/// The ModelPack manifest: one raw layer per file, its digest the file's.
pub fn modelpack_manifest(src: &Source<'_>, config: &[u8], layers: &[Layer]) -> Vec<u8> {
    let layers: Vec<Value> = layers
        .iter()
        .map(|l| {
            let mut d = l.descriptor();
            // ModelPack's own key, and the title ORAS names a pulled file
            // by (as modctl writes both).
            d["annotations"] = json!({FILEPATH: l.path, TITLE: l.path});
            d
        })
        .collect();
    to_bytes(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "artifactType": MODEL_ARTIFACT,
        "config": descriptor(MODEL_CONFIG, config),
        "layers": layers,
        "annotations": src.annotations(),
    }))
}

/// The mountable image's config for one platform: `rootfs.diff_ids` are
/// the layers' own digests (they are uncompressed).
pub fn image_config(arch: &str, layers: &[Layer]) -> Vec<u8> {
    to_bytes(&json!({
        "architecture": arch,
        "os": "linux",
        "config": {},
        "rootfs": {"type": "layers", "diff_ids": diff_ids(layers)},
    }))
}

/// The mountable image's manifest for one platform.
pub fn image_manifest(src: &Source<'_>, config: &[u8], layers: &[Layer]) -> Vec<u8> {
    let layers: Vec<Value> = layers.iter().map(Layer::descriptor).collect();
    to_bytes(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": descriptor(OCI_CONFIG, config),
        "layers": layers,
        "annotations": src.annotations(),
    }))
}

/// The index naming each platform's manifest.
pub fn image_index(src: &Source<'_>, manifests: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let list: Vec<Value> = manifests
        .iter()
        .map(|(arch, bytes)| {
            let mut d = descriptor(OCI_MANIFEST, bytes);
            d["platform"] = json!({"architecture": arch, "os": "linux"});
            d
        })
        .collect();
    to_bytes(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": list,
        "annotations": src.annotations(),
    }))
}

fn descriptor(media_type: &str, bytes: &[u8]) -> Value {
    json!({
        "mediaType": media_type,
        "digest": format!("sha256:{}", Sha256::of(bytes)),
        "size": bytes.len(),
    })
}

fn to_bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("a JSON value always serializes")
}

/// The model's format as the spec names formats, from its weight files:
/// the first kind found in this order.
fn format_of(layers: &[Layer]) -> Option<&'static str> {
    let has = |ext: &str| layers.iter().any(|l| l.path.ends_with(ext));
    [
        (".gguf", "gguf"),
        (".safetensors", "safetensors"),
        (".onnx", "onnx"),
        (".bin", "pt"),
        (".pt", "pt"),
        (".pth", "pt"),
    ]
    .into_iter()
    .find(|(ext, _)| has(ext))
    .map(|(_, f)| f)
}

/// The spec's raw media type for a file of a repository of `kind`, by its
/// path: weights, their config and tokenizer files, docs, code; in a
/// dataset, everything but docs is dataset. A file no rule names is
/// `weight.config` in a model (what HF repos hold besides weights, docs
/// and code is configuration: JSON, tokenizer vocabularies).
pub fn media_type(kind: RepoKind, path: &str) -> &'static str {
    const WEIGHT: &str = "application/vnd.cncf.model.weight.v1.raw";
    const WEIGHT_CONFIG: &str = "application/vnd.cncf.model.weight.config.v1.raw";
    const DOC: &str = "application/vnd.cncf.model.doc.v1.raw";
    const CODE: &str = "application/vnd.cncf.model.code.v1.raw";
    const DATASET: &str = "application/vnd.cncf.model.dataset.v1.raw";
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    let doc = name.starts_with("readme")
        || name.starts_with("license")
        || name.starts_with("licence")
        || name.starts_with("notice")
        || name.starts_with("use_policy")
        || matches!(ext, "md" | "pdf" | "png" | "jpg" | "jpeg" | "gif" | "svg");
    if doc {
        return DOC;
    }
    if kind == RepoKind::Dataset {
        return DATASET;
    }
    match ext {
        "safetensors" | "gguf" | "bin" | "pt" | "pth" | "onnx" | "h5" | "msgpack" | "ckpt"
        | "tflite" | "pb" | "ot" | "mlmodel" | "npz" => WEIGHT,
        "py" | "sh" | "ipynb" | "js" | "ts" | "c" | "cc" | "cpp" | "h" | "cu" | "rs" | "go" => CODE,
        _ => WEIGHT_CONFIG,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_get_the_spec_media_types() {
        let m = |p| media_type(RepoKind::Model, p);
        assert!(m("model.safetensors").ends_with("weight.v1.raw"));
        assert!(m("q/tiny-Q4_K_M.gguf").ends_with("weight.v1.raw"));
        assert!(m("pytorch_model.bin").ends_with("weight.v1.raw"));
        assert!(m("config.json").ends_with("weight.config.v1.raw"));
        assert!(m("tokenizer.model").ends_with("weight.config.v1.raw"));
        assert!(m("README.md").ends_with("doc.v1.raw"));
        assert!(m("LICENSE").ends_with("doc.v1.raw"));
        assert!(m("modeling_tiny.py").ends_with("code.v1.raw"));
        assert!(media_type(RepoKind::Dataset, "data/train.parquet").ends_with("dataset.v1.raw"));
        assert!(media_type(RepoKind::Dataset, "README.md").ends_with("doc.v1.raw"));
    }

    #[test]
    fn documents_are_the_same_bytes_every_time() {
        let src = || Source {
            kind: RepoKind::Model,
            id: "acme/tiny",
            commit: "0123456789abcdef0123456789abcdef01234567",
            architecture: Some("LlamaForCausalLM".into()),
        };
        let layers = vec![Layer {
            media_type: media_type(RepoKind::Model, "model.gguf"),
            digest: Sha256::of(b"w"),
            size: 1,
            path: "model.gguf".into(),
        }];
        let c = modelpack_config(&src(), &layers);
        assert_eq!(c, modelpack_config(&src(), &layers));
        let m = modelpack_manifest(&src(), &c, &layers);
        assert_eq!(m, modelpack_manifest(&src(), &c, &layers));
        let v: Value = serde_json::from_slice(&c).unwrap();
        assert_eq!(v["config"]["format"], "gguf");
        assert_eq!(v["config"]["architecture"], "LlamaForCausalLM");
        assert_eq!(
            v["modelfs"]["diffIds"][0],
            format!("sha256:{}", Sha256::of(b"w"))
        );
    }
}
