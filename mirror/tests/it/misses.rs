//! The miss log: a 404 on a route family the mirror serves is counted,
//! answered at `/-/misses` as a want-list, and written into the store's
//! state so a restart or another replica does not lose it.

use std::time::{Duration, Instant};

use super::common::*;

#[test]
fn misses_are_counted_listed_and_saved_in_the_store_state() {
    let (_dir, store, _) = store_with_main_bundle();
    let server = serve(&store);
    let wanted = "/acme/tiny/resolve/main/model-00002-of-00002.safetensors";
    for _ in 0..3 {
        assert_eq!(get(server.addr, wanted).status, 404);
    }
    assert_eq!(
        get(
            server.addr,
            "/ggml-org/llama.cpp/releases/download/b9999/x.zip"
        )
        .status,
        404
    );
    // Held names, and paths no route takes, are not misses.
    assert_eq!(
        get(server.addr, "/acme/tiny/resolve/main/config.json").status,
        200
    );
    assert_eq!(get(server.addr, "/no/such/route/at/all/here").status, 404);

    let list = get(server.addr, "/-/misses").json();
    assert_eq!(list["format"], "llmgw-want-list/1");
    let misses = list["misses"].as_array().unwrap();
    assert_eq!(misses.len(), 2, "{list}");
    assert_eq!(misses[0]["path"], wanted);
    assert_eq!(misses[0]["route"], "hub_resolve");
    assert_eq!(misses[0]["count"], 3);
    assert_eq!(misses[1]["route"], "github_download");

    let metrics = get(server.addr, "/metrics").text();
    assert!(
        metrics.contains("llmgw_mirror_misses_total{route=\"hub_resolve\"} 3"),
        "{metrics}"
    );

    // Written within the save interval (5 s), and read back as one list.
    let start = Instant::now();
    loop {
        let saved = llmgw_mirror::read_misses(&store.join("state"));
        if saved.misses.len() == 2 {
            assert_eq!(saved.misses[0].count, 3);
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "misses never saved: {saved:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(server);
    // A restarted server counts on from what it saved.
    let server = serve(&store);
    assert_eq!(get(server.addr, wanted).status, 404);
    let list = get(server.addr, "/-/misses").json();
    assert_eq!(list["misses"][0]["count"], 4, "{list}");
}
