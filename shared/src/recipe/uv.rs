//! uv, the tool that installs the Python engines: a GitHub release archive
//! per architecture, like llama.cpp.

use super::{Build, Host, RecipeError};

/// The one uv build for a machine. Like the Go table, the version and any
/// variant asked for do not change which archive it is: uv's asset names
/// carry no version, and there is one build per architecture.
pub(super) fn candidates(
    _version: &str,
    _variant: Option<&str>,
    h: &Host,
) -> Result<Vec<Build>, RecipeError> {
    let Some(arch) = super::machine_of(&h.arch) else {
        return Err(RecipeError::UnknownArch {
            engine: "uv".to_string(),
            arch: h.arch.clone(),
            published: &["amd64", "arm64"],
        });
    };
    Ok(vec![Build {
        variant: arch.to_string(),
        assets: vec![format!("uv-{arch}-unknown-linux-gnu.tar.gz")],
        binary: "uv".to_string(),
        ..Build::default()
    }])
}
