//! Text as Helm's Go code writes it, so bytes made here hash as Helm's
//! do: Go's `encoding/json` (struct fields in order, empty ones left out,
//! HTML characters escaped), `strconv.FormatFloat` of a float32, and
//! Helm's `sanitizeString`.
//!
//! Invariant: each function is the Go behaviour it names, for the inputs
//! Chart.yaml can hold; where Go would consult Unicode tables this crate
//! does not have (`unicode.IsPrint`), the characters dropped are listed.

use serde_json::Value;

/// Helm's `sanitizeString`: white space becomes a space, what is not
/// printable is dropped (control and format characters, private use).
pub fn sanitize(s: &str) -> String {
    s.chars()
        .filter_map(|c| {
            if c.is_whitespace() {
                Some(' ')
            } else if c.is_control() || is_format_or_private(c) {
                None
            } else {
                Some(c)
            }
        })
        .collect()
}

/// Unicode's format characters (Cf) and private-use ones, which Go's
/// `unicode.IsPrint` refuses.
fn is_format_or_private(c: char) -> bool {
    matches!(c as u32,
        0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x890..=0x891 | 0x8E2 | 0x180E
        | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F
        | 0xFEFF | 0xFFF9..=0xFFFB | 0x110BD | 0x110CD | 0x13430..=0x1343F
        | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A | 0xE0001 | 0xE0020..=0xE007F
        | 0xE000..=0xF8FF | 0xF0000..=0x10FFFF)
}

/// Go's `strconv.FormatFloat(v, 'g', -1, 32)`: the shortest digits that
/// read back as the same float32, in exponent form (`1e+06`) when the
/// exponent is below -4 or at least 6 (Go's rule for shortest `'g'`).
pub fn go_float32(v: f64) -> String {
    let f = v as f32;
    if !f.is_finite() {
        return if f.is_nan() {
            "NaN".into()
        } else if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // Rust's `{:e}` is the shortest round-trip digits: d.ddddde±x.
    let e = format!("{f:e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{esign}{:02}", exp.abs());
    }
    if exp < 0 {
        return format!("{sign}0.{}{digits}", "0".repeat((-exp - 1) as usize));
    }
    let point = (exp + 1) as usize;
    if digits.len() <= point {
        format!("{sign}{digits}{}", "0".repeat(point - digits.len()))
    } else {
        format!("{sign}{}.{}", &digits[..point], &digits[point..])
    }
}

/// The fields as Go's `json.Marshal` of the struct: in order, empty ones
/// left out (`omitempty`), HTML characters escaped as Go escapes them.
pub fn go_json(fields: &[(&str, Value)]) -> Vec<u8> {
    let mut obj = serde_json::Map::new();
    for (k, v) in fields {
        let empty = match v {
            Value::Null => true,
            Value::Bool(b) => !b,
            Value::String(s) => s.is_empty(),
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            Value::Number(_) => false,
        };
        if !empty {
            obj.insert((*k).to_string(), v.clone());
        }
    }
    go_escape(&Value::Object(obj).to_string()).into_bytes()
}

/// Go's `encoding/json` escapes `<`, `>`, `&`, U+2028 and U+2029 in
/// strings; none of them can appear outside a string in JSON text.
pub fn go_escape(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}
