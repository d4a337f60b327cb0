//! `llmgw bundle import | verify | inspect | trust`: the air-gapped side's
//! front door. Everything here is checked by the mirror library; this file
//! parses arguments and words the results.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use llmgw_mirror::import::{self, ImportOutcome, ImportReport};
use llmgw_mirror::inspect::{self, Summary, human_bytes};
use llmgw_mirror::new_store::NewStore;
use llmgw_mirror::progress::Terminal;
use llmgw_mirror::store::Store;
use llmgw_mirror::trust::{self, Added};
use llmgw_mirror::verify::{self, HashOnly, Outcome};
use serde_json::json;

use super::help::{self, EXIT_CODES, IMPORT_EXIT_CODES};
use super::{StoreArg, print};

#[derive(Args, Debug)]
#[command(after_help = help::after(help::IMPORT, IMPORT_EXIT_CODES))]
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
    pub sha256: Option<String>,
    /// Accept a signed bundle older than the highest of its series (it is
    /// held, but nodes keep being served the newer one); logged.
    #[arg(long)]
    pub allow_rollback: bool,
    #[command(flatten)]
    pub store: StoreArg,
    /// When a delta is refused because the store lacks blobs it relies on, write them
    /// here (a need-list) for `llmgw bundle create … --need FILE`.
    #[arg(long, value_name = "need.json")]
    pub need_out: Option<PathBuf>,
    /// Print a JSON summary on stdout instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(after_help = help::after(help::VERIFY, EXIT_CODES))]
pub struct VerifyArgs {
    /// The bundle: a .tar, a .tar.zst or a directory; or one or more volumes of a set
    /// written with --volume-size (each checked on its own).
    #[arg(required = true, num_args = 1..)]
    pub bundle: Vec<PathBuf>,
    /// The bundle's manifest sha256: 64 hex digits, or the path of the
    /// `.sha256` file create wrote.
    #[arg(long, value_parser = parse_sha256_arg)]
    pub sha256: String,
    /// A minisign public key (KEY.pub) trusted for llmgw's release; repeat
    /// for several.
    #[arg(long = "trust", value_name = "KEY.pub")]
    pub trust: Vec<PathBuf>,
    /// Print a JSON summary on stdout instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
#[command(after_help = help::after(help::INSPECT, EXIT_CODES))]
pub struct InspectArgs {
    /// The bundle: a .tar, a .tar.zst or a directory.
    pub bundle: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand, Debug)]
pub enum TrustCommand {
    /// Trust a minisign public key (as `minisign -G` writes it) for llmgw releases or bundles.
    #[command(after_help = help::after(help::TRUST_ADD, EXIT_CODES))]
    Add {
        /// The public key file.
        key: PathBuf,
        /// release: llmgw's SHA256SUMS; bundle: manifest.json.minisig of bundles.
        #[arg(long, value_enum, default_value_t)]
        role: super::signed::RoleArg,
        #[command(flatten)]
        store: StoreArg,
    },
    /// List the trusted keys.
    #[command(after_help = help::after(help::TRUST_LIST, EXIT_CODES))]
    List {
        #[command(flatten)]
        store: StoreArg,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Stop trusting a key (bundles already imported stay).
    #[command(after_help = help::after(help::TRUST_REMOVE, EXIT_CODES))]
    Remove {
        /// The key id, as `trust list` or minisign prints it.
        key_id: String,
        /// The role to stop trusting it for.
        #[arg(long, value_enum, default_value_t)]
        role: super::signed::RoleArg,
        #[command(flatten)]
        store: StoreArg,
    },
}

/// `--sha256`: 64 hex digits, or a file whose first token is them (what
/// create writes, and what `sha256sum` writes).
fn parse_sha256_arg(s: &str) -> Result<String, String> {
    let lc = s.trim().to_ascii_lowercase();
    if llmgw_shared::names::is_sha256_hex(&lc) {
        return Ok(lc);
    }
    // A .sha256 file is one line; anything longer is not one (and
    // /dev/zero must not be read to the end).
    let bytes = llmgw_mirror::fsutil::read_bounded(std::path::Path::new(s), 4096).map_err(|e| {
        format!("expected 64 hex digits or the path of a .sha256 file; cannot use {s:?}: {e}")
    })?;
    llmgw_shared::sums::parse_sidecar(s, &String::from_utf8_lossy(&bytes))
        .map_err(|e| e.to_string())
}

pub fn run_import(a: ImportArgs) -> anyhow::Result<()> {
    let store = Store::at(&a.store.path);
    let progress = Terminal::new("importing");
    let opts = import::ImportOptions {
        allow_rollback: a.allow_rollback,
        now: super::signed::now()?,
    };
    if llmgw_mirror::volumes::verify::is_volume_set(&a.bundle) {
        return super::volumes::run_import(&store, &a, &opts, &progress);
    }
    let bundle = a.bundle[0].clone();
    let made = NewStore::create(&store).map_err(super::flat)?;
    let outcome = match import::import_with(&store, &bundle, a.sha256.as_deref(), &opts, &progress)
    {
        Ok(o) => o,
        Err(e) => {
            let written = need_out(&e, a.need_out.as_deref())?;
            let e = match e {
                import::ImportError::Verify(v) => {
                    import::ImportError::Verify(v.with_trust_fix(format!(
                        "if you trust that key, add it with `llmgw bundle trust add KEY.pub \
                         --store {}`",
                        a.store.path.display()
                    )))
                }
                other => other,
            };
            let undone = undo_note(made);
            anyhow::bail!(
                "import of {} refused: {e}{undone}{written}",
                bundle.display()
            );
        }
    };
    print_outcome(&a.store.path, a.json, outcome)
}

/// `--need-out`: when a delta was refused for blobs the store lacks, writes
/// the need-list there; returns what to add to the refusal.
pub fn need_out(e: &import::ImportError, path: Option<&std::path::Path>) -> anyhow::Result<String> {
    match (e, path) {
        (import::ImportError::Verify(verify::VerifyError::Prerequisites(need)), Some(p)) => {
            super::have::write_whole(p, &need.to_canonical_json())?;
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
                    json!({
                        "status": "already-imported",
                        "manifest_sha256": manifest_sha256,
                        "bundles_held": bundles_held,
                    })
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
                print(&format!("{}\n", import_json(&r)))
            } else {
                let summary = Summary::of(&r.manifest_sha256, &r.manifest);
                print(&format!(
                    "imported bundle {} ({}) into {}\n{}added {} blobs ({}) to the store\n{}\n",
                    r.manifest_sha256,
                    r.format.name(),
                    store.display(),
                    summary.to_text(),
                    r.blobs_added,
                    human_bytes(r.bytes_added),
                    proven_line(&r)
                ))
            }
        }
    }
}

/// Removes a store folder this refused run made (a mistyped `--store`
/// leaves nothing behind), and says so.
fn undo_note(made: NewStore) -> String {
    match made.undo() {
        Some(p) => format!(" (removed {}, which this run had made)", p.display()),
        None => String::new(),
    }
}

/// The audit line: what this import proved.
fn proven_line(r: &ImportReport) -> String {
    format!(
        "proven: manifest sha256 {} {}; {}; {} blobs ({} bytes) hashed and matched{}; \
         bundles now held: {}",
        r.manifest_sha256,
        match &r.signed_by {
            Some(s) => format!(
                "signed by bundle key {} (channel {}, sequence {})",
                s.key_id,
                llmgw_shared::shown::shown(&s.channel),
                s.sequence
            ),
            None => "as given".into(),
        },
        signatures_text(&r.signatures),
        r.blobs_hashed,
        r.bytes_hashed,
        if r.blobs_at_hand > 0 {
            format!(
                ", {} blobs ({} bytes) verified earlier and reused",
                r.blobs_at_hand, r.bytes_at_hand
            )
        } else {
            String::new()
        },
        r.bundles_held
    )
}

fn signatures_text(sigs: &[(String, String)]) -> String {
    if sigs.is_empty() {
        "no signed release in the bundle (no key needed)".into()
    } else {
        sigs.iter()
            .map(|(rel, key)| format!("SHA256SUMS of {rel} signed by trusted key {key}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

fn import_json(r: &ImportReport) -> serde_json::Value {
    json!({
        "status": "imported",
        "manifest_sha256": r.manifest_sha256,
        "format": r.format.name(),
        "signatures": r.signatures.iter().map(|(rel, key)| json!({"release": rel, "key_id": key})).collect::<Vec<_>>(),
        "blobs_hashed": r.blobs_hashed,
        "bytes_hashed": r.bytes_hashed,
        "blobs_reused": r.blobs_at_hand,
        "bytes_reused": r.bytes_at_hand,
        "blobs_added": r.blobs_added,
        "bytes_added": r.bytes_added,
        "bundles_held": r.bundles_held,
        "signed_by": r.signed_by,
        "warnings": r.notes,
        "bundle": Summary::of(&r.manifest_sha256, &r.manifest),
    })
}

pub fn run_verify(a: VerifyArgs) -> anyhow::Result<()> {
    if llmgw_mirror::volumes::verify::is_volume_set(&a.bundle) {
        return super::volumes::run_verify(&a.bundle, &a.sha256, a.json);
    }
    let bundle = a.bundle[0].clone();
    let keys = a
        .trust
        .iter()
        .map(|p| trust::read_key_file(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(super::flat)?;
    let progress = Terminal::new("verifying");
    let outcome = verify::check_bundle(&bundle, &a.sha256, &keys, &mut HashOnly, &progress)
        .map_err(|e| {
            let e = e.with_trust_fix(
                "if you trust that key, give its public key file with --trust KEY.pub (repeatable)",
            );
            anyhow::anyhow!("bundle {} refused: {e}", bundle.display())
        })?;
    let Outcome::Verified(v) = outcome else {
        anyhow::bail!("the check stopped early");
    };
    let not_checked: String = v
        .unchecked
        .iter()
        .map(|u| format!("not checked here (no store): {u}\n"))
        .collect();
    if a.json {
        print(&format!(
            "{}\n",
            json!({
                "status": "verified",
                "manifest_sha256": v.manifest_sha256,
                "format": v.format.name(),
                "signatures": v.signatures.iter().map(|(rel, key)| json!({"release": rel, "key_id": key})).collect::<Vec<_>>(),
                "blobs_hashed": v.blobs_hashed,
                "bytes_hashed": v.bytes_hashed,
                "not_checked": v.unchecked,
                "bundle": Summary::of(&v.manifest_sha256, &v.manifest),
            })
        ))
    } else {
        print(&format!(
            "{}{not_checked}verified: manifest sha256 {} as given; {}; {} blobs ({} bytes) hashed \
             and matched; nothing was written\n",
            Summary::of(&v.manifest_sha256, &v.manifest).to_text(),
            v.manifest_sha256,
            signatures_text(&v.signatures),
            v.blobs_hashed,
            v.bytes_hashed
        ))
    }
}

pub fn run_inspect(a: InspectArgs) -> anyhow::Result<()> {
    let s = inspect::inspect(&a.bundle)
        .map_err(|e| anyhow::anyhow!("cannot read the manifest of {}: {e}", a.bundle.display()))?;
    let note = "UNVERIFIED: this is what the bundle's manifest claims; nothing was checked \
                against a hash or signature. Compare manifest_sha256 with the hash you were \
                given, and use `llmgw bundle verify` or `import` to check it.";
    if a.json {
        let mut v = serde_json::to_value(&s)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("verified".into(), false.into());
            o.insert("note".into(), note.into());
        }
        print(&format!("{v}\n"))
    } else {
        print(&format!("{note}\n{}", s.to_text()))
    }
}

pub fn run_trust(cmd: TrustCommand) -> anyhow::Result<()> {
    match cmd {
        TrustCommand::Add { key, store, role } => {
            let store = Store::at(&store.path);
            let role = trust::Role::from(role);
            let made = NewStore::create(&store).map_err(super::flat)?;
            let added = trust::add(&store, &key, role)
                .map_err(|e| anyhow::anyhow!("{e}{}", undo_note(made)))?;
            match added {
                Added::New(id) => print(&format!(
                    "trusting key {id} for {} ({})\n",
                    match role {
                        trust::Role::Release => "llmgw releases",
                        trust::Role::Bundle => "bundles",
                    },
                    role.dir(&store).join(format!("{id}.pub")).display()
                )),
                Added::AlreadyTrusted(id) => print(&format!("key {id} was already trusted\n")),
            }
        }
        TrustCommand::List { store, json } => {
            let store = Store::at(&store.path);
            let mut keys = Vec::new();
            for role in [trust::Role::Release, trust::Role::Bundle] {
                for (p, k) in trust::load_role(&store, role).map_err(super::flat)? {
                    keys.push((p, k, role));
                }
            }
            if json {
                let v: Vec<_> = keys
                    .iter()
                    .map(|(p, k, r)| json!({"key_id": k.key_id(), "role": r.name(), "path": p}))
                    .collect();
                print(&format!("{}\n", serde_json::Value::Array(v)))
            } else if keys.is_empty() {
                print("no trusted keys; add one with `llmgw bundle trust add KEY.pub`\n")
            } else {
                let mut out = String::new();
                for (p, k, r) in &keys {
                    out.push_str(&format!("{}\t{}\t{}\n", k.key_id(), r.name(), p.display()));
                }
                print(&out)
            }
        }
        TrustCommand::Remove {
            key_id,
            store,
            role,
        } => {
            let id = trust::remove(&Store::at(&store.path), &key_id, role.into())
                .map_err(super::flat)?;
            print(&format!("key {id} is no longer trusted\n"))
        }
    }
}
