//! The Hugging Face Hub routes, judged by raw requests for the exact
//! headers and JSON the clients read, and llama.cpp's `-hf` sequence; the
//! Python clients themselves are in `hub_clients`.

use llmgw_shared::sha256_hex;

use crate::common::*;

#[test]
fn resolve_headers_ranges_and_errors() {
    let (_d, store, _) = store_with_main_bundle();
    let srv = serve(&store);
    let files = model_files();
    let (cfg, _) = &files["config.json"];
    let cfg_file = hf_file("config.json", cfg, false);

    // HEAD: 200 directly, the commit, a quoted git-sha1 ETag, the true size.
    for target in [
        "/acme/tiny/resolve/main/config.json".to_string(),
        format!("/acme/tiny/resolve/{COMMIT}/config.json"),
        "/acme/tiny/resolve/%6Dain/config.json".to_string(),
        "/ACME/Tiny/resolve/main/config.json".to_string(),
    ] {
        let r = raw(
            srv.addr,
            "HEAD",
            target.as_bytes(),
            &[("Accept-Encoding", "identity")],
        );
        assert_eq!(r.status, 200, "{target}");
        assert_eq!(r.header("x-repo-commit"), Some(COMMIT));
        assert_eq!(
            r.header("etag"),
            Some(format!("\"{}\"", cfg_file.git_oid).as_str())
        );
        assert_eq!(
            r.header("content-length"),
            Some(cfg.len().to_string().as_str())
        );
        assert_eq!(r.header("accept-ranges"), Some("bytes"));
        assert!(r.body.is_empty());
        assert!(
            !r.headers
                .iter()
                .any(|(k, _)| k.to_ascii_lowercase().contains("xet")),
            "{:?}",
            r.headers
        );
        assert!(r.header("location").is_none());
    }

    // LFS: the ETag is the sha256; GET gives the bytes uncompressed.
    let (gguf, _) = &files["tiny-Q8_0.gguf"];
    let r = raw(
        srv.addr,
        "GET",
        b"/acme/tiny/resolve/main/tiny-Q8_0.gguf",
        &[("Accept-Encoding", "gzip, deflate")],
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("etag"),
        Some(format!("\"{}\"", sha256_hex(gguf)).as_str())
    );
    assert!(r.header("content-encoding").is_none());
    assert_eq!(r.body, *gguf);

    // A quoted file name; a nested path.
    let r = get(srv.addr, "/acme/tiny/resolve/main/a%20b%2Bc.txt");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, files["a b+c.txt"].0);
    let r = get(srv.addr, "/acme/tiny/resolve/main/sub/dir/vocab.txt");
    assert_eq!(r.body, files["sub/dir/vocab.txt"].0);

    // Range: 206 with Content-Range; resume from an offset; 416 past the end.
    let r = raw(
        srv.addr,
        "GET",
        b"/acme/tiny/resolve/main/tiny-Q8_0.gguf",
        &[("Range", "bytes=10-19")],
    );
    assert_eq!(r.status, 206);
    assert_eq!(
        r.header("content-range"),
        Some(format!("bytes 10-19/{}", gguf.len()).as_str())
    );
    assert_eq!(r.body, gguf[10..20]);
    let r = raw(
        srv.addr,
        "GET",
        b"/acme/tiny/resolve/main/tiny-Q8_0.gguf",
        &[("Range", "bytes=1000000-")],
    );
    assert_eq!(r.status, 206);
    assert_eq!(r.body, gguf[1_000_000..]);
    let r = raw(
        srv.addr,
        "HEAD",
        b"/acme/tiny/resolve/main/tiny-Q8_0.gguf",
        &[("Range", "bytes=5-")],
    );
    assert_eq!(r.status, 206);
    assert_eq!(
        r.header("content-length"),
        Some((gguf.len() - 5).to_string().as_str())
    );
    let r = raw(
        srv.addr,
        "GET",
        b"/acme/tiny/resolve/main/config.json",
        &[("Range", "bytes=9999-")],
    );
    assert_eq!(r.status, 416);
    assert_eq!(
        r.header("content-range"),
        Some(format!("bytes */{}", cfg.len()).as_str())
    );

    // If-None-Match: 304, with the ETag and commit.
    let etag = format!("\"{}\"", sha256_hex(gguf));
    let r = raw(
        srv.addr,
        "GET",
        b"/acme/tiny/resolve/main/tiny-Q8_0.gguf",
        &[("If-None-Match", &etag)],
    );
    assert_eq!(r.status, 304);
    assert!(r.body.is_empty());
    assert_eq!(r.header("x-repo-commit"), Some(COMMIT));

    // Datasets under their prefix, by tag and by commit.
    for rev in ["v1.0", DATA_COMMIT] {
        let r = get(
            srv.addr,
            &format!("/datasets/acme/data/resolve/{rev}/data/train.csv"),
        );
        assert_eq!(r.status, 200, "{rev}");
        assert_eq!(r.header("x-repo-commit"), Some(DATA_COMMIT));
    }
    // A dataset is not a model.
    let r = get(srv.addr, "/acme/data/resolve/v1.0/data/train.csv");
    assert_eq!(r.header("x-error-code"), Some("RepoNotFound"));

    // The error contract.
    let r = get(srv.addr, "/acme/nope/resolve/main/config.json");
    assert_eq!(
        (r.status, r.header("x-error-code")),
        (404, Some("RepoNotFound"))
    );
    let r = get(srv.addr, "/acme/tiny/resolve/dev/config.json");
    assert_eq!(
        (r.status, r.header("x-error-code")),
        (404, Some("RevisionNotFound"))
    );
    let r = raw(
        srv.addr,
        "HEAD",
        b"/acme/tiny/resolve/main/missing.bin",
        &[],
    );
    assert_eq!(
        (r.status, r.header("x-error-code")),
        (404, Some("EntryNotFound"))
    );
    assert_eq!(r.header("x-repo-commit"), Some(COMMIT));
    assert!(r.header("x-error-message").unwrap().contains("missing.bin"));
    let r = get(srv.addr, "/api/agent-harnesses");
    assert_eq!(r.status, 404);
}

#[test]
fn revision_tree_refs_and_paths_info() {
    let (_d, store, _) = store_with_main_bundle();
    let srv = serve(&store);
    let files = model_files();

    let r = get(srv.addr, "/api/models/acme/tiny/revision/main?blobs=True");
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["id"], "acme/tiny");
    assert_eq!(v["sha"], COMMIT);
    let sib = v["siblings"].as_array().unwrap();
    assert_eq!(sib.len(), files.len());
    let gguf = sib
        .iter()
        .find(|s| s["rfilename"] == "tiny-Q4_K_M.gguf")
        .unwrap();
    assert_eq!(
        gguf["lfs"]["sha256"],
        sha256_hex(&files["tiny-Q4_K_M.gguf"].0)
    );
    assert_eq!(gguf["lfs"]["pointerSize"], 131);
    assert!(gguf["blobId"].as_str().unwrap().len() == 40);
    // Without blobs, only names.
    let v = get(srv.addr, "/api/models/acme/tiny").json();
    assert_eq!(v["sha"], COMMIT);
    assert!(v["siblings"][0].get("size").is_none());
    // refs/pr-style quoting of the revision is decoded.
    let r = get(
        srv.addr,
        &format!("/api/models/acme/tiny/revision/{COMMIT}"),
    );
    assert_eq!(r.json()["sha"], COMMIT);
    let r = get(srv.addr, "/api/models/acme/tiny/revision/refs%2Fpr%2F1");
    assert_eq!(r.header("x-error-code"), Some("RevisionNotFound"));

    // The recursive tree: ONE page, no Link, bare hex oids, never xetHash.
    let r = get(
        srv.addr,
        &format!("/api/models/acme/tiny/tree/{COMMIT}?recursive=true&expand=false"),
    );
    assert_eq!(r.status, 200);
    assert!(r.header("link").is_none());
    assert!(!r.text().contains("xetHash"));
    let tree = r.json();
    let tree = tree.as_array().unwrap();
    let paths: Vec<&str> = tree.iter().map(|e| e["path"].as_str().unwrap()).collect();
    for p in files.keys() {
        assert!(paths.contains(&p.as_str()), "{p} in {paths:?}");
    }
    assert!(paths.contains(&"sub") && paths.contains(&"sub/dir"));
    for e in tree {
        let oid = e["oid"].as_str().unwrap();
        assert_eq!(oid.len(), 40);
        assert!(oid.bytes().all(|b| b.is_ascii_hexdigit()));
        if let Some(l) = e.get("lfs") {
            assert_eq!(l["oid"].as_str().unwrap().len(), 64);
        }
    }
    // Not recursive, below a quoted path, with expand: direct children only.
    let v = get(
        srv.addr,
        "/api/models/acme/tiny/tree/main/sub%2Fdir?recursive=False&expand=True",
    )
    .json();
    let v = v.as_array().unwrap();
    assert_eq!(v.len(), 1);
    assert_eq!(v[0]["path"], "sub/dir/vocab.txt");
    assert_eq!(v[0]["lastCommit"]["id"], COMMIT);
    let v = get(srv.addr, "/api/models/acme/tiny/tree/main").json();
    assert!(
        v.as_array()
            .unwrap()
            .iter()
            .all(|e| !e["path"].as_str().unwrap().contains('/'))
    );
    let r = get(srv.addr, "/api/models/acme/tiny/tree/main/nope");
    assert_eq!(r.header("x-error-code"), Some("EntryNotFound"));

    // refs: what current llama.cpp reads.
    let v = get(srv.addr, "/api/models/acme/tiny/refs").json();
    assert_eq!(v["branches"][0]["name"], "main");
    assert_eq!(v["branches"][0]["targetCommit"], COMMIT);

    // paths-info: form fields, repeated.
    let r = raw_with_body(
        srv.addr,
        "POST",
        b"/api/models/acme/tiny/paths-info/main",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        b"paths=config.json&paths=sub%2Fdir&paths=missing&expand=false",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    let v = v.as_array().unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!(v[0]["type"], "file");
    assert_eq!(v[1]["type"], "directory");
    let r = get(srv.addr, "/api/models/acme/tiny/paths-info/main");
    assert_eq!(r.status, 405);

    // JSON answers carry an ETag and honour If-None-Match.
    let r = get(srv.addr, "/api/models/acme/tiny/revision/main");
    let etag = r.header("etag").unwrap().to_string();
    let r = raw(
        srv.addr,
        "GET",
        b"/api/models/acme/tiny/revision/main",
        &[("If-None-Match", &etag)],
    );
    assert_eq!(r.status, 304);
}

#[test]
fn llama_cpp_hf_sequence() {
    // What llama.cpp's `-hf acme/tiny` sends: refs, the recursive tree at
    // the commit, then HEAD and a GET of the GGUF resumed with a Range;
    // older builds ask /v2/.../manifests/{tag} first.
    let (_d, store, _) = store_with_main_bundle();
    let srv = serve(&store);
    let ua = [("User-Agent", "llama-cpp"), ("Accept", "application/json")];
    let refs = raw(srv.addr, "GET", b"/api/models/acme/tiny/refs", &ua).json();
    let commit = refs["branches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "main")
        .unwrap()["targetCommit"]
        .as_str()
        .unwrap()
        .to_string();
    let tree = raw(
        srv.addr,
        "GET",
        format!("/api/models/acme/tiny/tree/{commit}?recursive=true").as_bytes(),
        &ua,
    );
    assert!(tree.header("link").is_none());
    let gguf = tree
        .json()
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "tiny-Q4_K_M.gguf")
        .unwrap()
        .clone();
    let sha = gguf["lfs"]["oid"].as_str().unwrap().to_string();
    let url = format!("/acme/tiny/resolve/{commit}/tiny-Q4_K_M.gguf");
    let head = raw(
        srv.addr,
        "HEAD",
        url.as_bytes(),
        &[("User-Agent", "llama-cpp")],
    );
    assert_eq!(head.status, 200);
    let size: usize = head.header("content-length").unwrap().parse().unwrap();
    // A partial download, then the resume.
    let first = raw(
        srv.addr,
        "GET",
        url.as_bytes(),
        &[("Range", "bytes=0-99999")],
    );
    assert_eq!(first.status, 206);
    let rest = raw(
        srv.addr,
        "GET",
        url.as_bytes(),
        &[("Range", "bytes=100000-")],
    );
    assert_eq!(rest.status, 206);
    let mut all = first.body;
    all.extend_from_slice(&rest.body);
    assert_eq!(all.len(), size);
    assert_eq!(sha256_hex(&all), sha);

    // /v2 manifests: latest means Q4_K_M, then Q8_0; a tag picks its file.
    let v = raw(srv.addr, "GET", b"/v2/acme/tiny/manifests/latest", &ua).json();
    assert_eq!(v["ggufFile"]["rfilename"], "tiny-Q4_K_M.gguf");
    let v = get(srv.addr, "/v2/acme/tiny/manifests/q8_0").json();
    assert_eq!(v["ggufFile"]["rfilename"], "tiny-Q8_0.gguf");
    let r = get(srv.addr, "/v2/acme/tiny/manifests/Q2_K");
    assert_eq!(r.status, 404);
    assert!(r.text().contains("Q2_K"));
    let r = get(srv.addr, "/v2/acme/nope/manifests/latest");
    assert_eq!(r.header("x-error-code"), Some("RepoNotFound"));
}

#[test]
fn tags_are_listed_as_tags_and_a_tag_only_repo_keeps_a_default_branch() {
    use llmgw_shared::manifest::{HfRepo, Manifest, RefKind, RepoKind};
    let (d, store, _) = store_with_main_bundle();
    // acme/tagged imported only at tag v2 (format 2 says it is a tag), and
    // acme/tiny's tag v1 beside its branch main.
    let body = b"{\"v\": 2}\n".to_vec();
    let mut m = Manifest::new(vec!["amd64".into()], 1_780_000_200);
    for (id, rev, commit) in [("acme/tagged", "v2", COMMIT2), ("acme/tiny", "v1", COMMIT)] {
        m.repos.push(HfRepo {
            kind: RepoKind::Model,
            id: id.parse().unwrap(),
            revision: rev.into(),
            ref_kind: Some(RefKind::Tag),
            commit: commit.into(),
            patterns: vec![],
            files: vec![hf_file("config.json", &body, false)],
            kernel: None,
        });
    }
    import(&store, &m, &[&body]);
    let srv = serve(&store);

    let refs = get(srv.addr, "/api/models/acme/tiny/refs").json();
    assert_eq!(refs["branches"][0]["name"], "main");
    assert_eq!(refs["branches"].as_array().unwrap().len(), 1, "{refs}");
    assert_eq!(refs["tags"][0]["name"], "v1");
    assert_eq!(refs["tags"][0]["ref"], "refs/tags/v1");
    let refs = get(srv.addr, "/api/models/acme/tagged/refs").json();
    assert_eq!(refs["tags"][0]["name"], "v2");
    assert_eq!(refs["branches"][0]["name"], "main");
    assert_eq!(refs["branches"][0]["targetCommit"], COMMIT2);
    assert_eq!(
        get(srv.addr, "/api/models/acme/tagged/revision/main").json()["sha"],
        COMMIT2
    );
    // A format 1 manifest does not say: its revision stays a branch.
    let refs = get(srv.addr, "/api/datasets/acme/data/refs").json();
    assert_eq!(refs["branches"][0]["name"], "v1.0");
    assert_eq!(refs["tags"], serde_json::json!([]));

    // The real client reads them where they belong.
    let out = python(
        &hf24(),
        &srv.url,
        &d.path().join("home"),
        r#"
from huggingface_hub import HfApi
r = HfApi().list_repo_refs("acme/tagged")
print("branches", sorted(b.name for b in r.branches))
print("tags", sorted((t.name, t.target_commit) for t in r.tags))
"#,
    );
    assert!(out.contains("branches ['main']"), "{out}");
    assert!(
        out.contains(&format!("tags [('v2', '{COMMIT2}')]")),
        "{out}"
    );
}
