//! Untrusted text is never printed raw: terminal escapes, bidi overrides
//! (U+202E) and endless strings in a manifest or a tar come out escaped and
//! cut short from import, inspect, verify and mirror list.

use llmgw_shared::manifest::Gap;

use crate::signed_store::*;

/// Fails if `out` holds anything that acts on a terminal or reorders text.
#[track_caller]
fn assert_inert(what: &str, out: &str) {
    for c in out.chars() {
        let bad = (c.is_control() && c != '\n') || llmgw_shared::is_invisible_or_bidi(c);
        assert!(!bad, "{what}: raw {c:?} printed in: {out}");
    }
}

const ESC: &str = "\u{1b}]0;owned\u{7}\u{1b}[2J";
const RLO: &str = "\u{202e}";

/// A manifest whose free-text fields (tool, version, gaps) carry escapes, a
/// bidi override and a 100 000-character reason (`created` must be a time).
fn hostile_kit() -> Kit {
    let mut kit = Kit::new();
    kit.model_file("acme/tiny", "model.gguf", b"weights");
    unsigned_release(
        &mut kit,
        "acme/tool",
        "v1",
        "uv",
        &[("tool.tar.gz", b"tool")],
    );
    kit.manifest.tool = format!("llmgw{ESC}{RLO}exe.txt");
    kit.manifest.releases[0].version = format!("v1{ESC}");
    kit.manifest.gaps.push(Gap {
        what: format!("acme/x{RLO}"),
        reason: "r".repeat(100_000),
    });
    kit
}

#[test]
fn manifest_text_is_escaped_and_cut_everywhere_it_is_printed() {
    let env = Env::empty();
    let kit = hostile_kit();
    let p = env.path("hostile.tar");
    write_tar(&p, &kit.entries());

    let o = run(&["bundle", "inspect", s(&p)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert_inert("inspect", &out);
    assert!(
        out.contains("by llmgw\\u{1b}]0;owned\\u{7}\\u{1b}[2J\\u{202e}exe.txt"),
        "{out}"
    );
    assert!(out.contains("…[cut: 100000 bytes in all"), "{out}");
    assert!(out.len() < 4000, "{} bytes", out.len());

    let o = run(&["bundle", "verify", s(&p), "--sha256", &kit.sha256()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_inert("verify", &stdout(&o));

    let o = env.import(&p, &kit.sha256());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_inert("import", &stdout(&o));
    assert!(
        stdout(&o).contains("(uv v1\\u{1b}]0;owned"),
        "{}",
        stdout(&o)
    );

    let o = run(&["mirror", "list", "--store", s(&env.store)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_inert("list", &stdout(&o));
    assert!(stdout(&o).len() < 4000);
}

/// Names cannot carry them at all: refused, and the refusal itself is
/// printed escaped.
#[test]
fn names_with_escapes_or_bidi_overrides_are_refused_escaped() {
    let env = Env::empty();
    let mut kit = Kit::new();
    kit.model_file("acme/tiny", &format!("model{RLO}fdp.gguf"), b"weights");
    let err = env.refuse_kit(
        "bidi path",
        &kit,
        &["model\\u{202e}fdp.gguf", "text-direction character"],
    );
    assert_inert("import refusal", &err);

    // A tar whose first entry's name is an escape sequence.
    let p = env.path("escape.tar");
    write_tar(&p, &[Entry::file(&format!("x{ESC}"), b"{}")]);
    for args in [
        vec!["bundle", "inspect", s(&p)],
        vec![
            "bundle",
            "import",
            s(&p),
            "--sha256",
            &"0".repeat(64),
            "--store",
            s(&env.store),
        ],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert_inert("entry name", &stderr(&o));
        assert!(
            stderr(&o).contains("x\\u{1b}]0;owned\\u{7}"),
            "{}",
            stderr(&o)
        );
    }

    // A manifest the parser refuses, quoting an unknown field's name.
    let bytes = format!("{{\"format_version\": 1, \"{}\": 1}}", "\\u001b[2J\\u202e");
    let p = env.path("field.tar");
    write_tar(&p, &[Entry::file("manifest.json", bytes.as_bytes())]);
    let o = run(&["bundle", "inspect", s(&p)]);
    assert_eq!(o.status.code(), Some(1));
    assert_inert("parser error", &stderr(&o));
    assert!(stderr(&o).contains("unknown field"), "{}", stderr(&o));
}
