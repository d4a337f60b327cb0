//! `SHA256SUMS` files and `<asset>.sha256` sidecars, as `sha256sum` writes
//! them: `<64 hex> <space or *><name>` per line.

use crate::Sha256;
use crate::names::{self, UnsafeName};
use thiserror::Error;

#[derive(Debug, Error)]
/// Why a checksum file (`SHA256SUMS`) was refused.
pub enum SumsError {
    #[error("{file} line {line}: expected `<64 hex digits>  <file name>`, found {found:?}")]
    /// A line that is not `<64 hex digits>  <file name>`.
    BadLine {
        /// The file, as the caller names it.
        file: String,
        /// The line's number, from 1.
        line: usize,
        /// The line as it was (escaped when printed).
        found: String,
    },
    #[error("{file} line {line}")]
    /// A line whose file name could become a path.
    UnsafeName {
        /// The file, as the caller names it.
        file: String,
        /// The line's number, from 1.
        line: usize,
        #[source]
        /// Why the name is refused.
        source: UnsafeName,
    },
    #[error("{file} lists {name} twice, with different checksums")]
    /// The same file listed twice with different checksums.
    Conflict {
        /// The file, as the caller names it.
        file: String,
        /// The file name listed twice.
        name: String,
    },
}

/// One line of a checksum file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SumLine {
    pub sha256: Sha256,
    pub name: String,
}

/// Parses a `SHA256SUMS`-style file (`file` names it in errors). Blank
/// lines are skipped; names must be plain file names. Hex is lower-cased.
pub fn parse_sha256sums(file: &str, text: &str) -> Result<Vec<SumLine>, SumsError> {
    let mut out: Vec<SumLine> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let bad = || SumsError::BadLine {
            file: file.to_string(),
            line: i + 1,
            found: line.chars().take(120).collect(),
        };
        let (hex, rest) = line.split_once(char::is_whitespace).ok_or_else(bad)?;
        let hex = Sha256::parse_exact("sha256", &hex.to_ascii_lowercase()).map_err(|_| bad())?;
        let name = rest.trim_start_matches([' ', '\t']);
        let name = name.strip_prefix('*').unwrap_or(name);
        names::check_file_name("file name", name).map_err(|source| SumsError::UnsafeName {
            file: file.to_string(),
            line: i + 1,
            source,
        })?;
        if let Some(prev) = out.iter().find(|l| l.name == name) {
            if prev.sha256 != hex {
                return Err(SumsError::Conflict {
                    file: file.to_string(),
                    name: name.to_string(),
                });
            }
            continue;
        }
        out.push(SumLine {
            sha256: hex,
            name: name.to_string(),
        });
    }
    Ok(out)
}

/// The digest in a cargo-dist `<asset>.sha256` sidecar: the first token of
/// its first non-empty line.
pub fn parse_sidecar(file: &str, text: &str) -> Result<Sha256, SumsError> {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let hex = line
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    Sha256::parse_exact("sha256", &hex).map_err(|_| SumsError::BadLine {
        file: file.to_string(),
        line: 1,
        found: line.chars().take(120).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sha256sum_modes() {
        let a = "a".repeat(64);
        let b = "B".repeat(64);
        let text = format!("{a}  llmgw-linux-amd64.tar.gz\n{b} *llmgw-linux-arm64.tar.gz\n\n");
        let lines = parse_sha256sums("SHA256SUMS", &text).unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1].sha256, "b".repeat(64));
        assert_eq!(lines[1].name, "llmgw-linux-arm64.tar.gz");
    }

    #[test]
    fn bad_lines_are_named() {
        let err = parse_sha256sums("SHA256SUMS", "nothex  file\n").unwrap_err();
        let err = crate::chain(&err);
        assert!(err.to_string().contains("SHA256SUMS line 1"), "{err}");
        let a = "a".repeat(64);
        let err = parse_sha256sums("SHA256SUMS", &format!("{a}  ../etc/passwd\n")).unwrap_err();
        let err = crate::chain(&err);
        assert!(err.to_string().contains("'..'"), "{err}");
        let b = "b".repeat(64);
        let err = parse_sha256sums("S", &format!("{a}  x\n{b}  x\n")).unwrap_err();
        let err = crate::chain(&err);
        assert!(err.to_string().contains("lists x twice"), "{err}");
    }

    #[test]
    fn cargo_dist_sidecar() {
        let a = "c".repeat(64);
        let text = format!("{a} *uv-x86_64-unknown-linux-gnu.tar.gz\n\n");
        assert_eq!(parse_sidecar("x.sha256", &text).unwrap(), a);
        assert!(parse_sidecar("x.sha256", "nope\n").is_err());
    }
}
