//! A model image exists the moment its files do (#47 item 5): a 2 GiB
//! model is imported into a store a mirror is serving, and from the first
//! moment the Hub API lists the repository, its image answers by commit
//! (polled every 5 ms: never NAME_UNKNOWN), because import recorded the tar
//! layers' digests in its own pass; containerd's `ctr` pulls it at once.

use std::time::{Duration, Instant};

use super::OCI_ACCEPT;
use super::bundle_kit::{Kit, Server, import_bundle, stderr, stdout, write_dir};
use super::clients::{containerd, http};
use super::store::COMMIT;

#[test]
fn a_model_image_is_served_with_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    // A store served before the import, holding something else.
    let mut first = Kit::new();
    first.model_file("acme/other", "config.json", b"{\"a\":1}\n");
    write_dir(&dir.path().join("first"), &first.entries());
    let o = import_bundle(&dir.path().join("first"), &first.sha256(), &store, &[]);
    assert!(o.status.success(), "import: {}", stderr(&o));
    let server = Server::start(&store);

    let mut kit = Kit::new();
    kit.model_file("acme/big", "config.json", br#"{"model_type":"big"}"#);
    let weights: Vec<u8> = (0..(2u64 << 30)).map(|i| (i % 251) as u8).collect();
    kit.model_file("acme/big", "model.safetensors", &weights);
    drop(weights);
    let bundle = dir.path().join("big");
    write_dir(&bundle, &kit.entries());
    let sha = kit.sha256();
    drop(kit);
    let o = import_bundle(&bundle, &sha, &store, &[]);
    assert!(o.status.success(), "import: {}{}", stdout(&o), stderr(&o));

    let oci = format!("/v2/models/acme/big/manifests/{COMMIT}");
    let start = Instant::now();
    let mut polls = 0;
    loop {
        let (hub, _) = server.get("/api/models/acme/big/revision/main");
        // Asked after the Hub answered: the same index or a newer one.
        let image = http(&server.url, "GET", &oci, &[OCI_ACCEPT.to_string()]);
        polls += 1;
        if hub == 200 {
            assert_eq!(
                image.status,
                200,
                "the Hub lists acme/big but its image answers {} {} after {polls} polls",
                image.code(),
                image.message()
            );
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "never served");
        std::thread::sleep(Duration::from_millis(5));
    }
    let c = containerd(dir.path());
    let reference = format!(
        "{}/models/acme/big:{COMMIT}",
        server.url.trim_start_matches("http://")
    );
    let o = c.ctr(&[
        "images",
        "pull",
        "--plain-http",
        "--snapshotter",
        "native",
        &reference,
    ]);
    assert!(o.status.success(), "ctr pull: {}{}", stdout(&o), stderr(&o));
}
