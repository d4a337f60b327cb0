//! PEP 508 environment markers, evaluated for a node platform known only in
//! part (Linux, the architecture, CPython `3.M`), to say which packages of a
//! site's lock a node of that platform may install.
//!
//! Invariant: the answer is never "no" for a package some node of the
//! platform might install. A comparison on what the bundle cannot know (an
//! extra or dependency group asked for, the kernel release, the Python
//! patch level) counts as true, and since markers have no negation (only
//! `and`, `or` and comparisons), this over-approximates: at worst a file
//! too many is carried, never one too few.

/// The platform a bundle targets, as markers see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// CPython's minor version: 12 for 3.12.
    pub minor: u64,
    /// `platform_machine` on the node: `x86_64`, `aarch64`.
    pub machine: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Open,
    Close,
    Str(String),
    Word(String),
    Op(&'static str),
}

/// The comparison operators, longest first so `===` is not read as `==`.
const OPS: [&str; 8] = ["===", "==", "!=", "<=", ">=", "~=", "<", ">"];

fn lex(text: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        let Some(c) = rest.chars().next() else {
            return Ok(out);
        };
        if c == '(' || c == ')' {
            out.push(if c == '(' { Tok::Open } else { Tok::Close });
            rest = &rest[1..];
        } else if c == '\'' || c == '"' {
            let end = rest[1..]
                .find(c)
                .ok_or_else(|| "a quoted string is not closed".to_string())?;
            out.push(Tok::Str(rest[1..=end].to_string()));
            rest = &rest[end + 2..];
        } else if let Some(op) = OPS.iter().find(|op| rest.starts_with(**op)) {
            out.push(Tok::Op(op));
            rest = &rest[op.len()..];
        } else if c.is_ascii_alphabetic() || c == '_' {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
                .unwrap_or(rest.len());
            out.push(Tok::Word(rest[..end].to_string()));
            rest = &rest[end..];
        } else {
            return Err(format!("unexpected character {c:?}"));
        }
    }
}

/// Whether `marker` may hold on a node of `t`; an error says why the
/// marker could not be read.
pub fn may_hold(marker: &str, t: &Target) -> Result<bool, String> {
    let toks = lex(marker)?;
    let mut p = Parser { toks, at: 0, t };
    let v = p.or()?;
    if p.at != p.toks.len() {
        return Err("text after the end of the marker".into());
    }
    Ok(v)
}

struct Parser<'a> {
    toks: Vec<Tok>,
    at: usize,
    t: &'a Target,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }

    fn next(&mut self) -> Result<Tok, String> {
        let t = self.toks.get(self.at).cloned();
        self.at += 1;
        t.ok_or_else(|| "the marker ends too early".to_string())
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Word(x)) if x == w)
    }

    fn or(&mut self) -> Result<bool, String> {
        let mut v = self.and()?;
        while self.is_word("or") {
            self.at += 1;
            let r = self.and()?;
            v = v || r;
        }
        Ok(v)
    }

    fn and(&mut self) -> Result<bool, String> {
        let mut v = self.atom()?;
        while self.is_word("and") {
            self.at += 1;
            let r = self.atom()?;
            v = v && r;
        }
        Ok(v)
    }

    fn atom(&mut self) -> Result<bool, String> {
        if self.peek() == Some(&Tok::Open) {
            self.at += 1;
            let v = self.or()?;
            return match self.next()? {
                Tok::Close => Ok(v),
                _ => Err("a '(' is not closed".into()),
            };
        }
        let lhs = self.value()?;
        let op = match self.next()? {
            Tok::Op(op) => op,
            Tok::Word(w) if w == "in" => "in",
            Tok::Word(w) if w == "not" => match self.next()? {
                Tok::Word(w) if w == "in" => "not in",
                _ => return Err("'not' without 'in'".into()),
            },
            other => return Err(format!("expected an operator, found {other:?}")),
        };
        let rhs = self.value()?;
        Ok(compare(&lhs, op, &rhs, self.t))
    }

    fn value(&mut self) -> Result<Value, String> {
        match self.next()? {
            Tok::Str(s) => Ok(Value::Str(s)),
            Tok::Word(w) => Ok(Value::Var(w)),
            other => Err(format!("expected a variable or a string, found {other:?}")),
        }
    }
}

enum Value {
    Var(String),
    Str(String),
}

/// The values a variable may have on a node of `t`; `None` when any value
/// is possible (or the variable is one no marker of PEP 508 names).
fn values(var: &str, t: &Target) -> Option<Vec<String>> {
    let one = |s: &str| Some(vec![s.to_string()]);
    match var {
        "os_name" => one("posix"),
        "sys_platform" => one("linux"),
        "platform_system" => one("Linux"),
        "platform_machine" => one(t.machine),
        "platform_python_implementation" => one("CPython"),
        "implementation_name" => one("cpython"),
        "python_version" => Some(vec![format!("3.{}", t.minor)]),
        // The patch level is the node's: the lowest and a high one.
        "python_full_version" | "implementation_version" => Some(vec![
            format!("3.{}.0", t.minor),
            format!("3.{}.99", t.minor),
        ]),
        _ => None,
    }
}

fn compare(lhs: &Value, op: &str, rhs: &Value, t: &Target) -> bool {
    let side = |v: &Value| match v {
        Value::Var(name) => values(name, t),
        Value::Str(s) => Some(vec![s.clone()]),
    };
    let (Some(ls), Some(rs)) = (side(lhs), side(rhs)) else {
        return true;
    };
    ls.iter()
        .any(|l| rs.iter().any(|r| compare_strings(l, op, r)))
}

/// One comparison of two known strings: as versions where both read as
/// one (PEP 440's release part), else as strings.
pub fn compare_strings(l: &str, op: &str, r: &str) -> bool {
    match op {
        "in" => return r.contains(l),
        "not in" => return !r.contains(l),
        "===" => return l == r,
        _ => {}
    }
    if let Some(prefix) = r.strip_suffix(".*")
        && let (Some(lv), Some(pv)) = (release(l), release(prefix))
    {
        let matches = lv.len() >= pv.len() && lv[..pv.len()] == pv[..];
        return match op {
            "==" => matches,
            "!=" => !matches,
            _ => true,
        };
    }
    let (Some(lv), Some(rv)) = (release(l), release(r)) else {
        return match op {
            "==" => l == r,
            "!=" => l != r,
            _ => true,
        };
    };
    let ord = cmp_release(&lv, &rv);
    use std::cmp::Ordering::*;
    match op {
        "==" => ord == Equal,
        "!=" => ord != Equal,
        "<" => ord == Less,
        "<=" => ord != Greater,
        ">" => ord == Greater,
        ">=" => ord != Less,
        // ~=X.Y.Z: >= X.Y.Z and == X.Y.*
        "~=" => {
            let head = &rv[..rv.len().saturating_sub(1).max(1)];
            ord != Less && lv.len() >= head.len() && lv[..head.len()] == head[..]
        }
        _ => true,
    }
}

/// The release numbers of a version (`3.12.1` → [3, 12, 1]); a pre-,
/// post- or dev-release suffix is ignored, a leading `v` too.
fn release(v: &str) -> Option<Vec<u64>> {
    let v = v.trim().trim_start_matches('v');
    let end = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let head = v[..end].trim_end_matches('.');
    if head.is_empty() {
        return None;
    }
    head.split('.').map(|p| p.parse().ok()).collect()
}

fn cmp_release(a: &[u64], b: &[u64]) -> std::cmp::Ordering {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| {
            a.get(i)
                .copied()
                .unwrap_or(0)
                .cmp(&b.get(i).copied().unwrap_or(0))
        })
        .find(|o| o.is_ne())
        .unwrap_or(std::cmp::Ordering::Equal)
}

/// Whether a `requires-python` specifier set (`>=3.10,<4`) may admit
/// CPython `3.{minor}`, at some patch level.
pub fn python_may_satisfy(spec: &str, minor: u64) -> bool {
    let versions = [format!("3.{minor}.0"), format!("3.{minor}.99")];
    versions.iter().any(|v| {
        spec.split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .all(|c| {
                let op = OPS
                    .iter()
                    .find(|op| c.starts_with(**op))
                    .copied()
                    .unwrap_or("==");
                compare_strings(v, op, c[op.len().min(c.len())..].trim())
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const X86_312: Target = Target {
        minor: 12,
        machine: "x86_64",
    };

    #[test]
    fn markers_of_real_locks() {
        let yes = |m: &str| may_hold(m, &X86_312).unwrap();
        assert!(!yes("sys_platform == 'win32'"));
        assert!(yes("sys_platform == 'linux'"));
        assert!(!yes(
            "platform_machine == 'aarch64' and sys_platform == 'linux'"
        ));
        assert!(yes(
            "platform_machine == 'x86_64' or platform_machine == 'aarch64'"
        ));
        assert!(!yes("python_full_version < '3.11'"));
        assert!(yes("python_full_version >= '3.12.4'"));
        assert!(yes(
            "python_version >= \"3.9\" and (sys_platform != 'darwin')"
        ));
        assert!(!yes("python_version == '3.11.*'"));
        assert!(yes("extra == 'cu129' and sys_platform == 'linux'"));
        assert!(yes("'dev' in dependency_groups"));
        assert!(!yes("platform_system == 'Windows' and extra == 'x'"));
        assert!(yes("implementation_name == 'cpython'"));
        assert!(!yes("implementation_name == 'pypy'"));
        for bad in ["sys_platform ==", "(sys_platform == 'x'", "a b", "x == 'y"] {
            assert!(may_hold(bad, &X86_312).is_err(), "{bad}");
        }
    }

    #[test]
    fn requires_python_ranges() {
        assert!(python_may_satisfy(">=3.9", 12));
        assert!(python_may_satisfy(">=3.12.1, <4", 12));
        assert!(!python_may_satisfy(">=3.13", 12));
        assert!(python_may_satisfy("~=3.10", 12));
        assert!(!python_may_satisfy("==3.11.*", 12));
    }
}
