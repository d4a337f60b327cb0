//! A signature binds to its release: the SHA256SUMS of an old release,
//! signed once by the publisher, cannot be carried under a newer tag.

use crate::signed_store::*;

/// The publisher signed v0.9.0's checksums (`minisign -t "llmgw v0.9.0"`);
/// a bundle relabels that release as v1.0.0. The signature itself
/// verifies, but its trusted comment does not name v1.0.0: refused.
#[test]
fn a_relabelled_old_release_is_refused() {
    let env = Env::empty();
    let assets: &[(&str, &[u8])] = &[(
        "llmgw-linux-amd64.tar.gz",
        b"old llmgw 0.9.0 with a known hole",
    )];
    let sums = sums_text(assets);
    for (comment, case) in [
        ("llmgw v0.9.0", "older tag"),
        (
            "timestamp:1754784000\tfile:SHA256SUMS\thashed",
            "minisign's default comment, no tag",
        ),
        ("llmgw v1.0.0-rc1", "tag inside a longer word"),
    ] {
        let sig = env.key.sign_with_comment(sums.as_bytes(), comment);
        let mut kit = Kit::new();
        kit.llmgw_release_with(assets, sums.as_bytes(), &sig, &env.key.id);
        env.refuse_kit(
            case,
            &kit,
            &[
                "release acme/llmgw v1.0.0",
                "its signature is for another release",
                &format!("trusted comment \"{}\"", comment.replace('\t', "\\t")),
                "does not name the tag v1.0.0",
            ],
        );
    }
    // The same bytes signed for the tag they are carried under import.
    let sig = env.key.sign_with_comment(sums.as_bytes(), "llmgw v1.0.0");
    let mut kit = Kit::new();
    kit.llmgw_release_with(assets, sums.as_bytes(), &sig, &env.key.id);
    env.import_kit("bound", &kit);
}
