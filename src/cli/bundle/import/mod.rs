//! `llmgw bundle import`: the air-gapped side's front door. Everything is
//! checked by the mirror library; this file parses arguments and words the
//! results (and the helpers `bundle verify` and `bundle trust` share).

pub mod volumes;

use std::path::PathBuf;

use crate::cli::progress::Blobs;
use clap::Args;
use llmgw_mirror::{ImportError, ImportOptions, ImportOutcome, ImportReport};
use llmgw_mirror::{ImportRunError, Imported};
use llmgw_mirror::{SignedRelease, Summary, human_bytes};
use llmgw_shared::BundleId;
use llmgw_shared::{Chain, chain};

use crate::cli::help::{self, IMPORT_EXIT_CODES};
use crate::cli::{OutputArg, StoreArg, UsageError, print};

#[derive(Args, Debug)]
#[command(
    after_help = help::after(help::IMPORT, IMPORT_EXIT_CODES),
    mut_arg("json", |a| a.help("Print a JSON summary on stdout instead of text."))
)]
pub struct ImportArgs {
    /// The bundle: a .tar, a .tar.zst or a directory, as `bundle create` wrote it; or any
    /// volumes of a set written with --volume-size, in any order, over several runs (exit 0
    /// also when they are accepted so far: the report lists what is still missing).
    #[arg(required = true, num_args = 1..)]
    pub bundle: Vec<PathBuf>,
    /// The bundle's manifest sha256 as create printed it: the 64 hex digits,
    /// or the path of the `.sha256` file create wrote beside the bundle.
    /// Optional for a bundle signed by a key trusted with `--role bundle`.
    #[arg(long, value_parser = parse_sha256_arg)]
    pub sha256: Option<BundleId>,
    /// Accept a signed bundle older than the highest of its series (it is
    /// held, but nodes keep being served the newer one); logged.
    #[arg(long)]
    pub allow_rollback: bool,
    /// Let this unsigned bundle move branches, tags, `latest` and environments a signed
    /// series serves (otherwise it only adds names nobody signed); recorded in the store's
    /// policy and logged.
    #[arg(long)]
    pub allow_unsigned_override: bool,
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub s3: crate::cli::s3::S3Arg,
    /// When a delta is refused because the store lacks blobs it relies on, write them
    /// here (a need-list) for `llmgw bundle create … --need FILE`.
    #[arg(long, value_name = "need.json")]
    pub need_out: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArg,
}

/// `--sha256`: 64 hex digits, or a file whose first token is them (what
/// create writes, and what `sha256sum` writes).
pub(super) fn parse_sha256_arg(s: &str) -> Result<BundleId, String> {
    if let Ok(digest) = BundleId::parse("--sha256", s) {
        return Ok(digest);
    }
    // A .sha256 file is one line; anything longer is not one (and
    // /dev/zero must not be read to the end).
    let bytes = llmgw_mirror::read_bounded(std::path::Path::new(s), 4096).map_err(|e| {
        format!(
            "expected 64 hex digits or the path of a .sha256 file; cannot use {s:?}: {}",
            chain(&e)
        )
    })?;
    let hex =
        llmgw_shared::parse_sidecar(s, &String::from_utf8_lossy(&bytes)).map_err(|e| chain(&e))?;
    BundleId::parse(s, &hex).map_err(|e| chain(&e))
}

pub fn run_import(a: ImportArgs) -> anyhow::Result<()> {
    let progress = Blobs::new("importing");
    let opts = ImportOptions {
        allow_rollback: a.allow_rollback,
        allow_unsigned_override: a.allow_unsigned_override,
        now: now()?,
    };
    let imported = llmgw_mirror::import_into(
        &a.store.location(&a.s3),
        &a.bundle,
        a.sha256.as_ref(),
        &opts,
        &progress,
        &|pushed| tracing::info!(?pushed, "published to the bucket"),
    );
    match imported {
        Ok(Imported::Bundle(outcome)) => print_outcome(&a.store.path, a.output.json, outcome),
        Ok(Imported::Volumes(outcome)) => volumes::print_import(&a, outcome),
        Err(ImportRunError::Refused {
            bundle,
            undone,
            source,
        }) => {
            let written = need_out(&source, a.need_out.as_deref())?;
            let e = match *source {
                ImportError::Verify(v) => ImportError::Verify(v.with_trust_fix(format!(
                    "if you trust that key, add it with `llmgw bundle trust add KEY.pub \
                         --store {}`",
                    a.store.path.display()
                ))),
                other => other,
            };
            let undone = undo_note(undone);
            anyhow::bail!(
                "import of {} refused: {}{undone}{written}",
                bundle.display(),
                Chain(&e)
            );
        }
        Err(ImportRunError::Volumes(e)) => {
            let written = need_out(&e, a.need_out.as_deref())?;
            if !written.is_empty() {
                // Said before the refusal, which main prints last.
                eprintln!("{}", written.trim_start());
            }
            Err(anyhow::Error::new(e).context("import of volumes refused"))
        }
        Err(other) => Err(other.into()),
    }
}

/// `--need-out`: when a delta was refused for blobs the store lacks, writes
/// the need-list there; returns what to add to the refusal.
pub fn need_out(e: &ImportError, path: Option<&std::path::Path>) -> anyhow::Result<String> {
    match (e, path) {
        (ImportError::Prerequisites(need), Some(p)) => {
            crate::cli::mirror::have::write_whole(p, &need.to_canonical_json())?;
            Ok(format!("\nthe missing blobs are listed in {}", p.display()))
        }
        _ => Ok(String::new()),
    }
}

/// Prints how an import ended (notes on stderr, the result on stdout).
pub fn print_outcome(
    store: &std::path::Path,
    json_out: bool,
    outcome: ImportOutcome,
) -> anyhow::Result<()> {
    if let ImportOutcome::Imported(r) = &outcome {
        for n in &r.notes {
            eprintln!("warning: {n}");
        }
    }
    match outcome {
        ImportOutcome::AlreadyHeld {
            manifest_sha256,
            bundles_held,
        } => {
            if json_out {
                print(&format!(
                    "{}\n",
                    serde_json::to_value(AlreadyImported {
                        status: "already-imported",
                        manifest_sha256: &manifest_sha256,
                        bundles_held,
                    })?
                ))
            } else {
                print(&format!(
                    "bundle {manifest_sha256} is already imported, with every blob it names; \
                     nothing to do (bundles now held: {bundles_held})\n"
                ))
            }
        }
        ImportOutcome::Imported(r) => {
            if json_out {
                print(&format!("{}\n", import_json(&r)?))
            } else {
                let summary = Summary::of(&r.manifest_sha256, &r.manifest);
                print(&format!(
                    "imported bundle {} ({}) into {}\n{}added {} ({}) to the store\n{}\n",
                    r.manifest_sha256,
                    r.proved.format.name(),
                    store.display(),
                    summary.to_text(),
                    llmgw_shared::plural(r.blobs_added, "blob", "blobs"),
                    human_bytes(r.bytes_added),
                    proven_line(&r)
                ))
            }
        }
    }
}

/// Says that a refused run removed the store folder it had made (a
/// mistyped `--store` leaves nothing behind).
pub(super) fn undo_note(undone: Option<std::path::PathBuf>) -> String {
    match undone {
        Some(p) => format!(" (removed {}, which this run had made)", p.display()),
        None => String::new(),
    }
}

/// The audit line: what this import proved.
fn proven_line(r: &ImportReport) -> String {
    format!(
        "proven: manifest sha256 {} {}; {}; {} ({} bytes) hashed and matched{}; \
         bundles now held: {}",
        r.manifest_sha256,
        match &r.signed_by {
            Some(s) => format!(
                "signed by bundle key {} (channel {}, sequence {})",
                s.key_id,
                llmgw_shared::shown(&s.channel),
                s.sequence
            ),
            None => "as given".into(),
        },
        signatures_text(&r.proved),
        llmgw_shared::plural(r.proved.blobs_hashed, "blob", "blobs"),
        r.proved.bytes_hashed,
        if r.blobs_at_hand > 0 {
            format!(
                ", {} ({} bytes) verified earlier and reused",
                llmgw_shared::plural(r.blobs_at_hand, "blob", "blobs"),
                r.bytes_at_hand
            )
        } else {
            String::new()
        },
        r.bundles_held
    )
}

pub(super) fn signatures_text(proved: &llmgw_mirror::Proved) -> String {
    let releases = releases_text(&proved.signed);
    if proved.publishers.is_empty() {
        return releases;
    }
    // Whose, once each: "3 by X, 1 by Y".
    let mut by: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for p in &proved.publishers {
        *by.entry(p.identity.as_str()).or_default() += 1;
    }
    let whose = by
        .iter()
        .map(|(who, n)| format!("{n} by {}", llmgw_shared::shown(who)))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "{releases}; {} verified again ({whose})",
        llmgw_shared::plural(
            proved.publishers.len(),
            "publisher's signature",
            "publishers' signatures"
        )
    )
}

fn releases_text(signed: &[SignedRelease]) -> String {
    if signed.is_empty() {
        "no signed release in the bundle (no key needed)".into()
    } else {
        signed
            .iter()
            .map(|r| {
                format!(
                    "SHA256SUMS of {} signed by trusted key {}",
                    r.name(),
                    r.key_id
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// An import that found the bundle held already, as `--json` prints it.
#[derive(serde::Serialize)]
struct AlreadyImported<'a> {
    status: &'static str,
    manifest_sha256: &'a str,
    bundles_held: usize,
}

fn import_json(r: &ImportReport) -> serde_json::Result<serde_json::Value> {
    serde_json::to_value(crate::cli::bundle::Printed {
        status: "imported",
        result: r,
        bundle: Summary::of(&r.manifest_sha256, &r.manifest),
    })
}

/// Now, for expiry: `LLMGW_NOW` (Unix seconds or a UTC time like
/// 2027-01-01T00:00:00Z; for tests and for judging a bundle as of a date),
/// else the system clock.
pub fn now() -> anyhow::Result<u64> {
    match std::env::var("LLMGW_NOW") {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse::<u64>()
            .ok()
            .or_else(|| llmgw_shared::parse_rfc3339_utc(v.trim()))
            .ok_or_else(|| {
                UsageError(format!(
                    "LLMGW_NOW={v:?}: expected Unix seconds or a UTC time such as \
                     2027-01-01T00:00:00Z"
                ))
                .into()
            }),
        _ => Ok(ImportOptions::default().now),
    }
}
