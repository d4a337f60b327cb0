//! Chart.yaml as Helm reads it, and its metadata as `helm push` writes it
//! into the chart's OCI config.
//!
//! Helm (v4's `pkg/chart/v2`) reads Chart.yaml with `sigs.k8s.io/yaml`
//! into its `Metadata` struct — a scalar meant for a string field becomes
//! its text (`appVersion: 1.16` is `"1.16"`; a float through Go's
//! `FormatFloat(v, 'g', -1, 32)`), unknown keys are ignored, a missing
//! `apiVersion` is `v1` — then `Validate` trims each text field
//! (`sanitizeString`: white space to a space, unprintable characters
//! dropped), and `helm push` stores `json.Marshal(meta)`: the struct's
//! fields in order, empty ones left out, map keys sorted, `<`, `>`, `&`,
//! U+2028 and U+2029 escaped.
//!
//! Invariant: [`ChartMeta::config`] is those bytes, so a chart carried from
//! disk has the config, and so the digests, `helm push` gives it; what Helm
//! would refuse (no name, a version that is not semver, a field of the
//! wrong type) is refused here, naming the field. The YAML is read bounded:
//! at most [`MAX_NODES`] nodes once aliases are expanded, nested at most
//! [`MAX_DEPTH`] deep.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;
use yaml_rust2::Yaml;

use super::go_text::{go_float32, go_json, sanitize};
use yaml_rust2::parser::{Event, Parser};

/// Most nodes a Chart.yaml may hold, aliases expanded (a billion laughs
/// stops here).
pub const MAX_NODES: u64 = 100_000;
/// Deepest nesting of a Chart.yaml.
pub const MAX_DEPTH: usize = 64;

/// What a chart's Chart.yaml says, checked as Helm checks it.
#[derive(Debug, Clone)]
pub struct ChartMeta {
    pub name: String,
    pub version: String,
    pub app_version: Option<String>,
    pub description: String,
    pub home: String,
    pub sources: Vec<String>,
    /// `name (email)` of each maintainer, as helm push's `authors`.
    pub authors: String,
    pub annotations: BTreeMap<String, String>,
    /// The config blob: the metadata as `helm push` writes it.
    pub config: Vec<u8>,
}

/// Reads Chart.yaml's text, and requirements.yaml's when the package has
/// one (Helm reads it into the same metadata after Chart.yaml, so its
/// keys, `dependencies` in practice, win); `Err` says what is wrong, for
/// a person.
pub fn read(text: &str, requirements: Option<&str>) -> Result<ChartMeta, String> {
    let mut map = mapping(text)?;
    if let Some(r) = requirements {
        let extra = mapping(r).map_err(|e| format!("requirements.yaml: {e}"))?;
        for (k, v) in extra {
            map.insert(k, v);
        }
    }
    let get = |k: &str| map.get(&Yaml::String(k.into())).filter(|v| !v.is_null());
    // Helm's `Validate` sanitizes some fields only (not version,
    // apiVersion, type or annotations).
    let raw = |k: &str| get(k).map_or(Ok(String::new()), |v| scalar(k, v));
    let text = |k: &str| raw(k).map(|s| sanitize(&s));
    let texts = |k: &str| get(k).map_or(Ok(Vec::new()), |v| list(k, v));
    let mut fields: Vec<(&str, Value)> = Vec::new();
    let mut put = |k: &'static str, v: Value| fields.push((k, v));
    let name = text("name")?;
    let version = raw("version")?;
    let mut api_version = raw("apiVersion")?;
    if api_version.is_empty() {
        api_version = "v1".into();
    }
    let maintainers = maintainers(get("maintainers"))?;
    let annotations = string_map("annotations", get("annotations"))?;
    let dependencies = dependencies(get("dependencies"))?;
    let deprecated = match get("deprecated") {
        None => false,
        Some(Yaml::Boolean(b)) => *b,
        Some(other) => return Err(wrong("deprecated", "true or false", other)),
    };
    let (description, home, app_version) =
        (text("description")?, text("home")?, text("appVersion")?);
    let sources = texts("sources")?;
    put("name", name.clone().into());
    put("home", home.clone().into());
    put("sources", sources.clone().into());
    put("version", version.clone().into());
    put("description", description.clone().into());
    put("keywords", texts("keywords")?.into());
    put("maintainers", Value::Array(maintainers.clone()));
    put("icon", text("icon")?.into());
    put("apiVersion", api_version.into());
    put("condition", text("condition")?.into());
    put("tags", text("tags")?.into());
    put("appVersion", app_version.clone().into());
    put("deprecated", deprecated.into());
    put("annotations", sorted(&annotations));
    put("kubeVersion", text("kubeVersion")?.into());
    put("dependencies", Value::Array(dependencies));
    let kind = raw("type")?;
    put("type", kind.clone().into());
    check_name(&name)?;
    check_version(&version)?;
    if !["", "application", "library"].contains(&kind.as_str()) {
        return Err(format!(
            "type {:?}: expected application or library",
            llmgw_shared::shown(&kind)
        ));
    }
    Ok(ChartMeta {
        name,
        version,
        app_version: (!app_version.is_empty()).then_some(app_version),
        description,
        home,
        sources,
        authors: authors(&maintainers),
        annotations,
        config: go_json(&fields),
    })
}

/// The first document of a YAML text as a mapping (empty when there is
/// none), bounded.
fn mapping(text: &str) -> Result<yaml_rust2::yaml::Hash, String> {
    bound(text)?;
    let docs = yaml_rust2::YamlLoader::load_from_str(text).map_err(|e| format!("not YAML: {e}"))?;
    match docs.into_iter().next() {
        Some(Yaml::Null) | None => Ok(Default::default()),
        Some(Yaml::Hash(h)) => Ok(h),
        Some(_) => Err("it is not a mapping of keys to values".into()),
    }
}

/// Refuses YAML too deep, or too large once aliases are expanded, before
/// it is built into a tree (which expands them).
fn bound(text: &str) -> Result<(), String> {
    let mut parser = Parser::new_from_str(text);
    let mut anchors: HashMap<usize, u64> = HashMap::new();
    // (anchor, nodes so far) of each open collection; the bottom one is
    // the stream.
    let mut open: Vec<(usize, u64)> = vec![(0, 0)];
    loop {
        let (event, _) = parser.next_token().map_err(|e| format!("not YAML: {e}"))?;
        let nodes = match event {
            Event::StreamEnd => return Ok(()),
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if open.len() > MAX_DEPTH {
                    return Err(format!("it nests deeper than {MAX_DEPTH} levels"));
                }
                open.push((anchor, 1));
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (anchor, n) = open.pop().unwrap_or_default();
                if anchor > 0 {
                    anchors.insert(anchor, n);
                }
                n
            }
            Event::Scalar(_, _, anchor, _) => {
                if anchor > 0 {
                    anchors.insert(anchor, 1);
                }
                1
            }
            Event::Alias(id) => anchors.get(&id).copied().unwrap_or(1),
            _ => continue,
        };
        let Some(parent) = open.last_mut() else {
            return Err("it is not well-formed YAML".into());
        };
        parent.1 = parent.1.saturating_add(nodes);
        if open.iter().any(|(_, n)| *n > MAX_NODES) {
            return Err(format!(
                "it holds more than {MAX_NODES} values once its aliases are expanded"
            ));
        }
    }
}

fn wrong(key: &str, expected: &str, got: &Yaml) -> String {
    let kind = match got {
        Yaml::Array(_) => "a list",
        Yaml::Hash(_) => "a mapping",
        Yaml::Boolean(_) => "true or false",
        Yaml::Alias(_) | Yaml::BadValue => "an unresolvable value",
        _ => "a value of another type",
    };
    format!("{key}: expected {expected}, found {kind}")
}

/// A scalar as Helm reads it into a string field.
fn scalar(key: &str, v: &Yaml) -> Result<String, String> {
    Ok(match v {
        Yaml::String(s) => s.clone(),
        Yaml::Integer(i) => i.to_string(),
        Yaml::Real(r) => go_float32(r.parse::<f64>().map_err(|_| wrong(key, "text", v))?),
        Yaml::Boolean(b) => b.to_string(),
        Yaml::Null => String::new(),
        other => return Err(wrong(key, "text", other)),
    })
}

/// A list of scalars, each sanitized.
fn list(key: &str, v: &Yaml) -> Result<Vec<String>, String> {
    let Yaml::Array(items) = v else {
        return Err(wrong(key, "a list", v));
    };
    items
        .iter()
        .map(|i| scalar(key, i).map(|s| sanitize(&s)))
        .collect()
}

/// A mapping of text to text (annotations): keys and values as Helm
/// turns scalars into strings.
fn string_map(key: &str, v: Option<&Yaml>) -> Result<BTreeMap<String, String>, String> {
    let Some(v) = v else {
        return Ok(BTreeMap::new());
    };
    let Yaml::Hash(h) = v else {
        return Err(wrong(key, "a mapping", v));
    };
    h.iter()
        .map(|(k, v)| Ok((scalar(key, k)?, scalar(key, v)?)))
        .collect()
}

fn sorted(m: &BTreeMap<String, String>) -> Value {
    Value::Object(
        m.iter()
            .map(|(k, v)| (k.clone(), v.clone().into()))
            .collect(),
    )
}

/// Each maintainer as Helm's `Maintainer` marshals (`name`, `email`,
/// `url`, empty ones left out).
fn maintainers(v: Option<&Yaml>) -> Result<Vec<Value>, String> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let Yaml::Array(items) = v else {
        return Err(wrong("maintainers", "a list", v));
    };
    let mut out = Vec::new();
    for m in items {
        let Yaml::Hash(h) = m else {
            return Err("maintainers: each must be a mapping (name, email, url)".into());
        };
        let mut o = serde_json::Map::new();
        for k in ["name", "email", "url"] {
            if let Some(v) = h.get(&Yaml::String(k.into())) {
                let s = sanitize(&scalar(&format!("maintainers.{k}"), v)?);
                if !s.is_empty() {
                    o.insert(k.into(), s.into());
                }
            }
        }
        out.push(Value::Object(o));
    }
    Ok(out)
}

/// `name (email), …` as helm push writes `org.opencontainers.image.authors`.
fn authors(maintainers: &[Value]) -> String {
    let one = |m: &Value| {
        let field = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let (name, email) = (field("name"), field("email"));
        if email.is_empty() {
            name
        } else {
            format!("{name} ({email})")
        }
    };
    maintainers.iter().map(one).collect::<Vec<_>>().join(", ")
}

/// Each dependency as Helm's `Dependency` marshals: `name` and
/// `repository` always, the rest when not empty.
fn dependencies(v: Option<&Yaml>) -> Result<Vec<Value>, String> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let Yaml::Array(items) = v else {
        return Err(wrong("dependencies", "a list", v));
    };
    let mut out = Vec::new();
    for d in items {
        let Yaml::Hash(h) = d else {
            return Err(
                "dependencies: each must be a mapping (name, version, repository, …)".into(),
            );
        };
        let get = |k: &str| h.get(&Yaml::String(k.into())).filter(|v| !v.is_null());
        let text = |k: &str| {
            get(k).map_or(Ok(String::new()), |v| {
                scalar(&format!("dependencies.{k}"), v)
            })
        };
        let mut o = serde_json::Map::new();
        o.insert("name".into(), sanitize(&text("name")?).into());
        let version = sanitize(&text("version")?);
        if !version.is_empty() {
            o.insert("version".into(), version.into());
        }
        o.insert("repository".into(), sanitize(&text("repository")?).into());
        let condition = sanitize(&text("condition")?);
        if !condition.is_empty() {
            o.insert("condition".into(), condition.into());
        }
        if let Some(t) = get("tags") {
            let tags = list("dependencies.tags", t)?;
            if !tags.is_empty() {
                o.insert("tags".into(), tags.into());
            }
        }
        match get("enabled") {
            None | Some(Yaml::Boolean(false)) => {}
            Some(Yaml::Boolean(true)) => {
                o.insert("enabled".into(), true.into());
            }
            Some(other) => return Err(wrong("dependencies.enabled", "true or false", other)),
        }
        if let Some(Yaml::Array(iv)) = get("import-values")
            && !iv.is_empty()
        {
            o.insert(
                "import-values".into(),
                Value::Array(iv.iter().map(any).collect()),
            );
        }
        let alias = text("alias")?;
        if !alias.is_empty() {
            if !alias
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            {
                return Err(format!(
                    "dependency {:?} has disallowed characters in the alias",
                    llmgw_shared::shown(&text("name")?)
                ));
            }
            o.insert("alias".into(), alias.into());
        }
        out.push(Value::Object(o));
    }
    Ok(out)
}

/// Any YAML value as JSON (`import-values`): mappings with sorted keys.
fn any(v: &Yaml) -> Value {
    match v {
        Yaml::String(s) => s.clone().into(),
        Yaml::Integer(i) => (*i).into(),
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number),
        Yaml::Boolean(b) => (*b).into(),
        Yaml::Array(a) => Value::Array(a.iter().map(any).collect()),
        Yaml::Hash(h) => {
            let m: BTreeMap<String, Value> = h
                .iter()
                .map(|(k, v)| (scalar("", k).unwrap_or_default(), any(v)))
                .collect();
            Value::Object(m.into_iter().collect())
        }
        _ => Value::Null,
    }
}

/// A chart name Helm accepts that is also an OCI repository path
/// component, so it is served as `charts/<name>`.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("it has no name (chart.metadata.name is required)".into());
    }
    if !llmgw_shared::manifest::is_repository(&format!("charts/{name}")) || name.contains('/') {
        return Err(format!(
            "name {:?}: expected lower-case letters and digits, separated by '.', '_' or '-' \
             (a chart name that can be an OCI repository name)",
            llmgw_shared::shown(name)
        ));
    }
    Ok(())
}

/// A version Helm accepts (Masterminds semver, loose: `v1.2`, `1.2.3-rc.1+b7`)
/// whose tag (`+` as `_`) is an OCI tag.
fn check_version(version: &str) -> Result<(), String> {
    if version.is_empty() {
        return Err("it has no version (chart.metadata.version is required)".into());
    }
    let bad = || {
        format!(
            "version {:?}: expected a semantic version such as 1.2.3 or 1.2.3-rc.1+build.7",
            llmgw_shared::shown(version)
        )
    };
    let (rest, meta) = match version.split_once('+') {
        Some((r, m)) => (r, Some(m)),
        None => (version, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (rest, None),
    };
    let core = core.strip_prefix('v').unwrap_or(core);
    let numbers: Vec<&str> = core.split('.').collect();
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if numbers.len() > 3
        || !numbers
            .iter()
            .all(|n| numeric(n) && n.parse::<u64>().is_ok())
    {
        return Err(bad());
    }
    let ident =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if let Some(p) = pre
        && !p
            .split('.')
            .all(|i| ident(i) && !(numeric(i) && i.len() > 1 && i.starts_with('0')))
    {
        return Err(bad());
    }
    if let Some(m) = meta
        && !m.split('.').all(ident)
    {
        return Err(bad());
    }
    if !llmgw_shared::manifest::is_tag(&version.replace('+', "_")) {
        return Err(format!(
            "version {:?} is longer than an OCI tag may be (128 characters)",
            llmgw_shared::shown(version)
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "helm_meta_tests.rs"]
mod tests;
