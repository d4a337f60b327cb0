//! Runtime extras (issue #32): the files the engines of the carried Python
//! environments fetch when they run (gpt-oss's BPE encodings), planned from
//! the recipe table with the digests their clients pin.
//!
//! Invariant: an extra is only ever expected to hash to the sha256 the
//! recipe table pins for it — `--extras-base HOST=URL` changes where its
//! bytes are fetched from, never what they must be — and one left out
//! (`--no-extras`) is a gap in the manifest, never silently missing.

use std::collections::BTreeMap;

use llmgw_shared::manifest::{DigestSource, Extra, PublisherDigest, PythonEnv, is_extra_host};
use llmgw_shared::recipe::{ExtraFile, extras_of, settings_of};
use llmgw_shared::{Sha256, shown};

use crate::cache::Expect;
use crate::error::CreateError;
use crate::fetch::Download;
use crate::plan::Plan;

/// What the operator chose of the extras.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtrasChoice {
    /// `--no-extras`: leave them out, each a gap.
    pub leave_out: bool,
    /// `--extras-base HOST=URL`: by host, the base its files are fetched
    /// from instead (no trailing `/`; the upstream path follows).
    pub bases: BTreeMap<String, String>,
}

impl ExtrasChoice {
    /// Reads `--no-extras` and each `--extras-base HOST=URL`.
    pub fn parse(no_extras: bool, bases: &[String]) -> Result<Self, CreateError> {
        if no_extras && !bases.is_empty() {
            return Err(CreateError::Usage(
                "--no-extras leaves the runtime extras out, and --extras-base says where to \
                 fetch them from; give one of the two"
                    .into(),
            ));
        }
        let mut out = Self {
            leave_out: no_extras,
            bases: BTreeMap::new(),
        };
        for b in bases {
            let (host, url) = b.split_once('=').ok_or_else(|| {
                CreateError::Usage(format!(
                    "--extras-base {}: expected HOST=URL, e.g. \
                     openaipublic.blob.core.windows.net=http://127.0.0.1:8080/extras",
                    shown(b)
                ))
            })?;
            if !is_extra_host(host) {
                return Err(CreateError::Usage(format!(
                    "--extras-base {}: {} is not a host name (lower-case letters, digits, \
                     '-' and '.')",
                    shown(b),
                    shown(host)
                )));
            }
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(CreateError::Usage(format!(
                    "--extras-base {}: expected an http:// or https:// URL after '=', found {}",
                    shown(b),
                    shown(url)
                )));
            }
            let url = url.trim_end_matches('/').to_string();
            if out.bases.insert(host.to_string(), url).is_some() {
                return Err(CreateError::Usage(format!(
                    "--extras-base names {} twice; give one base per host",
                    shown(host)
                )));
            }
        }
        Ok(out)
    }

    /// Where `f` is fetched from: its host's base when one was given.
    fn url_of(&self, f: &ExtraFile) -> String {
        match self.bases.get(f.host) {
            Some(base) => format!("{base}/{}", f.path),
            None => f.url(),
        }
    }
}

/// Plans the extras of every engine environment in `envs` (each file
/// once, with every engine that fetches it), or records each as a gap
/// when the operator left them out.
pub fn plan(choice: &ExtrasChoice, envs: &[PythonEnv], plan: &mut Plan) {
    let mut files: BTreeMap<(&str, &str), (ExtraFile, Vec<String>)> = BTreeMap::new();
    for env in envs {
        let (Some(engine), Some(version)) = (&env.engine, &env.version) else {
            continue;
        };
        for f in extras_of(engine, version) {
            let entry = files
                .entry((f.host, f.path))
                .or_insert_with(|| (f, Vec::new()));
            if !entry.1.contains(engine) {
                entry.1.push(engine.clone());
            }
        }
    }
    for (f, engines) in files.into_values() {
        if choice.leave_out {
            plan.gap(
                format!("runtime extra {}/{}", f.host, f.path),
                format!(
                    "--no-extras: left out; {} fetch it at run time ({})",
                    engines.join(", "),
                    variables(&f)
                ),
            );
            continue;
        }
        let Ok(sha256) = Sha256::parse("runtime extra sha256", f.sha256) else {
            // The table's own tests hold every value to 64 hex digits.
            continue;
        };
        plan.download(Download {
            label: format!("runtime extra {}/{}", f.host, f.path),
            url: choice.url_of(&f),
            size: f.size,
            expect: Expect::Sha256(sha256.clone()),
            denied_hint: None,
        });
        plan.extras.push(Extra {
            host: f.host.to_string(),
            path: f.path.to_string(),
            size: f.size,
            sha256: sha256.clone(),
            publisher_digests: vec![PublisherDigest {
                source: DigestSource::ClientPinnedSha256,
                value: sha256.to_string(),
            }],
            engines,
        });
    }
}

/// The variables that point clients at a copy of `f`, for a gap's reason.
fn variables(f: &ExtraFile) -> String {
    let mut names: Vec<&str> = settings_of(f.host, f.path)
        .iter()
        .map(|(_, s)| s.variable)
        .collect();
    names.sort();
    names.dedup();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases_are_checked_and_never_change_the_digest() {
        let c = ExtrasChoice::parse(
            false,
            &["openaipublic.blob.core.windows.net=http://127.0.0.1:9/x/".into()],
        )
        .unwrap();
        let f = llmgw_shared::recipe::extras_of("vllm", "0.20.1")[0];
        assert_eq!(
            c.url_of(&f),
            "http://127.0.0.1:9/x/encodings/o200k_base.tiktoken"
        );
        for bad in ["nohost", "Bad Host=http://x", "h.org=ftp://x"] {
            assert!(ExtrasChoice::parse(false, &[bad.into()]).is_err(), "{bad}");
        }
        let twice = ["h.org=http://a".to_string(), "h.org=http://b".to_string()];
        assert!(ExtrasChoice::parse(false, &twice).is_err());
        assert!(ExtrasChoice::parse(true, &["h.org=http://a".into()]).is_err());
    }
}
