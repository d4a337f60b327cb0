//! An OCI tag follows the one trusted-order rule (#28 item 2, #30): with
//! the store at signed sequence 11 of channel `stable` (`acme/app:v1` =
//! image B, chart `acme` 0.1.0 = build B), (a) an unsigned bundle and (b)
//! the same key's bundle on another channel are held, served by digest,
//! may add tags nobody signed, but move neither `v1` nor the chart's
//! version; following the other channel on purpose moves them and
//! unfollowing puts them back; (c) an older sequence imported again with
//! `--allow-rollback` never moves them back; an unsigned bundle imported
//! with `--allow-unsigned-override` moves them, and the next signed
//! bundle moves them on. Each step is checked through the tags route, the
//! manifest route (GET and HEAD, `Docker-Content-Digest`), skopeo, and
//! the classic chart index.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::bundle_kit::{s, write_tar};
use super::clients::{http, need};
use super::kit;
use super::{Kit, Server, stderr};
use llmgw_shared::Sha256;

/// What one bundle carries: `acme/app` at `tag` (a fresh image) and the
/// chart `acme` 0.1.0 (a build of its own).
struct Content {
    kit: Kit,
    app: Sha256,
    chart: Sha256,
}

fn content(label: &str, tag: &str, series: Option<(&str, u64)>) -> Content {
    let mut blobs = kit::Blobs::default();
    let app = kit::image(&mut blobs, Some("docker.io"), "acme/app", tag);
    let (chart, tgz) = kit::chart_described(&mut blobs, "acme", "0.1.0", label);
    let mut manifest = kit::manifest(vec![app.image.clone(), app.referrer], vec![chart]);
    if let Some((channel, sequence)) = series {
        manifest.channel = Some(channel.into());
        manifest.sequence = Some(sequence);
    }
    Content {
        kit: Kit {
            manifest,
            blobs: blobs.bytes,
        },
        app: app.image.digest,
        chart: Sha256::of(&tgz),
    }
}

/// The run succeeded; what it said on stderr (where llmgw reports).
#[track_caller]
fn ok(o: &Output) -> String {
    super::bundle_kit::ok(o);
    stderr(o)
}

/// A site key made by the real minisign, trusted for bundles; its id.
fn site_key(dir: &Path, store: &Path) -> String {
    need("minisign", "apt-get install -y minisign");
    let o = Command::new("minisign")
        .args(["-G", "-W", "-p", "site.pub", "-s", "site.key"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    ok(&o);
    ok(&super::bundle_kit::llmgw()
        .args(["bundle", "trust", "add", s(&dir.join("site.pub"))])
        .args(["--role", "bundle", "--store", s(store)])
        .output()
        .unwrap());
    let text = std::fs::read_to_string(dir.join("site.pub")).unwrap();
    llmgw_shared::signing::PublicKey::parse("site.pub", &text)
        .unwrap()
        .key_id()
}

/// The bundle as a tar in `dir`, signed by `llmgw bundle sign` when asked.
fn bundle(dir: &Path, name: &str, c: &Content, signed: bool) -> PathBuf {
    let p = dir.join(format!("{name}.tar"));
    write_tar(&p, &c.kit.entries());
    if signed {
        ok(&super::bundle_kit::llmgw()
            .args(["bundle", "sign", s(&p), "--key", s(&dir.join("site.key"))])
            .env_remove("LLMGW_SIGN_PASSWORD")
            .stdin(Stdio::null())
            .output()
            .unwrap());
    }
    p
}

/// What the routes say `acme/app:v1` and chart acme 0.1.0 are: (the
/// manifest's digest, the classic index's chart digest), or how they
/// disagree.
fn routes_say(server: &Server) -> Result<(String, String), String> {
    let url = &server.url;
    let accept = [format!("Accept: {}", kit::INDEX)];
    let tags = http(url, "GET", "/v2/acme/app/tags/list", &[]);
    let tags: serde_json::Value = serde_json::from_slice(&tags.body).unwrap_or_default();
    if !tags["tags"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t == "v1"))
    {
        return Err(format!("tags/list has no v1: {tags}"));
    }
    let get = http(url, "GET", "/v2/acme/app/manifests/v1", &accept);
    let head = http(url, "HEAD", "/v2/acme/app/manifests/v1", &accept);
    let digest = get.header("docker-content-digest");
    if get.status != 200 || head.header("docker-content-digest") != digest {
        return Err(format!(
            "GET {} {digest}, HEAD {} {}",
            get.status,
            head.status,
            head.header("docker-content-digest")
        ));
    }
    if format!("sha256:{}", Sha256::of(&get.body)) != digest {
        return Err(format!("the body is not {digest}"));
    }
    let chart = http(url, "GET", "/v2/charts/acme/manifests/0.1.0", &[]);
    let chart: serde_json::Value = serde_json::from_slice(&chart.body).unwrap_or_default();
    let oci_chart = chart["layers"][0]["digest"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let index = http(url, "GET", "/charts/index.yaml", &[]);
    let index: serde_json::Value = serde_json::from_slice(&index.body).unwrap_or_default();
    let classic = index["entries"]["acme"][0]["digest"]
        .as_str()
        .unwrap_or("")
        .to_string();
    if oci_chart != format!("sha256:{classic}") {
        return Err(format!(
            "the chart over OCI is {oci_chart}, in the classic index {classic}"
        ));
    }
    Ok((digest, classic))
}

/// Waits (up to 10 s, the index thread's pace) until every route serves
/// `c`'s image as `v1` and its chart as 0.1.0.
#[track_caller]
fn routes_at(server: &Server, c: &Content, when: &str) {
    let want = (format!("sha256:{}", c.app), c.chart.to_string());
    let mut last = String::new();
    for _ in 0..100 {
        match routes_say(server) {
            Ok(said) if said == want => return,
            Ok(said) => last = format!("they say {said:?}"),
            Err(e) => last = e,
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("{when}: expected v1 = {want:?}; {last}");
}

/// Waits until the server holds `c`'s image by digest.
fn wait_held(server: &Server, c: &Content) {
    let path = format!("/v2/acme/app/manifests/sha256:{}", c.app);
    let accept = [format!("Accept: {}", kit::INDEX)];
    for _ in 0..100 {
        if http(&server.url, "GET", &path, &accept).status == 200 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("the server never held {}", c.app);
}

#[test]
fn an_image_tag_moves_only_with_the_series_the_store_follows() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let store = dir.join("store");
    let key = site_key(dir, &store);
    let import = |p: &Path, c: &Content, extra: &[&str]| {
        super::bundle_kit::llmgw()
            .args(["bundle", "import", s(p), "--store", s(&store)])
            .args(["--sha256", &c.kit.sha256()])
            .args(extra)
            .output()
            .unwrap()
    };
    let s10 = content("s10", "v1", Some(("stable", 10)));
    let s11 = content("s11", "v1", Some(("stable", 11)));
    ok(&import(&bundle(dir, "s10", &s10, true), &s10, &[]));
    ok(&import(&bundle(dir, "s11", &s11, true), &s11, &[]));
    let server = Server::start(&store);
    routes_at(&server, &s11, "at sequence 11");

    // (a) Unsigned: held, by digest; v1 and the chart stay; its other tag
    // (nobody signed one) is added.
    let unsigned = content("unsigned", "v1", None);
    let mut fresh = kit::Blobs::default();
    let fresh_image = kit::image(&mut fresh, Some("docker.io"), "acme/app", "fresh");
    let mut unsigned = unsigned;
    let images = &mut unsigned.kit.manifest.images;
    images.extend([fresh_image.image.clone(), fresh_image.referrer]);
    unsigned.kit.blobs.extend(fresh.bytes);
    let err = ok(&import(
        &bundle(dir, "unsigned", &unsigned, false),
        &unsigned,
        &[],
    ));
    assert!(err.contains("the bundle is not signed"), "{err}");
    wait_held(&server, &unsigned);
    routes_at(&server, &s11, "after an unsigned bundle");
    let a = http(&server.url, "GET", "/v2/acme/app/manifests/fresh", &[]);
    assert_eq!(
        a.header("docker-content-digest"),
        format!("sha256:{}", fresh_image.image.digest),
        "a tag no signed series serves is added"
    );

    // (b) The same key, another channel: held, moves nothing.
    let other = content("other", "v1", Some(("other", 1)));
    let err = ok(&import(&bundle(dir, "other", &other, true), &other, &[]));
    assert!(err.contains("a series this store does not follow"), "{err}");
    wait_held(&server, &other);
    routes_at(&server, &s11, "after another channel's bundle");
    need("skopeo", "apt-get install -y skopeo");
    let host = server.url.trim_start_matches("http://");
    let o = Command::new("skopeo")
        .args(["inspect", "--raw", "--tls-verify=false"])
        .arg(format!("docker://{host}/acme/app:v1"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(Sha256::of(&o.stdout), s11.app, "skopeo reads s11's index");

    // Following it on purpose moves them; unfollowing puts them back.
    let policy = |args: &[&str]| {
        super::bundle_kit::llmgw()
            .args(["mirror", "policy"])
            .args(args)
            .args(["--store", s(&store)])
            .output()
            .unwrap()
    };
    ok(&policy(&["follow", &key, "other"]));
    routes_at(&server, &other, "after following channel other");
    ok(&policy(&["unfollow", &key, "other"]));
    routes_at(&server, &s11, "after unfollowing channel other");

    // (c) An older sequence, imported again on purpose: never moves v1 back.
    let s9 = content("s9", "v1", Some(("stable", 9)));
    let p = bundle(dir, "s9", &s9, true);
    let o = import(&p, &s9, &[]);
    assert!(!o.status.success(), "a rollback imported: {}", stderr(&o));
    ok(&import(&p, &s9, &["--allow-rollback"]));
    wait_held(&server, &s9);
    routes_at(&server, &s11, "after sequence 9 with --allow-rollback");

    // An unsigned override moves them; the next signed bundle moves on.
    let over = content("override", "v1", None);
    let err = ok(&import(
        &bundle(dir, "override", &over, false),
        &over,
        &["--allow-unsigned-override"],
    ));
    assert!(err.contains("--allow-unsigned-override"), "{err}");
    routes_at(&server, &over, "after an unsigned override");
    let s12 = content("s12", "v1", Some(("stable", 12)));
    ok(&import(&bundle(dir, "s12", &s12, true), &s12, &[]));
    routes_at(&server, &s12, "after sequence 12");
}
