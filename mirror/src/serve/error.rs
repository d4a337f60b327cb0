//! The server's errors: why `mirror serve` cannot start or stopped, why a
//! route refuses a request, and why a held blob cannot be sent (each of
//! those is its own response, in the shape the protocol's clients read).

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use llmgw_shared::Sha256;
use thiserror::Error;

use crate::serve::http::paths::BadPath;
use crate::serve::http::respond::{
    github_not_found, hub_error, method_not_allowed, oci_error, text,
};
use crate::store::StoreError;
use crate::store::open_blob::OpenBlobError;

#[derive(Debug, Error)]
pub enum ServeError {
    #[error(
        "the store {0} does not exist or is not a folder; import a bundle into it first \
         (`llmgw bundle import --store {0} ...`) or pass the right --store"
    )]
    NoStore(PathBuf),
    #[error(
        "cannot read the store {path}; check that --store names the mirror's folder and that \
         this user may read it"
    )]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{path} is not a mirror store: it has no bundles/ folder and holds other things ({found}); {hint}"
    )]
    NotAStore {
        path: PathBuf,
        found: String,
        hint: String,
    },
    #[error(transparent)]
    Token(#[from] TokenError),
    /// The store's bundles cannot be listed for another reason than the
    /// filesystem's (which is [`ServeError::Unreadable`]).
    #[error("cannot list the bundles of the store")]
    Bundles(#[source] crate::store::StoreError),
    #[error("cannot copy the store's manifests and state from the bucket")]
    Remote(#[source] crate::store::StoreError),
    /// Reaching the bucket, or making its work folder or cache.
    #[error(transparent)]
    Open(Box<crate::store::session::SessionError>),
    /// The value given, which is not a URL (no cause: the value is what
    /// is wrong).
    #[error(
        "--public-url {0:?} is not an http:// or https:// URL; give the base URL nodes use, \
         e.g. https://mirror.example:8443"
    )]
    PublicUrl(String),
    #[error(
        "cannot load TLS certificate {cert} and key {key}; give PEM files (a certificate chain \
         and its private key)"
    )]
    Tls {
        cert: PathBuf,
        key: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot listen on {addr}; pick another --listen address or stop what uses it")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the server stopped")]
    Serve(#[source] std::io::Error),
}

/// Why `--token-file` cannot be used.
#[derive(Debug, Error)]
pub enum TokenError {
    #[error("cannot read the token file")]
    Read(#[source] StoreError),
    #[error("the token file {} is not text (UTF-8)", path.display())]
    NotText { path: PathBuf },
    #[error(
        "the token file {} is empty; put the token clients will send in it",
        path.display()
    )]
    Empty { path: PathBuf },
    #[error(
        "the token file {} holds more than one word; a token is one line without spaces",
        path.display()
    )]
    NotOneWord { path: PathBuf },
}

/// Why a Hub route refuses a request, each as the Hub answers it: the
/// misses with the `X-Error-Code` `huggingface_hub` keys off (and the commit
/// on an entry miss, so clients cache it), a bad name as plain 400.
#[derive(Debug, Error)]
pub enum HubError {
    /// A name in the URL no repository, revision or file could have.
    #[error(transparent)]
    BadName(#[from] BadPath),
    #[error("quant tag {0:?} is not a tag")]
    BadTag(String),
    /// A tree listing's `cursor` that no page of this mirror wrote.
    #[error("cursor {0:?} is not one this mirror gave: list the tree again from its first page")]
    BadCursor(String),
    #[error("Repository not found: {plural}/{id} is not held by this mirror")]
    RepoNotFound { plural: &'static str, id: String },
    #[error("Invalid rev id: {rev} is not held by this mirror for {id}")]
    RevisionNotFound { id: String, rev: String },
    #[error("Entry not found: {path} is not held by this mirror for {id} at {commit}")]
    EntryNotFound {
        id: String,
        path: String,
        commit: String,
    },
    #[error("no GGUF file of {id} matches the tag {tag}")]
    NoQuant {
        id: String,
        tag: String,
        commit: String,
    },
    /// A path under a Hub route that names nothing.
    #[error("not found")]
    NotFound,
    /// A path no Hub route takes (plain text, as any unknown path).
    #[error("not found")]
    NoRoute,
    #[error("method not allowed")]
    Method { allow: &'static str },
}

impl IntoResponse for HubError {
    fn into_response(self) -> Response {
        let message = self.to_string();
        match self {
            HubError::BadName(_) | HubError::BadTag(_) | HubError::BadCursor(_) => {
                text(StatusCode::BAD_REQUEST, format!("{message}\n"))
            }
            HubError::RepoNotFound { .. } => {
                hub_error(StatusCode::NOT_FOUND, Some("RepoNotFound"), &message, None)
            }
            HubError::RevisionNotFound { .. } => hub_error(
                StatusCode::NOT_FOUND,
                Some("RevisionNotFound"),
                &message,
                None,
            ),
            HubError::EntryNotFound { commit, .. } | HubError::NoQuant { commit, .. } => hub_error(
                StatusCode::NOT_FOUND,
                Some("EntryNotFound"),
                &message,
                Some(&commit),
            ),
            HubError::NotFound => hub_error(StatusCode::NOT_FOUND, None, &message, None),
            HubError::NoRoute => text(StatusCode::NOT_FOUND, "not found\n"),
            HubError::Method { allow } => method_not_allowed(allow),
        }
    }
}

/// Why a GitHub release route refuses a request, as GitHub answers it.
#[derive(Debug, Error)]
pub enum GithubError {
    /// A name in the URL no repository, tag or asset could have.
    #[error(transparent)]
    BadName(#[from] BadPath),
    /// Nothing held under this API path: GitHub's JSON 404.
    #[error("Not Found")]
    NotFound,
    /// No such asset to download: a plain 404, as github.com's.
    #[error("Not Found")]
    NoAsset,
    #[error("method not allowed")]
    Method,
}

impl IntoResponse for GithubError {
    fn into_response(self) -> Response {
        match self {
            GithubError::BadName(e) => text(StatusCode::BAD_REQUEST, format!("{e}\n")),
            GithubError::NotFound => github_not_found(),
            GithubError::NoAsset => text(StatusCode::NOT_FOUND, "Not Found\n"),
            GithubError::Method => method_not_allowed("GET, HEAD"),
        }
    }
}

/// The error codes of the OCI distribution spec, in the order spec.md's
/// table lists them (code-1 to code-14). A read-only registry sends only
/// some of them; the rest are listed so the table stays the spec's.
#[allow(dead_code)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OciCode {
    BlobUnknown,
    BlobUploadInvalid,
    BlobUploadUnknown,
    DigestInvalid,
    ManifestBlobUnknown,
    ManifestInvalid,
    ManifestUnknown,
    NameInvalid,
    NameUnknown,
    SizeInvalid,
    Unauthorized,
    Denied,
    Unsupported,
    TooManyRequests,
}

impl OciCode {
    /// The identifier in the error body's `code`.
    pub const fn as_str(self) -> &'static str {
        match self {
            OciCode::BlobUnknown => "BLOB_UNKNOWN",
            OciCode::BlobUploadInvalid => "BLOB_UPLOAD_INVALID",
            OciCode::BlobUploadUnknown => "BLOB_UPLOAD_UNKNOWN",
            OciCode::DigestInvalid => "DIGEST_INVALID",
            OciCode::ManifestBlobUnknown => "MANIFEST_BLOB_UNKNOWN",
            OciCode::ManifestInvalid => "MANIFEST_INVALID",
            OciCode::ManifestUnknown => "MANIFEST_UNKNOWN",
            OciCode::NameInvalid => "NAME_INVALID",
            OciCode::NameUnknown => "NAME_UNKNOWN",
            OciCode::SizeInvalid => "SIZE_INVALID",
            OciCode::Unauthorized => "UNAUTHORIZED",
            OciCode::Denied => "DENIED",
            OciCode::Unsupported => "UNSUPPORTED",
            OciCode::TooManyRequests => "TOOMANYREQUESTS",
        }
    }
}

/// Why the OCI registry routes refuse a request, each answered with the
/// spec's error body (`{"errors":[{"code","message"}]}`). Names in the
/// messages are escaped ([`llmgw_shared::shown`]) where they come from the
/// URL unchecked.
#[derive(Debug, Error)]
pub enum OciError {
    #[error(
        "repository name {0} does not match the OCI name grammar \
         ([a-z0-9]+((.|_|__|-+)[a-z0-9]+)* components joined by /, at most 255 bytes)"
    )]
    BadName(String),
    #[error(
        "reference {0} is neither a tag ([a-zA-Z0-9_][a-zA-Z0-9._-]{{0,127}}) nor a digest \
         (sha256:<64 hex>)"
    )]
    BadReference(String),
    #[error("{0} is not a digest (sha256:<64 lower-case hex>)")]
    BadDigest(String),
    #[error("repository {name} is not held by this mirror; GET /v2/_catalog lists the names held")]
    NameUnknown { name: String },
    #[error(
        "repository {name} is held for several registries ({held}); say which with \
         ?ns=REGISTRY, as containerd's mirror requests do"
    )]
    Ambiguous { name: String, held: String },
    #[error("repository {name} is not held for registry {ns}; it is held for: {held}")]
    NotFrom {
        name: String,
        ns: String,
        held: String,
    },
    #[error("manifest {reference} of {name} is not held by this mirror")]
    ManifestUnknown { name: String, reference: String },
    #[error(
        "manifest {reference} of {name} is a {media_type}, which the request's Accept \
         header does not list"
    )]
    NotAccepted {
        name: String,
        reference: String,
        media_type: String,
    },
    #[error("blob {digest} is not held under {name}")]
    BlobUnknown { name: String, digest: String },
    #[error(
        "this mirror is a read-only registry: {0} is not served here; push to the upstream \
         registry and carry the image across in a bundle (`llmgw bundle create --image`)"
    )]
    Unsupported(String),
}

impl OciError {
    /// The spec's code and the status it goes with.
    pub fn code(&self) -> (OciCode, StatusCode) {
        match self {
            OciError::BadName(_) => (OciCode::NameInvalid, StatusCode::BAD_REQUEST),
            OciError::BadReference(_) => (OciCode::ManifestInvalid, StatusCode::BAD_REQUEST),
            OciError::BadDigest(_) => (OciCode::DigestInvalid, StatusCode::BAD_REQUEST),
            OciError::NameUnknown { .. }
            | OciError::Ambiguous { .. }
            | OciError::NotFrom { .. } => (OciCode::NameUnknown, StatusCode::NOT_FOUND),
            OciError::ManifestUnknown { .. } | OciError::NotAccepted { .. } => {
                (OciCode::ManifestUnknown, StatusCode::NOT_FOUND)
            }
            OciError::BlobUnknown { .. } => (OciCode::BlobUnknown, StatusCode::NOT_FOUND),
            OciError::Unsupported(_) => (OciCode::Unsupported, StatusCode::METHOD_NOT_ALLOWED),
        }
    }
}

impl IntoResponse for OciError {
    fn into_response(self) -> Response {
        let (code, status) = self.code();
        oci_error(status, code.as_str(), &self.to_string())
    }
}

/// Why a blob a held bundle names cannot be sent. Each is the store's
/// fault, never the client's: a 500 whose text names the blob and what to
/// run, logged once, where it becomes the response.
#[derive(Debug, Error)]
pub enum BlobError {
    /// Asked for a presigned URL of a store that signs none (a bug: only
    /// a store that presigns is asked).
    #[error("this store has no presigned delivery configured")]
    NoPresign,
    #[error(
        "blob {sha256} is {actual} bytes in the store but its manifest says {expected}; \
         the store is damaged: run `llmgw mirror verify`"
    )]
    WrongSize {
        sha256: Sha256,
        expected: u64,
        actual: u64,
    },
    #[error("blob {sha256} named by a held bundle cannot be read; run `llmgw mirror verify`")]
    Unreadable {
        sha256: Sha256,
        #[source]
        source: io::Error,
    },
    /// The blob's file is gone and a bundle the index holds was removed
    /// since: the blob went with it (see `files::removed_since`).
    #[error(
        "blob {sha256} is no longer held: a bundle that named it was removed from the store; \
         list what is held with GET / or `llmgw mirror list`"
    )]
    NoLongerHeld { sha256: Sha256 },
    #[error(
        "blob {sha256} named by a held bundle cannot be read from object storage; \
         run `llmgw mirror verify`"
    )]
    Remote {
        sha256: Sha256,
        #[source]
        source: StoreError,
    },
    #[error("cannot presign a URL for blob {sha256}")]
    Presign {
        sha256: Sha256,
        #[source]
        source: StoreError,
    },
}

impl BlobError {
    /// Why the store could not open blob `sha256`, said of it.
    pub(crate) fn opening(sha256: &Sha256, e: OpenBlobError) -> Self {
        let sha256 = sha256.clone();
        match e {
            OpenBlobError::NoPresign => BlobError::NoPresign,
            OpenBlobError::Presign(source) => BlobError::Presign { sha256, source },
            OpenBlobError::WrongSize { expected, actual } => BlobError::WrongSize {
                sha256,
                expected,
                actual,
            },
            OpenBlobError::Unreadable(source) => BlobError::Unreadable { sha256, source },
        }
    }
}

impl IntoResponse for BlobError {
    /// The text clients get puts the cause in brackets before the fix,
    /// where a reader of `curl` output or a client's error looks.
    fn into_response(self) -> Response {
        let body = match &self {
            BlobError::NoPresign => format!("{self}\n"),
            BlobError::WrongSize {
                sha256,
                expected,
                actual,
            } => {
                tracing::error!(blob = %sha256, expected, actual, "blob has the wrong size");
                format!("{self}\n")
            }
            BlobError::Unreadable { sha256, source } => {
                tracing::error!(blob = %sha256, error = %source, "blob unreadable");
                format!(
                    "blob {sha256} named by a held bundle cannot be read ({source}); \
                     run `llmgw mirror verify`\n"
                )
            }
            BlobError::NoLongerHeld { sha256 } => {
                tracing::info!(blob = %sha256, "blob removed with its bundle; index not yet reloaded");
                return text(StatusCode::NOT_FOUND, format!("{self}\n"));
            }
            BlobError::Remote { sha256, source } => {
                let e = llmgw_shared::chain(source);
                tracing::error!(blob = %sha256, error = %e, "blob unreadable in the bucket");
                format!(
                    "blob {sha256} named by a held bundle cannot be read from object storage \
                     ({e}); run `llmgw mirror verify`\n"
                )
            }
            BlobError::Presign { sha256, source } => {
                let e = llmgw_shared::chain(source);
                tracing::error!(blob = %sha256, error = %e, "cannot presign");
                format!("cannot presign a URL for blob {sha256} ({e})\n")
            }
        };
        text(StatusCode::INTERNAL_SERVER_ERROR, body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(e: BlobError) -> (StatusCode, String) {
        let r = e.into_response();
        let status = r.status();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let body = rt
            .block_on(axum::body::to_bytes(r.into_body(), 1 << 16))
            .unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[test]
    fn a_blob_that_cannot_be_sent_is_a_500_naming_it_and_the_fix() {
        let sha = Sha256::of(b"x");
        let (status, body) = answer(BlobError::WrongSize {
            sha256: sha.clone(),
            expected: 10,
            actual: 5,
        });
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            body,
            format!(
                "blob {sha} is 5 bytes in the store but its manifest says 10; the store is \
                 damaged: run `llmgw mirror verify`\n"
            )
        );

        let gone = || io::Error::new(io::ErrorKind::NotFound, "gone");
        let (status, body) = answer(BlobError::Unreadable {
            sha256: sha.clone(),
            source: gone(),
        });
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            body,
            format!(
                "blob {sha} named by a held bundle cannot be read (gone); run `llmgw mirror \
                 verify`\n"
            )
        );
        // As an error, the cause is its source, not in its message.
        let e = BlobError::Unreadable {
            sha256: sha.clone(),
            source: gone(),
        };
        assert!(!e.to_string().contains("gone"), "{e}");
        assert_eq!(
            llmgw_shared::chain(&e),
            format!(
                "blob {sha} named by a held bundle cannot be read; run `llmgw mirror verify`: gone"
            )
        );

        let (status, body) = answer(BlobError::NoPresign);
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body, "this store has no presigned delivery configured\n");
    }

    #[test]
    fn a_blob_removed_with_its_bundle_is_a_404_naming_it() {
        let sha = Sha256::of(b"x");
        let (status, body) = answer(BlobError::NoLongerHeld {
            sha256: sha.clone(),
        });
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(
            body.contains(&format!("blob {sha} is no longer held")),
            "{body}"
        );
    }
}
