//! What a rehearsal found: one row per thing a node would do, with what
//! happened and, for a failure, the fix on the connected side.
//!
//! Invariant: every string that came from the bundle or a client's output
//! is shown escaped and cut (`llmgw_shared::shown`) in the text table; the
//! JSON carries the same rows for scripts.

use serde::Serialize;

/// How one check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// A node would get what it asks for.
    Pass,
    /// A node would fail here: the bundle must be made again.
    Fail,
    /// Not a fault of the bundle, but something a node must have or know
    /// (its own CPython), or what this host could not play (another arch).
    Note,
}

/// One thing a node does, and how it went.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What part of the bundle: `node env`, `python`, `hub`, `image`,
    /// `chart`, `release`.
    pub area: &'static str,
    /// What was tried (`acme/tiny@main: 4 files`, `uv pip install -r …`).
    pub subject: String,
    /// How it went.
    pub verdict: Verdict,
    /// What happened (the client's own words, cut), for a failure or a note.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// What to do on the connected side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    /// A passed check.
    pub fn pass(area: &'static str, subject: impl Into<String>) -> Self {
        Self {
            area,
            subject: subject.into(),
            verdict: Verdict::Pass,
            detail: String::new(),
            fix: None,
        }
    }

    /// A failed check, with what happened and the fix.
    pub fn fail(
        area: &'static str,
        subject: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self {
            area,
            subject: subject.into(),
            verdict: Verdict::Fail,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    /// A note: what a node must have, or what this host could not play.
    pub fn note(area: &'static str, subject: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            area,
            subject: subject.into(),
            verdict: Verdict::Note,
            detail: detail.into(),
            fix: None,
        }
    }
}

/// Everything a rehearsal found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The bundle's manifest sha256.
    pub manifest_sha256: String,
    /// Where the clients ran: `private network namespace` or why not.
    pub isolation: String,
    /// Every check, in the order they ran.
    pub checks: Vec<Check>,
}

impl Report {
    /// Whether any check failed.
    pub fn failed(&self) -> bool {
        self.checks.iter().any(|c| c.verdict == Verdict::Fail)
    }

    /// The table an operator reads: one line per check, failures and notes
    /// with their detail and fix on the lines after, then a summary.
    pub fn to_text(&self) -> String {
        use llmgw_shared::{shown, shown_message};
        let mut out = format!(
            "rehearsal of bundle {} ({})\n",
            self.manifest_sha256, self.isolation
        );
        for c in &self.checks {
            let mark = match c.verdict {
                Verdict::Pass => "ok  ",
                Verdict::Fail => "FAIL",
                Verdict::Note => "note",
            };
            out.push_str(&format!("{mark} {:<8} {}\n", c.area, shown(&c.subject)));
            if !c.detail.is_empty() {
                out.push_str(&format!("       {}\n", shown_message(&c.detail)));
            }
            if let Some(fix) = &c.fix {
                out.push_str(&format!("       fix: {fix}\n"));
            }
        }
        let count = |v| self.checks.iter().filter(|c| c.verdict == v).count();
        out.push_str(&format!(
            "{}: {} passed, {} failed, {}\n",
            llmgw_shared::plural(self.checks.len(), "check", "checks"),
            count(Verdict::Pass),
            count(Verdict::Fail),
            llmgw_shared::plural(count(Verdict::Note), "note", "notes")
        ));
        out
    }
}
