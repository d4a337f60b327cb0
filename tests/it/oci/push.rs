//! `llmgw mirror push` (#50 item 1) against Debian's distribution registry
//! (`docker-registry`) as the site's own: a held multi-arch image (with its
//! attestation and SBOM referrer), a chart and a model's two OCI profiles
//! pushed; then, with no mirror running, skopeo, containerd's `ctr` and
//! Helm's SDK pull from that registry and get the publisher's digests; a second push
//! skips every blob; `--tags keep` leaves a differing tag and says so;
//! `--tags merge` into a tag holding another platform keeps both. A
//! registry that lies (`push/liar.rs`) is refused by name.

use crate::bundle_kit;
use crate::oci::clients;
use crate::oci::serve::kit;
mod liar;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use bundle_kit::{Kit, Server, import_bundle, llmgw, stderr, stdout, write_dir};
use clients::{containerd, need};
use llmgw_fixture::registry::{Distribution, TestImage, sha256_digest};

/// A store holding `docker.io/acme/app:v1` (amd64, arm64, an attestation,
/// an SBOM referrer), the chart `acme` 0.1.0 and the model `acme/tiny`.
pub struct Held {
    pub dir: tempfile::TempDir,
    pub store: PathBuf,
    pub app: kit::Made,
    pub chart: llmgw_shared::manifest::HelmChart,
    pub chart_tgz: Vec<u8>,
    pub blobs: kit::Blobs,
}

impl Held {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut blobs = kit::Blobs::default();
        let app = kit::image(&mut blobs, Some("docker.io"), "acme/app", "v1");
        let (chart, chart_tgz) = kit::chart(&mut blobs, "acme", "0.1.0");
        // The same image under a second name: its blobs are mounted.
        let mut copy = app.image.clone();
        copy.repository = "acme/copy".into();
        let manifest = kit::manifest(
            vec![app.image.clone(), app.referrer.clone(), copy],
            vec![chart.clone()],
        );
        let k = Kit {
            manifest,
            blobs: blobs.bytes.clone(),
        };
        let store = dir.path().join("store");
        import(&k, &dir.path().join("images"), &store);
        let mut model = Kit::new();
        model.model_file("acme/tiny", "config.json", br#"{"model_type":"tiny"}"#);
        model.model_file("acme/tiny", "model.safetensors", &kit::random_bytes(70_001));
        import(&model, &dir.path().join("model"), &store);
        // No credential for any registry (a test may file one).
        std::fs::write(dir.path().join("no-auth.json"), r#"{"auths":{}}"#).unwrap();
        Held {
            dir,
            store,
            app,
            chart,
            chart_tgz,
            blobs,
        }
    }

    pub fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    /// `llmgw mirror push --store S` with `args`.
    pub fn push(&self, args: &[&str]) -> Output {
        llmgw()
            .args(["mirror", "push", "--store"])
            .arg(&self.store)
            .args(args)
            .env("REGISTRY_AUTH_FILE", self.path("no-auth.json"))
            .output()
            .unwrap()
    }
}

fn import(k: &Kit, bundle: &Path, store: &Path) {
    write_dir(bundle, &k.entries());
    let o = import_bundle(bundle, &k.sha256(), store, &[]);
    assert!(o.status.success(), "import: {}{}", stdout(&o), stderr(&o));
}

fn skopeo(args: &[&str]) -> Output {
    Command::new("skopeo").args(args).output().unwrap()
}

fn raw(reference: &str) -> Vec<u8> {
    let o = skopeo(&["inspect", "--raw", "--tls-verify=false", reference]);
    assert!(o.status.success(), "inspect {reference}: {}", stderr(&o));
    o.stdout
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "push: {}{}", stdout(o), stderr(o));
    stdout(o)
}

#[test]
fn pushed_images_charts_and_models_pull_from_the_registry_alone() {
    need("skopeo", "apt-get install -y skopeo");
    let h = Held::new();
    // What the mirror serves for the model, read before it stops.
    let served = Server::start(&h.store);
    let model_index = served.wait_for("/v2/models/acme/tiny/manifests/main", 200);
    let pack = served.wait_for("/v2/modelpack/acme/tiny/manifests/main", 200);
    drop(served);

    let reg = Distribution::start().unwrap();
    let to = format!("{}/site", reg.host);
    let args = [
        "--to",
        &to,
        "--insecure-registry",
        "--image",
        "acme/app",
        "--chart",
        "acme",
        "--models",
        "acme/tiny",
    ];
    let first = ok(&h.push(&args));
    // `acme/copy` was not asked for.
    assert!(first.contains("mounted 0"), "{first}");
    assert!(first.contains("skipped 0 already there"), "{first}");
    assert!(first.contains("tags: 6 set"), "{first}");

    let at = |rest: &str| format!("docker://{to}/{rest}");
    assert_eq!(
        raw(&at("acme/app:v1")),
        h.app.index_bytes,
        "the index as carried"
    );
    let sbom = raw(&at(&format!("acme/app@sha256:{}", h.app.sbom)));
    assert_eq!(
        sha256_digest(&sbom),
        format!("sha256:{}", h.app.sbom),
        "the referrer"
    );
    let chart = raw(&at("charts/acme:0.1.0"));
    assert_eq!(
        sha256_digest(&chart),
        format!("sha256:{}", h.chart.artifact.digest)
    );
    assert_eq!(raw(&at("models/acme/tiny:main")), model_index);
    assert_eq!(raw(&at("modelpack/acme/tiny:main")), pack);

    // Every byte of every platform, copied from the registry alone.
    let layout = h.path("copied");
    let o = skopeo(&[
        "copy",
        "--all",
        "--src-tls-verify=false",
        &at("acme/app:v1"),
        &format!("oci:{}:v1", layout.display()),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    for d in h.app.image.all_blobs() {
        let bytes = std::fs::read(layout.join("blobs/sha256").join(d.sha256.as_str()))
            .unwrap_or_else(|e| panic!("{} ({}) not copied: {e}", d.sha256, d.media_type));
        assert_eq!(bytes, h.blobs.bytes[d.sha256.as_str()]);
    }
    let o = skopeo(&[
        "copy",
        "--src-tls-verify=false",
        &at("models/acme/tiny:main"),
        &format!("oci:{}:m", h.path("model").display()),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));

    // Helm's SDK pulls the chart from the registry, the package as carried.
    let (helm, pulled) = (h.path("helm"), h.path("helm-pulled"));
    std::fs::create_dir_all(&pulled).unwrap();
    let script = format!(
        "from helm_python import registry\nregistry.pull({:?}, version='0.1.0', plain_http=True, destination={:?})\n",
        format!("oci://{to}/charts/acme"),
        pulled.to_str().unwrap()
    );
    let o = Command::new(clients::venv_python())
        .args(["-c", &script])
        .env("HELM_CACHE_HOME", helm.join("cache"))
        .env("HELM_CONFIG_HOME", helm.join("config"))
        .env("HELM_DATA_HOME", helm.join("data"))
        .output()
        .unwrap();
    assert!(o.status.success(), "helm: {}{}", stdout(&o), stderr(&o));
    assert_eq!(
        std::fs::read(pulled.join("acme-0.1.0.tgz")).unwrap(),
        h.chart_tgz
    );

    // containerd pulls and unpacks the image from the registry.
    let c = containerd(h.dir.path());
    let reference = format!("{to}/acme/app:v1");
    let o = c.ctr(&[
        "images",
        "pull",
        "--plain-http",
        "--snapshotter",
        "native",
        &reference,
    ]);
    assert!(o.status.success(), "ctr pull: {}{}", stdout(&o), stderr(&o));
    let ls = stdout(&c.ctr(&["images", "ls"]));
    assert!(ls.contains(h.app.image.digest.as_str()), "{ls}");

    // Again: every blob is there, every manifest and tag too.
    let again = ok(&h.push(&args));
    assert!(again.contains("pushed 0 blobs (0 bytes)"), "{again}");
    assert!(
        again.contains("0 pushed") && again.contains("tags: 0 set, 6 unchanged"),
        "{again}"
    );
}

/// A push cut short (blobs and the top manifest missing from the
/// registry, as a dropped link leaves it) is completed by a rerun that
/// sends only what is missing.
#[test]
fn a_rerun_after_a_cut_sends_only_what_is_missing() {
    need("skopeo", "apt-get install -y skopeo");
    let h = Held::new();
    let reg = Distribution::start().unwrap();
    let to = format!("{}/site", reg.host);
    let args = ["--to", &to, "--insecure-registry", "--image", "acme/app"];
    ok(&h.push(&args));
    let base = format!("http://{}", reg.host);
    let layers: Vec<_> = h
        .app
        .image
        .blobs
        .iter()
        .filter(|d| d.media_type == kit::LAYER)
        .take(2)
        .collect();
    assert_eq!(layers.len(), 2);
    for d in &layers {
        let a = clients::http(
            &base,
            "DELETE",
            &format!("/v2/site/acme/app/blobs/sha256:{}", d.sha256),
            &[],
        );
        assert_eq!(a.status, 202, "DELETE blob");
    }
    let a = clients::http(
        &base,
        "DELETE",
        &format!("/v2/site/acme/app/manifests/sha256:{}", h.app.image.digest),
        &[],
    );
    assert_eq!(a.status, 202, "DELETE the index");
    let again = ok(&h.push(&args));
    assert!(
        again.contains("pushed 2 blobs") && again.contains("skipped 6"),
        "{again}"
    );
    assert!(
        again.contains("manifests: 1 pushed") && again.contains("tags: 1 set"),
        "{again}"
    );
    let o = skopeo(&[
        "copy",
        "--all",
        "--src-tls-verify=false",
        &format!("docker://{to}/acme/app:v1"),
        &format!("oci:{}:v1", h.path("whole").display()),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
}

/// The site's registry already holds `acme/app:v1` as an s390x image.
fn registry_with_s390x(h: &Held) -> (Distribution, String, String) {
    let reg = Distribution::start().unwrap();
    let theirs = TestImage::build(&h.path("theirs"), "v1", 7, &["s390x"], 1, 1024).unwrap();
    reg.push(&theirs.layout, "v1", "site/acme/app").unwrap();
    let to = format!("{}/site", reg.host);
    (reg, to, theirs.index)
}

#[test]
fn keep_leaves_a_differing_tag_and_merge_keeps_both_platforms() {
    need("skopeo", "apt-get install -y skopeo");
    let h = Held::new();
    let (_reg, to, theirs) = registry_with_s390x(&h);
    let tag = format!("docker://{to}/acme/app:v1");
    let base = ["--to", &to, "--insecure-registry", "--image", "acme/app"];

    let o = h.push(&[&base[..], &["--tags", "keep"]].concat());
    let out = ok(&o);
    assert!(out.contains("1 kept"), "{out}");
    let err = stderr(&o);
    assert!(
        err.contains("acme/app:v1") && err.contains(&theirs[7..]),
        "{err}"
    );
    assert_eq!(sha256_digest(&raw(&tag)), theirs, "keep left the tag");

    ok(&h.push(&[&base[..], &["--tags", "merge"]].concat()));
    let merged: serde_json::Value = serde_json::from_slice(&raw(&tag)).unwrap();
    let platforms: Vec<String> = merged["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{}/{}", m["platform"]["os"], m["platform"]["architecture"]))
        .collect();
    for p in ["linux/amd64", "linux/arm64", "linux/s390x"] {
        assert!(
            platforms.iter().any(|q| q.replace('"', "") == p),
            "{p}: {platforms:?}"
        );
    }
    // The merged index is whole: every child is in the registry.
    let o = skopeo(&[
        "copy",
        "--all",
        "--src-tls-verify=false",
        &tag,
        &format!("oci:{}:v1", h.path("merged").display()),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));

    // Overwrite moves it to the mirror's index.
    ok(&h.push(&[&base[..], &["--tags", "overwrite"]].concat()));
    assert_eq!(raw(&tag), h.app.index_bytes);
}

#[test]
fn a_blob_in_another_repository_of_the_push_is_mounted() {
    need("skopeo", "apt-get install -y skopeo");
    let h = Held::new();
    let reg = Distribution::start().unwrap();
    let to = format!("{}/site", reg.host);
    let out = ok(&h.push(&[
        "--to",
        &to,
        "--insecure-registry",
        "--image",
        "acme/app",
        "--image",
        "acme/copy",
    ]));
    // acme/app goes first (by name): its 8 blobs (the SBOM referrer's
    // too); acme/copy, the image alone, has its 6 mounted from there.
    assert!(
        out.contains("pushed 8 blobs") && out.contains("mounted 6"),
        "{out}"
    );
    // --all: every image, the chart and both model profiles.
    let all = format!("{}/all", reg.host);
    let o = h.push(&["--to", &all, "--insecure-registry", "--all"]);
    ok(&o);
    let said = stderr(&o);
    for name in [
        "acme/app",
        "acme/copy",
        "charts/acme",
        "models/acme/tiny",
        "modelpack/acme/tiny",
    ] {
        assert!(said.contains(&format!("{all}/{name}:")), "{name}: {said}");
    }
    assert!(said.contains("[5/5]"), "{said}");
    let copied = raw(&format!("docker://{to}/acme/copy:v1"));
    assert_eq!(copied, h.app.index_bytes);
    let o = skopeo(&[
        "copy",
        "--all",
        "--src-tls-verify=false",
        &format!("docker://{to}/acme/copy:v1"),
        &format!("oci:{}:v1", h.path("copy").display()),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
}

/// A tag that names a single image manifest cannot be merged with an
/// index: refused by name, the tag left as it was.
#[test]
fn merge_refuses_a_tag_that_names_no_index() {
    need("skopeo", "apt-get install -y skopeo");
    let h = Held::new();
    let reg = Distribution::start().unwrap();
    let theirs = TestImage::build(&h.path("theirs"), "v1", 9, &["s390x"], 1, 1024).unwrap();
    let to = format!("{}/site", reg.host);
    let tag = format!("docker://{to}/acme/app:v1");
    // Without --all, skopeo pushes the one platform's manifest, no index.
    let o = skopeo(&[
        "copy",
        "--override-arch",
        "s390x",
        "--dest-tls-verify=false",
        &format!("oci:{}:v1", theirs.layout.display()),
        &tag,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let before = raw(&tag);
    let o = h.push(&[
        "--to",
        &to,
        "--insecure-registry",
        "--image",
        "acme/app",
        "--tags",
        "merge",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(
        e.contains("acme/app:v1") && e.contains("merges an image index with an image index"),
        "{e}"
    );
    assert!(
        e.contains("application/vnd.oci.image.manifest.v1+json") && e.contains("--tags overwrite"),
        "{e}"
    );
    assert_eq!(raw(&tag), before, "the tag was left as it was");
}

#[test]
fn bad_requests_are_usage_errors_naming_what_is_held() {
    let h = Held::new();
    let o = h.push(&["--to", "127.0.0.1:9/x", "--image", "acme/nope"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("acme/nope") && e.contains("acme/app"), "{e}");
    let o = h.push(&["--to", "http://127.0.0.1:9", "--all"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--insecure-registry"), "{}", stderr(&o));
    let o = h.push(&["--to", "127.0.0.1:9"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--all"), "{}", stderr(&o));

    // While something holds the store's lock alone (an import, a gc), push
    // does not start: it says so, and asks no registry.
    let mut holder = Command::new("python3")
        .args([
            "-c",
            "import fcntl,sys; f=open(sys.argv[1],'a'); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()",
        ])
        .arg(h.store.join("lock"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "held");
    let o = h.push(&["--to", "127.0.0.1:9", "--insecure-registry", "--all"]);
    drop(holder.stdin.take());
    holder.wait().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("the store is busy") && e.contains("run `llmgw mirror push` again"),
        "{e}"
    );
}
