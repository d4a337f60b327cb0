//! A name served from a followed signed series moves only with that series
//! (#28 item 2): with the store at signed sequence 11 (`main` = revision
//! 2, llama.cpp `b6200`, environment `site-amd64` at demo 2.0), (a) an
//! unsigned bundle of older content and (b) the same key's bundle on
//! another channel are held but move no branch, tag, `latest` or
//! environment; the operator can follow the other channel on purpose
//! (`mirror policy follow`), or let an unsigned bundle move them
//! (`--allow-unsigned-override`). Each step is checked through every
//! route: the Hub's revision, default revision and refs, GitHub's
//! `latest` (API and download) and tags, the PyPI environment by name.

use super::*;
use llmgw_shared::manifest::{BlobRef, PythonEnv, PythonFile, PythonIndex, Resolver};

fn commit(rev: u8) -> String {
    rev.to_string().repeat(40)
}

fn tag(rev: u8) -> String {
    format!("b6{rev}00")
}

fn wheel(rev: u8) -> String {
    format!("demo-{rev}.0-py3-none-any.whl")
}

/// Revision `rev` of everything: model acme/tiny at its own commit (a
/// file of its own), llama.cpp at its own tag, environment `site-amd64`
/// with demo `rev`.0. Unsigned, no channel or sequence.
fn content(rev: u8) -> Kit {
    let (mut k, _, _) = kit(u64::from(rev), &tag(rev), &commit(rev), 86_400);
    k.manifest.channel = None;
    k.manifest.sequence = None;
    let body = format!("wheel {rev}").into_bytes();
    let sha = sha256_hex(&body);
    let lock = format!("lock-version = \"1.0\"\n# rev {rev}\n").into_bytes();
    let lock_sha = sha256_hex(&lock);
    k.manifest.python_envs.push(PythonEnv {
        name: "site-amd64".into(),
        engine: None,
        version: None,
        variant: None,
        arch: "amd64".into(),
        python: "3.12".into(),
        platform: "x86_64-manylinux_2_28".into(),
        requirements: vec![format!("demo=={rev}.0")],
        indexes: vec![PythonIndex {
            name: "pypi".into(),
            url: "https://pypi.example/simple".into(),
            explicit: false,
            packages: vec![],
        }],
        resolver: Resolver {
            name: "uv".into(),
            version: "0.13.9".into(),
        },
        lock: BlobRef {
            sha256: lock_sha.parse().unwrap(),
            size: lock.len() as u64,
        },
        interpreter: None,
        os_packages: vec![],
        free_gb: None,
        note: None,
        node_interpreter: None,
        site_lock: None,
        overrides: Vec::new(),
        constraints: Vec::new(),
        files: vec![PythonFile {
            project: "demo".into(),
            version: format!("{rev}.0"),
            filename: wheel(rev),
            size: body.len() as u64,
            sha256: sha.parse().unwrap(),
            requires_python: None,
            yanked: None,
            upload_time: None,
            metadata: None,
            origin: format!("https://files.example/{}", wheel(rev)),
            publisher_digests: vec![PublisherDigest {
                source: DigestSource::PypiSimpleSha256,
                value: sha.clone(),
            }],
        }],
    });
    k.blobs.insert(sha, body);
    k.blobs.insert(lock_sha, lock);
    k
}

fn in_series(mut k: Kit, channel: &str, sequence: u64) -> Kit {
    k.manifest.channel = Some(channel.into());
    k.manifest.sequence = Some(sequence);
    k
}

fn json(server: &Server, path: &str) -> serde_json::Value {
    let (code, body) = server.get(path);
    assert_eq!(code, 200, "{path}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
}

/// What every route says revision `rev` is, checked together; waits up
/// to 10 s for the server's index to catch up with the store.
fn routes_at(server: &Server, rev: u8, when: &str) {
    let mut last = String::new();
    for _ in 0..100 {
        match routes_say(server) {
            Ok(r) if r == rev => return,
            Ok(r) => last = format!("every route says revision {r}"),
            Err(e) => last = e,
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("{when}: expected every route at revision {rev}; {last}");
}

/// The revision every route names, or which routes disagree.
fn routes_say(server: &Server) -> Result<u8, String> {
    let sha = |p: &str| json(server, p)["sha"].as_str().unwrap().to_string();
    let of_commit = |c: &str| c.as_bytes()[0] - b'0';
    let main = of_commit(&sha("/api/models/acme/tiny/revision/main"));
    let default = of_commit(&sha("/api/models/acme/tiny"));
    let refs = json(server, "/api/models/acme/tiny/refs");
    let branch = refs["branches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "main")
        .map(|b| of_commit(b["targetCommit"].as_str().unwrap()));
    let latest = json(server, "/api/v3/repos/ggml-org/llama.cpp/releases/latest");
    let latest = latest["tag_name"].as_str().unwrap().as_bytes()[2] - b'0';
    let (code, body) =
        server.get("/ggml-org/llama.cpp/releases/latest/download/llama-bin-ubuntu-x64.tar.gz");
    let download = (code == 200)
        .then(|| String::from_utf8_lossy(&body).into_owned())
        .and_then(|b| {
            b.strip_prefix("llama.cpp b6")
                .map(|t| t.as_bytes()[0] - b'0')
        });
    let (code, body) = server.get("/pypi/site-amd64/simple/demo/");
    let page = String::from_utf8_lossy(&body);
    let env: Vec<u8> = (1..=9)
        .filter(|r| code == 200 && page.contains(&wheel(*r)))
        .collect();
    let said = [
        ("main", Some(main)),
        ("default", Some(default)),
        ("refs", branch),
        ("latest", Some(latest)),
        ("latest download", download),
        ("environment", (env.len() == 1).then(|| env[0])),
    ];
    if said.iter().all(|(_, r)| *r == Some(main)) {
        return Ok(main);
    }
    Err(format!("the routes disagree: {said:?}"))
}

/// Waits until the server's index holds bundle `id`.
fn wait_held(server: &Server, id: &str) {
    for _ in 0..100 {
        if String::from_utf8_lossy(&server.get("/v1/index").1).contains(id) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("the server never held bundle {id}");
}

#[test]
fn a_name_moves_only_with_the_series_the_store_follows() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let store = dir.join("store");
    let key = site_key(dir, &store);
    let sign = |name: &str, k: &Kit| signed_bundle(dir, name, k);
    let import = |p: &Path, extra: &[&str]| {
        llmgw()
            .args(["bundle", "import", s(p), "--store", s(&store)])
            .args(extra)
            .output()
            .unwrap()
    };
    let unsigned = |name: &str, k: &Kit| {
        let p = dir.join(format!("{name}.tar"));
        write_tar(&p, &k.entries());
        p
    };
    ok(&import(
        &sign("s10", &in_series(content(1), "stable", 10)),
        &[],
    ));
    ok(&import(
        &sign("s11", &in_series(content(2), "stable", 11)),
        &[],
    ));
    let server = Server::start(&store);
    routes_at(&server, 2, "at sequence 11");

    // (a) Unsigned, older content, imported after: held, moves nothing a
    // signed series serves, and says so; a name nobody signed it adds.
    let mut old = content(1);
    old.model_file("acme/fresh", "f.bin", b"fresh");
    let o = import(&unsigned("old", &old), &["--sha256", &old.sha256()]);
    let err = stderr(ok_output(&o));
    assert!(
        err.contains("the bundle is not signed: it adds names no signed series serves")
            && err.contains(&format!("this store follows key {key} channel stable"))
            && err.contains("--allow-unsigned-override"),
        "{err}"
    );
    wait_held(&server, &old.sha256());
    routes_at(&server, 2, "after an unsigned older bundle");
    assert_eq!(
        json(&server, "/api/models/acme/fresh/revision/main")["sha"],
        old.manifest.repos[1].commit.as_str()
    );
    // Held: served by commit, and its release by tag.
    assert_eq!(
        json(
            &server,
            &format!("/api/models/acme/tiny/revision/{}", commit(1))
        )["sha"],
        commit(1).as_str()
    );
    let t = json(
        &server,
        "/api/v3/repos/ggml-org/llama.cpp/releases/tags/b6100",
    );
    assert_eq!(t["tag_name"], "b6100");

    // (b) The same key on another channel, older content: held, moves
    // nothing, and the note says how to follow it.
    let other = in_series(content(1), "other", 1);
    let o = import(&sign("other1", &other), &[]);
    let err = stderr(ok_output(&o));
    assert!(
        err.contains(&format!(
            "signed by key {key} channel other, a series this store does not follow"
        )) && err.contains(&format!("llmgw mirror policy follow {key} other")),
        "{err}"
    );
    wait_held(&server, &other.sha256());
    routes_at(&server, 2, "after another channel's bundle");
    let policy = std::fs::read_to_string(store.join("state/policy.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&policy).unwrap();
    assert_eq!(
        v["follow"],
        serde_json::json!([{"key_id": key, "channel": "stable"}]),
        "{policy}"
    );

    // Following it on purpose: its later bundle now moves every name;
    // unfollowing puts them back, without a restart.
    let policy = |args: &[&str]| {
        llmgw()
            .args(["mirror", "policy"])
            .args(args)
            .args(["--store", s(&store)])
            .output()
            .unwrap()
    };
    let out = ok(&policy(&["follow", &key, "other"]));
    assert!(
        out.contains(&format!("follow {key} stable\nfollow {key} other")),
        "{out}"
    );
    routes_at(&server, 1, "after following channel other");
    ok(&policy(&["unfollow", &key, "other"]));
    routes_at(&server, 2, "after unfollowing channel other");
    let o = policy(&["follow", "RWQnotakey", "stable"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is not trusted for bundles"),
        "{}",
        stderr(&o)
    );

    // On purpose: an unsigned bundle with --allow-unsigned-override moves
    // them, recorded in the policy; the next signed bundle moves them on.
    let newer = content(4);
    let o = import(
        &unsigned("newer", &newer),
        &["--sha256", &newer.sha256(), "--allow-unsigned-override"],
    );
    let err = stderr(ok_output(&o));
    assert!(
        err.contains("--allow-unsigned-override: this unsigned bundle moves"),
        "{err}"
    );
    routes_at(&server, 4, "after an unsigned override");
    let p = std::fs::read_to_string(store.join("state/policy.json")).unwrap();
    assert!(p.contains(&newer.sha256()), "{p}");
    ok(&import(
        &sign("s12", &in_series(content(5), "stable", 12)),
        &[],
    ));
    routes_at(&server, 5, "after sequence 12");
}
