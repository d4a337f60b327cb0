//! What an operator at a terminal sees while a bundle is made (#29 item
//! 7): one progress line, redrawn in place, and no line per file; and in a
//! log (stderr not a terminal), the same line as plain text with no control
//! sequence. The terminal is a real pseudo-terminal: util-linux `script`
//! runs the real binary on one.

use super::common::{create, everything, fixture, ok, run, text};
use std::process::Command;

/// Erases the line the cursor is on after a carriage return: how the
/// progress line is drawn over itself.
const REDRAW: &str = "\r\x1b[K";

/// `c` run by `script` on a pseudo-terminal (stdout and stderr both), with
/// the same environment; its exit status is the command's (`-e`).
fn on_a_terminal(c: &Command) -> std::process::Output {
    let quote = |s: &std::ffi::OsStr| {
        let s = s.to_string_lossy();
        format!("'{}'", s.replace('\'', r"'\''"))
    };
    let line: Vec<String> = std::iter::once(c.get_program())
        .chain(c.get_args())
        .map(quote)
        .collect();
    let mut script = Command::new("script");
    script.args(["-qec", &line.join(" "), "/dev/null"]);
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => script.env(k, v),
            None => script.env_remove(k),
        };
    }
    script.output().expect("run script (util-linux)")
}

#[test]
fn a_terminal_gets_one_progress_line_redrawn_and_a_log_gets_plain_lines() {
    let fx = fixture();
    let dir = tempfile::tempdir().unwrap();

    let mut c = create(&fx, dir.path());
    everything(&mut c, &fx);
    c.arg("--out").arg(dir.path().join("tty.tar"));
    let o = on_a_terminal(&c);
    let screen = text(&o.stdout);
    assert!(o.status.success(), "exit {:?}: {screen:?}", o.status.code());
    assert!(
        screen.contains(REDRAW),
        "no redraw on a terminal: {screen:?}"
    );
    // The last drawing is the whole: every file, every byte.
    let last = screen
        .rsplit(REDRAW)
        .next()
        .expect("a progress line")
        .to_string();
    assert_whole(&last);
    // No line per file without -v.
    assert!(!screen.contains("downloaded and verified"), "{screen:?}");

    // The same run into a log: plain lines, no control sequence.
    let mut c = create(&fx, dir.path());
    everything(&mut c, &fx);
    c.arg("--out").arg(dir.path().join("log.tar"));
    let o = run(&mut c);
    ok(&o);
    let log = text(&o.stderr);
    assert!(!log.contains('\x1b') && !log.contains('\r'), "{log:?}");
    let last = log
        .lines()
        .rfind(|l| l.starts_with("fetched "))
        .unwrap_or_else(|| panic!("no progress line in the log: {log}"));
    assert_whole(last);
}

/// `line` is the progress line of a finished run: every file counted once,
/// every byte, nothing more.
#[track_caller]
fn assert_whole(line: &str) {
    let counts = line
        .strip_prefix("fetched ")
        .and_then(|l| l.split(" files").next())
        .and_then(|n| n.split_once('/'))
        .unwrap_or_else(|| panic!("not the progress line: {line:?}"));
    assert_eq!(
        counts.0, counts.1,
        "files done and the whole differ: {line:?}"
    );
    let bytes = line
        .split(", ")
        .nth(1)
        .and_then(|b| b.split_once(" of "))
        .unwrap_or_else(|| panic!("no bytes in the progress line: {line:?}"));
    let whole = bytes.1.split(" (").next().unwrap_or_default();
    assert_eq!(bytes.0, whole, "bytes done and the whole differ: {line:?}");
    assert!(line.contains("(100%)"), "{line:?}");
}

/// #53 item 3: on a terminal, a run that fails after the progress line is
/// drawn prints its fatal error (and every log line) on a line of its own,
/// never glued to the progress line (`…5m17s leftllmgw: https://…`).
#[test]
fn a_fatal_error_on_a_terminal_starts_its_own_line() {
    let fx = fixture();
    let dir = tempfile::tempdir().unwrap();
    let path = format!(
        "/acme/tiny/resolve/{}/model.safetensors",
        llmgw_fixture::TINY_COMMIT
    );
    // Bytes arrive (the line is drawn), then the file turns out wrong: a
    // fatal error.
    fx.faults().wrong_bytes(&path);
    let mut c = create(&fx, dir.path());
    c.args(["--arch", "amd64", "--model", "acme/tiny"])
        .arg("--out")
        .arg(dir.path().join("tty.tar"));
    let o = on_a_terminal(&c);
    let screen = text(&o.stdout);
    assert_ne!(o.status.code(), Some(0), "{screen:?}");
    assert!(
        screen.contains(REDRAW),
        "no progress line drawn: {screen:?}"
    );
    let at = screen
        .rfind("llmgw: ")
        .unwrap_or_else(|| panic!("no fatal error: {screen:?}"));
    let before = &screen[..at];
    assert!(
        before.ends_with('\n') || before.ends_with(REDRAW),
        "the error is glued to what was on the line: {:?}",
        &before[before.len().saturating_sub(120)..]
    );
}
