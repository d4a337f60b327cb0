//! The block `llmgw mirror env` prints for this bundle, run as printed: a
//! node pastes it into its shell, so it must run there without an error.
//!
//! Invariant: the block is the one the command prints (the same
//! `node_env` over the same manifest), run by bash with `-eu`.

use std::process::Stdio;

use llmgw_mirror::NodeEnv;

use crate::report::Check;

/// The row for the block.
pub async fn check(env: &NodeEnv) -> Check {
    let block = env.to_shell();
    let lines = block.lines().filter(|l| !l.starts_with('#')).count();
    let subject = format!("the {lines} lines `llmgw mirror env` prints, run as printed");
    let run = tokio::process::Command::new("bash")
        .args(["-euc", &block])
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .stdin(Stdio::null())
        .output()
        .await;
    match run {
        Ok(o) if o.status.success() => Check::pass("node env", subject),
        Ok(o) => Check::fail(
            "node env",
            subject,
            format!(
                "{}: {}",
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            "report it, with this line, as a fault of llmgw",
        ),
        Err(e) => Check::fail(
            "node env",
            subject,
            format!("cannot run bash: {e}"),
            "install bash",
        ),
    }
}
