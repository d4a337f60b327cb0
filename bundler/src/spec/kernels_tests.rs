use super::*;

fn err_of(r: Result<impl std::fmt::Debug, CreateError>) -> (String, bool) {
    let e = r.unwrap_err();
    (llmgw_shared::chain(&e), e.is_usage())
}

#[test]
fn the_flag_takes_a_version_a_revision_and_folders() {
    let k =
        parse_kernel("acme/relu@v1:torch-cpu,torch29-cxx11-cu129-x86_64-linux,torch-cpu").unwrap();
    assert_eq!(
        (k.kind, k.id.as_str(), k.revision.as_str()),
        (RepoKind::Kernel, "acme/relu", "v1")
    );
    assert_eq!(
        k.variants,
        ["torch-cpu", "torch29-cxx11-cu129-x86_64-linux"]
    );
    let newest = parse_kernel("acme/relu").unwrap();
    assert_eq!((newest.revision.as_str(), newest.variants.len()), ("", 0));
}

#[test]
fn a_folder_that_escapes_build_or_no_variant_is_refused_by_name() {
    for bad in [
        "acme/relu@v1:../../etc",
        "acme/relu:torch29-nope",
        "acme/relu@v1:",
    ] {
        let (e, usage) = err_of(parse_kernel(bad));
        assert!(
            usage && e.contains("--kernel") && e.contains("kernel build variant"),
            "{bad}: {e}"
        );
    }
    let (e, usage) = err_of(parse_kernel("../relu@v1"));
    assert!(usage && e.contains("expected ORG/NAME"), "{e}");
    let (e, _) = err_of(parse_kernel("acme/relu@"));
    assert!(e.contains("kernel revision"), "{e}");
}

fn lock(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kernels.lock");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

#[test]
fn a_lock_pins_each_kernel_at_its_commit() {
    let commit = "0123456789abcdef0123456789abcdef01234567";
    let (_d, path) = lock(&format!(
        r#"[{{"dependency": {{"repo-id": "acme/relu", "version": 1}}, "lock": {{"commit": "{commit}"}}}}]"#
    ));
    let mut repos = Vec::new();
    add(&["acme/relu@v1".into()], Some(&path), &mut repos).unwrap();
    assert_eq!(repos.len(), 2);
    assert_eq!(
        (repos[1].id.as_str(), repos[1].revision.as_str()),
        ("acme/relu", commit)
    );
}

#[test]
fn a_bad_lock_is_refused_naming_the_file_and_the_value() {
    let (_d, path) =
        lock(r#"[{"dependency": {"repo-id": "acme/relu"}, "lock": {"commit": "main"}}]"#);
    let (e, usage) = err_of(add(&[], Some(&path), &mut Vec::new()));
    assert!(
        usage && e.contains("kernels.lock") && e.contains("entry 0 names commit main;"),
        "{e}"
    );
    let (_d, path) = lock(r#"[{"dependency": {"repo-id": "../x"}, "lock": {"commit": "main"}}]"#);
    let (e, _) = err_of(add(&[], Some(&path), &mut Vec::new()));
    assert!(e.contains("names repository ../x;"), "{e}");
    let (_d, path) = lock("{\"locks\": 1}");
    let (e, _) = err_of(add(&[], Some(&path), &mut Vec::new()));
    assert!(e.contains("is not a kernels.lock"), "{e}");
    let (_d, path) = lock(&" ".repeat(MAX_LOCK as usize + 1));
    let (e, _) = err_of(add(&[], Some(&path), &mut Vec::new()));
    assert!(e.contains("a kernels.lock that large is refused"), "{e}");
}
