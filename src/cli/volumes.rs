//! `llmgw bundle verify|import VOLUME…` for volume sets: the words and
//! exit codes around llmgw-mirror's volumes module.

use std::path::PathBuf;

use llmgw_mirror::progress::Terminal;
use llmgw_mirror::volumes::index::Slot;
use llmgw_mirror::volumes::verify::{self, SetCheck};
use llmgw_shared::manifest::Manifest;
use serde_json::json;

use super::print;

/// A piece as an operator knows it: the file it belongs to, and which chunk.
pub fn slot_name(
    m: &Manifest,
    names: &std::collections::BTreeMap<String, String>,
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
                .unwrap_or_else(|| pl.sha256.clone());
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

pub fn run_verify(paths: &[PathBuf], sha256: &str, json_out: bool) -> anyhow::Result<()> {
    let progress = Terminal::new("verifying");
    let set = verify::verify_volumes(paths, sha256, &progress)
        .map_err(|e| anyhow::anyhow!("volumes refused: {e}"))?;
    let names = llmgw_mirror::verify::blob_names(&set.manifest);
    let name = |s: Slot| slot_name(&set.manifest, &names, s);
    let lines: Vec<String> = set
        .volumes
        .iter()
        .map(|c| verify::describe(set.count, c, &name))
        .collect();
    let passed = set.all_passed();
    if json_out {
        print(&format!("{}\n", verify_json(&set, &lines)))?;
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

fn verify_json(set: &SetCheck, lines: &[String]) -> serde_json::Value {
    json!({
        "status": if set.all_passed() { "verified" } else { "damaged" },
        "manifest_sha256": set.manifest_sha256,
        "volumes_total": set.count,
        "parity_total": set.parity_count,
        "whole_volumes": set.whole,
        "whole_parity_volumes": set.whole_parity.iter().map(|j| j + 1).collect::<Vec<_>>(),
        "missing_volumes": set.missing(),
        "importable": set.importable(),
        "volumes": set.volumes.iter().zip(lines).map(|(c, line)| json!({
            "path": c.path,
            "volume": c.result.as_ref().ok().and_then(|r| r.which).map(|w| w.label()),
            "ok": c.duplicate || c.result.as_ref().is_ok_and(|r| r.whole()),
            "duplicate": c.duplicate,
            "report": line,
        })).collect::<Vec<_>>(),
    })
}
