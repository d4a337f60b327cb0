//! `/readyz` says what the server knows: the store is being read, it
//! cannot be read and why (tried again at every look, so a fixed store
//! becomes ready without a restart), or ready with what it holds.

use std::time::{Duration, Instant};

use llmgw_mirror::Store;
use llmgw_mirror::{AppState, Readiness, router};

use crate::common::*;

#[test]
fn a_store_that_cannot_be_read_says_why_and_recovers_without_a_restart() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("store");
    std::fs::create_dir_all(&root).unwrap();
    // A file where bundles/ goes: listing it fails, even for root.
    std::fs::write(root.join("bundles"), b"not a folder").unwrap();
    let state = AppState::new(Store::at(&root), None, None, false);
    state.refresh(true);
    match state.readiness() {
        Readiness::Failing(why) => assert!(why.contains("Not a directory"), "{why}"),
        other => panic!("{other:?}"),
    }

    let rt = tokio::runtime::Runtime::new().unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move { axum::serve(listener, router(state)).await });
    let r = get(addr, "/readyz");
    assert_eq!(r.status, 503);
    assert!(
        r.text().starts_with("the store cannot be read: ") && r.text().contains("trying again"),
        "{}",
        r.text()
    );
    // Other routes say the same, not "being read".
    let r = get(addr, "/api/models/acme/tiny");
    assert_eq!(r.status, 503);
    assert!(r.text().contains("cannot be read"), "{}", r.text());

    // Fixed by hand: ready at the next look, with what it holds. The store
    // is read by a thread of its own while this runs, so the fix lands at
    // once: a bundle imported beside it, its blobs moved in, and its
    // bundles/ folder swapped with the file in one rename (with a remove
    // and then a rename, the thread could read an empty store between).
    let (m, blobs) = main_bundle();
    let blobs: Vec<&[u8]> = blobs.iter().map(Vec::as_slice).collect();
    let staged = d.path().join("staged");
    import(&staged, &m, &blobs);
    std::fs::rename(staged.join("blobs"), root.join("blobs")).unwrap();
    rustix::fs::renameat_with(
        rustix::fs::CWD,
        staged.join("bundles"),
        rustix::fs::CWD,
        root.join("bundles"),
        rustix::fs::RenameFlags::EXCHANGE,
    )
    .unwrap();
    let start = Instant::now();
    loop {
        let r = get(addr, "/readyz");
        if r.status == 200 {
            assert_eq!(r.text(), "ready: 1 bundle\n");
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{}", r.text());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(get(addr, "/api/models/acme/tiny").status, 200);
}

#[test]
fn an_empty_store_is_ready_and_says_it_holds_nothing() {
    let d = tempfile::tempdir().unwrap();
    let srv = serve(d.path());
    let start = Instant::now();
    let r = loop {
        let r = get(srv.addr, "/readyz");
        if r.status == 200 || start.elapsed() > Duration::from_secs(10) {
            break r;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("holds no bundles yet"), "{}", r.text());
    assert_eq!(
        srv.running.as_ref().unwrap().held,
        llmgw_mirror::Held::Empty
    );
}

/// A manifest whose read never ends (a FIFO nobody writes to, named like a
/// bundle) holds up the next index, never a request the current index
/// answers: the store is read by the state's own thread, not by requests.
#[test]
fn a_hung_manifest_read_never_delays_a_request() {
    let (_d, store, _) = store_with_main_bundle();
    let srv = serve(&store);
    let state = srv.running.as_ref().unwrap().state.clone();
    let before = state.generation();
    assert!(before >= 1, "the store was read, so an index was built");

    let fifo = store
        .join("bundles")
        .join(format!("{}.json", "ab".repeat(32)));
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();

    // For two seconds, long past when the refresh thread lists the FIFO
    // and blocks opening it, every answerable request is answered at once.
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(2) {
        for (target, status) in [
            ("/api/models/acme/tiny/revision/main", 200),
            ("/acme/tiny/resolve/main/config.json", 200),
            ("/readyz", 200),
            ("/metrics", 200),
        ] {
            let t = Instant::now();
            let r = get(srv.addr, target);
            assert_eq!(r.status, status, "{target}: {}", r.text());
            assert!(
                t.elapsed() < Duration::from_secs(1),
                "{target} took {:?} while a manifest read hung",
                t.elapsed()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        state.generation(),
        before,
        "no index can have been built while the FIFO's read hung"
    );

    // A writer that comes and goes ends the read (empty: not a manifest);
    // the thread goes on and builds the next index without that bundle.
    let (done, finished) = std::sync::mpsc::channel();
    let writer = fifo.clone();
    std::thread::spawn(move || {
        let _ = done.send(
            std::fs::OpenOptions::new()
                .write(true)
                .open(&writer)
                .map(drop),
        );
    });
    finished
        .recv_timeout(Duration::from_secs(10))
        .expect("the refresh thread never opened the FIFO")
        .unwrap();
    let start = Instant::now();
    while state.generation() == before {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no new index after the read ended"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(state.readiness(), Readiness::Ready { bundles: 1 });
    assert_eq!(
        get(srv.addr, "/api/models/acme/tiny/revision/main").status,
        200
    );
}
