//! `llmgw bundle verify|import VOLUME…` for volume sets: the words and
//! exit codes around llmgw-mirror's volumes module.

use std::path::PathBuf;

use crate::cli::progress::Blobs;
use anyhow::Context as _;
use llmgw_mirror::{Progressed, SetCheck, Slot};
use llmgw_shared::manifest::Manifest;

use super::print;

/// A piece as an operator knows it: the file it belongs to, and which chunk.
pub fn slot_name(
    m: &Manifest,
    names: &std::collections::BTreeMap<llmgw_shared::Sha256, String>,
    s: Slot,
) -> String {
    let Some(v) = &m.volumes else {
        return String::new();
    };
    match s {
        Slot::Piece { placement, piece } => {
            let pl = &v.placements[placement];
            let what = names
                .get(&pl.sha256)
                .cloned()
                .unwrap_or_else(|| pl.sha256.to_string());
            if pl.pieces.len() == 1 {
                what
            } else {
                format!("{what} (chunk {} of {})", piece + 1, pl.pieces.len())
            }
        }
        Slot::Parity(j) => format!("parity shard {}", j + 1),
    }
}

fn list(v: &[u32]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
    }
}

pub fn run_verify(
    paths: &[PathBuf],
    sha256: &llmgw_shared::BundleId,
    json_out: bool,
) -> anyhow::Result<()> {
    let progress = Blobs::new("verifying");
    let set = llmgw_mirror::verify_volumes(paths, sha256, &progress).context("volumes refused")?;
    let names = llmgw_mirror::blob_names(&set.manifest);
    let name = |s: Slot| slot_name(&set.manifest, &names, s);
    let lines: Vec<String> = set
        .volumes
        .iter()
        .map(|c| llmgw_mirror::describe_volume(set.count, c, &name))
        .collect();
    let passed = set.all_passed();
    if json_out {
        print(&format!("{}\n", verify_json(&set, &lines)?))?;
    } else {
        let mut out = lines.join("\n");
        out.push('\n');
        out.push_str(&format!(
            "bundle {}: whole data volumes {} of {}; missing: {}{}\n{}\nnothing was written\n",
            set.manifest_sha256,
            set.whole.len(),
            set.count,
            list(&set.missing()),
            if set.parity_count > 0 {
                format!(
                    "; whole parity volumes {} of {}",
                    set.whole_parity.len(),
                    set.parity_count
                )
            } else {
                String::new()
            },
            if set.missing().is_empty() {
                "these volumes hold the whole bundle".to_string()
            } else if set.importable() {
                format!(
                    "these volumes hold the whole bundle: {} missing volume(s) can be rebuilt from parity",
                    set.missing().len()
                )
            } else {
                "these volumes alone do not hold the whole bundle (import takes them in any \
                 order, over several runs)"
                    .to_string()
            }
        ));
        print(&out)?;
    }
    if !passed {
        anyhow::bail!(
            "some volumes are damaged or not of this bundle (listed above); do not carry them"
        );
    }
    Ok(())
}

/// A set of volumes checked, as `--json` prints it.
#[derive(serde::Serialize)]
struct SetJson<'a> {
    status: &'static str,
    manifest_sha256: &'a str,
    volumes_total: u32,
    parity_total: usize,
    whole_volumes: &'a std::collections::BTreeSet<u32>,
    /// Numbered from 1, as the files are.
    whole_parity_volumes: Vec<usize>,
    missing_volumes: Vec<u32>,
    importable: bool,
    volumes: Vec<CheckedJson<'a>>,
}

/// One volume of a set checked.
#[derive(serde::Serialize)]
struct CheckedJson<'a> {
    path: &'a std::path::Path,
    volume: Option<String>,
    ok: bool,
    duplicate: bool,
    report: &'a str,
}

fn verify_json(set: &SetCheck, lines: &[String]) -> serde_json::Result<serde_json::Value> {
    serde_json::to_value(SetJson {
        status: if set.all_passed() {
            "verified"
        } else {
            "damaged"
        },
        manifest_sha256: &set.manifest_sha256,
        volumes_total: set.count,
        parity_total: set.parity_count,
        whole_volumes: &set.whole,
        whole_parity_volumes: set.whole_parity.iter().map(|j| j + 1).collect(),
        missing_volumes: set.missing(),
        importable: set.importable(),
        volumes: set
            .volumes
            .iter()
            .zip(lines)
            .map(|(c, line)| CheckedJson {
                path: &c.path,
                volume: c
                    .result
                    .as_ref()
                    .ok()
                    .and_then(|r| r.which)
                    .map(|w| w.label()),
                ok: c.duplicate || c.result.as_ref().is_ok_and(|r| r.whole()),
                duplicate: c.duplicate,
                report: line,
            })
            .collect(),
    })
}

/// `bundle import VOLUME…`: says what the volumes brought and what is
/// still missing. Exit 0 when every volume given was accepted (the bundle
/// imported, or accepted so far); 1 when one was refused.
pub fn print_import(
    a: &super::ImportArgs,
    outcome: llmgw_mirror::VolumesOutcome,
) -> anyhow::Result<()> {
    use llmgw_mirror::VolumesOutcome;
    let (p, published) = match outcome {
        VolumesOutcome::Published { progress, outcome } => (progress, Some(outcome)),
        VolumesOutcome::Incomplete(p) => (p, None),
    };
    let names = llmgw_mirror::blob_names(&p.manifest);
    let name = |s: Slot| slot_name(&p.manifest, &names, s);
    let lines = taken_lines(&p, &name);
    let refused = p.refused_any();
    match published {
        Some(outcome) => {
            for l in &lines {
                eprintln!("{l}");
            }
            super::print_outcome(&a.store.path, a.output.json, outcome)?;
        }
        None if a.output.json => print(&format!("{}\n", incomplete_json(&p, &lines)?))?,
        None => print(&incomplete_text(&p, &lines))?,
    }
    if refused {
        anyhow::bail!(
            "some volumes given were refused or damaged (listed above); what they held that \
             verified is kept"
        );
    }
    Ok(())
}

fn taken_lines(p: &Progressed, name: &dyn Fn(Slot) -> String) -> Vec<String> {
    let mut out = Vec::new();
    for t in &p.taken {
        let line = match &t.result {
            Err(e) => format!("{}: REFUSED: {}", t.path.display(), llmgw_shared::Chain(e)),
            Ok(r) if r.skipped => format!(
                "{}: {} was taken in already (seen twice): skipped",
                t.path.display(),
                r.which.map_or("the volume".into(), |w| w.label())
            ),
            Ok(_) => llmgw_mirror::describe_volume_read(p.count, &t.path, &t.result, false, name),
        };
        out.push(line);
    }
    for v in &p.rebuilt {
        out.push(format!(
            "volume {v}: rebuilt from parity, every piece hashed and matched"
        ));
    }
    out
}

fn incomplete_text(p: &Progressed, lines: &[String]) -> String {
    let mut out = lines.join("\n");
    out.push('\n');
    out.push_str(&format!(
        "bundle {}: accepted so far, not imported yet (nothing is visible in the store)\n\
         volumes seen: {}/{}; missing volumes: {}\n",
        p.manifest_sha256,
        p.whole.len(),
        p.count,
        list(&p.missing()),
    ));
    if p.parity_count > 0 {
        let held = p.parity_count - p.missing_parity().len();
        out.push_str(&format!(
            "parity volumes held: {held}/{}; missing parity volumes: {}\n",
            p.parity_count,
            list(
                &p.missing_parity()
                    .iter()
                    .map(|j| *j as u32 + 1)
                    .collect::<Vec<_>>()
            )
        ));
        let lost = p.missing().len();
        if lost > held {
            out.push_str(&format!(
                "parity rebuilds at most {held} missing volume(s) with the parity volumes held \
                 ({} at most with all of them); {lost} are missing: bring {} more of volumes {} \
                 or parity volumes {}\n",
                p.parity_count,
                lost - held,
                list(&p.missing()),
                list(
                    &p.missing_parity()
                        .iter()
                        .map(|j| *j as u32 + 1)
                        .collect::<Vec<_>>()
                )
            ));
        }
    }
    out.push_str(&format!(
        "files still incomplete: {}; bytes still needed: {}\n",
        p.incomplete.len(),
        p.bytes_needed
    ));
    for i in p.incomplete.iter().take(20) {
        out.push_str(&format!(
            "  incomplete: {} ({} bytes missing)\n",
            llmgw_shared::shown(&i.name),
            i.bytes_missing
        ));
    }
    if p.incomplete.len() > 20 {
        out.push_str(&format!("  … and {} more\n", p.incomplete.len() - 20));
    }
    out.push_str("run the import again with the missing volumes (in any order)\n");
    out
}

/// Volumes taken of a bundle not yet whole, as `--json` prints it.
#[derive(serde::Serialize)]
struct IncompleteJson<'a> {
    state: &'static str,
    manifest_sha256: &'a str,
    volumes_total: u32,
    volumes_seen: &'a std::collections::BTreeSet<u32>,
    missing_volumes: Vec<u32>,
    parity_total: usize,
    /// Numbered from 1, as the files are.
    missing_parity_volumes: Vec<usize>,
    rebuilt_from_parity: &'a [u32],
    incomplete_files: &'a [llmgw_mirror::Incomplete],
    bytes_needed: u64,
    repeated_volumes: Vec<String>,
    volumes: Vec<TakenJson<'a>>,
}

/// One volume taken.
#[derive(serde::Serialize)]
struct TakenJson<'a> {
    path: &'a std::path::Path,
    ok: bool,
    report: &'a str,
}

fn incomplete_json(p: &Progressed, lines: &[String]) -> serde_json::Result<serde_json::Value> {
    serde_json::to_value(IncompleteJson {
        state: "incomplete",
        manifest_sha256: &p.manifest_sha256,
        volumes_total: p.count,
        volumes_seen: &p.whole,
        missing_volumes: p.missing(),
        parity_total: p.parity_count,
        missing_parity_volumes: p.missing_parity().iter().map(|j| j + 1).collect(),
        rebuilt_from_parity: &p.rebuilt,
        incomplete_files: &p.incomplete,
        bytes_needed: p.bytes_needed,
        repeated_volumes: p.repeated.iter().map(|w| w.label()).collect(),
        volumes: p
            .taken
            .iter()
            .zip(lines)
            .map(|(t, line)| TakenJson {
                path: &t.path,
                ok: t.result.as_ref().is_ok_and(|r| r.skipped || r.whole()),
                report: line,
            })
            .collect(),
    })
}
