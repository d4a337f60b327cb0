//! No URL reaches a file the manifests do not name, whatever its encoding:
//! every route, every name slot, with `..`, `%2e%2e`, `%2F`, backslashes,
//! NUL, overlong UTF-8, double encoding and overlong paths.

use crate::common::*;

const SECRET: &str = "TOPSECRET-not-to-be-served";

/// Where a payload goes: `{}` is the slot.
const TEMPLATES: &[(&str, &str)] = &[
    ("GET", "/{}/tiny/resolve/main/config.json"),
    ("GET", "/acme/{}/resolve/main/config.json"),
    ("GET", "/acme/tiny/resolve/{}/config.json"),
    ("GET", "/acme/tiny/resolve/main/{}"),
    ("HEAD", "/acme/tiny/resolve/main/{}"),
    ("GET", "/acme/tiny/resolve/main/sub/{}/vocab.txt"),
    ("GET", "/acme/tiny/resolve/main/{}/trust/secret.pub"),
    ("GET", "/datasets/acme/data/resolve/{}/data/train.csv"),
    ("GET", "/datasets/acme/data/resolve/v1.0/{}"),
    ("GET", "/api/models/{}/tiny"),
    ("GET", "/api/{}/acme/tiny"),
    ("GET", "/api/models/acme/tiny/revision/{}"),
    ("GET", "/api/models/acme/tiny/tree/{}"),
    ("GET", "/api/models/acme/tiny/tree/main/{}"),
    ("GET", "/api/models/acme/tiny/tree/main/{}?recursive=true"),
    ("POST", "/api/models/acme/tiny/paths-info/{}"),
    ("GET", "/api/datasets/acme/data/tree/v1.0/{}"),
    ("GET", "/v2/acme/{}/manifests/latest"),
    ("GET", "/v2/acme/tiny/manifests/{}"),
    ("HEAD", "/v2/{}/manifests/v1"),
    ("GET", "/v2/acme/{}/blobs/sha256:0000"),
    ("GET", "/v2/acme/app/blobs/{}"),
    ("GET", "/v2/{}/tags/list"),
    ("GET", "/v2/acme/app/referrers/{}"),
    ("GET", "/charts/{}"),
    ("GET", "/{}/llama.cpp/releases/download/b6123/x.zip"),
    (
        "GET",
        "/ggml-org/llama.cpp/releases/download/{}/llama-b6123-bin-ubuntu-x64.zip",
    ),
    ("GET", "/ggml-org/llama.cpp/releases/download/b6123/{}"),
    ("GET", "/ggml-org/llama.cpp/releases/latest/download/{}"),
    ("GET", "/api/v3/repos/ggml-org/{}/releases"),
    ("GET", "/api/v3/repos/ggml-org/llama.cpp/releases/tags/{}"),
    ("GET", "/api/v3/repos/ggml-org/llama.cpp/releases/assets/{}"),
    ("GET", "/api/v3/repos/ggml-org/llama.cpp/releases/{}"),
    ("GET", "/repos/ggml-org/llama.cpp/releases/tags/{}"),
    ("GET", "/v1/{}"),
    ("GET", "/{}"),
    ("GET", "/healthz/{}"),
    ("GET", "/metrics/{}"),
];

fn payloads() -> Vec<Vec<u8>> {
    let mut p: Vec<Vec<u8>> = [
        "..",
        "../..",
        "../../..",
        "../../../../../../etc/passwd",
        "..%2F..%2F..%2Ftrust%2Fsecret.pub",
        "%2e%2e",
        "%2E%2E/%2E%2E",
        "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "%2e%2e%5c%2e%2e%5csecret",
        "..%5c..%5csecret",
        "%5c..%5c..%5cetc%5cpasswd",
        "%2F",
        "%2Fetc%2Fpasswd",
        "%2F..%2F..%2Foutside.txt",
        "a%00b",
        "%00",
        "config.json%00.txt",
        "%c0%ae%c0%ae",
        "%c0%ae%c0%ae%c0%af",
        "%e0%80%ae%e0%80%ae",
        "%252e%252e%252f",
        "....//....//",
        ".",
        "%2e",
        "./config.json",
        "sub/./dir",
        "sub//dir",
        "~",
        "blobs",
        "trust",
        "bundles",
        "%0d%0aX-Injected:%201",
        "%ff%fe",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    p.push(b"..\\..\\secret".to_vec());
    p.push(b"a\\b".to_vec());
    p.push("a".repeat(9000).into_bytes());
    p.push(format!("{}/x", "..%2F".repeat(300)).into_bytes());
    p
}

#[test]
fn no_route_serves_anything_outside_the_manifests() {
    let (d, store, _) = store_with_main_bundle();
    // Bait: files inside the store that are not blobs, and outside it.
    std::fs::write(store.join("trust").join("secret.pub"), SECRET).unwrap();
    std::fs::write(store.join("tmp").join("secret"), SECRET).unwrap();
    std::fs::write(store.join("secret"), SECRET).unwrap();
    std::fs::write(d.path().join("outside.txt"), SECRET).unwrap();
    let srv = serve(&store);

    let mut checked = 0;
    for (method, template) in TEMPLATES {
        for payload in payloads() {
            let (pre, post) = template.split_once("{}").unwrap();
            let mut target = pre.as_bytes().to_vec();
            target.extend_from_slice(&payload);
            target.extend_from_slice(post.as_bytes());
            let body: &[u8] = if *method == "POST" {
                b"paths=config.json"
            } else {
                b""
            };
            let r = raw_with_body(srv.addr, method, &target, &[], body);
            let shown = String::from_utf8_lossy(&target[..target.len().min(120)]).into_owned();
            let text = r.text();
            assert!(r.status < 500, "{method} {shown} -> {} {}", r.status, text);
            assert!(!text.contains(SECRET), "{method} {shown} served a secret");
            assert!(
                !text.contains("root:x:0"),
                "{method} {shown} served /etc/passwd"
            );
            assert!(
                !r.headers
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case("x-injected")),
                "{method} {shown} split a header"
            );
            // Anything that climbs is refused outright, not looked up.
            let s = String::from_utf8_lossy(&payload).to_lowercase();
            if s.contains("..")
                || s.contains("%2e%2e")
                || s.contains('\\')
                || s.contains("%5c")
                || s.contains("%00")
            {
                assert!(
                    matches!(r.status, 400 | 404 | 405 | 414),
                    "{method} {shown} -> {}",
                    r.status
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 1000, "{checked}");

    // paths-info form values are names too.
    for bad in [
        "../trust/secret.pub",
        "..%2F..%2Fsecret",
        "a%5Cb",
        "%00",
        "sub/../../x",
    ] {
        let r = raw_with_body(
            srv.addr,
            "POST",
            b"/api/models/acme/tiny/paths-info/main",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            format!("paths={bad}").as_bytes(),
        );
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
        assert!(!r.text().contains(SECRET));
    }

    // A leading '/' is dropped (the name is then looked up, and missed).
    let r = raw_with_body(
        srv.addr,
        "POST",
        b"/api/models/acme/tiny/paths-info/main",
        &[],
        b"paths=/etc/passwd&paths=/config.json",
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.json().as_array().unwrap().len(), 1);
    assert_eq!(r.json()[0]["path"], "config.json");

    // The real files are still served: the suite refused only the bad.
    let r = get(srv.addr, "/acme/tiny/resolve/main/config.json");
    assert_eq!(r.status, 200);
}
