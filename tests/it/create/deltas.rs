//! Differential bundles end to end, with the real binary against the
//! loopback fixture upstream: `mirror have` lists a store, `bundle create
//! --have` carries only what it lacks (and `--dry-run` says so first,
//! downloading nothing), the delta imports into the store that made the
//! list, an empty store refuses it naming exactly what is missing
//! (`--need-out`), `bundle create --need` makes a repair bundle of exactly
//! those blobs, and after it the delta imports there too.

use crate::bundle_kit;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use bundle_kit::{assert_refused, llmgw, ok, s, snapshot, stderr};
use llmgw_fixture::{Fixture, FixtureOptions};
use llmgw_shared::manifest::Manifest;
use llmgw_shared::{HaveList, NeedList, Sha256};

/// `llmgw bundle create` against the fixture: llmgw's signed release and
/// llama.cpp for amd64 and model acme/tiny; `more` adds uv and dataset
/// acme/data (what the next update brings).
fn create(fx: &Fixture, cache: &Path, more: bool, extra: &[&str]) -> Command {
    let mut c = llmgw();
    c.args(["bundle", "create", "--arch", "amd64"])
        .args(["--github-api", &fx.github_api_url()])
        .args(["--hf-endpoint", &fx.hf_endpoint()])
        .args(["--llmgw", "v0.5.0", "--llmgw-api", &fx.llmgw_api_url()])
        .args(["--trust", s(fx.trust_key_path())])
        .args(["--engine", "llamacpp=b6123", "--model", "acme/tiny@main"])
        .args(["--cache", s(cache)])
        .args(extra)
        .env_remove("HF_TOKEN")
        .env_remove("HF_ENDPOINT")
        .env("RUST_LOG", "warn");
    if more {
        c.args(["--engine", "uv=0.12.20", "--dataset", "acme/data"]);
    }
    c
}

/// The entries of a tar bundle, by the real `tar`.
fn tar_entries(bundle: &Path) -> Vec<String> {
    let o = Command::new("tar").arg("-tf").arg(bundle).output().unwrap();
    ok(&o).lines().map(str::to_string).collect()
}

/// The blobs a tar carries but its SBOM (#33, made after planning): sha256 -> size.
fn carried(bundle: &Path, m: &Manifest) -> BTreeMap<Sha256, u64> {
    let all = content_blobs(m);
    tar_entries(bundle)
        .iter()
        .filter_map(|e| e.strip_prefix("blobs/sha256/"))
        .filter(|sha| all.contains_key(*sha))
        .map(|sha| (sha.parse().unwrap(), all[sha]))
        .collect()
}

/// Every blob the manifest names but its SBOM.
fn content_blobs(m: &Manifest) -> BTreeMap<Sha256, u64> {
    let mut all = m.blobs();
    all.retain(|sha, _| m.evidence.as_ref().is_none_or(|e| e.sbom.sha256 != *sha));
    all
}

fn manifest_of(bundle: &Path) -> Manifest {
    let o = Command::new("tar")
        .arg("-xOf")
        .arg(bundle)
        .arg("manifest.json")
        .output()
        .unwrap();
    assert!(o.status.success());
    Manifest::from_json_bytes(&o.stdout).unwrap()
}

fn import(store: &Path, bundle: &Path, extra: &[&str]) -> Output {
    let sha = format!("{}.sha256", bundle.display());
    llmgw()
        .args([
            "bundle",
            "import",
            s(bundle),
            "--sha256",
            &sha,
            "--store",
            s(store),
        ])
        .args(extra)
        .output()
        .unwrap()
}

fn trusting_store(fx: &Fixture, store: &Path) {
    ok(&llmgw()
        .args([
            "bundle",
            "trust",
            "add",
            s(fx.trust_key_path()),
            "--store",
            s(store),
        ])
        .output()
        .unwrap());
}

#[test]
fn a_delta_carries_only_what_the_store_lacks_and_a_need_list_repairs_another_store() {
    let fx = Fixture::start_blocking(FixtureOptions::default()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let cache = dir.join("cache");

    // The site's first bundle, imported.
    let base = dir.join("base.tar");
    ok(&create(&fx, &cache, false, &["--out", s(&base)])
        .output()
        .unwrap());
    let base_m = manifest_of(&base);
    let store = dir.join("store");
    trusting_store(&fx, &store);
    ok(&import(&store, &base, &[]));

    // What it holds, as a canonical list whose sha256 is printed.
    let have = dir.join("have.json");
    let printed = ok(&llmgw()
        .args(["mirror", "have", "--store", s(&store), "--out", s(&have)])
        .output()
        .unwrap());
    let have_bytes = std::fs::read(&have).unwrap();
    let have_sha = llmgw_shared::sha256_hex(&have_bytes);
    assert_eq!(printed.trim(), have_sha);
    let list = HaveList::from_json_bytes(&have_bytes).unwrap();
    assert_eq!(list.to_canonical_json(), have_bytes, "canonical");
    assert_eq!(list.blob_map(), base_m.blobs());
    let base_sha = std::fs::read_to_string(format!("{}.sha256", base.display())).unwrap();
    assert_eq!(list.manifests, vec![base_sha[..64].to_string()]);
    let id = std::fs::read_to_string(store.join("state/store-id")).unwrap();
    assert_eq!(list.store_id, id.trim());
    // Made once: the same store gives the same list.
    ok(&llmgw()
        .args(["mirror", "have", "--store", s(&store), "--out", s(&have)])
        .output()
        .unwrap());
    assert_eq!(std::fs::read(&have).unwrap(), have_bytes);

    // The dry run says what the delta will fetch and carry, downloading
    // no blob (only the checksum files planning reads: llmgw's signed
    // SHA256SUMS, the engines' .sha256 sidecars).
    let new_blobs = {
        let full = dir.join("full.tar");
        ok(
            &create(&fx, &dir.join("cache-full"), true, &["--out", s(&full)])
                .output()
                .unwrap(),
        );
        let m = manifest_of(&full);
        std::fs::remove_file(&full).unwrap();
        let mut b = content_blobs(&m);
        b.retain(|sha, _| !base_m.blobs().contains_key(sha));
        b
    };
    fx.clear_requests();
    let dry = dir.join("dry.tar");
    let cold = dir.join("cache-cold");
    let o = create(
        &fx,
        &cold,
        true,
        &["--out", s(&dry), "--have", s(&have), "--dry-run"],
    )
    .output()
    .unwrap();
    let text = ok(&o);
    assert!(!dry.exists(), "a dry run writes no bundle");
    // Besides the one HEAD of each download host's root (#53 item 1).
    for r in fx
        .requests()
        .iter()
        .filter(|r| !(r.method == "HEAD" && r.path == "/"))
    {
        assert!(
            !r.path.contains("/resolve/")
                && (r.listener == "github-api"
                    || r.listener == "hub"
                    || r.path.contains(".sha256")
                    || r.path.contains("SHA256SUMS")
                    || r.listener == "llmgw"),
            "a dry run downloaded {} {}",
            r.listener,
            r.path
        );
    }
    assert!(text.contains("planned (delta)"), "{text}");
    let non_lfs: Vec<Sha256> = base_m
        .repos
        .iter()
        .flat_map(|r| &r.files)
        .filter(|f| !f.lfs)
        .map(|f| f.sha256.clone())
        .collect();
    let held_known: Vec<(Sha256, u64)> = content_blobs(&base_m)
        .into_iter()
        .filter(|(sha, _)| !non_lfs.contains(sha))
        .collect();
    let held_bytes: u64 = held_known.iter().map(|(_, s)| *s).sum();
    assert!(
        text.contains(&format!(
            "left behind (the site holds them): {} files, {held_bytes} bytes",
            held_known.len()
        )),
        "{text}"
    );
    let o = create(
        &fx,
        &cold,
        true,
        &["--out", s(&dry), "--have", s(&have), "--dry-run", "--json"],
    )
    .output()
    .unwrap();
    let d: serde_json::Value = serde_json::from_str(&ok(&o)).unwrap();
    assert_eq!(d["delivery"], "delta");
    let lfs_new: u64 = new_blobs.values().sum::<u64>();
    // Every new blob is known by sha256 before fetching (the dataset's
    // small files excepted, which are fetched to learn it).
    let unknown_new = d["sha256_unknown"]["bytes"].as_u64().unwrap()
        - base_m
            .repos
            .iter()
            .flat_map(|r| &r.files)
            .filter(|f| !f.lfs)
            .map(|f| f.size)
            .sum::<u64>();
    assert_eq!(d["carry"]["bytes"].as_u64().unwrap() + unknown_new, lfs_new);

    // The delta: the whole plan in its manifest, only the new blobs in it.
    let delta = dir.join("delta.tar");
    let o = create(&fx, &cache, true, &["--out", s(&delta), "--have", s(&have)])
        .output()
        .unwrap();
    ok(&o);
    assert!(
        stderr(&o).contains("not carried (delta.prerequisites)"),
        "{}",
        stderr(&o)
    );
    let dm = manifest_of(&delta);
    assert_eq!(carried(&delta, &dm), new_blobs, "only the new blobs travel");
    let d = dm.delta.clone().unwrap();
    assert_eq!(d.bases, vec![have_sha.clone()]);
    let prereqs: BTreeMap<Sha256, u64> = d
        .prerequisites
        .iter()
        .map(|p| (p.sha256.clone(), p.size))
        .collect();
    assert_eq!(prereqs, content_blobs(&base_m));
    assert_eq!(tar_entries(&delta)[0], "manifest.json");

    let o = llmgw()
        .args(["bundle", "inspect", s(&delta)])
        .output()
        .unwrap();
    let text = ok(&o);
    assert!(
        text.contains(&format!(
            "delta: relies on the store holding {} more blobs",
            prereqs.len()
        )) && text.contains(&have_sha),
        "{text}"
    );

    // --base: the same, from a manifest kept on the connected side.
    let base_json = dir.join("base-manifest.json");
    let o = Command::new("tar")
        .arg("-xOf")
        .arg(&base)
        .arg("manifest.json")
        .output()
        .unwrap();
    std::fs::write(&base_json, &o.stdout).unwrap();
    let by_base = dir.join("by-base.tar");
    ok(&create(
        &fx,
        &cache,
        true,
        &["--out", s(&by_base), "--base", s(&base_json)],
    )
    .output()
    .unwrap());
    let bm = manifest_of(&by_base);
    assert_eq!(bm.delta.as_ref().unwrap().prerequisites, d.prerequisites);
    assert_eq!(
        bm.delta.as_ref().unwrap().bases,
        vec![llmgw_shared::sha256_hex(&o.stdout)]
    );
    assert_eq!(carried(&by_base, &bm), new_blobs);

    // `bundle verify` has no store: it checks what is carried and says
    // what it cannot.
    let o = llmgw()
        .args(["bundle", "verify", s(&delta), "--sha256"])
        .arg(format!("{}.sha256", delta.display()))
        .args(["--trust", s(fx.trust_key_path())])
        .output()
        .unwrap();
    let out = ok(&o);
    assert!(
        out.contains(&format!(
            "not checked here (no store): {} prerequisite blob(s)",
            prereqs.len()
        )) && out.contains("the signature of release llmgw/llmgw v0.5.0"),
        "{out}"
    );

    // An empty store refuses it before staging anything, naming each
    // missing blob by release, repo and file, and writes the need-list.
    let empty = dir.join("empty");
    trusting_store(&fx, &empty);
    std::fs::create_dir_all(empty.join("tmp")).unwrap();
    let need = dir.join("need.json");
    let err = assert_refused("delta into an empty store", &empty, &[], || {
        import(&empty, &delta, &["--need-out", s(&need)])
    });
    assert!(
        err.contains(&format!(
            "is a delta, and this store lacks {} of the blobs it relies on",
            prereqs.len()
        )),
        "{err}"
    );
    let uses = llmgw_shared::blob_uses(&dm);
    for (sha, size) in &prereqs {
        for u in &uses[sha.as_str()] {
            let line = format!("  {u} (sha256 {sha}, {size} bytes)");
            assert!(err.contains(&line), "{line:?} not in: {err}");
        }
    }
    let need_list = NeedList::from_json_bytes(&std::fs::read(&need).unwrap()).unwrap();
    let needed: BTreeMap<Sha256, u64> = need_list
        .blobs
        .iter()
        .map(|b| (b.sha256.clone(), b.size))
        .collect();
    assert_eq!(needed, prereqs, "exactly the missing blobs");
    assert_eq!(need_list.bundle, dm_sha(&delta));

    // The same delta as a volume set: refused the same way from its first
    // volume alone, before anything is staged (not taken in as a part).
    let vdelta = dir.join("vdelta.tar");
    let o = create(
        &fx,
        &cache,
        true,
        &[
            "--out",
            s(&vdelta),
            "--have",
            s(&have),
            "--volume-size",
            "100K",
            "--chunk-size",
            "32K",
        ],
    )
    .output()
    .unwrap();
    let vsha = ok(&o).trim().to_string();
    let mut volumes: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path().display().to_string())
        .filter(|p| p.contains("vdelta.v"))
        .collect();
    volumes.sort();
    assert!(!volumes.is_empty());
    let vneed = dir.join("vneed.json");
    let err = assert_refused("delta volumes into an empty store", &empty, &[], || {
        llmgw()
            .args(["bundle", "import", "--store", s(&empty), "--sha256", &vsha])
            .args(["--need-out", s(&vneed)])
            .arg(&volumes[0])
            .output()
            .unwrap()
    });
    assert!(err.contains("is a delta"), "{err}");
    let vlist = NeedList::from_json_bytes(&std::fs::read(&vneed).unwrap()).unwrap();
    assert_eq!(vlist.blobs, need_list.blobs);

    // Into the store that made the list, it imports.
    let out = ok(&import(&store, &delta, &[]));
    assert!(out.contains("imported bundle"), "{out}");

    // The repair bundle carries exactly the needed blobs; then the delta
    // imports into the other store too.
    let repair = dir.join("repair.tar");
    let o = create(
        &fx,
        &cache,
        true,
        &["--out", s(&repair), "--need", s(&need)],
    )
    .output()
    .unwrap();
    ok(&o);
    let text = ok(&llmgw()
        .args(["bundle", "inspect", s(&repair)])
        .output()
        .unwrap());
    assert!(text.contains("repair bundle: "), "{text}");
    let rm = manifest_of(&repair);
    assert!(rm.is_repair() && rm.releases.is_empty() && rm.repos.is_empty());
    assert_eq!(carried(&repair, &rm), prereqs);
    ok(&import(&empty, &repair, &[]));
    let before = snapshot(&empty.join("blobs"));
    let out = ok(&import(&empty, &delta, &[]));
    assert!(out.contains("imported bundle"), "{out}");
    assert_ne!(before, snapshot(&empty.join("blobs")));
    // Both stores hold the same blobs but the base's own SBOM (#33).
    let sbom = base_m.evidence.as_ref().unwrap().sbom.sha256.to_string();
    let files = |m: BTreeMap<String, String>| m.into_iter().filter(|(_, v)| v != "dir");
    let want: BTreeMap<_, _> = files(snapshot(&store.join("blobs")))
        .filter(|(k, _)| !k.ends_with(&sbom))
        .collect();
    assert_eq!(
        files(snapshot(&empty.join("blobs"))).collect::<BTreeMap<_, _>>(),
        want
    );

    // A need-list naming a blob this request does not plan is refused.
    let mut odd = need_list.clone();
    odd.blobs[0].sha256 = "e".repeat(64).parse().unwrap();
    let odd_path = dir.join("odd.json");
    std::fs::write(&odd_path, odd.to_canonical_json()).unwrap();
    let o = create(
        &fx,
        &cache,
        true,
        &["--out", s(&dir.join("odd.tar")), "--need", s(&odd_path)],
    )
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not part of this request"),
        "{}",
        stderr(&o)
    );
}

fn dm_sha(bundle: &Path) -> String {
    std::fs::read_to_string(format!("{}.sha256", bundle.display())).unwrap()[..64].to_string()
}

/// A have-list whose series stands at the highest sequence there is
/// (#28 item 4) is refused when read, naming the file and the entry —
/// before it could make `--sign-key` ask for a sequence past it. Nothing
/// is written.
#[test]
fn a_have_list_at_the_last_sequence_is_refused_when_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let key = |args: &[&str]| {
        let o = Command::new("minisign")
            .args(args)
            .current_dir(dir)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("minisign not runnable ({e}): run scripts/setup.sh"));
        assert!(o.status.success(), "{}", stderr(&o));
    };
    key(&["-G", "-W", "-p", "site.pub", "-s", "site.key"]);
    let have = dir.join("have.json");
    let list = serde_json::json!({
        "kind": "llmgw-have", "format_version": 1, "store_id": "0".repeat(32),
        "manifests": [], "blobs": [],
        "series": [{"key_id": "RWQKEY", "channel": "stable",
                    "sequence": u64::MAX, "manifest_sha256": "a".repeat(64)}],
    });
    std::fs::write(&have, list.to_string()).unwrap();
    let out = dir.join("delta.tar");
    let o = llmgw()
        .args([
            "bundle",
            "create",
            "--arch",
            "amd64",
            "--model",
            "acme/tiny",
        ])
        .args(["--out", s(&out), "--cache", s(&dir.join("cache"))])
        .args(["--have", s(&have), "--sign-key", s(&dir.join("site.key"))])
        .args(["--hf-endpoint", "http://127.0.0.1:9"])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{}: expected a have-list", have.display()))
            && err.contains("the series of key RWQKEY channel stable")
            && err.contains("expected a sequence below 18446744073709551615")
            && err.contains("found \"18446744073709551615\"")
            && err.contains("llmgw mirror have"),
        "{err}"
    );
    assert!(!err.contains("or higher"), "{err}");
    assert!(!out.exists());
}
