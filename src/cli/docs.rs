//! `llmgw completions SHELL` and `llmgw manpage`: generated from the same
//! clap definition as `--help`, so they can never disagree with it.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use clap_complete::Shell;

use super::print;

/// The shells completion scripts are made for.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum ShellArg {
    Bash,
    Zsh,
    Fish,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: ShellArg,
}

#[derive(Args, Debug)]
pub struct ManpageArgs {
    /// Write llmgw.1 and a page per command (llmgw-bundle-create.1, ...) into
    /// this folder instead of printing llmgw.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn completions(a: CompletionsArgs, mut cmd: clap::Command) -> anyhow::Result<()> {
    let shell = match a.shell {
        ShellArg::Bash => Shell::Bash,
        ShellArg::Zsh => Shell::Zsh,
        ShellArg::Fish => Shell::Fish,
    };
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "llmgw", &mut out);
    print(&String::from_utf8_lossy(&out))
}

pub fn manpage(a: ManpageArgs, cmd: clap::Command) -> anyhow::Result<()> {
    let Some(dir) = a.dir else {
        let mut out = Vec::new();
        clap_mangen::Man::new(cmd)
            .render(&mut out)
            .context("rendering the man page")?;
        return print(&String::from_utf8_lossy(&out));
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Vec::new();
    write_pages(cmd, &dir, &mut written)?;
    let mut listing = String::new();
    for p in &written {
        listing.push_str(&format!("{}\n", p.display()));
    }
    print(&listing)
}

/// The page of `cmd` and, depth first, of each of its subcommands.
fn write_pages(
    cmd: clap::Command,
    dir: &std::path::Path,
    written: &mut Vec<PathBuf>,
) -> anyhow::Result<()> {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    collect(&cmd, dir, written)
}

fn collect(
    cmd: &clap::Command,
    dir: &std::path::Path,
    written: &mut Vec<PathBuf>,
) -> anyhow::Result<()> {
    let page = clap_mangen::Man::new(cmd.clone());
    let path = page
        .generate_to(dir)
        .with_context(|| format!("writing a man page into {}", dir.display()))?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        collect(sub, dir, written)?;
    }
    Ok(())
}
