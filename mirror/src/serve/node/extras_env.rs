//! The runtime extras' part of what a node sets (`GET /-/env`, `mirror
//! env`): for each client variable the recipe table names for an extra
//! held, where the node fetches each file from the mirror and under which
//! name it puts it, since the clients read a local directory (Harmony's
//! `TIKTOKEN_ENCODINGS_BASE`, tiktoken's `TIKTOKEN_CACHE_DIR`), not a URL.
//!
//! Invariant: a variable is named only for extras the store holds, each
//! file's URL is the mirror's `/extras/<host>/<path>`, and the name it is
//! given is the one its client looks for (the recipe table's rule).

use std::collections::{BTreeMap, BTreeSet};

use llmgw_shared::recipe::settings_of;
use serde::Serialize;

/// One file a client wants, where the node gets it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ExtraFileAt {
    /// Its URL on the mirror.
    pub url: String,
    /// The name the client looks for in its directory (none for a base
    /// URL, which keeps the upstream's layout).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One client variable, and the files it needs.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ExtrasSetting {
    /// The variable (`TIKTOKEN_ENCODINGS_BASE`).
    pub variable: String,
    /// `directory` (the files by name), `sha1-url-cache` (by the sha1 of
    /// their upstream URL) or `base-url` (the value is `base` itself).
    pub kind: String,
    /// Which client reads it, and where.
    pub read_by: String,
    /// The engines that fetch these files at run time.
    pub engines: Vec<String>,
    /// The mirror's base of the host's extras (`URL/extras/<host>`).
    pub base: String,
    /// The files.
    pub files: Vec<ExtraFileAt>,
}

/// The settings for the extras `held` (host, path), at mirror `url`.
pub fn settings(held: &BTreeSet<(String, String)>, url: &str) -> Vec<ExtrasSetting> {
    let mut by_var: BTreeMap<&str, ExtrasSetting> = BTreeMap::new();
    for (host, path) in held {
        for (engine, s) in settings_of(host, path) {
            let e = by_var.entry(s.variable).or_insert_with(|| ExtrasSetting {
                variable: s.variable.to_string(),
                kind: s.kind.label().to_string(),
                read_by: s.read_by.to_string(),
                engines: Vec::new(),
                base: match s.base_path {
                    "" => format!("{url}/extras/{host}"),
                    under => format!("{url}/extras/{host}/{under}"),
                },
                files: Vec::new(),
            });
            if !e.engines.iter().any(|x| x == engine) {
                e.engines.push(engine.to_string());
            }
            let file = ExtraFileAt {
                url: format!("{url}/extras/{host}/{path}"),
                name: s.kind.file_name(host, path),
            };
            if !e.files.contains(&file) {
                e.files.push(file);
            }
        }
    }
    by_var.into_values().collect()
}

/// A runtime extra no held bundle carries, as its bundle's gap says.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct LeftOut {
    /// What is missing (`runtime extra <host>/<path>`).
    pub what: String,
    /// Why, and what a node does without it: the gap's reason, whole.
    pub reason: String,
}

/// The runtime extras left out, as shell comments a node's operator reads:
/// each what and its gap's reason (untrusted text from a bundle, escaped).
pub fn left_out_to_shell(left_out: &[LeftOut], out: &mut String) {
    if left_out.is_empty() {
        return;
    }
    let n = left_out.len();
    out.push_str(&format!(
        "# not on this mirror: {} a node's engine fetches at run time\n",
        llmgw_shared::plural(n, "runtime extra", "runtime extras")
    ));
    for l in left_out {
        out.push_str(&format!(
            "#   {}: {}\n",
            llmgw_shared::shown(&l.what),
            llmgw_shared::shown_message(&l.reason)
        ));
    }
}

/// The extras as shell comments: per variable, the commands that fill a
/// directory from the mirror and export it (commented: a node that runs
/// no such engine needs none of it).
pub fn to_shell(extras: &[ExtrasSetting], out: &mut String) {
    for e in extras {
        out.push_str(&format!(
            "# runtime extras for {} ({}, {}): fetch, then export\n",
            e.engines.join(", "),
            e.variable,
            e.read_by
        ));
        if e.kind == "base-url" {
            out.push_str(&format!("#   export {}={}\n", e.variable, e.base));
            continue;
        }
        let dir = format!("/var/lib/llmgw-extras/{}", e.variable.to_ascii_lowercase());
        out.push_str(&format!("#   mkdir -p {dir}\n"));
        for f in &e.files {
            if let Some(name) = &f.name {
                out.push_str(&format!("#   curl -fsSo {dir}/{name} {}\n", f.url));
            }
        }
        out.push_str(&format!("#   export {}={dir}\n", e.variable));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_client_gets_its_files_under_the_names_it_looks_for() {
        let held: BTreeSet<(String, String)> = [(
            "openaipublic.blob.core.windows.net".to_string(),
            "encodings/o200k_base.tiktoken".to_string(),
        )]
        .into();
        let s = settings(&held, "http://m:8080");
        let vars: Vec<&str> = s.iter().map(|e| e.variable.as_str()).collect();
        assert_eq!(vars, ["TIKTOKEN_CACHE_DIR", "TIKTOKEN_ENCODINGS_BASE"]);
        let url = "http://m:8080/extras/openaipublic.blob.core.windows.net/encodings/\
                   o200k_base.tiktoken";
        assert_eq!(s[1].files[0].url, url);
        assert_eq!(s[1].files[0].name.as_deref(), Some("o200k_base.tiktoken"));
        assert_eq!(
            s[0].files[0].name.as_deref(),
            Some("fb374d419588a4632f3f557e76b4b70aebbca790")
        );
        assert_eq!(s[1].engines, ["vllm", "sglang"]);
        let mut shell = String::new();
        to_shell(&s, &mut shell);
        assert!(
            shell.contains("#   export TIKTOKEN_ENCODINGS_BASE=/var/lib/llmgw-extras/"),
            "{shell}"
        );
        assert!(settings(&BTreeSet::new(), "http://m").is_empty());
    }
}
