//! Tests of a packaged chart read from disk: Chart.yaml found as Helm
//! finds it, and every bad input refused naming what is wrong.

use std::io::Write;

use super::*;

/// A `.tgz` of these entries (name, bytes), as `helm package` writes one.
fn tgz(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, data) in entries {
        // The name written raw: the tar crate refuses `..`, which a
        // hostile package may hold.
        let mut h = tar::Header::new_gnu();
        h.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name.as_bytes());
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append(&h, *data).unwrap();
    }
    gz(&b.into_inner().unwrap())
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

const CHART: &[u8] = b"\xEF\xBB\xBFapiVersion: v2\nname: acme\nversion: 0.1.0\n";

#[test]
fn chart_yaml_is_the_one_in_the_chart_s_folder() {
    let t = tgz(&[
        ("acme/values.yaml", b"k: v\n"),
        ("acme/charts/sub/Chart.yaml", b"name: sub\nversion: 9.9.9\n"),
        ("acme/./Chart.yaml", CHART),
        ("acme/requirements.yaml", b"dependencies: []\n"),
    ]);
    assert_eq!(
        chart_yaml(&t).unwrap(),
        ChartText {
            chart: "apiVersion: v2\nname: acme\nversion: 0.1.0\n".into(),
            requirements: Some("dependencies: []\n".into()),
        }
    );
}

#[test]
fn bad_packages_are_refused_saying_why() {
    let big = vec![b'#'; (MAX_CHART_YAML_BYTES + 1) as usize];
    for (bytes, says) in [
        (b"apiVersion: v2\n".to_vec(), "not gzip-compressed"),
        (
            gz(b"not a tar at all, just some text that is long enough"),
            "gzip'd tar",
        ),
        (tgz(&[("acme/values.yaml", b"k: v\n")]), "no Chart.yaml"),
        (
            tgz(&[("Chart.yaml", CHART)]),
            "not inside the chart's folder",
        ),
        (
            tgz(&[("acme/Chart.yaml", &big)]),
            "at most 1048576 are read",
        ),
        (
            tgz(&[("acme/../../etc/Chart.yaml", CHART)]),
            "reaches outside",
        ),
        (
            tgz(&[("acme/Chart.yaml", CHART), ("other/Chart.yaml", CHART)]),
            "two Chart.yaml",
        ),
    ] {
        let e = chart_yaml(&bytes).unwrap_err();
        assert!(e.contains(says), "{says}: {e}");
    }
}

#[test]
fn a_gzip_bomb_stops_at_the_bound() {
    // 101 MiB of zeros in one entry compresses to about 100 KiB.
    let zeros = vec![0u8; (MAX_UNPACKED_BYTES + (1 << 20)) as usize];
    let t = tgz(&[("acme/Chart.yaml", CHART), ("acme/big", &zeros)]);
    assert!(t.len() < 1 << 20, "{}", t.len());
    let e = chart_yaml(&t).unwrap_err();
    assert!(e.contains("unpacks to more than"), "{e}");
}

#[test]
fn the_artifact_is_helm_push_s_and_the_same_file_gives_the_same_digests() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(&dir.path().join("cache")).unwrap();
    let path = dir.path().join("acme-0.1.0.tgz");
    let bytes = tgz(&[(
        "acme/Chart.yaml",
        b"apiVersion: v2\nname: acme\nversion: 0.1.0+b.7\ndescription: A & B\nhome: https://h.example\n\
          sources: [https://s.example, https://t.example]\n\
          annotations: {org.opencontainers.image.title: x, k: v}\n",
    )]);
    std::fs::write(&path, &bytes).unwrap();
    let mut plan = Plan::default();
    let c = plan_package(&cache, &path, Some(0), &mut plan).unwrap();
    assert_eq!((c.name.as_str(), c.version.as_str()), ("acme", "0.1.0+b.7"));
    assert_eq!(c.artifact.repository, "charts/acme");
    assert_eq!(c.artifact.tag.as_deref(), Some("0.1.0_b.7"));
    assert_eq!(c.package, Sha256::of(&bytes));
    assert_eq!(plan.stored.len(), 3);
    let manifest = std::fs::read(cache.blob_path(c.artifact.digest.as_str())).unwrap();
    let config_json = br#"{"name":"acme","home":"https://h.example","sources":["https://s.example","https://t.example"],"version":"0.1.0+b.7","description":"A \u0026 B","apiVersion":"v2","annotations":{"k":"v","org.opencontainers.image.title":"x"}}"#;
    let config = Sha256::of(config_json);
    assert_eq!(
        String::from_utf8(manifest).unwrap(),
        format!(
            r#"{{"schemaVersion":2,"config":{{"mediaType":"application/vnd.cncf.helm.config.v1+json","digest":"sha256:{config}","size":{}}},"layers":[{{"mediaType":"application/vnd.cncf.helm.chart.content.v1.tar+gzip","digest":"sha256:{}","size":{}}}],"annotations":{{"k":"v","org.opencontainers.image.created":"1970-01-01T00:00:00Z","org.opencontainers.image.description":"A \u0026 B","org.opencontainers.image.source":"https://s.example","org.opencontainers.image.title":"acme","org.opencontainers.image.url":"https://h.example","org.opencontainers.image.version":"0.1.0+b.7"}}}}"#,
            config_json.len(),
            c.package,
            bytes.len()
        )
    );
    let again = plan_package(&cache, &path, Some(0), &mut Plan::default()).unwrap();
    assert_eq!(again.artifact.digest, c.artifact.digest);
    let e = plan_package(&cache, &dir.path().join("none.tgz"), None, &mut plan).unwrap_err();
    assert!(llmgw_shared::chain(&e).contains("none.tgz"), "{e}");
}
