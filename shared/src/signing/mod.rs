//! minisign keys and signatures: how an llmgw release proves who made it.
//!
//! A release's `SHA256SUMS` is signed with minisign; the air-gapped side
//! trusts a short list of public keys and nothing else. Only prehashed
//! signatures (`ED`, the minisign default since 0.8) are accepted: legacy
//! ones sign the raw file and are refused so that one policy covers every
//! file size.
//!
//! A signature of a release's `SHA256SUMS` is bound to that release by its
//! trusted comment (the signed text `minisign -S -t` sets): it must name the
//! release's tag as a whole word ([`comment_names_tag`]), e.g.
//! `minisign -S -t "llmgw v1.4.0" -m SHA256SUMS`. Otherwise the checksums
//! of an old release, signed once, could be carried under a newer tag.
//!
//! Key ids are shown as minisign's CLI shows them: the 8 id bytes read as a
//! little-endian integer, in upper-case hex without padding, so an operator
//! can compare them with what `minisign -G` printed.

use crate::shown::shown;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use thiserror::Error;

/// Why a key or signature was refused.
#[derive(Debug, Error)]
pub enum SigningError {
    #[error(
        "{what} is not a minisign public key (expected the two-line file `minisign -G` writes: \
         an untrusted comment, then a base64 line starting with RW)"
    )]
    /// The file is not a minisign public key.
    BadPublicKey {
        /// Where the key came from (a file, a flag).
        what: String,
        /// What is wrong with it, said by the chain after the message (and
        /// its own cause, if any, after it).
        #[source]
        reason: KeyFault,
    },
    #[error("{what} is not a minisign signature")]
    /// The file is not a minisign signature.
    BadSignature {
        /// The signature file.
        what: String,
        /// What is wrong with it, said by the chain after the message (and
        /// its own cause, if any, after it).
        #[source]
        reason: SignatureFault,
    },
    #[error(
        "{what} is a legacy minisign signature (algorithm Ed, made with `minisign -l`); only \
         prehashed signatures (ED) are accepted: sign again without -l"
    )]
    /// A legacy (non-prehashed) minisign signature, which is refused.
    LegacySignature {
        /// The signature file.
        what: String,
    },
    #[error(
        "{what} was signed by key {signed_by}, which is not trusted here (trusted: {trusted}){}",
        fix.as_deref().map(|f| format!("; {f}")).unwrap_or_default()
    )]
    /// A good signature by a key that is not trusted for this.
    UntrustedKey {
        /// What was signed (a file, a bundle's manifest).
        what: String,
        /// The key id the signature names.
        signed_by: String,
        /// The key ids trusted here, to compare by eye.
        trusted: String,
        /// How to trust a key, in the words of the command at hand (a flag
        /// of `bundle create`, `bundle trust add` for a store); see
        /// [`SigningError::with_fix`].
        fix: Option<String>,
    },
    /// The signature does not match the bytes: they or it were changed.
    #[error(
        "{what} does not verify with trusted key {key_id}: the signed file or the signature was \
         changed"
    )]
    Invalid {
        /// What was signed.
        what: String,
        /// The trusted key the signature names.
        key_id: String,
        /// minisign's words for the mismatch.
        #[source]
        source: minisign_verify::Error,
    },
    #[error(
        "{what} verifies, but its signature is for another release: its trusted comment \"{}\" \
         does not name the tag {tag} as a whole word; the publisher signs each release with its \
         tag in the comment (`minisign -S -t \"llmgw {tag}\"`), so this signature was made for \
         different checksums or the release was relabelled; do not use it",
        shown(.comment)
    )]
    /// A good signature of another release's checksums.
    WrongRelease {
        /// What was signed.
        what: String,
        /// The release tag expected in the trusted comment.
        tag: String,
        /// The trusted comment found (untrusted text, escaped when printed).
        comment: String,
    },
}

/// What is wrong with a public key file: the cause of
/// [`SigningError::BadPublicKey`]; a decoder's own words are this fault's
/// source, not its text.
#[derive(Debug, Error)]
pub enum KeyFault {
    /// Only comments, or nothing.
    #[error("it has no key line")]
    NoKeyLine,
    /// The key line does not decode.
    #[error("the key line is not base64")]
    NotBase64(#[source] base64::DecodeError),
    /// The decoded key has the wrong size.
    #[error("the key is {0} bytes, not 42")]
    Length(usize),
    /// The key is for another algorithm.
    #[error("the key algorithm is not Ed25519 (Ed)")]
    NotEd25519,
    /// minisign itself refuses the key.
    #[error("minisign cannot read it")]
    Rejected(#[source] minisign_verify::Error),
}

/// What is wrong with a signature file: the cause of
/// [`SigningError::BadSignature`]; a decoder's own words are this fault's
/// source, not its text.
#[derive(Debug, Error)]
pub enum SignatureFault {
    /// The file is not UTF-8.
    #[error("it is not text")]
    NotText,
    /// The signature line is missing.
    #[error("it has fewer than 4 lines")]
    TooFewLines,
    /// The signature line does not decode.
    #[error("the signature line is not base64")]
    NotBase64(#[source] base64::DecodeError),
    /// The decoded signature has the wrong size.
    #[error("the signature is {0} bytes, not 74")]
    Length(usize),
    /// The signature is for another algorithm.
    #[error("its algorithm is neither ED nor Ed")]
    Algorithm,
    /// minisign itself refuses the signature.
    #[error("minisign cannot read it")]
    Rejected(#[source] minisign_verify::Error),
    /// A release carries no signature file at all.
    #[error(
        "the release has no {name}, so it is not signed and is not carried; the release has: \
         {release_has}"
    )]
    Absent {
        /// The signature file's name.
        name: String,
        /// The release's asset names, to compare by eye.
        release_has: String,
    },
}

impl SigningError {
    /// The same error; an untrusted key's now says how to trust one with
    /// the command at hand (`--trust KEY.pub`, `llmgw bundle trust add`).
    pub fn with_fix(self, fix: impl Into<String>) -> Self {
        match self {
            SigningError::UntrustedKey {
                what,
                signed_by,
                trusted,
                ..
            } => SigningError::UntrustedKey {
                what,
                signed_by,
                trusted,
                fix: Some(fix.into()),
            },
            other => other,
        }
    }
}

/// A minisign public key, with its id.
#[derive(Clone)]
pub struct PublicKey {
    id: [u8; 8],
    key: minisign_verify::PublicKey,
    /// The key line (base64), which is the key's canonical text.
    base64: String,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", self.key_id())
    }
}

impl PublicKey {
    /// Reads a public key file's text (`what` names it in errors). The
    /// untrusted comment line is optional and ignored: it is not signed.
    pub fn parse(what: &str, text: &str) -> Result<Self, SigningError> {
        let bad = |reason: KeyFault| SigningError::BadPublicKey {
            what: what.to_string(),
            reason,
        };
        let line = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with("untrusted comment:"))
            .ok_or_else(|| bad(KeyFault::NoKeyLine))?;
        let raw = BASE64
            .decode(line)
            .map_err(|e| bad(KeyFault::NotBase64(e)))?;
        if raw.len() != 42 {
            return Err(bad(KeyFault::Length(raw.len())));
        }
        if &raw[..2] != b"Ed" {
            return Err(bad(KeyFault::NotEd25519));
        }
        let key = minisign_verify::PublicKey::from_base64(line)
            .map_err(|e| bad(KeyFault::Rejected(e)))?;
        let mut id = [0u8; 8];
        id.copy_from_slice(&raw[2..10]);
        Ok(Self {
            id,
            key,
            base64: line.to_string(),
        })
    }

    /// The key id as the minisign CLI prints it.
    pub fn key_id(&self) -> String {
        key_id_text(&self.id)
    }

    /// The file text this project writes for the key: minisign's own format.
    pub fn to_file_text(&self) -> String {
        format!(
            "untrusted comment: minisign public key {}\n{}\n",
            self.key_id(),
            self.base64
        )
    }
}

/// A parsed `.minisig` file.
pub struct Signature {
    id: [u8; 8],
    sig: minisign_verify::Signature,
}

impl std::fmt::Debug for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signature(by {})", self.key_id())
    }
}

impl Signature {
    /// Reads a signature file's text. Legacy signatures are refused here.
    pub fn parse(what: &str, text: &str) -> Result<Self, SigningError> {
        let bad = |reason: SignatureFault| SigningError::BadSignature {
            what: what.to_string(),
            reason,
        };
        let line = text
            .lines()
            .nth(1)
            .map(str::trim)
            .ok_or_else(|| bad(SignatureFault::TooFewLines))?;
        let raw = BASE64
            .decode(line)
            .map_err(|e| bad(SignatureFault::NotBase64(e)))?;
        if raw.len() != 74 {
            return Err(bad(SignatureFault::Length(raw.len())));
        }
        match &raw[..2] {
            b"ED" => {}
            b"Ed" => {
                return Err(SigningError::LegacySignature {
                    what: what.to_string(),
                });
            }
            _ => return Err(bad(SignatureFault::Algorithm)),
        }
        let sig = minisign_verify::Signature::decode(text)
            .map_err(|e| bad(SignatureFault::Rejected(e)))?;
        let mut id = [0u8; 8];
        id.copy_from_slice(&raw[2..10]);
        Ok(Self { id, sig })
    }

    /// The id of the key that made the signature.
    pub fn key_id(&self) -> String {
        key_id_text(&self.id)
    }

    /// The signed trusted comment.
    pub fn trusted_comment(&self) -> &str {
        self.sig.trusted_comment()
    }
}

/// Verifies `data` (whose name `what` is used in errors) against a
/// signature with whichever trusted key made it, and returns that key's id.
pub fn verify_with_trusted(
    what: &str,
    data: &[u8],
    signature: &Signature,
    trusted: &[PublicKey],
) -> Result<String, SigningError> {
    let Some(key) = trusted.iter().find(|k| k.id == signature.id) else {
        let mut ids: Vec<String> = trusted.iter().map(PublicKey::key_id).collect();
        ids.sort();
        return Err(SigningError::UntrustedKey {
            what: what.to_string(),
            signed_by: signature.key_id(),
            trusted: if ids.is_empty() {
                "none".to_string()
            } else {
                ids.join(", ")
            },
            fix: None,
        });
    };
    key.key
        .verify(data, &signature.sig, false)
        .map_err(|source| SigningError::Invalid {
            what: what.to_string(),
            key_id: key.key_id(),
            source,
        })?;
    Ok(key.key_id())
}

/// Whether a trusted comment names `tag` as a whole word: the tag appears
/// with neither side touching a character that could continue a tag
/// (letters, digits, `.`, `-`, `_`, `+`). So `"llmgw v1.4.0"` and
/// `"timestamp:1\tfile:SHA256SUMS\ttag:v1.4.0"` name `v1.4.0`, and
/// `"llmgw v1.4.0-rc1"` or `"llmgw v1.4.01"` do not.
pub fn comment_names_tag(comment: &str, tag: &str) -> bool {
    let continues = |c: char| c.is_alphanumeric() || matches!(c, '.' | '-' | '_' | '+');
    if tag.is_empty() {
        return false;
    }
    comment.match_indices(tag).any(|(at, _)| {
        let before = comment[..at].chars().next_back();
        let after = comment[at + tag.len()..].chars().next();
        !before.is_some_and(continues) && !after.is_some_and(continues)
    })
}

/// Checks that a verified signature was made for the release `tag`; `what`
/// names the signed file in the error.
pub fn check_release_comment(what: &str, sig: &Signature, tag: &str) -> Result<(), SigningError> {
    if comment_names_tag(sig.trusted_comment(), tag) {
        Ok(())
    } else {
        Err(SigningError::WrongRelease {
            what: what.to_string(),
            tag: tag.to_string(),
            comment: sig.trusted_comment().to_string(),
        })
    }
}

fn key_id_text(id: &[u8; 8]) -> String {
    format!("{:X}", u64::from_le_bytes(*id))
}

#[cfg(test)]
mod tests;
