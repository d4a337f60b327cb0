//! Version strings: comparing release numbers, reading a driver's major
//! version, and refusing versions that are not plain release names.

/// Whether version `a` is older than `b`, comparing the dotted numbers in
/// turn ("0.25.1" before "0.26"). A leading "v" on `a` is ignored; a part
/// that is not a number counts as zero. Nothing is before an empty `b`.
pub fn version_before(a: &str, b: &str) -> bool {
    if b.is_empty() {
        return false;
    }
    let pa: Vec<&str> = a.strip_prefix('v').unwrap_or(a).split('.').collect();
    let pb: Vec<&str> = b.split('.').collect();
    for i in 0..pa.len().max(pb.len()) {
        let x = pa.get(i).map_or(0, |p| leading_int(p));
        let y = pb.get(i).map_or(0, |p| leading_int(p));
        if x != y {
            return x < y;
        }
    }
    false
}

/// The number a version string starts with: 580 of "580.65.06", 0 when it
/// starts with no digit. Saturates rather than overflowing on absurd input.
pub fn leading_int(s: &str) -> u64 {
    s.trim()
        .chars()
        .map_while(|c| c.to_digit(10))
        .fold(0u64, |n, d| {
            n.saturating_mul(10).saturating_add(u64::from(d))
        })
}

/// The longest version accepted; real release names are far shorter.
const MAX_VERSION_LEN: usize = 128;

/// Whether `version` is a plain release name: letters, digits, '.', '-' and
/// '+', starting with a letter or digit. Versions go into asset names,
/// requirement specifiers and URLs, so anything else — '/', a leading '.'
/// or '-', spaces — is refused before it can make a path or an option of one.
pub fn valid_version(version: &str) -> bool {
    let mut chars = version.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    version.len() <= MAX_VERSION_LEN
        && first.is_ascii_alphanumeric()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'))
}
