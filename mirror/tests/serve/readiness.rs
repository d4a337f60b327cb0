//! `/readyz` says what the server knows: the store is being read, it
//! cannot be read and why (tried again at every look, so a fixed store
//! becomes ready without a restart), or ready with what it holds.

use std::time::{Duration, Instant};

use llmgw_mirror::serve::router;
use llmgw_mirror::serve::state::{AppState, Readiness};
use llmgw_mirror::store::Store;

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

    // Fixed by hand: ready at the next look, with what it holds.
    std::fs::remove_file(root.join("bundles")).unwrap();
    let (m, blobs) = main_bundle();
    let blobs: Vec<&[u8]> = blobs.iter().map(Vec::as_slice).collect();
    import(&root, &m, &blobs);
    let start = Instant::now();
    loop {
        let r = get(addr, "/readyz");
        if r.status == 200 {
            assert_eq!(r.text(), "ready: 1 bundles\n");
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
        llmgw_mirror::serve::store_check::Held::Empty
    );
}
