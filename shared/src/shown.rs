//! How text that came from outside is printed: escaped and cut short.
//!
//! Invariant: every string a bundle, a manifest, an upstream or a client
//! made up reaches a terminal or a log only through [`shown`], so it can
//! neither drive the terminal (escape sequences, `\r`), nor reorder what
//! the operator reads (bidi overrides such as U+202E, invisible
//! characters), nor flood the screen (a 512 MiB tar name). What is printed
//! is the text with each such character written as `\u{…}`, at most
//! [`MAX_SHOWN_CHARS`] characters of it, and the full length when cut.

use std::fmt;

/// The most characters of one untrusted string that are ever printed.
/// Longer than any real name (asset names, repo ids, paths people type).
pub const MAX_SHOWN_CHARS: usize = 200;

/// The most characters of a whole message printed when it may quote
/// untrusted text that no one escaped (a parser's error about a manifest).
pub const MAX_SHOWN_MESSAGE_CHARS: usize = 2000;

/// An untrusted string, ready for `{}`.
#[derive(Clone, Copy)]
pub struct Shown<'a> {
    text: &'a str,
    max_chars: usize,
}

/// Wraps untrusted text for printing; see the module docs.
pub fn shown(text: &str) -> Shown<'_> {
    Shown {
        text,
        max_chars: MAX_SHOWN_CHARS,
    }
}

/// Wraps a whole message that may quote untrusted text (a JSON parser's
/// error naming an unknown field, say): escaped like [`shown`], cut at
/// `MAX_SHOWN_MESSAGE_CHARS` (2000) characters, so a hostile message cannot
/// flood a terminal or a log.
pub fn shown_message(text: &str) -> Shown<'_> {
    Shown {
        text,
        max_chars: MAX_SHOWN_MESSAGE_CHARS,
    }
}

/// Characters that change how the text around them is laid out or hide
/// themselves: bidi embeddings, overrides, isolates and marks, zero-width
/// characters, line and paragraph separators, the byte-order mark. Names
/// refuse them ([`check_file_name`](crate::check_file_name) and its kin)
/// and [`shown`] escapes them.
pub fn is_invisible_or_bidi(c: char) -> bool {
    matches!(c,
        '\u{061C}'                      // Arabic letter mark
        | '\u{00AD}'                    // soft hyphen
        | '\u{180E}'                    // Mongolian vowel separator
        | '\u{200B}'..='\u{200F}'       // zero-width space/joiners, LRM, RLM
        | '\u{2028}'..='\u{202E}'       // separators, LRE RLE PDF LRO RLO
        | '\u{2060}'..='\u{206F}'       // word joiner, isolates LRI RLI FSI PDI, ...
        | '\u{FEFF}'                    // byte-order mark
        | '\u{FFF9}'..='\u{FFFB}'       // interlinear annotation
        | '\u{E0000}'..='\u{E007F}'     // tags
    )
}

/// A backslash is left as it is: escaping it would double the escapes of
/// text printed twice (a refused name inside a refused manifest's message),
/// and what matters is that no character acts on the terminal.
fn needs_escape(c: char) -> bool {
    c.is_control() || is_invisible_or_bidi(c)
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (written, (i, c)) in self.text.char_indices().enumerate() {
            if written >= self.max_chars {
                return write!(
                    f,
                    "…[cut: {} bytes in all, {} not shown]",
                    self.text.len(),
                    self.text.len() - i
                );
            }
            if needs_escape(c) {
                match c {
                    '\n' => f.write_str("\\n")?,
                    '\r' => f.write_str("\\r")?,
                    '\t' => f.write_str("\\t")?,
                    _ => write!(f, "\\u{{{:x}}}", c as u32)?,
                }
            } else {
                fmt::Write::write_char(f, c)?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_could_fool_a_terminal() {
        let s = shown("a\u{1b}[2Jb\u{202e}gpj.exe\r\n\tc\\d\u{200b}e\u{7f}f\u{9b}").to_string();
        assert_eq!(
            s,
            "a\\u{1b}[2Jb\\u{202e}gpj.exe\\r\\n\\tc\\d\\u{200b}e\\u{7f}f\\u{9b}"
        );
        assert!(
            s.chars()
                .all(|c| !c.is_control() && !is_invisible_or_bidi(c))
        );
        // Ordinary names pass through unchanged, non-ASCII letters included.
        assert_eq!(
            shown("ggml-org/llama.cpp b6123 café.gguf").to_string(),
            "ggml-org/llama.cpp b6123 café.gguf"
        );
    }

    #[test]
    fn long_text_is_cut_and_says_so() {
        let long = "x".repeat(1 << 20);
        let s = shown(&long).to_string();
        assert!(s.len() < 300, "{}", s.len());
        assert!(s.starts_with(&"x".repeat(MAX_SHOWN_CHARS)));
        assert!(
            s.ends_with("…[cut: 1048576 bytes in all, 1048376 not shown]"),
            "{s}"
        );
        let exact = "y".repeat(MAX_SHOWN_CHARS);
        assert_eq!(shown(&exact).to_string(), exact);
    }

    #[test]
    fn messages_get_a_longer_cut() {
        let long = format!("unknown field `\u{1b}[31m{}`", "k".repeat(5000));
        let s = shown_message(&long).to_string();
        assert!(s.starts_with("unknown field `\\u{1b}[31mkkk"), "{s}");
        assert!(s.contains("…[cut: 5021 bytes in all"), "{s}");
        assert!(s.chars().count() < MAX_SHOWN_MESSAGE_CHARS + 60);
    }

    #[test]
    fn bytes_that_are_not_utf8() {
        assert_eq!(format!("{:?}", shown("q\u{202e}")), "\"q\\u{202e}\"");
    }
}
