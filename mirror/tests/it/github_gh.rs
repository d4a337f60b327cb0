//! GitHub through the real `gh` CLI (Debian's, a GitHub Enterprise
//! client) over TLS, and the GraphQL endpoint it asks: `gh` must see the
//! mirror as its host, and the mirror answers only what it holds.

use std::process::Command;

use crate::certs::site_cert;
use crate::common::*;

/// Runs the real `gh` (Debian's, a GitHub Enterprise client) against the
/// mirror over TLS; returns (success, stdout, stderr).
fn gh(
    srv: &Server,
    home: &std::path::Path,
    cert: &std::path::Path,
    args: &[&str],
) -> (bool, String, String) {
    let out = Command::new("gh")
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("GH_HOST", srv.addr.to_string())
        .env("GH_ENTERPRISE_TOKEN", "unused-by-this-mirror")
        .env("SSL_CERT_FILE", cert)
        .env("GH_NO_UPDATE_NOTIFIER", "1")
        .env("GH_PROMPT_DISABLED", "1")
        .env("NO_COLOR", "1")
        .env("GH_PAGER", "cat")
        .output()
        .expect("gh is installed by scripts/setup.sh");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn gh_release_view_download_and_list() {
    let (d, store, _) = store_with_main_bundle();
    // A newer llama.cpp release, so `latest` and the list have two.
    let newer = bytes(12, 2048);
    let mut m = llmgw_shared::manifest::Manifest::new(vec!["amd64".into()], 1_780_000_100);
    m.releases.push(llmgw_shared::manifest::Release {
        repo: "ggml-org/llama.cpp".parse().unwrap(),
        tag: "b6200".into(),
        engine: "llamacpp".into(),
        version: "b6200".into(),
        builds: vec![],
        assets: vec![asset("llama-b6200-bin-ubuntu-x64.zip", &newer)],
        signature: None,
    });
    import(&store, &m, &[&newer]);
    let (cert, key) = site_cert(d.path());
    let mut cfg = config(&store);
    cfg.tls = tls(cert.clone(), key);
    let srv = serve_with(cfg);
    let home = d.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let repo = ["-R", "ggml-org/llama.cpp"];

    // gh races GraphQL against REST: every run must pass, not most.
    for _ in 0..10 {
        let (ok, out, err) = gh(
            &srv,
            &home,
            &cert,
            &[&["release", "view", "b6123"][..], &repo[..]].concat(),
        );
        assert!(ok, "gh release view failed: {err}{out}");
        assert!(out.contains("llama-b6123-bin-ubuntu-x64.zip"), "{out}");
    }
    let dl = d.path().join("dl");
    let (name, body) = &llama_assets()[0];
    let (ok, out, err) = gh(
        &srv,
        &home,
        &cert,
        &[
            &[
                "release",
                "download",
                "b6123",
                "-p",
                name,
                "-D",
                dl.to_str().unwrap(),
            ][..],
            &repo[..],
        ]
        .concat(),
    );
    assert!(ok, "gh release download failed: {err}{out}");
    assert_eq!(std::fs::read(dl.join(name)).unwrap(), *body);

    let (ok, out, err) = gh(
        &srv,
        &home,
        &cert,
        &[&["release", "list"][..], &repo[..]].concat(),
    );
    assert!(ok, "gh release list failed: {err}{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].contains("b6200") && lines[0].contains("Latest"),
        "{out}"
    );
    assert!(
        lines[1].contains("b6123") && !lines[1].contains("Latest"),
        "{out}"
    );
    let (ok, out, _) = gh(
        &srv,
        &home,
        &cert,
        &[&["release", "list", "-L", "1"][..], &repo[..]].concat(),
    );
    assert!(ok && out.lines().count() == 1, "{out}");

    // A tag the mirror does not hold, and a repository it does not hold.
    let (ok, out, err) = gh(
        &srv,
        &home,
        &cert,
        &[&["release", "view", "b1"][..], &repo[..]].concat(),
    );
    assert!(!ok && err.contains("release not found"), "{err}{out}");
    let (ok, _, err) = gh(
        &srv,
        &home,
        &cert,
        &["release", "list", "-R", "acme/nothing"],
    );
    assert!(
        !ok && err.contains("Could not resolve to a Repository"),
        "{err}"
    );
    // Anything else asked of GraphQL gets a GraphQL error, not a 404 page.
    let (ok, out, err) = gh(
        &srv,
        &home,
        &cert,
        &["api", "graphql", "-f", "query={ viewer { login } }"],
    );
    assert!(!ok, "{out}");
    assert!(
        err.contains("Field 'viewer' doesn't exist on type 'Query'"),
        "{err}{out}"
    );
}

#[test]
fn graphql_answers_only_what_it_holds() {
    let (_d, store, _) = store_with_main_bundle();
    let srv = serve(&store);
    let post = |q: &str, vars: serde_json::Value| {
        let body = serde_json::json!({"query": q, "variables": vars}).to_string();
        raw_with_body(
            srv.addr,
            "POST",
            b"/api/graphql",
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        )
    };
    let q = "query RepositoryReleaseByTag($name:String!$owner:String!$tagName:String!)\
             {repository(owner: $owner, name: $name){release(tagName: $tagName){databaseId,isDraft}}}";
    let r = post(
        q,
        serde_json::json!({"owner": "ggml-org", "name": "llama.cpp", "tagName": "b6123"}),
    );
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["data"]["repository"]["release"]["isDraft"], false);
    let id = v["data"]["repository"]["release"]["databaseId"]
        .as_u64()
        .unwrap();
    // The same id the REST API gives.
    let rest = get(
        srv.addr,
        "/api/v3/repos/ggml-org/llama.cpp/releases/tags/b6123",
    )
    .json();
    assert_eq!(rest["id"].as_u64(), Some(id));
    let r = post(
        q,
        serde_json::json!({"owner": "ggml-org", "name": "llama.cpp", "tagName": "nope"}),
    );
    assert_eq!(
        r.json(),
        serde_json::json!({"data": {"repository": {"release": null}}})
    );

    // latestRelease with its assets, through an alias.
    let r = post(
        "{ r: repository(owner: \"GGML-ORG\", name: \"llama.cpp\") { nameWithOwner \
         latestRelease { tagName isLatest releaseAssets(first: 1) { totalCount \
         nodes { name size downloadUrl } pageInfo { hasNextPage endCursor } } } } }",
        serde_json::json!({}),
    );
    let v = r.json();
    let rel = &v["data"]["r"]["latestRelease"];
    assert_eq!(v["data"]["r"]["nameWithOwner"], "ggml-org/llama.cpp");
    assert_eq!(rel["tagName"], "b6123");
    assert_eq!(rel["releaseAssets"]["totalCount"], 2);
    assert_eq!(rel["releaseAssets"]["pageInfo"]["hasNextPage"], true);
    let url = rel["releaseAssets"]["nodes"][0]["downloadUrl"]
        .as_str()
        .unwrap();
    assert!(
        url.starts_with(&format!(
            "http://{}/ggml-org/llama.cpp/releases/download/b6123/",
            srv.addr
        )),
        "{url}"
    );

    // What it does not hold or read: GraphQL-shaped errors.
    let r = post(
        "{ repository(owner: \"ggml-org\", name: \"llama.cpp\") { stargazerCount } }",
        serde_json::json!({}),
    );
    let v = r.json();
    assert_eq!(r.status, 200);
    assert!(v.get("data").is_none(), "{v}");
    assert_eq!(v["errors"][0]["extensions"]["code"], "undefinedField");
    assert_eq!(
        v["errors"][0]["path"],
        serde_json::json!(["repository", "stargazerCount"])
    );
    let v = post(
        "mutation { deleteRelease(x: 1) { y } }",
        serde_json::json!({}),
    )
    .json();
    assert!(
        v["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("read-only"),
        "{v}"
    );
    let v = post(
        "{ repository(owner: \"a\", name: \"b\") { id } }",
        serde_json::json!({}),
    )
    .json();
    assert_eq!(v["data"]["repository"], serde_json::Value::Null);
    assert_eq!(v["errors"][0]["type"], "NOT_FOUND");
    let v = post("{ a { ...F } }", serde_json::json!({})).json();
    assert!(
        v["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("Fragments"),
        "{v}"
    );
    let r = raw(srv.addr, "GET", b"/api/graphql", &[]);
    assert_eq!(r.status, 405);
    let r = raw_with_body(srv.addr, "POST", b"/api/graphql", &[], b"not json");
    assert!(
        r.json()["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("Problems parsing JSON")
    );
}
