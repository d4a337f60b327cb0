//! Engine images: which container images an engine version is published
//! as, per CUDA variant, with the NVIDIA driver each needs — what a
//! Kubernetes site runs vLLM and SGLang from.
//!
//! Invariant: every row cites where its repository, tag form, CUDA,
//! platforms and driver floor come from, and its driver floor is the one
//! the build table gives the same CUDA's wheels ([`MIN_DRIVER_FOR_CUDA13`],
//! [`MIN_DRIVER_FOR_CUDA12`]), so an image and an environment of one
//! version never disagree about a node. An image's name alone does not say
//! which driver it needs: `vllm/vllm-openai:v0.34.0` is the CUDA 13.0
//! build and does not start on a 550–575 driver; the table says so.
//!
//! llama.cpp is not here: its nodes install the release archives
//! ([`super::builds`]), and its server images are tagged by build number
//! only, so an operator who wants one carries it by name (`--image`).

use serde::{Deserialize, Serialize};

use super::fit::{GpuNeeds, MIN_DRIVER_FOR_CUDA12, MIN_DRIVER_FOR_CUDA13};
use super::{Host, Misfit, RecipeError, recipe, valid_version, version_before};

/// One published image of an engine version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineImage {
    /// The engine of the recipe table (`vllm`).
    pub engine: String,
    /// The engine version asked for (`0.34.0`).
    pub version: String,
    /// The variant's name: `cu130`, `cu129`.
    pub variant: String,
    /// The registry as Docker references name it (`docker.io`).
    pub registry: String,
    /// The repository path (`vllm/vllm-openai`).
    pub repository: String,
    /// The tag the publisher gives this variant of this version.
    pub tag: String,
    /// The CUDA the image is built on (`13.0`).
    pub cuda: String,
    /// The oldest NVIDIA driver (major version) it starts on.
    pub min_driver: u64,
    /// The platforms the publisher builds it for, by Go's names.
    pub platforms: Vec<String>,
    /// Where the row's facts come from.
    pub source: String,
}

impl EngineImage {
    /// The Docker reference the image is pulled and served by
    /// (`docker.io/vllm/vllm-openai:v0.34.0-cu129`).
    pub fn reference(&self) -> String {
        format!("{}/{}:{}", self.registry, self.repository, self.tag)
    }
}

/// One row of the table: an image variant of an engine, for the versions
/// from `since` on, and what it needs.
struct Row {
    engine: &'static str,
    /// The first version the row holds for (dotted, compared by number).
    since: &'static str,
    variant: &'static str,
    registry: &'static str,
    repository: &'static str,
    /// The tag, with `{v}` where the version goes.
    tag: &'static str,
    cuda: &'static str,
    min_driver: u64,
    platforms: &'static [&'static str],
    source: &'static str,
}

/// The first vLLM whose images split by CUDA with the plain tag CUDA 13.
const VLLM_IMAGES_SINCE: &str = "0.20";
/// The first SGLang whose images default to CUDA 13.
const SGLANG_IMAGES_SINCE: &str = "0.5.11";

/// Every image row, each engine's best first.
const ROWS: &[Row] = &[
    Row {
        engine: "vllm",
        since: VLLM_IMAGES_SINCE,
        variant: "cu130",
        registry: "docker.io",
        repository: "vllm/vllm-openai",
        tag: "v{v}",
        cuda: "13.0",
        min_driver: MIN_DRIVER_FOR_CUDA13,
        platforms: &["amd64", "arm64"],
        source: "vllm-project/vllm PR #39878 (2026-04-15): CUDA 13.0 wheels and Docker images \
                 are the unsuffixed default, CUDA 12.9 the `-cu129` variant; from v0.20.0 \
                 release tags are CUDA 13 unsuffixed and multi-arch (NVIDIA/Model-Optimizer \
                 PR #2042); the plain `:v0.20.2` resolves to a cu130 build (llm-d/llm-d-kv-cache \
                 PR #584); CUDA 13 needs driver 580",
    },
    Row {
        engine: "vllm",
        since: VLLM_IMAGES_SINCE,
        variant: "cu129",
        registry: "docker.io",
        repository: "vllm/vllm-openai",
        tag: "v{v}-cu129",
        cuda: "12.9",
        min_driver: MIN_DRIVER_FOR_CUDA12,
        platforms: &["amd64", "arm64"],
        source: "`-cu129` is the CUDA 12 opt-out from v0.20.0 (vllm-project/vllm PR #39878; \
                 NVIDIA/Model-Optimizer PR #2042); llm-d/llm-d-kv-cache PR #584 pins \
                 `vllm/vllm-openai:v0.20.2-cu129`; vLLM publishes cu129 and cu130 builds only \
                 (vllm-project/vllm#42756); CUDA 12 runs on driver 525 and newer, as the build \
                 table's cu129 wheel",
    },
    Row {
        engine: "sglang",
        since: SGLANG_IMAGES_SINCE,
        variant: "cu130",
        registry: "docker.io",
        repository: "lmsysorg/sglang",
        tag: "v{v}-cu130",
        cuda: "13.0",
        min_driver: MIN_DRIVER_FOR_CUDA13,
        platforms: &["amd64", "arm64"],
        source: "SGLang v0.5.11's release notes: CUDA 13.0 the default across SGLang, \
                 sgl-kernel and Docker images (quoted in gpustack/gpustack#5285); \
                 `lmsysorg/sglang:v0.5.14-cu130` is a published base image \
                 (radixark/miles_diffusion PR #13); cu13 images for x86 and arm \
                 (sgl-project/sglang PR #11517); CUDA 13 needs driver 580",
    },
    Row {
        engine: "sglang",
        since: SGLANG_IMAGES_SINCE,
        variant: "cu129",
        registry: "docker.io",
        repository: "lmsysorg/sglang",
        tag: "v{v}-cu129",
        cuda: "12.9",
        min_driver: MIN_DRIVER_FOR_CUDA12,
        platforms: &["amd64", "arm64"],
        source: "SGLang tags its CUDA 12.9 images `v<version>-cu129` (amd64 and arm64: \
                 SemiAnalysisAI/InferenceX#275, `v0.5.6-cu129-amd64`/`-arm64`), and still \
                 publishes `latest-cu129` after the CUDA 13 default \
                 (imdingtalk/image-mirror#1775, 2026-06-12); CUDA 12 runs on driver 525 and \
                 newer. Inferred, not seen: no versioned `-cu129` tag from 0.5.11 on was \
                 found in these sources, only the naming before it and `latest-cu129` after; \
                 a create asking for one the registry lacks fails naming the tag",
    },
];

/// What the table says of an engine's images for versions it has none of.
fn no_rows_reason(engine: &str, version: &str) -> String {
    if let Some(bare) = version.strip_prefix('v') {
        return format!(
            "give the version without the tag's v ({bare}), as the recipe's other commands take it"
        );
    }
    match engine {
        "vllm" => format!(
            "the table's vLLM images start at {VLLM_IMAGES_SINCE}, where the plain tag became \
             the CUDA 13.0 build and -cu129 tags appeared; carry an older image by name with \
             --image"
        ),
        "sglang" => format!(
            "the table's SGLang images start at {SGLANG_IMAGES_SINCE}, where CUDA 13.0 became \
             the default; carry an older image by name with --image"
        ),
        _ => "its nodes install release archives (see `llmgw recipe builds`), not images; \
              carry an image of it by name with --image"
            .to_string(),
    }
}

/// Every image of `engine` `version` for `arch` that a machine on NVIDIA
/// driver `driver` runs, best first; `None` is any driver (every image the
/// table lists). `variant` keeps only that one, and when the table lacks
/// it the message lists the variants there are.
pub fn images(
    engine: &str,
    version: &str,
    variant: Option<&str>,
    arch: &str,
    driver: Option<&str>,
) -> Result<Vec<EngineImage>, RecipeError> {
    let r = recipe(engine)?;
    if !valid_version(version) {
        return Err(RecipeError::InvalidVersion {
            engine: engine.to_string(),
            version: version.to_string(),
        });
    }
    // A tag's `v` (`v0.34.0`) is no version here: every row's tag adds it.
    let numbered = version.starts_with(|c: char| c.is_ascii_digit());
    let rows: Vec<&Row> = ROWS
        .iter()
        .filter(|row| numbered && row.engine == r.name())
        .filter(|row| !version_before(version, row.since))
        .collect();
    if rows.is_empty() {
        return Err(RecipeError::NoImages {
            engine: engine.to_string(),
            version: version.to_string(),
            reason: no_rows_reason(r.name(), version),
        });
    }
    let what = format!("{engine} {version}");
    let variant = variant.filter(|v| !v.is_empty());
    if let Some(v) = variant
        && !rows.iter().any(|row| row.variant == v)
    {
        return Err(RecipeError::UnknownVariant {
            what: format!("{what}'s images"),
            variant: v.to_string(),
            available: rows.iter().map(|row| row.variant.to_string()).collect(),
        });
    }
    let rows: Vec<&Row> = rows
        .into_iter()
        .filter(|row| variant.is_none_or(|v| v == row.variant))
        .collect();
    if !rows.iter().any(|row| row.platforms.contains(&arch)) {
        let mut published: Vec<&str> = Vec::new();
        for p in rows.iter().flat_map(|row| row.platforms.iter()) {
            if !published.contains(p) {
                published.push(p);
            }
        }
        return Err(RecipeError::NoImageForArch {
            what,
            arch: arch.to_string(),
            published: published.join(" and "),
        });
    }
    let host = Host::nvidia(arch, driver.unwrap_or(NEWEST_DRIVER), 0.0);
    let mut out = Vec::new();
    let mut why: Vec<Misfit> = Vec::new();
    for row in rows.iter().filter(|row| row.platforms.contains(&arch)) {
        let needs = GpuNeeds::new(row.min_driver, 0.0);
        match needs.fits(&format!("the {} image", row.variant), &host) {
            Ok(()) => out.push(image(row, version)),
            Err(e) => why.push(e),
        }
    }
    if out.is_empty() {
        return Err(RecipeError::NoBuildHere {
            what: format!("{what}'s images"),
            reasons: why,
        });
    }
    Ok(out)
}

/// The images of `engine` `version` a site of `arch` nodes runs, as a
/// bundle carries them: with `driver` (the site's newest), the best image
/// that driver runs — the one a node on it is given; without, every image
/// the table lists, as [`super::builds`] lists every build. A machine with
/// no NVIDIA GPU runs no vLLM or SGLang image, so it adds none.
pub fn site_images(
    engine: &str,
    version: &str,
    variant: Option<&str>,
    arch: &str,
    driver: Option<&str>,
) -> Result<Vec<EngineImage>, RecipeError> {
    let mut all = images(engine, version, variant, arch, driver)?;
    if driver.is_some() {
        all.truncate(1);
    }
    Ok(all)
}

/// The driver no image asks more of.
const NEWEST_DRIVER: &str = "9999";

fn image(row: &Row, version: &str) -> EngineImage {
    EngineImage {
        engine: row.engine.to_string(),
        version: version.to_string(),
        variant: row.variant.to_string(),
        registry: row.registry.to_string(),
        repository: row.repository.to_string(),
        tag: row.tag.replace("{v}", version),
        cuda: row.cuda.to_string(),
        min_driver: row.min_driver,
        platforms: row.platforms.iter().map(|p| p.to_string()).collect(),
        source: row.source.to_string(),
    }
}

/// Why `driver` is not an NVIDIA driver version as `nvidia-smi` prints it
/// (1 to 3 dotted numbers: 550, 550.54, 550.54.15); `None` when it is. The
/// caller names where it came from (`--driver`).
pub fn driver_problem(driver: &str) -> Option<String> {
    let parts: Vec<&str> = driver.split('.').collect();
    let number = |p: &&str| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit());
    if parts.len() <= 3 && parts.iter().all(number) {
        return None;
    }
    Some(format!(
        "{driver:?} is not an NVIDIA driver version; give it as `nvidia-smi \
         --query-gpu=driver_version --format=csv,noheader` prints it, such as 550.54.15"
    ))
}
