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

    // The 2 GiB file is written to the bundle as it is hashed, never held
    // in this process (whose size every child spawned meanwhile would
    // inherit in its peak RSS).
    let mut kit = Kit::new();
    kit.model_file("acme/big", "config.json", br#"{"model_type":"big"}"#);
    let bundle = dir.path().join("big");
    let weights = write_weights(&bundle.join("weights.tmp"), 2 << 30);
    kit.manifest.repos[0].files.push(weights.clone());
    write_dir(&bundle, &kit.entries());
    std::fs::rename(
        bundle.join("weights.tmp"),
        bundle.join(format!("blobs/sha256/{}", weights.sha256)),
    )
    .unwrap();
    let sha = kit.sha256();
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

/// Writes `size` bytes of a repeating pattern to `path`, hashing them as
/// they go; the Hub file (LFS) they are.
fn write_weights(path: &std::path::Path, size: u64) -> llmgw_shared::manifest::HfFile {
    use sha2::Digest;
    use std::io::Write;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut h = sha2::Sha256::new();
    let chunk: Vec<u8> = (0..(251u32 * 4096)).map(|i| (i % 251) as u8).collect();
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n]).unwrap();
        h.update(&chunk[..n]);
        left -= n as u64;
    }
    f.flush().unwrap();
    let digest: [u8; 32] = h.finalize().into();
    let sha256 = llmgw_shared::Sha256::from_bytes(&digest);
    // An LFS file is described by its sha256 and size alone; `describing`
    // of a stand-in with those gives every other field.
    let mut file = llmgw_shared::manifest::HfFile::describing("model.safetensors", b"", true);
    file.size = size;
    file.git_oid =
        llmgw_shared::GitOid::of_blob(llmgw_shared::lfs_pointer(sha256.as_str(), size).as_bytes());
    file.publisher_digests[0].value = sha256.to_string();
    file.sha256 = sha256;
    file
}
