//! Turning an [`Outcome`] into a response: the one place simple API pages
//! are written (PEP 503 HTML, PEP 691 JSON with PEP 658/714 metadata keys
//! and PEP 700 sizes), and every status and header of `/pypi/`.
//!
//! Invariant: file URLs in a page are relative (`../../files/{name}`,
//! `+` quoted as `%2B`), so a page is right whatever host or proxy the node
//! reached the mirror through, and every text from a manifest is escaped
//! for the format it goes into.

use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::accept::Format;
use super::decide::Outcome;
use crate::serve::http::paths::quote_path;
use crate::serve::http::respond::{self, CachedJson, header_text};
use crate::serve::index::natural_cmp;
use crate::serve::index::pypi::{PyEnv, PyFile};
use crate::serve::request::Req;

/// The simple API version these pages speak: 1.1 (PEP 700) has `size`,
/// `upload-time` and `versions`.
const API_VERSION: &str = "1.1";

/// The response for every outcome but the lock (see `lock`).
pub async fn respond(req: &Req<'_>, outcome: Outcome<'_>) -> Response {
    match outcome {
        Outcome::Root { env, format } => page(req, format, root_body(env, format)),
        Outcome::Project {
            project,
            files,
            format,
        } => page(req, format, project_body(project, &files, format)),
        Outcome::File { blob, .. } => {
            req.send_by_sha256(blob, "application/octet-stream", HeaderMap::new())
                .await
        }
        Outcome::Lock { .. } => respond::text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the lock is answered by its own route\n",
        ),
        Outcome::Redirect(location) => {
            let mut r = respond::text(
                StatusCode::MOVED_PERMANENTLY,
                format!("moved to {location}\n"),
            );
            r.headers_mut()
                .insert(header::LOCATION, header_text(&location));
            r
        }
        Outcome::NotFound(why) => respond::text(StatusCode::NOT_FOUND, format!("{why}\n")),
        Outcome::NotAcceptable => {
            let mut r = respond::text(
                StatusCode::NOT_ACCEPTABLE,
                "this index answers application/vnd.pypi.simple.v1+json, \
                 application/vnd.pypi.simple.v1+html or text/html\n",
            );
            r.headers_mut()
                .insert(header::VARY, HeaderValue::from_static("Accept"));
            r
        }
        Outcome::MethodNotAllowed => respond::method_not_allowed("GET, HEAD"),
    }
}

/// A page with its content type, `Vary: Accept` and a content ETag (304
/// when the client has it). Built each time, never put in the shared JSON
/// cache: its key does not tell representations apart.
fn page(req: &Req<'_>, format: Format, body: String) -> Response {
    let body = Bytes::from(body);
    let etag = format!("\"{}\"", &hex::encode(Sha256::digest(&body))[..32]);
    let mut h = HeaderMap::new();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    h.insert(header::ETAG, header_text(&etag));
    h.insert(header::VARY, HeaderValue::from_static("Accept"));
    respond::reply(
        req.method,
        req.headers,
        &CachedJson {
            headers: h,
            body,
            etag,
            source: respond::Source::Index,
        },
    )
}

fn root_body(env: &PyEnv, format: Format) -> String {
    if format.is_json() {
        let projects: Vec<Value> = env.projects.keys().map(|p| json!({"name": p})).collect();
        let v = json!({"meta": {"api-version": API_VERSION}, "projects": projects});
        return v.to_string();
    }
    let mut out = html_head(&format!("Simple index of {}", env.name));
    for p in env.projects.keys() {
        out.push_str(&format!(
            "    <a href=\"{}/\">{}</a><br/>\n",
            escape(&quote_path(p)),
            escape(p)
        ));
    }
    out.push_str("  </body>\n</html>\n");
    out
}

/// `../../files/{name}` from `/pypi/{env}/simple/{project}/`.
fn file_url(f: &PyFile) -> String {
    format!("../../files/{}", quote_path(&f.filename))
}

fn project_body(project: &str, files: &[&PyFile], format: Format) -> String {
    if format.is_json() {
        let mut versions: Vec<&str> = files.iter().map(|f| f.version.as_str()).collect();
        versions.sort_by(|a, b| natural_cmp(a, b));
        versions.dedup();
        let files: Vec<Value> = files.iter().map(|f| file_json(f)).collect();
        let v = json!({
            "meta": {"api-version": API_VERSION},
            "name": project,
            "files": files,
            "versions": versions,
        });
        return v.to_string();
    }
    let mut out = html_head(&format!("Links for {project}"));
    for f in files {
        let mut attrs = String::new();
        if let Some(rp) = &f.requires_python {
            attrs.push_str(&format!(" data-requires-python=\"{}\"", escape(rp)));
        }
        if let Some(m) = &f.metadata {
            // PEP 714's name, and PEP 658's for pip before 23.2.
            let v = format!("sha256={}", m.sha256);
            attrs.push_str(&format!(
                " data-core-metadata=\"{v}\" data-dist-info-metadata=\"{v}\""
            ));
        }
        if let Some(y) = &f.yanked {
            attrs.push_str(&format!(
                " data-yanked=\"{}\"",
                escape(y.reason.as_deref().unwrap_or(""))
            ));
        }
        out.push_str(&format!(
            "    <a href=\"{}#sha256={}\"{attrs}>{}</a><br/>\n",
            escape(&file_url(f)),
            f.blob.sha256,
            escape(&f.filename)
        ));
    }
    out.push_str("  </body>\n</html>\n");
    out
}

/// One file of a PEP 691 project page. The metadata key is `core-metadata`
/// (PEP 714) and `data-dist-info-metadata` as PyPI also sends it; never
/// `dist-info-metadata`, which pip 22.3–23.1 fails on.
fn file_json(f: &PyFile) -> Value {
    let mut v = json!({
        "filename": f.filename,
        "url": file_url(f),
        "hashes": {"sha256": f.blob.sha256},
        "size": f.blob.size,
        "yanked": match &f.yanked {
            None => Value::Bool(false),
            Some(y) => match &y.reason {
                Some(r) if !r.is_empty() => Value::String(r.clone()),
                _ => Value::Bool(true),
            },
        },
    });
    let o = v.as_object_mut().expect("a JSON object");
    if let Some(rp) = &f.requires_python {
        o.insert("requires-python".into(), json!(rp));
    }
    let metadata = match &f.metadata {
        Some(m) => json!({"sha256": m.sha256}),
        None => Value::Bool(false),
    };
    o.insert("core-metadata".into(), metadata.clone());
    o.insert("data-dist-info-metadata".into(), metadata);
    if let Some(t) = &f.upload_time {
        o.insert("upload-time".into(), json!(t));
    }
    v
}

fn html_head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html>\n  <head>\n    <meta name=\"pypi:repository-version\" content=\"{API_VERSION}\">\n    <title>{t}</title>\n  </head>\n  <body>\n    <h1>{t}</h1>\n",
        t = escape(title)
    )
}

/// HTML text and attribute escaping.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_escaped() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#x27;"
        );
        assert_eq!(escape(">=3.9"), "&gt;=3.9");
    }
}
