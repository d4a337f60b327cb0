//! `llmgw mirror policy`: what the store requires of the bundles it takes
//! in (a signature, an unexpired bundle), and which signed series move the
//! names it serves (`follow KEY CHANNEL`, `unfollow KEY CHANNEL`), and which
//! model files it accepts (`model-files allow|no-pickle|scanned-clean`).

use clap::{Args, ValueEnum};
use llmgw_mirror::{Followed, ModelFiles, Policy, Role, Store, StoreLock};

use crate::cli::{UsageError, print};

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// Refuse bundles not signed by a key trusted for bundles (VALUE: on or off).
    RequireSignature,
    /// Refuse bundles past their `expires`, else warn (VALUE: on or off).
    EnforceExpiry,
    /// Let a signed series move branches, tags, `latest` and environments (VALUE: KEY CHANNEL).
    Follow,
    /// Stop following a signed series (VALUE: KEY CHANNEL).
    Unfollow,
    /// Which model files import accepts (VALUE: allow, no-pickle or scanned-clean).
    ModelFiles,
}

const POLICY_HELP: &str = "\
require-signature on: import refuses a bundle without manifest.json.minisig from a key
  trusted for bundles (`bundle trust add KEY.pub --role bundle`), even with --sha256.
enforce-expiry on: import refuses a bundle past its `expires` (otherwise it warns).
follow KEY CHANNEL: bundles signed by KEY (a key id trusted for bundles) in CHANNEL move
  the names the mirror serves (Hub branches and tags, GitHub tags and `latest`, Python
  environments). A store follows the first signed series imported; a bundle of a series it
  does not follow is held and served by commit and digest but moves no name a followed series
  serves, and an unsigned bundle only adds names nobody signed (unless imported with
  --allow-unsigned-override). unfollow KEY CHANNEL stops following one.
model-files allow|no-pickle|scanned-clean: allow (the default) takes every Hub file; no-pickle
  refuses a bundle carrying a file that loads with pickle, by name (.bin .pt .pth .pkl .pickle
  .ckpt .joblib) or by content whatever its name: a pickle of any protocol (0 to 5) at its
  start, also once gzip, bzip2, xz or zstd is undone; a zip (torch.save's format) or tar
  (torch.save's legacy format) with a member that is a pickle; a numpy .npy array of objects.
  It names each file and the rule that matched, and the real safetensors or GGUF variant its
  repository has (else: convert the weights to safetensors, or allow). Only the first 4 KiB
  of a file or member are looked at, and at most 4096 members. scanned-clean refuses files
  the Hub did not scan and find safe (its verdicts are recorded in the bundle at create). A
  refused bundle leaves the store unchanged.
Kept in STORE/state/policy.json. Without SETTING, prints the policy.

Exit codes: 0 done, 1 the store cannot be read or written (the reason is on stderr),
2 usage error.";

#[derive(Args, Debug)]
#[command(after_help = crate::cli::help::after_notes(crate::cli::help::POLICY, POLICY_HELP))]
pub struct PolicyArgs {
    /// The setting to change (leave out to print the policy).
    #[arg(requires = "value")]
    pub setting: Option<Setting>,
    /// The new value: `on` or `off`; for follow and unfollow, KEY CHANNEL.
    #[arg(num_args = 1..=2, value_name = "VALUE")]
    pub value: Vec<String>,
    #[command(flatten)]
    pub store: crate::cli::StoreArg,
}

/// What the command line asked for, checked.
enum Change {
    Switch(Setting, bool),
    Follow(Followed),
    Unfollow(Followed),
    ModelFiles(ModelFiles),
}

fn change(a: &PolicyArgs) -> Result<Option<Change>, UsageError> {
    let Some(setting) = a.setting else {
        return Ok(None);
    };
    let usage = |expected: &str| {
        UsageError(format!(
            "`llmgw mirror policy {}` takes {expected}; got {:?}",
            setting
                .to_possible_value()
                .map(|v| v.get_name().to_string())
                .unwrap_or_default(),
            a.value
        ))
    };
    Ok(Some(match (setting, a.value.as_slice()) {
        (Setting::Follow | Setting::Unfollow, [key, channel]) => {
            let pair = Followed {
                key_id: key.clone(),
                channel: channel.clone(),
            };
            if setting == Setting::Follow {
                Change::Follow(pair)
            } else {
                Change::Unfollow(pair)
            }
        }
        (Setting::Follow | Setting::Unfollow, _) => {
            return Err(usage("a key id and a channel (KEY CHANNEL)"));
        }
        (Setting::ModelFiles, [v]) => Change::ModelFiles(match v.as_str() {
            "allow" => ModelFiles::Allow,
            "no-pickle" => ModelFiles::NoPickle,
            "scanned-clean" => ModelFiles::ScannedClean,
            _ => return Err(usage("one value, allow, no-pickle or scanned-clean")),
        }),
        (Setting::ModelFiles, _) => {
            return Err(usage("one value, allow, no-pickle or scanned-clean"));
        }
        (_, [v]) if v == "on" || v == "off" => Change::Switch(setting, v == "on"),
        _ => return Err(usage("one value, on or off")),
    }))
}

pub fn run_policy(a: PolicyArgs) -> anyhow::Result<()> {
    let change = change(&a)?;
    let writer = change.is_some().then_some("llmgw mirror policy");
    a.store
        .location_from_env()
        .transact(writer, |store| policy_in(store, change.as_ref()))
}

fn policy_in(store: &Store, change: Option<&Change>) -> anyhow::Result<()> {
    let mut policy = Policy::load(store)?;
    if let Some(change) = change {
        store.create_dirs()?;
        let _lock = StoreLock::acquire(&store.lock_path(), "`llmgw mirror policy`")?;
        let mut policy_now = Policy::load(store)?;
        apply(store, &mut policy_now, change)?;
        policy_now.save(store)?;
        policy = policy_now;
    }
    let word = |b: bool| if b { "on" } else { "off" };
    let mut out = format!(
        "require-signature {}\nenforce-expiry {}\n",
        word(policy.require_signature),
        word(policy.enforce_expiry)
    );
    out.push_str(&format!("model-files {}\n", policy.model_files.word()));
    if policy.follow.is_empty() {
        out.push_str("follow (the first signed series imported)\n");
    }
    for f in &policy.follow {
        out.push_str(&format!("follow {} {}\n", f.key_id, f.channel));
    }
    for o in &policy.unsigned_overrides {
        out.push_str(&format!("unsigned-override {o}\n"));
    }
    print(&out)
}

/// Follows only a key trusted for bundles (a typo would otherwise follow
/// nothing, silently). A store that followed its first series without a
/// record keeps following it when another is added.
fn apply(store: &Store, policy: &mut Policy, change: &Change) -> anyhow::Result<()> {
    match change {
        Change::Switch(Setting::RequireSignature, on) => policy.require_signature = *on,
        Change::Switch(_, on) => policy.enforce_expiry = *on,
        Change::ModelFiles(rule) => policy.model_files = *rule,
        Change::Follow(pair) => {
            let trusted: Vec<String> = llmgw_mirror::trusted_keys(store, Role::Bundle)?
                .into_iter()
                .map(|(_, k)| k.key_id())
                .collect();
            if !trusted.contains(&pair.key_id) {
                anyhow::bail!(
                    "key {} is not trusted for bundles by this store (trusted for bundles: {}); \
                     trust it first with `llmgw bundle trust add KEY.pub --role bundle`",
                    llmgw_shared::shown(&pair.key_id),
                    if trusted.is_empty() {
                        "none".to_string()
                    } else {
                        trusted.join(", ")
                    }
                );
            }
            if policy.follow.is_empty()
                && let Some(first) = llmgw_mirror::first_followed(store)?
            {
                policy.follow.push(first);
            }
            if !policy.follow.contains(pair) {
                policy.follow.push(pair.clone());
            }
        }
        Change::Unfollow(pair) => {
            if policy.follow.is_empty()
                && let Some(first) = llmgw_mirror::first_followed(store)?
            {
                policy.follow.push(first);
            }
            if !policy.follow.contains(pair) {
                anyhow::bail!(
                    "this store does not follow {pair} (it follows {}); nothing changed",
                    llmgw_mirror::followed_list(&policy.follow)
                );
            }
            if policy.follow.len() == 1 {
                anyhow::bail!(
                    "{pair} is the only series this store follows, and a store follows at least \
                     one (else it would follow its first signed series again); follow another \
                     first with `llmgw mirror policy follow KEY CHANNEL`"
                );
            }
            policy.follow.retain(|f| f != pair);
        }
    }
    Ok(())
}
