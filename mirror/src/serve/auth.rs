//! The optional bearer token (`--token-file`).
//!
//! Hugging Face clients send `Authorization: Bearer <HF_TOKEN>`, GitHub
//! clients `Bearer <t>` or `token <t>`. Both sides are hashed before they
//! are compared, and the digests compared in constant time, so neither the
//! token's bytes nor its length leak through timing.

use http::HeaderMap;

use super::error::TokenError;
use sha2::{Digest, Sha256};

/// The sha256 the server keeps instead of the token.
pub fn token_digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Whether the request carries the token.
pub fn authorized(expected: &[u8; 32], headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let Some((scheme, given)) = value.trim().split_once(' ') else {
        return false;
    };
    if !(scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("token")) {
        return false;
    }
    constant_time_eq(expected, &token_digest(given.trim()))
}

fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b.iter()) {
        diff |= x ^ y;
    }
    // black_box keeps the compiler from turning the fold into an early exit.
    std::hint::black_box(diff) == 0
}

/// HMAC-SHA256 of `text` under `key` (RFC 2104), as hex: what a URL the
/// mirror hands out without its token carries (a Xet xorb URL), so it
/// works only as given. Keyed with the token's digest, which never leaves
/// the server.
pub fn sign(key: &[u8; 32], text: &str) -> String {
    let pad = |byte: u8| -> [u8; 64] {
        let mut p = [byte; 64];
        for (p, k) in p.iter_mut().zip(key) {
            *p ^= k;
        }
        p
    };
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(text.as_bytes())
        .finalize();
    hex::encode(
        Sha256::new()
            .chain_update(pad(0x5c))
            .chain_update(inner)
            .finalize(),
    )
}

/// Whether `sig` is [`sign`]`(key, text)`, compared in constant time.
pub fn signed(key: &[u8; 32], text: &str, sig: &str) -> bool {
    let mut want = [0u8; 32];
    let mut got = [0u8; 32];
    let _ = hex::decode_to_slice(sign(key, text), &mut want);
    hex::decode_to_slice(sig, &mut got).is_ok() && constant_time_eq(&want, &got)
}

/// Reads a token file: the token is its content, surrounding whitespace
/// removed.
pub fn read_token_file(path: &std::path::Path) -> Result<String, TokenError> {
    // A token is a line; 64 KiB is far more, and /dev/zero never ends.
    let bytes = crate::store::fsutil::read_bounded(path, 64 * 1024).map_err(TokenError::Read)?;
    let path = path.to_path_buf();
    let text = String::from_utf8(bytes).map_err(|_| TokenError::NotText { path: path.clone() })?;
    let token = text.trim();
    if token.is_empty() {
        return Err(TokenError::Empty { path });
    }
    if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(TokenError::NotOneWord { path });
    }
    Ok(token.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(v: &str) -> HeaderMap {
        let mut m = HeaderMap::new();
        m.insert(http::header::AUTHORIZATION, v.parse().unwrap());
        m
    }

    #[test]
    fn schemes_and_mismatches() {
        let d = token_digest("s3cret");
        assert!(authorized(&d, &h("Bearer s3cret")));
        assert!(authorized(&d, &h("bearer s3cret")));
        assert!(authorized(&d, &h("token s3cret")));
        assert!(!authorized(&d, &h("Bearer s3cre")));
        assert!(!authorized(&d, &h("Basic s3cret")));
        assert!(!authorized(&d, &h("s3cret")));
        assert!(!authorized(&d, &HeaderMap::new()));
    }

    #[test]
    fn signatures_are_rfc_4231_hmac_sha256() {
        // RFC 4231 test case 2 takes a 4-byte key; ours are 32 bytes,
        // zero-padded to the block as HMAC pads any short key.
        let mut key = [0u8; 32];
        key[..4].copy_from_slice(b"Jefe");
        assert_eq!(
            sign(&key, "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let s = sign(&key, "a");
        assert!(signed(&key, "a", &s));
        assert!(!signed(&key, "b", &s));
        assert!(!signed(&key, "a", "zz"));
    }

    /// What the operator reads: the error and its causes.
    fn read_token_file(p: &std::path::Path) -> Result<String, String> {
        super::read_token_file(p).map_err(|e| llmgw_shared::chain(&e))
    }

    #[test]
    fn token_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        std::fs::write(&p, "abc\n").unwrap();
        assert_eq!(read_token_file(&p).unwrap(), "abc");
        std::fs::write(&p, "\n").unwrap();
        assert!(read_token_file(&p).unwrap_err().contains("is empty"));
        std::fs::write(&p, "a b").unwrap();
        assert!(
            read_token_file(&p)
                .unwrap_err()
                .contains("more than one word")
        );
        let err = read_token_file(std::path::Path::new("/dev/zero")).unwrap_err();
        assert!(
            err.contains("/dev/zero is larger than 65536 bytes"),
            "{err}"
        );
        let err = read_token_file(&dir.path().join("missing")).unwrap_err();
        assert!(err.contains("cannot read the token file"), "{err}");
    }
}
