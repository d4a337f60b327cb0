//! The pins of FlashInfer's CuTe DSL FMHA kernels a run checks against:
//! the recipe table's (`llmgw_shared::recipe::FLASHINFER_DSL_FMHA_PINS`,
//! read from FlashInfer's own `artifacts.py` per release), and, for tests
//! only, more read from a file (`--flashinfer-dsl-pins FILE`, a hidden
//! flag): a loopback fixture cannot serve the real `checksums.txt`, whose
//! sha256 the table pins, so a test gives the fixture's own pins for a
//! release the table does not know.
//!
//! Invariant: a file's pins only ever add releases the table has no pins
//! for — a release the table pins is refused in the file, so the real pins
//! can never be replaced or weakened by it — and every value is checked
//! (a 64-hex sha256, a relative directory, a known CPU, a plain `sm_…`
//! name) before any network.

use std::io::Read;
use std::path::Path;

use llmgw_shared::recipe::{DslFmhaPins, FLASHINFER_DSL_FMHA_PINS, dsl_fmha_pins};
use llmgw_shared::{Sha256, check_file_name, check_relative_path, shown};
use serde::Deserialize;

use crate::error::{CreateError, FlagError};

/// A pins file is a few hundred bytes; more is not one.
const MAX_PINS_FILE: u64 = 1 << 20;

/// The pins of the releases that share them, owned (from the table or a
/// file).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DslPins {
    /// The releases (PEP 440, as a lock names them).
    pub versions: Vec<String>,
    /// `ArtifactPath.DSL_FMHA`: the directory under the repository, with
    /// its trailing `/`.
    pub dir: String,
    /// `(cpu arch, sm arch, sha256 of that directory's checksums.txt)`.
    pub checksums: Vec<(String, String, String)>,
    /// Where the pins come from, for messages (not in a file).
    #[serde(skip)]
    pub from: String,
}

impl DslPins {
    fn of_table(p: &DslFmhaPins) -> Self {
        Self {
            versions: p.versions.iter().map(|v| v.to_string()).collect(),
            dir: p.dir.to_string(),
            checksums: p
                .checksums
                .iter()
                .map(|(c, s, h)| (c.to_string(), s.to_string(), h.to_string()))
                .collect(),
            from: "flashinfer/artifacts.py CheckSumHash.DSL_FMHA_CHECKSUMS, as the recipe \
                   table records it"
                .to_string(),
        }
    }

    /// The `checksums.txt` of each `sm` directory for `cpu` (`x86_64`,
    /// `aarch64`), relative to the repository, and its pinned sha256.
    pub fn checksums_of(&self, cpu: &str) -> Vec<(String, &str)> {
        self.checksums
            .iter()
            .filter(|(c, _, _)| c == cpu)
            .map(|(c, sm, sha)| (format!("{}{c}/{sm}/checksums.txt", self.dir), sha.as_str()))
            .collect()
    }
}

/// The pins a run knows: the table's, then a test file's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PinTable {
    /// Pins from `--flashinfer-dsl-pins`, for releases the table lacks.
    pub added: Vec<DslPins>,
}

impl PinTable {
    /// Reads `--flashinfer-dsl-pins FILE` (a JSON list of
    /// `{versions, dir, checksums: [[cpu, sm, sha256]]}`), refusing a
    /// release the table already pins.
    pub fn read(path: Option<&Path>) -> Result<Self, CreateError> {
        let Some(path) = path else {
            return Ok(Self::default());
        };
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_PINS_FILE + 1).read_to_end(&mut bytes))
            .map_err(|e| CreateError::io(path, e))?;
        let bad = |problem: String| FlagError::DslPins {
            path: path.to_path_buf(),
            problem,
        };
        if bytes.len() as u64 > MAX_PINS_FILE {
            return Err(bad(format!("larger than {MAX_PINS_FILE} bytes")).into());
        }
        let added: Vec<DslPins> =
            serde_json::from_slice(&bytes).map_err(|source| FlagError::DslPinsJson {
                path: path.to_path_buf(),
                source,
            })?;
        for p in &added {
            check(p).map_err(bad)?;
        }
        Ok(Self {
            added: added
                .into_iter()
                .map(|p| DslPins {
                    from: format!("--flashinfer-dsl-pins {}", path.display()),
                    ..p
                })
                .collect(),
        })
    }

    /// The pins of FlashInfer `version` (its public part), if any.
    pub fn of(&self, version: &str) -> Option<DslPins> {
        dsl_fmha_pins(version).map(DslPins::of_table).or_else(|| {
            self.added
                .iter()
                .find(|p| p.versions.iter().any(|v| v == version))
                .cloned()
        })
    }
}

/// Why one entry of a pins file is refused, if it is.
fn check(p: &DslPins) -> Result<(), String> {
    for v in &p.versions {
        if FLASHINFER_DSL_FMHA_PINS
            .iter()
            .any(|t| t.versions.contains(&v.as_str()))
        {
            return Err(format!(
                "FlashInfer {} is pinned by the recipe table (read from its artifacts.py); a \
                 pins file only adds releases the table lacks",
                shown(v)
            ));
        }
    }
    let dir = p.dir.strip_suffix('/').unwrap_or("");
    if check_relative_path("DSL FMHA directory", dir).is_err() {
        return Err(format!(
            "dir {}: expected a relative directory ending in '/'",
            shown(&p.dir)
        ));
    }
    for (cpu, sm, sha) in &p.checksums {
        if !["x86_64", "aarch64"].contains(&cpu.as_str()) {
            return Err(format!("cpu {}: expected x86_64 or aarch64", shown(cpu)));
        }
        if !sm.starts_with("sm_") || check_file_name("sm arch", sm).is_err() {
            return Err(format!("sm {}: expected a name such as sm_100a", shown(sm)));
        }
        if Sha256::parse_exact("sha256", sha).is_err() {
            return Err(format!(
                "sha256 {}: expected 64 lower-case hex digits",
                shown(sha)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("pins.json");
        std::fs::write(&p, text).unwrap();
        (d, p)
    }

    #[test]
    fn a_file_adds_releases_and_never_replaces_the_tables() {
        let sha = "a".repeat(64);
        let (_d, p) = write(&format!(
            r#"[{{"versions": ["0.6.99"], "dir": "x/fmha/cute-dsl/",
                "checksums": [["x86_64", "sm_100a", "{sha}"]]}}]"#
        ));
        let t = PinTable::read(Some(&p)).unwrap();
        let got = t.of("0.6.99").unwrap();
        assert_eq!(
            got.checksums_of("x86_64"),
            [(
                "x/fmha/cute-dsl/x86_64/sm_100a/checksums.txt".to_string(),
                sha.as_str()
            )]
        );
        assert!(got.from.starts_with("--flashinfer-dsl-pins "));
        assert!(t.of("0.6.13").unwrap().from.contains("artifacts.py"));
        assert!(t.of("0.7.0").is_none());

        for (bad, says) in [
            (
                r#"[{"versions": ["0.6.13"], "dir": "x/", "checksums": []}]"#.to_string(),
                "pinned by the recipe table",
            ),
            (
                r#"[{"versions": ["0.6.99"], "dir": "../x/", "checksums": []}]"#.to_string(),
                "relative directory",
            ),
            (
                format!(
                    r#"[{{"versions": ["0.6.99"], "dir": "x/", "checksums": [["x86_64", "sm_100a", "{}"]]}}]"#,
                    "A".repeat(64)
                ),
                "64 lower-case hex",
            ),
            (
                format!(
                    r#"[{{"versions": ["0.6.99"], "dir": "x/", "checksums": [["riscv", "sm_100a", "{sha}"]]}}]"#
                ),
                "x86_64 or aarch64",
            ),
        ] {
            let (_d, p) = write(&bad);
            let e = PinTable::read(Some(&p)).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("pins.json"), "{e}");
        }
    }
}
