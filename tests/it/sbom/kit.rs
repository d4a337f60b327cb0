//! What the SBOM tests share: the fixture, `llmgw` with its URLs, and the
//! Python venvs with the real clients (`.venv-sbom`: cyclonedx-python-lib;
//! `.venv`: huggingface_hub).

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;
pub use llmgw_fixture::kit::{Server, fails, ok};
use llmgw_fixture::{Fixture, FixtureOptions};
use llmgw_shared::manifest::Manifest;

pub const EPOCH: &str = "1754784000";

pub fn fixture() -> Fixture {
    Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture upstream")
}

pub fn llmgw() -> Command {
    let mut c = Command::cargo_bin("llmgw").unwrap();
    c.env_remove("HF_TOKEN")
        .env_remove("HF_ENDPOINT")
        .env_remove("LLMGW_STORE")
        .env("RUST_LOG", "warn");
    c
}

/// `bundle create` of `args` into `out` under `SOURCE_DATE_EPOCH`.
pub fn create(fx: &Fixture, cache: &Path, out: &Path, args: &[&str]) -> String {
    let o = llmgw()
        .args(["bundle", "create", "--arch", "amd64"])
        .arg("--github-api")
        .arg(fx.github_api_url())
        .arg("--hf-endpoint")
        .arg(fx.hf_endpoint())
        .arg("--cache")
        .arg(cache)
        .arg("--out")
        .arg(out)
        .args(args)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .output()
        .unwrap();
    ok(&o);
    let sums = std::fs::read_to_string(format!("{}.sha256", out.display())).unwrap();
    sums[..64].to_string()
}

pub fn manifest_of_dir(dir: &Path) -> Manifest {
    Manifest::from_json_bytes(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

/// The Python of a venv (`LLMGW_SBOM_VENV` / `.venv-sbom`, `LLMGW_VENV` /
/// `.venv`) that can `import module`, or a failure saying how to make it.
pub fn python(var: &str, default: &str, module: &str, pins: &str) -> PathBuf {
    let dir = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(default));
    let p = dir.join("bin/python");
    let ok = Command::new(&p)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "{} cannot import {module}: run scripts/setup.sh (it makes {default} with {pins}), or set \
         {var} to a venv that has it",
        p.display()
    );
    p
}

/// The venv with cyclonedx-python-lib and its JSON validation.
pub fn cyclonedx_python() -> PathBuf {
    python(
        "LLMGW_SBOM_VENV",
        ".venv-sbom",
        "cyclonedx.validation.json",
        "cyclonedx-python-lib[json-validation]==11.12.0",
    )
}

/// Runs `script` with `args` in `python`; its stdout.
pub fn run_python(python: &Path, script: &str, args: &[&str]) -> String {
    let o = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    ok(&o)
}

/// `mirror serve` over `store` on a free port, once it answers
/// `/readyz` (or after 10 s): the server and its URL.
pub fn serve(store: &Path) -> (Server, String) {
    let srv = Server::start(store);
    for _ in 0..100 {
        if srv.get("/readyz").0 == 200 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let url = srv.url.clone();
    (srv, url)
}

/// `curl -sS -D -` of `url` with `headers`: status line and headers, then the body.
pub fn curl(url: &str, headers: &[&str]) -> (String, Vec<u8>) {
    let mut c = Command::new("curl");
    c.args(["-sS", "-D", "-"]);
    for h in headers {
        c.args(["-H", h]);
    }
    let o = c.arg(url).output().unwrap();
    let at = o
        .stdout
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(o.stdout.len(), |p| p + 4);
    (
        String::from_utf8_lossy(&o.stdout[..at]).into_owned(),
        o.stdout[at..].to_vec(),
    )
}
