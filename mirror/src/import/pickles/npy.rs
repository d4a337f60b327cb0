//! numpy's `.npy` header of an array of Python objects (dtype `O`, alone
//! or as a field of a structured dtype): `numpy.save` writes its data as a
//! pickle, and `numpy.load(allow_pickle=True)` runs it.
//!
//! Invariant: only the bytes given are read; the header is the
//! `'descr'` entry of the dict literal after the magic and the length.

/// Whether `head` is a `.npy` header whose `descr` holds an object dtype.
pub fn object_dtype(head: &[u8]) -> bool {
    let Some(rest) = head.strip_prefix(b"\x93NUMPY") else {
        return false;
    };
    let start = match rest.first() {
        Some(1) => 10,
        Some(2 | 3) => 12,
        _ => return false,
    };
    let Some(header) = head.get(start..) else {
        return false;
    };
    let text = String::from_utf8_lossy(header);
    let Some(at) = text.find("'descr'").or_else(|| text.find("\"descr\"")) else {
        return false;
    };
    let value = text[at + 7..].trim_start();
    let Some(value) = value.strip_prefix(':') else {
        return false;
    };
    descr_has_object(value.trim_start())
}

/// Whether the `descr` value at the start of `v` (a quoted type, or a
/// list of `(name, type[, shape])` tuples, nested) names type `O`. The
/// first string of a tuple is a field name and does not count.
fn descr_has_object(v: &str) -> bool {
    let mut depth = 0usize;
    let mut after_paren = false;
    let mut chars = v.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '[' | '(' => {
                depth += 1;
                after_paren = c == '(';
            }
            ']' | ')' => {
                depth = depth.saturating_sub(1);
                after_paren = false;
            }
            '\'' | '"' => {
                let Some(len) = v[i + 1..].find(c) else {
                    return false;
                };
                let s = &v[i + 1..i + 1 + len];
                if !after_paren && is_object(s) {
                    return true;
                }
                after_paren = false;
                for _ in 0..=s.chars().count() {
                    chars.next();
                }
            }
            ',' | ' ' => {}
            _ if depth == 0 => return false,
            _ => {}
        }
        if depth == 0 && matches!(c, '\'' | '"' | ']') {
            return false;
        }
    }
    false
}

/// `O`, `|O`, `<O8` …: numpy's object type code.
fn is_object(s: &str) -> bool {
    let s = s.trim_start_matches(['|', '<', '>', '=']);
    s.strip_prefix('O')
        .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit()))
}
