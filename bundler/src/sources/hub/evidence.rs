//! What the Hub says about a repository besides its files: the card's
//! licence (the `license:` tag, or `cardData.license`, of the revision's
//! model info), and each chosen file's security scan, asked for the way
//! `huggingface_hub`'s `get_paths_info(paths, expand=True)` asks —
//! `POST /api/{type}s/{id}/paths-info/{commit}` with form fields `paths`
//! (repeated) and `expand=True` — and read as its `RepoFile` reads
//! `securityFileStatus` (`status`, `avScan`, `pickleImportScan`, and the
//! optional `jFrogScan`, `protectAiScan`, each `{status, message?,
//! pickleImports?[{module, name, safety}]}`).
//!
//! Invariant: what is recorded is what the Hub said, cleaned to fit the
//! manifest's checks (words for statuses, bounded text without control
//! characters); an endpoint without `paths-info` (404, 405, or 501 Not
//! Implemented, as a plain HTTP server answers a method it lacks) gives no
//! verdicts and a warning, never made-up ones.

use llmgw_shared::manifest::{FileScan, MAX_EVIDENCE_ITEMS, PickleImport, ScannerVerdict};
use serde::Deserialize;

use super::{HubClient, MAX_PAGE, what};
use crate::error::CreateError;
use crate::http::HttpError;
use crate::spec::RepoSpec;

/// Paths per `paths-info` request: the Hub answers an expanded listing 50
/// entries at a time.
const PATHS_PER_REQUEST: usize = 50;

/// The scanners, in the order they are recorded.
const SCANNERS: [&str; 4] = ["avScan", "pickleImportScan", "jFrogScan", "protectAiScan"];

/// The revision answer's parts that state a licence.
#[derive(Deserialize, Default)]
pub(super) struct LicenceJson {
    #[serde(default)]
    tags: Vec<serde_json::Value>,
    #[serde(default, rename = "cardData")]
    card_data: Option<serde_json::Value>,
}

impl LicenceJson {
    /// The card's licence: `cardData.license` (a string, or the first of a
    /// list), else the first `license:` tag.
    pub(super) fn licence(&self) -> Option<String> {
        let from_card = self
            .card_data
            .as_ref()
            .and_then(|c| c.get("license"))
            .and_then(|l| match l {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Array(a) => a.first().and_then(|v| v.as_str()).map(String::from),
                _ => None,
            });
        let from_tags = || {
            self.tags
                .iter()
                .filter_map(|t| t.as_str())
                .find_map(|t| t.strip_prefix("license:"))
                .map(String::from)
        };
        from_card.or_else(from_tags).and_then(|l| text(&l, 200))
    }
}

/// The safetensors and GGUF files among `paths` (at most
/// [`MAX_EVIDENCE_ITEMS`]), sorted.
pub(super) fn weights_variants(paths: &[String]) -> Vec<String> {
    let mut v: Vec<String> = paths
        .iter()
        .filter(|p| {
            let l = p.to_ascii_lowercase();
            l.ends_with(".safetensors") || l.ends_with(".gguf")
        })
        .cloned()
        .collect();
    v.sort();
    v.truncate(MAX_EVIDENCE_ITEMS);
    v
}

#[derive(Deserialize)]
struct PathInfo {
    #[serde(rename = "type")]
    kind: String,
    path: String,
    #[serde(default, rename = "securityFileStatus")]
    security: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ScanJson {
    status: String,
    #[serde(default)]
    message: Option<String>,
    #[serde(default, rename = "pickleImports")]
    pickle_imports: Option<Vec<ImportJson>>,
}

#[derive(Deserialize)]
struct ImportJson {
    module: String,
    name: String,
    safety: String,
}

/// The Hub's verdict on each of `paths` at `commit` (a file it gives none
/// for is left out).
pub(super) async fn scans(
    hub: &HubClient<'_>,
    spec: &RepoSpec,
    commit: &str,
    paths: &[String],
) -> Result<Vec<FileScan>, CreateError> {
    let url = format!(
        "{}/api/{}/{}/paths-info/{commit}",
        hub.endpoint,
        spec.kind.api_plural(),
        spec.id
    );
    let mut out = Vec::new();
    for batch in paths.chunks(PATHS_PER_REQUEST) {
        let mut form: Vec<(&str, &str)> = batch.iter().map(|p| ("paths", p.as_str())).collect();
        form.push(("expand", "True"));
        let body = match hub.http.post_form_small(&url, &form, MAX_PAGE).await {
            Ok(b) => b,
            Err(HttpError::Status {
                status: 404 | 405 | 501,
                ..
            }) => {
                tracing::warn!(
                    "{}: {url} is not answered (the endpoint has no paths-info); the bundle \
                     records no scan verdicts, so a mirror with `policy model-files \
                     scanned-clean` will refuse its files as never scanned",
                    what(spec)
                );
                return Ok(Vec::new());
            }
            Err(e) => return Err(hub.refusal(spec, e)),
        };
        let infos: Vec<PathInfo> = serde_json::from_slice(&body)
            .map_err(|e| CreateError::hub_answer(&what(spec), &url, "paths-info answer", e))?;
        for info in infos {
            if info.kind != "file" || !batch.contains(&info.path) {
                continue;
            }
            let Some(sec) = info.security.filter(|s| !s.is_null()) else {
                continue;
            };
            let status = sec.get("status").and_then(|s| s.as_str()).unwrap_or("");
            let scans = SCANNERS
                .iter()
                .filter_map(|name| {
                    let v = sec.get(*name).filter(|v| !v.is_null())?;
                    let s: ScanJson = serde_json::from_value(v.clone()).ok()?;
                    Some(verdict(name, s))
                })
                .collect();
            if !out.iter().any(|f: &FileScan| f.path == info.path) {
                out.push(FileScan {
                    path: info.path,
                    status: word(status),
                    scans,
                });
            }
        }
    }
    Ok(out)
}

fn verdict(scanner: &str, s: ScanJson) -> ScannerVerdict {
    let mut pickle_imports: Vec<PickleImport> = s
        .pickle_imports
        .unwrap_or_default()
        .into_iter()
        .filter_map(|i| {
            Some(PickleImport {
                module: text(&i.module, 200)?,
                name: text(&i.name, 200)?,
                safety: word(&i.safety),
            })
        })
        .collect();
    pickle_imports.truncate(MAX_EVIDENCE_ITEMS);
    ScannerVerdict {
        scanner: scanner.to_string(),
        status: word(&s.status),
        message: s.message.as_deref().and_then(|m| text(m, 2000)),
        pickle_imports,
    }
}

/// A status as a word the manifest accepts; `unknown` for anything else.
fn word(s: &str) -> String {
    let ok =
        !s.is_empty() && s.len() <= 40 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        s.to_string()
    } else {
        "unknown".to_string()
    }
}

/// Text from the Hub without control characters, at most `max` bytes.
fn text(s: &str, max: usize) -> Option<String> {
    let mut t = String::new();
    for c in s.chars().filter(|c| !c.is_control()) {
        if t.len() + c.len_utf8() > max {
            break;
        }
        t.push(c);
    }
    let t = t.trim().to_string();
    (!t.is_empty()).then_some(t)
}
