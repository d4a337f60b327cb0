//! Python environments carried across the gap: vLLM end to end with the
//! real uv (`e2e`), each upstream a part of its own (`parts`), and what
//! `bundle create` refuses to vouch for (`refusals`).

use std::path::Path;
use std::process::Command;

use llmgw_fixture::Fixture;

use crate::bundle_kit::{llmgw, uv_bin};

mod e2e;
mod extras;
mod flashinfer;
mod flashinfer_dsl;
mod parts;
mod reach;
mod refusals;
mod rehearse;
mod site_lock;
mod site_lock_arm64;

/// `llmgw bundle create --arch amd64` against the fixture's GitHub, PyPI
/// and uv's interpreter list at `raw`, with the pinned uv, its caches
/// under `work`, into `out`; the caller adds what to carry.
pub fn create(fx: &Fixture, raw: &str, work: &Path, out: &Path) -> Command {
    let mut c = llmgw();
    c.args(["bundle", "create", "--arch", "amd64"]);
    from_fixture(&mut c, fx, raw, work, out);
    c
}

/// The upstreams of [`create`] (the fixture's GitHub, PyPI and uv's
/// interpreter list at `raw`), the pinned uv, caches under `work` and the
/// output `out`, added to `c`.
pub fn from_fixture<'c>(
    c: &'c mut Command,
    fx: &Fixture,
    raw: &str,
    work: &Path,
    out: &Path,
) -> &'c mut Command {
    c.arg("--github-api")
        .arg(fx.github_api_url())
        .arg("--github-raw")
        .arg(raw)
        .arg("--pypi")
        .arg(fx.pypi_simple_url())
        .arg("--uv")
        .arg(uv_bin())
        .arg("--cache")
        .arg(work.join("cache"))
        .arg("--out")
        .arg(out)
        .env("UV_CACHE_DIR", work.join("uv-cache"))
}

/// `--engine uv=VERSION`, the uv the recipe pins.
pub fn uv_engine() -> [String; 2] {
    [
        "--engine".into(),
        format!("uv={}", llmgw_shared::recipe::UV_VERSION),
    ]
}

/// uv as a node runs it: no user config and no `UV_`/`PIP_` variable of
/// this machine's (removed from the child only), `HOME` at `work`, no
/// builds; the caller adds its caches and index.
pub fn node_uv(work: &Path) -> Command {
    let mut c = Command::new(uv_bin());
    for (k, _) in std::env::vars() {
        if k.starts_with("UV_") || k.starts_with("PIP_") {
            c.env_remove(k);
        }
    }
    c.current_dir(work)
        .env("HOME", work)
        .env("UV_NO_CONFIG", "1")
        .env("UV_NO_BUILD", "1");
    c
}
