//! Test-only bundle ids made from a short readable name (`id("s1")`) and
//! read back to it (`name(&id)`): a test keeps calling its bundles `s1` or
//! `u2` while the code under test takes only real [`BundleId`]s. The name's
//! bytes in hex, padded with zeros to 64 digits, so distinct names give
//! distinct ids and sort as the names do.

use llmgw_shared::BundleId;

/// The id a test calls `name` (at most 32 bytes).
pub fn id(name: &str) -> BundleId {
    let mut hex = hex::encode(name);
    assert!(hex.len() <= BundleId::DIGITS, "a test id's name is short");
    hex.extend(std::iter::repeat_n('0', BundleId::DIGITS - hex.len()));
    BundleId::parse_exact("test bundle id", &hex).expect("hex digits")
}

/// The name [`id`] made `id` from.
pub fn name(id: &BundleId) -> String {
    let bytes = hex::decode(id.as_str()).expect("hex digits");
    String::from_utf8(bytes.into_iter().take_while(|b| *b != 0).collect()).expect("a name")
}

#[test]
fn names_round_trip() {
    assert_eq!(name(&id("s1")), "s1");
    assert!(id("a") < id("b"));
}

/// A held bundle a test calls `name`.
pub fn held(name: &str, manifest: llmgw_shared::manifest::Manifest) -> crate::store::Held {
    crate::store::Held {
        id: id(name),
        manifest,
    }
}
