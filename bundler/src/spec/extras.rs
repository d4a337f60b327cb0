//! What the operator chose of the runtime extras (issue #32): leave them
//! out (`--no-extras`), or fetch them from another base
//! (`--extras-base HOST=URL`); planned by `sources::extras`.
//!
//! Invariant: a base changes where an extra's bytes are fetched from,
//! never what they must be (the digest the recipe table pins); the two
//! flags are never given together, and each host once.

use std::collections::BTreeMap;

use llmgw_shared::manifest::is_extra_host;
use llmgw_shared::recipe::ExtraFile;

use crate::error::{CreateError, FlagError, RequestError};

/// What the operator chose of the extras.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtrasChoice {
    /// `--no-extras`: leave them out, each a gap.
    pub leave_out: bool,
    /// `--extras-base HOST=URL`: by host, the base its files are fetched
    /// from instead (no trailing `/`; the upstream path follows).
    pub bases: BTreeMap<String, String>,
    /// The pins FlashInfer's CuTe DSL FMHA kernels are checked against.
    pub dsl_pins: super::dsl_pins::PinTable,
}

impl ExtrasChoice {
    /// Reads `--no-extras` and each `--extras-base HOST=URL`.
    pub fn parse(no_extras: bool, bases: &[String]) -> Result<Self, CreateError> {
        if no_extras && !bases.is_empty() {
            return Err(RequestError::ExtrasBoth.into());
        }
        let mut out = Self {
            leave_out: no_extras,
            bases: BTreeMap::new(),
            dsl_pins: Default::default(),
        };
        for b in bases {
            let (host, url) = b
                .split_once('=')
                .ok_or_else(|| FlagError::ExtrasBase { text: b.clone() })?;
            if !is_extra_host(host) {
                return Err(FlagError::ExtrasHost {
                    text: b.clone(),
                    host: host.to_string(),
                }
                .into());
            }
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(FlagError::ExtrasUrl {
                    text: b.clone(),
                    url: url.to_string(),
                }
                .into());
            }
            let url = url.trim_end_matches('/').to_string();
            if out.bases.insert(host.to_string(), url).is_some() {
                return Err(FlagError::ExtrasHostTwice {
                    host: host.to_string(),
                }
                .into());
            }
        }
        Ok(out)
    }

    /// Where `f` is fetched from: its host's base when one was given.
    pub fn url_of(&self, f: &ExtraFile) -> String {
        self.url_at(f.host, f.path)
    }

    /// Where the extra at `host` and `path` is fetched from.
    pub fn url_at(&self, host: &str, path: &str) -> String {
        match self.bases.get(host) {
            Some(base) => format!("{base}/{path}"),
            None => llmgw_shared::recipe::upstream_url(host, path),
        }
    }
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
