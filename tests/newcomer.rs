//! Issue 11, "the newcomer's path": what an operator meets in the first ten
//! minutes, each checked on the real binary — the message, the exit code,
//! and that nothing was left behind. Grouped under `tests/newcomer/`:
//! `help` (--help, completions, man pages, recipe refusals), `serve` (what
//! `--store` and `--listen` may be, /readyz), `hints` (the refusals of
//! create, verify and import, and Ctrl-C).

mod bundle_kit;

mod newcomer {
    pub mod common;

    mod help;
    mod hints;
    mod serve;
}
