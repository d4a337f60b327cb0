use super::*;
use crate::digest::sha256_hex;

fn asset(name: &str, body: &[u8]) -> Asset {
    let sha = Sha256::of(body);
    Asset {
        name: name.into(),
        size: body.len() as u64,
        sha256: sha.clone(),
        publisher_digests: vec![PublisherDigest {
            source: DigestSource::GithubAssetDigest,
            value: sha.into(),
        }],
        content_type: None,
    }
}

fn sample() -> Manifest {
    let mut m = Manifest::new(vec!["arm64".into(), "amd64".into()], 0);
    m.releases.push(Release {
        repo: crate::RepoId::parse("release repository", "ggml-org/llama.cpp").unwrap(),
        tag: "b6123".into(),
        engine: "llamacpp".into(),
        version: "b6123".into(),
        builds: vec![BuildRef {
            arch: "amd64".into(),
            variant: "cpu".into(),
            assets: vec!["b.tar.gz".into()],
        }],
        assets: vec![asset("b.tar.gz", b"bbb"), asset("a.tar.gz", b"aaa")],
        signature: None,
    });
    m.repos.push(HfRepo {
        kind: RepoKind::Model,
        id: crate::RepoId::parse("repository id", "acme/tiny").unwrap(),
        revision: "main".into(),
        ref_kind: None,
        commit: "0123456789abcdef0123456789abcdef01234567".into(),
        patterns: vec![],
        files: vec![HfFile::describing("config.json", b"{}", false)],
        kernel: None,
    });
    m
}

#[test]
fn canonical_round_trip() {
    let m = sample();
    let bytes = m.to_canonical_json();
    let back = Manifest::from_json_bytes(&bytes).unwrap();
    assert_eq!(back.to_canonical_json(), bytes);
    assert_eq!(back.arches, vec!["amd64", "arm64"]);
    assert_eq!(back.releases[0].assets[0].name, "a.tar.gz");
    assert_eq!(m.blobs().len(), 3);
    assert_eq!(m.total_bytes(), 8);
}

#[test]
fn order_of_discovery_does_not_change_bytes() {
    let a = sample();
    let mut b = sample();
    b.releases[0].assets.reverse();
    b.arches.reverse();
    assert_eq!(a.to_canonical_json(), b.to_canonical_json());
}

fn refused(m: &Manifest) -> String {
    let bytes = serde_json::to_vec(m).unwrap();
    // What the user sees: the refusal and its causes.
    crate::chain(&Manifest::from_json_bytes(&bytes).unwrap_err())
}

#[test]
fn unsafe_names_are_refused() {
    let mut m = sample();
    m.repos[0].files[0].path = "../../etc/passwd".into();
    assert!(refused(&m).contains("'..'"));
    let mut m = sample();
    m.releases[0].assets[0].name = "/abs".into();
    assert!(refused(&m).contains("absolute"));
    // A repository id is checked as it is read: no manifest holds a bad one.
    let mut v = serde_json::to_value(sample()).unwrap();
    v["releases"][0]["repo"] = "a\\b/c".into();
    let err = Manifest::from_json_bytes(&serde_json::to_vec(&v).unwrap()).unwrap_err();
    assert!(crate::chain(&err).contains("release repository"));
    v["releases"][0]["repo"] = "ggml-org/llama.cpp".into();
    v["repos"][0]["id"] = "tiny".into();
    let err = Manifest::from_json_bytes(&serde_json::to_vec(&v).unwrap()).unwrap_err();
    assert!(crate::chain(&err).contains("repository id"), "{err}");
}

#[test]
fn a_newer_format_is_named() {
    let mut v: serde_json::Value = serde_json::from_slice(&sample().to_canonical_json()).unwrap();
    v["format_version"] = 10.into();
    v["new_field"] = 1.into();
    let err = Manifest::from_json_bytes(&serde_json::to_vec(&v).unwrap()).unwrap_err();
    assert!(err.to_string().contains("bundle format 10"), "{err}");
}

/// Images or charts in a manifest that says format 2 are refused: a format 2
/// reader would import the bundle and serve none of them.
#[test]
fn images_need_format_3() {
    let mut v: serde_json::Value = serde_json::from_slice(&sample().to_canonical_json()).unwrap();
    let sha = "a".repeat(64);
    v["images"] = serde_json::json!([{
        "registry": "docker.io", "repository": "library/ubuntu", "tag": "latest",
        "digest": sha,
        "manifests": [{"sha256": sha, "size": 2, "media_type": "application/vnd.oci.image.manifest.v1+json"}],
        "blobs": []
    }]);
    let err = Manifest::from_json_bytes(&serde_json::to_vec(&v).unwrap()).unwrap_err();
    assert!(err.to_string().contains("need format 3"), "{err}");
    v["format_version"] = 3.into();
    let m = Manifest::from_json_bytes(&serde_json::to_vec(&v).unwrap()).unwrap();
    assert_eq!(m.needed_format(), 3);
    assert_eq!(m.blobs().get(&m.images[0].digest), Some(&2));
}

/// An image (or a chart's artifact) under a name the mirror makes itself
/// is refused, whatever registry it came from: carried, it would take a
/// model's OCI name from the model.
#[test]
fn the_mirrors_own_names_are_refused() {
    let mut v: serde_json::Value = serde_json::from_slice(&sample().to_canonical_json()).unwrap();
    let sha = "a".repeat(64);
    v["format_version"] = 3.into();
    for (registry, repository, prefix) in [
        (serde_json::Value::Null, "models/acme/tiny", "models"),
        ("127.0.0.1:5000".into(), "modelpack/acme/tiny", "modelpack"),
        (serde_json::Value::Null, "charts/acme", "charts"),
    ] {
        v["images"] = serde_json::json!([{
            "registry": registry, "repository": repository, "tag": "main",
            "digest": sha,
            "manifests": [{"sha256": sha, "size": 2, "media_type": "application/vnd.oci.image.manifest.v1+json"}],
            "blobs": []
        }]);
        if v["images"][0]["registry"].is_null() {
            v["images"][0].as_object_mut().unwrap().remove("registry");
        }
        let err = Manifest::from_json_bytes(&serde_json::to_vec(&v).unwrap()).unwrap_err();
        assert!(
            matches!(err, ManifestError::Reserved { prefix: p, .. } if p == prefix),
            "{repository}: {err}"
        );
        assert!(
            err.to_string().contains(&format!("under {prefix}/")),
            "{err}"
        );
    }
}

/// A bundle written by the previous release still reads, and a format 1
/// manifest that smuggles in a format 2 part is refused: an old reader
/// would have ignored it.
#[test]
fn format_1_still_reads_and_stays_format_1() {
    let mut m = sample();
    m.format_version = 1;
    let back = Manifest::from_json_bytes(&m.to_canonical_json()).unwrap();
    assert_eq!(back.format_version, 1);

    let mut m = sample();
    m.format_version = 1;
    m.sequence = Some(3);
    m.repos[0].ref_kind = Some(RefKind::Tag);
    let err = refused(&m);
    assert!(
        err.contains("format 1 but uses sequence, ref_kind"),
        "{err}"
    );
}

fn python_env(arch: &str) -> PythonEnv {
    let wheel = b"wheel bytes";
    let meta = b"Metadata-Version: 2.1";
    let lock = b"lock-version = \"1.0\"";
    let digest = |source, body: &[u8]| PublisherDigest {
        source,
        value: sha256_hex(body),
    };
    PythonEnv {
        name: format!("vllm-0.20.1-cu13-{arch}"),
        engine: Some("vllm".into()),
        version: Some("0.20.1".into()),
        variant: Some("cu13".into()),
        arch: arch.into(),
        python: "3.12".into(),
        platform: "x86_64-manylinux_2_28".into(),
        requirements: vec!["vllm==0.20.1".into()],
        indexes: vec![PythonIndex {
            name: "pypi".into(),
            url: "https://pypi.org/simple".into(),
            explicit: false,
            packages: vec![],
        }],
        resolver: Resolver {
            name: "uv".into(),
            version: "0.9.5".into(),
        },
        lock: BlobRef {
            sha256: Sha256::of(lock),
            size: lock.len() as u64,
        },
        interpreter: None,
        os_packages: vec!["gcc".into()],
        free_gb: Some(20),
        note: None,
        node_interpreter: None,
        site_lock: None,
        overrides: Vec::new(),
        constraints: Vec::new(),
        files: vec![PythonFile {
            project: "vllm".into(),
            version: "0.20.1".into(),
            filename: "vllm-0.20.1-cp38-abi3-manylinux_2_28_x86_64.whl".into(),
            size: wheel.len() as u64,
            sha256: Sha256::of(wheel),
            requires_python: Some(">=3.10".into()),
            yanked: None,
            upload_time: None,
            metadata: Some(MetadataFile {
                sha256: Sha256::of(meta),
                size: meta.len() as u64,
                publisher_digests: vec![digest(DigestSource::PypiCoreMetadata, meta)],
            }),
            origin: "https://files.pythonhosted.org/packages/vllm.whl".into(),
            publisher_digests: vec![digest(DigestSource::PypiSimpleSha256, wheel)],
        }],
    }
}

#[test]
fn format_2_round_trips_with_every_part() {
    let mut m = sample();
    m.channel = Some("stable".into());
    m.sequence = Some(7);
    m.expires = Some("2027-01-01T00:00:00Z".into());
    m.repos[0].ref_kind = Some(RefKind::Branch);
    m.python_envs = vec![python_env("arm64"), python_env("amd64")];
    let prereq = m.releases[0].assets[0].clone();
    m.delta = Some(Delta {
        prerequisites: vec![BlobRef {
            sha256: prereq.sha256.clone(),
            size: prereq.size,
        }],
        bases: vec![],
        repairs: vec![],
    });
    let bytes = m.to_canonical_json();
    let back = Manifest::from_json_bytes(&bytes).unwrap();
    assert_eq!(back.to_canonical_json(), bytes);
    assert_eq!(back.python_envs[0].name, "vllm-0.20.1-cu13-amd64");
    assert_eq!(back.channel(), "stable");
    // The wheel, its .metadata, the lock (shared by both envs), 3 v1 blobs.
    assert_eq!(m.blobs().len(), 6);
    assert_eq!(m.carried_blobs().len(), 5);
}

#[test]
fn format_2_inconsistencies_are_refused() {
    let mut m = sample();
    m.python_envs = vec![python_env("amd64"), python_env("amd64")];
    assert!(refused(&m).contains("listed twice"), "{}", refused(&m));

    let mut m = sample();
    let mut env = python_env("amd64");
    env.files[0].filename = "../evil.whl".into();
    m.python_envs = vec![env];
    assert!(refused(&m).contains("python file name"), "{}", refused(&m));

    let mut m = sample();
    let mut env = python_env("amd64");
    env.interpreter = Some(AssetRef {
        repo: "astral-sh/python-build-standalone".into(),
        tag: "20251014".into(),
        name: "cpython.tar.gz".into(),
    });
    m.python_envs = vec![env];
    assert!(refused(&m).contains("no release entry"), "{}", refused(&m));

    let mut m = sample();
    m.delta = Some(Delta {
        prerequisites: vec![BlobRef {
            sha256: "a".repeat(64).parse().unwrap(),
            size: 1,
        }],
        bases: vec![],
        repairs: vec![],
    });
    assert!(
        refused(&m).contains("not a blob any artifact"),
        "{}",
        refused(&m)
    );

    // A repair bundle names blobs only, never something to serve.
    let repair = NeededBlob {
        sha256: "b".repeat(64).parse().unwrap(),
        size: 3,
        uses: vec!["model acme/tiny config.json".into()],
    };
    let mut m = sample();
    m.delta = Some(Delta {
        prerequisites: vec![],
        bases: vec![],
        repairs: vec![repair.clone()],
    });
    assert!(refused(&m).contains("names no releases"), "{}", refused(&m));
    let mut m = Manifest::new(vec!["amd64".into()], 0);
    m.delta = Some(Delta {
        prerequisites: vec![],
        bases: vec![],
        repairs: vec![repair.clone(), repair.clone()],
    });
    assert!(refused(&m).contains("listed twice"), "{}", refused(&m));
    m.delta.as_mut().unwrap().repairs.pop();
    let back = Manifest::from_json_bytes(&m.to_canonical_json()).unwrap();
    assert!(back.is_repair());
    assert_eq!(back.carried_blobs().get(&repair.sha256), Some(&3));

    let mut m = sample();
    m.expires = Some("next tuesday".into());
    assert!(refused(&m).contains("expires"), "{}", refused(&m));
}

#[test]
fn volumes_must_place_every_carried_blob_exactly() {
    let m = sample();
    let blobs = m.blobs();
    let placements: Vec<Placement> = blobs
        .iter()
        .map(|(sha, size)| Placement {
            sha256: sha.clone(),
            size: *size,
            pieces: vec![Piece {
                offset: 0,
                size: *size,
                sha256: sha.clone(),
                volume: 1,
            }],
        })
        .collect();
    let mut ok = m.clone();
    ok.volumes = Some(Volumes {
        count: 1,
        volume_size: 1 << 20,
        chunk_size: 1 << 10,
        placements: placements.clone(),
        parity: None,
    });
    Manifest::from_json_bytes(&ok.to_canonical_json()).unwrap();

    let mut left_out = ok.clone();
    left_out.volumes.as_mut().unwrap().placements.pop();
    assert!(
        refused(&left_out).contains("left out"),
        "{}",
        refused(&left_out)
    );

    let mut bad_volume = ok.clone();
    bad_volume.volumes.as_mut().unwrap().placements[0].pieces[0].volume = 2;
    assert!(refused(&bad_volume).contains("but the set has 1 volume"));

    let mut short = ok;
    short.volumes.as_mut().unwrap().placements[0].pieces[0].size -= 1;
    assert!(refused(&short).contains("add up to"), "{}", refused(&short));
}

#[test]
fn unknown_fields_are_refused() {
    let mut v: serde_json::Value = serde_json::from_slice(&sample().to_canonical_json()).unwrap();
    v["extra"] = 1.into();
    let err = Manifest::from_json_bytes(&serde_json::to_vec(&v).unwrap()).unwrap_err();
    let err = crate::chain(&err);
    assert!(err.to_string().contains("unknown field"), "{err}");
}

#[test]
fn inconsistencies_are_refused() {
    let mut m = sample();
    m.releases[0].assets[1].size = 99; // a.tar.gz
    let mut dup = m.releases[0].assets[1].clone();
    dup.name = "c".into();
    dup.size = 3;
    m.releases[0].assets.push(dup);
    assert!(refused(&m).contains("same sha256"), "{}", refused(&m));

    let mut m = sample();
    m.releases[0].assets[0].publisher_digests.clear();
    assert!(refused(&m).contains("no publisher digest"));

    let mut m = sample();
    m.releases[0].assets[0].publisher_digests[0].value = "f".repeat(64);
    assert!(refused(&m).contains("does not match"));

    let mut m = sample();
    m.repos[0].commit = "main".into();
    assert!(refused(&m).contains("40 lower-case hex"));

    let mut m = sample();
    m.releases[0].engine = LLMGW_ENGINE.into();
    assert!(refused(&m).contains("carries no signature"));

    let mut m = sample();
    let dup = m.releases[0].assets[0].clone();
    m.releases[0].assets.push(dup);
    assert!(refused(&m).contains("listed twice"));
}

#[test]
fn minisign_verified_source_is_kebab_case() {
    let s = serde_json::to_string(&DigestSource::MinisignVerified).unwrap();
    assert_eq!(s, "\"minisign-verified\"");
    assert!(DigestSource::MinisignVerified.is_sha256());
}

#[test]
fn oversize_manifest_is_refused_unread() {
    let big = vec![b' '; (MAX_MANIFEST_BYTES + 1) as usize];
    let err = Manifest::from_json_bytes(&big).unwrap_err();
    assert!(err.to_string().contains("at most"), "{err}");
}

/// Untrusted text quoted back in a refusal (a bad commit, an unknown
/// field's name) is escaped and cut, never printed raw or whole.
#[test]
fn refusals_quote_untrusted_text_escaped_and_cut() {
    let mut m = sample();
    m.repos[0].commit = format!("\u{1b}[2J\u{202e}{}", "x".repeat(100_000));
    let err = refused(&m);
    assert!(err.contains("40 lower-case hex"), "{err}");
    assert!(
        !err.contains('\u{1b}') && !err.contains('\u{202e}'),
        "{err}"
    );
    assert!(err.len() < 4_000, "{} bytes", err.len());

    let mut v: serde_json::Value = serde_json::from_slice(&sample().to_canonical_json()).unwrap();
    v[format!("\u{1b}]0;owned\u{7}{}", "y".repeat(100_000))] = 1.into();
    let err =
        crate::chain(&Manifest::from_json_bytes(&serde_json::to_vec(&v).unwrap()).unwrap_err());
    assert!(err.contains("unknown field"), "{err}");
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err}");
    assert!(err.len() < 4_000, "{} bytes", err.len());
}

/// The typed digests (`Sha256`, `GitOid`) are written as the same lower-case
/// hex strings the manifest always had, so a manifest's bytes — and so the
/// bundle's identity — do not change: read and written again, a format 1
/// and a format 2 manifest are the same bytes.
#[test]
fn typed_digests_keep_the_bytes() {
    let mut v1 = sample();
    v1.format_version = 1;
    let mut v2 = sample();
    v2.channel = Some("stable".into());
    v2.sequence = Some(3);
    v2.repos[0].ref_kind = Some(RefKind::Tag);
    v2.python_envs = vec![python_env("amd64")];
    v2.delta = Some(Delta {
        prerequisites: vec![BlobRef {
            sha256: Sha256::of(b"aaa"),
            size: 3,
        }],
        bases: vec![Sha256::of(b"have")],
        repairs: vec![],
    });
    for (m, text) in [(v1, FORMAT_1_TEXT), (v2, FORMAT_2_TEXT)] {
        let bytes = m.to_canonical_json();
        assert_eq!(String::from_utf8_lossy(&bytes), text);
        let back = Manifest::from_json_bytes(text.as_bytes()).unwrap();
        assert_eq!(back.to_canonical_json(), text.as_bytes());
    }
    // Read exactly as written, as before the digests were typed: an
    // upper-case digest is refused, not quietly lower-cased.
    let sha = Sha256::of(b"aaa");
    let upper = FORMAT_1_TEXT.replacen(sha.as_str(), &sha.to_ascii_uppercase(), 1);
    let err = crate::chain(&Manifest::from_json_bytes(upper.as_bytes()).unwrap_err());
    assert!(err.contains("64 lower-case hex digits"), "{err}");
}

/// A format 1 manifest, byte for byte as llmgw writes it.
const FORMAT_1_TEXT: &str = include_str!("samples/format-1.json");
/// A format 2 manifest, byte for byte as llmgw writes it.
const FORMAT_2_TEXT: &str = include_str!("samples/format-2.json");

/// The digests `HfFile::describing` gives are the ones git and the Hub
/// give (values from `git hash-object` and `sha256sum`).
#[test]
fn a_file_is_described_as_the_hub_lists_it() {
    let plain = HfFile::describing("config.json", b"{}", false);
    assert_eq!(plain.size, 2);
    assert_eq!(
        plain.git_oid.as_str(),
        "9e26dfeeb6e641a33dae4961196235bdb965b21b"
    );
    assert_eq!(plain.publisher_digests[0].source, DigestSource::GitBlobSha1);
    assert_eq!(plain.publisher_digests[0].value, plain.git_oid.as_str());

    let sha = "9a129038d9a00aed0cf6a7ea059ca50a813449061ab87848cf1a13eafdf33b2c";
    let lfs = HfFile::describing("model.gguf", b"weights", true);
    assert_eq!(lfs.sha256.as_str(), sha);
    // An LFS file's oid is its pointer's.
    assert_eq!(
        lfs.git_oid.as_str(),
        "c6a67be4f3ef29ed4a07b4f2446625126a25cfda"
    );
    assert_eq!(lfs.publisher_digests[0].source, DigestSource::HfLfsSha256);
    assert_eq!(lfs.publisher_digests[0].value, sha);
}
