//! A bundle's place in its signer's series: `--channel`, `--sequence`
//! (given, or the next number of a counter file beside the key),
//! `--expires`, and the signature over the manifest that binds them.
//!
//! Invariant: a sequence taken from the counter is written back (temp file,
//! fsync, rename, fsync of the folder) before the bundle is made, so two
//! runs with one key never hand out the same number, and a number is never
//! reused after a crash — at worst one is skipped, which the mirror allows
//! (it only needs each bundle of a channel to be higher than the last).

use std::io::Read;
use std::path::{Path, PathBuf};

use llmgw_shared::manifest::{MANIFEST_NAME, Manifest};
use llmgw_shared::{Password, SecretKey};

use crate::error::{CreateError, FlagError, SeriesError};

/// The series flags of `bundle create`, as given.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SeriesSpec {
    /// `--sign-key`: a minisign secret key as `minisign -G` wrote it.
    pub sign_key: Option<PathBuf>,
    /// `--channel`; absent = `default`.
    pub channel: Option<String>,
    /// `--sequence`; with `--sign-key` and without it, the counter's next.
    pub sequence: Option<u64>,
    /// `--expires`: a duration after `created` (`90d`, `12h`, `2w`) or an
    /// RFC 3339 UTC time.
    pub expires: Option<String>,
}

/// What the manifest records and how it is signed, once resolved.
pub struct Series {
    pub key: Option<SecretKey>,
    pub channel: Option<String>,
    pub sequence: Option<u64>,
    pub expires: Option<String>,
}

/// The counter file of a key: `KEY.sequence` beside it, holding the last
/// sequence handed out.
pub fn counter_path(key: &Path) -> PathBuf {
    let mut name = key.as_os_str().to_os_string();
    name.push(".sequence");
    PathBuf::from(name)
}

impl SeriesSpec {
    /// Loads the key (asking for its password as `password` says), checks
    /// the flags and takes the sequence. `created` is the manifest's time.
    pub fn resolve(&self, created: u64, password: Password) -> Result<Series, CreateError> {
        if let Some(c) = &self.channel {
            llmgw_shared::check_file_name("--channel", c).map_err(CreateError::UnsafeFlag)?;
        }
        let expires = match &self.expires {
            None => None,
            Some(text) => Some(parse_expires(text, created)?),
        };
        let key = match &self.sign_key {
            None => None,
            Some(path) => Some(SecretKey::load(path, password)?),
        };
        let sequence = match (self.sequence, &self.sign_key) {
            (Some(n), Some(key)) => {
                bump_counter(key, Some(n))?;
                Some(n)
            }
            (Some(n), None) => Some(n),
            (None, Some(key)) => Some(bump_counter(key, None)?),
            (None, None) => None,
        };
        Ok(Series {
            key,
            channel: self.channel.clone(),
            sequence,
            expires,
        })
    }
}

impl Series {
    /// Records channel, sequence and expiry in the manifest.
    pub fn apply(&self, m: &mut Manifest) {
        m.channel = self.channel.clone();
        m.sequence = self.sequence;
        m.expires = self.expires.clone();
    }

    /// The signature file's bytes for the manifest's exact bytes, when a
    /// key was given.
    pub fn sign(&self, manifest: &Manifest, bytes: &[u8]) -> Result<Option<Vec<u8>>, CreateError> {
        match &self.key {
            None => Ok(None),
            Some(key) => sign_manifest(key, manifest, bytes).map(Some),
        }
    }
}

/// A signature over a manifest's exact bytes. The trusted comment (signed
/// too, printed by `minisign -V`) names what a person checking it by hand
/// wants to see.
pub fn sign_manifest(
    key: &SecretKey,
    manifest: &Manifest,
    bytes: &[u8],
) -> Result<Vec<u8>, CreateError> {
    let mut comment = format!(
        "file:{MANIFEST_NAME}\tsha256:{}\tchannel:{}",
        llmgw_shared::sha256_hex(bytes),
        manifest.channel()
    );
    if let Some(n) = manifest.sequence {
        comment.push_str(&format!("\tsequence:{n}"));
    }
    let text = key.sign(bytes, &comment)?;
    Ok(text.into_bytes())
}

/// `90d`, `12h`, `30m`, `2w`, `3600s` after `created`, or an RFC 3339 UTC
/// time, as the manifest writes times.
pub fn parse_expires(text: &str, created: u64) -> Result<String, CreateError> {
    let t = text.trim();
    if let Some(at) = llmgw_shared::parse_rfc3339_utc(t) {
        if at <= created {
            return Err(SeriesError::ExpiresBeforeCreated {
                text: t.to_string(),
                created: llmgw_shared::rfc3339_utc(created),
            }
            .into());
        }
        return Ok(t.to_string());
    }
    let unit = t.chars().last().unwrap_or(' ');
    let secs_per = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        'w' => 7 * 86_400,
        _ => 0,
    };
    let n: Option<u64> = t[..t.len() - unit.len_utf8().min(t.len())].parse().ok();
    match n.and_then(|n| n.checked_mul(secs_per)) {
        Some(d) if d > 0 && secs_per > 0 => created
            .checked_add(d)
            .filter(|at| *at < 253_402_300_800) // 10000-01-01
            .map(llmgw_shared::rfc3339_utc)
            .ok_or_else(|| {
                FlagError::ExpiresTooFar {
                    text: t.to_string(),
                }
                .into()
            }),
        _ => Err(FlagError::Expires {
            text: t.to_string(),
        }
        .into()),
    }
}

/// The counter's last value, at most 32 bytes of it.
fn read_counter(path: &Path) -> Result<Option<u64>, CreateError> {
    let mut text = String::new();
    match std::fs::File::open(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(CreateError::io(path, e)),
        Ok(f) => {
            f.take(32)
                .read_to_string(&mut text)
                .map_err(|e| CreateError::io(path, e))?;
        }
    }
    text.trim().parse().map(Some).map_err(|_| {
        CreateError::from(SeriesError::Counter {
            path: path.to_path_buf(),
            found: text.trim().to_string(),
        })
    })
}

/// Takes the next sequence (or records `given`), writing the counter
/// durably before the bundle is made.
fn bump_counter(key: &Path, given: Option<u64>) -> Result<u64, CreateError> {
    let path = counter_path(key);
    let last = read_counter(&path)?;
    let next = match (given, last) {
        (Some(n), _) => n,
        (None, Some(l)) => l
            .checked_add(1)
            .ok_or_else(|| CreateError::from(SeriesError::CounterAtEnd { path: path.clone() }))?,
        (None, None) => 1,
    };
    let keep = last.map_or(next, |l| l.max(next));
    let tmp = crate::writer::temp_name(&path);
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(format!("{keep}\n").as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)?;
        if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        CreateError::io(&path, e)
    })?;
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_durations_and_times() {
        let c = 1_796_256_000; // 2026-12-03T00:00:00Z
        assert_eq!(parse_expires("1d", c).unwrap(), "2026-12-04T00:00:00Z");
        assert_eq!(parse_expires("2w", c).unwrap(), "2026-12-17T00:00:00Z");
        assert_eq!(parse_expires("90m", c).unwrap(), "2026-12-03T01:30:00Z");
        assert_eq!(
            parse_expires("2027-03-01T00:00:00Z", c).unwrap(),
            "2027-03-01T00:00:00Z"
        );
        for bad in [
            "",
            "d",
            "0d",
            "-1d",
            "1y",
            "2026-12-02T00:00:00Z",
            "99999999999999w",
        ] {
            let err = parse_expires(bad, c).unwrap_err().to_string();
            assert!(err.starts_with("--expires"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_counter_hands_out_each_number_once() {
        let d = tempfile::tempdir().unwrap();
        let key = d.path().join("site.key");
        assert_eq!(bump_counter(&key, None).unwrap(), 1);
        assert_eq!(bump_counter(&key, None).unwrap(), 2);
        // A given number is used and a higher one moves the counter on.
        assert_eq!(bump_counter(&key, Some(10)).unwrap(), 10);
        assert_eq!(bump_counter(&key, None).unwrap(), 11);
        // A lower given number does not move it back.
        assert_eq!(bump_counter(&key, Some(3)).unwrap(), 3);
        assert_eq!(bump_counter(&key, None).unwrap(), 12);
        assert_eq!(std::fs::read_to_string(counter_path(&key)).unwrap(), "12\n");
        std::fs::write(counter_path(&key), "twelve").unwrap();
        let err = bump_counter(&key, None).unwrap_err().to_string();
        assert!(err.contains("expected the last sequence number"), "{err}");
        // Only the counter is left beside the key: no temporary file.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }
}
