//! `bundle create --rehearse` (#47): a bundle every check of create passes,
//! but one `--model` glob of which matched no file of the repository (a
//! typo: `tokenizer.modle`), so a node would miss that file. Create writes
//! it and says so (exit 0 without `--rehearse`); with `--rehearse` the
//! rehearsal fails on it, names the glob and the fix, and create exits 1,
//! the bundle kept at `--out` (it is a valid bundle, only not what the
//! operator meant).

use super::common::*;

#[test]
fn a_glob_that_matched_nothing_fails_the_rehearsal_with_its_fix() {
    let fx = fixture();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("b.tar");
    let mut c = create(&fx, tmp.path());
    c.args([
        "--arch",
        "amd64",
        "--model",
        "acme/tiny@main:*.gguf,tokenizer.modle",
    ])
    .arg("--out")
    .arg(&out)
    .arg("--rehearse");
    let o = run(&mut c);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("FAIL hub")
            && err.contains("the glob \"tokenizer.modle\" matches no file carried"),
        "{err}"
    );
    assert!(err.contains("fix: check the glob"), "{err}");
    assert!(err.contains("a node would fail with it"), "{err}");
    assert!(out.exists(), "the bundle stays at --out");

    // A --trust file that is no key is refused naming it, before anything
    // is imported or served.
    let not_a_key = tmp.path().join("not-a-key.pub");
    std::fs::write(&not_a_key, "untrusted\u{1b}[31m text\n").unwrap();
    let o = crate::bundle_kit::llmgw()
        .args(["bundle", "rehearse", "--no-namespace", "--sha256"])
        .arg(tmp.path().join("b.tar.sha256"))
        .arg(&out)
        .arg("--trust")
        .arg(&not_a_key)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("--trust {}", not_a_key.display())),
        "{err}"
    );
    assert!(
        !err.contains('\u{1b}'),
        "the file's text is never printed raw: {err}"
    );

    // The same request with a glob that matches: the rehearsal passes.
    let out2 = tmp.path().join("c.tar");
    let mut c = create(&fx, tmp.path());
    c.args([
        "--arch",
        "amd64",
        "--model",
        "acme/tiny@main:*.gguf,config.json",
    ])
    .arg("--out")
    .arg(&out2)
    .arg("--rehearse");
    let o = run(&mut c);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("0 failed"), "{err}");
}
