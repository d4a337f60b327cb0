//! `GET /uv/python-downloads.json`: the interpreters held, in the shape of
//! uv's `download-metadata.json`, for `UV_PYTHON_DOWNLOADS_JSON_URL`.
//!
//! Invariant: only python-build-standalone archives a held bundle carries
//! as a release entry (engine `python`) are listed, each with the sha256
//! the manifest vouches for (uv checks it) and a URL on this mirror's
//! GitHub release route — so `uv python install` never leaves the mirror.

use serde_json::{Map, Value, json};

use crate::serve::http::paths::quote_path;
use crate::serve::index::pypi::Interpreter;

/// The download list, keyed as uv keys it.
pub fn downloads_json<'a>(
    base: &str,
    interpreters: impl IntoIterator<Item = &'a Interpreter>,
) -> Value {
    let mut out = Map::new();
    for i in interpreters {
        out.insert(
            i.key(),
            json!({
                "name": "cpython",
                "arch": {"family": i.family, "variant": i.arch_variant},
                "os": "linux",
                "libc": i.libc,
                "major": i.major,
                "minor": i.minor,
                "patch": i.patch,
                "prerelease": i.prerelease,
                "url": format!(
                    "{base}/{}/releases/download/{}/{}",
                    i.repo,
                    quote_path(&i.tag),
                    quote_path(&i.name)
                ),
                "sha256": i.sha256,
                "variant": null,
                "build": i.build,
            }),
        );
    }
    Value::Object(out)
}
