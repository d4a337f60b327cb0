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

/// This host's architecture as the manifest names it (the recipe table's
/// spelling of `uname -m`).
pub fn host_arch() -> &'static str {
    llmgw_shared::recipe::go_arch_name(std::env::consts::ARCH).unwrap_or(std::env::consts::ARCH)
}

/// The uv the bundle carries for this host, unpacked into `dir`; else uv
/// on `PATH`; none when neither is there.
pub fn find(store: &Store, m: &Manifest, dir: &Path) -> Option<Uv> {
    // The archive for this host is the recipe table's (uv has one per
    // architecture, whatever its version).
    let carried = m
        .releases
        .iter()
        .filter(|r| r.engine == "uv")
        .find_map(|r| {
            let builds = llmgw_shared::recipe::builds("uv", &r.version, host_arch()).ok()?;
            let names: Vec<&String> = builds.iter().flat_map(|b| &b.assets).collect();
            r.assets
                .iter()
                .find(|a| names.contains(&&a.name))
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

#[cfg(test)]
mod tests {
    use super::*;
    use llmgw_shared::manifest::{Asset, Release};

    /// A `.tar.gz` holding `dir/uv` with `body`.
    fn archive(body: &[u8]) -> Vec<u8> {
        let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::fast(),
        ));
        let mut h = tar::Header::new_gnu();
        h.set_size(body.len() as u64);
        h.set_mode(0o755);
        h.set_cksum();
        b.append_data(&mut h, "uv-dir/uv", body).unwrap();
        b.into_inner().unwrap().finish().unwrap()
    }

    /// The carried uv of this host's archive is unpacked and used when it
    /// runs; one that does not run is passed over for the one on PATH.
    #[test]
    fn the_carried_uv_is_used_when_it_runs() {
        let name =
            &llmgw_shared::recipe::builds("uv", "0.12.20", host_arch()).unwrap()[0].assets[0];
        for (body, carried) in [
            (&b"#!/bin/sh\nexit 0\n"[..], true),
            (&b"\x7fELF not really"[..], false),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::at(dir.path().join("store"));
            let bytes = archive(body);
            let sha = llmgw_shared::Sha256::of(&bytes);
            let blob = store.blob_file(&sha);
            std::fs::create_dir_all(blob.parent().unwrap()).unwrap();
            std::fs::write(&blob, &bytes).unwrap();
            let mut m = Manifest::new(vec![host_arch().into()], 0);
            m.releases.push(Release {
                repo: "astral-sh/uv".parse().unwrap(),
                tag: "0.12.20".into(),
                engine: "uv".into(),
                version: "0.12.20".into(),
                builds: vec![],
                assets: vec![Asset {
                    name: name.clone(),
                    size: bytes.len() as u64,
                    sha256: sha,
                    publisher_digests: vec![],
                    content_type: None,
                }],
                signature: None,
            });
            let found = find(&store, &m, dir.path());
            let from = found.map(|u| u.from).unwrap_or_default();
            assert_eq!(
                from.starts_with("the carried uv 0.12.20"),
                carried,
                "{from}"
            );
        }
    }
}
