//! What one miss of a want-list asks for, read from the request path the
//! mirror answered 404 on — the path shapes the mirror serves (the Hub's
//! `resolve` and API paths, GitHub's release downloads and API, the
//! environments' simple indexes).
//!
//! Invariant: pure and total. Every miss becomes either a [`Want`] whose
//! every name passed `llmgw_shared`'s name checks, or the sentence saying
//! why it cannot be planned; nothing here touches the network.

use llmgw_shared::manifest::RepoKind;
use llmgw_shared::{check_file_name, check_ref_name, check_relative_path, check_repo_id};
use percent_encoding::percent_decode_str;

/// One thing a node asked for that a bundle can carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Want {
    /// One file of a Hub repository at a revision (`/…/resolve/REV/PATH`).
    HubFile {
        kind: RepoKind,
        id: String,
        revision: String,
        path: String,
    },
    /// A whole Hub repository at a revision: the node asked for its
    /// listing (`snapshot_download` asks `/api/models/ID/revision/REV`
    /// first), so every file of it is what it will fetch next.
    HubRepo {
        kind: RepoKind,
        id: String,
        revision: String,
    },
    /// One asset of a GitHub release (`/OWNER/REPO/releases/download/TAG/NAME`).
    ReleaseAsset {
        repo: String,
        tag: String,
        asset: String,
    },
    /// A GitHub release by tag (`/api/v3/repos/OWNER/REPO/releases/tags/TAG`):
    /// the engine's builds at that version for the run's architectures.
    Release { repo: String, tag: String },
    /// A GGUF of a Hub model by quantization tag, as llama.cpp's `-hf
    /// OWNER/NAME:TAG` asks the mirror (`/v2/OWNER/NAME/manifests/TAG`,
    /// route `hub_manifests`): the files at `main` whose name holds the tag
    /// as a whole word, any case (the mirror's own choice, `has_quant`);
    /// `latest` is llama.cpp's default, `Q4_K_M`.
    HubQuant { id: String, tag: String },
    /// A project of a served environment (`/pypi/ENV/simple/PROJECT/`):
    /// added to that environment's requirements and resolved again.
    PythonProject { env: String, project: String },
    /// An image by tag or digest, as containerd asked for it through the
    /// mirror (`/v2/NAME/manifests/REF?ns=REGISTRY`): `REGISTRY/NAME:TAG`
    /// or `REGISTRY/NAME@sha256:…`, checked as a reference when planned.
    Image { reference: String },
    /// A chart by version, from the registry the operator named in the
    /// want-list's `source` (`oci://REGISTRY/REPOSITORY:VERSION`), checked
    /// as `--chart` is when planned.
    Chart { reference: String },
    /// A kernel's build for a node none of the folders carried loads on
    /// (the mirror's `hub_kernel_build` miss, `…/tree/REV/build?for=NODE`):
    /// the folders that node loads.
    KernelBuild {
        id: String,
        revision: String,
        node: llmgw_shared::kernels::Target,
    },
}

/// What the miss at `path` (answered 404 on `route`) asks for, or why it
/// cannot be planned.
pub fn want_of(route: &str, path: &str) -> Result<Want, String> {
    // The queries a miss keeps: containerd's registry of an image, and
    // the node a kernel's listing had no build for.
    if let Some((listing, node)) = path.split_once("?for=") {
        return kernel_build(route, listing, node);
    }
    let (path, ns) = match path.split_once("?ns=") {
        Some((p, ns)) => (p, Some(ns)),
        None => (path, None),
    };
    let raw: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let segs: Vec<String> = raw
        .iter()
        .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    match s.as_slice() {
        ["api", "v3", "repos", o, r, rest @ ..] | ["repos", o, r, rest @ ..] => {
            github_api(o, r, rest)
        }
        ["api", plural, o, n, rest @ ..] => hub_api(plural, o, n, rest),
        ["datasets", o, n, "resolve", rev, path @ ..] => {
            hub_file(RepoKind::Dataset, o, n, rev, path)
        }
        ["kernels", o, n, "resolve", rev, path @ ..] => hub_file(RepoKind::Kernel, o, n, rev, path),
        ["spaces", ..] => {
            Err("a Space is not carried in bundles (only models, datasets and kernels)".into())
        }
        [o, n, "resolve", rev, path @ ..] => hub_file(RepoKind::Model, o, n, rev, path),
        [_, _, "releases", "latest", ..] => Err(
            "`releases/latest` names no version: ask for the release with --engine NAME=VERSION"
                .into(),
        ),
        [o, r, "releases", "download", rest @ ..] if rest.len() >= 2 => {
            let (asset, tag) = rest.split_last().unwrap_or((&"", &[]));
            release_asset(o, r, &tag.join("/"), asset)
        }
        ["pypi", env, "simple"] | ["pypi", env, "simple", ""] => Err(format!(
            "the mirror holds no environment {}: carry it with --python-env NAME=REQ,… (a \
             site's) or --engine (an engine's)",
            llmgw_shared::shown(env)
        )),
        ["pypi", env, "simple", project] | ["pypi", env, "simple", project, ""] => {
            python_project(env, project)
        }
        ["pypi", ..] => Err(
            "a file or lock of an environment its index does not list: carry the environment \
             again (--python-env or --engine) rather than one file"
                .into(),
        ),
        ["extras", ..] => Err(
            "a runtime extra is carried with the engine that fetches it: --engine NAME=VERSION \
             of a Python engine (without --no-extras)"
                .into(),
        ),
        ["uv", ..] => Err(
            "uv's interpreter list: carry uv with --engine uv=VERSION and the interpreters \
             with an environment"
                .into(),
        ),
        ["v2", o, n, "manifests", tag] if route == "hub_manifests" => hub_quant(o, n, tag),
        ["v2", ..] if route == "hub_manifests" => Err(
            "llama.cpp's -hf asks for a quantization by tag: carry the model with --model \
             OWNER/NAME:*TAG*.gguf"
                .into(),
        ),
        ["v2", name @ .., "manifests", reference] if !name.is_empty() => image(name, reference, ns),
        ["v2", ..] => Err(
            "an image's blob, tag list or referrers: its manifest's miss (a pull asks for it \
             first) carries the image"
                .into(),
        ),
        ["charts", ..] => Err(
            "a chart of the classic repository: carry it with --chart oci://REGISTRY/REPO:VERSION"
                .into(),
        ),
        _ => Err(format!(
            "no route of bundle create plans from a {} path of this shape",
            llmgw_shared::shown(route)
        )),
    }
}

fn hub_api(plural: &str, o: &str, n: &str, rest: &[&str]) -> Result<Want, String> {
    let kind = match plural {
        "models" => RepoKind::Model,
        "datasets" => RepoKind::Dataset,
        "kernels" => RepoKind::Kernel,
        other => {
            return Err(format!(
                "the Hub's {other} are not carried in bundles (only models, datasets and \
                 kernels)"
            ));
        }
    };
    let revision = match rest {
        [] | ["refs"] => "main".to_string(),
        ["revision", rev @ ..] if !rev.is_empty() => rev.join("/"),
        ["tree" | "paths-info", rev, ..] => rev.to_string(),
        _ => return Err("not a Hub API path a node asks for a repository with".into()),
    };
    let id = repo_id(o, n)?;
    check_ref_name("revision", &revision).map_err(|e| e.to_string())?;
    Ok(Want::HubRepo { kind, id, revision })
}

/// `/api/kernels/O/N/tree/REV/build` and the node it listed for.
fn kernel_build(route: &str, listing: &str, node: &str) -> Result<Want, String> {
    let segs: Vec<&str> = listing.trim_start_matches('/').split('/').collect();
    let (["api", "kernels", o, n, "tree", rev, "build"], "hub_kernel_build") =
        (segs.as_slice(), route)
    else {
        return Err("not a kernel's build listing the mirror records a node's miss of".into());
    };
    let Some(node) = llmgw_shared::kernels::Target::parse_short(node) else {
        return Err(format!("{} names no node", llmgw_shared::shown(node)));
    };
    let id = repo_id(o, n)?;
    let revision = percent_decode_str(rev).decode_utf8_lossy().into_owned();
    check_ref_name("revision", &revision).map_err(|e| e.to_string())?;
    Ok(Want::KernelBuild { id, revision, node })
}

fn hub_file(kind: RepoKind, o: &str, n: &str, rev: &str, path: &[&str]) -> Result<Want, String> {
    let id = repo_id(o, n)?;
    check_ref_name("revision", rev).map_err(|e| e.to_string())?;
    let path = path.join("/");
    check_relative_path("file path", &path).map_err(|e| e.to_string())?;
    Ok(Want::HubFile {
        kind,
        id,
        revision: rev.to_string(),
        path,
    })
}

fn hub_quant(o: &str, n: &str, tag: &str) -> Result<Want, String> {
    let id = repo_id(o, n)?;
    if tag.is_empty()
        || tag.len() > 64
        || !tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    {
        return Err(format!(
            "{} is not a quantization tag (letters, digits, `_`, `-`, `.`)",
            llmgw_shared::shown(tag)
        ));
    }
    let tag = if tag.eq_ignore_ascii_case("latest") {
        "Q4_K_M".to_string()
    } else {
        tag.to_string()
    };
    Ok(Want::HubQuant { id, tag })
}

/// The globs of the GGUF files whose name holds `tag` as a whole word, in
/// any case: `tiny-Q4_K_M.gguf` and `Q4_K_M/x-Q4_K_M-00001-of-00002.gguf`
/// for `q4_k_m`, not `tiny-Q4_K_M.gguf` for `Q4_K`. `tag` holds only
/// letters, digits, `_`, `-` and `.` ([`Want::HubQuant`]).
pub fn quant_globs(tag: &str) -> Vec<String> {
    let t: String = tag
        .chars()
        .map(|c| {
            if c.is_ascii_alphabetic() {
                format!("[{}{}]", c.to_ascii_lowercase(), c.to_ascii_uppercase())
            } else if c == '.' || c == '-' {
                format!("[{c}]")
            } else {
                c.to_string()
            }
        })
        .collect();
    let not_word = "[!A-Za-z0-9_]";
    let ext = "[.][gG][gG][uU][fF]";
    vec![
        format!("{t}{ext}"),
        format!("{t}{not_word}*{ext}"),
        format!("*{not_word}{t}{ext}"),
        format!("*{not_word}{t}{not_word}*{ext}"),
    ]
}

/// Whether `path` is a file [`quant_globs`] of `tag` takes.
pub fn holds_quant(tag: &str, path: &str) -> bool {
    let mut b = globset::GlobSetBuilder::new();
    for g in quant_globs(tag) {
        if let Ok(g) = globset::GlobBuilder::new(&g)
            .literal_separator(false)
            .build()
        {
            b.add(g);
        }
    }
    b.build().is_ok_and(|set| set.is_match(path))
}

fn github_api(o: &str, r: &str, rest: &[&str]) -> Result<Want, String> {
    match rest {
        ["releases", "tags", tag @ ..] if !tag.is_empty() => {
            let repo = repo_id(o, r)?;
            let tag = tag.join("/");
            check_ref_name("release tag", &tag).map_err(|e| e.to_string())?;
            Ok(Want::Release { repo, tag })
        }
        _ => Err(
            "a release listing, `latest` or an asset by number names no version: ask for the \
             release with --engine NAME=VERSION"
                .into(),
        ),
    }
}

fn release_asset(o: &str, r: &str, tag: &str, asset: &str) -> Result<Want, String> {
    let repo = repo_id(o, r)?;
    check_ref_name("release tag", tag).map_err(|e| e.to_string())?;
    check_file_name("asset name", asset).map_err(|e| e.to_string())?;
    Ok(Want::ReleaseAsset {
        repo,
        tag: tag.to_string(),
        asset: asset.to_string(),
    })
}

fn python_project(env: &str, project: &str) -> Result<Want, String> {
    let name_ok = |s: &str| {
        !s.is_empty()
            && s.len() <= 128
            && s.starts_with(|c: char| c.is_ascii_alphanumeric())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    if !name_ok(env) {
        return Err("not an environment name".into());
    }
    if !name_ok(project) {
        return Err("not a Python project name".into());
    }
    Ok(Want::PythonProject {
        env: env.to_string(),
        project: llmgw_shared::pep503_normalize(project),
    })
}

fn image(name: &[&str], reference: &str, ns: Option<&str>) -> Result<Want, String> {
    let Some(registry) = ns else {
        if name.first() == Some(&"charts") {
            // The mirror serves every chart as `charts/NAME`, whatever
            // registry it came from, and a miss records only the path.
            return Err(format!(
                "a chart by the mirror's name (charts/{}) names no registry: write its \
                 \"source\": \"oci://REGISTRY/REPOSITORY\" into the want-list, or carry it \
                 with --chart oci://REGISTRY/REPOSITORY:{}",
                name[1..].join("/"),
                llmgw_shared::shown(reference)
            ));
        }
        return Err(
            "an image asked for with no registry (containerd's ?ns=): write its \"source\": \
             \"REGISTRY/NAME\" into the want-list, or carry it with --image REGISTRY/NAME:TAG"
                .into(),
        );
    };
    let sep = if reference.starts_with("sha256:") {
        '@'
    } else {
        ':'
    };
    let reference = format!("{registry}/{}{sep}{reference}", name.join("/"));
    let ok = reference.len() <= 512
        && reference
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '/' | '@'));
    if !ok {
        return Err("not an image reference".into());
    }
    Ok(Want::Image { reference })
}

fn repo_id(o: &str, n: &str) -> Result<String, String> {
    let id = format!("{o}/{n}");
    check_repo_id("repository id", &id).map_err(|e| e.to_string())?;
    Ok(id)
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
