//! A wheel's licence as its core metadata states it (the PEP 658
//! `.metadata` file the bundle carries): `License-Expression` (PEP 639, an
//! SPDX expression) first, else the first line of `License`, else the
//! `License ::` trove classifiers.
//!
//! Invariant: only the header block is read (up to the first blank line),
//! at most [`MAX_METADATA_BYTES`] of it, and what comes back is one line of
//! at most [`MAX_LICENCE_CHARS`] printable characters.

use super::cdx::{Licence, LicenceName};

/// More than this of a metadata file is not read: headers come first and
/// a long description after them.
pub const MAX_METADATA_BYTES: usize = 1 << 20;

/// A stated licence longer than this is cut (some wheels paste the whole
/// licence text into `License`).
pub const MAX_LICENCE_CHARS: usize = 200;

/// The licence `metadata` (a core metadata file) states, if any.
pub fn of_metadata(metadata: &[u8]) -> Option<Licence> {
    let text = String::from_utf8_lossy(&metadata[..metadata.len().min(MAX_METADATA_BYTES)]);
    let mut expression = None;
    let mut license = None;
    let mut classifiers = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            break;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.to_ascii_lowercase().as_str() {
            "license-expression" if expression.is_none() => expression = clean(value),
            "license" if license.is_none() => license = clean(value),
            "classifier" => {
                if let Some(rest) = value.strip_prefix("License ::") {
                    let last = rest.rsplit("::").next().unwrap_or(rest);
                    classifiers.extend(clean(last));
                }
            }
            _ => {}
        }
    }
    if let Some(e) = expression {
        return Some(Licence::Expression { expression: e });
    }
    let name = license
        .filter(|l| !l.eq_ignore_ascii_case("unknown"))
        .or_else(|| (!classifiers.is_empty()).then(|| classifiers.join(", ")))?;
    Some(Licence::Named {
        license: LicenceName { name },
    })
}

/// One printable line, cut to [`MAX_LICENCE_CHARS`]; none when empty.
pub fn clean(v: &str) -> Option<String> {
    let s: String = v
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_LICENCE_CHARS)
        .collect();
    let s = s.trim().to_string();
    (!s.is_empty()).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(l: Option<Licence>) -> String {
        match l {
            Some(Licence::Expression { expression }) => format!("expr {expression}"),
            Some(Licence::Named { license }) => format!("name {}", license.name),
            None => "none".into(),
        }
    }

    #[test]
    fn expression_first_then_license_then_classifiers() {
        let m = b"Metadata-Version: 2.4\nName: a\nLicense: MIT License\nLicense-Expression: MIT OR Apache-2.0\n\nLicense-Expression: GPL\n";
        assert_eq!(name(of_metadata(m)), "expr MIT OR Apache-2.0");
        let m = b"Metadata-Version: 2.1\nLicense: BSD-3-Clause\n        more text\n";
        assert_eq!(name(of_metadata(m)), "name BSD-3-Clause");
        let m = b"License: UNKNOWN\nClassifier: License :: OSI Approved :: MIT License\n";
        assert_eq!(name(of_metadata(m)), "name MIT License");
        assert_eq!(name(of_metadata(b"Name: a\n\nLicense: body\n")), "none");
    }
}
