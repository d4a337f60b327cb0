//! vLLM across the gap, the whole chain with the real binary and the real
//! uv: `bundle create --engine vllm=…` resolves every environment of the
//! version for amd64 against the fixture's PyPI, PyTorch index and GitHub
//! (uv's interpreter list on the raw stand-in), `bundle import` checks it,
//! `mirror serve` serves it — and then, with the fixture stopped so no
//! other network exists, a node makes a venv on the carried interpreter
//! through the mirror's `/uv/python-downloads.json` and installs vLLM with
//! `uv pip install` from the mirror's cu13 index and from the cu129
//! environment's `pylock.toml`.

use crate::bundle_kit;

use std::path::Path;
use std::process::Command;

use bundle_kit::{Server, llmgw, ok_for as ok};
use llmgw_fixture::{Fixture, FixtureOptions};
use llmgw_shared::manifest::Manifest;

const VLLM: &str = "0.20.1";

/// uv as a node runs it: no user config, no variable of this machine's,
/// caches and interpreters under `work`, and only what `env` gives.
fn node_uv(work: &Path, env: &[(&str, String)]) -> Command {
    let mut c = super::node_uv(work);
    c.env("UV_CACHE_DIR", work.join("uv-cache"))
        .env("UV_PYTHON_INSTALL_DIR", work.join("pythons"));
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// `name==version` of every distribution in a venv.
fn installed(venv: &Path) -> Vec<String> {
    let o = Command::new(venv.join("bin/python"))
        .args([
            "-c",
            "import importlib.metadata as m\nfor d in m.distributions(): print(f\"{d.metadata['Name'].lower()}=={d.version}\")",
        ])
        .output()
        .unwrap();
    let mut v: Vec<String> = ok("list the venv", &o)
        .lines()
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

#[test]
fn vllm_from_create_to_a_node_with_no_other_network() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture");
    let d = tempfile::tempdir().unwrap();
    let bundle = d.path().join("site.tar");
    let store = d.path().join("store");

    // Connected side: every vLLM 0.20.1 environment for amd64, the uv
    // whose interpreter list names the Python the nodes get.
    let report = ok(
        "bundle create",
        &super::create(&fx, &fx.raw_github_url(), d.path(), &bundle)
            .arg("--json")
            .args(super::uv_engine())
            .args(["--engine", &format!("vllm={VLLM}")])
            // The runtime extras are python/extras.rs's: their publisher is
            // not on loopback; left out, each is a gap.
            .arg("--no-extras")
            .arg("--index")
            .arg(format!("pytorch-cu129={}", fx.pytorch_index_url()))
            .output()
            .unwrap(),
    );
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    let sha = report["manifest_sha256"].as_str().unwrap().to_string();

    // Air-gapped side.
    ok(
        "bundle import",
        &llmgw()
            .args(["bundle", "import"])
            .arg(&bundle)
            .args(["--sha256", &sha, "--store"])
            .arg(&store)
            .output()
            .unwrap(),
    );
    let manifest = Manifest::from_json_bytes(
        &std::fs::read(store.join("bundles").join(format!("{sha}.json"))).unwrap(),
    )
    .unwrap();
    let names: Vec<&str> = manifest
        .python_envs
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    for want in [
        "vllm-0.20.1-cu13-amd64",
        "vllm-0.20.1-cu129-amd64",
        "vllm-0.19.1-cu12-amd64",
    ] {
        assert!(names.contains(&want), "{want} not in {names:?}");
    }
    let cu13 = manifest
        .python_envs
        .iter()
        .find(|e| e.name == "vllm-0.20.1-cu13-amd64")
        .unwrap();
    assert!(cu13.files.len() > 50, "{} files", cu13.files.len());
    // The SBOM (#33): a wheel is a pkg:pypi component with the licence its metadata states.
    let sbom = ok(
        "bundle sbom",
        &llmgw()
            .args(["bundle", "sbom"])
            .arg(&bundle)
            .output()
            .unwrap(),
    );
    let doc: serde_json::Value = serde_json::from_str(&sbom).unwrap();
    let wheel = cu13.files.iter().find(|f| f.metadata.is_some()).unwrap();
    let c = doc["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["bom-ref"] == format!("blob:{}", wheel.sha256))
        .unwrap();
    let purl = format!("pkg:pypi/{}@", wheel.project);
    assert!(c["purl"].as_str().unwrap().starts_with(&purl), "{c}");
    assert_eq!(c["licenses"][0]["expression"], "Apache-2.0", "{c}");

    // Nothing but the mirror from here on.
    drop(fx);
    let mirror = Server::start_logged(&store, &d.path().join("serve.log"));
    let m = &mirror.url;
    let work = d.path().join("node");
    std::fs::create_dir_all(&work).unwrap();

    // The interpreter the bundle carries, through uv's own download list.
    let python_env = [(
        "UV_PYTHON_DOWNLOADS_JSON_URL",
        format!("{m}/uv/python-downloads.json"),
    )];
    ok(
        "uv venv --python 3.12 from the mirror",
        &node_uv(&work, &python_env)
            .args(["venv", "--python", "3.12", "--managed-python", "cu13"])
            .output()
            .unwrap(),
    );
    assert!(
        std::fs::read_dir(work.join("pythons"))
            .unwrap()
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().starts_with("cpython-3.12")),
        "uv did not install the carried interpreter"
    );

    // vLLM from the cu13 environment's index, by name.
    let index = [(
        "UV_DEFAULT_INDEX",
        format!("{m}/pypi/vllm-0.20.1-cu13-amd64/simple"),
    )];
    ok(
        "uv pip install vllm from the mirror",
        &node_uv(&work, &index)
            .args(["pip", "install", "-q", "--python", "cu13/bin/python"])
            .arg(format!("vllm=={VLLM}"))
            .output()
            .unwrap(),
    );
    let got = installed(&work.join("cu13"));
    assert!(got.contains(&format!("vllm=={VLLM}")), "{got:?}");
    assert!(
        got.iter().all(|p| !p.contains("+cu129")),
        "a cu13 node got a cu129 build: {got:?}"
    );
    for f in cu13.files.iter().filter(|f| f.filename.ends_with(".whl")) {
        let pin = format!("{}=={}", f.project, f.version);
        assert!(
            got.iter().any(|g| g.replace('_', "-") == pin),
            "{pin} from the lock is not installed: {got:?}"
        );
    }

    // The cu129 environment from its lock: torch's +cu129 build.
    ok(
        "uv venv (cu129)",
        &node_uv(&work, &python_env)
            .args(["venv", "--python", "3.12", "--managed-python", "cu129"])
            .output()
            .unwrap(),
    );
    ok(
        "uv pip install -r pylock.toml",
        &node_uv(&work, &[])
            .args(["pip", "install", "-q", "--python", "cu129/bin/python", "-r"])
            .arg(format!("{m}/pypi/vllm-0.20.1-cu129-amd64/pylock.toml"))
            .output()
            .unwrap(),
    );
    let got = installed(&work.join("cu129"));
    assert!(got.contains(&"torch==2.11.0+cu129".to_string()), "{got:?}");
    assert!(
        got.iter().any(|p| p.starts_with("vllm==0.20.1+cu129")),
        "{got:?}"
    );

    // Every request was answered by the mirror, none refused.
    let log = std::fs::read_to_string(d.path().join("serve.log")).unwrap();
    let served = log.lines().filter(|l| l.contains("status=200")).count();
    assert!(served > 100, "{served} answers in:\n{log}");
    assert!(
        !log.lines().any(|l| l.contains("status=404")),
        "the mirror missed something:\n{log}"
    );
}
