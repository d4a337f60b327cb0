//! Everything around the protocols: reload while serving, /v1/index,
//! probes and metrics, the bearer token, TLS, and the refusals at start.

use std::process::Command;
use std::time::{Duration, Instant};

use llmgw_mirror::start;
use llmgw_shared::manifest::{HfRepo, Manifest, RepoKind};
use llmgw_shared::sha256_hex;

use crate::certs::site_cert;
use crate::common::*;

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        if ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{what} did not happen within 10 s");
}

#[test]
fn a_bundle_imported_while_serving_is_served() {
    let (_d, store, _) = store_with_main_bundle();
    let srv = serve(&store);
    let r = get(srv.addr, "/api/models/acme/other/revision/main");
    assert_eq!(r.header("x-error-code"), Some("RepoNotFound"));
    assert_eq!(
        get(srv.addr, "/api/models/acme/tiny/revision/main").json()["sha"],
        COMMIT
    );

    // A second bundle: a new model, and acme/tiny's main moved on.
    let mut m = Manifest::new(vec!["amd64".into()], 1_780_000_500);
    let other = bytes(9, 5000);
    let newer = b"{\"v\": 2}\n".to_vec();
    m.repos.push(HfRepo {
        kind: RepoKind::Model,
        id: "acme/other".parse().unwrap(),
        revision: "main".into(),
        ref_kind: None,
        commit: COMMIT.into(),
        patterns: vec![],
        files: vec![hf_file("weights.bin", &other, true)],
        kernel: None,
    });
    m.repos.push(HfRepo {
        kind: RepoKind::Model,
        id: "acme/tiny".parse().unwrap(),
        revision: "main".into(),
        ref_kind: None,
        commit: COMMIT2.into(),
        patterns: vec![],
        files: vec![hf_file("config.json", &newer, false)],
        kernel: None,
    });
    import(&store, &m, &[&other, &newer]);

    wait_for("the new bundle to be served", || {
        get(srv.addr, "/acme/other/resolve/main/weights.bin").status == 200
    });
    assert_eq!(
        get(srv.addr, "/acme/other/resolve/main/weights.bin").body,
        other
    );
    // main now names the newer commit; the older one is still served by hash.
    assert_eq!(
        get(srv.addr, "/api/models/acme/tiny/revision/main").json()["sha"],
        COMMIT2
    );
    assert_eq!(
        get(srv.addr, "/acme/tiny/resolve/main/config.json").body,
        newer
    );
    let old = get(
        srv.addr,
        &format!("/acme/tiny/resolve/{COMMIT}/config.json"),
    );
    assert_eq!(old.body, model_files()["config.json"].0);
    let metrics = get(srv.addr, "/metrics").text();
    assert!(metrics.contains("llmgw_mirror_bundles 2"), "{metrics}");
}

#[test]
fn index_probes_and_metrics() {
    let (_d, store, id) = store_with_main_bundle();
    let srv = serve(&store);
    assert_eq!(get(srv.addr, "/healthz").status, 200);
    assert_eq!(get(srv.addr, "/readyz").status, 200);

    let v = get(srv.addr, "/v1/index").json();
    assert_eq!(v["bundles"][0]["id"], id);
    let rel = v["releases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["repo"] == "ggml-org/llama.cpp")
        .unwrap();
    let (name, body) = &llama_assets()[0];
    let a = rel["assets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == *name)
        .unwrap();
    assert_eq!(a["sha256"], sha256_hex(body));
    assert_eq!(a["size"], body.len());
    assert_eq!(
        get(srv.addr, &a["url"].as_str().unwrap().replace(&srv.url, "")).body,
        *body
    );
    let tiny = v["repos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "acme/tiny")
        .unwrap();
    assert_eq!(tiny["refs"]["main"], COMMIT);
    let files = tiny["commits"][0]["files"].as_array().unwrap();
    assert_eq!(files.len(), model_files().len());
    let blobs = &v["blobs"];
    assert_eq!(blobs["count"], main_bundle().1.len());

    // Some traffic, then the counters.
    get(srv.addr, "/acme/tiny/resolve/main/tiny-Q8_0.gguf");
    get(srv.addr, "/acme/tiny/resolve/main/nope");
    let m = get(srv.addr, "/metrics");
    assert_eq!(m.status, 200);
    let m = m.text();
    for line in [
        "llmgw_mirror_http_requests_total{route=\"hub_resolve\",status=\"200\"} 1",
        "llmgw_mirror_http_requests_total{route=\"hub_resolve\",status=\"404\"} 1",
        "llmgw_mirror_http_requests_total{route=\"index\",status=\"200\"} 1",
        "llmgw_mirror_bundles 1",
        &format!("llmgw_mirror_blobs {}", main_bundle().1.len()),
        "llmgw_mirror_http_requests_in_flight 1",
    ] {
        assert!(m.contains(line), "{line} missing from:\n{m}");
    }
    let sent: u64 = m
        .lines()
        .find(|l| l.starts_with("llmgw_mirror_http_sent_bytes_total{route=\"hub_resolve\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(sent >= 1_100_000, "{sent}");
}

#[test]
fn bearer_token_when_asked() {
    let (d, store, _) = store_with_main_bundle();
    let token_file = d.path().join("token");
    std::fs::write(&token_file, "hf_s3cret\n").unwrap();
    let mut cfg = config(&store);
    cfg.token_file = Some(token_file);
    let srv = serve_with(cfg);

    let r = get(srv.addr, "/acme/tiny/resolve/main/config.json");
    assert_eq!(r.status, 401);
    assert!(r.header("www-authenticate").unwrap().starts_with("Bearer"));
    let r = raw(
        srv.addr,
        "GET",
        b"/api/models/acme/tiny",
        &[("Authorization", "Bearer wrong")],
    );
    assert_eq!(r.status, 401);
    let r = get(
        srv.addr,
        "/ggml-org/llama.cpp/releases/download/b6123/llama-b6123-bin-ubuntu-x64.zip",
    );
    assert_eq!(r.status, 401);
    let r = raw(
        srv.addr,
        "GET",
        b"/acme/tiny/resolve/main/config.json",
        &[("Authorization", "Bearer hf_s3cret")],
    );
    assert_eq!(r.status, 200);
    let r = raw(
        srv.addr,
        "GET",
        b"/v1/index",
        &[("Authorization", "token hf_s3cret")],
    );
    assert_eq!(r.status, 200);
    // Probes and metrics stay open for the kubelet and Prometheus.
    for p in ["/healthz", "/readyz", "/metrics"] {
        assert_eq!(get(srv.addr, p).status, 200, "{p}");
    }

    // The real client sends HF_TOKEN as a bearer token.
    let py = hf24();
    let script = r#"
from huggingface_hub import hf_hub_download
print(open(hf_hub_download("acme/tiny", "config.json"), "rb").read().decode())
"#;
    let home = d.path().join("home");
    let out = python_env(&py, &srv.url, &home, script, &[("HF_TOKEN", "hf_s3cret")]);
    assert!(out.contains("model_type"), "{out}");
    let fail = Command::new(&py)
        .arg("-c")
        .arg(script)
        .env("HF_ENDPOINT", &srv.url)
        .env("HF_HOME", d.path().join("home2"))
        .env("HF_HUB_DISABLE_TELEMETRY", "1")
        .env("HF_TOKEN", "hf_wrong")
        .output()
        .unwrap();
    assert!(!fail.status.success());
}

#[test]
fn tls_with_a_site_ca_certificate() {
    let (d, store, _) = store_with_main_bundle();
    let (cert, key) = site_cert(d.path());
    let mut cfg = config(&store);
    cfg.tls = tls(cert.clone(), key.clone());
    let srv = serve_with(cfg);
    assert!(srv.url.starts_with("https://127.0.0.1:"));

    let curl = |path: &str| {
        let out = Command::new("curl")
            .args(["-sS", "-f", "--cacert"])
            .arg(&cert)
            .arg(format!("{}{path}", srv.url))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    assert_eq!(
        curl("/acme/tiny/resolve/main/config.json"),
        model_files()["config.json"].0
    );
    let rel: serde_json::Value =
        serde_json::from_slice(&curl("/api/v3/repos/ggml-org/llama.cpp/releases/latest")).unwrap();
    let url = rel["assets"][0]["browser_download_url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("https://127.0.0.1:{}/", srv.addr.port())),
        "{url}"
    );
    // Plain HTTP to the TLS port gets nothing.
    let out = Command::new("curl")
        .args(["-s", "-f", "--max-time", "5"])
        .arg(format!("http://{}/healthz", srv.addr))
        .output()
        .unwrap();
    assert!(!out.status.success());

    // The store was written without Xet records: the server makes them in
    // the background. Once the file is announced over Xet, the real client
    // over TLS, trusting the site's CA, fetches it through `hf_xet` (rustls).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = Command::new("curl")
            .args(["-sSI", "--cacert"])
            .arg(&cert)
            .arg(format!(
                "{}/acme/tiny/resolve/main/tiny-Q4_K_M.gguf",
                srv.url
            ))
            .output()
            .unwrap();
        if String::from_utf8_lossy(&out.stdout)
            .to_ascii_lowercase()
            .contains("x-xet-hash:")
        {
            break;
        }
        assert!(Instant::now() < deadline, "never announced over Xet");
        std::thread::sleep(Duration::from_millis(100));
    }
    let py = hf24();
    let script = r#"
import hashlib
from huggingface_hub import hf_hub_download
print(hashlib.sha256(open(hf_hub_download("acme/tiny", "tiny-Q4_K_M.gguf"), "rb").read()).hexdigest())
"#;
    let cert_s = cert.to_str().unwrap();
    let out = python_env(
        &py,
        &srv.url,
        &d.path().join("home"),
        script,
        &[("SSL_CERT_FILE", cert_s), ("REQUESTS_CA_BUNDLE", cert_s)],
    );
    assert!(
        out.contains(&sha256_hex(&model_files()["tiny-Q4_K_M.gguf"].0)),
        "{out}"
    );
}

#[test]
fn refusals_at_start_and_damaged_blobs() {
    let (d, store, _) = store_with_main_bundle();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let err = |cfg| {
        rt.block_on(start(cfg))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };

    let e = err(config(&d.path().join("nope")));
    assert!(e.contains("does not exist") && e.contains("--store"), "{e}");

    let mut cfg = config(&store);
    cfg.public_url = Some("mirror.example".into());
    assert!(err(cfg).contains("is not an http:// or https:// URL"));

    let mut cfg = config(&store);
    let empty = d.path().join("empty-token");
    std::fs::write(&empty, "  \n").unwrap();
    cfg.token_file = Some(empty);
    assert!(err(cfg).contains("is empty"));

    let mut cfg = config(&store);
    cfg.tls = tls(d.path().join("no-cert.pem"), d.path().join("no-key.pem"));
    let e = err(cfg);
    assert!(
        e.contains("cannot load TLS certificate") && e.contains("no-cert.pem"),
        "{e}"
    );

    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut cfg = config(&store);
    cfg.listen = busy.local_addr().unwrap();
    let e = err(cfg);
    assert!(
        e.contains("cannot listen on") && e.contains("--listen"),
        "{e}"
    );

    // A blob damaged on disk is a 500 naming the blob and the fix, never
    // the wrong bytes.
    let srv = serve(&store);
    let (gguf, _) = &model_files()["tiny-Q8_0.gguf"];
    let sha = sha256_hex(gguf);
    let path = store.join("blobs/sha256").join(&sha[..2]).join(&sha);
    std::fs::write(&path, b"short").unwrap();
    let r = get(srv.addr, "/acme/tiny/resolve/main/tiny-Q8_0.gguf");
    assert_eq!(r.status, 500);
    assert!(
        r.text().contains(&sha) && r.text().contains("llmgw mirror verify"),
        "{}",
        r.text()
    );
    std::fs::remove_file(&path).unwrap();
    let r = get(srv.addr, "/acme/tiny/resolve/main/tiny-Q8_0.gguf");
    assert_eq!(r.status, 500);
    assert!(r.text().contains("cannot be read"), "{}", r.text());

    // A manifest that no longer hashes to its name is not served; the
    // others still are.
    let mut m = Manifest::new(vec!["amd64".into()], 1_780_000_900);
    let b = bytes(10, 100);
    m.repos.push(HfRepo {
        kind: RepoKind::Model,
        id: "acme/tampered".parse().unwrap(),
        revision: "main".into(),
        ref_kind: None,
        commit: COMMIT.into(),
        patterns: vec![],
        files: vec![hf_file("x.bin", &b, false)],
        kernel: None,
    });
    let id = import(&store, &m, &[&b]);
    let mpath = store.join("bundles").join(format!("{id}.json"));
    let text = std::fs::read_to_string(&mpath)
        .unwrap()
        .replace("x.bin", "y.bin");
    std::fs::write(&mpath, text).unwrap();
    let srv2 = serve(&store);
    let r = get(srv2.addr, "/api/models/acme/tampered");
    assert_eq!(r.header("x-error-code"), Some("RepoNotFound"));
    assert_eq!(
        get(srv2.addr, "/acme/tiny/resolve/main/config.json").status,
        200
    );
    assert!(
        get(srv2.addr, "/metrics")
            .text()
            .contains("llmgw_mirror_index_reload_errors_total 1")
    );
}
