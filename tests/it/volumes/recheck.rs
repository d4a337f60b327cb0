//! Bytes staged by an earlier run are hashed again before they are
//! published (#28 item 3): a byte changed in `STORE/tmp/import-*` between
//! two runs — a whole blob, or a chunk of a blob finished later — is named
//! (the file, that it changed since it was checked, the volume to read
//! again), exit 1, nothing published; the run with that volume publishes,
//! and what the routes serve is the bundle's bytes.

use std::path::{Path, PathBuf};

use llmgw_shared::manifest::Placement;

use crate::bundle_kit::{Server, stderr};

use super::kit::{self, assert_imported, create, held, import};

/// The staging folder of the bundle.
fn staging(store: &Path, sha: &str) -> PathBuf {
    store.join("tmp").join(format!("import-{sha}"))
}

/// Refused: exit 1, the message names `file`, says it changed since it was
/// checked and which volume to read again; nothing is held.
fn assert_changed(o: &std::process::Output, store: &Path, file: &Path, what: &str, volume: u32) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    for e in [
        format!("{} ({what}) changed since an earlier run", file.display()),
        "Nothing was published".to_string(),
        format!("read volume {volume} again"),
    ] {
        assert!(err.contains(&e), "expected {e:?} in: {err}");
    }
    assert_eq!(held(store), 0, "nothing is published");
}

/// What a node is served for blob `sha`: GET of the URL `/v1/index` gives
/// for it, hashed.
fn served_sha256(store: &Path, sha: &str) -> String {
    let server = Server::start(store);
    let index = server.wait_for("/v1/index", 200);
    let v: serde_json::Value = serde_json::from_slice(&index).unwrap();
    let mut urls = Vec::new();
    for r in v["repos"].as_array().unwrap() {
        for c in r["commits"].as_array().unwrap() {
            for f in c["files"].as_array().unwrap() {
                urls.push((f["sha256"].clone(), f["url"].clone()));
            }
        }
    }
    for r in v["releases"].as_array().unwrap() {
        for a in r["assets"].as_array().unwrap() {
            urls.push((a["sha256"].clone(), a["url"].clone()));
        }
    }
    let url = urls
        .into_iter()
        .find(|(s, _)| s == sha)
        .map(|(_, u)| u.as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("{sha} is not served: {v}"));
    let (code, body) = server.get(url.strip_prefix(&server.url).unwrap());
    assert_eq!(code, 200, "{url}");
    llmgw_shared::sha256_hex(&body)
}

#[test]
fn a_byte_changed_in_staging_between_runs_is_named_and_never_published() {
    let fx = kit::fixture();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let set = create(&fx, dir, "site", &[]);
    let n = set.data.len() as u32;
    let placements: &[Placement] = &set.manifest.volumes.as_ref().unwrap().placements;
    let all_but = |v: u32| -> Vec<&PathBuf> {
        (1..=n)
            .filter(|x| *x != v)
            .map(|x| &set.data[x as usize - 1])
            .collect()
    };

    // A whole blob staged by run 1, changed before run 2 brings the rest.
    let whole = placements
        .iter()
        .find(|p| p.pieces.len() == 1 && p.size > 0 && p.pieces[0].volume != n)
        .expect("a blob whole in a volume but the last");
    let v = whole.pieces[0].volume;
    let store = dir.join("store-a");
    let o = import(&store, &set.sha256, &all_but(n));
    assert!(o.status.success(), "{}", stderr(&o));
    let file = staging(&store, &set.sha256).join(whole.sha256.as_str());
    kit::flip(&file, whole.size / 2);
    let o = import(&store, &set.sha256, &[&set.data[n as usize - 1]]);
    assert_changed(&o, &store, &file, &format!("blob {}", whole.sha256), v);
    let o = import(&store, &set.sha256, &[&set.data[v as usize - 1]]);
    assert_imported(&store, &set, &o);
    assert_eq!(
        served_sha256(&store, whole.sha256.as_str()),
        whole.sha256.as_str()
    );

    // A chunk verified by run 1 (in order, so its hash was carried in the
    // state), changed before run 2 brings the blob's last chunk.
    let big = placements
        .iter()
        .find(|p| p.pieces.iter().any(|c| c.volume != p.pieces[0].volume))
        .expect("the 1 MiB model in chunks over several volumes");
    let last = big.pieces.last().unwrap().volume;
    let (i, chunk) = big
        .pieces
        .iter()
        .enumerate()
        .find(|(_, c)| c.volume != last)
        .unwrap_or_else(|| panic!("chunks in two volumes: {big:?}"));
    let store = dir.join("store-b");
    let o = import(&store, &set.sha256, &all_but(last));
    assert!(o.status.success(), "{}", stderr(&o));
    let part = staging(&store, &set.sha256).join(format!("{}.part", big.sha256));
    kit::flip(&part, chunk.offset + chunk.size / 2);
    let o = import(&store, &set.sha256, &[&set.data[last as usize - 1]]);
    let what = format!("chunk {} of blob {}", i + 1, big.sha256);
    assert_changed(&o, &store, &part, &what, chunk.volume);
    let o = import(&store, &set.sha256, &[&set.data[chunk.volume as usize - 1]]);
    assert_imported(&store, &set, &o);
    assert_eq!(
        served_sha256(&store, big.sha256.as_str()),
        big.sha256.as_str()
    );
}
