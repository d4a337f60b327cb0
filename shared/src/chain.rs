//! An error and its causes as one line, each said once.
//!
//! The convention of every crate here: an error's message describes its own
//! layer, and what caused it is its `source()`, not repeated in the message.
//! [`Chain`] is the one walk that prints such an error: its message, then
//! each cause after `": "`. A cause whose text the line already holds is
//! not printed again: this project's errors never repeat their source
//! (`scripts/structure.py` checks it), but other crates' may, and do —
//! `object_store`'s errors interpolate their source in their own message —
//! so such an error reads the same as one that follows the convention. A cause may
//! quote what came from outside (a parser's message), so each is printed
//! through [`shown_message`]: escaped and cut.

use std::error::Error;
use std::fmt;

use crate::shown::shown_message;

/// Displays an error and its causes, `outer: inner: innermost`.
pub struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&chain(self.0))
    }
}

/// [`Chain`] as a `String`.
pub fn chain(e: &(dyn Error + 'static)) -> String {
    let mut line = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = shown_message(&c.to_string()).to_string();
        if !text.is_empty() && !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        cause = c.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Layer {
        msg: &'static str,
        source: Option<Box<Layer>>,
    }

    impl fmt::Display for Layer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.msg)
        }
    }

    impl Error for Layer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.source.as_deref().map(|s| s as &(dyn Error + 'static))
        }
    }

    fn layers(msgs: &[&'static str]) -> Layer {
        let mut inner: Option<Box<Layer>> = None;
        for m in msgs.iter().rev() {
            inner = Some(Box::new(Layer {
                msg: m,
                source: inner,
            }));
        }
        *inner.expect("at least one layer")
    }

    #[test]
    fn every_layer_once() {
        let e = layers(&["reading /s/x", "permission denied"]);
        assert_eq!(chain(&e), "reading /s/x: permission denied");
        let e = layers(&["a", "b", "c"]);
        assert_eq!(Chain(&e).to_string(), "a: b: c");
        assert_eq!(chain(&layers(&["alone"])), "alone");
        // A cause is escaped: it may quote a file's bytes.
        let e = layers(&["reading x", "bad \u{1b}[2J"]);
        assert_eq!(chain(&e), "reading x: bad \\u{1b}[2J");
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let e = layers(&[
            "/s/x: permission denied; check the owner",
            "permission denied",
            "os error 13",
        ]);
        assert_eq!(
            chain(&e),
            "/s/x: permission denied; check the owner: os error 13"
        );
    }
}
