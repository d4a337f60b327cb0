//! A companion published per CUDA version on its publisher's own index
//! (issue #32: `flashinfer-jit-cache` on `https://flashinfer.ai/whl/cu130`):
//! which CUDA the environment resolved, which of the publisher's builds a
//! node with that CUDA installs (the publisher's own rule), and whether
//! that index lists the wheel for the node's architecture.
//!
//! Invariant: the companion is only ever required from the one index and
//! at the one `V+cuXYZ` found here, so the resolver cannot take it from
//! anywhere else; the file's digest is then checked like every other
//! (the index's `#sha256=`, in `check`). Whatever keeps it out is a gap
//! naming the version and the CUDA variant, never silently missing.

use llmgw_shared::recipe::{self, Companion, CudaBuilds, public_version};
use llmgw_shared::{chain, shown};

use super::Ctx;
use super::lock::LockedPackage;
use super::request::{EnvRequest, index_name};
use super::simple::{self, normalize};
use super::uv::ExplicitIndex;
use crate::error::CreateError;

/// The CUDA runtime wheels whose version is the CUDA version (NVIDIA's:
/// `nvidia-cuda-runtime-cu12==12.8.90`; from CUDA 13 without the suffix).
const CUDA_RUNTIMES: [&str; 3] = [
    "nvidia-cuda-runtime-cu12",
    "nvidia-cuda-runtime-cu13",
    "nvidia-cuda-runtime",
];

/// The CUDA version an environment resolved, and what says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedCuda {
    /// `(12, 8)`.
    pub version: (u64, u64),
    /// `torch 2.11.0+cu129`, `nvidia-cuda-runtime 13.0.96`.
    pub from: String,
}

/// The CUDA version of an environment: the resolved torch's local label
/// (`2.11.0+cu129`, PyTorch's CUDA indexes), else the resolved CUDA
/// runtime wheel's version (PyPI's torch names no CUDA in its version but
/// requires `nvidia-cuda-runtime-cu12==12.8.90` or the like).
pub fn resolved_cuda(packages: &[LockedPackage]) -> Option<ResolvedCuda> {
    let find = |name: &str| packages.iter().find(|p| normalize(&p.name) == name);
    if let Some(t) = find("torch")
        && let Some((_, label)) = t.version.split_once('+')
        && let Some(version) = recipe::cuda_of_label(label)
    {
        return Some(ResolvedCuda {
            version,
            from: format!("torch {}", t.version),
        });
    }
    CUDA_RUNTIMES.iter().find_map(|name| {
        let p = find(name)?;
        let mut parts = p.version.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some(ResolvedCuda {
            version: (major, minor),
            from: format!("{name} {}", p.version),
        })
    })
}

/// What a per-CUDA companion comes to: its requirement and the index it
/// must come from, or a gap `(what, why)`.
pub type Planned = Result<(String, ExplicitIndex), (String, String)>;

/// The companion `c` of a package at `version` for environment `req`,
/// built by the publisher for `builds` and listed under `base`.
pub async fn plan(
    ctx: &Ctx<'_>,
    req: &EnvRequest,
    c: &Companion,
    (base, builds): (&str, &[CudaBuilds]),
    version: &str,
    cuda: Option<&ResolvedCuda>,
) -> Result<Planned, CreateError> {
    let public = public_version(version);
    let labels = recipe::cuda_labels(builds, version);
    let listed = labels.join(", ");
    let Some(cuda) = cuda else {
        return Ok(Err((
            format!("{}: {}=={public}", req.name, c.project),
            format!(
                "published per CUDA version ({listed}) on {base}, and this environment resolved \
                 no CUDA (no torch +cuXYZ, no {}) to choose one by; {}",
                CUDA_RUNTIMES.join(", "),
                c.without
            ),
        )));
    };
    let (major, minor) = cuda.version;
    let Some(label) = recipe::cuda_label_for(labels, cuda.version) else {
        return Ok(Err((
            format!(
                "{}: {}=={public} for CUDA {major}.{minor}",
                req.name, c.project
            ),
            format!(
                "the publisher builds {} {public} for {listed} only, none of CUDA {major} up to \
                 {major}.{minor} (this environment's, from {}); {}",
                c.project, cuda.from, c.without
            ),
        )));
    };
    let wanted = format!("{public}+{label}");
    let what = format!("{}: {}=={wanted}", req.name, c.project);
    let url = index_url(ctx, base, label);
    let page = match simple::fetch_project(ctx.http, &url, c.project).await {
        Ok(page) => page,
        Err(e) if ctx.allow_missing => {
            return Ok(Err((
                what,
                format!("its index {url} could not be read: {}", chain(&e)),
            )));
        }
        Err(e) => {
            return Err(CreateError::Part {
                part: format!("{what} from {url}"),
                advice: "pass --allow-missing to record it as a gap, --no-extras to leave the \
                         companion wheels out, or --extras-base HOST=URL for a copy of the index"
                    .into(),
                error: Box::new(e),
            });
        }
    };
    let arch = super::interpreter::triple_arch(&req.arch);
    let found = page.as_ref().is_some_and(|page| {
        page.files.iter().any(|f| {
            simple::wheel_version(&f.filename) == Some(wanted.as_str())
                && f.filename.ends_with(&format!("_{arch}.whl"))
        })
    });
    if !found {
        return Ok(Err((
            what,
            format!(
                "{url}/{}/ lists no {wanted} wheel for {arch} (this environment's CUDA is \
                 {major}.{minor}, from {}; the publisher builds {listed}); {}",
                c.project, cuda.from, c.without
            ),
        )));
    }
    ctx.progress.message(&format!(
        "{}: {} {wanted} from {} (CUDA {major}.{minor}, from {})",
        req.name,
        c.project,
        shown(&url),
        cuda.from
    ));
    Ok(Ok((
        format!("{}=={wanted}", c.project),
        ExplicitIndex {
            name: index_name(&format!("{base}/{label}")),
            url,
            packages: vec![c.project.to_string()],
        },
    )))
}

/// `{base}/{label}`, on the `--extras-base` given for `base`'s host:
/// `https://flashinfer.ai/whl` with `flashinfer.ai=http://127.0.0.1:9` is
/// read at `http://127.0.0.1:9/whl/cu130`.
fn index_url(ctx: &Ctx<'_>, base: &str, label: &str) -> String {
    let upstream = format!("{}/{label}", base.trim_end_matches('/'));
    let Ok(u) = reqwest::Url::parse(&upstream) else {
        return upstream;
    };
    match u.host_str().and_then(|h| ctx.extras_bases.get(h)) {
        Some(site) => format!("{site}{}", u.path()),
        None => upstream,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(n: &str, v: &str) -> LockedPackage {
        LockedPackage {
            name: n.into(),
            version: v.into(),
            files: Vec::new(),
        }
    }

    #[test]
    fn the_cuda_is_torchs_label_else_the_runtimes_version() {
        let from_torch = resolved_cuda(&[
            p("torch", "2.11.0+cu129"),
            p("nvidia-cuda-runtime-cu12", "12.9.79"),
        ])
        .unwrap();
        assert_eq!(from_torch.version, (12, 9));
        assert_eq!(from_torch.from, "torch 2.11.0+cu129");
        let from_runtime =
            resolved_cuda(&[p("torch", "2.11.0"), p("nvidia-cuda-runtime", "13.0.96")]).unwrap();
        assert_eq!(from_runtime.version, (13, 0));
        assert_eq!(from_runtime.from, "nvidia-cuda-runtime 13.0.96");
        assert_eq!(
            resolved_cuda(&[p("nvidia_cuda_runtime_cu12", "12.8.90")])
                .unwrap()
                .version,
            (12, 8)
        );
        assert_eq!(resolved_cuda(&[p("torch", "2.11.0+cpu")]), None);
        assert_eq!(resolved_cuda(&[]), None);
    }
}
