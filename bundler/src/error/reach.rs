//! A host the run needs and cannot reach, as one run's refusal names it.

/// A host the run fetches from that cannot be reached.
#[derive(Debug)]
pub struct UnreachableHost {
    /// `host[:port]`.
    pub host: String,
    /// Why (`the name does not resolve`, `connection refused`).
    pub reason: String,
    /// How many planned files it would have served.
    pub files: usize,
    /// One of them, for the message.
    pub example: String,
    /// The flags that get past it.
    pub flags: String,
}

impl std::fmt::Display for UnreachableHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let others = match self.files {
            0 | 1 => String::new(),
            n => format!(
                " and {}",
                llmgw_shared::plural(n - 1, "other file", "other files")
            ),
        };
        write!(
            f,
            "{} ({}), for {}{others} (pass {})",
            self.host,
            self.reason,
            llmgw_shared::shown(&self.example),
            self.flags
        )
    }
}
