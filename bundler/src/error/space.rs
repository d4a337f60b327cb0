//! Why a run does not fit on disk: the numbers, for the refusal that comes
//! before any large download ([`crate::space::check`]).

use std::fmt;
use std::path::PathBuf;

/// Why a run does not fit: the numbers, for the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shortfall {
    /// The cache and the output share a filesystem that cannot hold both.
    Shared {
        cache: PathBuf,
        out_dir: PathBuf,
        free: u64,
        cache_need: u64,
        out_need: u64,
    },
    /// On their own filesystems, one or both do not fit.
    Apart(Vec<Short>),
}

/// One folder that does not fit what it must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Short {
    /// "the cache" or "the output folder".
    pub what: &'static str,
    pub path: PathBuf,
    pub need: u64,
    pub free: u64,
}

/// `N bytes (1.50 MiB)`.
fn amount(n: u64) -> String {
    format!("{n} bytes ({})", llmgw_shared::progress::human_bytes(n))
}

impl fmt::Display for Shortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shortfall::Shared {
                cache,
                out_dir,
                free,
                cache_need,
                out_need,
            } => write!(
                f,
                "the cache {} and the output folder {} share a filesystem with {} free, and this \
                 bundle needs {} ({} to download into the cache, {} for the bundle)",
                cache.display(),
                out_dir.display(),
                amount(*free),
                amount(cache_need.saturating_add(*out_need)),
                amount(*cache_need),
                amount(*out_need)
            ),
            Shortfall::Apart(short) => {
                for (i, s) in short.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(
                        f,
                        "{} {} needs {} and has {} free",
                        s.what,
                        s.path.display(),
                        amount(s.need),
                        amount(s.free)
                    )?;
                }
                Ok(())
            }
        }
    }
}
