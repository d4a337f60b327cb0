//! The signature format both ways with the real minisign CLI: it
//! verifies what llmgw-shared signs with keys it made (encrypted and
//! `-W`), and llmgw-shared verifies what it signs.

use llmgw_shared::signing::{PublicKey, Signature, verify_with_trusted};
use llmgw_shared::{Password, SecretKey};

use super::{make_key, minisign, ok};

const MANIFEST: &[u8] = b"{\n  \"format_version\": 2\n}\n";

#[test]
fn the_cli_verifies_ours_and_we_verify_its() {
    for encrypted in [false, true] {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        make_key(dir, encrypted.then_some("pw 1"));
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
        let out = ok(&minisign(
            dir,
            &["-Vm", "manifest.json", "-p", "site.pub"],
            "",
        ));
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
        ok(&minisign(
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
        ));
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
        ok(&minisign(
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
        ));
        let text = std::fs::read_to_string(dir.join("legacy.minisig")).unwrap();
        let err = Signature::parse("legacy.minisig", &text).unwrap_err();
        assert!(
            err.to_string().contains("legacy minisign signature"),
            "{err}"
        );
    }
}
