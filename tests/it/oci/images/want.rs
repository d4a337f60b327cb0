//! An image a node pulled through the mirror and the mirror lacked comes
//! in the next bundle: a containerd-shaped request (`?ns=REGISTRY`) is a
//! miss that keeps its registry, `mirror misses --out` writes it, `bundle
//! create --want` carries the image from that registry (the real
//! `docker-registry`, pushed by the real `skopeo`), and after import the
//! same request answers the registry's own bytes.

use std::process::Command;
use std::time::{Duration, Instant};

use llmgw_fixture::registry::{Distribution, TestImage};

use super::common::*;

/// (status, body) of a containerd-shaped manifest request.
fn pull_manifest(url: &str) -> (u16, Vec<u8>) {
    let o = Command::new("curl")
        .args(["-s", "-o", "-", "-w", "\n%{http_code}"])
        .args(["-H", "Accept: application/vnd.oci.image.index.v1+json"])
        .args(["-H", "Accept: application/vnd.oci.image.manifest.v1+json"])
        .arg(url)
        .output()
        .unwrap();
    let mut body = o.stdout;
    let nl = body.iter().rposition(|b| *b == b'\n').unwrap();
    let code = text(&body[nl + 1..]).trim().parse().unwrap();
    body.truncate(nl);
    (code, body)
}

#[test]
fn an_image_missed_through_the_mirror_is_carried_by_want() {
    let reg = Distribution::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let img = TestImage::build(
        &dir.path().join("layout"),
        "v1",
        7,
        &["amd64"],
        1,
        16 * 1024,
    )
    .unwrap();
    reg.push(&img.layout, "v1", "acme/app").unwrap();
    let store = dir.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let mirror = crate::bundle_kit::Server::start(&store);
    let asked = format!("{}/v2/acme/app/manifests/v1?ns={}", mirror.url, reg.host);
    assert_eq!(pull_manifest(&asked).0, 404);

    let want = dir.path().join("want.json");
    let start = Instant::now();
    loop {
        let o = llmgw()
            .args(["mirror", "misses", "--store"])
            .arg(&store)
            .arg("--out")
            .arg(&want)
            .output()
            .unwrap();
        ok(&o);
        if std::fs::read_to_string(&want)
            .unwrap()
            .contains(&format!("?ns={}", reg.host))
        {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no miss saved");
        std::thread::sleep(Duration::from_millis(200));
    }

    let out = dir.path().join("b");
    let sha = ok(&create(dir.path())
        .args(["--arch", "amd64", "--json", "--out"])
        .arg(&out)
        .arg("--want")
        .arg(&want)
        .args(["--insecure-registry", &reg.host])
        .output()
        .unwrap());
    let report: serde_json::Value = serde_json::from_str(&sha).unwrap();
    assert_eq!(report["gaps"], serde_json::json!([]), "{report}");
    let sha = report["manifest_sha256"].as_str().unwrap();
    let m = manifest(&out);
    assert_eq!(m.images.len(), 1);
    assert_eq!(m.images[0].registry.as_deref(), Some(reg.host.as_str()));
    ok(&import(&out, sha, &store));

    let served = reg.inspect_raw("acme/app", "v1").unwrap();
    let start = Instant::now();
    loop {
        let (status, body) = pull_manifest(&asked);
        if status == 200 {
            assert_eq!(body, served);
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "not served: {status}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
