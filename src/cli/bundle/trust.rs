//! `llmgw bundle trust add | list | remove`: the keys a store trusts, and
//! for what (`--role`).

use std::path::PathBuf;

use clap::{Subcommand, ValueEnum};
use llmgw_mirror::NewStore;
use llmgw_mirror::{Added, Role};
use llmgw_shared::Chain;

use super::import::undo_note;
use crate::cli::help::{self, EXIT_CODES};
use crate::cli::{OutputArg, StoreArg, print};

/// What a trusted key may sign.
#[derive(ValueEnum, Clone, Copy, Debug, Default)]
pub enum RoleArg {
    /// llmgw's release SHA256SUMS.
    #[default]
    Release,
    /// A bundle's manifest.json (a site's own key, `bundle create --sign-key`).
    Bundle,
}

impl From<RoleArg> for Role {
    fn from(r: RoleArg) -> Self {
        match r {
            RoleArg::Release => Role::Release,
            RoleArg::Bundle => Role::Bundle,
        }
    }
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
        role: RoleArg,
        #[command(flatten)]
        store: StoreArg,
    },
    /// List the trusted keys.
    #[command(after_help = help::after(help::TRUST_LIST, EXIT_CODES))]
    List {
        #[command(flatten)]
        store: StoreArg,
        #[command(flatten)]
        output: OutputArg,
    },
    /// Stop trusting a key (bundles already imported stay).
    #[command(after_help = help::after(help::TRUST_REMOVE, EXIT_CODES))]
    Remove {
        /// The key id, as `trust list` or minisign prints it.
        key_id: String,
        /// The role to stop trusting it for.
        #[arg(long, value_enum, default_value_t)]
        role: RoleArg,
        #[command(flatten)]
        store: StoreArg,
    },
}

pub fn run_trust(cmd: TrustCommand) -> anyhow::Result<()> {
    match cmd {
        TrustCommand::Add { key, store, role } => {
            store
                .location_from_env()
                .transact(Some("llmgw bundle trust add"), |store| {
                    let role = Role::from(role);
                    let made = NewStore::create(store)?;
                    let added = llmgw_mirror::add_trusted_key(store, &key, role)
                        .map_err(|e| anyhow::anyhow!("{}{}", Chain(&e), undo_note(made.undo())))?;
                    match added {
                        Added::New(id) => print(&format!(
                            "trusting key {id} for {} ({})\n",
                            match role {
                                Role::Release => "llmgw releases",
                                Role::Bundle => "bundles",
                            },
                            role.dir(store).join(format!("{id}.pub")).display()
                        )),
                        Added::AlreadyTrusted(id) => {
                            print(&format!("key {id} was already trusted\n"))
                        }
                    }
                })
        }
        TrustCommand::List { store, output } => store.location_from_env().transact(None, |store| {
            let mut keys = Vec::new();
            for role in [Role::Release, Role::Bundle] {
                for (p, k) in llmgw_mirror::trusted_keys(store, role)? {
                    keys.push((p, k, role));
                }
            }
            if output.json {
                let v: Vec<KeyJson> = keys
                    .iter()
                    .map(|(p, k, r)| KeyJson {
                        key_id: k.key_id(),
                        role: r.name(),
                        path: p,
                    })
                    .collect();
                print(&format!("{}\n", serde_json::to_value(v)?))
            } else if keys.is_empty() {
                print("no trusted keys; add one with `llmgw bundle trust add KEY.pub`\n")
            } else {
                let mut out = String::new();
                for (p, k, r) in &keys {
                    out.push_str(&format!("{}\t{}\t{}\n", k.key_id(), r.name(), p.display()));
                }
                print(&out)
            }
        }),
        TrustCommand::Remove {
            key_id,
            store,
            role,
        } => store
            .location_from_env()
            .transact(Some("llmgw bundle trust remove"), |store| {
                let id = llmgw_mirror::remove_trusted_key(store, &key_id, role.into())?;
                print(&format!("key {id} is no longer trusted\n"))
            }),
    }
}

/// A trusted key, as `trust list --json` prints it.
#[derive(serde::Serialize)]
struct KeyJson<'a> {
    key_id: String,
    role: &'static str,
    path: &'a std::path::Path,
}
