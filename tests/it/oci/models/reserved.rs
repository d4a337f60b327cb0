//! No carried image takes a model's OCI names (#54 item 1): with `acme/tiny`
//! held and served as `models/acme/tiny` and `modelpack/acme/tiny`, a bundle
//! carrying its own image under those names (by the commit and by `main`,
//! as an unsigned bundle would) is refused at import naming the reserved
//! prefix, leaves the store as it was, and skopeo and containerd's `ctr`
//! still pull the model by its commit; `bundle create` refuses the same
//! names before it reads anything.

use super::bundle_kit::{Kit, fails, import_bundle, llmgw, s, snapshot, stdout, write_dir};
use super::clients::{containerd, http, need};
use super::store::{COMMIT, Served};
use super::{OCI_ACCEPT, stderr};
use crate::oci::serve::kit;

/// The model image's digest as the mirror serves it by `reference`.
fn served_digest(m: &Served, name: &str, reference: &str) -> String {
    http(
        &m.server.url,
        "HEAD",
        &format!("/v2/{name}/manifests/{reference}"),
        &[OCI_ACCEPT.to_string()],
    )
    .header("docker-content-digest")
}

#[test]
fn a_carried_image_never_takes_a_models_name() {
    need("skopeo", "apt-get install -y skopeo");
    let m = Served::new();
    let model = served_digest(&m, "models/acme/tiny", COMMIT);
    let pack = served_digest(&m, "modelpack/acme/tiny", COMMIT);

    for (name, tag, prefix) in [
        ("models/acme/tiny", COMMIT, "models/"),
        ("models/acme/tiny", "main", "models/"),
        ("modelpack/acme/tiny", COMMIT, "modelpack/"),
    ] {
        let mut blobs = kit::Blobs::default();
        let made = kit::image(&mut blobs, None, name, tag);
        let hostile = Kit {
            manifest: kit::manifest(vec![made.image], vec![]),
            blobs: blobs.bytes,
        };
        let bundle = m.path(&format!("hostile-{}-{tag}", prefix.trim_end_matches('/')));
        write_dir(&bundle, &hostile.entries());
        let before = snapshot(&m.store);
        let o = import_bundle(&bundle, &hostile.sha256(), &m.store, &[]);
        let err = fails(&o, 1);
        assert!(
            err.contains(&format!("under {prefix}")) && err.contains("the mirror makes itself"),
            "{name}:{tag}: {err}"
        );
        assert_eq!(
            snapshot(&m.store),
            before,
            "{name}:{tag}: the refusal changed the store"
        );
    }
    assert_eq!(served_digest(&m, "models/acme/tiny", COMMIT), model);
    assert_eq!(served_digest(&m, "modelpack/acme/tiny", COMMIT), pack);

    // The real clients, by commit: the model's own index.
    let o = std::process::Command::new("skopeo")
        .args(["inspect", "--raw", "--tls-verify=false"])
        .arg(format!("docker://{}/models/acme/tiny:{COMMIT}", m.host()))
        .output()
        .unwrap();
    assert!(o.status.success(), "skopeo: {}", stderr(&o));
    assert_eq!(
        format!("sha256:{}", llmgw_shared::Sha256::of(&o.stdout)),
        model
    );
    let c = containerd(m.dir.path());
    let reference = format!("{}/models/acme/tiny:{COMMIT}", m.host());
    let o = c.ctr(&[
        "images",
        "pull",
        "--plain-http",
        "--snapshotter",
        "native",
        &reference,
    ]);
    assert!(o.status.success(), "ctr pull: {}{}", stdout(&o), stderr(&o));
    let ls = stdout(&c.ctr(&["images", "ls"]));
    assert!(
        ls.lines()
            .any(|l| l.starts_with(&reference) && l.contains(&model)),
        "{ls}"
    );

    // Create refuses the names before it reads the layout or any network.
    let o = llmgw()
        .args([
            "bundle",
            "create",
            "--arch",
            "amd64",
            "--out",
            s(&m.path("never.tar")),
        ])
        .args(["--image", "models/acme/tiny:main=oci-layout:/nonexistent"])
        .output()
        .unwrap();
    let err = fails(&o, 2);
    assert!(err.contains("the mirror makes itself"), "{err}");
    assert!(!m.path("never.tar").exists());
}
