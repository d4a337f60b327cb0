//! `--help` that teaches: examples and exit codes on every command, every
//! `--store` described; shell completions and man pages from the same
//! definitions; recipe flags refused with the spelling to use.

use super::common::*;

/// Every command, as `llmgw manpage --dir` names its pages
/// (`llmgw-bundle-trust-add.1` is `bundle trust add`).
fn commands() -> Vec<Vec<String>> {
    let d = tempfile::tempdir().unwrap();
    let listing = ok(&run(&["manpage", "--dir", s(d.path())]));
    let mut out = Vec::new();
    for line in listing.lines() {
        let path = std::path::Path::new(line);
        let text = std::fs::read_to_string(path).unwrap();
        assert!(
            text.starts_with(".ie") || text.contains("\n.TH "),
            "{line}: not roff"
        );
        let stem = path.file_stem().unwrap().to_str().unwrap();
        let words: Vec<String> = stem.split('-').skip(1).map(String::from).collect();
        out.push(words);
    }
    out
}

#[test]
fn every_command_has_examples_and_exit_codes_and_store_is_described() {
    let cmds = commands();
    for want in [
        vec!["bundle", "create"],
        vec!["bundle", "trust", "add"],
        vec!["mirror", "serve"],
        vec!["recipe", "candidates"],
        vec!["completions"],
        vec!["manpage"],
    ] {
        assert!(
            cmds.iter().any(|c| *c == want),
            "no page for {want:?}: {cmds:?}"
        );
    }
    let mut with_store = 0;
    for c in &cmds {
        let mut args: Vec<&str> = c.iter().map(String::as_str).collect();
        args.push("--help");
        let help = ok(&run(&args));
        assert!(
            help.contains("\nExamples:\n  "),
            "{c:?} has no examples:\n{help}"
        );
        assert!(
            help.contains("Exit codes"),
            "{c:?} has no exit codes:\n{help}"
        );
        if help.contains("--store <DIR>") {
            with_store += 1;
            // The option's entry, on its line or (long help) the next ones.
            let at = help.find("\n      --store <DIR>").unwrap();
            let entry: String = help[at..].chars().take(300).collect();
            assert!(
                entry.contains("The mirror store") && entry.contains("[env: LLMGW_STORE="),
                "{c:?}: {entry}"
            );
        }
    }
    // import, trust add/list/remove, mirror list/gc/remove/verify/policy/serve
    assert!(with_store >= 10, "--store in {with_store} commands");

    let mirror = ok(&run(&["mirror", "--help"]));
    assert!(
        mirror.lines().any(|l| l.trim_start().starts_with("serve ")),
        "{mirror}"
    );
}

#[test]
fn completions_for_bash_zsh_and_fish() {
    let d = tempfile::tempdir().unwrap();
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef llmgw"),
        ("fish", "complete -c llmgw"),
    ] {
        let text = ok(&run(&["completions", shell]));
        assert!(text.contains(marker), "{shell}: {text}");
        for word in ["bundle", "mirror", "serve", "store", "sha256", "listen"] {
            assert!(text.contains(word), "{shell} completion lacks {word}");
        }
        // The shell itself must accept it, where it is installed.
        let file = d.path().join(format!("llmgw.{shell}"));
        std::fs::write(&file, &text).unwrap();
        if let Ok(o) = std::process::Command::new(shell)
            .arg("-n")
            .arg(&file)
            .output()
        {
            assert!(o.status.success(), "{shell} -n: {}", stderr(&o));
        } else {
            assert_ne!(shell, "bash", "bash must be there");
        }
    }
    let o = run(&["completions", "tcsh"]);
    refused(&o, 2, &["invalid value 'tcsh'", "bash", "zsh", "fish"], &[]);
}

#[test]
fn the_man_page_names_every_command_and_renders() {
    let page = ok(&run(&["manpage"]));
    assert!(page.contains(".TH llmgw 1"), "{page}");
    for sub in ["recipe", "bundle", "mirror", "completions", "manpage"] {
        assert!(
            page.contains(&format!("llmgw\\-{sub}(1)")),
            "no {sub} in:\n{page}"
        );
    }
    assert!(commands().len() >= 24);
    if let Ok(o) = std::process::Command::new("groff")
        .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(page.as_bytes())?;
            child.wait_with_output()
        })
    {
        assert!(o.status.success() && o.stderr.is_empty(), "{}", stderr(&o));
    }
}

#[test]
fn recipe_refuses_uname_arches_and_drivers_that_are_not_versions() {
    let o = run(&["recipe", "builds", "llamacpp", "b6123", "--arch", "x86_64"]);
    refused(&o, 2, &["'x86_64'", "use amd64"], &[]);
    assert!(o.stdout.is_empty());
    let o = run(&[
        "recipe",
        "environments",
        "vllm",
        "0.20.1",
        "--arch",
        "aarch64",
    ]);
    refused(&o, 2, &["use arm64"], &[]);
    let o = run(&[
        "recipe",
        "candidates",
        "llamacpp",
        "b6123",
        "--arch",
        "amd64",
        "--driver",
        "abc",
    ]);
    refused(
        &o,
        2,
        &["\"abc\" is not an NVIDIA driver version", "550.54.15"],
        &[],
    );
    assert!(o.stdout.is_empty());
    // create says the same of its --arch.
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("b.tar");
    let o = llmgw()
        .args([
            "bundle",
            "create",
            "--arch",
            "x86_64",
            "--engine",
            "llamacpp=b6123",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    refused(&o, 2, &["--arch x86_64", "use amd64"], &[]);
    assert_eq!(snapshot(d.path()).len(), 0, "create left something behind");
}
