//! Signatures both ways with the real minisign CLI (the Debian package
//! scripts/setup.sh installs): it verifies what we sign with keys it made
//! (encrypted and `-W`), and we verify what it signs.

// A test that unwraps panics with the error: that is its failure message.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

use llmgw_shared::signing::{PublicKey, Signature, verify_with_trusted};
use llmgw_shared::{Password, SecretKey};

fn minisign(dir: &Path, args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
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

fn ok(o: Output, what: &str) -> Output {
    assert!(
        o.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

const MANIFEST: &[u8] = b"{\n  \"format_version\": 2\n}\n";

#[test]
fn the_cli_verifies_ours_and_we_verify_its() {
    for encrypted in [false, true] {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        if encrypted {
            ok(
                minisign(
                    dir,
                    &["-G", "-p", "site.pub", "-s", "site.key"],
                    "pw 1\npw 1\n",
                ),
                "minisign -G",
            );
        } else {
            ok(
                minisign(dir, &["-G", "-W", "-p", "site.pub", "-s", "site.key"], ""),
                "minisign -G -W",
            );
        }
        std::fs::write(dir.join("manifest.json"), MANIFEST).unwrap();
        let password = if encrypted {
            Password::Given("pw 1".into())
        } else {
            Password::Unavailable
        };
        let key = SecretKey::load(&dir.join("site.key"), password).unwrap();
        let pub_text = std::fs::read_to_string(dir.join("site.pub")).unwrap();
        let public = PublicKey::parse("site.pub", &pub_text).unwrap();
        assert_eq!(key.key_id(), public.key_id());

        // Ours, checked by the CLI.
        let sig = key
            .sign(MANIFEST, "file:manifest.json\tchannel:stable\tsequence:3")
            .unwrap();
        std::fs::write(dir.join("manifest.json.minisig"), &sig).unwrap();
        let o = ok(
            minisign(dir, &["-Vm", "manifest.json", "-p", "site.pub"], ""),
            "minisign -V of our signature",
        );
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("channel:stable\tsequence:3"), "{out}");
        // Changed by one byte, the CLI refuses it.
        std::fs::write(
            dir.join("manifest.json"),
            b"{\n  \"format_version\": 3\n}\n",
        )
        .unwrap();
        let o = minisign(dir, &["-Vm", "manifest.json", "-p", "site.pub"], "");
        assert!(!o.status.success(), "the CLI accepted a changed manifest");
        std::fs::write(dir.join("manifest.json"), MANIFEST).unwrap();

        // Its, checked by us.
        let stdin = if encrypted { "pw 1\n" } else { "" };
        ok(
            minisign(
                dir,
                &[
                    "-S",
                    "-s",
                    "site.key",
                    "-m",
                    "manifest.json",
                    "-x",
                    "cli.minisig",
                ],
                stdin,
            ),
            "minisign -S",
        );
        let text = std::fs::read_to_string(dir.join("cli.minisig")).unwrap();
        let sig = Signature::parse("cli.minisig", &text).unwrap();
        let id = verify_with_trusted(
            "manifest.json",
            MANIFEST,
            &sig,
            std::slice::from_ref(&public),
        )
        .unwrap();
        assert_eq!(id, key.key_id());

        // Its legacy (-l) signature is refused by name.
        ok(
            minisign(
                dir,
                &[
                    "-S",
                    "-l",
                    "-s",
                    "site.key",
                    "-m",
                    "manifest.json",
                    "-x",
                    "legacy.minisig",
                ],
                stdin,
            ),
            "minisign -S -l",
        );
        let text = std::fs::read_to_string(dir.join("legacy.minisig")).unwrap();
        let err = Signature::parse("legacy.minisig", &text).unwrap_err();
        assert!(
            err.to_string().contains("legacy minisign signature"),
            "{err}"
        );
    }
}
