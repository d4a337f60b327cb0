//! Credentials and where they may go: a token that never prints itself,
//! the origin it is scoped to, and URLs as shown in messages (without the
//! userinfo or query where signed URLs keep theirs).

use reqwest::Url;

/// A bearer token that never shows itself.
#[derive(Clone)]
pub struct Token(pub(super) String);

impl Token {
    /// The token, trimmed; `None` when nothing is left, so an empty
    /// `HF_TOKEN` sends no `Authorization` at all.
    pub fn new(value: String) -> Option<Self> {
        let v = value.trim().to_string();
        (!v.is_empty()).then_some(Self(v))
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// The origin a credential is scoped to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Origin {
    scheme: String,
    host: String,
    port: Option<u16>,
}

impl Origin {
    pub(super) fn of(url: &Url) -> Self {
        Self {
            scheme: url.scheme().to_string(),
            host: url.host_str().unwrap_or("").to_ascii_lowercase(),
            port: url.port_or_known_default(),
        }
    }
}

/// A URL as shown in messages: without userinfo or query, which is where
/// a signed storage URL keeps its credentials.
pub fn redact(url: &Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    let had_query = u.query().is_some();
    u.set_query(None);
    if had_query {
        format!("{u}?…")
    } else {
        u.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_never_prints() {
        let t = Token::new("hf_secret".into()).unwrap();
        assert_eq!(format!("{t:?}"), "***");
        assert!(Token::new("  ".into()).is_none());
    }

    #[test]
    fn redaction() {
        let u = Url::parse("https://u:p@cdn.example/x?X-Amz-Signature=abc").unwrap();
        let r = redact(&u);
        assert!(!r.contains("abc") && !r.contains("u:p"), "{r}");
    }
}
