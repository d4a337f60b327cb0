//! The Hub's surface answered deliberately (#51): a full ref names the
//! revision its short name does, and every Hub API route the mirror does
//! not serve is a 404 in the Hub's shape (`X-Error-Code`, `X-Error-Message`,
//! a JSON `error`), never a 400 or 500 or a bare text, so a client falls
//! back as it does when the Hub lacks something.

use crate::bundle_kit::{Kit, Server, import_bundle, ok_for as ok, write_tar};

/// The response head of a GET (or a HEAD) of `path`, as curl prints it.
fn head_of(server: &Server, path: &str, head: bool) -> String {
    let mut c = std::process::Command::new("curl");
    c.args(["-s", "-o", "/dev/null", "-D", "-"]);
    if head {
        c.arg("-I");
    }
    let o = c
        .arg(format!("{}{path}", server.url))
        .output()
        .expect("curl");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `(status, X-Error-Code, X-Error-Message)` of a GET of `path`.
fn ask(server: &Server, path: &str) -> (u16, String, String) {
    let head = head_of(server, path, false);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let header = |name: &str| {
        head.lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
            })
            .unwrap_or_default()
    };
    (status, header("x-error-code"), header("x-error-message"))
}

#[test]
fn full_refs_resolve_and_routes_not_served_are_misses_in_the_hubs_shape() {
    let d = tempfile::tempdir().unwrap();
    let mut kit = Kit::new();
    kit.model_file("acme/tiny", "config.json", b"{}");
    let bundle = d.path().join("b.tar");
    write_tar(&bundle, &kit.entries());
    let store = d.path().join("store");
    ok(
        "import",
        &import_bundle(&bundle, &kit.sha256(), &store, &[]),
    );
    let server = Server::start(&store);

    for path in [
        "/api/models/acme/tiny/revision/refs%2Fheads%2Fmain",
        "/api/models/acme/tiny/revision/refs/heads/main",
        "/acme/tiny/resolve/refs%2Fheads%2Fmain/config.json",
    ] {
        assert_eq!(ask(&server, path).0, 200, "{path}");
    }
    let (status, code, _) = ask(&server, "/api/models/acme/tiny/revision/refs%2Ftags%2Fmain");
    assert_eq!((status, code.as_str()), (404, "RevisionNotFound"));

    for path in [
        "/api/whoami-v2",
        "/api/models",
        "/api/models/acme/tiny/discussions",
        "/api/models/acme/tiny/commits/main",
        "/api/models/acme/tiny/preupload/main",
        "/api/models/acme/tiny/xet-write-token/main",
        "/api/collections",
        "/api/datasets/acme/tiny/parquet",
    ] {
        let (status, code, message) = ask(&server, path);
        assert_eq!((status, code.as_str()), (404, "EntryNotFound"), "{path}");
        assert!(message.contains("not served offline"), "{path}: {message}");
        // HEAD answers GET's headers (but the date).
        let lines = |head: bool| -> Vec<String> {
            let mut v: Vec<String> = head_of(&server, path, head)
                .lines()
                .filter(|l| !l.to_ascii_lowercase().starts_with("date:"))
                .map(str::to_string)
                .collect();
            v.sort();
            v
        };
        assert_eq!(lines(true), lines(false), "{path}");
    }
}
