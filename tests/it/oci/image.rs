//! The mirror's own container image (#36), built by `scripts/build-image.sh`
//! with no Docker engine: the same digest from two builds; the Dockerfile
//! and the image agree on user, entrypoint, command, port, environment,
//! volume and labels; carried from its OCI layout by `llmgw bundle create
//! --image NAME:TAG=oci-layout:PATH` (a damaged layer refused, naming it;
//! REF picking among several images, the spec-file form); imported, served,
//! pulled from the mirror by a containerd of the test's own with `ctr images
//! pull --plain-http`, and run with `ctr run --net-host --read-only` over
//! the store bind-mounted read-only: the containerized `llmgw mirror serve`
//! answers `/healthz`, `/readyz` and a model file, as uid 10001.
//!
//! The image is built from the binary this test suite already has (the
//! debug build, `CARGO_BIN_EXE_llmgw`; the script strips its debug
//! sections), not a release build: CI runs `cargo test` and a release
//! build would cost it another quarter of an hour on two cores, while the
//! image is the same but for the binary's optimization.

use crate::bundle_kit;
#[allow(dead_code)]
use crate::oci::clients;
mod dockerfile;
mod run;

use std::path::{Path, PathBuf};
use std::process::Command;

use bundle_kit::{Kit, Server, import_bundle, ok, stderr, stdout, write_dir};
use run::{Task, free_port, get, wait_for};
use serde_json::Value;

/// The time both builds record.
const EPOCH: &str = "1764892800";
const CREATED: &str = "2025-12-05T00:00:00Z";
const REVISION: &str = "0123456789abcdef0123456789abcdef01234567";

fn version() -> String {
    let o = bundle_kit::run(&["--version"]);
    stdout(&o).trim().trim_start_matches("llmgw ").to_string()
}

/// `scripts/build-image.sh OUT` over the test suite's binary.
fn build_image(out: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/build-image.sh");
    let o = Command::new(script)
        .arg(out)
        .env("LLMGW_BINARY", env!("CARGO_BIN_EXE_llmgw"))
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .env("REVISION", REVISION)
        .output()
        .unwrap();
    ok(&o);
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn blob_path(layout: &Path, digest: &str) -> PathBuf {
    layout
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"))
}

/// The image's (index, manifest, config) as JSON.
fn image_documents(layout: &Path) -> (Value, Value, Value) {
    let top = json(&layout.join("index.json"));
    let index = json(&blob_path(
        layout,
        top["manifests"][0]["digest"].as_str().unwrap(),
    ));
    let manifest = json(&blob_path(
        layout,
        index["manifests"][0]["digest"].as_str().unwrap(),
    ));
    let config = json(&blob_path(
        layout,
        manifest["config"]["digest"].as_str().unwrap(),
    ));
    (index, manifest, config)
}

/// `llmgw bundle create` with its own cache, reading nothing of the
/// machine's registry credentials.
fn create(dir: &Path) -> Command {
    let mut c = bundle_kit::llmgw();
    c.args(["bundle", "create", "--arch", "amd64", "--cache"])
        .arg(dir.join("cache"))
        .env("HOME", dir)
        .env_remove("REGISTRY_AUTH_FILE")
        .env("SOURCE_DATE_EPOCH", EPOCH);
    c
}

fn layout_flag(name_tag: &str, layout: &Path, reference: Option<&str>) -> String {
    let r = reference.map(|r| format!(":{r}")).unwrap_or_default();
    format!("{name_tag}=oci-layout:{}{r}", layout.display())
}

#[test]
fn two_builds_give_one_digest() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    build_image(&a);
    build_image(&b);
    assert_eq!(
        std::fs::read(a.join("index.json")).unwrap(),
        std::fs::read(b.join("index.json")).unwrap()
    );
    let list = |l: &Path| {
        let mut names: Vec<_> = std::fs::read_dir(l.join("blobs/sha256"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    assert_eq!(list(&a), list(&b));
    assert_eq!(
        list(&a).len(),
        4,
        "an index, a manifest, a config and one layer"
    );
    // The layer is what the script promises: sorted, fixed times, owners.
    let (_, manifest, _) = image_documents(&a);
    let layer = blob_path(&a, manifest["layers"][0]["digest"].as_str().unwrap());
    let o = Command::new("tar")
        .args(["-tvzf"])
        .arg(&layer)
        .args(["--numeric-owner"])
        .output()
        .unwrap();
    let listing = ok(&o);
    for wanted in [
        "drwxr-xr-x 10001/10001",
        "drwxrwxrwt 0/0",
        "usr/local/bin/llmgw",
        "etc/ssl/certs/ca-certificates.crt",
        "lib64/ld-linux-x86-64.so.2",
        "bin/sh -> busybox",
    ] {
        assert!(
            listing.contains(wanted),
            "{wanted} not in the layer:\n{listing}"
        );
    }
    assert!(
        listing.lines().all(|l| l.contains("2025-12-05 00:00")),
        "every entry at SOURCE_DATE_EPOCH:\n{listing}"
    );
}

#[test]
fn the_dockerfile_and_the_built_image_agree() {
    let dir = tempfile::tempdir().unwrap();
    let layout = dir.path().join("img");
    build_image(&layout);
    let (index, _, config) = image_documents(&layout);
    assert_eq!(index["manifests"][0]["platform"]["architecture"], "amd64");
    let d = dockerfile::runtime_stage(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Dockerfile")).unwrap(),
    );
    let c = &config["config"];
    assert_eq!(c["User"], d.user, "USER");
    assert_eq!(
        c["Entrypoint"],
        serde_json::json!(d.entrypoint),
        "ENTRYPOINT"
    );
    assert_eq!(c["Cmd"], serde_json::json!(d.cmd), "CMD");
    let ports: Vec<&String> = c["ExposedPorts"].as_object().unwrap().keys().collect();
    let exposed: Vec<String> = d.expose.iter().map(|p| format!("{p}/tcp")).collect();
    assert_eq!(ports, exposed.iter().collect::<Vec<_>>(), "EXPOSE");
    let volumes: Vec<&String> = c["Volumes"].as_object().unwrap().keys().collect();
    assert_eq!(volumes, d.volumes.iter().collect::<Vec<_>>(), "VOLUME");
    for (k, v) in &d.env {
        let line = format!("{k}={v}");
        assert!(
            c["Env"].as_array().unwrap().iter().any(|e| e == &line),
            "ENV {line} not in {}",
            c["Env"]
        );
    }
    // Labels: the same keys; a value from a build argument is what this
    // build was given (no base image: `scratch`).
    let args = [
        ("VERSION", version()),
        ("REVISION", REVISION.to_string()),
        ("CREATED", CREATED.to_string()),
        ("RUNTIME_IMAGE", "scratch".to_string()),
    ];
    let labels = c["Labels"].as_object().unwrap();
    assert_eq!(
        labels.keys().collect::<Vec<_>>(),
        d.labels.keys().collect::<Vec<_>>(),
        "LABEL keys"
    );
    for (k, v) in &d.labels {
        let expected = args.iter().fold(v.clone(), |s, (arg, val)| {
            s.replace(&format!("${{{arg}}}"), val)
        });
        assert_eq!(labels[k], expected, "LABEL {k}");
    }
}

/// An image pulled from the mirror by containerd and run read-only: the
/// whole path the Helm chart's pods take, on loopback.
#[test]
fn containerd_pulls_the_image_from_the_mirror_and_runs_it_as_10001() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let layout = d.join("img");
    build_image(&layout);
    let tag = version();
    let bundle = d.join("image-bundle");
    let o = create(d)
        .args(["--out"])
        .arg(&bundle)
        .args([
            "--image",
            &layout_flag(&format!("llmgw/llmgw:{tag}"), &layout, None),
        ])
        .output()
        .unwrap();
    ok(&o);
    let sha = std::fs::read_to_string(d.join("image-bundle.sha256")).unwrap();
    let store = d.join("store");
    ok(&import_bundle(&bundle, &sha[..64], &store, &[]));
    let mut kit = Kit::new();
    let model: Vec<u8> = (0..300_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    kit.model_file("acme/tiny", "tiny.gguf", &model);
    write_dir(&d.join("model-bundle"), &kit.entries());
    ok(&import_bundle(
        &d.join("model-bundle"),
        &kit.sha256(),
        &store,
        &[],
    ));

    let mirror = Server::start(&store);
    mirror.wait_for("/readyz", 200);
    let host = mirror.url.trim_start_matches("http://").to_string();
    let ctd = clients::containerd(d);
    let reference = format!("{host}/llmgw/llmgw:{tag}");
    let o = ctd.ctr(&[
        "images",
        "pull",
        "--plain-http",
        "--snapshotter",
        "native",
        &reference,
    ]);
    ok(&o);
    // The chart's default image, `llmgw/llmgw:VERSION`, is docker.io's to a
    // node: pulled through a docker.io mirror entry, the mirror answers it
    // (containerd sends ?ns=docker.io) with the same image.
    let hosts = d.join("hosts/docker.io");
    std::fs::create_dir_all(&hosts).unwrap();
    std::fs::write(
        hosts.join("hosts.toml"),
        format!(
            "server = \"https://registry-1.docker.io\"\n[host.\"{}\"]\n  capabilities = [\"pull\", \"resolve\"]\n",
            mirror.url
        ),
    )
    .unwrap();
    let as_chart_names_it = format!("docker.io/llmgw/llmgw:{tag}");
    let o = ctd.ctr(&[
        "images",
        "pull",
        "--snapshotter",
        "native",
        "--hosts-dir",
        d.join("hosts").to_str().unwrap(),
        &as_chart_names_it,
    ]);
    ok(&o);
    let listed = stdout(&ctd.ctr(&["images", "ls"]));
    let digest = entry_digest(&layout);
    for name in [&reference, &as_chart_names_it] {
        let line = listed
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} not listed: {listed}"));
        assert!(line.contains(&digest), "{name} as built ({digest}): {line}");
    }

    let port = free_port();
    let task = Task::run(
        &ctd,
        &d.join("task.log"),
        &[
            "--net-host",
            "--read-only",
            "--snapshotter",
            "native",
            "--mount",
            &format!(
                "type=bind,src={},dst=/store,options=rbind:ro",
                store.display()
            ),
            &reference,
        ],
        &[
            "llmgw",
            "mirror",
            "serve",
            "--store",
            "/store",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ],
    );
    let inside = format!("http://127.0.0.1:{port}");
    let healthz = wait_for(&inside, "/healthz");
    assert_eq!(healthz.0, 200, "{}", task.log());
    let (status, body) = wait_for(&inside, "/readyz");
    assert_eq!(
        status,
        200,
        "{}\n{}",
        String::from_utf8_lossy(&body),
        task.log()
    );
    assert!(
        task.log().contains("serving /store on http://127.0.0.1:"),
        "{}",
        task.log()
    );
    let (status, got) = get(&inside, "/acme/tiny/resolve/main/tiny.gguf");
    assert_eq!(status, 200);
    assert!(
        got == model,
        "the model file as carried ({} bytes)",
        got.len()
    );
    let status = std::fs::read_to_string(format!("/proc/{}/status", task.pid())).unwrap();
    for field in ["Uid:", "Gid:"] {
        let line = status.lines().find(|l| l.starts_with(field)).unwrap();
        assert!(
            line.split_whitespace().skip(1).all(|id| id == "10001"),
            "{line}"
        );
    }
}

#[test]
fn a_damaged_layer_in_the_layout_is_refused_at_create_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let layout = d.join("img");
    build_image(&layout);
    let (_, manifest, _) = image_documents(&layout);
    let digest = manifest["layers"][0]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let file = blob_path(&layout, &digest);
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    std::fs::write(&file, &bytes).unwrap();
    let actual = llmgw_shared::Sha256::of(&bytes);
    let out = d.join("bundle");
    let o = create(d)
        .args(["--out"])
        .arg(&out)
        .args(["--image", &layout_flag("llmgw/llmgw:1", &layout, None)])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    for wanted in [
        file.display().to_string(),
        digest.clone(),
        format!("hashes to sha256:{actual}"),
        "build or copy it again".to_string(),
    ] {
        assert!(err.contains(&wanted), "{wanted} not in: {err}");
    }
    assert!(!out.exists(), "nothing written");
    // A layer cut short is named by its size.
    std::fs::write(&file, &bytes[..at]).unwrap();
    let o = create(d)
        .args(["--out"])
        .arg(&out)
        .args(["--image", &layout_flag("llmgw/llmgw:1", &layout, None)])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(
        err.contains(&format!("{} bytes", bytes.len())) && err.contains(&format!("has {at} bytes")),
        "{err}"
    );
}

#[test]
fn ref_picks_among_several_images_and_the_spec_file_form_reads_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let layout = d.join("img");
    build_image(&layout);
    let mut top = json(&layout.join("index.json"));
    let entry = top["manifests"][0].clone();
    let mut other = entry.clone();
    other["annotations"]["org.opencontainers.image.ref.name"] = "edge".into();
    top["manifests"] = serde_json::json!([entry, other]);
    std::fs::write(layout.join("index.json"), top.to_string()).unwrap();

    let o = create(d)
        .args(["--dry-run", "--out"])
        .arg(d.join("x"))
        .args(["--image", &layout_flag("llmgw/llmgw:1", &layout, None)])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let tag = version();
    for wanted in [
        "several images",
        &format!("\"{tag}\""),
        "\"edge\"",
        "oci-layout:PATH:REF",
    ] {
        assert!(err.contains(wanted), "{wanted} not in: {err}");
    }
    let o = create(d)
        .args(["--dry-run", "--out"])
        .arg(d.join("x"))
        .args([
            "--image",
            &layout_flag("llmgw/llmgw:1", &layout, Some("nightly")),
        ])
        .output()
        .unwrap();
    assert!(
        stderr(&o).contains("no image is named \"nightly\""),
        "{}",
        stderr(&o)
    );

    // A folder that is no layout is named, with what to give instead.
    let o = create(d)
        .args(["--dry-run", "--out"])
        .arg(d.join("x"))
        .args([
            "--image",
            &layout_flag("llmgw/llmgw:1", &d.join("cache"), None),
        ])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&d.join("cache/oci-layout").display().to_string())
            && err.contains("is missing"),
        "{err}"
    );

    // The spec file names the layout relative to its own folder.
    std::fs::write(
        d.join("spec.toml"),
        "out = \"from-spec\"\narch = [\"amd64\"]\nimages = [\"llmgw/llmgw:edge=oci-layout:img:edge\"]\n",
    )
    .unwrap();
    let o = create(d)
        .arg("--spec")
        .arg(d.join("spec.toml"))
        .current_dir("/")
        .output()
        .unwrap();
    ok(&o);
    let m = json(&d.join("from-spec/manifest.json"));
    let image = &m["images"][0];
    assert_eq!(image["repository"], "llmgw/llmgw");
    assert_eq!(image["tag"], "edge");
    assert!(image.get("registry").is_none(), "no registry host: {image}");
    assert_eq!(
        format!("sha256:{}", image["digest"].as_str().unwrap()),
        entry_digest(&layout)
    );
}

fn entry_digest(layout: &Path) -> String {
    json(&layout.join("index.json"))["manifests"][0]["digest"]
        .as_str()
        .unwrap()
        .to_string()
}
