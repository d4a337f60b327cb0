//! `bundle create --chart PATH.tgz` (#30): a chart packaged by Helm's own
//! SDK (`helm_python.package`), carried from disk exactly as `helm push`
//! makes it — the same manifest, config and layer bytes as Helm's push of
//! the same file to Debian's docker-registry, given the same `created`
//! time — then imported, pulled from the mirror by Helm's registry client
//! (`oci://MIRROR/charts/<name>`) and read from the classic index; and bad
//! files refused, each naming the file and what is wrong.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use llmgw_fixture::registry::Distribution;
use llmgw_shared::Sha256;

use super::bundle_kit::{Server, import_bundle, llmgw, stderr, stdout};
use super::clients::{http, venv_python};
use super::kit::tar_gz;

/// A chart with most of Chart.yaml's fields, and text Helm escapes or
/// sanitizes (`&`, `<`, a tab, a float appVersion).
const CHART_YAML: &str = "apiVersion: v2\nname: site\nversion: 0.3.0+build.7\n\
appVersion: 1.16\ndescription: \"The site's <own> chart & more\\tthan that\"\n\
type: application\nhome: https://example.org/site\nsources:\n  - https://git.example.org/site\n\
keywords: [llm, mirror]\nmaintainers:\n  - name: Ops Team\n    email: ops@example.org\n  - name: Ann\n\
icon: https://example.org/icon.png\nkubeVersion: \">=1.28.0-0\"\n\
annotations:\n  example.org/tier: \"1\"\n  org.opencontainers.image.title: ignored\n";

/// Runs a Python snippet with Helm's SDK; its stdout.
fn helm(dir: &Path, script: &str) -> String {
    let home = dir.join("helm-home");
    let o = Command::new(venv_python())
        .args(["-c", script])
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .output()
        .unwrap();
    assert!(o.status.success(), "helm: {}{}", stdout(&o), stderr(&o));
    stdout(&o).trim().to_string()
}

/// `helm package` of a chart folder made here: the `.tgz`'s path.
fn packaged(dir: &Path) -> PathBuf {
    let src = dir.join("src/site");
    std::fs::create_dir_all(src.join("templates")).unwrap();
    std::fs::write(src.join("Chart.yaml"), CHART_YAML).unwrap();
    std::fs::write(src.join("values.yaml"), "k: v\n").unwrap();
    std::fs::write(
        src.join("templates/configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
    )
    .unwrap();
    let out = dir.join("pkg");
    std::fs::create_dir_all(&out).unwrap();
    let script = format!(
        "from helm_python import chart\nprint(chart.package({:?}, destination={:?}))",
        src.to_str().unwrap(),
        out.to_str().unwrap()
    );
    PathBuf::from(helm(dir, &script))
}

fn create(dir: &Path, chart: &str, out: &Path, epoch: Option<&str>) -> Output {
    let mut c = llmgw();
    c.args(["bundle", "create", "--arch", "amd64", "--cache"])
        .arg(dir.join("cache"))
        .args(["--chart", chart, "--out"])
        .arg(out)
        .env("HOME", dir)
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("SOURCE_DATE_EPOCH");
    if let Some(e) = epoch {
        c.env("SOURCE_DATE_EPOCH", e);
    }
    c.output().unwrap()
}

fn json(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes).unwrap()
}

#[test]
fn a_packaged_chart_is_carried_as_helm_push_makes_it_and_pulled_by_helm() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let tgz = packaged(dir);
    let tgz_bytes = std::fs::read(&tgz).unwrap();

    // Helm's own push of the same file, to the real registry.
    let reg = Distribution::start().unwrap();
    helm(
        dir,
        &format!(
            "from helm_python import registry\nregistry.push({:?}, \"oci://{}/charts\", plain_http=True)",
            tgz.to_str().unwrap(),
            reg.host
        ),
    );
    let helm_manifest = reg.inspect_raw("charts/site", "0.3.0_build.7").unwrap();
    let hm = json(&helm_manifest);
    let helm_config = http(
        &format!("http://{}", reg.host),
        "GET",
        &format!(
            "/v2/charts/site/blobs/{}",
            hm["config"]["digest"].as_str().unwrap()
        ),
        &[],
    )
    .body;
    let created = hm["annotations"]["org.opencontainers.image.created"]
        .as_str()
        .unwrap();
    let epoch = String::from_utf8(
        Command::new("date")
            .args(["-u", "-d", created, "+%s"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();

    // Ours, from disk, at Helm's time: byte for byte what Helm pushed.
    let out = dir.join("bundle");
    let o = create(dir, tgz.to_str().unwrap(), &out, Some(epoch.trim()));
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let sha = stdout(&o).trim().to_string();
    let m = json(&std::fs::read(out.join("manifest.json")).unwrap());
    let chart = &m["charts"][0];
    assert_eq!(chart["name"], "site");
    assert_eq!(chart["version"], "0.3.0+build.7");
    assert_eq!(chart["app_version"], "1.16");
    assert_eq!(chart["artifact"]["repository"], "charts/site");
    assert_eq!(chart["artifact"]["tag"], "0.3.0_build.7");
    let blob = |sha: &str| std::fs::read(out.join("blobs/sha256").join(sha)).unwrap();
    let ours = blob(chart["artifact"]["digest"].as_str().unwrap());
    assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&helm_manifest),
        "the manifest helm push made"
    );
    let config = json(&ours)["config"]["digest"].as_str().unwrap()[7..].to_string();
    assert_eq!(
        String::from_utf8_lossy(&blob(&config)),
        String::from_utf8_lossy(&helm_config),
        "the config helm push made"
    );
    assert_eq!(blob(chart["package"].as_str().unwrap()), tgz_bytes);

    // Two creates without SOURCE_DATE_EPOCH agree: `created` is the file's mtime.
    let again = dir.join("again");
    let o = create(dir, tgz.to_str().unwrap(), &again, None);
    assert!(o.status.success(), "{}", stderr(&o));
    let again_m = json(&std::fs::read(again.join("manifest.json")).unwrap());
    let third = dir.join("third");
    let o = create(dir, tgz.to_str().unwrap(), &third, None);
    assert!(o.status.success(), "{}", stderr(&o));
    let third_m = json(&std::fs::read(third.join("manifest.json")).unwrap());
    assert_eq!(
        again_m["charts"][0]["artifact"]["digest"],
        third_m["charts"][0]["artifact"]["digest"]
    );

    // Imported and served: Helm pulls it over OCI and from the classic index.
    let store = dir.join("store");
    let o = import_bundle(&out, &sha, &store, &[]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let server = Server::start(&store);
    server.wait_for("/readyz", 200);
    let host = server.url.trim_start_matches("http://");
    let (oci, classic) = (dir.join("pulled-oci"), dir.join("pulled-classic"));
    for d in [&oci, &classic] {
        std::fs::create_dir_all(d).unwrap();
    }
    let said = helm(
        dir,
        &format!(
            r#"
import json
from helm_python import registry
registry.pull("oci://{host}/charts/site", version="0.3.0+build.7", plain_http=True, destination={oci:?})
index = registry.repo_index("{url}/charts")
registry.pull("site", repo_url="{url}/charts", version="0.3.0+build.7", destination={classic:?})
print(json.dumps(index))
"#,
            url = server.url,
            oci = oci.to_str().unwrap(),
            classic = classic.to_str().unwrap(),
        ),
    );
    for d in [&oci, &classic] {
        let got = std::fs::read(d.join("site-0.3.0+build.7.tgz")).unwrap();
        assert_eq!(got, tgz_bytes, "{}", d.display());
    }
    let index = json(said.as_bytes());
    let entry = &index["entries"]["site"][0];
    assert_eq!(entry["digest"], Sha256::of(&tgz_bytes).to_string());
    assert_eq!(entry["appVersion"], "1.16");
    assert_eq!(
        entry["description"],
        "The site's <own> chart & more than that"
    );
}

#[test]
fn bad_chart_files_are_refused_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let (_, no_chart) = tar_gz(&[("site/values.yaml", b"k: v\n")]);
    let big = vec![b'#'; (1 << 20) + 1];
    let (_, too_big) = tar_gz(&[("site/Chart.yaml", &big)]);
    let (_, bad_version) = tar_gz(&[(
        "site/Chart.yaml",
        b"apiVersion: v2\nname: site\nversion: latest\n",
    )]);
    let (_, bad_name) = tar_gz(&[(
        "site/Chart.yaml",
        b"apiVersion: v2\nname: Site_Chart!\nversion: 1.0.0\n",
    )]);
    for (file, says) in [
        (write("values.yaml", b"k: v\n"), "not gzip-compressed"),
        (write("no-chart.tgz", &no_chart), "no Chart.yaml"),
        (write("too-big.tgz", &too_big), "at most 1048576 are read"),
        (
            write("bad-version.tgz", &bad_version),
            "version \"latest\": expected a semantic version",
        ),
        (write("bad-name.tgz", &bad_name), "name \"Site_Chart!\""),
        (dir.join("missing.tgz"), "No such file"),
    ] {
        let out = dir.join("never");
        let o = create(dir, file.to_str().unwrap(), &out, None);
        assert_eq!(
            o.status.code(),
            Some(1),
            "{}: {}",
            file.display(),
            stderr(&o)
        );
        let err = stderr(&o);
        assert!(
            err.contains(&format!("chart {}", file.display())) && err.contains(says),
            "{says}: {err}"
        );
        assert!(!out.exists(), "{}", file.display());
    }
}
