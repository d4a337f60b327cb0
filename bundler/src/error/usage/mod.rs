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
