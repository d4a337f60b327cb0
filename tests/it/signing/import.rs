//! Importing signed bundles: the signature checked with a key of role
//! `bundle`, `--sha256` optional for what such a key signed, and the
//! series rules (rollback, equivocation), expiry and a future `created`
//! judged by an injected clock (`LLMGW_NOW`). Every refusal is checked for
//! its message, exit code 1 and a store left exactly as it was. Bundles
//! are signed by the real binary (`llmgw bundle sign`) with keys the real
//! minisign CLI made.

use crate::bundle_kit;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use bundle_kit::*;
use llmgw_shared::manifest::{MANIFEST_NAME, SIGNATURE_NAME};

/// 2026-12-03T00:00:00Z.
const NOW: u64 = 1_796_256_000;

struct Env {
    _dir: tempfile::TempDir,
    root: PathBuf,
    store: PathBuf,
    key: PathBuf,
    public: PathBuf,
}

fn minisign(dir: &Path, args: &[&str]) -> Output {
    let o = Command::new("minisign")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("minisign not runnable ({e}): run scripts/setup.sh"));
    assert!(o.status.success(), "minisign {args:?}: {}", stderr(&o));
    o
}

impl Env {
    /// A store trusting a site key (made by `minisign -G -W`) for bundles.
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        minisign(&root, &["-G", "-W", "-p", "site.pub", "-s", "site.key"]);
        let env = Self {
            store: root.join("store"),
            key: root.join("site.key"),
            public: root.join("site.pub"),
            root,
            _dir: dir,
        };
        let o = env.llmgw(&["bundle", "trust", "add", s(&env.public), "--role", "bundle"]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).contains("for bundles"), "{}", stdout(&o));
        env
    }

    fn llmgw(&self, args: &[&str]) -> Output {
        self.llmgw_at(args, NOW)
    }

    fn llmgw_at(&self, args: &[&str], now: u64) -> Output {
        llmgw()
            .args(args)
            .env("LLMGW_STORE", &self.store)
            .env("LLMGW_NOW", now.to_string())
            .env_remove("LLMGW_SIGN_PASSWORD")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// The kit as a tar, signed with `key` by `llmgw bundle sign`.
    fn signed(&self, name: &str, kit: &Kit, key: &Path) -> PathBuf {
        let p = self.root.join(format!("{name}.tar"));
        write_tar(&p, &kit.entries());
        let o = self.llmgw(&["bundle", "sign", s(&p), "--key", s(key)]);
        assert!(o.status.success(), "sign {name}: {}", stderr(&o));
        assert_eq!(stdout(&o).trim(), kit.sha256());
        p
    }

    fn import(&self, bundle: &Path, extra: &[&str], now: u64) -> Output {
        let mut args = vec!["bundle", "import", s(bundle)];
        args.extend_from_slice(extra);
        self.llmgw_at(&args, now)
    }

    #[track_caller]
    fn imports(&self, bundle: &Path, extra: &[&str], now: u64) -> String {
        let o = self.import(bundle, extra, now);
        assert!(o.status.success(), "{}\n{}", stderr(&o), stdout(&o));
        format!("{}{}", stdout(&o), stderr(&o))
    }

    /// Refused with exit 1, each `expect` in the message, nothing changed.
    #[track_caller]
    fn refused(&self, case: &str, bundle: &Path, extra: &[&str], now: u64, expect: &[&str]) {
        let before = snapshot(&self.store);
        let o = self.import(bundle, extra, now);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{case}: {err}{}", stdout(&o));
        for e in expect {
            assert!(err.contains(e), "{case}: expected {e:?} in: {err}");
        }
        assert_eq!(before, snapshot(&self.store), "{case}: the store changed");
    }

    fn series(&self) -> serde_json::Value {
        let text = std::fs::read(self.store.join("state/series.json")).unwrap();
        serde_json::from_slice(&text).unwrap()
    }
}

/// A bundle of one model file, in channel `stable` at `sequence`.
fn kit(sequence: u64, body: &[u8]) -> Kit {
    let mut k = Kit::new();
    k.model_file("acme/tiny", &format!("w{sequence}.bin"), body);
    k.manifest.channel = Some("stable".into());
    k.manifest.sequence = Some(sequence);
    k.manifest.created = llmgw_shared::rfc3339_utc(NOW - 3600);
    k
}

#[test]
fn signed_bundles_and_their_series() {
    let env = Env::new();
    // Signed, no --sha256: the trusted bundle key is the proof.
    let k2 = kit(2, b"two");
    let b2 = env.signed("two", &k2, &env.key);
    let out = env.imports(&b2, &[], NOW);
    assert!(
        out.contains("signed by bundle key") && out.contains("sequence 2"),
        "{out}"
    );
    let sig = env
        .store
        .join(format!("bundles/{}.json.minisig", k2.sha256()));
    assert!(sig.is_file(), "the signature is kept beside the manifest");
    // The kept signature is a real one: the minisign CLI checks it.
    let check = env.root.join("check");
    std::fs::create_dir_all(&check).unwrap();
    std::fs::copy(
        env.store.join(format!("bundles/{}.json", k2.sha256())),
        check.join(MANIFEST_NAME),
    )
    .unwrap();
    std::fs::copy(&sig, check.join(SIGNATURE_NAME)).unwrap();
    minisign(&check, &["-Vm", MANIFEST_NAME, "-p", s(&env.public)]);
    assert_eq!(env.series()["series"][0]["sequence"], 2);
    // The same bundle again: a no-op.
    let out = env.imports(&b2, &[], NOW);
    assert!(out.contains("already imported"), "{out}");

    // Rollback: an older sequence is refused, allowed by flag (and warned),
    // and the series stays where it was.
    let k1 = kit(1, b"one");
    let b1 = env.signed("one", &k1, &env.key);
    env.refused(
        "rollback",
        &b1,
        &[],
        NOW,
        &[
            "rollback",
            "sequence 2",
            "this bundle is sequence 1",
            "--allow-rollback",
        ],
    );
    let out = env.imports(&b1, &["--allow-rollback"], NOW);
    assert!(out.contains("warning: rollback allowed"), "{out}");
    assert_eq!(env.series()["series"][0]["sequence"], 2);
    assert_eq!(env.series()["series"][0]["manifest_sha256"], k2.sha256());

    // Equivocation: sequence 2 again with other content.
    let k2b = kit(2, b"two, other");
    let b2b = env.signed("two-b", &k2b, &env.key);
    env.refused(
        "equivocation",
        &b2b,
        &[],
        NOW,
        &["equivocation", &k2.sha256(), &k2b.sha256()],
    );

    // A tampered manifest under a good signature.
    let k3 = kit(3, b"three");
    let b3 = env.signed("three", &k3, &env.key);
    let mut entries = read_entries(&b3);
    let mut tampered = k3.clone();
    tampered.manifest.arches.push("arm64".into());
    entries[0] = Entry::file(MANIFEST_NAME, &tampered.manifest_bytes());
    let bad = env.root.join("tampered.tar");
    write_tar(&bad, &entries);
    env.refused("tampered", &bad, &[], NOW, &["does not verify"]);

    // A key nobody trusted for bundles.
    let other = env.root.join("other");
    std::fs::create_dir_all(&other).unwrap();
    minisign(&other, &["-G", "-W", "-p", "o.pub", "-s", "o.key"]);
    let wrong = env.signed("wrong", &kit(4, b"four"), &other.join("o.key"));
    env.refused(
        "wrong key",
        &wrong,
        &[],
        NOW,
        &["is not trusted here", "--role bundle"],
    );
    // Trusted for releases is not trusted for bundles.
    let o = env.llmgw(&["bundle", "trust", "add", s(&other.join("o.pub"))]);
    assert!(o.status.success(), "{}", stderr(&o));
    env.refused("release key", &wrong, &[], NOW, &["is not trusted here"]);

    // A legacy signature (minisign -S -l) of the very manifest.
    let k5 = kit(5, b"five");
    let legacy_dir = env.root.join("legacy");
    std::fs::create_dir_all(&legacy_dir).unwrap();
    std::fs::write(legacy_dir.join(MANIFEST_NAME), k5.manifest_bytes()).unwrap();
    std::fs::copy(&env.key, legacy_dir.join("site.key")).unwrap();
    minisign(
        &legacy_dir,
        &["-S", "-l", "-s", "site.key", "-m", MANIFEST_NAME],
    );
    let mut entries = k5.entries();
    entries.insert(
        1,
        Entry::file(
            SIGNATURE_NAME,
            &std::fs::read(legacy_dir.join(format!("{MANIFEST_NAME}.minisig"))).unwrap(),
        ),
    );
    let legacy = env.root.join("legacy.tar");
    write_tar(&legacy, &entries);
    env.refused("legacy", &legacy, &[], NOW, &["legacy minisign signature"]);

    // Expired: a warning by default, a refusal under the policy.
    let mut k6 = kit(6, b"six");
    k6.manifest.expires = Some(llmgw_shared::rfc3339_utc(NOW + 86_400));
    let b6 = env.signed("six", &k6, &env.key);
    let later = NOW + 2 * 86_400;
    let o = env.llmgw(&["mirror", "policy", "enforce-expiry", "on"]);
    assert!(stdout(&o).contains("enforce-expiry on"), "{}", stderr(&o));
    env.refused(
        "expired",
        &b6,
        &[],
        later,
        &["expired at 2026-12-04T00:00:00Z", "enforces expiry"],
    );
    env.llmgw(&["mirror", "policy", "enforce-expiry", "off"]);
    let out = env.imports(&b6, &[], later);
    assert!(out.contains("warning: the bundle expired at"), "{out}");

    // Created in the future (by this machine's clock): a warning.
    let mut k7 = kit(7, b"seven");
    k7.manifest.created = llmgw_shared::rfc3339_utc(NOW + 86_400);
    let b7 = env.signed("seven", &k7, &env.key);
    let out = env.imports(&b7, &[], NOW);
    assert!(out.contains("after this machine's clock"), "{out}");

    // A removed key signs nothing any more.
    let o = env.llmgw(&["bundle", "trust", "list"]);
    assert!(stdout(&o).contains("\tbundle\t"), "{}", stdout(&o));
    let id = llmgw_shared::signing::PublicKey::parse(
        "site.pub",
        &std::fs::read_to_string(&env.public).unwrap(),
    )
    .unwrap()
    .key_id();
    let o = env.llmgw(&["bundle", "trust", "remove", &id, "--role", "bundle"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let b8 = env.signed("eight", &kit(8, b"eight"), &env.key);
    env.refused("removed key", &b8, &[], NOW, &["trusted: none"]);
}

#[test]
fn unsigned_bundles_need_a_hash_or_the_policy_refuses_them() {
    let env = Env::new();
    let k = kit(1, b"plain");
    let p = env.root.join("plain.tar");
    write_tar(&p, &k.entries());
    env.refused("no proof", &p, &[], NOW, &["no --sha256 was given"]);
    let o = env.llmgw(&["mirror", "policy", "require-signature", "on"]);
    assert!(o.status.success(), "{}", stderr(&o));
    env.refused(
        "unsigned under the policy",
        &p,
        &["--sha256", &k.sha256()],
        NOW,
        &["requires signed bundles"],
    );
    env.llmgw(&["mirror", "policy", "require-signature", "off"]);
    env.imports(&p, &["--sha256", &k.sha256()], NOW);
    // A signature that is not the second entry is refused by name.
    let k2 = kit(2, b"late");
    let b2 = env.signed("late", &k2, &env.key);
    let mut entries = read_entries(&b2);
    let sig = entries.remove(1);
    entries.push(sig);
    let late = env.root.join("late-sig.tar");
    write_tar(&late, &entries);
    env.refused(
        "misplaced signature",
        &late,
        &["--sha256", &k2.sha256()],
        NOW,
        &["not where a bundle's signature goes"],
    );
}

/// A tar's entries, as the kit's [`Entry`] values.
fn read_entries(p: &Path) -> Vec<Entry> {
    use std::io::Read;
    let mut a = tar::Archive::new(std::fs::File::open(p).unwrap());
    a.entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let mut v = Vec::new();
            e.read_to_end(&mut v).unwrap();
            Entry::file(&name, &v)
        })
        .collect()
}
