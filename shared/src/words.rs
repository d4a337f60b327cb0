//! How a count is said in a sentence an operator reads: `1 bundle held`,
//! `2 bundles held`, `0 files`.
//!
//! Invariant: every user-facing count of things goes through [`plural`] (or
//! [`noun`] where the number is printed apart), so no message says
//! "1 bundles" or "2 file"; English plurals are irregular (`entry`,
//! `entries`), so the caller names both forms and nothing is guessed.

/// `n` and the noun in the form `n` takes: `plural(1, "bundle", "bundles")`
/// is `1 bundle`, `plural(0, "bundle", "bundles")` is `0 bundles`.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", noun(n, one, many))
}

/// The noun alone in the form count `n` takes (the count printed apart).
pub fn noun<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_takes_the_singular_and_every_other_count_the_plural() {
        assert_eq!(plural(1, "bundle", "bundles"), "1 bundle");
        assert_eq!(plural(0, "bundle", "bundles"), "0 bundles");
        assert_eq!(plural(2, "bundle", "bundles"), "2 bundles");
        assert_eq!(plural(21, "entry", "entries"), "21 entries");
        assert_eq!(plural(1, "entry", "entries"), "1 entry");
        let max = usize::MAX;
        assert_eq!(plural(max, "host", "hosts"), format!("{max} hosts"));
        assert_eq!(noun(1, "file", "files"), "file");
        assert_eq!(noun(11, "file", "files"), "files");
    }
}
