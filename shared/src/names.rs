//! Checks on names that come from outside: paths inside a bundle or a model
//! repository, repository ids, release tags and asset names.
//!
//! Every such name ends up as part of a path on disk or a URL, so a name that
//! could climb out of its folder (`..`), start at the root, hide a second
//! path behind a backslash or a NUL, confuse a terminal with control
//! characters or reorder what a person reads with bidi overrides is refused
//! before it is used for anything. A refused name is printed through
//! [`crate::shown`]: escaped and cut short.
//!
//! Repository ids compare case-insensitively ([`repo_key`]): GitHub and the
//! Hub treat `ACME/Tiny` and `acme/tiny` as one repository, so the mirror
//! does too wherever it matches or merges them.

use thiserror::Error;

use crate::shown::{is_invisible_or_bidi, shown};

/// Why a name was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{what} \"{}\" is not a safe name: {reason}", shown(.name))]
pub struct UnsafeName {
    /// What kind of name it is ("file path", "repository id", ...).
    pub what: &'static str,
    /// The name as given.
    pub name: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl UnsafeName {
    fn new(what: &'static str, name: &str, reason: &'static str) -> Self {
        Self {
            what,
            name: name.to_string(),
            reason,
        }
    }
}

/// Longest path accepted; far beyond any real repository file.
const MAX_PATH_LEN: usize = 4096;

/// A relative path made of `/`-separated parts, none empty, `.` or `..`.
///
/// This is the shape of a file inside a Hugging Face repository and of an
/// entry inside a bundle.
pub fn check_relative_path(what: &'static str, path: &str) -> Result<(), UnsafeName> {
    if path.is_empty() {
        return Err(UnsafeName::new(what, path, "it is empty"));
    }
    if path.len() > MAX_PATH_LEN {
        return Err(UnsafeName::new(what, path, "it is longer than 4096 bytes"));
    }
    check_characters(what, path)?;
    if path.starts_with('/') {
        return Err(UnsafeName::new(
            what,
            path,
            "it is absolute (starts with '/')",
        ));
    }
    for part in path.split('/') {
        match part {
            "" => {
                return Err(UnsafeName::new(
                    what,
                    path,
                    "it has an empty part ('//' or a trailing '/')",
                ));
            }
            "." | ".." => return Err(UnsafeName::new(what, path, "it has a '.' or '..' part")),
            _ => {}
        }
    }
    Ok(())
}

/// One path part: a file name such as a release asset's.
pub fn check_file_name(what: &'static str, name: &str) -> Result<(), UnsafeName> {
    check_relative_path(what, name)?;
    if name.contains('/') {
        return Err(UnsafeName::new(what, name, "it contains '/'"));
    }
    Ok(())
}

/// `owner/name`, as GitHub and Hugging Face spell repositories: two parts of
/// letters, digits, `-`, `_` and `.`, neither starting with `.`.
pub fn check_repo_id(what: &'static str, id: &str) -> Result<(), UnsafeName> {
    let parts: Vec<&str> = id.split('/').collect();
    if parts.len() != 2 {
        return Err(UnsafeName::new(
            what,
            id,
            "it is not of the form owner/name",
        ));
    }
    for part in parts {
        if part.is_empty() || part.starts_with('.') || part.len() > 96 {
            return Err(UnsafeName::new(
                what,
                id,
                "each of owner and name must be 1 to 96 characters and not start with '.'",
            ));
        }
        if !part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(UnsafeName::new(
                what,
                id,
                "only letters, digits, '-', '_' and '.' are allowed",
            ));
        }
    }
    Ok(())
}

/// A git ref such as a release tag or a branch: like a relative path (so
/// `refs/pr/1` passes) but with no characters git itself forbids in refs.
pub fn check_ref_name(what: &'static str, name: &str) -> Result<(), UnsafeName> {
    check_relative_path(what, name)?;
    if name
        .chars()
        .any(|c| matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '['))
    {
        return Err(UnsafeName::new(
            what,
            name,
            "it contains a character git does not allow in a ref",
        ));
    }
    Ok(())
}

/// The form of a repository id that compares as GitHub and the Hub
/// compare them: ASCII case folded (ids are ASCII, see [`check_repo_id`]).
pub fn repo_key(id: &str) -> String {
    id.to_ascii_lowercase()
}

/// 64 lower-case hex digits: a sha256 as this project writes it.
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// 40 lower-case hex digits: a git commit or blob id.
pub fn is_sha1_hex(s: &str) -> bool {
    s.len() == 40
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A Python project name as PEP 503 compares them: lower case, every run
/// of `-`, `_` and `.` one `-` (`re.sub(r"[-_.]+", "-", name).lower()`).
/// `Foo__Bar.baz` and `foo-bar-baz` are one project.
pub fn pep503_normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_run = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !in_run {
                out.push('-');
            }
            in_run = true;
        } else {
            in_run = false;
            out.extend(c.to_lowercase());
        }
    }
    out
}

fn check_characters(what: &'static str, name: &str) -> Result<(), UnsafeName> {
    for c in name.chars() {
        if c == '\0' {
            return Err(UnsafeName::new(what, name, "it contains a NUL character"));
        }
        if c == '\\' {
            return Err(UnsafeName::new(what, name, "it contains a backslash"));
        }
        if c.is_control() {
            return Err(UnsafeName::new(
                what,
                name,
                "it contains a control character",
            ));
        }
        if is_invisible_or_bidi(c) {
            return Err(UnsafeName::new(
                what,
                name,
                "it contains an invisible or text-direction character (such as U+202E)",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths() {
        for ok in ["a", "config.json", "sub/dir/vocab.txt", "a b+c.txt", "x..y"] {
            assert_eq!(check_relative_path("path", ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("", "empty"),
            ("/etc/passwd", "absolute"),
            ("../x", "'..'"),
            ("a/../b", "'..'"),
            ("a/./b", "'..'"),
            ("a//b", "empty part"),
            ("a/", "empty part"),
            ("a\\b", "backslash"),
            ("a\0b", "NUL"),
            ("a\nb", "control"),
            ("a\u{1b}[2Jb", "control"),
            ("gpj\u{202e}.exe", "text-direction"),
            ("a\u{200b}b", "invisible"),
        ] {
            let err = check_relative_path("file path", bad).unwrap_err();
            assert!(err.to_string().contains(why), "{bad:?}: {err}");
            assert!(err.to_string().starts_with("file path "), "{err}");
        }
    }

    #[test]
    fn refused_names_are_printed_escaped_and_short() {
        let err = check_file_name(
            "asset name",
            &format!("\u{1b}]0;x\u{7}{}", "n".repeat(10_000)),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("asset name \"\\u{1b}]0;x\\u{7}nnn"),
            "{err}"
        );
        assert!(err.len() < 400, "{}", err.len());
        assert!(!err.chars().any(char::is_control), "{err}");
    }

    #[test]
    fn repo_keys_fold_case() {
        assert_eq!(repo_key("ILKER/LLMGW"), repo_key("ilker/llmgw"));
    }

    #[test]
    fn pep503_names() {
        assert_eq!(pep503_normalize("Foo__Bar.baz"), "foo-bar-baz");
        assert_eq!(pep503_normalize("huggingface_hub"), "huggingface-hub");
        assert_eq!(pep503_normalize("a-_.b"), "a-b");
        assert_eq!(pep503_normalize("_x_"), "-x-");
        assert_eq!(pep503_normalize("vllm"), "vllm");
    }

    #[test]
    fn file_names_have_no_slash() {
        assert!(check_file_name("asset", "llama-b1-bin-ubuntu-x64.tar.gz").is_ok());
        let err = check_file_name("asset", "a/b").unwrap_err();
        assert!(err.to_string().contains("contains '/'"));
    }

    #[test]
    fn repo_ids() {
        assert!(check_repo_id("repo", "ggml-org/llama.cpp").is_ok());
        assert!(check_repo_id("repo", "acme/tiny_model-1.5").is_ok());
        for bad in [
            "acme",
            "a/b/c",
            "../x",
            "a/..",
            "a/.hidden",
            "a/b c",
            "/b",
            "a/",
        ] {
            assert!(check_repo_id("repo", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ref_names() {
        assert!(check_ref_name("tag", "b6123").is_ok());
        assert!(check_ref_name("rev", "refs/pr/1").is_ok());
        assert!(check_ref_name("rev", "main~1").is_err());
        assert!(check_ref_name("rev", "../main").is_err());
    }

    #[test]
    fn hex_shapes() {
        assert!(is_sha256_hex(&"a".repeat(64)));
        assert!(!is_sha256_hex(&"A".repeat(64)));
        assert!(!is_sha256_hex(&"a".repeat(63)));
        assert!(is_sha1_hex(&"0".repeat(40)));
        assert!(!is_sha1_hex(&"g".repeat(40)));
    }
}
