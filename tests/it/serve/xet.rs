//! Xet served from held blobs (#48): the real `huggingface_hub` with
//! `hf_xet`, on a node whose only network is the mirror (`unshare -rn`),
//! downloads a held LFS file through the mirror's Xet routes — token,
//! reconstruction, xorbs — never by a plain GET, and gets the bytes; the
//! hashes the mirror gives are `hf_xet`'s own; a mirror that needs a token
//! hands out xorb URLs that work only as signed.

use std::path::Path;
use std::process::Command;

use crate::bundle_kit::{self, Kit, Server, import_bundle, ok_for as ok, venv_python, write_tar};
use sha2::{Digest, Sha256};

/// Bytes nobody could compress or chunk by accident.
fn varied(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 7) as u8
        })
        .collect()
}

/// The files: two xorbs' worth (more than 64 MiB), one byte, one chunk,
/// none.
fn files() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("big.safetensors", varied(70 << 20, 1)),
        ("one.bin", vec![7]),
        ("small.bin", varied(3000, 2)),
        ("empty.bin", Vec::new()),
    ]
}

/// A store holding `acme/xet` with [`files`].
fn store_with_files(dir: &Path) -> std::path::PathBuf {
    let mut kit = Kit::new();
    for (name, body) in files() {
        kit.model_file("acme/xet", name, &body);
    }
    let bundle = dir.join("b.tar");
    write_tar(&bundle, &kit.entries());
    let store = dir.join("store");
    ok(
        "bundle import",
        &import_bundle(&bundle, &kit.sha256(), &store, &[]),
    );
    store
}

/// What the node runs: `hf_hub_download` of each file, printing its sha256
/// and the hash `hf_xet` computes of the download.
const NODE_PY: &str = r#"
import hashlib, sys, hf_xet
from huggingface_hub import hf_hub_download
paths = [hf_hub_download("acme/xet", n) for n in sys.argv[1:]]
for p, h in zip(paths, hf_xet.hash_files(paths)):
    print(hashlib.sha256(open(p, "rb").read()).hexdigest(), h.hash)
"#;

/// Runs [`NODE_PY`] with the real client in the test venv, against `url`.
fn download(url: &str, work: &Path, token: Option<&str>) -> std::process::Output {
    let mut c = Command::new(venv_python());
    c.arg("-c")
        .arg(NODE_PY)
        .args(files().iter().map(|(n, _)| *n))
        .env("HF_ENDPOINT", url)
        .env("HF_HOME", work.join("hf"))
        .env("HF_XET_CACHE", work.join("xet-cache"))
        .env_remove("HF_HUB_DISABLE_XET")
        .env("HF_HUB_OFFLINE", "0");
    match token {
        Some(t) => c.env("HF_TOKEN", t),
        None => c.env_remove("HF_TOKEN"),
    };
    c.output().unwrap()
}

fn sha256(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

#[test]
fn hf_xet_downloads_held_files_through_the_mirror() {
    let d = tempfile::tempdir().unwrap();
    let store = store_with_files(d.path());
    let node = d.path().join("node");
    std::fs::create_dir_all(&node).unwrap();
    std::fs::write(node.join("download.py"), NODE_PY).unwrap();
    let names: Vec<&str> = files().iter().map(|(n, _)| *n).collect();
    // The mirror logs to serve.err in the node's folder.
    let script = format!(
        "{mirror}curl -sf \"$url/api/models/acme/xet/tree/main\" > tree.json\n\
         HF_ENDPOINT=\"$url\" {python} download.py {names}\n",
        mirror = bundle_kit::mirror_in_node(&store),
        python = venv_python().display(),
        names = names.join(" "),
    );
    let out = ok(
        "hf_hub_download over Xet, offline",
        &bundle_kit::offline_node(&script, &node, &[])
            .env("RUST_LOG", "info")
            .env("HF_HOME", node.join("hf"))
            .env("HF_XET_CACHE", node.join("xet-cache"))
            .env("HF_HUB_OFFLINE", "0")
            .output()
            .unwrap(),
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), files().len(), "{out}");
    let log_text = std::fs::read_to_string(node.join("serve.err")).unwrap();
    let tree: serde_json::Value =
        serde_json::from_slice(&std::fs::read(node.join("tree.json")).unwrap()).unwrap();
    for ((name, body), line) in files().iter().zip(&lines) {
        let (sha, xet) = line.split_once(' ').unwrap();
        assert_eq!(sha, sha256(body), "{name}: the bytes downloaded");
        // The hash the mirror served is the one hf_xet computes.
        let entry = tree
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["path"] == *name)
            .unwrap();
        assert_eq!(entry["xetHash"], xet, "{name}");
        // An empty file has no bytes to rebuild: hf_xet writes it
        // without asking.
        assert!(
            body.is_empty() || log_text.contains(&format!("/-/xet/v2/reconstructions/{xet}")),
            "{name} was not rebuilt over Xet:\n{log_text}"
        );
    }
    // Bytes came as xorbs, two for the big file; no file by a plain GET.
    let xorbs = log_text.matches("route=xet_xorb status=20").count();
    assert!(xorbs >= 4, "{xorbs} xorb fetches:\n{log_text}");
    assert!(
        !log_text
            .lines()
            .any(|l| l.contains("method=GET") && l.contains("route=hub_resolve")),
        "a file was fetched whole:\n{log_text}"
    );
    assert!(log_text.contains("route=hub_xet_token status=200"));
}

/// A reconstruction answers ranges as the Hub's content server does, and
/// nothing outside the index.
#[test]
fn reconstructions_answer_ranges_and_refuse_what_is_not_held() {
    let d = tempfile::tempdir().unwrap();
    let store = store_with_files(d.path());
    let server = Server::start(&store);
    server.wait_for("/readyz", 200);
    let (_, tree) = server.get("/api/models/acme/xet/tree/main");
    let tree: serde_json::Value = serde_json::from_slice(&tree).unwrap();
    let big = tree
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "big.safetensors")
        .unwrap()["xetHash"]
        .as_str()
        .unwrap()
        .to_string();
    let curl = |path: &str, range: Option<&str>| {
        let mut c = Command::new("curl");
        c.args(["-s", "-w", "\n%{http_code}"]);
        if let Some(r) = range {
            c.args(["-H", &format!("Range: {r}")]);
        }
        let o = c.arg(format!("{}{path}", server.url)).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        let (body, code) = text.rsplit_once('\n').unwrap();
        (code.to_string(), body.to_string())
    };
    let whole = format!("/-/xet/v1/reconstructions/{big}");
    let (code, body) = curl(&whole, None);
    assert_eq!(code, "200", "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["terms"].as_array().unwrap().len(), 2, "{body}");
    assert_eq!(v["fetch_info"].as_object().unwrap().len(), 2, "{body}");
    // The last byte: one term, starting inside its first chunk.
    let (code, body) = curl(
        &format!("/-/xet/v2/reconstructions/{big}"),
        Some("bytes=73400319-73400319"),
    );
    assert_eq!(code, "200", "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["terms"].as_array().unwrap().len(), 1, "{body}");
    assert!(v["offset_into_first_range"].as_u64().unwrap() > 0, "{body}");
    assert_eq!(curl(&whole, Some("bytes=73400320-")).0, "416");
    assert_eq!(
        curl(
            &format!("/-/xet/v2/reconstructions/{}", "2".repeat(64)),
            None
        )
        .0,
        "404"
    );
    assert_eq!(curl("/-/xet/v2/reconstructions/NOT-HEX", None).0, "400");
    let xorb = format!("/-/xet/xorbs/{big}/{}", "1".repeat(64));
    assert_eq!(curl(&xorb, None).0, "404");
    // In the Hub's error shape.
    let unknown = Command::new("curl")
        .args(["-s", "-D", "-", "-o", "/dev/null"])
        .arg(format!("{}{xorb}", server.url))
        .output()
        .unwrap();
    let headers = String::from_utf8_lossy(&unknown.stdout).to_ascii_lowercase();
    assert!(headers.contains("x-error-code: entrynotfound"), "{headers}");
    assert!(headers.contains("x-error-message: file "), "{headers}");
}

/// With `--token-file`, the client's token reaches the content routes and
/// its xorb fetches (which carry no token) go through as signed; an
/// unsigned or altered xorb URL is refused.
#[test]
fn a_mirror_with_a_token_signs_its_xorb_urls() {
    let d = tempfile::tempdir().unwrap();
    let store = store_with_files(d.path());
    let token_file = d.path().join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let mut cmd = bundle_kit::llmgw();
    cmd.args(["mirror", "serve", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(&token_file)
        .arg("--store")
        .arg(&store);
    let (mut child, url) = bundle_kit::spawn_serve(&mut cmd);
    let out = download(&url, d.path(), Some("s3cret-token"));
    let text = ok("hf_hub_download over Xet with a token", &out);
    for ((name, body), line) in files().iter().zip(text.lines()) {
        assert!(line.starts_with(&sha256(body)), "{name}: {line}");
    }
    // A reconstruction, asked with the token, names signed xorb URLs.
    let big_xet = text.lines().next().unwrap().split_once(' ').unwrap().1;
    let get = |u: &str, auth: bool| {
        let mut c = Command::new("curl");
        c.args(["-s", "-o", "/dev/null", "-w", "%{http_code}"]);
        if auth {
            c.args(["-H", "Authorization: Bearer s3cret-token"]);
        }
        String::from_utf8(c.arg(u).output().unwrap().stdout).unwrap()
    };
    let recon = Command::new("curl")
        .args(["-s", "-H", "Authorization: Bearer s3cret-token"])
        .arg(format!("{url}/-/xet/v2/reconstructions/{big_xet}"))
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&recon.stdout).unwrap();
    let first = v["xorbs"].as_object().unwrap().values().next().unwrap()[0]["url"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(first.contains("?sig="), "{first}");
    assert_eq!(get(&first, false), "200");
    let (unsigned, sig) = first.split_once("?sig=").unwrap();
    assert_eq!(get(unsigned, false), "401");
    let mut bad = sig.to_string();
    bad.replace_range(0..1, if sig.starts_with('0') { "1" } else { "0" });
    assert_eq!(get(&format!("{unsigned}?sig={bad}"), false), "401");
    assert_eq!(
        get(&format!("{url}/-/xet/v2/reconstructions/{big_xet}"), false),
        "401"
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// `curl` with `args` against `url`: (headers in lower case, body).
fn curl_full(args: &[&str], url: &str) -> (String, String) {
    // `-I` prints the headers itself.
    let dump: &[&str] = if args.contains(&"-I") {
        &[]
    } else {
        &["-D", "-"]
    };
    let o = Command::new("curl")
        .arg("-s")
        .args(dump)
        .args(args)
        .arg(url)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_ascii_lowercase(), body.to_string())
}

/// The refusals not met above, HEAD answered with GET's headers, and a
/// damaged record on disk: each said, never a panic or a short body.
#[test]
fn xorbs_answer_head_like_get_and_refusals_and_damage_are_said() {
    let d = tempfile::tempdir().unwrap();
    let store = store_with_files(d.path());
    let server = Server::start(&store);
    server.wait_for("/readyz", 200);
    let (_, v2) = server.get("/api/models/acme/xet/tree/main");
    let tree: serde_json::Value = serde_json::from_slice(&v2).unwrap();
    let hash_of = |name: &str| {
        tree.as_array()
            .unwrap()
            .iter()
            .find(|e| e["path"] == name)
            .unwrap()["xetHash"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let small = hash_of("small.bin");
    let (_, body) = curl_full(
        &[],
        &format!("{}/-/xet/v2/reconstructions/{small}", server.url),
    );
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let url = v["xorbs"].as_object().unwrap().values().next().unwrap()[0]["url"]
        .as_str()
        .unwrap()
        .to_string();

    // HEAD: GET's headers, no body.
    let strip = |h: &str| -> Vec<String> {
        h.lines()
            .filter(|l| !l.starts_with("date:"))
            .map(str::to_string)
            .collect()
    };
    let (get_h, get_body) = curl_full(&["-r", "5-20"], &url);
    let (head_h, head_body) = curl_full(&["-I", "-r", "5-20"], &url);
    assert_eq!(strip(&get_h), strip(&head_h));
    assert!(get_h.contains("content-length: 16"), "{get_h}");
    assert!(!get_body.is_empty());
    assert!(head_body.is_empty());

    // A range past the xorb's end, a method, a path no route takes.
    let (h, _) = curl_full(&["-r", "9999999-"], &url);
    assert!(h.starts_with("http/1.1 416"), "{h}");
    assert!(
        h.contains("x-error-message: the range asked is past the end"),
        "{h}"
    );
    let (h, _) = curl_full(&["-X", "POST"], &url);
    assert!(
        h.starts_with("http/1.1 405") && h.contains("allow: get, head"),
        "{h}"
    );
    let (h, _) = curl_full(&[], &format!("{}/-/xet/v3/anything", server.url));
    assert!(
        h.starts_with("http/1.1 404") && h.contains("x-error-code: notfound"),
        "{h}"
    );

    // A record damaged after its head (a disk's fault, a hostile hand),
    // before the server first read it whole: the file's reconstruction is a 500 naming the record and what to
    // do, never a plan from bad numbers.
    let one = hash_of("one.bin");
    let sha = Kit::new().model_file("x/y", "s", &files()[1].1);
    let record = store.join("state/xet").join(&sha);
    let mut bytes = std::fs::read(&record).unwrap();
    bytes.truncate(bytes.len() - 3);
    std::fs::write(&record, &bytes).unwrap();
    let (h, body) = curl_full(
        &[],
        &format!("{}/-/xet/v2/reconstructions/{one}", server.url),
    );
    assert!(h.starts_with("http/1.1 500"), "{h}");
    assert!(
        body.contains("is damaged") && body.contains("import the bundle again"),
        "{body}"
    );
}

/// A store imported before import made Xet records: the server makes them
/// in the background, from each blob's bytes, the same records import
/// makes; a blob damaged at rest gets none (and is said), its file served
/// over plain HTTP only as before.
#[test]
fn records_missing_from_an_older_store_are_made_by_the_server() {
    let d = tempfile::tempdir().unwrap();
    let store = store_with_files(d.path());
    let records = store.join("state/xet");
    let made_by_import: std::collections::BTreeMap<String, Vec<u8>> = std::fs::read_dir(&records)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().into_string().unwrap(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    assert_eq!(made_by_import.len(), files().len());
    std::fs::remove_dir_all(&records).unwrap();
    // One blob damaged at rest.
    let small = sha256(&files().iter().find(|(n, _)| *n == "small.bin").unwrap().1);
    let blob = store.join("blobs/sha256").join(&small[..2]).join(&small);
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[0] ^= 1;
    std::fs::set_permissions(&blob, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    std::fs::write(&blob, bytes).unwrap();

    let log = d.path().join("serve.log");
    let server = Server::start_logged(&store, &log);
    server.wait_for("/readyz", 200);
    let head = |name: &str| {
        let o = Command::new("curl")
            .args([
                "-sI",
                &format!("{}/acme/xet/resolve/main/{name}", server.url),
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).to_ascii_lowercase()
    };
    let big = sha256(&files()[0].1);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !head("big.safetensors").contains("x-xet-hash:") {
        assert!(
            std::time::Instant::now() < deadline,
            "no record made:\n{}",
            std::fs::read_to_string(&log).unwrap()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // Every sound blob's record, byte for byte import's.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::fs::read_dir(&records).map_or(0, |r| r.count()) < files().len() - 1 {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    for (name, bytes) in &made_by_import {
        let now = std::fs::read(records.join(name)).ok();
        if *name == small {
            assert_eq!(now, None, "a damaged blob got a record");
        } else {
            assert_eq!(now.as_deref(), Some(&bytes[..]), "{name}");
        }
    }
    assert!(made_by_import.contains_key(&big));
    assert!(!head("small.bin").contains("x-xet-hash:"));
    let log_text = std::fs::read_to_string(&log).unwrap();
    assert!(
        log_text.contains("does not hash to its name") && log_text.contains(&small),
        "{log_text}"
    );
}
