//! Tests of the models' profiles: names, tags from the Hub's refs, the
//! image left out until its layers are hashed, the same bytes every time.

use super::digests::hash_layer;
use super::*;
use crate::serve::index::Index;
use crate::store::Held;
use crate::store::series::follow::Authority;
use llmgw_shared::manifest::{DigestSource, HfFile, HfRepo, Manifest, PublisherDigest, RefKind};

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

fn file(path: &str, body: &[u8]) -> HfFile {
    let sha = Sha256::of(body);
    HfFile {
        path: path.into(),
        size: body.len() as u64,
        sha256: sha.clone(),
        git_oid: "b".repeat(40).parse().unwrap(),
        lfs: true,
        publisher_digests: vec![PublisherDigest {
            source: DigestSource::HfLfsSha256,
            value: sha.to_string(),
        }],
        xet_hash: None,
    }
}

fn bundle(kind: RepoKind, id: &str, revision: &str, ref_kind: RefKind) -> Held {
    let mut m = Manifest::new(vec!["amd64".into()], 0);
    m.repos.push(HfRepo {
        kind,
        id: id.parse().unwrap(),
        revision: revision.into(),
        ref_kind: Some(ref_kind),
        commit: COMMIT.into(),
        patterns: vec![],
        files: vec![
            file("config.json", br#"{"architectures":["TinyForCausalLM"]}"#),
            file("model.safetensors", &[1u8; 700]),
        ],
        kernel: None,
    });
    crate::test_ids::held(&format!("b-{id}-{revision}"), m)
}

fn config_json(_: &Sha256, _: u64) -> Option<Vec<u8>> {
    Some(br#"{"architectures":["TinyForCausalLM"]}"#.to_vec())
}

fn build(bundles: &[Held], digests: &LayerDigests) -> (OciIndex, Vec<Pending>) {
    let index = Index::build(bundles, &Authority::default());
    let mut oci = OciIndex::default();
    let pending = add(&mut oci, &index.repos, digests, &config_json, None);
    (oci, pending)
}

/// Layer digests for every pending tar layer, as the layer thread would
/// learn them (here a stand-in digest of the layer's path).
fn learned(pending: &[Pending]) -> LayerDigests {
    let mut digests = LayerDigests::default();
    for p in pending {
        digests.insert(
            p.file.sha256.clone(),
            p.path.clone(),
            Sha256::of(p.path.as_bytes()),
        );
    }
    digests
}

/// The OCI part and the index it was made from.
fn build_with_index(bundles: &[Held], digests: &LayerDigests) -> (OciIndex, Index) {
    let index = Index::build(bundles, &Authority::default());
    let mut oci = OciIndex::default();
    add(&mut oci, &index.repos, digests, &config_json, None);
    (oci, index)
}

/// The document of `digest` in `repo`, made again from `index` as a
/// request makes it; its digest checked.
fn made_again(index: &Index, repo: &OciRepo, digest: &Sha256) -> Vec<u8> {
    let Some(Made::Doc(doc)) = repo.made.get(digest) else {
        panic!("{digest} is not a made document of {}", repo.name);
    };
    let from = repo.made_from.as_deref().unwrap();
    let docs = make::make(index, from, doc, &config_json).unwrap();
    let (_, bytes) = docs.into_iter().find(|(w, _)| *w == doc.which).unwrap();
    assert_eq!(&Sha256::of(&bytes), digest, "{:?} made again", doc.which);
    bytes
}

/// Every document the index names, made again on request, is the same
/// bytes as at build: each hashes to its digest and has its size.
#[test]
fn every_document_made_again_is_the_one_the_index_names() {
    let mut new = bundle(RepoKind::Model, "Acme/Tiny", "main", RefKind::Branch);
    new.manifest.repos[0].commit = "f".repeat(40);
    new.manifest.repos[0].files.push(file("README.md", b"hi"));
    new.id = crate::test_ids::id("b-new");
    let bundles = [
        bundle(RepoKind::Model, "Acme/Tiny", "v1.0", RefKind::Tag),
        new,
        bundle(RepoKind::Dataset, "acme/set", "main", RefKind::Branch),
    ];
    let (_, pending) = build(&bundles, &LayerDigests::default());
    let digests = learned(&pending);
    let (oci, index) = build_with_index(&bundles, &digests);
    let mut docs = 0;
    for name in oci.names() {
        let repo = oci.generated(name).unwrap();
        for (digest, made) in &repo.made {
            if let Made::Doc(_) = made {
                let bytes = made_again(&index, repo, digest);
                assert_eq!(bytes.len() as u64, repo.blobs[digest]);
                docs += 1;
            }
        }
    }
    // Per commit, 2 ModelPack documents and 5 of the image (the two
    // commits' image configs differ: their files do).
    assert_eq!(docs, 3 * 7);
}

#[test]
fn modelpack_is_served_at_once_and_the_image_once_its_layers_are_known() {
    let bundles = [
        bundle(RepoKind::Model, "Acme/Tiny", "main", RefKind::Branch),
        bundle(RepoKind::Model, "Acme/Tiny", "v1.0", RefKind::Tag),
    ];
    let (oci, pending) = build(&bundles, &LayerDigests::default());
    let names: Vec<&str> = oci.names().collect();
    assert_eq!(
        names,
        ["modelpack/acme/tiny"],
        "no image before its layers are hashed"
    );
    let pack = oci.generated("modelpack/acme/tiny").unwrap();
    let tags: Vec<&str> = pack.tags.keys().map(String::as_str).collect();
    assert_eq!(tags, [COMMIT, "main", "v1.0"]);
    assert_eq!(pack.tags["main"], pack.tags[COMMIT]);
    let paths: Vec<&str> = pending.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths.len(), 2);
    assert!(paths.contains(&"models/model.safetensors"), "{paths:?}");

    let digests = learned(&pending);
    let (oci, pending) = build(&bundles, &digests);
    assert!(pending.is_empty());
    let image = oci.generated("models/acme/tiny").unwrap();
    let top = &image.tags["v1.0"];
    assert_eq!(image.manifests[top].media_type, documents::OCI_INDEX);
    // An index, two platform manifests, two configs, two tar layers.
    assert_eq!(image.made.len(), 7);
    assert_eq!(image.blobs.len(), 7);
    // The raw files are blobs of the ModelPack name only.
    let weights = Sha256::of(&[1u8; 700]);
    assert!(
        oci.generated("modelpack/acme/tiny")
            .unwrap()
            .blobs
            .contains_key(&weights)
    );
    assert!(!image.blobs.contains_key(&weights));

    let (again, _) = build(&bundles, &digests);
    let again = again.generated("models/acme/tiny").unwrap();
    assert_eq!(again.tags, image.tags, "same store, same digests");
}

#[test]
fn a_dataset_is_under_datasets_and_its_files_are_dataset_layers() {
    let bundles = [bundle(
        RepoKind::Dataset,
        "acme/set",
        "main",
        RefKind::Branch,
    )];
    let (oci, index) = build_with_index(&bundles, &LayerDigests::default());
    let pack = oci.generated("modelpack/datasets/acme/set").unwrap();
    let top = &pack.tags["main"];
    let bytes = made_again(&index, pack, top);
    let m: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(m["artifactType"], documents::MODEL_ARTIFACT);
    assert_eq!(
        m["layers"][1]["mediaType"],
        "application/vnd.cncf.model.dataset.v1.raw"
    );
    assert_eq!(
        m["layers"][1]["annotations"][documents::FILEPATH],
        "model.safetensors"
    );
}

#[test]
fn a_later_import_moves_the_tags_and_every_commit_keeps_its_own() {
    let old = bundle(RepoKind::Model, "acme/tiny", "main", RefKind::Branch);
    let mut new = bundle(RepoKind::Model, "acme/tiny", "main", RefKind::Branch);
    let other = "f".repeat(40);
    new.manifest.repos[0].commit = other.clone();
    new.manifest.repos[0].files.pop();
    new.id = crate::test_ids::id("b-new");
    let (oci, _) = build(&[old.clone(), new.clone()], &LayerDigests::default());
    let pack = oci.generated("modelpack/acme/tiny").unwrap();
    assert_eq!(
        pack.tags["main"], pack.tags[&other],
        "the later import names main"
    );
    assert_ne!(pack.tags[COMMIT], pack.tags[&other]);
    let (oci, _) = build(&[new, old], &LayerDigests::default());
    let pack = oci.generated("modelpack/acme/tiny").unwrap();
    assert_eq!(
        pack.tags["main"], pack.tags[COMMIT],
        "whatever the order, the last import"
    );
}

#[test]
fn a_layer_is_hashed_as_served_and_a_short_blob_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::Store::at(dir.path());
    store.create_dirs().unwrap();
    let body = vec![5u8; 1300];
    let sha = Sha256::of(&body);
    let path = store.blob_file(&sha);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &body).unwrap();
    let blob = Blob {
        sha256: sha.clone(),
        size: body.len() as u64,
    };
    let (digest, read) = hash_layer(&store, &blob, "models/w.bin").unwrap();
    let mut whole = tar::head("models/w.bin", 1300);
    whole.extend_from_slice(&body);
    whole.resize(whole.len() + tar::tail(1300) as usize, 0);
    assert_eq!(digest, Sha256::of(&whole));
    assert_eq!(read, 1300);

    std::fs::write(&path, &body[..1000]).unwrap();
    let e = hash_layer(&store, &blob, "models/w.bin").unwrap_err();
    let text = llmgw_shared::chain(&e);
    assert!(
        text.contains(sha.as_str())
            && text.contains("1000 bytes read where the manifests say 1300"),
        "{text}"
    );

    // The state file: written, read back, and a damaged one is dropped whole.
    let mut known = LayerDigests::default();
    known.insert(sha.clone(), "models/w.bin".into(), digest.clone());
    known.save(&store).unwrap();
    assert_eq!(LayerDigests::load(&store), known);
    std::fs::write(store.state_dir().join("model-layers.json"), b"{not json").unwrap();
    assert_eq!(LayerDigests::load(&store), LayerDigests::default());
}

#[test]
fn a_commit_too_large_for_a_manifest_is_left_out_before_anything_is_hashed() {
    let mut m = bundle(RepoKind::Dataset, "Acme/Huge", "main", RefKind::Branch).manifest;
    m.repos[0].files = (0..=MAX_FILES)
        .map(|i| file(&format!("part-{i:06}.json"), format!("{i}").as_bytes()))
        .collect();
    let small = bundle(RepoKind::Model, "Acme/Tiny", "main", RefKind::Branch).manifest;
    let bundles = [
        crate::test_ids::held("huge", m),
        crate::test_ids::held("small", small),
    ];
    let (oci, pending) = build(&bundles, &LayerDigests::default());
    let names: Vec<&str> = oci.names().collect();
    assert_eq!(
        names,
        ["modelpack/acme/tiny"],
        "the huge dataset has neither profile"
    );
    assert_eq!(
        pending.len(),
        2,
        "only the small model's layers wait to be hashed"
    );
    // Below the bound the manifest is built and measured: 5 000 files fit.
    let mut m = bundle(RepoKind::Dataset, "Acme/Huge", "main", RefKind::Branch).manifest;
    m.repos[0].files = (0..5_000)
        .map(|i| file(&format!("p{i}"), format!("{i}").as_bytes()))
        .collect();
    let (oci, _) = build(
        &[crate::test_ids::held("huge", m)],
        &LayerDigests::default(),
    );
    let names: Vec<&str> = oci.names().collect();
    assert_eq!(names, ["modelpack/datasets/acme/huge"]);
}

/// A rebuild keeps a repository's profiles (the same `Arc`s) while its
/// part is the same version and every layer's digest was known; makes them
/// again while an image waits for a digest, and when the repository
/// changed.
#[test]
fn a_rebuild_keeps_the_profiles_of_an_unchanged_repository_once_complete() {
    let tiny = bundle(RepoKind::Model, "Acme/Tiny", "main", RefKind::Branch);
    let other = bundle(RepoKind::Model, "acme/other", "main", RefKind::Branch);
    let bundles = [tiny.clone(), other.clone()];
    let index = Index::build(&bundles, &Authority::default());
    let make = |digests: &LayerDigests, old: Option<&OciIndex>, index: &Index| {
        let mut oci = OciIndex::default();
        let pending = add(&mut oci, &index.repos, digests, &config_json, old);
        (oci, pending)
    };
    let at = (RepoKind::Model, "acme/tiny".to_string());
    let (waiting, pending) = make(&LayerDigests::default(), None, &index);
    assert!(!pending.is_empty());
    assert!(!waiting.profiles[&at].complete);

    // The digests learned: made again, not kept, and now complete.
    let digests = learned(&pending);
    let (known, pending) = make(&digests, Some(&waiting), &index);
    assert!(pending.is_empty());
    let (before, after) = (&waiting.profiles[&at], &known.profiles[&at]);
    assert!(!Arc::ptr_eq(&before.image, &after.image));
    assert!(after.complete && after.image.manifests.len() == 3);

    // Unchanged: the very same profiles, and what they serve unchanged.
    let (again, _) = make(&digests, Some(&known), &index);
    assert!(Arc::ptr_eq(
        &known.profiles[&at].pack,
        &again.profiles[&at].pack
    ));
    assert!(Arc::ptr_eq(
        &known.profiles[&at].image,
        &again.profiles[&at].image
    ));
    assert_eq!(
        known.generated("models/acme/tiny").unwrap().tags,
        again.generated("models/acme/tiny").unwrap().tags
    );

    // `acme/tiny` at a new commit: made again; `acme/other` kept.
    let mut next = tiny.clone();
    next.manifest.repos[0].commit = "e".repeat(40);
    next.id = crate::test_ids::id("b-next");
    let changed = Index::build(&[tiny, other, next], &Authority::default());
    let (after_import, _) = make(&digests, Some(&again), &changed);
    assert!(!Arc::ptr_eq(
        &again.profiles[&at].pack,
        &after_import.profiles[&at].pack
    ));
    let tags = &after_import.generated("modelpack/acme/tiny").unwrap().tags;
    assert!(tags.contains_key(&"e".repeat(40)), "{tags:?}");
    let other_at = (RepoKind::Model, "acme/other".to_string());
    assert!(Arc::ptr_eq(
        &again.profiles[&other_at].pack,
        &after_import.profiles[&other_at].pack
    ));
}

/// Profiles made while a held `config.json` could not be read (a blob to
/// repair) are not kept: the next build makes them again, with the
/// architecture a request would make them with.
#[test]
fn profiles_made_without_a_readable_config_json_are_made_again() {
    let bundles = [bundle(
        RepoKind::Model,
        "Acme/Tiny",
        "main",
        RefKind::Branch,
    )];
    let index = Index::build(&bundles, &Authority::default());
    let at = (RepoKind::Model, "acme/tiny".to_string());
    let unread = |_: &Sha256, _: u64| -> Option<Vec<u8>> { None };
    let mut first = OciIndex::default();
    add(
        &mut first,
        &index.repos,
        &LayerDigests::default(),
        &unread,
        None,
    );
    assert!(!first.profiles[&at].complete);
    let mut second = OciIndex::default();
    add(
        &mut second,
        &index.repos,
        &LayerDigests::default(),
        &config_json,
        Some(&first),
    );
    assert!(!Arc::ptr_eq(
        &first.profiles[&at].pack,
        &second.profiles[&at].pack
    ));
    let pack = |oci: &OciIndex| {
        let repo = oci.generated("modelpack/acme/tiny").unwrap();
        repo.tags["main"].clone()
    };
    assert_ne!(
        pack(&first),
        pack(&second),
        "the architecture is in the ModelPack config"
    );
}
