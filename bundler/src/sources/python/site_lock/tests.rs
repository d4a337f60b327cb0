//! The site-lock readers on locks shaped as uv 0.13 writes them.

use std::path::Path;

use super::marker::Target;
use super::*;

const H: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

fn uv_lock(extra: &str) -> String {
    format!(
        r#"version = 1
revision = 3
requires-python = ">=3.11"

[[package]]
name = "click"
version = "8.3.0"
source = {{ registry = "https://pypi.example/simple" }}
dependencies = [{{ name = "colorama", marker = "sys_platform == 'win32'" }}]
wheels = [{{ url = "https://files.example/click-8.3.0-py3-none-any.whl", hash = "{H}", size = 5 }}]

[[package]]
name = "colorama"
version = "0.4.6"
source = {{ registry = "https://pypi.example/simple" }}
wheels = [{{ url = "https://files.example/colorama-0.4.6-py2.py3-none-any.whl", hash = "{H}" }}]

[[package]]
name = "site"
version = "0.1.0"
source = {{ virtual = "." }}
dependencies = [{{ name = "click" }}{extra}]
"#
    )
}

const T: Target = Target {
    minor: 11,
    machine: "x86_64",
};

#[test]
fn a_uv_lock_is_walked_from_the_project_over_markers_that_may_hold() {
    let ps = uv_lock::applicable(&uv_lock(""), Path::new("uv.lock"), &T).unwrap();
    let names: Vec<&str> = ps.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["click"]);
    assert_eq!(ps[0].index.as_deref(), Some("https://pypi.example/simple"));
    assert_eq!(ps[0].wheels[0].filename, "click-8.3.0-py3-none-any.whl");
    assert_eq!(ps[0].wheels[0].sha256, "a".repeat(64));
}

#[test]
fn a_git_source_and_a_missing_hash_are_refused_naming_the_package() {
    let git = uv_lock(", { name = \"tool\" }")
        + "\n[[package]]\nname = \"tool\"\nversion = \"1\"\nsource = { git = \"https://g/x?rev=1#abc\" }\n";
    let e = uv_lock::applicable(&git, Path::new("/p/uv.lock"), &T).unwrap_err();
    assert_eq!(
        e.to_string(),
        "/p/uv.lock: package \"tool\" comes from a `git` source, which a bundle cannot carry; \
         publish a wheel of it to an index and lock that version instead"
    );
    let bare = uv_lock("").replacen(&format!(", hash = \"{H}\""), "", 1);
    let e = uv_lock::applicable(&bare, Path::new("uv.lock"), &T).unwrap_err();
    assert!(e.to_string().contains("has no sha256"), "{e}");
    // A hostile source kind reaches the terminal escaped.
    let hostile = uv_lock(", { name = \"tool\" }")
        + "\n[[package]]\nname = \"tool\"\nversion = \"1\"\nsource = { \"g\\u001b[2Jit\" = \"x\" }\n";
    let e = uv_lock::applicable(&hostile, Path::new("uv.lock"), &T).unwrap_err();
    assert!(!e.to_string().contains('\x1b'), "{e}");
    assert!(e.to_string().contains("[2Jit` source"), "{e}");
    let old = uv_lock("").replacen("version = 1", "version = 2", 1);
    let e = uv_lock::applicable(&old, Path::new("uv.lock"), &T).unwrap_err();
    assert!(e.to_string().contains("uv.lock version 2"), "{e}");
}

#[test]
fn a_pylock_keeps_the_packages_whose_marker_may_hold() {
    let text = format!(
        r#"lock-version = "1.0"
created-by = "uv"
requires-python = ">=3.11"

[[packages]]
name = "click"
version = "8.3.0"
index = "https://pypi.example/simple"
wheels = [{{ url = "https://files.example/click-8.3.0-py3-none-any.whl", hashes = {{ sha256 = "{}" }} }}]

[[packages]]
name = "pywin32"
version = "311"
marker = "sys_platform == 'win32'"
wheels = [{{ url = "https://files.example/pywin32-311-cp311-cp311-win_amd64.whl", hashes = {{ sha256 = "{}" }} }}]
"#,
        "b".repeat(64),
        "c".repeat(64)
    );
    let ps = pylock::applicable(&text, Path::new("pylock.toml"), &T).unwrap();
    assert_eq!(ps.len(), 1);
    assert_eq!(ps[0].wheels[0].sha256, "b".repeat(64));
}

#[test]
fn a_package_with_no_wheel_for_the_platform_is_refused() {
    let pkg = SitePackage {
        name: "m".into(),
        version: "1".into(),
        index: None,
        wheels: vec![SiteFile {
            url: "u".into(),
            filename: "m-1-cp311-cp311-win_amd64.whl".into(),
            size: None,
            sha256: "a".repeat(64),
        }],
        has_sdist: true,
    };
    let e = choose_wheels(
        &[pkg],
        Path::new("uv.lock"),
        &T,
        "2_28",
        "x86_64-manylinux_2_28",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "uv.lock: m 1 has no locked wheel for CPython 3.11 on x86_64-manylinux_2_28 (the lock \
         has: m-1-cp311-cp311-win_amd64.whl); its sdist is not carried, since building it on a \
         node needs a build backend the lock does not pin; lock a version that publishes one, \
         or pass --manylinux with the glibc the nodes have if a wheel needs a newer one"
    );
}

#[test]
fn lock_paths_are_told_from_requirements() {
    use crate::spec::python::lock_format_of as format_of;
    use llmgw_shared::manifest::SiteLockFormat;
    assert_eq!(format_of("/x/uv.lock"), Some(SiteLockFormat::UvLock));
    assert_eq!(format_of("pylock.toml"), Some(SiteLockFormat::Pylock));
    assert_eq!(format_of("a/pylock.dev.toml"), Some(SiteLockFormat::Pylock));
    assert_eq!(format_of("click"), None);
    assert_eq!(format_of("transformers,huggingface_hub[cli]"), None);
}
