//! Engine images: which container images an engine version is published
//! as, per variant (CUDA 13, CUDA 12, Vulkan, CPU), with what each needs of
//! a node — what a Kubernetes site runs vLLM, SGLang and llama.cpp's server
//! from.
//!
//! Invariant: the choice is the build table's — an NVIDIA node is given the
//! best image its driver starts, never the CPU one; a node with no GPU the
//! CPU image — and every fact is a row of [`rows`], cited there. An image's
//! name alone does not say which driver it needs:
//! `vllm/vllm-openai:v0.34.0` is the CUDA 13.0 build and does not start on
//! a 550–575 driver; the table says so.

mod rows;

use serde::{Deserialize, Serialize};

use super::fit::GpuNeeds;
use super::{Host, Misfit, RecipeError, recipe, valid_version};
use rows::{Backend, Form, ROWS, Row};

/// One published image of an engine version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineImage {
    /// The engine of the recipe table (`vllm`).
    pub engine: String,
    /// The engine version asked for (`0.34.0`).
    pub version: String,
    /// The variant's name: `cu130`, `cu129`; llama.cpp's `cuda13`,
    /// `cuda`, `vulkan`, `cpu`.
    pub variant: String,
    /// The registry as Docker references name it (`docker.io`).
    pub registry: String,
    /// The repository path (`vllm/vllm-openai`).
    pub repository: String,
    /// The tag the publisher gives this variant of this version.
    pub tag: String,
    /// What it runs on: `cuda`, `vulkan` or `cpu`.
    pub backend: String,
    /// The CUDA the image is built on (`13.0`); empty for no CUDA.
    pub cuda: String,
    /// The oldest NVIDIA driver (major version) it starts on; 0 for none.
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

    /// What it needs, in words: `CUDA 12.9, driver 525 or newer`.
    pub fn needs(&self) -> String {
        match self.backend.as_str() {
            "cuda" => format!("CUDA {}, driver {} or newer", self.cuda, self.min_driver),
            "vulkan" => "Vulkan, any GPU driver with Vulkan".to_string(),
            _ => "CPU only".to_string(),
        }
    }
}

/// What the table says of an engine's images for versions it has none of.
fn no_rows_reason(engine: &str, version: &str, form: Option<Form>) -> String {
    if engine != "llamacpp"
        && let Some(bare) = version.strip_prefix('v')
    {
        return format!(
            "give the version without the tag's v ({bare}), as the recipe's other commands take it"
        );
    }
    match (engine, form) {
        ("vllm", _) => format!(
            "the table's vLLM images start at {}, where the plain tag became \
             the CUDA 13.0 build and -cu129 tags appeared; carry an older image by name with \
             --image",
            rows::VLLM_IMAGES_SINCE
        ),
        ("sglang", _) => format!(
            "the table's SGLang images start at {}, where CUDA 13.0 became \
             the default; carry an older image by name with --image",
            rows::SGLANG_IMAGES_SINCE
        ),
        ("llamacpp", None) => "give llama.cpp's release tag: a build (b8000) or a SemVer \
             release (v0.4.0)"
            .to_string(),
        ("llamacpp", Some(Form::SemVer)) => format!(
            "llama.cpp's SemVer releases carry server images from {} (v0.3.0, build b10621, \
             has none: ggml-org/llama.cpp#28275); ask for the release's build (bNNNN) or carry \
             an image by name with --image",
            rows::LLAMACPP_SEMVER_SINCE
        ),
        ("llamacpp", _) => format!(
            "the table's llama.cpp server images start at {} (arm64 at {}), the first builds \
             the sources show a server-cuda13 image of; carry an older image by name with \
             --image",
            rows::LLAMACPP_BUILDS_SINCE,
            rows::LLAMACPP_ARM64_SINCE
        ),
        _ => "its nodes install release archives (see `llmgw recipe builds`), not images; \
              carry an image of it by name with --image"
            .to_string(),
    }
}

/// The platforms `rows` are built for at `version`, and those they are
/// built for only from a later version (`arm64 from b9294`), in words.
fn published(rows: &[&Row], version: &str) -> String {
    let mut now: Vec<&str> = Vec::new();
    let mut later: Vec<String> = Vec::new();
    for row in rows {
        for (arch, _) in row.platforms {
            let first = row.first_on(arch).unwrap_or(row.since);
            if row.on(arch, version) {
                if !now.contains(arch) {
                    now.push(arch);
                }
            } else {
                let said = format!("{arch} from {first}");
                if !later.contains(&said) {
                    later.push(said);
                }
            }
        }
    }
    let mut out = now.join(" and ");
    if !later.is_empty() {
        out.push_str(&format!(" (the table's {})", later.join(", ")));
    }
    out
}

/// Every image of `engine` `version` for `arch` that a machine on NVIDIA
/// driver `driver` runs, best first; `None` is any machine (every image the
/// table lists, the CPU one too). A machine on a driver is an NVIDIA node:
/// it is never given the CPU image unless `variant` names it, as the build
/// table never gives it the CPU build. `variant` keeps only that one, and
/// when the table lacks it the message lists the variants there are.
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
    let form = Form::of(r.name(), version);
    let rows: Vec<&Row> = ROWS
        .iter()
        .filter(|row| row.engine == r.name() && Some(row.form) == form && row.holds(version))
        .collect();
    if rows.is_empty() {
        return Err(RecipeError::NoImages {
            engine: engine.to_string(),
            version: version.to_string(),
            reason: no_rows_reason(r.name(), version, form),
        });
    }
    let what = format!("{engine} {version}");
    let variant = variant.filter(|v| !v.is_empty());
    if let Some(v) = variant
        && !rows.iter().any(|row| row.variant == v)
    {
        let available = rows.iter().map(|row| row.variant.to_string()).collect();
        let other = ROWS
            .iter()
            .find(|row| row.engine == r.name() && Some(row.form) == form && row.variant == v);
        return Err(match other {
            Some(row) => RecipeError::ImageVariantNotThen {
                what,
                variant: v.to_string(),
                held: match row.until {
                    "" => format!("{} on", row.since),
                    until => format!("{} to {until}", row.since),
                },
                available,
            },
            None => RecipeError::UnknownVariant {
                what: format!("{what}'s images"),
                variant: v.to_string(),
                available,
            },
        });
    }
    let rows: Vec<&Row> = rows
        .into_iter()
        .filter(|row| variant.is_none_or(|v| v == row.variant))
        .collect();
    if !rows.iter().any(|row| row.on(arch, version)) {
        return Err(RecipeError::NoImageForArch {
            what,
            arch: arch.to_string(),
            published: published(&rows, version),
        });
    }
    let host = Host::nvidia(arch, driver.unwrap_or(NEWEST_DRIVER), 0.0);
    let mut out = Vec::new();
    let mut why: Vec<Misfit> = Vec::new();
    for row in rows.iter().filter(|row| row.on(arch, version)) {
        let min_driver = match row.backend {
            Backend::Cpu if driver.is_some() && variant.is_none() => continue,
            Backend::Cuda { min_driver, .. } => min_driver,
            Backend::Vulkan | Backend::Cpu => 0,
        };
        let needs = GpuNeeds::new(min_driver, 0.0);
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
/// that driver runs — the one a node on it is given — and the image a node
/// with no GPU runs, where the engine has one (llama.cpp's CPU server);
/// without, every image the table lists, as [`super::builds`] lists every
/// build. vLLM and SGLang have no CPU image, so they add none for it.
pub fn site_images(
    engine: &str,
    version: &str,
    variant: Option<&str>,
    arch: &str,
    driver: Option<&str>,
) -> Result<Vec<EngineImage>, RecipeError> {
    let mut all = images(engine, version, variant, arch, driver)?;
    if driver.is_none() {
        return Ok(all);
    }
    all.truncate(1);
    if variant.is_none_or(str::is_empty) {
        let anywhere = images(engine, version, None, arch, None)?;
        all.extend(anywhere.into_iter().filter(|i| i.backend == "cpu"));
    }
    Ok(all)
}

/// The driver no image asks more of.
const NEWEST_DRIVER: &str = "9999";

fn image(row: &Row, version: &str) -> EngineImage {
    let (backend, cuda, min_driver) = match row.backend {
        Backend::Cuda { cuda, min_driver } => ("cuda", cuda, min_driver),
        Backend::Vulkan => ("vulkan", "", 0),
        Backend::Cpu => ("cpu", "", 0),
    };
    EngineImage {
        engine: row.engine.to_string(),
        version: version.to_string(),
        variant: row.variant.to_string(),
        registry: row.registry.to_string(),
        repository: row.repository.to_string(),
        tag: row.tag.replace("{v}", version),
        backend: backend.to_string(),
        cuda: cuda.to_string(),
        min_driver,
        platforms: row
            .platforms
            .iter()
            .filter(|(arch, _)| row.on(arch, version))
            .map(|(arch, _)| arch.to_string())
            .collect(),
        source: rows::source_of(row),
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
