//! The series rules, the policy and the state files they live in, on
//! stores in temporary folders.

use super::*;
use crate::test_ids::id;

fn by(seq: u64) -> SignedBy {
    SignedBy {
        key_id: "ABC".into(),
        channel: "stable".into(),
        sequence: seq,
    }
}

#[test]
fn a_series_only_moves_up() {
    let mut s = Series::default();
    assert_eq!(s.decide(&by(5), &id("a"), false).unwrap(), Step::Advance);
    s.advance(&by(5), &id("a"));
    assert_eq!(s.decide(&by(5), &id("a"), false).unwrap(), Step::Same);
    assert_eq!(s.decide(&by(6), &id("b"), false).unwrap(), Step::Advance);
    let err = s.decide(&by(5), &id("b"), true).unwrap_err().to_string();
    assert!(err.starts_with("equivocation"), "{err}");
    let err = s.decide(&by(4), &id("c"), false).unwrap_err().to_string();
    assert!(
        err.starts_with("rollback") && err.contains("--allow-rollback"),
        "{err}"
    );
    assert_eq!(
        s.decide(&by(4), &id("c"), true).unwrap(),
        Step::Rollback { held: 5 }
    );
    // Another channel of the same key is its own series.
    let other = SignedBy {
        channel: "beta".into(),
        ..by(1)
    };
    assert_eq!(s.decide(&other, &id("d"), false).unwrap(), Step::Advance);
}

#[test]
fn state_files_round_trip() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::at(d.path());
    store.create_dirs().unwrap();
    assert_eq!(Series::load(&store).unwrap(), Series::default());
    assert_eq!(Policy::load(&store).unwrap(), Policy::default());
    let mut s = Series::default();
    s.advance(&by(3), &id("a"));
    s.save(&store).unwrap();
    assert_eq!(Series::load(&store).unwrap(), s);
    std::fs::write(store.state_dir().join(SERIES_FILE), b"[").unwrap();
    let err = Series::load(&store).unwrap_err().to_string();
    assert!(err.contains("series.json"), "{err}");
}

/// Each damaged state file says what it records and how to mend it —
/// not another file's remedy — and the parser's words come once, last.
#[test]
fn a_damaged_state_file_says_what_it_records() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::at(d.path());
    store.create_dirs().unwrap();
    std::fs::create_dir_all(store.state_dir()).unwrap();
    let write = |name: &str, bytes: &[u8]| {
        std::fs::write(store.state_dir().join(name), bytes).unwrap();
    };
    write(SERIES_FILE, b"{\"series\": 3}");
    write(POLICY_FILE, b"{\"require_signature\": \"yes\"}");
    write(
        "imports.json",
        b"{\"format\": 9, \"next\": 1, \"bundles\": {}}",
    );
    write("store-id", b"\x1b[31mnot an id\n");
    let damaged = [
        (
            Series::load(&store).map(drop),
            "series.json",
            "it is not the JSON",
            "an older signed bundle would be accepted again",
        ),
        (
            Policy::load(&store).map(drop),
            "policy.json",
            "it is not the JSON",
            "`llmgw mirror policy`",
        ),
        (
            state::ImportOrder::load(&store).map(drop),
            "imports.json",
            "it is format 9, and this llmgw knows format 1",
            "the order of the manifests' file times",
        ),
        (
            crate::store::have::store_id(&store).map(drop),
            "store-id",
            "expected 32 lower-case hex digits, found \\u{1b}[31mnot an id",
            "a new id is made",
        ),
    ];
    for (result, file, fault, remedy) in damaged {
        let err = result.unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains(&format!("{file} is damaged: {fault}")),
            "{text}"
        );
        assert!(text.contains(remedy), "{text}");
        assert!(!text.contains('\x1b'), "{text}");
        let chain = llmgw_shared::chain(&err);
        if fault.starts_with("it is not the JSON") {
            // serde's words, once, after the remedy.
            assert!(
                chain.starts_with(&text) && chain.len() > text.len(),
                "{chain}"
            );
            assert!(chain.contains("invalid type"), "{chain}");
        } else {
            assert_eq!(chain, text);
        }
    }
}

#[test]
fn times() {
    let mut m = Manifest::new(vec!["amd64".into()], 1000);
    m.expires = Some(llmgw_shared::rfc3339_utc(2000));
    let p = Policy::default();
    assert!(check_times(&m, 1500, &p).unwrap().is_empty());
    let notes = check_times(&m, 2000, &p).unwrap();
    assert!(notes[0].contains("expired"), "{notes:?}");
    let enforce = Policy {
        enforce_expiry: true,
        ..p.clone()
    };
    let err = check_times(&m, 2000, &enforce).unwrap_err().to_string();
    assert!(err.contains("enforces expiry"), "{err}");
    let notes = check_times(&m, 1000 - CLOCK_SKEW_SECS - 1, &p).unwrap();
    assert!(notes[0].contains("after this machine's clock"), "{notes:?}");
}
