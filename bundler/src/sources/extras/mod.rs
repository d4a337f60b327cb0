//! Runtime extras (issue #32): the files the engines of the carried Python
//! environments fetch when they run (gpt-oss's BPE encodings), planned from
//! the recipe table with the digests their clients pin; FlashInfer's CuTe
//! DSL FMHA kernels, whose files are known only from a pinned checksum
//! file, in `dsl`.
//!
//! Invariant: an extra is only ever expected to hash to the sha256 the
//! recipe table pins for it — `--extras-base HOST=URL` changes where its
//! bytes are fetched from, never what they must be — and one left out
//! (`--no-extras`) is a gap in the manifest, never silently missing.

use std::collections::BTreeMap;

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{DigestSource, EXTRA_GAP_PREFIX, Extra, PublisherDigest, PythonEnv};
use llmgw_shared::recipe::{ExtraFile, extras_of, settings_of};

use crate::cache::Expect;
use crate::fetch::Download;
use crate::plan::Plan;
use crate::spec::extras::ExtrasChoice;

pub mod dsl;

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
                format!("{EXTRA_GAP_PREFIX}{}/{}", f.host, f.path),
                format!(
                    "--no-extras: left out; {} it at run time ({})",
                    engines_fetch(&engines),
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

/// `vllm fetches` or `vllm and sglang fetch`: who fetches an extra, for a
/// gap's reason.
fn engines_fetch(engines: &[String]) -> String {
    let verb = llmgw_shared::noun(engines.len(), "fetches", "fetch");
    match engines {
        [] => "its engine fetches".to_string(),
        [one] => format!("{one} {verb}"),
        [rest @ .., last] => format!("{} and {last} {verb}", rest.join(", ")),
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
    #[test]
    fn who_fetches_agrees_with_how_many() {
        let e =
            |v: &[&str]| super::engines_fetch(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(e(&["vllm"]), "vllm fetches");
        assert_eq!(e(&["vllm", "sglang"]), "vllm and sglang fetch");
        assert_eq!(e(&["a", "b", "c"]), "a, b and c fetch");
    }
}
