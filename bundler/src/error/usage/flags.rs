//! One flag's value (or the spec file's setting of it) that is not of the
//! shape the flag takes.
//!
//! Invariant: each variant names its flag and carries the value as given;
//! a value from the command line is printed quoted (`{:?}`) or through
//! `shown`, never raw, unless it was already checked to be plain.

use std::path::PathBuf;

use llmgw_shared::shown;
use thiserror::Error;

/// A flag's value is not of the shape the flag takes.
#[derive(Debug, Error)]
pub enum FlagError {
    /// `--out` ends in `..` or `/`: nothing to create.
    #[error("--out {}: expected a file or folder name to create", out.display())]
    OutName {
        /// `--out` as given.
        out: PathBuf,
    },
    /// `--arch` is not a node architecture the recipes know.
    #[error("--arch {arch}: {problem}")]
    Arch {
        /// The architecture as given.
        arch: String,
        /// The recipe table's words for what is wrong with it.
        problem: String,
    },
    /// `--llmgw` is not a release version.
    #[error("--llmgw {version:?}: not a release version such as v0.5.0")]
    LlmgwVersion {
        /// The version as given.
        version: String,
    },
    /// A base URL flag (`--github-api`, `--index`…) is not http(s).
    #[error("{flag} {value:?}: expected an http:// or https:// URL")]
    Url {
        /// The flag.
        flag: &'static str,
        /// The value as given.
        value: String,
    },
    /// `--engine-image` is not `ENGINE=VERSION[:VARIANT]`.
    #[error(
        "--engine-image {}: expected ENGINE=VERSION[:VARIANT], e.g. vllm=0.34.0 or \
         vllm=0.34.0:cu129",
        shown(text)
    )]
    EngineImage {
        /// The value as given.
        text: String,
    },
    /// The recipe table has no image for an `--engine-image` on an arch.
    #[error("--engine-image {} for --arch {arch}", shown(text))]
    EngineImageRecipe {
        /// The value as given.
        text: String,
        /// The architecture it was asked for.
        arch: String,
        /// Why the table has none (it names the variants and versions it has).
        #[source]
        error: Box<llmgw_shared::recipe::RecipeError>,
    },
    /// `--driver` is not an NVIDIA driver version.
    #[error("--driver: {problem}")]
    Driver {
        /// The recipe table's words for what is wrong with it.
        problem: String,
    },
    /// `--driver` given with nothing it decides.
    #[error(
        "--driver {}: it chooses among engine images, and no --engine-image (or the spec \
         file's engine_images) was given; drop it or add --engine-image",
        shown(driver)
    )]
    DriverAlone {
        /// The driver as given.
        driver: String,
    },
    /// `--registry` is not `HOST=URL`.
    #[error(
        "--registry {}: {why}; expected HOST=URL, e.g. docker.io=https://cache.site.example \
         or docker.io=http://127.0.0.1:5000",
        shown(text)
    )]
    Registry {
        /// The value as given (escaped when shown).
        text: String,
        /// What is wrong with it.
        why: String,
    },
    /// `--index` is not `NAME=URL`.
    #[error(
        "--index {text:?}: expected NAME=URL, e.g. pytorch-cu129=https://proxy.example/whl/cu129"
    )]
    Index {
        /// The value as given.
        text: String,
    },
    /// `--manylinux` is not a glibc tag.
    #[error("--manylinux {tag:?}: expected a manylinux glibc tag such as 2_28 or 2_34")]
    Manylinux {
        /// The tag as given.
        tag: String,
    },
    /// `--zstd-level` is outside zstd's levels.
    #[error("--zstd-level {level}: expected {min} to {max}")]
    ZstdLevel {
        /// The level as given.
        level: i32,
        /// zstd's lowest level.
        min: i32,
        /// zstd's highest level.
        max: i32,
    },
    /// `--jobs` is 0 or more than the downloads run at once.
    #[error("--jobs {jobs}: expected 1 to {max} parallel downloads")]
    Jobs {
        /// The number as given.
        jobs: usize,
        /// The most allowed.
        max: usize,
    },
    /// `--engine` is not `NAME=VERSION[:VARIANT]`.
    #[error(
        "--engine {text:?}: expected NAME=VERSION[:VARIANT], e.g. llamacpp=b6123, \
         uv=0.12.20 or vllm=0.33.0:cu13"
    )]
    Engine {
        /// The value as given.
        text: String,
    },
    /// `--python-env` is not `NAME=REQ[,REQ…]` or `NAME=PATH`.
    #[error(
        "--python-env {text:?}: {why}; expected NAME=REQ[,REQ…] or NAME=PATH/uv.lock (or \
         pylock.toml), e.g. tools=transformers,huggingface_hub[cli]"
    )]
    SiteEnv {
        /// The value as given.
        text: String,
        /// Which part is wrong (`no '='`, `an empty requirement`).
        why: &'static str,
    },
    /// `--override` or `--constraint` is not `ENV=REQ`.
    #[error(
        "{flag} {text:?}: {why}; expected ENV=REQ, e.g. {flag} \
         vllm=flashinfer-python==0.7.4 (ENV: an environment's name, with or without \
         its -ARCH, or its engine)"
    )]
    EnvEdit {
        /// `--override` or `--constraint`.
        flag: &'static str,
        /// The value as given.
        text: String,
        /// Which part is wrong.
        why: &'static str,
    },
    /// `--python-interpreter` is neither `carried` nor `none`.
    #[error(
        "--python-interpreter {text:?}: expected carried (the bundle carries the \
         CPython uv installs) or none (the nodes bring their own CPython of each \
         environment's version)"
    )]
    Interpreter {
        /// The value as given (trimmed).
        text: String,
    },
    /// `--python` is not a CPython minor version.
    #[error("--python {text:?}: expected a CPython version such as 3.11 or 3.12")]
    Python {
        /// The value as given.
        text: String,
    },
    /// `--python-env NAME=PATH` names a file that is not a lock by its name.
    #[error("--python-env: {} is not named uv.lock or pylock.toml", path.display())]
    SiteLockName {
        /// The path as given.
        path: PathBuf,
    },
    /// `--parity` asks for more parity volumes than Reed-Solomon over
    /// GF(2^8) makes.
    #[error("--parity {parity}: at most 255 parity volumes")]
    Parity {
        /// The number as given.
        parity: u32,
    },
    /// `--chunk-size` with `--volume-size fat32` is over FAT32's largest file.
    #[error("--chunk-size {chunk}: FAT32 volumes hold no file over {max} bytes (4 GiB − 1)")]
    Fat32Chunk {
        /// `--chunk-size`, in bytes.
        chunk: u64,
        /// FAT32's largest file, in bytes.
        max: u64,
    },
    /// `--expires` is neither a duration nor a UTC time.
    #[error(
        "--expires {text:?}: expected a duration such as 90d, 12h, 2w, or a UTC time such as \
         2027-03-01T00:00:00Z"
    )]
    Expires {
        /// The value as given.
        text: String,
    },
    /// `--expires` is a duration past what a time can hold.
    #[error("--expires {text:?}: too far ahead")]
    ExpiresTooFar {
        /// The value as given.
        text: String,
    },
    /// `--extras-base` is not `HOST=URL`.
    #[error(
        "--extras-base {}: expected HOST=URL, e.g. \
         openaipublic.blob.core.windows.net=http://127.0.0.1:8080/extras",
        shown(text)
    )]
    ExtrasBase {
        /// The value as given.
        text: String,
    },
    /// `--extras-base`'s HOST is not a host name.
    #[error(
        "--extras-base {}: {} is not a host name (lower-case letters, digits, '-' and '.')",
        shown(text),
        shown(host)
    )]
    ExtrasHost {
        /// The value as given.
        text: String,
        /// The part before `=`.
        host: String,
    },
    /// `--extras-base`'s URL is not http(s).
    #[error(
        "--extras-base {}: expected an http:// or https:// URL after '=', found {}",
        shown(text),
        shown(url)
    )]
    ExtrasUrl {
        /// The value as given.
        text: String,
        /// The part after `=`.
        url: String,
    },
    /// `--extras-base` names one host twice.
    #[error("--extras-base names {} twice; give one base per host", shown(host))]
    ExtrasHostTwice {
        /// The host.
        host: String,
    },
    /// A `--flashinfer-dsl-pins` file's entry is refused.
    #[error("--flashinfer-dsl-pins {}: {problem}", path.display())]
    DslPins {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the value (already escaped).
        problem: String,
    },
    /// A `--flashinfer-dsl-pins` file is not the JSON list it takes.
    #[error(
        "--flashinfer-dsl-pins {}: expected a JSON list of {{versions, dir, checksums: \
         [[cpu, sm, sha256]]}}",
        path.display()
    )]
    DslPinsJson {
        /// The file.
        path: PathBuf,
        /// The parser's words.
        #[source]
        source: serde_json::Error,
    },
}
