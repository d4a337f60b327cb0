//! Which uv the rehearsal's node runs: the one the bundle carries for this
//! host's architecture (unpacked from the throwaway store), else the one on
//! `PATH` (said so in the report).
//!
//! Invariant: an archive is read with bounds (at most [`MAX_UV_BYTES`] for
//! the binary, entries by name only, never extracted by their own paths):
//! only the file named `uv` is written, to a path of our choosing.

use std::io::Read;
use std::path::{Path, PathBuf};

use llmgw_mirror::Store;
use llmgw_shared::manifest::Manifest;

/// The most bytes of the uv binary read out of its archive.
const MAX_UV_BYTES: u64 = 256 << 20;

/// The uv to run, and where it came from (`carried uv 0.13.9`, `uv on PATH`).
pub struct Uv {
    pub bin: PathBuf,
    pub from: String,
}

/// This host's architecture as the manifest names it.
pub fn host_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// The uv the bundle carries for this host, unpacked into `dir`; else uv
/// on `PATH`; none when neither is there.
pub fn find(store: &Store, m: &Manifest, dir: &Path) -> Option<Uv> {
    let triple = match host_arch() {
        "amd64" => "x86_64",
        "arm64" => "aarch64",
        _ => "",
    };
    let asset_name = format!("uv-{triple}-unknown-linux-gnu.tar.gz");
    let carried = m
        .releases
        .iter()
        .filter(|r| r.engine == "uv")
        .find_map(|r| {
            r.assets
                .iter()
                .find(|a| a.name == asset_name)
                .map(|a| (r, a))
        });
    if let Some((r, asset)) = carried {
        let bin = dir.join("uv");
        let runs = unpack(&store.blob_file(&asset.sha256), &bin).and_then(|()| {
            let o = std::process::Command::new(&bin).arg("--version").output()?;
            match o.status.success() {
                true => Ok(()),
                false => Err(std::io::Error::other(format!(
                    "`uv --version`: {}",
                    o.status
                ))),
            }
        });
        match runs {
            Ok(()) => {
                return Some(Uv {
                    bin,
                    from: format!("the carried uv {}", r.version),
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "the carried uv does not run on this host; trying PATH")
            }
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("uv"))
        .find(|p| p.is_file())
        .map(|bin| Uv {
            bin,
            from: "uv on PATH (the bundle carries none for this host)".into(),
        })
}

/// Writes the member named `uv` of the `.tar.gz` at `archive` to `to`,
/// executable.
fn unpack(archive: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let file = std::fs::File::open(archive)?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    for entry in tar.entries()? {
        let mut entry = entry?;
        let is_uv = entry.path()?.file_name().is_some_and(|n| n == "uv");
        if !is_uv || entry.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let mut bytes = Vec::new();
        (&mut entry).take(MAX_UV_BYTES).read_to_end(&mut bytes)?;
        std::fs::write(to, &bytes)?;
        std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755))?;
        return Ok(());
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!("{} holds no file named uv", archive.display()),
    ))
}
