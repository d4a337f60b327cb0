//! A node as it shows itself to the mirror: the `kernels` client's user
//! agent (`kernels/0.17.2; python/3.12; backend/cu130;
//! platform/x86_64-linux; torch/2.11.0+cu130; …`), and the short form a
//! miss records it in (`torch2.11,cu130,x86_64`), which a want-list carries
//! back to `bundle create`.
//!
//! Invariant: both are parsed, never trusted: an unknown backend, CPU or
//! torch version is no node (`None`), and a node's short form holds only
//! letters, digits, `.`, `_` and `,`.

use super::Target;
use super::variant::backend_of;

impl Target {
    /// The node a `kernels` client's user agent describes, if it is one
    /// (a Linux node: the only OS whose builds a bundle carries).
    pub fn from_user_agent(ua: &str) -> Option<Target> {
        let fields = |key: &str| {
            ua.split(';')
                .filter_map(|p| p.trim().split_once('/'))
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.trim())
        };
        fields("kernels")?;
        let (platform, os) = fields("platform")?.split_once('-')?;
        if os != "linux" {
            return None;
        }
        let torch = match fields("torch") {
            Some(v) => Some(major_minor(v)?),
            None => None,
        };
        Some(Target {
            platform: word(platform)?.to_string(),
            torch,
            backend: backend_of(fields("backend")?)?,
        })
    }

    /// `torch2.11,cu130,x86_64` (`none` for no torch): what a miss records.
    pub fn short(&self) -> String {
        let torch = self
            .torch
            .map_or("none".to_string(), |(a, b)| format!("torch{a}.{b}"));
        format!("{torch},{},{}", self.backend, self.platform)
    }

    /// The node [`Target::short`] wrote, or `None`.
    pub fn parse_short(s: &str) -> Option<Target> {
        let mut parts = s.split(',');
        let (torch, backend, platform) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let torch = match torch {
            "none" => None,
            t => Some(major_minor(t.strip_prefix("torch")?)?),
        };
        Some(Target {
            platform: word(platform)?.to_string(),
            torch,
            backend: backend_of(backend)?,
        })
    }
}

/// `2.11.0+cu130` → (2, 11).
fn major_minor(v: &str) -> Option<(u32, u32)> {
    let mut n = v.split(['.', '+']);
    Some((n.next()?.parse().ok()?, n.next()?.parse().ok()?))
}

fn word(s: &str) -> Option<&str> {
    (!s.is_empty() && s.len() <= 32 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        .then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::Backend;

    #[test]
    fn the_client_s_user_agent_names_its_node() {
        let ua = "kernels/0.17.2; hf_hub/2.5.0; python/3.11; backend/cu130; \
                  platform/x86_64-linux; file_type/kernel; torch/2.11.0+cu130; glibc/2.36";
        let t = Target::from_user_agent(ua).unwrap();
        assert_eq!(t.short(), "torch2.11,cu130,x86_64");
        assert_eq!(Target::parse_short(&t.short()), Some(t));
        let cpu = "kernels/0.17.2; python/3.11; backend/cpu; platform/aarch64-linux";
        let t = Target::from_user_agent(cpu).unwrap();
        assert_eq!(
            (t.short().as_str(), t.backend),
            ("none,cpu,aarch64", Backend::Cpu)
        );
        assert_eq!(Target::parse_short("none,cpu,aarch64"), Some(t));
    }

    #[test]
    fn anything_else_is_no_node() {
        for ua in [
            "hf_hub/2.5.0; python/3.11",
            "kernels/0.17.2; backend/cpu; platform/arm64-darwin",
            "kernels/0.17.2; backend/quantum; platform/x86_64-linux",
            "kernels/0.17.2; backend/cpu; platform/x86 64-linux",
            "kernels/0.17.2; backend/cpu; platform/x86_64-linux; torch/two",
        ] {
            assert_eq!(Target::from_user_agent(ua), None, "{ua}");
        }
        for s in [
            "",
            "torch2.11,cpu",
            "torch2,cpu,x86_64",
            "none,cpu,x86_64,x",
            "none,cpu,../x",
        ] {
            assert_eq!(Target::parse_short(s), None, "{s}");
        }
    }
}
