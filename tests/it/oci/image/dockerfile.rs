//! Reads what the Dockerfile's last stage (the runtime image) declares:
//! USER, ENTRYPOINT, CMD, EXPOSE, ENV, VOLUME and LABEL, with line
//! continuations joined and quoted values unquoted, so tests/image.rs can
//! hold the built image to it.

use std::collections::BTreeMap;

/// What the runtime stage declares.
#[derive(Debug, Default)]
pub struct Stage {
    pub user: String,
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub expose: Vec<String>,
    pub env: Vec<(String, String)>,
    pub volumes: Vec<String>,
    pub labels: BTreeMap<String, String>,
}

/// The instructions after the last `FROM`, read.
pub fn runtime_stage(text: &str) -> Stage {
    let joined = text.replace("\\\n", " ");
    let lines: Vec<&str> = joined
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let last_from = lines
        .iter()
        .rposition(|l| l.starts_with("FROM "))
        .expect("a FROM in the Dockerfile");
    let mut s = Stage::default();
    for line in &lines[last_from + 1..] {
        let (op, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.trim();
        match op {
            "USER" => s.user = rest.to_string(),
            "ENTRYPOINT" => s.entrypoint = json_list(rest),
            "CMD" => s.cmd = json_list(rest),
            "VOLUME" => s.volumes = json_list(rest),
            "EXPOSE" => s.expose = rest.split_whitespace().map(str::to_string).collect(),
            "ENV" => s.env.extend(pairs(rest)),
            "LABEL" => s.labels.extend(pairs(rest)),
            _ => {}
        }
    }
    s
}

fn json_list(text: &str) -> Vec<String> {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not a JSON list: {text}: {e}"))
}

/// `k=v k2="v 2"` pairs, as LABEL and ENV write them.
fn pairs(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let (key, after) = rest
            .split_once('=')
            .unwrap_or_else(|| panic!("no = in {rest}"));
        let (value, next) = if let Some(quoted) = after.strip_prefix('"') {
            let end = quoted
                .find('"')
                .unwrap_or_else(|| panic!("unclosed quote: {after}"));
            (quoted[..end].to_string(), &quoted[end + 1..])
        } else {
            let end = after.find(char::is_whitespace).unwrap_or(after.len());
            (after[..end].to_string(), &after[end..])
        };
        out.push((key.trim().to_string(), value));
        rest = next.trim();
    }
    out
}
