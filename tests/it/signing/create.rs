//! Signed bundles, made: `bundle create --sign-key` and `bundle sign`
//! against the fixture upstream, checked with the real minisign CLI (the
//! Debian package) on the manifest and signature read back out of each
//! shape.

use crate::bundle_kit;
mod minisign_cli;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use bundle_kit::{llmgw, ok, stderr, stdout};
use llmgw_fixture::{Fixture, FixtureOptions};
use llmgw_shared::manifest::{MANIFEST_NAME, Manifest, SIGNATURE_NAME};

/// The real minisign CLI, `stdin` fed in (a password, for encrypted keys).
fn minisign(dir: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new("minisign")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("minisign not runnable ({e}): run scripts/setup.sh"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// `minisign -G`: an encrypted key with `password`, or `-W` without one.
fn make_key(dir: &Path, password: Option<&str>) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let o = match password {
        Some(p) => minisign(
            dir,
            &["-G", "-p", "site.pub", "-s", "site.key"],
            &format!("{p}\n{p}\n"),
        ),
        None => minisign(dir, &["-G", "-W", "-p", "site.pub", "-s", "site.key"], ""),
    };
    assert!(o.status.success(), "minisign -G: {}", stderr(&o));
    (dir.join("site.key"), dir.join("site.pub"))
}

/// `bundle create` of the fixture's small model, nothing from the
/// environment that could change the run.
fn create(fx: &Fixture, work: &Path, out: &Path, extra: &[&str]) -> Output {
    create_with(fx, work, out, extra, &[])
}

fn create_with(
    fx: &Fixture,
    work: &Path,
    out: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Output {
    llmgw()
        .args([
            "bundle",
            "create",
            "--arch",
            "amd64",
            "--model",
            "acme/tiny@main",
        ])
        .arg("--hf-endpoint")
        .arg(fx.hf_endpoint())
        .arg("--github-api")
        .arg(fx.github_api_url())
        .arg("--cache")
        .arg(work.join("cache"))
        .arg("--out")
        .arg(out)
        .args(extra)
        .env_remove("HF_TOKEN")
        .env_remove("HF_ENDPOINT")
        .env_remove("LLMGW_SIGN_PASSWORD")
        .env("SOURCE_DATE_EPOCH", "1796256000")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The names and bytes of a bundle's first entries (all of a directory's
/// top level, sorted).
fn head(bundle: &Path, n: usize) -> Vec<(String, Vec<u8>)> {
    if bundle.is_dir() {
        let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(bundle)
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_file())
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        out.sort();
        return out;
    }
    let f = std::fs::File::open(bundle).unwrap();
    let r: Box<dyn Read> = if bundle.to_string_lossy().ends_with(".zst") {
        Box::new(zstd::stream::read::Decoder::new(f).unwrap())
    } else {
        Box::new(f)
    };
    let mut a = tar::Archive::new(r);
    a.entries()
        .unwrap()
        .take(n)
        .map(|e| {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let mut v = Vec::new();
            e.read_to_end(&mut v).unwrap();
            (name, v)
        })
        .collect()
}

/// Every entry name of a tar bundle.
fn names(bundle: &Path) -> Vec<String> {
    head(bundle, usize::MAX).into_iter().map(|e| e.0).collect()
}

/// Writes the manifest and signature out of `bundle` and has the real CLI
/// verify them; returns what it printed (the trusted comment).
fn cli_verifies(bundle: &Path, public: &Path, scratch: &Path) -> String {
    let entries = head(bundle, 2);
    let get = |name: &str| {
        entries
            .iter()
            .find(|e| e.0 == name)
            .unwrap_or_else(|| panic!("{} has no {name}", bundle.display()))
            .1
            .clone()
    };
    std::fs::create_dir_all(scratch).unwrap();
    std::fs::write(scratch.join(MANIFEST_NAME), get(MANIFEST_NAME)).unwrap();
    std::fs::write(scratch.join(SIGNATURE_NAME), get(SIGNATURE_NAME)).unwrap();
    let o = minisign(
        scratch,
        &["-Vm", MANIFEST_NAME, "-p", &public.display().to_string()],
        "",
    );
    assert!(
        o.status.success(),
        "minisign -V: {}{}",
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

fn manifest_of(bundle: &Path) -> Manifest {
    let e = head(bundle, 1);
    let m = e.iter().find(|e| e.0 == MANIFEST_NAME).unwrap();
    Manifest::from_json_bytes(&m.1).unwrap()
}

#[test]
fn create_signs_every_shape_with_an_encrypted_key() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).unwrap();
    let d = tempfile::tempdir().unwrap();
    let (key, public) = make_key(&d.path().join("keys"), Some("pw of the site"));

    // Without a password and without a terminal: refused before anything.
    let out = d.path().join("nopw.tar");
    let o = create(
        &fx,
        d.path(),
        &out,
        &["--sign-key", &key.display().to_string()],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("LLMGW_SIGN_PASSWORD"), "{}", stderr(&o));
    assert!(!out.exists());
    assert!(!d.path().join("keys/site.key.sequence").exists());

    for (i, name) in ["b.tar", "b.tar.zst", "b"].iter().enumerate() {
        let out = d.path().join(name);
        // LLMGW_SIGN_PASSWORD is the way in without a terminal.
        let o = create_with(
            &fx,
            d.path(),
            &out,
            &[
                "--sign-key",
                &key.display().to_string(),
                "--channel",
                "stable",
                "--expires",
                "30d",
            ],
            &[("LLMGW_SIGN_PASSWORD", "pw of the site")],
        );
        let sha = ok(&o).trim().to_string();
        let seq = i as u64 + 1;
        assert!(
            stderr(&o).contains(&format!("channel stable, sequence {seq}")),
            "{}",
            stderr(&o)
        );
        let e = head(&out, 2);
        if out.is_dir() {
            let n: Vec<&str> = e.iter().map(|e| e.0.as_str()).collect();
            assert_eq!(n, [MANIFEST_NAME, SIGNATURE_NAME]);
        } else {
            assert_eq!(e[0].0, MANIFEST_NAME);
            assert_eq!(e[1].0, SIGNATURE_NAME, "the signature is the second entry");
        }
        let m = manifest_of(&out);
        assert_eq!(
            (m.channel.as_deref(), m.sequence, m.expires.as_deref()),
            (Some("stable"), Some(seq), Some("2027-01-02T00:00:00Z"))
        );
        assert_eq!(
            llmgw_shared::sha256_hex(&e[0].1),
            sha,
            "the manifest's sha256 is still the bundle's identity"
        );
        let said = cli_verifies(&out, &public, &d.path().join(format!("v{i}")));
        assert!(
            said.contains(&format!("sha256:{sha}\tchannel:stable\tsequence:{seq}")),
            "{said}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(d.path().join("keys/site.key.sequence")).unwrap(),
        "3\n"
    );
}

#[test]
fn sign_a_bundle_made_earlier() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).unwrap();
    let d = tempfile::tempdir().unwrap();
    let (key, public) = make_key(&d.path().join("keys"), None);
    let key_arg = key.display().to_string();
    let sign = |bundle: &Path| {
        llmgw()
            .args(["bundle", "sign"])
            .arg(bundle)
            .args(["--key", &key_arg])
            .env_remove("LLMGW_SIGN_PASSWORD")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };

    // No sequence: refused, the bundle untouched.
    let plain = d.path().join("plain.tar");
    ok(&create(&fx, d.path(), &plain, &[]));
    let before = std::fs::read(&plain).unwrap();
    let o = sign(&plain);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("has no sequence"), "{}", stderr(&o));
    assert!(stderr(&o).contains("--sequence N"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&plain).unwrap(), before);

    for name in ["s.tar", "s.tar.zst", "s"] {
        let out = d.path().join(name);
        let sha = ok(&create(&fx, d.path(), &out, &["--sequence", "5"]))
            .trim()
            .to_string();
        let unsigned = names(&out);
        assert!(!unsigned.iter().any(|n| n == SIGNATURE_NAME));
        let o = sign(&out);
        assert_eq!(ok(&o).trim(), sha, "signing keeps the manifest's sha256");
        assert!(
            stderr(&o).contains("channel default, sequence 5"),
            "{}",
            stderr(&o)
        );
        // Signed twice: one signature, the second entry, blobs unchanged.
        let o = sign(&out);
        ok(&o);
        assert!(stderr(&o).contains("replaced"), "{}", stderr(&o));
        let mut signed = names(&out);
        if out.is_dir() {
            assert!(signed.iter().any(|n| n == SIGNATURE_NAME), "{signed:?}");
        } else {
            assert_eq!(signed.remove(1), SIGNATURE_NAME);
            assert_eq!(signed, unsigned);
        }
        let said = cli_verifies(&out, &public, &d.path().join(format!("v-{name}")));
        assert!(said.contains("sequence:5"), "{said}");
        // No temporary left beside it.
        let stray: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(stray.is_empty(), "{stray:?}");
    }

    // A manifest changed after create disagrees with BUNDLE.sha256: refused.
    let dir = d.path().join("s");
    let m = dir.join(MANIFEST_NAME);
    let mut text = std::fs::read(&m).unwrap();
    text.extend_from_slice(b" ");
    std::fs::write(&m, &text).unwrap();
    let o = sign(&dir);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("was changed after it was made"),
        "{}",
        stderr(&o)
    );
}
