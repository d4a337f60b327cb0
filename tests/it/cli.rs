//! What an operator meets at the command line first: `--help`, completions
//! and man pages, `llmgw recipe`, and refusals that say what to do in the
//! words of the command at hand (the newcomer's path, issue 11).

pub mod common;

mod help;
mod hints;
mod recipe;
