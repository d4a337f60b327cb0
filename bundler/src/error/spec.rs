//! What is wrong with a spec: a spec file that does not parse, said on
//! one line (the binary prints an error's chain as one line, and the TOML
//! parser's own message quotes the file over several; escaped in that
//! line, they would read as `\n`), and a `--model`/`--dataset` value that
//! is not `REPO[@REVISION][:GLOB,...]`.

use std::fmt;

use thiserror::Error;

/// The TOML parser's words for what is wrong, without its quote of the
/// file: where it is wrong is the line and column of
/// [`super::CreateError::SpecFile`].
#[derive(Debug)]
pub struct TomlSyntax(pub Box<toml::de::Error>);

impl fmt::Display for TomlSyntax {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.message().trim_end())
    }
}

impl std::error::Error for TomlSyntax {}

/// Why a `REPO[@REVISION][:GLOB,...]` value is refused, printed by the
/// chain after [`super::CreateError::RepoArg`] names the flag and value.
#[derive(Debug, Error)]
pub enum RepoArgFault {
    /// The repository id or the revision is not a safe name.
    #[error(transparent)]
    Name(#[from] llmgw_shared::UnsafeName),
    /// Two commas in a row, or one at an end.
    #[error("an empty glob")]
    EmptyGlob,
    /// A `:` with nothing after it.
    #[error("no glob after ':'")]
    NoGlob,
    /// A pattern that does not compile; globset's words are its source.
    #[error("glob {pattern:?}")]
    Glob {
        /// The pattern as given.
        pattern: String,
        /// What globset says is wrong with it.
        #[source]
        error: globset::Error,
    },
}
