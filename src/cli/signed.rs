//! The signed-bundle side of the CLI: `mirror policy`, the `--role` of
//! trusted keys, and the clock import judges expiry by.

use clap::{Args, ValueEnum};
use llmgw_mirror::series::Policy;
use llmgw_mirror::store::Store;
use llmgw_mirror::trust::Role;

use super::{UsageError, print};

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
#[command(after_help = super::help::after_notes(super::help::POLICY, POLICY_HELP))]
pub struct PolicyArgs {
    /// The setting to change (leave out to print the policy).
    #[arg(requires = "value")]
    pub setting: Option<Setting>,
    /// The new value: on or off.
    pub value: Option<OnOff>,
    #[command(flatten)]
    pub store: super::StoreArg,
}

pub fn run_policy(a: PolicyArgs) -> anyhow::Result<()> {
    let store = Store::at(&a.store.path);
    let mut policy = Policy::load(&store).map_err(super::flat)?;
    if let (Some(setting), Some(value)) = (a.setting, a.value) {
        let on = matches!(value, OnOff::On);
        match setting {
            Setting::RequireSignature => policy.require_signature = on,
            Setting::EnforceExpiry => policy.enforce_expiry = on,
        }
        store.create_dirs().map_err(super::flat)?;
        let _lock =
            llmgw_mirror::fsutil::StoreLock::acquire(&store.lock_path(), "`llmgw mirror policy`")
                .map_err(super::flat)?;
        policy.save(&store).map_err(super::flat)?;
    }
    let word = |b: bool| if b { "on" } else { "off" };
    print(&format!(
        "require-signature {}\nenforce-expiry {}\n",
        word(policy.require_signature),
        word(policy.enforce_expiry)
    ))
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
            .or_else(|| llmgw_shared::time::parse_rfc3339_utc(v.trim()))
            .ok_or_else(|| {
                UsageError(format!(
                    "LLMGW_NOW={v:?}: expected Unix seconds or a UTC time such as \
                     2027-01-01T00:00:00Z"
                ))
                .into()
            }),
        _ => Ok(llmgw_mirror::import::ImportOptions::default().now),
    }
}
