//! Python environments from the mirror: the simple API (PEP 503/691/658/
//! 714) by `Accept`, names and redirects, files with `+`, the lock with its
//! URLs rewritten, uv's interpreter list — at the HTTP level here, and with
//! the real uv and pip in `pypi_clients`.

use llmgw_shared::manifest::*;
use llmgw_shared::sha256_hex;

use crate::common::*;
use crate::pypi_kit::*;

#[test]
fn project_page_as_json_for_uv_and_html_for_old_clients() {
    let (_d, store, cu13, _) = store_with_envs();
    let s = serve(&store);
    let path = format!("/pypi/{CU13}/simple/torch/");

    let r = get_accept(s.addr, &path, UV_ACCEPT);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("content-type"),
        Some("application/vnd.pypi.simple.v1+json")
    );
    assert_eq!(r.header("vary"), Some("Accept"));
    let v = r.json();
    assert_eq!(v["meta"]["api-version"], "1.1");
    assert_eq!(v["name"], "torch");
    assert_eq!(v["versions"], serde_json::json!(["2.11.0"]));
    let f = &v["files"][0];
    let torch = &cu13[0].file;
    assert_eq!(f["filename"], torch.filename.as_str());
    assert_eq!(f["url"], format!("../../files/{}", torch.filename));
    assert_eq!(f["hashes"]["sha256"], torch.sha256.as_str());
    assert_eq!(f["size"], torch.size);
    assert_eq!(f["requires-python"], ">=3.10");
    assert_eq!(f["yanked"], false);
    assert_eq!(f["upload-time"], "2025-10-14T09:30:00.123456Z");
    let msha = &torch.metadata.as_ref().unwrap().sha256;
    assert_eq!(f["core-metadata"]["sha256"], msha.as_str());
    assert_eq!(f["data-dist-info-metadata"]["sha256"], msha.as_str());
    assert!(
        f.get("dist-info-metadata").is_none(),
        "pip 22.3-23.1 fail on it: {f}"
    );

    // PEP 503 for a client that asks for HTML only (old pip, a browser).
    let r = get_accept(s.addr, &path, "text/html");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(r.header("vary"), Some("Accept"));
    let html = r.text();
    assert!(
        html.contains("<meta name=\"pypi:repository-version\" content=\"1.1\">"),
        "{html}"
    );
    let anchor = format!(
        "<a href=\"../../files/{}#sha256={}\" data-requires-python=\"&gt;=3.10\" \
         data-core-metadata=\"sha256={msha}\" data-dist-info-metadata=\"sha256={msha}\">{}</a>",
        torch.filename, torch.sha256, torch.filename
    );
    assert!(html.contains(&anchor), "{anchor}\nnot in\n{html}");

    let r = get_accept(s.addr, &path, "application/vnd.pypi.simple.v1+html");
    assert_eq!(
        r.header("content-type"),
        Some("application/vnd.pypi.simple.v1+html")
    );
    // No Accept: PEP 503.
    let r = get(s.addr, &path);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    // Nothing this index speaks: 406, not a guess.
    let r = get_accept(s.addr, &path, "application/json");
    assert_eq!(r.status, 406, "{}", r.text());
    // q-values decide.
    let r = get_accept(
        s.addr,
        &path,
        "application/vnd.pypi.simple.v1+json;q=0.1, text/html;q=0.5",
    );
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));

    // ETag and 304, per representation.
    let r = get_accept(s.addr, &path, UV_ACCEPT);
    let etag = r.header("etag").unwrap().to_string();
    let r = raw(
        s.addr,
        "GET",
        path.as_bytes(),
        &[("Accept", UV_ACCEPT), ("If-None-Match", &etag)],
    );
    assert_eq!(r.status, 304);
    let r = raw(
        s.addr,
        "GET",
        path.as_bytes(),
        &[("Accept", "text/html"), ("If-None-Match", &etag)],
    );
    assert_eq!(r.status, 200, "the HTML page has its own ETag");
    let r = raw(s.addr, "HEAD", path.as_bytes(), &[("Accept", UV_ACCEPT)]);
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty());
}

#[test]
fn yanked_files_and_the_project_list() {
    let (_d, store, _, _) = store_with_envs();
    let s = serve(&store);
    let r = get_accept(s.addr, &format!("/pypi/{CU13}/simple/regex/"), UV_ACCEPT);
    let f = &r.json()["files"][0];
    assert_eq!(f["yanked"], "broke <everything> & more");
    assert_eq!(f["core-metadata"], false);
    assert!(f.get("requires-python").is_none());
    let r = get_accept(s.addr, &format!("/pypi/{CU13}/simple/regex/"), "text/html");
    assert!(
        r.text()
            .contains(" data-yanked=\"broke &lt;everything&gt; &amp; more\">"),
        "{}",
        r.text()
    );

    let r = get_accept(s.addr, &format!("/pypi/{CU13}/simple/"), UV_ACCEPT);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("application/vnd.pypi.simple.v1+json")
    );
    assert_eq!(
        r.json()["projects"],
        serde_json::json!([{"name": "huggingface-hub"}, {"name": "regex"}, {"name": "torch"}])
    );
    let r = get_accept(s.addr, &format!("/pypi/{CU13}/simple/"), "text/html");
    assert!(
        r.text()
            .contains("<a href=\"huggingface-hub/\">huggingface-hub</a>"),
        "{}",
        r.text()
    );
}

#[test]
fn names_are_normalized_by_301_and_misses_are_404() {
    let (_d, store, _, _) = store_with_envs();
    let s = serve(&store);
    for (from, to) in [
        (
            format!("/pypi/{CU13}/simple"),
            format!("/pypi/{CU13}/simple/"),
        ),
        (
            format!("/pypi/{CU13}/simple/Huggingface_Hub/"),
            format!("/pypi/{CU13}/simple/huggingface-hub/"),
        ),
        (
            format!("/pypi/{CU13}/simple/huggingface.hub"),
            format!("/pypi/{CU13}/simple/huggingface-hub/"),
        ),
        (
            format!("/pypi/{CU13}/simple/torch"),
            format!("/pypi/{CU13}/simple/torch/"),
        ),
    ] {
        let r = get_accept(s.addr, &from, UV_ACCEPT);
        assert_eq!(r.status, 301, "{from}: {}", r.text());
        assert_eq!(r.header("location"), Some(to.as_str()), "{from}");
    }
    for miss in [
        format!("/pypi/{CU13}/simple/numpy/"),
        format!("/pypi/{CU13}/simple/numpy"),
        "/pypi/no-such-env/simple/".to_string(),
        "/pypi/no-such-env/simple/torch/".to_string(),
        format!("/pypi/{CU13}/files/numpy-2.0-py3-none-any.whl"),
        format!("/pypi/{CU13}/files/..%2F..%2Fbundles"),
        format!("/pypi/{CU13}/simple/torch/extra"),
    ] {
        let r = get_accept(s.addr, &miss, UV_ACCEPT);
        assert_eq!(r.status, 404, "{miss}: {}", r.text());
    }
    let r = raw(
        s.addr,
        "POST",
        format!("/pypi/{CU13}/simple/").as_bytes(),
        &[],
    );
    assert_eq!(r.status, 405);
}

#[test]
fn local_labels_stay_in_their_environment() {
    let (_d, store, _, cu129) = store_with_envs();
    let s = serve(&store);
    let r = get_accept(s.addr, &format!("/pypi/{CU13}/simple/torch/"), UV_ACCEPT);
    let files = r.json()["files"].to_string();
    assert!(
        !files.contains("cu129"),
        "the cu13 index offers a +cu129 file: {files}"
    );
    let r = get_accept(s.addr, &format!("/pypi/{CU129}/simple/torch/"), UV_ACCEPT);
    let v = r.json();
    assert_eq!(v["versions"], serde_json::json!(["2.11.0+cu129"]));
    let url = v["files"][0]["url"].as_str().unwrap().to_string();
    assert!(
        url.ends_with("torch-2.11.0%2Bcu129-cp312-cp312-manylinux_2_28_aarch64.whl"),
        "{url}"
    );
    // The cu129 wheel is not a file of the cu13 environment.
    let name = &cu129[0].file.filename;
    let r = get(s.addr, &format!("/pypi/{CU13}/files/{name}"));
    assert_eq!(r.status, 404);
}

#[test]
fn files_with_plus_head_range_etag_and_metadata() {
    let (_d, store, _, cu129) = store_with_envs();
    let s = serve(&store);
    let torch = &cu129[0];
    let plain = format!("/pypi/{CU129}/files/{}", torch.file.filename);
    let quoted = plain.replace('+', "%2B");
    for path in [&plain, &quoted] {
        let r = get(s.addr, path);
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.body, torch.body, "{path}");
        assert_eq!(r.header("content-type"), Some("application/octet-stream"));
        assert_eq!(
            r.header("etag"),
            Some(format!("\"{}\"", torch.file.sha256).as_str())
        );
    }
    let r = raw(s.addr, "HEAD", quoted.as_bytes(), &[]);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-length"),
        Some(torch.body.len().to_string().as_str())
    );
    assert!(r.body.is_empty());
    let r = raw(
        s.addr,
        "GET",
        quoted.as_bytes(),
        &[("Range", "bytes=100-199")],
    );
    assert_eq!(r.status, 206);
    assert_eq!(r.body, torch.body[100..200]);
    assert_eq!(
        r.header("content-range"),
        Some(format!("bytes 100-199/{}", torch.body.len()).as_str())
    );
    let etag = format!("\"{}\"", torch.file.sha256);
    let r = raw(
        s.addr,
        "GET",
        quoted.as_bytes(),
        &[("If-None-Match", &etag)],
    );
    assert_eq!(r.status, 304);
    let r = get(s.addr, &format!("{quoted}.metadata"));
    assert_eq!(r.status, 200);
    assert_eq!(Some(&r.body), torch.metadata.as_ref());
    assert_eq!(
        sha256_hex(&r.body),
        torch.file.metadata.as_ref().unwrap().sha256
    );
    // A wheel without a metadata file has no `.metadata`.
    let r = get(
        s.addr,
        &format!(
            "/pypi/{CU13}/files/regex-2025.11.3-cp312-cp312-manylinux_2_17_x86_64.whl.metadata"
        ),
    );
    assert_eq!(r.status, 404);
}

#[test]
fn the_lock_points_at_the_mirror() {
    let (_d, store, cu13, _) = store_with_envs();
    let s = serve(&store);
    let r = get(s.addr, &format!("/pypi/{CU13}/pylock.toml"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("content-type"),
        Some("application/toml; charset=utf-8")
    );
    let lock: toml::Table = toml::from_str(&r.text()).unwrap();
    assert_eq!(lock["lock-version"].as_str(), Some("1.0"));
    let packages = lock["packages"].as_array().unwrap();
    assert_eq!(packages.len(), cu13.len());
    for (p, f) in packages.iter().zip(cu13.iter()) {
        let w = &p["wheels"].as_array().unwrap()[0];
        assert_eq!(
            w["url"].as_str().unwrap(),
            format!(
                "{}/pypi/{CU13}/files/{}",
                s.url,
                f.file.filename.replace('+', "%2B")
            )
        );
        assert_eq!(w["hashes"]["sha256"].as_str(), Some(f.file.sha256.as_str()));
        assert!(w["upload-time"].is_datetime());
        assert_eq!(
            p["index"].as_str().unwrap(),
            format!("{}/pypi/{CU13}/simple", s.url)
        );
    }
    assert!(!r.text().contains("example"), "{}", r.text());
}

#[test]
fn a_lock_naming_a_file_the_environment_lacks_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let files = synthetic("x86_64", "2.11.0", 60);
    let mut outside = env_file(
        "numpy",
        "2.3.0",
        "numpy-2.3.0-cp312-cp312-manylinux_2_28_x86_64.whl",
        bytes(9, 10),
        None,
    );
    outside.file.origin =
        "https://files.example/numpy-2.3.0-cp312-cp312-manylinux_2_28_x86_64.whl".into();
    let mut listed: Vec<&PythonFile> = files.iter().map(|f| &f.file).collect();
    listed.push(&outside.file);
    let lock = lock_for(&listed).into_bytes();
    let mut m = Manifest::new(vec!["amd64".into()], 1_790_000_000);
    m.python_envs.push(env(CU13, "amd64", &files, &lock));
    m.python_envs[0].interpreter = None;
    let mut blobs: Vec<&[u8]> = vec![&lock];
    for f in &files {
        blobs.push(&f.body);
        if let Some(md) = &f.metadata {
            blobs.push(md);
        }
    }
    import(&store, &m, &blobs);
    let s = serve(&store);
    let r = get(s.addr, &format!("/pypi/{CU13}/pylock.toml"));
    assert_eq!(r.status, 500);
    assert!(
        r.text().contains("names file \"numpy-2.3.0-cp312-cp312-manylinux_2_28_x86_64.whl\" of package \"numpy\" that the environment does not hold"),
        "{}",
        r.text()
    );
}

#[test]
fn a_damaged_lock_blob_is_not_served() {
    let (_d, store, cu13, _) = store_with_envs();
    let lock = lock_for(&cu13.iter().map(|f| &f.file).collect::<Vec<_>>());
    let path =
        llmgw_mirror::Store::at(&store).blob_file(&llmgw_shared::Sha256::of(lock.as_bytes()));
    std::fs::write(&path, lock.replace("1.0", "2.0")).unwrap();
    let s = serve(&store);
    let r = get(s.addr, &format!("/pypi/{CU13}/pylock.toml"));
    assert_eq!(r.status, 500);
    assert!(r.text().contains("the store is damaged"), "{}", r.text());
}

#[test]
fn uv_python_downloads_list_the_interpreters_held() {
    let (_d, store, _, _) = store_with_envs();
    let s = serve(&store);
    let r = get(s.addr, "/uv/python-downloads.json");
    assert_eq!(r.status, 200);
    let v = r.json();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "cpython-3.12.12-linux-aarch64-gnu",
            "cpython-3.12.12-linux-x86_64-gnu"
        ]
    );
    let e = &v["cpython-3.12.12-linux-x86_64-gnu"];
    let name = interpreter_name("amd64");
    assert_eq!(
        e["url"],
        format!(
            "{}/{PBS_REPO}/releases/download/{PBS_TAG}/{}",
            s.url,
            name.replace('+', "%2B")
        )
    );
    assert_eq!(
        e["arch"],
        serde_json::json!({"family": "x86_64", "variant": null})
    );
    assert_eq!(
        (
            e["major"].as_u64(),
            e["minor"].as_u64(),
            e["patch"].as_u64()
        ),
        (Some(3), Some(12), Some(12))
    );
    assert_eq!(e["libc"], "gnu");
    assert_eq!(e["os"], "linux");
    assert_eq!(e["name"], "cpython");
    assert_eq!(e["build"], PBS_TAG);
    // The URL serves bytes hashing to the sha256 listed.
    let path = e["url"]
        .as_str()
        .unwrap()
        .strip_prefix(&s.url)
        .unwrap()
        .to_string();
    let r = get(s.addr, &path);
    assert_eq!(r.status, 200);
    assert_eq!(sha256_hex(&r.body), e["sha256"].as_str().unwrap());
}

#[test]
fn the_index_lists_environments_and_inspect_shows_them() {
    let (_d, store, cu13, _) = store_with_envs();
    let s = serve(&store);
    let v = get(s.addr, "/v1/index").json();
    let envs = v["python_envs"].as_array().unwrap();
    assert_eq!(envs.len(), 2);
    let e = envs.iter().find(|e| e["name"] == CU13).unwrap();
    assert_eq!(e["arch"], "amd64");
    assert_eq!(e["python"], "3.12");
    assert_eq!(e["files"], cu13.len());
    let bytes: u64 = cu13
        .iter()
        .map(|f| f.body.len() as u64 + f.metadata.as_ref().map_or(0, |m| m.len() as u64))
        .sum();
    assert_eq!(e["bytes"], bytes);
    assert_eq!(e["os_packages"], serde_json::json!(["gcc"]));
    assert_eq!(e["index_url"], format!("{}/pypi/{CU13}/simple/", s.url));
    assert_eq!(e["lock_url"], format!("{}/pypi/{CU13}/pylock.toml", s.url));
    let interp = e["interpreter"].as_str().unwrap();
    let r = get(s.addr, interp.strip_prefix(&s.url).unwrap());
    assert_eq!(r.status, 200, "{interp}");

    // `bundle inspect` and `mirror list` print the same summary.
    let held = std::fs::read_dir(store.join("bundles"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    let m = Manifest::from_json_bytes(&std::fs::read(&held).unwrap()).unwrap();
    let id: llmgw_shared::BundleId = "0".repeat(64).parse().unwrap();
    let text = llmgw_mirror::Summary::of(&id, &m).to_text();
    assert!(
        text.contains(&format!(
            "  python env {CU13} (amd64, python 3.12, x86_64-manylinux_2_28): 3 files, {}; nodes need OS packages: gcc",
            llmgw_mirror::human_bytes(bytes)
        )),
        "{text}"
    );
}
