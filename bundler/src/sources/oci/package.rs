//! A packaged chart on disk (`--chart PATH.tgz`), carried as `helm push`
//! would have pushed it: an OCI manifest whose config is Chart.yaml's
//! metadata as Helm writes it (`application/vnd.cncf.helm.config.v1+json`,
//! see [`super::helm_meta`]), whose one layer is the `.tgz` unchanged
//! (`…helm.chart.content.v1.tar+gzip`), with the `org.opencontainers.image.*`
//! annotations helm push adds. It is served, as a chart from disk has no
//! registry, under the name `charts/<name>` (with no registry: any `ns`
//! finds it), tagged by its version (`+` as `_`), as `oci://MIRROR/charts/<name>`.
//!
//! Invariants:
//! - The bytes carried are the bytes read: the file is read once, bounded
//!   ([`MAX_PACKAGE_BYTES`]), and Chart.yaml is read from those bytes.
//! - Reading it is bounded as Helm bounds it: at most
//!   [`MAX_UNPACKED_BYTES`] once decompressed (a gzip bomb stops there),
//!   Chart.yaml at most [`MAX_CHART_YAML_BYTES`]; paths Helm refuses
//!   (absolute, `..`, Chart.yaml outside the chart's folder) are refused.
//! - The same file and the same `created` time give the same digests:
//!   `created` is `SOURCE_DATE_EPOCH` when given, else the file's mtime.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use llmgw_shared::Sha256;
use llmgw_shared::manifest::{
    HELM_CHART_CONTENT, HELM_CONFIG, HelmChart, OciDescriptor, OciImage, check_tree, parse_manifest,
};
use serde_json::{Value, json};

use super::error::OciError;
use super::helm_meta::{self, ChartMeta};
use crate::cache::Cache;
use crate::error::CreateError;
use crate::plan::Plan;

/// The largest `.tgz` read.
pub const MAX_PACKAGE_BYTES: u64 = 100 << 20;
/// Helm's `MaxDecompressedChartSize`: every entry's bytes, decompressed.
pub const MAX_UNPACKED_BYTES: u64 = 100 << 20;
/// The largest Chart.yaml read (Helm allows 5 MiB for any one file).
pub const MAX_CHART_YAML_BYTES: u64 = 1 << 20;
/// An OCI image manifest: what helm push tags.
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

fn refuse(path: &Path, detail: impl Into<String>) -> OciError {
    OciError::ChartPackage {
        path: path.to_path_buf(),
        detail: detail.into(),
    }
}

/// Plans the chart packaged at `path` (see the module docs): its blobs go
/// into the cache and the plan's stored blobs; `created` is
/// `SOURCE_DATE_EPOCH`, if given.
pub fn plan_package(
    cache: &Cache,
    path: &Path,
    created: Option<u64>,
    plan: &mut Plan,
) -> Result<HelmChart, CreateError> {
    let (bytes, mtime) = read_bounded(path)?;
    let meta = read_package(&bytes).map_err(|d| refuse(path, d))?;
    let created = llmgw_shared::rfc3339_utc(created.unwrap_or(mtime));
    let config = descriptor(&meta.config, HELM_CONFIG);
    let layer = descriptor(&bytes, HELM_CHART_CONTENT);
    let manifest = manifest_bytes(&meta, &config, &layer, &created);
    let top = descriptor(&manifest, OCI_MANIFEST);
    let mut image = OciImage {
        registry: None,
        repository: format!("charts/{}", meta.name),
        tag: Some(meta.version.replace('+', "_")),
        digest: top.sha256.clone(),
        manifests: vec![top.clone()],
        blobs: vec![config, layer.clone()],
        left_out: vec![],
    };
    image.sort();
    let named = parse_manifest(OCI_MANIFEST, &manifest).map_err(|e| OciError::Unreadable {
        image: path.display().to_string(),
        blob: Box::new(top.sha256.clone()),
        source: e,
    })?;
    check_tree(
        &image.repository,
        &image,
        &BTreeMap::from([(top.sha256, named)]),
    )
    .map_err(|e| {
        CreateError::Manifest(llmgw_shared::manifest::ManifestError::Inconsistent(
            llmgw_shared::chain(&*e),
        ))
    })?;
    for b in [&manifest, &meta.config, &bytes] {
        let (sha, at) = cache
            .put_bytes(b)
            .map_err(|e| CreateError::io(cache.root(), e))?;
        if !plan.stored.iter().any(|s| s.sha256 == sha) {
            plan.store(sha, at, b.len() as u64);
        }
    }
    Ok(HelmChart {
        name: meta.name,
        version: meta.version,
        app_version: meta.app_version,
        package: layer.sha256,
        artifact: image,
    })
}

fn descriptor(bytes: &[u8], media_type: &str) -> OciDescriptor {
    OciDescriptor {
        sha256: Sha256::of(bytes),
        size: bytes.len() as u64,
        media_type: media_type.into(),
        platform: None,
    }
}

/// The file's bytes (at most [`MAX_PACKAGE_BYTES`]) and its mtime.
fn read_bounded(path: &Path) -> Result<(Vec<u8>, u64), OciError> {
    let io = |source| OciError::ChartPackageRead {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(refuse(
            path,
            "it is not a file: give a packaged chart (helm package makes NAME-VERSION.tgz)",
        ));
    }
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let mut bytes = Vec::new();
    file.take(MAX_PACKAGE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_PACKAGE_BYTES {
        return Err(refuse(
            path,
            format!("it is larger than {MAX_PACKAGE_BYTES} bytes, more than Helm unpacks"),
        ));
    }
    Ok((bytes, mtime))
}

/// A packaged chart's metadata, read from its bytes as Helm reads them:
/// every entry checked ([`chart_yaml`]: bounded, no path outside the
/// chart's folder), then Chart.yaml checked as Helm checks it. The one
/// check a chart passes, whether given as a file or pulled from a
/// registry; `Err` says what is wrong, for a person.
pub fn read_package(bytes: &[u8]) -> Result<ChartMeta, String> {
    let text = chart_yaml(bytes)?;
    helm_meta::read(&text.chart, text.requirements.as_deref())
        .map_err(|d| format!("Chart.yaml: {d}"))
}

/// The files of a chart its metadata comes from.
#[derive(Debug, PartialEq, Eq)]
pub struct ChartText {
    /// `<folder>/Chart.yaml`.
    pub chart: String,
    /// `<folder>/requirements.yaml`, which Helm reads into the metadata
    /// after Chart.yaml (a v1 chart's dependencies).
    pub requirements: Option<String>,
}

/// Chart.yaml's (and requirements.yaml's) text from a packaged chart's
/// bytes, read as Helm's `LoadArchiveFiles` reads them (the entries
/// `<folder>/Chart.yaml`, `<folder>/requirements.yaml`, a UTF-8 BOM
/// dropped), every entry counted against [`MAX_UNPACKED_BYTES`].
pub fn chart_yaml(bytes: &[u8]) -> Result<ChartText, String> {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return Err(
            "it is not gzip-compressed: expected a packaged chart (.tgz) as `helm \
                    package` makes it"
                .into(),
        );
    }
    let gz = flate2::read::MultiGzDecoder::new(bytes);
    // Tar headers count too, so a bomb of empty entries stops as well.
    let mut archive = tar::Archive::new(gz.take(MAX_UNPACKED_BYTES + (1 << 20)));
    let entries = archive
        .entries()
        .map_err(|e| format!("it is not a gzip'd tar ({e})"))?;
    let mut remaining = MAX_UNPACKED_BYTES;
    let mut found: BTreeMap<String, String> = BTreeMap::new();
    let too_big = || format!("it unpacks to more than {MAX_UNPACKED_BYTES} bytes (Helm's limit)");
    for entry in entries {
        let mut entry = entry.map_err(|e| format!("it is not a readable gzip'd tar ({e})"))?;
        let kind = entry.header().entry_type();
        if kind.is_dir() || kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
            continue;
        }
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let base = base_path(&name)?;
        let is_chart_yaml = base == "Chart.yaml" || base == "requirements.yaml";
        let size = entry
            .header()
            .size()
            .map_err(|e| format!("entry {name:?}: {e}"))?;
        if size > remaining {
            return Err(too_big());
        }
        if is_chart_yaml && size > MAX_CHART_YAML_BYTES {
            return Err(format!(
                "its {base} is {size} bytes; at most {MAX_CHART_YAML_BYTES} are read"
            ));
        }
        let mut data = Vec::new();
        let read = if is_chart_yaml {
            (&mut entry).take(size).read_to_end(&mut data)
        } else {
            std::io::copy(&mut (&mut entry).take(size), &mut std::io::sink()).map(|n| n as usize)
        }
        .map_err(|e| {
            format!(
                "entry {:?} cannot be read ({e})",
                llmgw_shared::shown(&name)
            )
        })?;
        remaining -= read as u64;
        if (read as u64) < size || remaining == 0 {
            return Err(too_big());
        }
        if is_chart_yaml {
            if found.contains_key(&base) {
                return Err(format!("it holds two {base} files at its top"));
            }
            let data = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&data);
            let text = String::from_utf8(data.to_vec())
                .map_err(|_| format!("its {base} is not UTF-8 text"))?;
            found.insert(base, text);
        }
    }
    let Some(chart) = found.remove("Chart.yaml") else {
        return Err(
            "it holds no Chart.yaml in its top folder (<name>/Chart.yaml): not a packaged chart"
                .into(),
        );
    };
    Ok(ChartText {
        chart,
        requirements: found.remove("requirements.yaml"),
    })
}

/// An entry's path inside the chart's folder, as Helm cleans it; refuses
/// what Helm refuses.
fn base_path(name: &str) -> Result<String, String> {
    let delimiter = if name.contains('\\') { '\\' } else { '/' };
    let parts: Vec<&str> = name.split(delimiter).collect();
    if parts[0] == "Chart.yaml" {
        return Err("its Chart.yaml is not inside the chart's folder (<name>/Chart.yaml)".into());
    }
    let rest = parts[1..].join("/");
    let shown = || llmgw_shared::shown(name).to_string();
    if rest.starts_with('/') {
        return Err(format!("entry {:?} is an absolute path", shown()));
    }
    let mut clean: Vec<&str> = Vec::new();
    for p in rest.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                if clean.pop().is_none() {
                    return Err(format!("entry {:?} reaches outside the chart", shown()));
                }
            }
            p => clean.push(p),
        }
    }
    if clean.is_empty() {
        return Err(format!(
            "entry {:?} lies outside the chart's folder",
            shown()
        ));
    }
    Ok(clean.join("/"))
}

/// The manifest as helm push writes it (Go's `json.Marshal` of
/// `ocispec.Manifest`: no `mediaType` field, annotations sorted).
fn manifest_bytes(
    meta: &ChartMeta,
    config: &OciDescriptor,
    layer: &OciDescriptor,
    created: &str,
) -> Vec<u8> {
    let d = |d: &OciDescriptor| json!({"mediaType": d.media_type, "digest": format!("sha256:{}", d.sha256), "size": d.size});
    let m = json!({
        "schemaVersion": 2,
        "config": d(config),
        "layers": [d(layer)],
        "annotations": annotations(meta, created),
    });
    super::go_text::go_escape(&m.to_string()).into_bytes()
}

/// helm push's `generateOCIAnnotations`: description, title, version,
/// url, created, source, authors (each when not blank), then the chart's
/// own annotations but for title and version.
fn annotations(meta: &ChartMeta, created: &str) -> Value {
    const OCI: &str = "org.opencontainers.image";
    let mut a: BTreeMap<String, String> = BTreeMap::new();
    let mut add = |k: &str, v: &str| {
        if !v.trim().is_empty() {
            a.insert(format!("{OCI}.{k}"), v.to_string());
        }
    };
    add("description", &meta.description);
    add("title", &meta.name);
    add("version", &meta.version);
    add("url", &meta.home);
    add("created", created);
    if let Some(s) = meta.sources.first() {
        add("source", s);
    }
    add("authors", &meta.authors);
    for (k, v) in &meta.annotations {
        if k != &format!("{OCI}.version") && k != &format!("{OCI}.title") {
            a.insert(k.clone(), v.clone());
        }
    }
    Value::Object(a.into_iter().map(|(k, v)| (k, v.into())).collect())
}

#[cfg(test)]
#[path = "package_tests.rs"]
mod tests;
