//! The mirror as a read-only OCI registry and chart repository (#30, the
//! serve side), checked with the real clients: skopeo, containerd's `ctr`
//! and Helm's Go SDK (`helm-python-sdk`), against a store that imported a
//! format 3 bundle made by `oci/serve/kit.rs`; a tag under the trusted
//! order (`oci/serve/trust.rs`); a chart packaged on disk, carried as helm
//! push makes it (`oci/serve/package.rs`). A client that is missing
//! fails the test, naming what to install.

use crate::bundle_kit;
use crate::oci::clients;
pub mod kit;
mod package;
mod trust;

use std::path::PathBuf;
use std::process::Command;

use bundle_kit::{Kit, Server, import_bundle, stderr, stdout, write_dir};
use clients::{containerd, http, need};
use llmgw_shared::Sha256;

/// A store serving: `docker.io/acme/app:v1` (amd64, arm64, an attestation
/// and an SBOM), `acme/twice:v1` from docker.io and from ghcr.io (two
/// images, one path), and the chart `acme` 0.1.0 (`charts/acme`, no
/// registry).
struct Fixture {
    dir: tempfile::TempDir,
    server: Server,
    app: kit::Made,
    twice_docker: kit::Made,
    twice_ghcr: kit::Made,
    chart_tgz: Vec<u8>,
    blobs: kit::Blobs,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut blobs = kit::Blobs::default();
        let app = kit::image(&mut blobs, Some("docker.io"), "acme/app", "v1");
        let twice_docker = kit::image(&mut blobs, Some("docker.io"), "acme/twice", "v1");
        let twice_ghcr = kit::image(&mut blobs, Some("ghcr.io"), "acme/twice", "v1");
        let (chart, chart_tgz) = kit::chart(&mut blobs, "acme", "0.1.0");
        let manifest = kit::manifest(
            vec![
                app.image.clone(),
                app.referrer.clone(),
                twice_docker.image.clone(),
                twice_docker.referrer.clone(),
                twice_ghcr.image.clone(),
                twice_ghcr.referrer.clone(),
            ],
            vec![chart],
        );
        let k = Kit {
            manifest,
            blobs: blobs.bytes.clone(),
        };
        let bundle = dir.path().join("images-bundle");
        write_dir(&bundle, &k.entries());
        std::fs::write(dir.path().join("images-bundle.sha256"), k.sha256()).unwrap();
        let store = dir.path().join("store");
        let o = import_bundle(&bundle, &k.sha256(), &store, &[]);
        assert!(o.status.success(), "import: {}{}", stdout(&o), stderr(&o));
        let server = Server::start(&store);
        server.wait_for("/readyz", 200);
        Fixture {
            dir,
            server,
            app,
            twice_docker,
            twice_ghcr,
            chart_tgz,
            blobs,
        }
    }

    fn host(&self) -> &str {
        self.server.url.trim_start_matches("http://")
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }
}

fn run(cmd: &mut Command) -> std::process::Output {
    cmd.output().unwrap()
}

#[test]
fn skopeo_reads_and_copies_every_image_byte_identical() {
    need("skopeo", "apt-get install -y skopeo");
    let f = Fixture::new();
    let reference = format!("docker://{}/acme/app:v1", f.host());
    let o =
        run(Command::new("skopeo").args(["inspect", "--raw", "--tls-verify=false", &reference]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(o.stdout, f.app.index_bytes, "the index as carried");

    let layout = f.path("copied");
    let o = run(Command::new("skopeo").args([
        "copy",
        "--all",
        "--src-tls-verify=false",
        &reference,
        &format!("oci:{}:v1", layout.display()),
    ]));
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).unwrap()).unwrap();
    assert_eq!(
        index["manifests"][0]["digest"],
        format!("sha256:{}", f.app.image.digest),
        "skopeo kept the publisher's index digest"
    );
    // Every image blob skopeo wrote is the carried one, byte for byte.
    let copied = layout.join("blobs/sha256");
    let mut n = 0;
    for d in f.app.image.all_blobs() {
        let bytes = std::fs::read(copied.join(d.sha256.as_str()))
            .unwrap_or_else(|e| panic!("{} ({}) not copied: {e}", d.sha256, d.media_type));
        assert_eq!(bytes, f.blobs.bytes[d.sha256.as_str()]);
        n += 1;
    }
    assert!(n >= 10, "{n} blobs");
}

#[test]
fn a_push_is_refused_with_the_oci_error_body() {
    need("skopeo", "apt-get install -y skopeo");
    let f = Fixture::new();
    let layout = f.path("src");
    let o = run(Command::new("skopeo").args([
        "copy",
        "--src-tls-verify=false",
        &format!("docker://{}/acme/app:v1", f.host()),
        &format!("oci:{}:v1", layout.display()),
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(Command::new("skopeo").args([
        "copy",
        "--dest-tls-verify=false",
        &format!("oci:{}:v1", layout.display()),
        &format!("docker://{}/acme/pushed:v1", f.host()),
    ]));
    assert!(!o.status.success(), "a push went through: {}", stdout(&o));
    let err = stderr(&o);
    assert!(err.contains("read-only registry"), "{err}");
    for (method, path) in [
        ("POST", "/v2/acme/app/blobs/uploads/"),
        ("PUT", "/v2/acme/app/manifests/v2"),
        ("PATCH", "/v2/acme/app/blobs/uploads/x"),
        ("DELETE", "/v2/acme/app/manifests/v1"),
    ] {
        let a = http(&f.server.url, method, path, &[]);
        assert_eq!(a.status, 405, "{method} {path}");
        assert_eq!(a.code(), "UNSUPPORTED", "{method} {path}");
    }
}

#[test]
fn containerd_pulls_through_a_hosts_toml_mirror_with_ns() {
    let f = Fixture::new();
    let c = containerd(f.dir.path());
    let hosts = f.path("hosts");
    for registry in ["docker.io", "ghcr.io"] {
        std::fs::create_dir_all(hosts.join(registry)).unwrap();
        std::fs::write(
            hosts.join(registry).join("hosts.toml"),
            format!(
                "server = \"https://{registry}\"\n[host.\"{}\"]\n  capabilities = [\"pull\", \"resolve\"]\n",
                f.server.url
            ),
        )
        .unwrap();
    }
    // One path, two registries: `ns` decides which image each pull gets.
    for (reference, made) in [
        ("docker.io/acme/twice:v1", &f.twice_docker),
        ("ghcr.io/acme/twice:v1", &f.twice_ghcr),
        ("docker.io/acme/app:v1", &f.app),
    ] {
        let o = c.ctr(&[
            "images",
            "pull",
            "--snapshotter",
            "native",
            "--hosts-dir",
            hosts.to_str().unwrap(),
            reference,
        ]);
        assert!(
            o.status.success(),
            "ctr pull {reference}: {}{}",
            stdout(&o),
            stderr(&o)
        );
        let ls = stdout(&c.ctr(&["images", "ls"]));
        let line = ls
            .lines()
            .find(|l| l.starts_with(&format!("{reference} ")))
            .unwrap_or_else(|| panic!("{reference} not listed: {ls}"));
        assert!(
            line.contains(&format!("sha256:{}", made.image.digest)),
            "{reference}: {line}"
        );
    }
}

#[test]
fn helm_pulls_the_chart_over_oci_and_from_the_classic_index() {
    let python = clients::venv_python();
    let f = Fixture::new();
    let (oci_dir, classic_dir, home) = (f.path("oci"), f.path("classic"), f.path("helm"));
    for d in [&oci_dir, &classic_dir, &home] {
        std::fs::create_dir_all(d).unwrap();
    }
    let script = format!(
        r#"
import json
from helm_python import registry
oci = registry.pull("oci://{host}/charts/acme", version="0.1.0", plain_http=True, destination={oci:?})
index = registry.repo_index("{url}/charts")
classic = registry.pull("acme", repo_url="{url}/charts", version="0.1.0", destination={classic:?})
print(json.dumps({{"oci": oci, "index": index, "classic": classic}}))
"#,
        host = f.host(),
        url = f.server.url,
        oci = oci_dir.to_str().unwrap(),
        classic = classic_dir.to_str().unwrap(),
    );
    let o = run(Command::new(&python)
        .args(["-c", &script])
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data")));
    assert!(o.status.success(), "helm: {}{}", stdout(&o), stderr(&o));
    let out: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    for d in [&oci_dir, &classic_dir] {
        let got = std::fs::read(d.join("acme-0.1.0.tgz")).unwrap();
        assert_eq!(got, f.chart_tgz, "{}: {out}", d.display());
    }
    let entry = &out["index"]["entries"]["acme"][0];
    assert_eq!(
        entry["digest"],
        Sha256::of(&f.chart_tgz).to_string(),
        "{out}"
    );
    assert_eq!(entry["version"], "0.1.0");
    assert_eq!(entry["appVersion"], "1.0");
    let url = entry["urls"][0].as_str().unwrap();
    assert_eq!(url, format!("{}/charts/acme-0.1.0.tgz", f.server.url));
}

#[test]
fn the_registry_answers_as_the_spec_says() {
    let f = Fixture::new();
    let url = &f.server.url;
    let a = http(url, "GET", "/v2/", &[]);
    assert_eq!((a.status, a.body.as_slice()), (200, &b"{}"[..]));
    assert_eq!(a.header("docker-distribution-api-version"), "registry/2.0");

    // HEAD carries GET's headers, with the true length (containerd reads it).
    let index = format!("sha256:{}", f.app.image.digest);
    let head = http(url, "HEAD", "/v2/acme/app/manifests/v1", &[]);
    assert_eq!(head.status, 200);
    assert_eq!(
        head.header("content-length"),
        f.app.index_bytes.len().to_string()
    );
    assert_eq!(head.header("docker-content-digest"), index);
    assert_eq!(head.header("content-type"), kit::INDEX);
    // Accept: an index is refused only when no line takes it.
    let only_manifest = [format!("Accept: {}", kit::MANIFEST)];
    let a = http(url, "GET", "/v2/acme/app/manifests/v1", &only_manifest);
    assert_eq!((a.status, a.code()), (404, "MANIFEST_UNKNOWN".into()));
    let both = [
        format!("Accept: {}", kit::MANIFEST),
        format!("Accept: {}", kit::INDEX),
    ];
    let a = http(url, "GET", "/v2/acme/app/manifests/v1", &both);
    assert_eq!((a.status, a.body.clone()), (200, f.app.index_bytes.clone()));

    // A blob with Range, and a blob another name carries is not served here.
    let amd64 = http(
        url,
        "GET",
        &format!("/v2/acme/app/manifests/sha256:{}", f.app.amd64),
        &[],
    );
    let m: serde_json::Value = serde_json::from_slice(&amd64.body).unwrap();
    let layer = m["layers"][0]["digest"].as_str().unwrap();
    let part = http(
        url,
        "GET",
        &format!("/v2/acme/app/blobs/{layer}"),
        &["Range: bytes=2-9".into()],
    );
    assert_eq!(part.status, 206);
    assert_eq!(part.body, f.blobs.bytes[&layer[7..]][2..10]);
    let a = http(
        url,
        "GET",
        &format!("/v2/acme/twice/blobs/{layer}?ns=docker.io"),
        &[],
    );
    assert_eq!((a.status, a.code()), (404, "BLOB_UNKNOWN".into()));

    // Names held twice need `ns`; the message names both registries.
    let a = http(url, "GET", "/v2/acme/twice/tags/list", &[]);
    assert_eq!((a.status, a.code()), (404, "NAME_UNKNOWN".into()));
    assert!(
        a.message().contains("docker.io, ghcr.io"),
        "{}",
        a.message()
    );
    let a = http(url, "GET", "/v2/acme/twice/manifests/v1?ns=ghcr.io", &[]);
    assert_eq!(
        a.header("docker-content-digest"),
        format!("sha256:{}", f.twice_ghcr.image.digest)
    );
    let a = http(url, "GET", "/v2/charts/acme/tags/list?ns=docker.io", &[]);
    assert_eq!(
        a.status, 200,
        "a chart with no registry answers whatever ns says"
    );

    // Unknown names and digests, path tricks: the spec's codes.
    let zero = format!("sha256:{}", "0".repeat(64));
    for (path, status, code) in [
        (
            "/v2/acme/none/manifests/v1".to_string(),
            404,
            "NAME_UNKNOWN",
        ),
        ("/v2/acme/app/manifests/v9".into(), 404, "MANIFEST_UNKNOWN"),
        (
            format!("/v2/acme/app/manifests/{zero}"),
            404,
            "MANIFEST_UNKNOWN",
        ),
        (format!("/v2/acme/app/blobs/{zero}"), 404, "BLOB_UNKNOWN"),
        (
            "/v2/acme/../acme/app/manifests/v1".into(),
            400,
            "NAME_INVALID",
        ),
        ("/v2/acme%2Fapp/manifests/v1".into(), 400, "NAME_INVALID"),
        ("/v2/acme//app/manifests/v1".into(), 400, "NAME_INVALID"),
        (
            "/v2/acme/app/manifests/..%2F..%2Fetc".into(),
            400,
            "MANIFEST_INVALID",
        ),
        (
            "/v2/acme/app/blobs/sha256:..%2F..%2Fetc%2Fpasswd".into(),
            400,
            "DIGEST_INVALID",
        ),
        (
            "/v2/acme/app/referrers/sha256:xyz".into(),
            400,
            "DIGEST_INVALID",
        ),
    ] {
        let a = http(url, "GET", &path, &[format!("Accept: {}", kit::INDEX)]);
        assert_eq!((a.status, a.code()), (status, code.to_string()), "{path}");
    }

    // Tags and the catalog page with n/last and Link; referrers list the SBOM.
    let a = http(url, "GET", "/v2/_catalog?n=1", &[]);
    let v: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
    assert_eq!(v["repositories"], serde_json::json!(["acme/app"]));
    assert_eq!(
        a.header("link"),
        "</v2/_catalog?n=1&last=acme/app>; rel=\"next\""
    );
    let a = http(url, "GET", &format!("/v2/acme/app/referrers/{index}"), &[]);
    assert_eq!(a.header("content-type"), kit::INDEX);
    let v: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
    assert_eq!(
        v["manifests"][0]["digest"],
        format!("sha256:{}", f.app.sbom)
    );
    assert_eq!(v["manifests"][0]["artifactType"], kit::SBOM);
    let a = http(
        url,
        "GET",
        &format!("/v2/acme/app/referrers/{zero}?artifactType=x"),
        &[],
    );
    let v: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
    assert_eq!(
        (a.status, v["manifests"].clone()),
        (200, serde_json::json!([]))
    );
    assert_eq!(a.header("oci-filters-applied"), "artifactType");

    // /v1/index lists them for the control plane.
    let v: serde_json::Value =
        serde_json::from_slice(&http(url, "GET", "/v1/index", &[]).body).unwrap();
    assert_eq!(v["images"].as_array().unwrap().len(), 4, "{v}");
    assert_eq!(
        v["charts"][0]["sha256"],
        Sha256::of(&f.chart_tgz).to_string()
    );
}

/// The front page lists the images a node can pull (as the mirror names
/// them, with the registry `ns` picks) and the charts with their versions;
/// a miss of an image tag is counted in the miss log.
#[test]
fn the_front_page_lists_images_and_charts_and_misses_count_tags() {
    let f = Fixture::new();
    let (status, page) = f.server.get("/");
    assert_eq!(status, 200);
    let page = String::from_utf8(page).unwrap();
    for wanted in [
        format!("{}/acme/app", f.host()),
        format!("{}/acme/twice", f.host()),
        "docker.io".to_string(),
        "ghcr.io".to_string(),
        "Helm charts".to_string(),
        "0.1.0".to_string(),
    ] {
        assert!(page.contains(&wanted), "{wanted} not on the page:\n{page}");
    }
    let (status, _) = f.server.get("/v2/acme/app/manifests/v9?ns=docker.io");
    assert_eq!(status, 404);
    let (_, misses) = f.server.get("/-/misses");
    let misses: serde_json::Value = serde_json::from_slice(&misses).unwrap();
    // The one part of a query the miss log keeps: containerd's `ns`, so a
    // want names the registry (issue 32).
    assert_eq!(
        misses["misses"][0]["path"], "/v2/acme/app/manifests/v9?ns=docker.io",
        "{misses}"
    );
}
