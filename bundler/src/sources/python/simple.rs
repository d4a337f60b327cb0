//! A package index's project page (the "simple" API): PEP 691 JSON, as PyPI
//! answers, or PEP 503 HTML, as PyTorch's index answers. What the publisher
//! says of each file — sha256, size, requires-python, yanked, upload time,
//! and the sha256 of its `.metadata` file — independently of any resolver.
//!
//! Both forms are read into [`IndexFile`]s; every URL is made absolute
//! against the page's; the body is bounded.

use llmgw_shared::manifest::DigestSource;
use reqwest::Url;
use serde::Deserialize;

use crate::error::CreateError;
use crate::http::{Http, HttpError};

/// A project page larger than this is refused: PyPI's torch page, with
/// every file of every release, is about 2 MiB.
const MAX_PAGE: usize = 64 << 20;

/// What is asked for: JSON first, HTML where that is all an index has.
pub const ACCEPT: &str = "application/vnd.pypi.simple.v1+json, text/html;q=0.1";
const JSON_TYPE: &str = "application/vnd.pypi.simple.v1+json";

/// One file as its index lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexFile {
    /// Where `sha256` came from: a JSON answer's hashes or an HTML link's
    /// fragment.
    pub source: DigestSource,
    pub filename: String,
    /// Absolute.
    pub url: String,
    /// Lower-case hex; `None` when the index gives no sha256.
    pub sha256: Option<String>,
    pub size: Option<u64>,
    pub requires_python: Option<String>,
    /// `Some(reason)` when yanked (the reason may be empty).
    pub yanked: Option<String>,
    pub upload_time: Option<String>,
    /// The `.metadata` file: `None` when not advertised, `Some(None)` when
    /// advertised without a hash, else its sha256.
    pub core_metadata: Option<Option<String>>,
    /// What the index says of the file's PEP 740 provenance.
    pub provenance: ProvenanceRef,
}

/// What an index says of a file's PEP 740 provenance.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ProvenanceRef {
    /// Nothing: a JSON entry without the `provenance` key (an older
    /// simple API version), an HTML link without `data-provenance`, or
    /// not an index at all.
    #[default]
    Unsaid,
    /// `"provenance": null`: the index has none for the file.
    None,
    /// The URL of its provenance object (absolute).
    Url(String),
}

/// A project's page: its files.
#[derive(Debug, Clone, Default)]
pub struct ProjectPage {
    pub files: Vec<IndexFile>,
}

impl ProjectPage {
    pub fn file(&self, filename: &str) -> Option<&IndexFile> {
        self.files.iter().find(|f| f.filename == filename)
    }
}

pub use llmgw_shared::pep503_normalize as normalize;

/// The pages of the simple API already fetched, by (index, normalized
/// project); `None` where the index has no such project.
pub type Pages = std::collections::BTreeMap<(String, String), Option<ProjectPage>>;

/// The version part of a wheel's file name; `None` for an sdist.
pub fn wheel_version(filename: &str) -> Option<&str> {
    let stem = filename.strip_suffix(".whl")?;
    stem.split('-').nth(1)
}

/// Fetches into `pages` each of `wanted` (index, normalized project) it
/// lacks, `jobs` at a time; the first failure is the answer.
pub async fn fetch_pages(
    http: &Http,
    jobs: usize,
    wanted: impl IntoIterator<Item = (String, String)>,
    pages: &mut Pages,
) -> Result<(), CreateError> {
    use futures_util::StreamExt;
    let missing: std::collections::BTreeSet<_> = wanted
        .into_iter()
        .filter(|k| !pages.contains_key(k))
        .collect();
    let fetched: Vec<_> = futures_util::stream::iter(missing)
        .map(|(index, project)| async move {
            let page = fetch_project(http, &index, &project).await;
            ((index, project), page)
        })
        .buffer_unordered(jobs.max(1))
        .collect()
        .await;
    for (k, page) in fetched {
        pages.insert(k, page?);
    }
    Ok(())
}

/// Fetches `{index}/{normalized project}/`; `None` when the index has no
/// such project (404).
pub async fn fetch_project(
    http: &Http,
    index: &str,
    project: &str,
) -> Result<Option<ProjectPage>, CreateError> {
    let url = format!("{}/{}/", index.trim_end_matches('/'), normalize(project));
    let (body, headers) = match http.get_small(&url, Some(ACCEPT), MAX_PAGE).await {
        Ok(v) => v,
        Err(HttpError::Status { status: 404, .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let ctype = headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let protocol = |detail: String| {
        CreateError::Http(HttpError::Protocol {
            url: url.clone(),
            detail,
        })
    };
    let base = Url::parse(&url).map_err(|source| HttpError::BadUrl {
        url: url.clone(),
        what: "not a URL",
        source,
    })?;
    let files = if ctype == JSON_TYPE {
        parse_json(&body, &base).map_err(|source| HttpError::Json {
            url: url.clone(),
            expected: "a PEP 691 project page",
            source,
        })?
    } else if ctype == "text/html" || ctype.is_empty() {
        let text = String::from_utf8_lossy(&body);
        parse_html(&text, &base)
    } else {
        return Err(protocol(format!(
            "answered Content-Type {ctype:?}; a package index answers {JSON_TYPE} or text/html"
        )));
    };
    Ok(Some(ProjectPage { files }))
}

#[derive(Deserialize)]
struct JsonPage {
    #[serde(default)]
    files: Vec<JsonFile>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct JsonFile {
    filename: String,
    url: String,
    #[serde(default)]
    hashes: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    requires_python: Option<String>,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    upload_time: Option<String>,
    #[serde(default)]
    yanked: Option<serde_json::Value>,
    #[serde(default)]
    core_metadata: Option<serde_json::Value>,
    #[serde(default)]
    data_dist_info_metadata: Option<serde_json::Value>,
    /// Absent, `null` or a URL; kept raw to tell absent from `null`.
    #[serde(default, deserialize_with = "present")]
    provenance: Option<serde_json::Value>,
}

/// `Some(value)` (`Some(Null)` too) whenever the key is present.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<serde_json::Value>, D::Error> {
    serde_json::Value::deserialize(d).map(Some)
}

/// A JSON entry's `provenance`, its URL made absolute against the page's.
fn provenance_of(v: Option<serde_json::Value>, base: &Url) -> ProvenanceRef {
    match v {
        None => ProvenanceRef::Unsaid,
        Some(serde_json::Value::String(u)) => ProvenanceRef::Url(absolute(base, &u)),
        Some(_) => ProvenanceRef::None,
    }
}

/// `false`/absent: no; `true`: yes, no hash; `{"sha256": …}`: with it.
fn metadata_of(v: Option<serde_json::Value>) -> Option<Option<String>> {
    match v? {
        serde_json::Value::Bool(false) | serde_json::Value::Null => None,
        serde_json::Value::Object(m) => Some(
            m.get("sha256")
                .and_then(|h| h.as_str())
                .map(str::to_ascii_lowercase),
        ),
        _ => Some(None),
    }
}

fn parse_json(body: &[u8], base: &Url) -> Result<Vec<IndexFile>, serde_json::Error> {
    let page: JsonPage = serde_json::from_slice(body)?;
    Ok(page
        .files
        .into_iter()
        .map(|f| IndexFile {
            source: DigestSource::PypiSimpleSha256,
            url: absolute(base, &f.url),
            sha256: f.hashes.get("sha256").map(|h| h.to_ascii_lowercase()),
            size: f.size,
            requires_python: f.requires_python.filter(|r| !r.is_empty()),
            yanked: match f.yanked {
                Some(serde_json::Value::Bool(true)) => Some(String::new()),
                Some(serde_json::Value::String(r)) => Some(r),
                _ => None,
            },
            upload_time: f.upload_time,
            core_metadata: metadata_of(f.core_metadata.or(f.data_dist_info_metadata)),
            provenance: provenance_of(f.provenance, base),
            filename: f.filename,
        })
        .collect())
}

fn absolute(base: &Url, href: &str) -> String {
    base.join(href)
        .map(|u| u.to_string())
        .unwrap_or_else(|_| href.to_string())
}

/// PEP 503: one `<a href="URL#sha256=HEX" data-…>filename</a>` a file.
fn parse_html(text: &str, base: &Url) -> Vec<IndexFile> {
    let mut out = Vec::new();
    let lower = text.to_ascii_lowercase();
    let mut at = 0;
    while let Some(i) = lower[at..].find("<a") {
        let start = at + i;
        let Some(gt) = lower[start..].find('>') else {
            break;
        };
        let tag = &text[start + 2..start + gt];
        let body_start = start + gt + 1;
        let end = lower[body_start..]
            .find("</a")
            .map_or(text.len(), |e| body_start + e);
        at = end;
        // "<abbr" and the like are not anchors.
        if !tag.starts_with(|c: char| c.is_ascii_whitespace()) {
            continue;
        }
        let attrs = attributes(tag);
        let attr = |name: &str| {
            attrs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let Some(href) = attr("href") else { continue };
        let (link, fragment) = match href.split_once('#') {
            Some((l, f)) => (l.to_string(), Some(f.to_string())),
            None => (href.clone(), None),
        };
        let sha256 = fragment
            .as_deref()
            .and_then(|f| f.strip_prefix("sha256="))
            .map(str::to_ascii_lowercase);
        let metadata = attr("data-core-metadata").or(attr("data-dist-info-metadata"));
        out.push(IndexFile {
            source: DigestSource::IndexUrlFragment,
            filename: unescape(text[body_start..end].trim()),
            url: absolute(base, &link),
            sha256,
            size: None,
            requires_python: attr("data-requires-python").filter(|r| !r.is_empty()),
            yanked: attr("data-yanked"),
            upload_time: None,
            core_metadata: metadata.and_then(|m| match m.as_str() {
                "false" => None,
                m => Some(m.strip_prefix("sha256=").map(str::to_ascii_lowercase)),
            }),
            provenance: attr("data-provenance").map_or(ProvenanceRef::Unsaid, |u| {
                ProvenanceRef::Url(absolute(base, &u))
            }),
        });
    }
    out
}

/// `name="value"`, `name='value'`, `name=value` and bare `name`, names
/// lower-cased, values unescaped.
fn attributes(tag: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let b = tag.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b'/') {
            i += 1;
        }
        let ns = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'=' && b[i] != b'/' {
            i += 1;
        }
        if ns == i {
            i += 1;
            continue;
        }
        let name = tag[ns..i].to_ascii_lowercase();
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() || b[i] != b'=' {
            out.push((name, String::new()));
            continue;
        }
        i += 1;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let value = if i < b.len() && (b[i] == b'"' || b[i] == b'\'') {
            let q = b[i];
            let vs = i + 1;
            let ve = tag[vs..].find(q as char).map_or(b.len(), |e| vs + e);
            i = ve + 1;
            &tag[vs..ve.min(tag.len())]
        } else {
            let vs = i;
            while i < b.len() && !b[i].is_ascii_whitespace() {
                i += 1;
            }
            &tag[vs..i]
        };
        out.push((name, unescape(value)));
    }
    out
}

/// The character references an index writes: `&lt;` in `>=3.9`, `&amp;`.
fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let Some(semi) = rest.find(';').filter(|s| *s <= 10) else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let ent = &rest[1..semi];
        let c = match ent {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "amp" => Some('&'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => ent
                .strip_prefix("#x")
                .or_else(|| ent.strip_prefix("#X"))
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| ent.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match c {
            Some(c) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_versions() {
        assert_eq!(
            wheel_version("flashinfer_cubin-0.5.3-py3-none-any.whl"),
            Some("0.5.3")
        );
        assert_eq!(wheel_version("flashinfer_python-0.4.1.tar.gz"), None);
        assert_eq!(
            wheel_version("flashinfer_jit_cache-0.5.3+cu130-cp39-abi3-manylinux_2_28_x86_64.whl"),
            Some("0.5.3+cu130")
        );
    }

    fn base() -> Url {
        Url::parse("https://idx.example/simple/torch/").unwrap()
    }

    #[test]
    fn json_pages_as_pypi_writes_them() {
        let body = br#"{"meta":{"api-version":"1.4"},"name":"markupsafe","files":[
          {"filename":"markupsafe-3.0.4-cp312-cp312-manylinux_2_17_x86_64.whl",
           "url":"https://files.example/packages/ab/markupsafe-3.0.4-cp312-cp312-manylinux_2_17_x86_64.whl",
           "hashes":{"sha256":"AB12"},"requires-python":">=3.9","size":22,
           "upload-time":"2025-09-27T18:36:05.123Z","yanked":false,
           "core-metadata":{"sha256":"CD34"},"data-dist-info-metadata":{"sha256":"CD34"}},
          {"filename":"old-1.0.tar.gz","url":"../../files/old-1.0.tar.gz","hashes":{},
           "yanked":"broken","core-metadata":false}]}"#;
        let files = parse_json(body, &base()).unwrap();
        assert_eq!(files[0].sha256.as_deref(), Some("ab12"));
        assert_eq!(files[0].size, Some(22));
        assert_eq!(files[0].requires_python.as_deref(), Some(">=3.9"));
        assert_eq!(files[0].core_metadata, Some(Some("cd34".into())));
        assert_eq!(files[0].yanked, None);
        assert_eq!(files[1].url, "https://idx.example/files/old-1.0.tar.gz");
        assert_eq!(files[1].sha256, None);
        assert_eq!(files[1].yanked.as_deref(), Some("broken"));
        assert_eq!(files[1].core_metadata, None);
    }

    #[test]
    fn pep740_provenance_is_a_url_none_or_unsaid() {
        let body = br#"{"files":[
          {"filename":"a-1-py3-none-any.whl","url":"a.whl","hashes":{},
           "provenance":"/integrity/a/1/a-1-py3-none-any.whl/provenance"},
          {"filename":"b-1-py3-none-any.whl","url":"b.whl","hashes":{},"provenance":null},
          {"filename":"c-1-py3-none-any.whl","url":"c.whl","hashes":{}}]}"#;
        let files = parse_json(body, &base()).unwrap();
        assert_eq!(
            files[0].provenance,
            ProvenanceRef::Url(
                "https://idx.example/integrity/a/1/a-1-py3-none-any.whl/provenance".into()
            )
        );
        assert_eq!(files[1].provenance, ProvenanceRef::None);
        assert_eq!(files[2].provenance, ProvenanceRef::Unsaid);
        let html = r#"<a href="a.whl#sha256=ab" data-provenance="https://p.example/a">a.whl</a>
<a href="b.whl#sha256=cd">b.whl</a>"#;
        let files = parse_html(html, &base());
        assert_eq!(
            files[0].provenance,
            ProvenanceRef::Url("https://p.example/a".into())
        );
        assert_eq!(files[1].provenance, ProvenanceRef::Unsaid);
    }

    #[test]
    fn html_pages_as_pytorch_writes_them() {
        let html = r#"<!DOCTYPE html><html><body><h1>Links for torch</h1>
<a href="/whl/cu129/torch-2.9.0%2Bcu129-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=ABCD" data-requires-python="&gt;=3.10" data-dist-info-metadata="sha256=ef01" data-core-metadata="sha256=ef01">torch-2.9.0+cu129-cp312-cp312-manylinux_2_28_x86_64.whl</a><br/>
<A HREF='torch-2.8.0-cp312-none-any.whl' data-yanked="">torch-2.8.0-cp312-none-any.whl</A>
<abbr title="x">not a link</abbr>
</body></html>"#;
        let files = parse_html(html, &base());
        assert_eq!(files.len(), 2, "{files:?}");
        assert_eq!(
            files[0].filename,
            "torch-2.9.0+cu129-cp312-cp312-manylinux_2_28_x86_64.whl"
        );
        assert_eq!(
            files[0].url,
            "https://idx.example/whl/cu129/torch-2.9.0%2Bcu129-cp312-cp312-manylinux_2_28_x86_64.whl"
        );
        assert_eq!(files[0].sha256.as_deref(), Some("abcd"));
        assert_eq!(files[0].requires_python.as_deref(), Some(">=3.10"));
        assert_eq!(files[0].core_metadata, Some(Some("ef01".into())));
        assert_eq!(files[1].sha256, None);
        assert_eq!(files[1].yanked.as_deref(), Some(""));
        assert_eq!(
            files[1].url,
            "https://idx.example/simple/torch/torch-2.8.0-cp312-none-any.whl"
        );
    }

    #[test]
    fn unescape_reads_references() {
        assert_eq!(unescape("&gt;=3.9,&lt;4&amp;&#39;&#x41;"), ">=3.9,<4&'A");
        assert_eq!(unescape("a & b &bogus; c"), "a & b &bogus; c");
    }
}
