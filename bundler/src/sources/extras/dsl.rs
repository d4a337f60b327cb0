//! FlashInfer's CuTe DSL FMHA kernels (issue #32): from FlashInfer 0.6.10
//! `.so` files its loader fetches at run time from
//! `FLASHINFER_CUBINS_REPOSITORY`, which no wheel holds. For each carried
//! environment that resolved `flashinfer-python` to a release with pins,
//! for its node CPU (`amd64` → `x86_64`, `arm64` → `aarch64`, as
//! `artifacts.py` `_get_host_cpu_arch` names it): each `sm` directory's
//! `checksums.txt` is fetched and checked against the sha256 FlashInfer's
//! own `artifacts.py` pins for it, then every file it lists is planned,
//! checked against its line; all are runtime extras at their upstream
//! path, so `/extras/edge.urm.nvidia.com/artifactory/…/` is the
//! repository a node's `FLASHINFER_CUBINS_REPOSITORY` names.
//!
//! Invariant: nothing is carried that the chain does not pin — a
//! `checksums.txt` whose sha256 is not the pinned one is refused before it
//! is read, each kernel must hash to its line — and a release without
//! pins, or `--no-extras`, is a gap naming the release and why, never a
//! silent absence. `--extras-base` changes where the bytes come from,
//! never what they must be.

use std::collections::BTreeMap;

use futures_util::StreamExt;
use llmgw_shared::manifest::{DSL_GAP_SUFFIX, DigestSource, Extra, PublisherDigest};
use llmgw_shared::recipe::{
    FLASHINFER_CUBINS_HOST, FLASHINFER_CUBINS_PATH, FLASHINFER_CUBINS_REPOSITORY_DEFAULT,
    FLASHINFER_DSL_FMHA_SINCE, public_version, version_before,
};
use llmgw_shared::{Sha256, parse_sha256sums};

use crate::cache::{Cache, Expect};
use crate::error::CreateError;
use crate::fetch::Download;
use crate::http::{Http, HttpError, redact};
use crate::plan::Plan;
use crate::sources::python::PlannedEnv;
use crate::sources::python::interpreter::triple_arch;
use crate::sources::python::simple::normalize;
use crate::spec::dsl_pins::DslPins;
use crate::spec::extras::ExtrasChoice;

/// A `checksums.txt` lists a few hundred kernels, a line each: 1 MiB is
/// far past any real one.
const MAX_CHECKSUMS_FILE: usize = 1 << 20;

/// What the environments ask for: by (pins directory, CPU), the pins and
/// the engines (or site environments) whose FlashInfer fetches them.
type Wanted = BTreeMap<(String, &'static str), (DslPins, String, Vec<String>)>;

/// Plans the DSL FMHA kernels of every environment in `envs` that
/// resolved `flashinfer-python` from [`FLASHINFER_DSL_FMHA_SINCE`] on, or
/// records each as a gap (under `allow_missing`, also those whose pinned
/// checksum file cannot be had).
pub async fn plan(
    http: &Http,
    cache: &Cache,
    (jobs, allow_missing): (usize, bool),
    choice: &ExtrasChoice,
    envs: &[PlannedEnv],
    plan: &mut Plan,
) -> Result<(), CreateError> {
    let mut wanted = Wanted::new();
    for env in envs {
        let Some(version) = flashinfer_of(env) else {
            continue;
        };
        let what = format!("{}: FlashInfer {version}{DSL_GAP_SUFFIX}", env.request.name);
        let cpu = triple_arch(&env.request.arch);
        let pins = choice.dsl_pins.of(public_version(&version));
        let why = match (&pins, choice.leave_out) {
            (_, true) => format!("--no-extras: left out; {}", fetched_how()),
            (None, false) => format!(
                "the recipe table has no pins for FlashInfer {version} (read from flashinfer/\
                 artifacts.py at v0.6.10 to v0.6.18rc7 only), so what to carry cannot be \
                 checked; {}",
                fetched_how()
            ),
            (Some(p), false) => {
                let user = env.request.engine.as_ref().unwrap_or(&env.request.name);
                let entry = wanted
                    .entry((p.dir.clone(), cpu))
                    .or_insert_with(|| (p.clone(), version.clone(), Vec::new()));
                if !entry.2.contains(user) {
                    entry.2.push(user.clone());
                    entry.2.sort();
                }
                continue;
            }
        };
        plan.gap(what, why);
    }
    for ((_, cpu), (pins, version, users)) in wanted {
        for (rel, pin) in pins.checksums_of(cpu) {
            let sums = Sums {
                version: &version,
                rel: &rel,
                pin,
                from: &pins.from,
                users: &users,
            };
            let (extras, stored) = (plan.extras.len(), plan.stored.len());
            match sums.plan(http, cache, jobs, choice, plan).await {
                Ok(()) => {}
                // #53 item 1: an optional source that cannot be had is a
                // gap under --allow-missing, nothing of it half planned.
                Err(e) if allow_missing => {
                    plan.extras.truncate(extras);
                    plan.stored.truncate(stored);
                    plan.gap(
                        format!("{}: FlashInfer {version}{DSL_GAP_SUFFIX}", users.join(", ")),
                        format!(
                            "--allow-missing: {}; {}",
                            llmgw_shared::Chain(&e),
                            fetched_how()
                        ),
                    );
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// The version of `flashinfer-python` environment `env` carries, from
/// [`FLASHINFER_DSL_FMHA_SINCE`] on.
fn flashinfer_of(env: &PlannedEnv) -> Option<String> {
    env.files
        .iter()
        .map(|f| &f.file)
        .find(|f| normalize(&f.project) == "flashinfer-python")
        .map(|f| f.version.clone())
        .filter(|v| !version_before(v, FLASHINFER_DSL_FMHA_SINCE))
}

/// What a node does without the kernels, for a gap's reason.
fn fetched_how() -> String {
    format!(
        "from FlashInfer {FLASHINFER_DSL_FMHA_SINCE} these kernels are .so files no wheel holds; \
         a Blackwell node that uses them fetches them from FLASHINFER_CUBINS_REPOSITORY \
         (default {FLASHINFER_CUBINS_REPOSITORY_DEFAULT}; flashinfer/attention/cute_dsl/\
         fmha.py _load_from_artifact)"
    )
}

/// One pinned `checksums.txt` and what it lists.
struct Sums<'a> {
    version: &'a str,
    /// Its path under the repository: `{dir}{cpu}/{sm}/checksums.txt`.
    rel: &'a str,
    /// The sha256 pinned for it.
    pin: &'a str,
    /// Where the pin comes from.
    from: &'a str,
    users: &'a [String],
}

impl Sums<'_> {
    /// Fetches and checks the `checksums.txt`, keeps it, and plans each
    /// file it lists.
    async fn plan(
        &self,
        http: &Http,
        cache: &Cache,
        jobs: usize,
        choice: &ExtrasChoice,
        plan: &mut Plan,
    ) -> Result<(), CreateError> {
        let path = format!("{FLASHINFER_CUBINS_PATH}{}", self.rel);
        let url = choice.url_at(FLASHINFER_CUBINS_HOST, &path);
        let what = format!(
            "FlashInfer {} CuTe DSL FMHA {FLASHINFER_CUBINS_HOST}/{path}",
            self.version
        );
        let part = |error: CreateError| CreateError::Part {
            part: what.clone(),
            advice: format!(
                "pass --extras-base {FLASHINFER_CUBINS_HOST}=URL to fetch it from a copy, or \
                 --no-extras to leave the runtime extras out as gaps"
            ),
            error: Box::new(error),
        };
        let (body, _) = http
            .get_small(&url, None, MAX_CHECKSUMS_FILE)
            .await
            .map_err(|e| part(e.into()))?;
        let got = Sha256::of(&body);
        if got.as_str() != self.pin {
            return Err(CreateError::WrongBytes {
                what: format!("{what} (pinned in {})", self.from),
                algorithm: "sha256",
                expected: self.pin.to_string(),
                actual: got.into(),
            });
        }
        let lines = parse_sha256sums(&url, &String::from_utf8_lossy(&body))?;
        let (sha, kept) = cache
            .put_bytes(&body)
            .map_err(|e| CreateError::io(cache.root(), e))?;
        plan.store(sha.clone(), kept, body.len() as u64);
        plan.extras.push(self.extra(
            &path,
            sha,
            body.len() as u64,
            DigestSource::ClientPinnedSha256,
        ));
        let dir = &path[..path.len() - "checksums.txt".len()];
        let sized: Vec<Result<(String, Sha256, u64), CreateError>> =
            futures_util::stream::iter(lines)
                .map(|l| async move {
                    let file = format!("{dir}{}", l.name);
                    let size = size_of(http, &choice.url_at(FLASHINFER_CUBINS_HOST, &file)).await;
                    size.map(|s| (file, l.sha256, s))
                        .map_err(|e| part(e.into()))
                })
                .buffered(jobs.max(1))
                .collect()
                .await;
        for s in sized {
            let (file, sha256, size) = s?;
            plan.download(Download {
                label: format!("runtime extra {FLASHINFER_CUBINS_HOST}/{file}"),
                url: choice.url_at(FLASHINFER_CUBINS_HOST, &file),
                size,
                expect: Expect::Sha256(sha256.clone()),
                denied_hint: None,
            });
            plan.extras
                .push(self.extra(&file, sha256, size, DigestSource::Sha256Sums));
        }
        Ok(())
    }

    fn extra(&self, path: &str, sha256: Sha256, size: u64, source: DigestSource) -> Extra {
        Extra {
            host: FLASHINFER_CUBINS_HOST.to_string(),
            path: path.to_string(),
            size,
            publisher_digests: vec![PublisherDigest {
                source,
                value: sha256.to_string(),
            }],
            sha256,
            engines: self.users.to_vec(),
        }
    }
}

/// A kernel's size, from the server's `Content-Length` (a checksum file
/// gives none); the body is not read.
async fn size_of(http: &Http, url: &str) -> Result<u64, HttpError> {
    let (resp, final_url) = http.get(url, None, None).await?;
    if !resp.status().is_success() {
        return Err(HttpError::Status {
            url: redact(&final_url),
            status: resp.status().as_u16(),
            error_code: None,
            message: None,
        });
    }
    resp.headers()
        .get(reqwest::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or_else(|| HttpError::Protocol {
            url: redact(&final_url),
            detail: "a checksum file lists no size and the server sends no Content-Length".into(),
        })
}
