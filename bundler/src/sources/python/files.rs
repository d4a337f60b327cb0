//! Each checked file of an environment planned: its size (asked of the
//! server when the index gives none), its `.metadata` fetched and checked
//! against the index's `core-metadata` sha256, its PEP 740 provenance
//! sought where its index offers one ([`crate::attest::pypi`]), and its
//! download.
//!
//! Invariant: a file is planned only with the sha256 its publisher gave
//! (checked in [`super::check`]); a `.metadata` file is kept only when it
//! hashes to what the index says; a file's provenance, where its index
//! speaks PEP 740, is verified or recorded as none before it is planned.

use futures_util::StreamExt;

use super::simple::ProvenanceRef;
use super::{Ctx, PlannedFile, check};
use crate::attest::Found;
use crate::attest::pypi::{self, IndexedFile};
use crate::cache::Expect;
use crate::error::CreateError;
use crate::fetch::Download;
use crate::http::Http;
use crate::plan::Plan;

/// A `.metadata` file larger than this is refused (they are a few KiB).
const MAX_METADATA_FILE: usize = 16 << 20;

/// Sizes the publisher did not give, asked of the server; the `.metadata`
/// files fetched and checked; every file planned for download.
pub(super) async fn plan_files(
    ctx: &Ctx<'_>,
    files: Vec<check::CheckedFile>,
    plan: &mut Plan,
) -> Result<Vec<PlannedFile>, CreateError> {
    let done: Vec<Result<(PlannedFile, Option<Found>), CreateError>> =
        futures_util::stream::iter(files)
            .map(|f| async move {
                let size = match f.size {
                    Some(s) => s,
                    None => content_length(ctx.http, &f.url).await?,
                };
                let metadata_blob = match &f.metadata {
                    Some((url, sha)) => Some(fetch_metadata(ctx, &f.filename, url, sha).await?),
                    None => None,
                };
                let found = match indexed(ctx, &f) {
                    Some(i) => Some(pypi::seek(ctx.http, ctx.signatures, &i).await?),
                    None => None,
                };
                Ok((
                    PlannedFile {
                        file: f,
                        size,
                        metadata_blob,
                    },
                    found,
                ))
            })
            .buffered(ctx.jobs.max(1))
            .collect()
            .await;
    let mut out = Vec::new();
    for f in done {
        let (f, found) = f?;
        plan.signatures.add(found);
        plan.download(Download {
            label: f.file.filename.clone(),
            url: f.file.url.clone(),
            size: f.size,
            expect: Expect::Sha256(f.file.sha256.clone()),
            denied_hint: None,
        });
        if let Some((sha, size)) = &f.metadata_blob {
            plan.store(sha.clone(), ctx.cache.blob_path(sha), *size);
        }
        out.push(f);
    }
    Ok(out)
}

/// The file as a PEP 740 lookup sees it; `None` where its index does not
/// speak PEP 740 (an index whose page does not say, other than the main
/// one, whose integrity route is asked; a GitHub release asset).
fn indexed(ctx: &Ctx<'_>, f: &check::CheckedFile) -> Option<IndexedFile> {
    let index = f.index.as_deref()?;
    let provenance = match &f.provenance {
        ProvenanceRef::Url(u) => Some(u.clone()),
        ProvenanceRef::None => None,
        ProvenanceRef::Unsaid if same_index(index, ctx.pypi) => Some(pypi::integrity_url(
            index,
            &f.project,
            &f.version,
            &f.filename,
        )),
        ProvenanceRef::Unsaid => return None,
    };
    Some(IndexedFile {
        project: f.project.clone(),
        version: f.version.clone(),
        filename: f.filename.clone(),
        sha256: f.sha256.clone(),
        provenance,
    })
}

fn same_index(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// The server's `Content-Length` for a file whose index lists no size
/// (PyTorch's HTML pages); the body is not read. Read from the header:
/// the response [`Http::get`] hands back wraps its body in a stream that
/// knows no length.
async fn content_length(http: &Http, url: &str) -> Result<u64, CreateError> {
    let (resp, final_url) = http.get(url, None, None).await?;
    let declared = resp
        .headers()
        .get(reqwest::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    declared.ok_or_else(|| {
        CreateError::Http(crate::http::HttpError::Protocol {
            url: crate::http::redact(&final_url),
            detail: "the index lists no size for this file and the server sends no \
                     Content-Length"
                .into(),
        })
    })
}

/// Fetches a `.metadata` file, checks it against the index's
/// `core-metadata` sha256, and keeps it in the cache.
async fn fetch_metadata(
    ctx: &Ctx<'_>,
    filename: &str,
    url: &str,
    sha: &llmgw_shared::Sha256,
) -> Result<(llmgw_shared::Sha256, u64), CreateError> {
    let (body, _) = ctx.http.get_small(url, None, MAX_METADATA_FILE).await?;
    let got = llmgw_shared::Sha256::of(&body);
    if got != *sha {
        return Err(CreateError::WrongBytes {
            what: format!("{filename}.metadata"),
            algorithm: "sha256 (core-metadata)",
            expected: sha.to_string(),
            actual: got.into(),
        });
    }
    let (sha, _) = ctx
        .cache
        .put_bytes(&body)
        .map_err(|e| CreateError::io(ctx.cache.root(), e))?;
    Ok((sha, body.len() as u64))
}
