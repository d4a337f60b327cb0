//! `llmgw mirror policy`: what the store requires of the bundles it takes
//! in (a signature, an unexpired bundle).

use clap::{Args, ValueEnum};
use llmgw_mirror::Policy;
use llmgw_mirror::Store;

use crate::cli::print;

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum Setting {
    /// Refuse bundles not signed by a key trusted for bundles.
    RequireSignature,
    /// Refuse bundles past their `expires` (else warn).
    EnforceExpiry,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum OnOff {
    On,
    Off,
}

const POLICY_HELP: &str = "\
require-signature on: import refuses a bundle without manifest.json.minisig from a key
  trusted for bundles (`bundle trust add KEY.pub --role bundle`), even with --sha256.
enforce-expiry on: import refuses a bundle past its `expires` (otherwise it warns).
Kept in STORE/state/policy.json. Without SETTING, prints the policy.

Exit codes: 0 done, 1 the store cannot be read or written (the reason is on stderr),
2 usage error.";

#[derive(Args, Debug)]
#[command(after_help = crate::cli::help::after_notes(crate::cli::help::POLICY, POLICY_HELP))]
pub struct PolicyArgs {
    /// The setting to change (leave out to print the policy).
    #[arg(requires = "value")]
    pub setting: Option<Setting>,
    /// The new value: on or off.
    pub value: Option<OnOff>,
    #[command(flatten)]
    pub store: crate::cli::StoreArg,
}

pub fn run_policy(a: PolicyArgs) -> anyhow::Result<()> {
    let writer = (a.setting.is_some() && a.value.is_some()).then_some("llmgw mirror policy");
    a.store
        .location_from_env()
        .transact(writer, |store| policy_in(store, &a))
}

fn policy_in(store: &Store, a: &PolicyArgs) -> anyhow::Result<()> {
    let mut policy = Policy::load(store)?;
    if let (Some(setting), Some(value)) = (a.setting, a.value) {
        let on = matches!(value, OnOff::On);
        match setting {
            Setting::RequireSignature => policy.require_signature = on,
            Setting::EnforceExpiry => policy.enforce_expiry = on,
        }
        store.create_dirs()?;
        let _lock = llmgw_mirror::StoreLock::acquire(&store.lock_path(), "`llmgw mirror policy`")?;
        policy.save(store)?;
    }
    let word = |b: bool| if b { "on" } else { "off" };
    print(&format!(
        "require-signature {}\nenforce-expiry {}\n",
        word(policy.require_signature),
        word(policy.enforce_expiry)
    ))
}
