//! One module per command group: its clap argument structs and its `run`.

pub mod recipe;

use std::io::{ErrorKind, Write};

use anyhow::Context;

/// Writes a command's output to stdout. A reader that went away (`| head`)
/// is not a failure of the command.
pub fn print(out: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to stdout"),
    }
}
