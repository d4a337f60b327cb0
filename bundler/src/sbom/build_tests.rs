//! The SBOM of a Python environment (#53 item 6): a site's lock under its
//! own name with its `pyproject.toml`, and the operator's overrides and
//! constraints recorded.

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{Manifest, PythonEnv};

use super::build::bom;

fn env(name: &str, extra: serde_json::Value) -> PythonEnv {
    let mut v = serde_json::json!({
        "name": name,
        "arch": "amd64",
        "python": "3.12",
        "platform": "x86_64-manylinux_2_28",
        "requirements": [],
        "indexes": [],
        "resolver": {"name": "uv", "version": "0.9.0"},
        "lock": {"sha256": Sha256::of(name.as_bytes()).to_string(), "size": 4},
        "files": [],
    });
    for (k, x) in extra.as_object().expect("an object") {
        v[k] = x.clone();
    }
    serde_json::from_value(v).expect("a PythonEnv")
}

#[test]
fn a_site_lock_is_named_as_given_with_its_project_and_choices_are_recorded() {
    let project = Sha256::of(b"[project]");
    let mut m = Manifest::new(vec!["amd64".into()], 5);
    m.python_envs.push(env(
        "site-amd64",
        serde_json::json!({"site_lock": {
            "format": "uv.lock",
            "file_name": "uv.lock",
            "project": {"sha256": project.to_string(), "size": 9},
        }}),
    ));
    m.python_envs.push(env(
        "vllm-amd64",
        serde_json::json!({
            "overrides": ["flashinfer-python==0.7.4"],
            "constraints": ["torch<3"],
        }),
    ));
    let b = serde_json::to_value(bom(&m, (&[], None), &|_| None)).expect("serializes");
    let components = b["components"].as_array().expect("components");
    let named = |sha: &Sha256| {
        components
            .iter()
            .find(|c| c["bom-ref"] == format!("blob:{sha}"))
            .map(|c| c["name"].clone())
    };
    assert_eq!(named(&Sha256::of(b"site-amd64")), Some("uv.lock".into()));
    assert_eq!(named(&project), Some("pyproject.toml".into()));
    assert_eq!(
        named(&Sha256::of(b"vllm-amd64")),
        Some("pylock.toml".into())
    );
    let vllm = components
        .iter()
        .find(|c| c["bom-ref"] == "ref:environment vllm-amd64")
        .expect("the environment's component");
    let props: Vec<(&str, &str)> = vllm["properties"]
        .as_array()
        .expect("properties")
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["value"].as_str().unwrap()))
        .collect();
    assert!(
        props.contains(&("llmgw:override", "flashinfer-python==0.7.4"))
            && props.contains(&("llmgw:constraint", "torch<3")),
        "{props:?}"
    );
    // The site environment's group depends on its project file.
    let deps = b["dependencies"].as_array().expect("dependencies");
    let site = deps
        .iter()
        .find(|d| d["ref"] == "ref:environment site-amd64")
        .expect("the site environment's dependencies");
    assert!(
        site["dependsOn"]
            .as_array()
            .expect("dependsOn")
            .contains(&format!("blob:{project}").into()),
        "{site}"
    );
}
