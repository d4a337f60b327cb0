//! GitHub release routes, driven with curl as installers drive them.

use std::process::Command;

use llmgw_shared::sha256_hex;

use crate::common::*;

/// Runs curl; returns (headers, body).
fn curl(args: &[&str]) -> (String, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let head = dir.path().join("h");
    let out = Command::new("curl")
        .args(["-sS", "--fail-with-body", "-D"])
        .arg(&head)
        .args(args)
        .output()
        .expect("curl is installed by scripts/setup.sh");
    let h = std::fs::read_to_string(&head).unwrap_or_default();
    assert!(
        out.status.success(),
        "curl {args:?} failed: {}\n{h}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    (h.to_ascii_lowercase(), out.stdout)
}

fn curl_status(args: &[&str]) -> u16 {
    let out = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}"])
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).parse().unwrap()
}

#[test]
fn downloads_head_range_and_etag() {
    let (_d, store, _) = store_with_main_bundle();
    let srv = serve(&store);
    let (name, body) = &llama_assets()[0];
    let url = format!(
        "{}/ggml-org/llama.cpp/releases/download/b6123/{name}",
        srv.url
    );

    let (h, got) = curl(&[&url]);
    assert_eq!(&got, body);
    assert!(h.starts_with("http/1.1 200"), "{h}");
    assert!(
        h.contains(&format!("content-length: {}", body.len())),
        "{h}"
    );
    assert!(
        h.contains(&format!("etag: \"{}\"", sha256_hex(body))),
        "{h}"
    );
    assert!(h.contains("accept-ranges: bytes"), "{h}");
    assert!(h.contains("content-disposition: attachment"), "{h}");
    assert!(h.contains("x-content-type-options: nosniff"), "{h}");

    // curl --compressed asks for gzip; the bytes come back as they are.
    let (h, got) = curl(&["--compressed", &url]);
    assert!(!h.contains("content-encoding"), "{h}");
    assert_eq!(&got, body);

    // -I prints the head on stdout: nothing follows it.
    let (h, got) = curl(&["-I", &url]);
    assert_eq!(String::from_utf8_lossy(&got).to_ascii_lowercase(), h);
    assert!(
        h.contains(&format!("content-length: {}", body.len())),
        "{h}"
    );

    let (h, got) = curl(&["-r", "100-199", &url]);
    assert!(h.starts_with("http/1.1 206"), "{h}");
    assert!(
        h.contains(&format!("content-range: bytes 100-199/{}", body.len())),
        "{h}"
    );
    assert_eq!(got, body[100..200]);

    // Resume a cut download with -C -.
    let dir = tempfile::tempdir().unwrap();
    let part = dir.path().join("part");
    std::fs::write(&part, &body[..12345]).unwrap();
    let status = Command::new("curl")
        .args(["-sS", "-f", "-C", "-", "-o"])
        .arg(&part)
        .arg(&url)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(std::fs::read(&part).unwrap(), *body);

    let etag = format!("If-None-Match: \"{}\"", sha256_hex(body));
    assert_eq!(curl_status(&["-H", &etag, &url]), 304);
    assert_eq!(curl_status(&["-r", "999999999-", &url]), 416);

    // latest/download, and the misses.
    let latest = format!(
        "{}/ggml-org/llama.cpp/releases/latest/download/{name}",
        srv.url
    );
    assert_eq!(curl(&[&latest]).1, *body);
    let miss = format!(
        "{}/ggml-org/llama.cpp/releases/download/b6123/nope.zip",
        srv.url
    );
    assert_eq!(curl_status(&[&miss]), 404);
    let miss = format!("{}/ggml-org/llama.cpp/releases/download/b1/{name}", srv.url);
    assert_eq!(curl_status(&[&miss]), 404);
}

#[test]
fn release_api_shape_and_urls() {
    let (_d, store, _) = store_with_main_bundle();
    let srv = serve(&store);
    let api = format!(
        "{}/api/v3/repos/ggml-org/llama.cpp/releases/tags/b6123",
        srv.url
    );
    let (_, body) = curl(&[
        "-H",
        "Accept: application/vnd.github+json",
        "-H",
        "X-GitHub-Api-Version: 2022-11-28",
        &api,
    ]);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    for key in [
        "url",
        "html_url",
        "assets_url",
        "upload_url",
        "tarball_url",
        "zipball_url",
        "id",
        "node_id",
        "tag_name",
        "target_commitish",
        "name",
        "body",
        "draft",
        "prerelease",
        "created_at",
        "published_at",
        "author",
        "assets",
    ] {
        assert!(v.get(key).is_some(), "release lacks {key}: {v}");
    }
    assert_eq!(v["tag_name"], "b6123");
    assert_eq!(v["draft"], false);
    let assets = v["assets"].as_array().unwrap();
    assert_eq!(assets.len(), 2);
    for a in assets {
        for key in [
            "url",
            "browser_download_url",
            "id",
            "node_id",
            "name",
            "label",
            "state",
            "content_type",
            "size",
            "digest",
            "download_count",
            "created_at",
            "updated_at",
            "uploader",
        ] {
            assert!(a.get(key).is_some(), "asset lacks {key}: {a}");
        }
        let name = a["name"].as_str().unwrap();
        let (_, bytes) = llama_assets().into_iter().find(|(n, _)| n == name).unwrap();
        assert_eq!(a["digest"], format!("sha256:{}", sha256_hex(&bytes)));
        assert_eq!(a["size"], bytes.len());
        assert_eq!(a["state"], "uploaded");
        // Both URLs point back here and give the bytes.
        let dl = a["browser_download_url"].as_str().unwrap();
        assert!(dl.starts_with(&srv.url), "{dl}");
        assert_eq!(curl(&["-L", dl]).1, bytes);
        let api_url = a["url"].as_str().unwrap();
        assert!(api_url.starts_with(&format!("{}/api/v3/repos/", srv.url)));
        assert_eq!(
            curl(&["-H", "Accept: application/octet-stream", api_url]).1,
            bytes
        );
        let meta: serde_json::Value = serde_json::from_slice(&curl(&[api_url]).1).unwrap();
        assert_eq!(meta["name"], name);
    }

    // latest, by id, and the list without /api/v3 (api.github.com style).
    let (_, b) = curl(&[&format!(
        "{}/repos/ggml-org/llama.cpp/releases/latest",
        srv.url
    )]);
    let latest: serde_json::Value = serde_json::from_slice(&b).unwrap();
    assert_eq!(latest["tag_name"], "b6123");
    let (_, b) = curl(&[v["url"].as_str().unwrap()]);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&b).unwrap()["id"],
        v["id"]
    );
    let (_, b) = curl(&[&format!("{}/api/v3/repos/llmgw/llmgw/releases", srv.url)]);
    let list: serde_json::Value = serde_json::from_slice(&b).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["tag_name"], "v0.1.0");

    // --public-url and X-Forwarded-* decide the URLs handed out.
    let (_, b) = curl(&[
        "-H",
        "X-Forwarded-Proto: https",
        "-H",
        "X-Forwarded-Host: mirror.example:8443",
        &api,
    ]);
    let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
    assert!(
        v["assets"][0]["browser_download_url"]
            .as_str()
            .unwrap()
            .starts_with("https://mirror.example:8443/ggml-org/llama.cpp/releases/download/b6123/"),
        "{v}"
    );
    // A Host that could inject anything is not echoed.
    let r = raw(
        srv.addr,
        "GET",
        b"/api/v3/repos/ggml-org/llama.cpp/releases/latest",
        &[("X-Forwarded-Host", "evil\"/><x")],
    );
    assert!(!r.text().contains("evil"), "{}", r.text());

    // Misses are GitHub's 404.
    let r = get(
        srv.addr,
        "/api/v3/repos/ggml-org/llama.cpp/releases/tags/b1",
    );
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["message"], "Not Found");
    let r = get(srv.addr, "/api/v3/repos/nobody/nothing/releases/latest");
    assert_eq!(r.status, 404);
}

#[test]
fn release_list_is_link_paginated() {
    let (d, store, _) = store_with_main_bundle();
    // Five more llama.cpp releases in a second bundle.
    let mut m = llmgw_shared::manifest::Manifest::new(vec!["amd64".into()], 1_780_000_100);
    let mut blobs = Vec::new();
    for n in [900u32, 5000, 6200, 10828, 11063] {
        let b = bytes((n % 200) as u8, 10 + n as usize % 7);
        m.releases.push(llmgw_shared::manifest::Release {
            repo: "ggml-org/llama.cpp".parse().unwrap(),
            tag: format!("b{n}"),
            engine: "llamacpp".into(),
            version: format!("b{n}"),
            builds: vec![],
            assets: vec![asset(&format!("llama-b{n}-bin-ubuntu-x64.tar.gz"), &b)],
            signature: None,
        });
        blobs.push(b);
    }
    let refs: Vec<&[u8]> = blobs.iter().map(|b| b.as_slice()).collect();
    import(&store, &m, &refs);
    let srv = serve(&store);
    let _ = d;

    let r = get(
        srv.addr,
        "/api/v3/repos/ggml-org/llama.cpp/releases?per_page=2&page=2",
    );
    assert_eq!(r.status, 200);
    let tags: Vec<String> = r
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["tag_name"].as_str().unwrap().to_string())
        .collect();
    // Newest first, by build number: b11063 b10828 | b6200 b6123 | b5000 b900
    assert_eq!(tags, ["b6200", "b6123"]);
    let link = r.header("link").unwrap();
    assert!(link.contains("per_page=2&page=3>; rel=\"next\""), "{link}");
    assert!(link.contains("page=1>; rel=\"prev\""), "{link}");
    assert!(link.contains("page=3>; rel=\"last\""), "{link}");
    let r = get(
        srv.addr,
        "/api/v3/repos/ggml-org/llama.cpp/releases?per_page=100",
    );
    assert_eq!(r.json().as_array().unwrap().len(), 6);
    assert!(r.header("link").is_none());
    let latest = get(srv.addr, "/api/v3/repos/ggml-org/llama.cpp/releases/latest").json();
    assert_eq!(latest["tag_name"], "b11063");
}
