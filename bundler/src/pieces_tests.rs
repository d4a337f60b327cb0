//! A tar bundle's downloads against the fixture (#53 item 3): while the
//! head piece waits to retry, it lets go of its connection and the pieces
//! behind it are fetched (into memory, then into the spool), and every
//! byte still arrives in order.

use std::time::Duration;

use llmgw_fixture::{Fixture, FixtureOptions, HubKind, TINY_COMMIT};

use super::{Msg, NetBlob, start};
use crate::http::{Http, RetryPolicy};
use crate::progress::Events;

const FILES: [&str; 4] = [
    "config.json",
    "README.md",
    "sub/dir/vocab.txt",
    ".gitattributes",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_other_pieces_go_on_while_the_head_one_waits_to_retry() {
    let fx = Fixture::start(FixtureOptions::default()).await.unwrap();
    let retry = RetryPolicy {
        attempts: 4,
        first_backoff: Duration::from_millis(400),
        max_backoff: Duration::from_secs(1),
    };
    let http = Http::new(&fx.hf_endpoint(), None, retry).unwrap();
    let path = |f: &str| Fixture::hub_resolve_path(HubKind::Model, "acme/tiny", TINY_COMMIT, f);
    let mut bodies = Vec::new();
    let mut blobs = Vec::new();
    for (index, f) in FILES.iter().enumerate() {
        let url = format!("{}{}", fx.hf_endpoint(), path(f));
        let (body, _) = http.get_small(&url, None, 1 << 20).await.unwrap();
        blobs.push(NetBlob {
            index,
            label: f.to_string(),
            url,
            size: body.len() as u64,
            from: 0,
            denied_hint: None,
        });
        bodies.push(body);
    }
    fx.clear_requests();
    // The head file answers 503 twice: two waits of 0.4 and 0.8 s.
    fx.faults().refuse(path(FILES[0]), 0, 2, 503);

    // One connection: before, the head piece held it (and its slot) until
    // it was handed over, so nothing behind it started while it waited.
    let dir = tempfile::tempdir().unwrap();
    let spool = tempfile::tempdir_in(dir.path()).unwrap();
    let spool_path = spool.path().to_path_buf();
    let progress: Events = std::sync::Arc::new(llmgw_shared::progress::Quiet);
    let mut pieces = start(&http, blobs, 1, &progress, spool);
    let mut spooled = 0;
    for (i, want) in bodies.iter().enumerate() {
        let mut p = pieces.rx.recv().await.unwrap();
        assert_eq!(p.blob, i);
        let mut got = Vec::new();
        while let Some(m) = p.rx.recv().await {
            match m.unwrap() {
                Msg::Data(d) => got.extend_from_slice(&d),
                Msg::Flush => {}
                Msg::Spooled(path) => {
                    assert!(path.starts_with(&spool_path), "{}", path.display());
                    got.extend(std::fs::read(&path).unwrap());
                    spooled += 1;
                }
            }
        }
        assert_eq!(&got, want, "{}", FILES[i]);
    }
    // Two pieces wait in memory for one connection; the rest were spooled.
    assert_eq!(spooled, FILES.len() - 2);

    let gets: Vec<String> = fx
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET")
        .map(|r| r.path)
        .collect();
    let head = path(FILES[0]);
    let answered = gets.iter().rposition(|p| *p == head).unwrap();
    assert_eq!(gets.iter().filter(|p| **p == head).count(), 3, "{gets:?}");
    for f in &FILES[1..] {
        let at = gets
            .iter()
            .position(|p| *p == path(f))
            .unwrap_or_else(|| panic!("{f} never asked for: {gets:?}"));
        assert!(at < answered, "{f} waited for the head file: {gets:?}");
    }
    drop(pieces);
    assert!(!spool_path.exists(), "the spool was left behind");
}
