use super::*;
use llmgw_shared::chain;

fn env() -> SpecEnv {
    SpecEnv {
        hf_endpoint: None,
        xdg_cache_home: None,
        home: Some("/home/op".into()),
        registry_auth_file: None,
    }
}

fn flags() -> CreateSettings {
    CreateSettings {
        out: Some("b.tar".into()),
        arch: vec!["arm64,amd64".into()],
        engines: vec!["llamacpp=b6123".into()],
        ..Default::default()
    }
}

#[test]
fn model_syntax() {
    let r = parse_repo(RepoKind::Model, "acme/tiny").unwrap();
    assert_eq!((r.id.as_str(), r.revision.as_str()), ("acme/tiny", "main"));
    assert!(r.patterns.is_empty());
    let r = parse_repo(RepoKind::Model, "org/m@v1.0:*.Q4_K_M.gguf,config.json").unwrap();
    assert_eq!(r.revision, "v1.0");
    assert_eq!(r.patterns, vec!["*.Q4_K_M.gguf", "config.json"]);
    let r = parse_repo(RepoKind::Dataset, "acme/data@refs/pr/1").unwrap();
    assert_eq!(r.revision, "refs/pr/1");
    for (bad, why) in [
        ("acme", "owner/name"),
        ("acme/tiny@", "empty"),
        ("acme/tiny:", "empty glob"),
        ("acme/tiny:a,,b", "empty glob"),
        ("acme/tiny@../x", "'..'"),
        ("acme/tiny:[", "glob"),
        ("a/b/c", "owner/name"),
    ] {
        // As the binary prints it: what is expected, then what is wrong.
        let err = chain(&parse_repo(RepoKind::Model, bad).unwrap_err());
        assert!(err.contains(why), "{bad}: {err}");
        assert!(err.starts_with("--model "), "{err}");
        assert!(err.contains("REPO[@REVISION][:GLOB,...]"), "{err}");
    }
    let err = parse_repo(RepoKind::Dataset, "x").unwrap_err().to_string();
    assert!(err.starts_with("--dataset "), "{err}");
}

#[test]
fn engine_syntax() {
    let e = parse_engine("uv=0.12.20").unwrap();
    assert_eq!((e.name.as_str(), e.version.as_str()), ("uv", "0.12.20"));
    for bad in ["uv", "=1", "uv=", ""] {
        let err = parse_engine(bad).unwrap_err();
        assert!(err.to_string().contains("NAME=VERSION"), "{err}");
        assert!(err.is_usage());
    }
}

#[test]
fn defaults() {
    let s = CreateSpec::resolve(flags(), &env()).unwrap();
    assert_eq!(s.arches, vec!["amd64", "arm64"]);
    assert_eq!(s.cache, PathBuf::from("/home/op/.cache/llmgw"));
    assert_eq!(s.jobs, 4);
    assert_eq!(s.zstd_level, 3);
    assert!(!s.keep_in_cache);
    assert_eq!(s.github_api, DEFAULT_GITHUB_API);
    assert_eq!(s.hf_endpoint, DEFAULT_HF_ENDPOINT);
    let mut e = env();
    e.hf_endpoint = Some("http://127.0.0.1:9/".into());
    e.xdg_cache_home = Some("/xdg".into());
    let s = CreateSpec::resolve(flags(), &e).unwrap();
    assert_eq!(s.hf_endpoint, "http://127.0.0.1:9");
    assert_eq!(s.cache, PathBuf::from("/xdg/llmgw"));
}

#[test]
fn usage_errors() {
    let cases: Vec<(CreateSettings, &str)> = vec![
        (
            CreateSettings {
                out: None,
                ..flags()
            },
            "--out PATH is required",
        ),
        (
            CreateSettings {
                arch: vec!["riscv64".into()],
                ..flags()
            },
            "--arch riscv64",
        ),
        (
            CreateSettings {
                arch: vec![],
                ..flags()
            },
            "--arch is required",
        ),
        (
            CreateSettings {
                engines: vec![],
                ..flags()
            },
            "nothing to bundle",
        ),
        (
            CreateSettings {
                jobs: Some(0),
                ..flags()
            },
            "--jobs 0",
        ),
        (
            CreateSettings {
                zstd_level: Some(20),
                ..flags()
            },
            "--zstd-level 20: expected 1 to 19",
        ),
        (
            CreateSettings {
                llmgw: Some("v0.5.0".into()),
                ..flags()
            },
            "--llmgw needs --trust",
        ),
        (
            CreateSettings {
                github_api: Some("ftp://x".into()),
                ..flags()
            },
            "--github-api",
        ),
        (
            CreateSettings {
                models: vec!["a/b".into(), "a/b:x".into()],
                ..flags()
            },
            "asked for twice",
        ),
    ];
    for (f, want) in cases {
        let err = CreateSpec::resolve(f, &env()).unwrap_err();
        assert!(err.is_usage());
        assert!(err.to_string().contains(want), "{want}: {err}");
    }
}

#[test]
fn spec_file_and_flags_override() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("site.toml");
    std::fs::write(
        &spec,
        r#"
out = "site.tar.zst"
arch = ["amd64"]
llmgw = "v0.5.0"
llmgw_api = "http://127.0.0.1:1/api/v1"
trust = ["keys/llmgw.pub"]
engines = ["llamacpp=b6123", "uv=0.12.20"]
models = ["acme/tiny@main"]
datasets = ["acme/data:*.csv"]
jobs = 2
zstd_level = 9
cache = "c"
allow_missing = true
"#,
    )
    .unwrap();
    let f = CreateSettings {
        spec: Some(spec.clone()),
        ..Default::default()
    };
    let s = CreateSpec::resolve(f, &env()).unwrap();
    assert_eq!(s.out, dir.path().join("site.tar.zst"));
    let l = s.llmgw.unwrap();
    assert_eq!(l.trust, vec![dir.path().join("keys/llmgw.pub")]);
    assert_eq!(l.repo, DEFAULT_LLMGW_REPO);
    assert_eq!(l.api, "http://127.0.0.1:1/api/v1");
    assert_eq!(s.engines.len(), 2);
    assert_eq!(s.repos.len(), 2);
    assert_eq!(s.repos[1].kind, RepoKind::Dataset);
    assert_eq!(s.jobs, 2);
    assert_eq!(s.zstd_level, 9);
    assert_eq!(s.cache, dir.path().join("c"));
    assert!(s.keep_in_cache);
    assert!(s.allow_missing);

    let f = CreateSettings {
        spec: Some(spec.clone()),
        out: Some("other".into()),
        engines: vec!["uv=0.12.21".into()],
        jobs: Some(8),
        ..Default::default()
    };
    let s = CreateSpec::resolve(f, &env()).unwrap();
    assert_eq!(s.out, PathBuf::from("other"));
    assert_eq!(
        s.engines,
        vec![EngineSpec {
            name: "uv".into(),
            version: "0.12.21".into(),
            variant: None,
        }]
    );
    assert_eq!(s.jobs, 8);

    std::fs::write(&spec, "jobs = 2\n outt = 1\n").unwrap();
    let f = CreateSettings {
        spec: Some(spec.clone()),
        ..Default::default()
    };
    let err = CreateSpec::resolve(f, &env()).unwrap_err();
    assert!(err.is_usage());
    // As the binary prints it: one line that names the file, the place and
    // what is wrong there.
    let shown = llmgw_shared::chain(&err);
    assert!(shown.contains("unknown field"), "{shown}");
    assert!(
        shown.starts_with(&format!("spec file {}, line 2, column 2: ", spec.display())),
        "{shown}"
    );
    assert!(!shown.contains('\\'), "one line, nothing escaped: {shown}");
}

#[test]
fn a_packaged_chart_in_a_spec_file_is_relative_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("site.toml");
    std::fs::write(
        &spec,
        "charts = [\"charts/site-0.3.0.tgz\", \"/abs/other.tgz\", \"oci://ghcr.io/acme/app:1.0.0\"]\n",
    )
    .unwrap();
    let s = CreateSettings::from_file(&spec).unwrap();
    assert_eq!(
        s.charts,
        [
            dir.path()
                .join("charts/site-0.3.0.tgz")
                .display()
                .to_string(),
            "/abs/other.tgz".to_string(),
            "oci://ghcr.io/acme/app:1.0.0".to_string(),
        ]
    );
}

#[test]
fn python_choices_from_a_spec_file_and_their_refusals() {
    use crate::spec::python::InterpreterChoice;
    let d = tempfile::tempdir().unwrap();
    let spec = d.path().join("site.toml");
    std::fs::write(
        &spec,
        "out = \"b.tar\"\narch = [\"amd64\"]\nengines = [\"vllm=0.34.0:cu13\"]\n\
         python_envs = [\"tools=click\"]\npython_interpreter = \"none\"\n\
         overrides = [\"vllm=flashinfer-python==0.7.4\"]\nconstraints = [\"tools=click<9\"]\n\
         python = \"3.11\"\n",
    )
    .unwrap();
    let s = CreateSpec::resolve(
        CreateSettings {
            spec: Some(spec),
            ..Default::default()
        },
        &env(),
    )
    .unwrap();
    assert_eq!(s.engines[0].variant.as_deref(), Some("cu13"));
    assert_eq!(s.python_interpreter, InterpreterChoice::None);
    assert_eq!(s.overrides[0].requirement, "flashinfer-python==0.7.4");
    assert_eq!(s.constraints[0].env, "tools");
    assert_eq!(s.site_python.as_deref(), Some("3.11"));
    assert_eq!(s.manylinux, None);
    for (f, why) in [
        (
            CreateSettings {
                python: Some("3.11".into()),
                ..flags()
            },
            "--python sets the CPython of the --python-env environments, and there is none",
        ),
        (
            CreateSettings {
                engines: vec!["vllm=0.34.0:".into()],
                ..flags()
            },
            "expected NAME=VERSION[:VARIANT]",
        ),
        (
            CreateSettings {
                overrides: vec!["vllm".into()],
                ..flags()
            },
            "--override \"vllm\": no '='",
        ),
    ] {
        let e = CreateSpec::resolve(f, &env()).unwrap_err();
        assert!(e.is_usage() && chain(&e).contains(why), "{}", chain(&e));
    }
}
