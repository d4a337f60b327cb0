//! Sending a blob: HEAD, Range and If-Range (206/416, see [`super::range`]),
//! If-None-Match (304), ETag, a true Content-Length, `Accept-Ranges`,
//! `X-Content-Type-Options: nosniff`, never compressed.
//!
//! Invariant: no file is opened or read on an async worker. The blob is
//! opened (and its size checked) on the blocking pool; the body reads it
//! in fixed chunks with `pread` there too, one chunk ahead of hyper, and
//! hands each chunk over without another copy, so memory per download is
//! two chunks whatever the file's size.
//!
//! A blob whose file is gone while the index still names it is a 404 when
//! the index is stale (a bundle it holds was removed since, and `gc` took
//! the blob with it: the file is no longer held), and a 500 only when every
//! bundle of the index is still in the store (the store is damaged).

use std::fs::File;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use http_body::{Frame, SizeHint};

use super::error::BlobError;
use super::range::RangeAsk;
use super::respond::{empty, etag_matches, header_text};
use crate::serve::index::{Blob, Index};
use crate::store::Store;
use crate::store::open_blob::{Ask, BlobBytes, OpenedBlob, RemoteBlob};

/// Bytes read per chunk: large enough that a 1 GiB file is 4 096 reads
/// (each one a hop to the blocking pool, and one client waits on each, so
/// fewer is faster), small enough that 64 downloads in flight stay within a
/// few dozen MiB. A chunk's buffer is above [`MMAP_THRESHOLD`], so it comes
/// from its own `mmap`: it is reused through [`SPARE`] rather than freed,
/// or every chunk's 64 pages would fault in zeroed and go back at `munmap`
/// (266 000 page faults a GiB, and one client at half speed).
pub const CHUNK: usize = 256 * 1024;

/// Chunk buffers given back by hyper once sent, kept for the next read.
/// At most [`SPARE_MAX`] are kept (4 MiB): more than that in flight are
/// freed, as any allocation is.
static SPARE: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
const SPARE_MAX: usize = 16;

/// A chunk's buffer, going back to [`SPARE`] when hyper drops the chunk.
struct Pooled(Vec<u8>);

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.0);
        if buf.capacity() >= CHUNK
            && let Ok(mut spare) = SPARE.lock()
            && spare.len() < SPARE_MAX
        {
            spare.push(buf);
        }
    }
}

/// Allocations this large or larger are mapped from the kernel and given
/// back whole when freed (`mirror serve` sets it with `mallopt` before its
/// threads start). glibc raises this threshold as large blocks are freed,
/// and then a JSON answer of a few hundred KiB lands in the heap, where the
/// holes between kept answers stay resident: the process grew twice the
/// answer cache's 64 MiB under 9 000 variants of a listing. A fixed
/// threshold keeps what the mirror holds close to what it counts.
pub const MMAP_THRESHOLD: usize = 128 << 10;

/// How a blob is to be described to the client.
pub struct BlobReply<'a> {
    pub blob: &'a Blob,
    /// Quoted.
    pub etag: String,
    pub content_type: &'a str,
    /// Protocol headers (`X-Repo-Commit`, `Content-Disposition`, ...),
    /// sent on 200, 206, 304 and 416 alike.
    pub extra: HeaderMap,
}

/// The headers every answer of stored bytes carries, on 200, 206, 304 and
/// 416 alike: its ETag, that ranges are served, no content sniffing (a
/// browser must not guess HTML or script out of a model file), and the
/// route's own.
pub(super) fn with_byte_headers(mut r: Response, etag: &str, extra: &HeaderMap) -> Response {
    let h = r.headers_mut();
    h.insert(header::ETAG, header_text(etag));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.extend(extra.clone());
    r
}

/// The 304 for a client whose copy is current (its If-None-Match names
/// `etag`), with the headers every answer of stored bytes carries.
pub(super) fn not_modified(req: &HeaderMap, etag: &str, extra: &HeaderMap) -> Option<Response> {
    etag_matches(req, etag).then(|| with_byte_headers(empty(StatusCode::NOT_MODIFIED), etag, extra))
}

/// Answers a GET or HEAD for a blob.
pub async fn serve_blob(
    store: &Store,
    index: &Index,
    method: &Method,
    req: &HeaderMap,
    reply: BlobReply<'_>,
) -> Response {
    if let Some(r) = not_modified(req, &reply.etag, &reply.extra) {
        return r;
    }
    let BlobReply {
        blob,
        etag,
        content_type,
        extra,
    } = reply;
    let finish = |r: Response| with_byte_headers(r, &etag, &extra);
    // A store in a bucket: HEAD is answered from the index, GET streams
    // the object (see `remote_body`) or, with `--blob-delivery presigned`,
    // is redirected to a short-lived presigned URL.
    let ask = if method == Method::GET {
        Ask::Get
    } else {
        Ask::Head
    };
    let file = match opened(store, index, blob, ask).await {
        Ok(OpenedBlob::Redirect(url)) => return finish(redirect(&url)),
        Ok(OpenedBlob::Bytes(b)) => b,
        // Answered with the blob's headers, as its redirect would be.
        Err(e @ (BlobError::Presign { .. } | BlobError::NoPresign)) => {
            return finish(e.into_response());
        }
        Err(e) => return e.into_response(),
    };

    let size = blob.size;
    let Some((status, start, len)) = window(req, &etag, size) else {
        return finish(unsatisfiable(size));
    };
    let body = match (method == Method::HEAD, file) {
        (true, _) => Body::empty(),
        (false, BlobBytes::File(f)) => Body::new(FileBody::new(f, start, len)),
        (false, BlobBytes::Remote(r)) => match remote_body(&r, blob, start, len).await {
            Ok(b) => b,
            Err(e) => return e.into_response(),
        },
    };
    finish(sized(body, (status, start, len), size, content_type))
}

/// What a request's Range asks of `size` bytes: the status, the first
/// byte and the length sent; `None` when no byte of it is there (answer
/// [`unsatisfiable`]).
pub(super) fn window(req: &HeaderMap, etag: &str, size: u64) -> Option<(StatusCode, u64, u64)> {
    match super::range::asked(req, etag, size) {
        None | Some(RangeAsk::Ignore) => Some((StatusCode::OK, 0, size)),
        Some(RangeAsk::Unsatisfiable) => None,
        Some(RangeAsk::Range(a, b)) => Some((StatusCode::PARTIAL_CONTENT, a, b - a + 1)),
    }
}

/// The 416 for a range outside `size` bytes, without the headers every
/// answer of stored bytes carries.
pub(super) fn unsatisfiable(size: u64) -> Response {
    let mut r = empty(StatusCode::RANGE_NOT_SATISFIABLE);
    r.headers_mut().insert(
        header::CONTENT_RANGE,
        header_text(&format!("bytes */{size}")),
    );
    r
}

/// The answer carrying `body`, the `window` of `size` bytes: its status,
/// a true Content-Length, the type, and Content-Range on a 206.
pub(super) fn sized(
    body: Body,
    (status, start, len): (StatusCode, u64, u64),
    size: u64,
    content_type: &str,
) -> Response {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    h.insert(header::CONTENT_TYPE, header_text(content_type));
    if status == StatusCode::PARTIAL_CONTENT {
        h.insert(
            header::CONTENT_RANGE,
            header_text(&format!("bytes {start}-{}/{size}", start + len - 1)),
        );
    }
    r
}

/// A 307 to a presigned GET of the blob. The client sends its Range
/// header on to the object store, which answers it; a client's
/// Authorization header must not follow (the URL carries its own), which
/// HTTP clients ensure for a redirect to another host.
fn redirect(url: &str) -> Response {
    let mut r = empty(StatusCode::TEMPORARY_REDIRECT);
    let h = r.headers_mut();
    h.insert(header::LOCATION, header_text(url));
    // The URL expires: no cache may keep the redirect.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// The store's [`Store::open_blob`], its refusal said as the server says
/// it: a missing file of a stale index is a blob no longer held.
async fn opened(
    store: &Store,
    index: &Index,
    blob: &Blob,
    ask: Ask,
) -> Result<OpenedBlob, BlobError> {
    match store.open_blob(&blob.sha256, blob.size, ask).await {
        Ok(o) => Ok(o),
        Err(e) => Err(removed_since(store, index, BlobError::opening(&blob.sha256, e)).await),
    }
}

/// The bytes `start..start + len` of a held blob as a body: its file, the
/// replica's cached copy, or the bucket's object (a presigning store
/// proxies here: the bytes are one part of a larger answer). Opened
/// before the answer's status is sent, so a missing blob is an error
/// response, not a body cut short.
pub async fn blob_body(
    store: &Store,
    index: &Index,
    blob: &Blob,
    start: u64,
    len: u64,
) -> Result<Body, BlobError> {
    match store.blob_bytes(&blob.sha256, blob.size, true).await {
        Ok(BlobBytes::File(f)) => Ok(Body::new(FileBody::new(f, start, len))),
        Ok(BlobBytes::Remote(r)) => remote_body(&r, blob, start, len).await,
        Err(e) => Err(removed_since(store, index, BlobError::opening(&blob.sha256, e)).await),
    }
}

/// The bytes `start..start + len` of a blob in a bucket, as a body: the
/// request is made before the answer's status is sent, so a missing object
/// is a 500 naming it, not a 200 cut short.
async fn remote_body(
    remote: &RemoteBlob,
    blob: &Blob,
    start: u64,
    len: u64,
) -> Result<Body, BlobError> {
    let stream = remote
        .stream(&blob.sha256, start..start + len)
        .await
        .map_err(|source| BlobError::Remote {
            sha256: blob.sha256.clone(),
            source,
        })?;
    Ok(Body::from_stream(stream))
}

/// `e`, or [`BlobError::NoLongerHeld`] when `e` is a missing file and the
/// index is stale: a bundle it holds is no longer in the store (`mirror
/// remove`, then `gc` took the blob), which the refresh thread has not seen
/// yet. Only looked at on that error, on the blocking pool: a `stat` per
/// bundle of the index.
async fn removed_since(store: &Store, index: &Index, e: BlobError) -> BlobError {
    let BlobError::Unreadable { sha256, source } = e else {
        return e;
    };
    if source.kind() != io::ErrorKind::NotFound {
        return BlobError::Unreadable { sha256, source };
    }
    let manifests: Vec<std::path::PathBuf> = index
        .bundles
        .iter()
        .map(|b| store.bundle_file(&b.id))
        .collect();
    let stale = tokio::task::spawn_blocking(move || {
        manifests
            .iter()
            .any(|m| matches!(m.try_exists(), Ok(false)))
    })
    .await
    .unwrap_or(false);
    if stale {
        BlobError::NoLongerHeld { sha256 }
    } else {
        BlobError::Unreadable { sha256, source }
    }
}

/// A file range as a body, read on the blocking pool one chunk ahead of
/// hyper: the next chunk is being read while the last one is written to
/// the socket, so a single client is not kept waiting on a hop to the
/// blocking pool for every chunk (two chunks a download at the most).
pub struct FileBody {
    file: Arc<File>,
    /// Where the next read starts.
    next_offset: u64,
    /// Bytes not yet handed to hyper (including a chunk being read).
    remaining: u64,
    /// Bytes not yet asked of the blocking pool.
    to_read: u64,
    /// The chunk being read, and how many bytes it was asked for.
    pending: Option<(tokio::task::JoinHandle<io::Result<Bytes>>, usize)>,
}

impl FileBody {
    pub fn new(file: File, offset: u64, len: u64) -> Self {
        Self {
            file: Arc::new(file),
            next_offset: offset,
            remaining: len,
            to_read: len,
            pending: None,
        }
    }

    /// Starts reading the next chunk, if any is left to read and none is
    /// being read.
    fn read_ahead(&mut self) {
        if self.pending.is_some() || self.to_read == 0 {
            return;
        }
        let n = self.to_read.min(CHUNK as u64) as usize;
        let (file, off) = (self.file.clone(), self.next_offset);
        let task = tokio::task::spawn_blocking(move || read_chunk(&file, off, n));
        self.next_offset += n as u64;
        self.to_read -= n as u64;
        self.pending = Some((task, n));
    }
}

/// Reads up to `n` bytes at `offset`, into a buffer that becomes the chunk
/// (a spare one where there is one; written straight into its spare
/// capacity: zero-filling it first would cost as much as the read itself).
fn read_chunk(file: &File, offset: u64, n: usize) -> io::Result<Bytes> {
    let spare = SPARE.lock().ok().and_then(|mut s| s.pop());
    let mut buf = spare.unwrap_or_default();
    buf.clear();
    buf.reserve_exact(CHUNK.max(n));
    while buf.len() < n {
        let at = offset + buf.len() as u64;
        match rustix::io::pread(file, rustix::buffer::spare_capacity(&mut buf), at) {
            Ok(0) => break,
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    // The buffer may have more room than asked: never hand out a byte
    // past the range.
    buf.truncate(n);
    Ok(Bytes::from_owner(Pooled(buf)))
}

impl http_body::Body for FileBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = &mut *self;
        if this.remaining == 0 {
            return Poll::Ready(None);
        }
        this.read_ahead();
        let Some((task, asked)) = this.pending.as_mut() else {
            return Poll::Ready(None);
        };
        let res = ready!(Pin::new(task).poll(cx));
        let asked = *asked;
        this.pending = None;
        let chunk = match res {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Poll::Ready(Some(Err(e))),
            Err(e) => return Poll::Ready(Some(Err(io::Error::other(e)))),
        };
        if chunk.len() < asked {
            return Poll::Ready(Some(Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "blob ended early: the store is damaged, run `llmgw mirror verify`",
            ))));
        }
        this.remaining -= chunk.len() as u64;
        // The next chunk is read while hyper writes this one.
        this.read_ahead();
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

use std::future::Future as _;
