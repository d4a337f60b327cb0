//! Why the request itself is wrong (exit code 2): a flag's value, a
//! combination of flags, the `--out` place, a list given by a flag, the
//! signed series, or the bundle `bundle sign` was given. Grouped by where
//! the fault is, as uv groups its errors: each kind is its own enum with
//! the values it names as fields, and [`UsageError`] is the one type
//! [`super::CreateError::Usage`] wraps, so that one match decides the exit
//! code.
//!
//! Invariant: every fault here is fixed by changing the command line or
//! its files, never by running again; each message names the flag or the
//! file, what was found and what is expected, and a cause, where there is
//! one, is a `#[source]`, never repeated in the message.

use thiserror::Error;

mod bundle_file;
mod flags;
mod lists;
mod out;
mod request;
mod series;

pub use bundle_file::BundleFileError;
pub use flags::FlagError;
pub use lists::ListError;
pub use out::OutError;
pub use request::RequestError;
pub use series::SeriesError;

/// The command line or the spec file is wrong (exit code 2).
#[derive(Debug, Error)]
pub enum UsageError {
    /// One flag's value is not of the shape it takes.
    #[error(transparent)]
    Flag(#[from] FlagError),
    /// Flags that must go together, must not, or name what is not there.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// `--out` names a place the bundle cannot be written to.
    #[error(transparent)]
    Out(#[from] OutError),
    /// A list named by a flag (`--want`, `--need`, `--have`) cannot be used.
    #[error(transparent)]
    List(#[from] ListError),
    /// The signed series (`--sequence`, `--expires`, the counter) refuses
    /// this bundle.
    #[error(transparent)]
    Series(#[from] SeriesError),
    /// `bundle sign` was given something that is not a bundle it can sign.
    #[error(transparent)]
    BundleFile(#[from] BundleFileError),
}

/// Each kind converts straight into [`super::CreateError`], so a call site
/// writes `Err(FlagError::Jobs { .. }.into())`.
macro_rules! into_create_error {
    ($($kind:ty),*) => {$(
        impl From<$kind> for super::CreateError {
            fn from(e: $kind) -> Self {
                super::CreateError::Usage(UsageError::from(e))
            }
        }
    )*};
}

into_create_error!(
    FlagError,
    RequestError,
    OutError,
    ListError,
    SeriesError,
    BundleFileError
);

/// `a, b, c`, or `none` for an empty list: the names a refusal offers.
fn listed(names: &[String], none: &str) -> String {
    if names.is_empty() {
        none.to_string()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::CreateError;
    use super::*;

    /// Every kind is a usage error (exit code 2), and says the same words
    /// as `CreateError` as on its own.
    #[test]
    fn every_kind_is_a_usage_error_with_its_own_words() {
        let kinds: Vec<(CreateError, &str)> = vec![
            (
                FlagError::Jobs { jobs: 0, max: 64 }.into(),
                "--jobs 0: expected 1 to 64 parallel downloads",
            ),
            (
                RequestError::OutRequired.into(),
                "--out PATH is required (or `out` in the spec file)",
            ),
            (
                OutError::Exists {
                    out: PathBuf::from("b.tar"),
                }
                .into(),
                "--out b.tar: it exists already; remove it or choose another name (a bundle is \
                 never overwritten)",
            ),
            (
                ListError::WantEmpty {
                    path: PathBuf::from("w.json"),
                }
                .into(),
                "--want w.json: the want-list is empty: the mirror missed nothing",
            ),
            (
                SeriesError::CounterAtEnd {
                    path: PathBuf::from("k.sequence"),
                }
                .into(),
                "sequence counter k.sequence is at its end",
            ),
            (
                BundleFileError::NoSequence {
                    path: PathBuf::from("b.tar"),
                }
                .into(),
                "b.tar: its manifest has no sequence, and a signed series without one cannot be \
                 protected against rollback; make the bundle again with `llmgw bundle create … \
                 --sequence N [--channel NAME]` (or `--sign-key KEY`, which takes the next number \
                 from KEY.sequence)",
            ),
        ];
        for (e, words) in kinds {
            assert!(e.is_usage(), "{e:?}");
            assert_eq!(llmgw_shared::chain(&e), words);
        }
    }

    /// A parser's refusal is the cause, printed once after the flag.
    #[test]
    fn a_want_list_that_does_not_parse_names_the_file_then_the_cause() {
        let error = llmgw_shared::WantList::from_json_bytes(b"[]").unwrap_err();
        let cause = llmgw_shared::chain(&error);
        let e = CreateError::from(ListError::NotAWantList {
            path: PathBuf::from("w.json"),
            error,
        });
        assert_eq!(e.to_string(), "--want w.json");
        assert_eq!(llmgw_shared::chain(&e), format!("--want w.json: {cause}"));
    }

    #[test]
    fn a_list_offered_is_its_names_or_none() {
        assert_eq!(listed(&[], "none"), "none");
        assert_eq!(listed(&["a".into(), "b".into()], "none"), "a, b");
    }
}
