//! Removing a bundle while the mirror serves it: `mirror remove` then
//! `mirror gc` take the bundle's manifest and then its blobs away before
//! the refresh thread (every 100 ms) has read the store again. A file of
//! that bundle answers 200 while its bytes are there and 404 once they are
//! gone, never 500 (a 500 says the store is damaged, and it is not).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use super::common::*;
use llmgw_mirror::{GcOptions, Store, gc, remove_bundle};

/// HEAD on a file of a bundle removed and collected while it is served,
/// every 5 ms from before the removal until well after the index caught
/// up: 200s, then 404s, and not one 500 in between.
#[test]
fn a_file_removed_and_collected_while_served_is_404_never_500() {
    let (_keep, store, id) = store_with_main_bundle();
    let server = serve(&store);
    let addr = server.addr;
    let path = "/acme/tiny/resolve/main/tiny-Q8_0.gguf";
    assert_eq!(raw(addr, "HEAD", path.as_bytes(), &[]).status, 200);
    let removed = Arc::new(AtomicBool::new(false));
    let poller = {
        let removed = Arc::clone(&removed);
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            let mut until = None;
            loop {
                seen.push(raw(addr, "HEAD", path.as_bytes(), &[]).status);
                if until.is_none() && removed.load(Ordering::Acquire) {
                    // Long past the refresh thread's next look (100 ms).
                    until = Some(Instant::now() + Duration::from_millis(600));
                }
                if until.is_some_and(|t| Instant::now() > t) {
                    return seen;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    std::thread::sleep(Duration::from_millis(30));
    let store_at = Store::at(&store);
    remove_bundle(&store_at, &id).unwrap();
    let report = gc(
        &store_at,
        GcOptions {
            dry_run: false,
            grace: Duration::ZERO,
            now: SystemTime::now(),
        },
    )
    .unwrap();
    assert!(!report.blobs_removed.is_empty(), "gc removed no blob");
    removed.store(true, Ordering::Release);
    let seen = poller.join().unwrap();
    assert!(
        !seen.contains(&500),
        "a 500 while the index caught up: {seen:?}"
    );
    assert_eq!(seen.first(), Some(&200), "{seen:?}");
    assert_eq!(seen.last(), Some(&404), "{seen:?}");
    assert!(
        seen.iter().all(|s| *s == 200 || *s == 404),
        "only 200 then 404: {seen:?}"
    );
    let body = raw(addr, "GET", path.as_bytes(), &[]);
    assert_eq!(body.status, 404);
}
