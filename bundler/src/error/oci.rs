//! Why an image or chart could not be planned. Each message names the
//! image (as normalized), the blob or URL, what was expected and what was
//! found, and what to do; causes are `#[source]`s. Also why a reference
//! was refused ([`ReferenceError`]): kept with the crate's other errors so
//! that `sources/oci/` uses them and nothing here uses `sources/`.

use std::path::PathBuf;

use llmgw_shared::Sha256;
use llmgw_shared::manifest::OciParseError;
use thiserror::Error;

use crate::http::HttpError;

/// Why an image or chart could not be planned.
#[derive(Debug, Error)]
pub enum OciError {
    /// `--image`, `--chart` or `--insecure-registry` is not what it takes
    /// (exit code 2).
    #[error(transparent)]
    Reference(#[from] ReferenceError),
    /// `--insecure-registry` is not `HOST[:PORT]` (exit code 2).
    #[error("--insecure-registry {given:?}: expected HOST:PORT, such as 127.0.0.1:5000")]
    InsecureFlag {
        /// The value as given.
        given: String,
    },
    /// The auth file cannot be read.
    #[error("registry credentials {}", path.display())]
    AuthFile {
        /// `$REGISTRY_AUTH_FILE` or `~/.docker/config.json`.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The auth file is not JSON of that kind.
    #[error("registry credentials {}: not a Docker config or containers auth.json", path.display())]
    AuthFileJson {
        /// The file.
        path: PathBuf,
        /// serde_json's words.
        #[source]
        source: serde_json::Error,
    },
    /// One entry of the auth file cannot be used.
    #[error("registry credentials {}: the entry for {registry:?}: {detail}", path.display())]
    AuthFileEntry {
        /// The file.
        path: PathBuf,
        /// The registry the entry is for.
        registry: String,
        /// What is wrong.
        detail: String,
    },
    /// A 401 whose challenge cannot be answered.
    #[error("registry {registry}: cannot follow its authentication challenge: {header}")]
    Challenge {
        /// The registry.
        registry: String,
        /// The challenge (cut), or what is wrong with it.
        header: String,
    },
    /// A Basic challenge without a filed credential.
    #[error(
        "registry {registry} asks for a user and password; log in with `docker login {registry}` \
         (or `skopeo login`), or set REGISTRY_AUTH_FILE to an auth.json that holds them"
    )]
    NeedsCredential {
        /// The registry.
        registry: String,
    },
    /// The token realm could not be reached.
    #[error("token realm {realm}")]
    TokenTransport {
        /// The realm URL (redacted).
        realm: String,
        /// The client's words.
        #[source]
        source: std::io::Error,
    },
    /// The token realm refused.
    #[error(
        "token realm {realm} answered {status}: the credential filed for this registry is wrong \
         or lacks pull access; check `docker login` or REGISTRY_AUTH_FILE"
    )]
    TokenRefused {
        /// The realm URL.
        realm: String,
        /// Its status.
        status: u16,
    },
    /// The token realm's answer is not a token.
    #[error("token realm {realm}: {detail}")]
    TokenAnswer {
        /// The realm URL.
        realm: String,
        /// What is wrong.
        detail: String,
    },
    /// Refused after logging in (or the image does not exist, which
    /// registries answer alike for private repositories).
    #[error(
        "{image}: the registry answered {status}: the repository does not exist, or it is private \
         and needs credentials (`docker login`, REGISTRY_AUTH_FILE)"
    )]
    Denied {
        /// The image.
        image: String,
        /// 401 or 403.
        status: u16,
    },
    /// The tag or digest is not in the repository.
    #[error("{image}: the registry has no manifest {asked} (404); check the tag")]
    NotFound {
        /// The image.
        image: String,
        /// The tag or digest asked for.
        asked: String,
    },
    /// Rate-limited (Docker Hub's pull limit).
    #[error(
        "{registry} answered 429 Too Many Requests (its pull rate limit){}; log in \
         (`docker login`) for a higher limit, or run again later — the cache keeps what was fetched",
        retry_after.as_deref().map(|r| format!(": retry after {r}")).unwrap_or_default()
    )]
    RateLimited {
        /// The registry.
        registry: String,
        /// The Retry-After it gave, as seconds or a date.
        retry_after: Option<String>,
    },
    /// A request to the registry failed.
    #[error("{image}")]
    Http {
        /// The image.
        image: String,
        /// Why.
        #[source]
        source: HttpError,
    },
    /// The TLS handshake failed, and the same host and port answer plain
    /// HTTP: a registry without TLS, asked without `--insecure-registry`.
    #[error(
        "{image}: this registry speaks plain HTTP; pass --insecure-registry {registry} if you \
         trust the network"
    )]
    PlainHttp {
        /// The image.
        image: String,
        /// The registry as the reference names it (`HOST:PORT`).
        registry: String,
        /// The failed handshake (boxed, to keep every result small).
        #[source]
        source: Box<HttpError>,
    },
    /// A manifest answer larger than any manifest may be.
    #[error("{image}: the manifest at {url} is larger than {max} bytes; refusing it unread")]
    ManifestTooLarge {
        /// The image.
        image: String,
        /// The URL.
        url: String,
        /// The bound.
        max: u64,
    },
    /// The registry's `Docker-Content-Digest` is not the bytes' digest.
    #[error(
        "{image}: the registry says the manifest is {header} (Docker-Content-Digest), but its \
         bytes hash to sha256:{actual}; refusing it"
    )]
    DigestHeader {
        /// The image.
        image: String,
        /// The header as sent.
        header: String,
        /// The bytes' digest.
        actual: Sha256,
    },
    /// The tag names another digest than the pin.
    #[error(
        "{image}: the tag now names sha256:{actual}, but the reference pins sha256:{pinned}; \
         the tag moved — pin the new digest if you trust it, or ask for the pinned one"
    )]
    PinMismatch {
        /// The image.
        image: String,
        /// The pinned digest (boxed, to keep every result small).
        pinned: Box<Sha256>,
        /// What the tag resolved to.
        actual: Sha256,
    },
    /// A manifest fetched by digest is not what its descriptor says.
    #[error(
        "{image}: manifest {blob}: its descriptor says {expected}, the registry sent {actual}; \
         refusing it"
    )]
    Descriptor {
        /// The image.
        image: String,
        /// The manifest's digest (boxed, to keep every result small).
        blob: Box<Sha256>,
        /// What the descriptor promised (a size or digest).
        expected: String,
        /// What arrived.
        actual: String,
    },
    /// A manifest's bytes cannot be read as one.
    #[error("{image}: manifest {blob}")]
    Unreadable {
        /// The image.
        image: String,
        /// Its digest (boxed, to keep every result small).
        blob: Box<Sha256>,
        /// Why.
        #[source]
        source: OciParseError,
    },
    /// The answer's Content-Type is not a manifest media type.
    #[error(
        "{image}: the registry served the manifest as {content_type:?}, which is not an OCI or \
         Docker schema 2 manifest or index (schema 1 is not carried)"
    )]
    MediaType {
        /// The image.
        image: String,
        /// The Content-Type it gave.
        content_type: String,
    },
    /// An index with none of the bundle's platforms.
    #[error("{image}: the index has no linux image for {asked}; it has: {available}")]
    NoPlatform {
        /// The image.
        image: String,
        /// The bundle's `--arch` list.
        asked: String,
        /// The platforms it has.
        available: String,
    },
    /// `--image NAME:TAG=…` that is not `NAME:TAG=oci-layout:PATH[:REF]`
    /// (exit code 2).
    #[error(
        "--image {given:?}: {detail}; expected NAME:TAG=oci-layout:PATH[:REF], NAME a repository \
         path such as llmgw/llmgw (served with no registry host, whatever registry a node names)"
    )]
    LayoutFlag {
        /// The value as given.
        given: String,
        /// What is wrong with it.
        detail: String,
    },
    /// A file of an OCI layout that cannot be read.
    #[error("{}", path.display())]
    LayoutIo {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// An OCI layout whose `oci-layout` or `index.json` is not what the
    /// image-layout spec says, or that has no one image to take.
    #[error("{}: {detail}", path.display())]
    Layout {
        /// The file.
        path: PathBuf,
        /// What is wrong, and what to do.
        detail: String,
    },
    /// A blob of an OCI layout that is not what its descriptor says.
    #[error(
        "{image}: {}: its descriptor says {expected}, but the file {actual}; the layout is \
         damaged or was changed after it was written: build or copy it again",
        file.display()
    )]
    LayoutBlob {
        /// The image as asked for.
        image: String,
        /// The blob's file in the layout.
        file: PathBuf,
        /// What the descriptor says (a size or a digest).
        expected: String,
        /// What the file is.
        actual: String,
    },
    /// An artifact asked for as a chart that is not a Helm chart.
    #[error("chart {chart}: {detail}")]
    ChartArtifact {
        /// The chart as asked for.
        chart: String,
        /// What is wrong.
        detail: String,
    },
    /// A packaged chart on disk (`--chart PATH.tgz`) that cannot be carried.
    #[error("chart {}: {detail}", llmgw_shared::shown(&path.display().to_string()))]
    ChartPackage {
        /// The file given.
        path: PathBuf,
        /// What is wrong, and what to give instead.
        detail: String,
    },
    /// A packaged chart on disk that cannot be read.
    #[error("chart {}", llmgw_shared::shown(&path.display().to_string()))]
    ChartPackageRead {
        /// The file given.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl OciError {
    /// Whether the request itself is wrong (exit code 2).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            OciError::Reference(_) | OciError::InsecureFlag { .. } | OciError::LayoutFlag { .. }
        )
    }
}

/// Why a reference was refused; each names the reference as given.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ReferenceError {
    /// Empty, or with characters no reference has.
    #[error(
        "{given:?} is not an image reference (expected [REGISTRY/]REPOSITORY[:TAG][@sha256:DIGEST])"
    )]
    Shape {
        /// The reference as given.
        given: String,
    },
    /// A repository path outside the distribution spec's grammar.
    #[error(
        "{given:?}: repository {repository:?} is not a valid repository path (lower-case \
         letters, digits and separators . _ __ -, components joined by /)"
    )]
    Repository {
        /// The reference as given.
        given: String,
        /// The path found.
        repository: String,
    },
    /// A tag outside the grammar.
    #[error("{given:?}: tag {tag:?} is not a valid tag ([A-Za-z0-9_][A-Za-z0-9._-]{{0,127}})")]
    Tag {
        /// The reference as given.
        given: String,
        /// The tag found.
        tag: String,
    },
    /// A registry host that is not one.
    #[error("{given:?}: {host:?} is not a registry host")]
    Host {
        /// The reference as given.
        given: String,
        /// The host found.
        host: String,
    },
    /// A digest that is not `sha256:` and 64 lower-case hex digits.
    #[error("{given:?}: the digest {digest:?} is not sha256: and 64 lower-case hex digits")]
    Digest {
        /// The reference as given.
        given: String,
        /// The digest found.
        digest: String,
    },
    /// A repository path the mirror makes itself (`models/`, `modelpack/`,
    /// `datasets/`; `charts/` for an image).
    #[error(
        "{given:?}: {prefix}/ is a name the mirror makes itself (a Hub repository's OCI \
         profiles, a packaged chart); nothing carried may take it: carry it under another \
         repository path"
    )]
    Reserved {
        /// The reference as given.
        given: String,
        /// The reserved first component.
        prefix: &'static str,
    },
    /// A chart reference without `oci://` or a registry.
    #[error("{given:?}: a chart is oci://REGISTRY/REPOSITORY:VERSION or a packaged PATH.tgz")]
    Chart {
        /// The reference as given.
        given: String,
    },
}
