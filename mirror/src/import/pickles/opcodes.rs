//! Whether some bytes are the start of a pickle stream of any protocol
//! (0 to 5), by walking them as pickle's own unpickler would: each byte an
//! opcode of `pickletools`' table, each argument well formed (decimal
//! lines, quoted strings, module and name lines of identifier characters,
//! lengths), the stack and its marks never underflowing and the memo never
//! read where nothing was put — the checks `pickletools.dis` makes.
//!
//! Invariant: only the bytes given are walked (the caller bounds them); a
//! walk counts as a pickle when it ends in `STOP` with one value and no
//! open mark (at the end of the data, or after [`MIN_OPS_TRAILING`]
//! opcodes), or runs valid to the end of a head that is not the whole
//! stream after at least [`MIN_OPS_AT_BOUND`] opcodes. Text (Markdown,
//! JSON, vocabularies), safetensors and GGUF headers fail within a few
//! bytes.

/// Opcodes a walk that reaches the end of a partial head must have taken.
pub const MIN_OPS_AT_BOUND: usize = 8;

/// Opcodes a stream must have taken for a `STOP` followed by more bytes
/// to count (`N.B.` is `None`, `STOP`, then text).
pub const MIN_OPS_TRAILING: usize = 4;

/// How an opcode's argument is spelled.
#[derive(Clone, Copy)]
enum Arg {
    None,
    /// That many bytes.
    Fixed(usize),
    /// A length of that many little-endian bytes, then that many bytes.
    Counted(usize),
    /// A decimal line (`INT`, `GET`, `PUT`; `LONG` may end in `L`).
    Decimal,
    /// A float line.
    Float,
    /// A quoted string line (`STRING`).
    Quoted,
    /// A line of any bytes (`UNICODE`, `PERSID`).
    Line,
    /// Two lines of identifier characters (`GLOBAL`, `INST`).
    NamePair,
}

/// What an opcode does to the stack: when `mark` is `Some(k)`, at least
/// `k` items above the topmost mark are dropped with it; then `pop` items
/// are taken and `push` put.
#[derive(Clone, Copy)]
struct Effect {
    mark: Option<usize>,
    pop: usize,
    push: usize,
}

/// What the memo sees.
#[derive(Clone, Copy, PartialEq)]
enum Memo {
    No,
    Put,
    Get,
    Memoize,
}

#[derive(Clone, Copy)]
struct Op {
    code: u8,
    proto: u8,
    arg: Arg,
    effect: Effect,
    memo: Memo,
}

const fn op(code: u8, proto: u8, arg: Arg, pop: usize, push: usize) -> Op {
    Op {
        code,
        proto,
        arg,
        effect: Effect {
            mark: None,
            pop,
            push,
        },
        memo: Memo::No,
    }
}

const fn marked(code: u8, proto: u8, arg: Arg, above: usize, pop: usize, push: usize) -> Op {
    Op {
        code,
        proto,
        arg,
        effect: Effect {
            mark: Some(above),
            pop,
            push,
        },
        memo: Memo::No,
    }
}

const fn memo(code: u8, proto: u8, arg: Arg, memo: Memo) -> Op {
    let (pop, push) = match memo {
        Memo::Get => (0, 1),
        _ => (1, 1),
    };
    Op {
        code,
        proto,
        arg,
        effect: Effect {
            mark: None,
            pop,
            push,
        },
        memo,
    }
}

const MARK: u8 = b'(';
const POP: u8 = b'0';
const PROTO: u8 = 0x80;
const STOP: u8 = b'.';
const FRAME: u8 = 0x95;

/// `pickletools.opcodes` (Python 3.11), without `MARK`, `POP`, `PROTO`
/// and `STOP`, which the walk handles itself.
const OPS: [Op; 64] = [
    op(b'I', 0, Arg::Decimal, 0, 1),
    op(b'J', 1, Arg::Fixed(4), 0, 1),
    op(b'K', 1, Arg::Fixed(1), 0, 1),
    op(b'M', 1, Arg::Fixed(2), 0, 1),
    op(b'L', 0, Arg::Decimal, 0, 1),
    op(0x8a, 2, Arg::Counted(1), 0, 1),
    op(0x8b, 2, Arg::Counted(4), 0, 1),
    op(b'S', 0, Arg::Quoted, 0, 1),
    op(b'T', 1, Arg::Counted(4), 0, 1),
    op(b'U', 1, Arg::Counted(1), 0, 1),
    op(b'B', 3, Arg::Counted(4), 0, 1),
    op(b'C', 3, Arg::Counted(1), 0, 1),
    op(0x8e, 4, Arg::Counted(8), 0, 1),
    op(0x96, 5, Arg::Counted(8), 0, 1),
    op(0x97, 5, Arg::None, 0, 1),
    op(0x98, 5, Arg::None, 1, 1),
    op(b'N', 0, Arg::None, 0, 1),
    op(0x88, 2, Arg::None, 0, 1),
    op(0x89, 2, Arg::None, 0, 1),
    op(b'V', 0, Arg::Line, 0, 1),
    op(0x8c, 4, Arg::Counted(1), 0, 1),
    op(b'X', 1, Arg::Counted(4), 0, 1),
    op(0x8d, 4, Arg::Counted(8), 0, 1),
    op(b'F', 0, Arg::Float, 0, 1),
    op(b'G', 1, Arg::Fixed(8), 0, 1),
    op(b']', 1, Arg::None, 0, 1),
    op(b'a', 0, Arg::None, 2, 1),
    marked(b'e', 1, Arg::None, 0, 1, 1),
    marked(b'l', 0, Arg::None, 0, 0, 1),
    op(b')', 1, Arg::None, 0, 1),
    marked(b't', 0, Arg::None, 0, 0, 1),
    op(0x85, 2, Arg::None, 1, 1),
    op(0x86, 2, Arg::None, 2, 1),
    op(0x87, 2, Arg::None, 3, 1),
    op(b'}', 1, Arg::None, 0, 1),
    marked(b'd', 0, Arg::None, 0, 0, 1),
    op(b's', 0, Arg::None, 3, 1),
    marked(b'u', 1, Arg::None, 0, 1, 1),
    op(0x8f, 4, Arg::None, 0, 1),
    marked(0x90, 4, Arg::None, 0, 1, 1),
    marked(0x91, 4, Arg::None, 0, 0, 1),
    op(b'2', 0, Arg::None, 1, 2),
    marked(b'1', 1, Arg::None, 0, 0, 0),
    memo(b'g', 0, Arg::Decimal, Memo::Get),
    memo(b'h', 1, Arg::Fixed(1), Memo::Get),
    memo(b'j', 1, Arg::Fixed(4), Memo::Get),
    memo(b'p', 0, Arg::Decimal, Memo::Put),
    memo(b'q', 1, Arg::Fixed(1), Memo::Put),
    memo(b'r', 1, Arg::Fixed(4), Memo::Put),
    memo(0x94, 4, Arg::None, Memo::Memoize),
    op(0x82, 2, Arg::Fixed(1), 0, 1),
    op(0x83, 2, Arg::Fixed(2), 0, 1),
    op(0x84, 2, Arg::Fixed(4), 0, 1),
    op(b'c', 0, Arg::NamePair, 0, 1),
    op(0x93, 4, Arg::None, 2, 1),
    op(b'R', 0, Arg::None, 2, 1),
    op(b'b', 0, Arg::None, 2, 1),
    marked(b'i', 0, Arg::NamePair, 0, 0, 1),
    marked(b'o', 1, Arg::None, 1, 0, 1),
    op(0x81, 2, Arg::None, 2, 1),
    op(0x92, 4, Arg::None, 3, 1),
    op(FRAME, 4, Arg::Fixed(8), 0, 0),
    op(b'P', 0, Arg::Line, 0, 1),
    op(b'Q', 1, Arg::None, 1, 1),
];

/// Memo keys remembered; a stream that puts more within one head is
/// still walked, its later keys taken on trust.
const MAX_MEMO: usize = 4096;

/// How far a walk went.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// The next opcode, at this offset.
    Next(usize),
    /// The data ended inside an argument.
    Short,
    /// Not a pickle.
    Bad,
}

/// The unpickler's stack, as counts: items in the current frame, and the
/// frames that marks saved.
#[derive(Default)]
struct Stack {
    items: usize,
    marks: Vec<usize>,
    memo: std::collections::HashSet<u64>,
    memo_full: bool,
}

impl Stack {
    fn apply(&mut self, e: Effect) -> bool {
        if let Some(above) = e.mark {
            if self.items < above {
                return false;
            }
            let Some(saved) = self.marks.pop() else {
                return false;
            };
            self.items = saved;
        }
        if self.items < e.pop {
            return false;
        }
        self.items = self.items - e.pop + e.push;
        true
    }

    fn remember(&mut self, key: u64) {
        if self.memo.len() < MAX_MEMO {
            self.memo.insert(key);
        } else {
            self.memo_full = true;
        }
    }

    fn knows(&self, key: u64) -> bool {
        self.memo_full || self.memo.contains(&key)
    }
}

/// The protocol of the pickle `data` starts with, when it is one.
/// `whole`: `data` is the whole stream (running out then means it is cut
/// short, not that the head ended).
pub fn protocol(data: &[u8], whole: bool) -> Option<u8> {
    let mut stack = Stack::default();
    let mut at = 0usize;
    let mut ops = 0usize;
    let mut proto = 0u8;
    loop {
        let Some(&code) = data.get(at) else {
            return (!whole && ops >= MIN_OPS_AT_BOUND).then_some(proto);
        };
        ops += 1;
        let step = match code {
            STOP => {
                let done = stack.items == 1 && stack.marks.is_empty();
                let last = at + 1 == data.len() && whole;
                return (done && (last || ops >= MIN_OPS_TRAILING)).then_some(proto);
            }
            MARK => {
                stack.marks.push(stack.items);
                stack.items = 0;
                Step::Next(at + 1)
            }
            POP => {
                if stack.items > 0 {
                    stack.items -= 1;
                } else if let Some(saved) = stack.marks.pop() {
                    stack.items = saved;
                } else {
                    return None;
                }
                Step::Next(at + 1)
            }
            PROTO if at == 0 => match data.get(1) {
                Some(&p) if p <= 5 => {
                    proto = p;
                    Step::Next(2)
                }
                Some(_) => Step::Bad,
                None => Step::Short,
            },
            _ => match OPS.iter().find(|o| o.code == code) {
                Some(o) => {
                    proto = proto.max(o.proto);
                    walk_op(o, data, at, &mut stack)
                }
                None => Step::Bad,
            },
        };
        match step {
            Step::Next(next) => at = next,
            Step::Short => return (!whole && ops >= MIN_OPS_AT_BOUND).then_some(proto),
            Step::Bad => return None,
        }
    }
}

/// One opcode other than the four `protocol` handles: its argument, its
/// memo use and its effect on the stack.
fn walk_op(o: &Op, data: &[u8], at: usize, stack: &mut Stack) -> Step {
    let (next, key) = match argument(o.arg, data, at + 1) {
        Ok(v) => v,
        Err(step) => return step,
    };
    match o.memo {
        Memo::Get if !key.is_some_and(|k| stack.knows(k)) => return Step::Bad,
        Memo::Put => match key {
            Some(k) => stack.remember(k),
            None => return Step::Bad,
        },
        Memo::Memoize => {
            let k = stack.memo.len() as u64;
            stack.remember(k);
        }
        _ => {}
    }
    if stack.apply(o.effect) {
        Step::Next(next)
    } else {
        Step::Bad
    }
}

/// Where the argument at `at` ends, and its value when it is a number.
fn argument(arg: Arg, data: &[u8], at: usize) -> Result<(usize, Option<u64>), Step> {
    let slice = |len: usize| {
        data.get(at..at.checked_add(len).ok_or(Step::Bad)?)
            .ok_or(Step::Short)
    };
    match arg {
        Arg::None => Ok((at, None)),
        Arg::Fixed(n) => {
            let b = slice(n)?;
            let value = b.iter().rev().fold(0u64, |v, &x| (v << 8) | u64::from(x));
            Ok((at + n, Some(value)))
        }
        Arg::Counted(n) => {
            let b = slice(n)?;
            let len = b.iter().rev().fold(0u64, |v, &x| {
                v.saturating_mul(256).saturating_add(u64::from(x))
            });
            let len = usize::try_from(len).map_err(|_| Step::Short)?;
            let end = (at + n).checked_add(len).ok_or(Step::Short)?;
            if end > data.len() {
                return Err(Step::Short);
            }
            Ok((end, None))
        }
        Arg::Decimal | Arg::Float | Arg::Quoted | Arg::Line => {
            let line = line_at(data, at)?;
            let value = match arg {
                Arg::Decimal => Some(decimal(line).ok_or(Step::Bad)?),
                Arg::Float if !float(line) => return Err(Step::Bad),
                Arg::Quoted if !quoted(line) => return Err(Step::Bad),
                _ => None,
            };
            Ok((at + line.len() + 1, value))
        }
        Arg::NamePair => {
            let module = line_at(data, at)?;
            let name = line_at(data, at + module.len() + 1)?;
            if !dotted_name(module) || !dotted_name(name) {
                return Err(Step::Bad);
            }
            Ok((at + module.len() + name.len() + 2, None))
        }
    }
}

/// The bytes from `at` to the next newline (not included).
fn line_at(data: &[u8], at: usize) -> Result<&[u8], Step> {
    let rest = data.get(at..).ok_or(Step::Short)?;
    let end = rest.iter().position(|&b| b == b'\n').ok_or(Step::Short)?;
    Ok(&rest[..end])
}

/// A decimal line's value (`INT`'s `00`/`01` booleans, `LONG`'s `L`, a
/// sign); `None` when it is not one.
fn decimal(line: &[u8]) -> Option<u64> {
    let line = line.strip_suffix(b"L").unwrap_or(line);
    let digits = line
        .strip_prefix(b"-")
        .or_else(|| line.strip_prefix(b"+"))
        .unwrap_or(line);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(digits.iter().fold(0u64, |v, &d| {
        v.wrapping_mul(10).wrapping_add(u64::from(d - b'0'))
    }))
}

fn float(line: &[u8]) -> bool {
    std::str::from_utf8(line).is_ok_and(|s| s.parse::<f64>().is_ok())
}

/// `'…'` or `"…"`, as `repr` writes a string.
fn quoted(line: &[u8]) -> bool {
    line.len() >= 2 && (line[0] == b'\'' || line[0] == b'"') && line.last() == Some(&line[0])
}

/// A module or qualified name: identifier characters and dots.
fn dotted_name(line: &[u8]) -> bool {
    !line.is_empty()
        && !line[0].is_ascii_digit()
        && line
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
}
