//! A spec file that does not parse, said on one line: the binary prints an
//! error's chain as one line, and the TOML parser's own message quotes the
//! file over several (escaped in that line, they would read as `\n`).

use std::fmt;

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
