//! Types for the identifiers the code passes around: a sha256 digest, a
//! bundle's id (its manifest's sha256), a git object id, a repository id. Each is checked once, where it is made
//! (parsed from outside, or computed), and is then known good wherever it
//! goes: a [`Sha256`] is always 64 lower-case hex digits, so it can name a
//! file ([`crate::names`]' rule "names never become paths" holds by type).
//!
//! Each prints as its text (`Display`), compares and orders as its text,
//! and borrows as `&str`, so maps keyed by it are looked up with a `&str`.
//!
//! A digest keeps its hex digits inline (64 bytes for a sha256), not in a
//! `String` of its own: the mirror holds one per file held, and a heap
//! allocation each cost it 80 more bytes a file (issue 35).

use std::borrow::Borrow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::names::{self, UnsafeName};

/// A hex digest refused: not the number of hex digits expected (or, read
/// from a file this project wrote, not in lower case).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{what}: expected {digits} {}hex digits, found \"{}\"",
    if *.lower_case { "lower-case " } else { "" },
    crate::shown::shown(.found)
)]
pub struct BadHex {
    /// What the value is ("manifest sha256", "--sha256", ...).
    pub what: String,
    /// How many hex digits the value should have.
    pub digits: usize,
    /// Whether only lower case was accepted: a value read back from JSON
    /// this project wrote is taken exactly as written, so its bytes and
    /// the value agree.
    pub lower_case: bool,
    /// The value given, as it was (escaped when printed).
    pub found: String,
}

macro_rules! hex_id {
    ($(#[$doc:meta])* $name:ident, $digits:expr, $human:expr) => {
        $(#[$doc])*
        /// The lower-case ASCII hex digits, so the bytes are valid UTF-8
        /// and compare as the text does.
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
        pub struct $name([u8; $digits]);

        /// Hashes as its text, as `Borrow<str>` requires.
        impl std::hash::Hash for $name {
            fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
                self.as_str().hash(h)
            }
        }

        impl $name {
            /// How many hex digits it has.
            pub const DIGITS: usize = $digits;

            /// From text already checked to be `$digits` lower-case hex
            /// digits.
            fn from_checked(text: &str) -> Self {
                let mut digits = [0u8; $digits];
                digits.copy_from_slice(text.as_bytes());
                Self(digits)
            }

            /// Checks `text` (either case; surrounding white space is
            /// trimmed) and keeps it in lower case; `what` names the value
            /// in the error.
            pub fn parse(what: &str, text: &str) -> Result<Self, BadHex> {
                let t = text.trim();
                if t.len() == $digits && t.bytes().all(|b| b.is_ascii_hexdigit()) {
                    Ok(Self::from_checked(&t.to_ascii_lowercase()))
                } else {
                    Err(BadHex {
                        what: what.to_string(),
                        digits: $digits,
                        lower_case: false,
                        found: text.to_string(),
                    })
                }
            }

            /// Checks `text` as written by this project: exactly the
            /// lower-case hex digits, nothing around them. What JSON
            /// (a manifest, a have-list) is read with, so a value never
            /// differs from the bytes that carried it.
            pub fn parse_exact(what: &str, text: &str) -> Result<Self, BadHex> {
                if text.len() == $digits
                    && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
                {
                    Ok(Self::from_checked(text))
                } else {
                    Err(BadHex {
                        what: what.to_string(),
                        digits: $digits,
                        lower_case: true,
                        found: text.to_string(),
                    })
                }
            }

            /// A digest as raw bytes.
            pub fn from_bytes(bytes: &[u8; $digits / 2]) -> Self {
                Self::from_checked(&hex::encode(bytes))
            }

            /// The lower-case hex digits as bytes, without the UTF-8 check
            /// [`Self::as_str`] makes: what a hot loop compares or hashes.
            pub fn digits(&self) -> &[u8; $digits] {
                &self.0
            }

            /// The lower-case hex digits.
            pub fn as_str(&self) -> &str {
                match std::str::from_utf8(&self.0) {
                    Ok(text) => text,
                    // Every way of making one stores checked hex digits.
                    Err(_) => unreachable!("a {} holds only hex digits", stringify!($name)),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = BadHex;
            fn from_str(s: &str) -> Result<Self, BadHex> {
                Self::parse(stringify!($name), s)
            }
        }

        /// Reads as the text it is; only making one is checked.
        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                self.as_str()
            }
        }

        impl PartialEq<$name> for str {
            fn eq(&self, other: &$name) -> bool {
                self == other.as_str()
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.as_str()
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.as_str()
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                self.as_str()
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                self.as_str() == other
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.as_str().to_string()
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                Self::parse_exact($human, &text).map_err(serde::de::Error::custom)
            }
        }
    };
}

hex_id!(
    /// A sha256 digest: 64 lower-case hex digits.
    Sha256,
    64,
    "sha256"
);

hex_id!(
    /// A bundle's id: the sha256 of its manifest's canonical bytes, which
    /// names the manifest in a store (`bundles/<id>.json`), its signature
    /// (`<id>.json.minisig`) and the bundle in every report. A type of its
    /// own, not a [`Sha256`], so a blob's digest is never taken for a
    /// bundle's (the two are spelled the same and file in different places).
    BundleId,
    64,
    "manifest sha256"
);

hex_id!(
    /// A git object id (sha1): 40 lower-case hex digits; a blob's is the
    /// sha1 of `blob <len>\0` and its bytes, a tree's that of its entries.
    GitOid,
    40,
    "git object id"
);

hex_id!(
    /// A file's Xet hash, as the Hub lists it (`xetHash`, `X-Xet-Hash`):
    /// the Merkle hash of the file's content-defined chunks, spelt as
    /// Hugging Face's `MerkleHash::hex` spells it (64 lower-case hex
    /// digits, each 8-byte word little-endian), so it is compared as text.
    XetHash,
    64,
    "Xet hash"
);

impl Sha256 {
    /// The sha256 of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        use sha2::Digest;
        Self::from_checked(&hex::encode(sha2::Sha256::digest(bytes)))
    }
}

impl BundleId {
    /// The id of the manifest whose canonical bytes are `manifest`.
    pub fn of(manifest: &[u8]) -> Self {
        Self(Sha256::of(manifest).0)
    }

    /// The same digits as a [`Sha256`], for what hashes a manifest's bytes
    /// as any blob's (a [`crate::HashReader`]'s result, a store's key).
    pub fn sha256(&self) -> Sha256 {
        Sha256(self.0)
    }
}

/// A manifest's digest, once it is known to be the manifest's.
impl From<Sha256> for BundleId {
    fn from(sha: Sha256) -> Self {
        Self(sha.0)
    }
}

/// A repository id, `owner/name` (GitHub, the Hub), checked by
/// [`names::check_repo_id`]. Compares as given; [`RepoId::key`] is the
/// case-insensitive form GitHub and the Hub match by.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RepoId(String);

impl RepoId {
    /// Checks `text`; `what` names the value in the error.
    pub fn parse(what: &'static str, text: &str) -> Result<Self, UnsafeName> {
        names::check_repo_id(what, text)?;
        Ok(Self(text.to_string()))
    }

    /// The repository id as given (`owner/name`).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id as repositories are matched: lower case.
    pub fn key(&self) -> String {
        names::repo_key(&self.0)
    }
}

impl fmt::Display for RepoId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for RepoId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RepoId({})", self.0)
    }
}

impl AsRef<str> for RepoId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for RepoId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for RepoId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl From<RepoId> for String {
    fn from(id: RepoId) -> String {
        id.0
    }
}

impl std::ops::Deref for RepoId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for RepoId {
    type Err = UnsafeName;
    fn from_str(s: &str) -> Result<Self, UnsafeName> {
        Self::parse("repository id", s)
    }
}

/// Written as the text it is, so a manifest's bytes do not change.
impl Serialize for RepoId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Read strictly, with the one check every repository id has passed since
/// format 1 (a manifest's were checked by its validation before there was a
/// type), so whatever imported before still does.
impl<'de> Deserialize<'de> for RepoId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        repo_id_named("repository id", d)
    }
}

/// [`RepoId`]'s `Deserialize` for a release's repository, which a refusal
/// names as such (`#[serde(deserialize_with)]`).
pub(crate) fn release_repository<'de, D: Deserializer<'de>>(d: D) -> Result<RepoId, D::Error> {
    repo_id_named("release repository", d)
}

fn repo_id_named<'de, D: Deserializer<'de>>(what: &'static str, d: D) -> Result<RepoId, D::Error> {
    let text = String::deserialize(d)?;
    RepoId::parse(what, &text).map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_is_checked_once_and_lower_case() {
        let upper = "AB".repeat(32);
        let s = Sha256::parse("x", &format!(" {upper}\n")).unwrap();
        assert_eq!(s.as_str(), "ab".repeat(32));
        assert_eq!(s.to_string(), "ab".repeat(32));
        assert_eq!(s, "ab".repeat(32));
        for bad in [
            "",
            "ab",
            &"g".repeat(64),
            &"a".repeat(65),
            "../../etc/passwd",
        ] {
            let e = Sha256::parse("--sha256", bad).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with("--sha256: expected 64 hex digits"),
                "{e}"
            );
        }
        assert_eq!(
            Sha256::of(b"").as_str(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn git_oid_and_serde() {
        let g: GitOid = "A".repeat(40).parse().unwrap();
        assert_eq!(g.as_str(), "a".repeat(40));
        assert!(GitOid::parse("oid", &"a".repeat(64)).is_err());
        let json = serde_json::to_string(&g).unwrap();
        assert_eq!(json, format!("\"{}\"", "a".repeat(40)));
        let back: GitOid = serde_json::from_str(&json).unwrap();
        assert_eq!(back, g);
        assert!(serde_json::from_str::<Sha256>("\"x\"").is_err());
        // Read back exactly as written: no upper case, nothing around it.
        for bad in ["A".repeat(40), format!(" {}", "a".repeat(40))] {
            let e = serde_json::from_str::<GitOid>(&format!("\"{bad}\"")).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with("git object id: expected 40 lower-case hex digits"),
                "{e}"
            );
        }
        let mut m = std::collections::BTreeMap::new();
        m.insert(Sha256::of(b"a"), 1);
        assert_eq!(m.get(Sha256::of(b"a").as_str()), Some(&1));
    }

    #[test]
    fn bundle_ids_are_a_manifests_sha256_written_as_its_hex() {
        let id = BundleId::of(b"{}");
        assert_eq!(id.as_str(), Sha256::of(b"{}").as_str());
        assert_eq!(BundleId::from(Sha256::of(b"{}")), id);
        assert_eq!(id.sha256(), Sha256::of(b"{}"));
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, format!("\"{id}\""));
        assert_eq!(serde_json::from_str::<BundleId>(&json).unwrap(), id);
        let e = serde_json::from_str::<BundleId>("\"../x\"").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("manifest sha256: expected 64 lower-case hex digits"),
            "{e}"
        );
    }

    #[test]
    fn repo_ids() {
        let r = RepoId::parse("--model", "Acme/Tiny").unwrap();
        assert_eq!(r.to_string(), "Acme/Tiny");
        assert_eq!(r.key(), "acme/tiny");
        assert!(RepoId::parse("--model", "../x").is_err());
        assert!(RepoId::parse("--model", "a/b/c").is_err());
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(json, "\"Acme/Tiny\"");
        assert_eq!(serde_json::from_str::<RepoId>(&json).unwrap(), r);
        for bad in ["\"gpt2\"", "\"../x/y\"", "\"a/b\\u001b[2J\"", "\"\""] {
            let e = serde_json::from_str::<RepoId>(bad).unwrap_err().to_string();
            assert!(e.starts_with("repository id"), "{bad}: {e}");
        }
    }
}
