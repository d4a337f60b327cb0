//! Each upstream of a Python environment is a part of its own (issue #29),
//! with the real binary and the real uv against the fixture: uv's
//! interpreter list on an unreachable raw-GitHub host, a recipe variant
//! whose GitHub release is missing, an upstream pin no index meets, and a
//! site environment on Python 3.11. Each checks the message, the exit code
//! and what the bundle holds — and that a dry run fails where the run does.

use crate::bundle_kit;

use std::path::{Path, PathBuf};
use std::process::Output;

use bundle_kit::{llmgw, stderr};
use llmgw_fixture::{
    FLASHINFER_LATER, FLASHINFER_UNPUBLISHED, Fixture, FixtureOptions, SGLANG_GLIBC234_VERSION,
    SGLANG_PINNED_VERSION, VLLM_VERSION,
};
use llmgw_shared::manifest::{Manifest, NodeInterpreter};

/// A raw-GitHub URL nothing listens on: a port bound, then let go.
fn unreachable_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("http://127.0.0.1:{port}")
}

/// `bundle create --arch amd64` of `args` against the fixture (uv's list
/// at `raw`), into `dir/site` (a directory bundle).
fn create(fx: &Fixture, raw: &str, dir: &Path, args: &[&str]) -> Output {
    crate::python::create(fx, raw, dir, &dir.join("site"))
        .args(crate::python::uv_engine())
        .args(args)
        // The runtime extras are python/extras.rs's: their publisher is
        // not on loopback; left out, each is a gap.
        .arg("--no-extras")
        .arg("--index")
        .arg(format!("pytorch-cu129={}", fx.pytorch_index_url()))
        .output()
        .unwrap()
}

/// `--index pytorch-cu129=…` names an index only vLLM's cu129 variant
/// uses; runs without that variant leave it out.
fn create_plain(fx: &Fixture, raw: &str, dir: &Path, args: &[&str]) -> Output {
    crate::python::create(fx, raw, dir, &dir.join("site"))
        .args(crate::python::uv_engine())
        .args(args)
        // The runtime extras are python/extras.rs's: their publisher is
        // not on loopback; left out, each is a gap.
        .arg("--no-extras")
        .output()
        .unwrap()
}

#[track_caller]
fn exit(o: &Output, code: i32) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "{err}");
    err
}

fn manifest(dir: &Path) -> Manifest {
    Manifest::from_json_bytes(&std::fs::read(dir.join("site/manifest.json")).unwrap()).unwrap()
}

#[track_caller]
fn no_bundle(dir: &Path) {
    assert!(
        !dir.join("site/manifest.json").exists(),
        "a bundle was left"
    );
}

fn tmp() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().to_path_buf();
    (d, p)
}

#[test]
fn an_unreachable_interpreter_list_is_a_part_not_a_stop() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture");
    let raw = unreachable_url();
    let tools = ["--python-env", "tools=click"];
    // Each run waits out the retries on the dead host: in parallel.
    let (outs, dirs): (Vec<Output>, Vec<_>) = std::thread::scope(|s| {
        let runs: Vec<Vec<&str>> = vec![
            tools.to_vec(),
            [&tools[..], &["--dry-run"]].concat(),
            [&tools[..], &["--allow-missing"]].concat(),
            [&tools[..], &["--allow-missing", "--dry-run"]].concat(),
        ];
        let handles: Vec<_> = runs
            .into_iter()
            .map(|args| {
                let (fx, raw) = (&fx, raw.as_str());
                s.spawn(move || {
                    let (d, p) = tmp();
                    (create_plain(fx, raw, &p, &args), d)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).unzip()
    });
    let said = "the Python interpreter (pass --allow-missing to record it as a gap and go on, \
                or --python-interpreter none if the nodes bring their own CPython 3.12): \
                uv ";
    // Without --allow-missing: the run and its dry run fail alike, naming
    // the part and what to pass.
    for (o, d) in outs[..2].iter().zip(&dirs) {
        let err = exit(o, 1);
        assert!(err.contains(said), "{err}");
        assert!(
            err.contains("list of python-build-standalone interpreters, "),
            "{err}"
        );
        assert!(err.contains("download-metadata.json"), "{err}");
        no_bundle(d.path());
    }
    // With it: a gap, and the environment carried.
    let err = exit(&outs[2], 0);
    assert!(
        err.contains("the interpreter for amd64 is not carried (--allow-missing)"),
        "{err}"
    );
    let m = manifest(dirs[2].path());
    assert!(
        m.gaps
            .iter()
            .any(|g| g.what == "astral-sh/python-build-standalone for amd64"),
        "{:?}",
        m.gaps
    );
    let env = &m.python_envs[0];
    assert_eq!(env.name, "tools-amd64");
    assert!(env.files.iter().any(|f| f.project == "click"));
    assert!(env.interpreter.is_none() && env.node_interpreter.is_none());
    let dry = String::from_utf8_lossy(&outs[3].stdout).into_owned();
    exit(&outs[3], 0);
    assert!(
        dry.contains("interpreter missing (a gap: --allow-missing)")
            && dry.contains("missing: astral-sh/python-build-standalone for amd64: "),
        "{dry}"
    );

    // --python-interpreter none: the list is never asked for, the manifest
    // says the nodes bring their own, and inspect and mirror list show it.
    let (_d, p) = tmp();
    let o = create_plain(
        &fx,
        &raw,
        &p,
        &[&tools[..], &["--python-interpreter", "none"]].concat(),
    );
    exit(&o, 0);
    let m = manifest(&p);
    assert!(m.gaps.is_empty(), "{:?}", m.gaps);
    assert!(
        !m.releases
            .iter()
            .any(|r| r.repo.to_string().contains("python-build-standalone"))
    );
    assert_eq!(
        m.python_envs[0].node_interpreter,
        Some(NodeInterpreter::None)
    );
    let shown = "interpreter: none carried: the nodes bring their own CPython 3.12";
    let o = llmgw()
        .args(["bundle", "inspect"])
        .arg(p.join("site"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains(shown), "{out}{}", stderr(&o));
    let sha = std::fs::read_to_string(p.join("site.sha256")).unwrap();
    let sha = sha.split_whitespace().next().unwrap().to_string();
    let store = p.join("store");
    let o = bundle_kit::import_bundle(&p.join("site"), &sha, &store, &[]);
    exit(&o, 0);
    let o = llmgw()
        .args(["mirror", "list", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains(shown), "{out}{}", stderr(&o));
    let o = llmgw()
        .args(["mirror", "env", "--url", "http://mirror:8080", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains("no interpreter carried: the node brings its own CPython 3.12"),
        "{out}{}",
        stderr(&o)
    );
    let (_d, p) = tmp();
    let bad = create_plain(
        &fx,
        &raw,
        &p,
        &[&tools[..], &["--python-interpreter", "host"]].concat(),
    );
    assert!(exit(&bad, 2).contains("--python-interpreter \"host\": expected carried"));
}

#[test]
fn a_variant_whose_release_is_missing_is_a_gap_or_left_out() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture");
    let raw = fx.raw_github_url();
    let release = format!("/repos/vllm-project/vllm/releases/tags/v{VLLM_VERSION}");
    fx.faults().refuse(&release, 0, 10_000, 404);
    let vllm = format!("vllm={VLLM_VERSION}");
    let cu129 = format!("vllm-{VLLM_VERSION}-cu129-amd64");

    // The dry run refuses what the run refuses, with the same words.
    let said = format!(
        "{cu129}: its upstream (pass --allow-missing to record it as a gap and carry the rest, \
         or choose the variants to carry (--engine vllm={VLLM_VERSION}:VARIANT; `llmgw recipe \
         environments vllm {VLLM_VERSION} --arch amd64` lists them)): {cu129}: "
    );
    for extra in [&["--dry-run"][..], &[]] {
        let (_d, p) = tmp();
        let o = create(
            &fx,
            &raw,
            &p,
            &[&["--engine", vllm.as_str()][..], extra].concat(),
        );
        let err = exit(&o, 1);
        assert!(
            err.contains(&said) && err.contains("has no release v0.20.1 of vllm-project/vllm"),
            "{extra:?}: {err}"
        );
        no_bundle(&p);
    }

    // --allow-missing: the variant is a gap, the others are carried.
    let (_d, p) = tmp();
    let o = create(&fx, &raw, &p, &["--engine", &vllm, "--allow-missing"]);
    exit(&o, 0);
    let m = manifest(&p);
    let mut names: Vec<&str> = m.python_envs.iter().map(|e| e.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "vllm-0.19.1-cu12-amd64",
            format!("vllm-{VLLM_VERSION}-cu13-amd64").as_str(),
        ]
    );
    assert!(m.gaps.iter().any(|g| g.what == cu129), "{:?}", m.gaps);

    // Chosen by variant: PyPI alone, no GitHub release asked for, no
    // fallback; resolved for the table's manylinux of the version.
    fx.clear_requests();
    let (_d, p) = tmp();
    let o = create_plain(&fx, &raw, &p, &["--engine", &format!("{vllm}:cu13")]);
    exit(&o, 0);
    let m = manifest(&p);
    let names: Vec<&str> = m.python_envs.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, [format!("vllm-{VLLM_VERSION}-cu13-amd64").as_str()]);
    assert_eq!(m.python_envs[0].platform, "x86_64-manylinux_2_35");
    // --no-extras: each runtime extra is a gap, and nothing else is.
    let gaps: Vec<&str> = m.gaps.iter().map(|g| g.what.as_str()).collect();
    assert_eq!(
        gaps,
        [
            "runtime extra openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
            "runtime extra openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        ]
    );
    assert!(
        m.gaps[0].reason.contains("TIKTOKEN_ENCODINGS_BASE"),
        "{:?}",
        m.gaps
    );
    assert!(m.extras.is_empty());
    let asked: Vec<String> = fx.requests().into_iter().map(|r| r.path).collect();
    assert!(
        !asked.iter().any(|p| p.contains("vllm-project")),
        "{asked:?}"
    );
    // A variant the version does not have is refused up front.
    let (_d, p) = tmp();
    let o = create_plain(&fx, &raw, &p, &["--engine", &format!("{vllm}:cu12")]);
    let err = exit(&o, 2);
    assert!(
        err.contains("has no build \"cu12\" here; it has cu13, cu129"),
        "{err}"
    );
}

#[test]
fn an_unmeetable_upstream_pin_is_overridden_knowingly() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture");
    let raw = fx.raw_github_url();
    let sglang = format!("sglang={SGLANG_PINNED_VERSION}");
    let (_d, p) = tmp();
    let o = create_plain(&fx, &raw, &p, &["--engine", &sglang, "--dry-run"]);
    let err = exit(&o, 1);
    assert!(
        err.contains(&format!(
            "sglang-{SGLANG_PINNED_VERSION}-cu13-amd64: uv pip compile failed"
        )) && err.contains(&format!("flashinfer-python=={FLASHINFER_UNPUBLISHED}")),
        "{err}"
    );
    let over = format!("sglang=flashinfer-python=={FLASHINFER_LATER}");
    let o = create_plain(
        &fx,
        &raw,
        &p,
        &["--engine", &sglang, "--override", &over, "-v"],
    );
    let err = exit(&o, 0);
    // -v: a line per file besides the progress line.
    assert!(err.contains(": downloaded and verified"), "{err}");
    assert!(err.contains("fetched "), "{err}");
    let m = manifest(&p);
    let env = &m.python_envs[0];
    assert_eq!(
        env.overrides,
        [format!("flashinfer-python=={FLASHINFER_LATER}")]
    );
    assert!(
        env.files
            .iter()
            .any(|f| f.project == "flashinfer-python" && f.version == FLASHINFER_LATER),
        "{:?}",
        env.files.iter().map(|f| &f.filename).collect::<Vec<_>>()
    );
    let o = llmgw()
        .args(["bundle", "inspect"])
        .arg(p.join("site"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains(&format!(
            "overrides (the operator's): flashinfer-python=={FLASHINFER_LATER}"
        )),
        "{out}"
    );
    // An override or constraint that names no environment is refused.
    let (_d, p) = tmp();
    let o = create_plain(
        &fx,
        &raw,
        &p,
        &["--engine", &sglang, "--constraint", "vllm=numpy<2"],
    );
    let err = exit(&o, 2);
    assert!(
        err.contains(&format!(
            "--constraint vllm=numpy<2: no Python environment of this bundle is \"vllm\"; \
             they are sglang-{SGLANG_PINNED_VERSION}-cu13-amd64"
        )),
        "{err}"
    );
}

#[test]
fn a_site_environment_on_python_3_11_inherits_the_engines_os_packages() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture");
    let raw = fx.raw_github_url();
    let (_d, p) = tmp();
    let serve = format!("serve=vllm=={VLLM_VERSION}");
    let o = create_plain(&fx, &raw, &p, &["--python-env", &serve, "--python", "3.11"]);
    let err = exit(&o, 0);
    // No -v: the progress line, no line per file.
    assert!(err.contains("fetched "), "{err}");
    assert!(!err.contains(": downloaded and verified"), "{err}");
    let m = manifest(&p);
    let env = &m.python_envs[0];
    assert_eq!(
        (env.name.as_str(), env.python.as_str()),
        ("serve-amd64", "3.11")
    );
    assert_eq!(env.os_packages, ["gcc"]);
    assert_eq!(env.platform, "x86_64-manylinux_2_28");
    let i = env.interpreter.as_ref().expect("an interpreter");
    assert!(i.name.starts_with("cpython-3.11."), "{}", i.name);
    // The fixture's six is required on 3.12 only: resolved for 3.11.
    assert!(env.files.iter().all(|f| f.project != "six"));
    let o = create_plain(
        &fx,
        &raw,
        &p,
        &[
            "--engine",
            &format!("vllm={VLLM_VERSION}:cu13"),
            "--python",
            "3.11",
        ],
    );
    assert!(exit(&o, 2).contains("--python sets the CPython of the --python-env environments"));
}

#[test]
fn an_engines_manylinux_defaults_to_the_table_and_every_refusal_names_the_tag() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).expect("start the fixture");
    let raw = fx.raw_github_url();
    let sglang = format!("sglang={SGLANG_GLIBC234_VERSION}");
    // The table's figure for the version: resolved at 2_34 unasked.
    let (_d, p) = tmp();
    let o = create_plain(&fx, &raw, &p, &["--engine", &sglang, "--dry-run"]);
    exit(&o, 0);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains(&format!(
            "python env sglang-{SGLANG_GLIBC234_VERSION}-cu13-amd64  x86_64-manylinux_2_34  "
        )),
        "{out}"
    );
    // Asked for 2_28, uv refuses in its own words, and the hint follows.
    let o = create_plain(
        &fx,
        &raw,
        &p,
        &["--engine", &sglang, "--manylinux", "2_28", "--dry-run"],
    );
    let err = exit(&o, 1);
    assert!(
        err.contains("no wheels with a matching platform tag")
            && err.contains(
                "at manylinux_2_34 every dependency has a wheel: pass --manylinux 2_34 if the \
                 nodes have glibc 2.34 or newer"
            ),
        "{err}"
    );
}
