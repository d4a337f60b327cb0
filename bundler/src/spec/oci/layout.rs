//! An image carried from a local OCI image layout (what `skopeo copy
//! oci:PATH`, buildah, umoci, kaniko or `scripts/build-image.sh` write):
//! `--image NAME:TAG=oci-layout:PATH[:REF]` read here, the layout read and
//! every descriptor checked in `sources::oci::layout`.
//!
//! Invariant: a [`LayoutSource`] names a repository path and tag that pass
//! the distribution spec's grammar, with no registry host — the image is
//! recorded with none and served as `NAME:TAG` whatever registry a node's
//! `ns` names — so nothing from the command line reaches the manifest or a
//! URL unchecked.

use std::fmt;
use std::path::{Path, PathBuf};

use llmgw_shared::manifest::{is_repository, is_tag, reserved_prefix};

use crate::error::oci::OciError;

/// What follows `=` in `--image NAME:TAG=…` for a local layout.
pub const SCHEME: &str = "oci-layout:";

/// An image asked for from a local OCI layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutSource {
    /// The repository path it is served under (`llmgw/llmgw`).
    pub name: String,
    /// The tag it is served under.
    pub tag: String,
    /// The layout folder.
    pub path: PathBuf,
    /// The `org.opencontainers.image.ref.name` to take from `index.json`;
    /// none: its only image.
    pub ref_name: Option<String>,
}

impl LayoutSource {
    /// Whether `given` is the layout form (a Docker reference has no `=`).
    pub fn is_layout(given: &str) -> bool {
        given.contains('=')
    }

    /// Reads `NAME:TAG=oci-layout:PATH[:REF]`. PATH ends at its first `:`,
    /// as in skopeo's `oci:PATH:REF`.
    pub fn parse(given: &str) -> Result<Self, OciError> {
        let bad = |detail: &str| OciError::LayoutFlag {
            given: given.to_string(),
            detail: detail.to_string(),
        };
        let (served, source) = given.split_once('=').ok_or_else(|| bad("no '='"))?;
        let rest = source
            .strip_prefix(SCHEME)
            .ok_or_else(|| bad("the source after '=' must start with oci-layout:"))?;
        let (path, ref_name) = match rest.split_once(':') {
            Some((p, r)) => (p, Some(r)),
            None => (rest, None),
        };
        if path.is_empty() {
            return Err(bad("no PATH after oci-layout:"));
        }
        if ref_name.is_some_and(|r| r.is_empty() || r.chars().any(char::is_control)) {
            return Err(bad("REF after PATH: is empty or has control characters"));
        }
        let (name, tag) = served
            .rsplit_once(':')
            .ok_or_else(|| bad("no :TAG after NAME"))?;
        let first = name.split('/').next().unwrap_or_default();
        if first.contains('.') || first == "localhost" {
            return Err(bad(&format!(
                "NAME {name:?} starts with a registry host; the image is served with none, \
                 so give the repository path alone"
            )));
        }
        if !is_repository(name) {
            return Err(bad(&format!(
                "NAME {name:?} is not a repository path (lower-case letters, digits and \
                 separators . _ __ -, components joined by /)"
            )));
        }
        if let Some(prefix) = reserved_prefix(name, false) {
            return Err(bad(&format!(
                "NAME {name:?} is under {prefix}/, a name the mirror makes itself (a Hub \
                 repository's OCI profiles, a packaged chart); carry it under another name"
            )));
        }
        if !is_tag(tag) {
            return Err(bad(&format!(
                "TAG {tag:?} is not a tag ([A-Za-z0-9_][A-Za-z0-9._-]{{0,127}})"
            )));
        }
        Ok(Self {
            name: name.to_string(),
            tag: tag.to_string(),
            path: PathBuf::from(path),
            ref_name: ref_name.map(str::to_string),
        })
    }

    /// `given` with a relative layout PATH made relative to `base` (a spec
    /// file's folder); any other value unchanged.
    pub fn rebase(given: &str, base: &Path) -> String {
        let Some((served, source)) = given.split_once('=') else {
            return given.to_string();
        };
        let Some(rest) = source.strip_prefix(SCHEME) else {
            return given.to_string();
        };
        let (path, ref_part) = match rest.split_once(':') {
            Some((p, r)) => (p, format!(":{r}")),
            None => (rest, String::new()),
        };
        if path.is_empty() || Path::new(path).is_absolute() {
            return given.to_string();
        }
        match base.join(path).to_str() {
            Some(joined) => format!("{served}={SCHEME}{joined}{ref_part}"),
            None => given.to_string(),
        }
    }
}

impl fmt::Display for LayoutSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{} (oci-layout:{}",
            self.name,
            self.tag,
            self.path.display()
        )?;
        if let Some(r) = &self.ref_name {
            write!(f, ":{}", r.escape_debug())?;
        }
        write!(f, ")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_is_read_as_skopeo_reads_oci_paths() {
        let s = LayoutSource::parse("llmgw/llmgw:0.1.0=oci-layout:/tmp/img:v1").unwrap();
        assert_eq!(
            (s.name.as_str(), s.tag.as_str(), s.ref_name.as_deref()),
            ("llmgw/llmgw", "0.1.0", Some("v1"))
        );
        assert_eq!(s.path, PathBuf::from("/tmp/img"));
        let s = LayoutSource::parse("app:1=oci-layout:img").unwrap();
        assert_eq!((s.path, s.ref_name), (PathBuf::from("img"), None));
        for (given, what) in [
            ("app=oci-layout:img", "no :TAG"),
            ("app:1=docker:img", "must start with oci-layout:"),
            (
                "models/acme/tiny:main=oci-layout:img",
                "the mirror makes itself",
            ),
            ("modelpack/acme/tiny:abc=oci-layout:img", "under modelpack/"),
            ("app:1=oci-layout:", "no PATH"),
            ("app:1=oci-layout:img:", "REF after PATH"),
            ("ghcr.io/acme/app:1=oci-layout:img", "registry host"),
            ("Acme/app:1=oci-layout:img", "not a repository path"),
            ("app:+1=oci-layout:img", "not a tag"),
        ] {
            let e = LayoutSource::parse(given).unwrap_err();
            assert!(e.is_usage(), "{given}");
            assert!(e.to_string().contains(what), "{given}: {e}");
        }
    }

    #[test]
    fn a_spec_files_relative_path_is_its_folders() {
        let base = Path::new("/site");
        assert_eq!(
            LayoutSource::rebase("a/b:1=oci-layout:img:v1", base),
            "a/b:1=oci-layout:/site/img:v1"
        );
        for same in ["a/b:1=oci-layout:/abs/img", "ubuntu:24.04", "a:1=other:x"] {
            assert_eq!(LayoutSource::rebase(same, base), same);
        }
    }
}
