//! The image table's rows: per engine, which image each variant of a
//! version is published as, from which version on, for which platforms, and
//! what it needs of a node — each row with where its facts come from.
//!
//! Invariant: every driver floor is the build table's own constant for the
//! same CUDA ([`MIN_DRIVER_FOR_CUDA13`], [`MIN_DRIVER_FOR_CUDA12`], and
//! llama.cpp's [`MIN_DRIVER_FOR_CUDA12_PTX`]), so an image and an archive or
//! environment of one version never disagree about a node; and a version
//! the sources do not show an image of has no row (it is refused, and an
//! operator who knows better carries it by name with `--image`).

use super::super::fit::{MIN_DRIVER_FOR_CUDA12, MIN_DRIVER_FOR_CUDA13};
use super::super::llamacpp::MIN_DRIVER_FOR_CUDA12_PTX;

/// How a version is spelled, and so which rows it is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    /// A dotted release number without a `v`: vLLM's `0.34.0`.
    Release,
    /// llama.cpp's build number: `b8000`.
    Build,
    /// llama.cpp's SemVer release tag: `v0.4.0`.
    SemVer,
}

impl Form {
    /// The form `version` is spelled in for `engine`'s images, if any.
    pub(super) fn of(engine: &str, version: &str) -> Option<Form> {
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if engine != "llamacpp" {
            return version
                .starts_with(|c: char| c.is_ascii_digit())
                .then_some(Form::Release);
        }
        if version.strip_prefix('b').is_some_and(digits) {
            return Some(Form::Build);
        }
        let semver = version
            .strip_prefix('v')
            .map(|v| v.split('.').collect::<Vec<_>>());
        match semver {
            Some(parts) if parts.len() == 3 && parts.iter().all(|p| digits(p)) => {
                Some(Form::SemVer)
            }
            _ => None,
        }
    }

    /// Whether `a` is older than `b`, both spelled in this form.
    pub(super) fn before(self, a: &str, b: &str) -> bool {
        let bare = |s: &'_ str| -> String {
            match self {
                Form::Release => s.to_string(),
                Form::Build => s.trim_start_matches('b').to_string(),
                Form::SemVer => s.trim_start_matches('v').to_string(),
            }
        };
        super::super::version_before(&bare(a), &bare(b))
    }
}

/// What an image needs of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Backend {
    /// Built on CUDA `cuda`; starts on NVIDIA driver `min_driver` or newer.
    Cuda { cuda: &'static str, min_driver: u64 },
    /// Vulkan: any GPU whose driver has Vulkan.
    Vulkan,
    /// The CPU alone: what a node with no GPU runs.
    Cpu,
}

/// One row: an image variant of an engine, for the versions from `since`
/// (to `until`, when the publisher stopped), and what it needs.
pub(super) struct Row {
    pub engine: &'static str,
    pub form: Form,
    /// The first version the row holds for, in the row's form.
    pub since: &'static str,
    /// The last version it holds for; empty while it is still published.
    pub until: &'static str,
    pub variant: &'static str,
    /// The registry as Docker references name it (`docker.io`).
    pub registry: &'static str,
    pub repository: &'static str,
    /// The tag, with `{v}` where the version goes.
    pub tag: &'static str,
    pub backend: Backend,
    /// The platforms by Go's names, each with the first version the
    /// publisher built it for (empty: `since`).
    pub platforms: &'static [(&'static str, &'static str)],
    pub source: &'static str,
}

impl Row {
    /// Whether the row holds for `version` (spelled in the row's form).
    pub(super) fn holds(&self, version: &str) -> bool {
        !self.form.before(version, self.since)
            && (self.until.is_empty() || !self.form.before(self.until, version))
    }

    /// The first version `arch` is built for, if it ever is.
    pub(super) fn first_on(&self, arch: &str) -> Option<&'static str> {
        let (_, since) = self.platforms.iter().find(|(a, _)| *a == arch)?;
        Some(if since.is_empty() { self.since } else { since })
    }

    /// Whether the row's image of `version` is built for `arch`.
    pub(super) fn on(&self, arch: &str, version: &str) -> bool {
        self.first_on(arch)
            .is_some_and(|since| !self.form.before(version, since))
    }
}

/// The first vLLM whose images split by CUDA with the plain tag CUDA 13.
pub(super) const VLLM_IMAGES_SINCE: &str = "0.20";
/// The first SGLang whose images default to CUDA 13.
pub(super) const SGLANG_IMAGES_SINCE: &str = "0.5.11";
/// The last SGLang with CUDA 12.9 images.
const SGLANG_CU129_UNTIL: &str = "0.5.19";
/// The first llama.cpp build the table holds server images of (amd64).
pub(super) const LLAMACPP_BUILDS_SINCE: &str = "b7609";
/// The first llama.cpp build the table holds arm64 server images of.
pub(super) const LLAMACPP_ARM64_SINCE: &str = "b9294";
/// The first llama.cpp SemVer release with server images.
pub(super) const LLAMACPP_SEMVER_SINCE: &str = "v0.4.0";

const BOTH: &[(&str, &str)] = &[("amd64", ""), ("arm64", "")];
const LLAMACPP_PLATFORMS: &[(&str, &str)] = &[("amd64", ""), ("arm64", LLAMACPP_ARM64_SINCE)];

/// Where every llama.cpp server image row's tags and platforms come from.
const LLAMACPP_TAGS: &str = "ggml-org/llama.cpp .github/workflows/docker.yml pushes each server \
     image to ghcr.io/ggml-org/llama.cpp as `server-TYPE` and `server-TYPE-b{BUILD_NUMBER}` (no \
     `-TYPE` for the CPU image; PR #9638); a SemVer release re-tags its build's images \
     `server-TYPE-vX.Y.Z` (PR #28394, merged 2026-09-04, after #28275 found v0.3.0 = b10621 without \
     an image), so v0.4.0 (2026-09-14, conan-io/cuda-conan PR #14) is the first with them \
     (`server-cuda-v0.4.1` is pinned in deployments). docs/docker.md (at 30255fc) lists server, \
     server-cuda, server-cuda13 and server-vulkan for linux/amd64 and linux/arm64; arm64 CUDA and \
     Vulkan images came with PR #21122 (2026-03-28). The earliest builds the sources show: \
     `server-cuda13-b7609` (amd64) and `server-cuda13-b9294` on a GB10 (arm64)";

/// llama.cpp's `server-cuda13`.
const LLAMACPP_CUDA13: &str = ".devops/cuda-new.Dockerfile builds it on CUDA 13.1.0, bumped to \
     13.3.0 (PR #24228, 2026-06-06) and 13.4.1 (PR #29207, 2026-09-21); CUDA 13 needs driver 580, \
     as the build table's CUDA 13 archive";

/// llama.cpp's `server-cuda`.
const LLAMACPP_CUDA12: &str = ".devops/cuda.Dockerfile: CUDA_VERSION 12.8.1 (docs/docker.md: \
     CUDA 12, default 12.8.1; earlier images were no newer: 12.4 from PR #11869), \
     CUDA_DOCKER_ARCH the CMake default, the list the CUDA 12.8 archive carries machine code for \
     (8.6, 8.9, 12.0) and the rest as PTX; a GPU run from PTX needs a driver as new as CUDA 12.8, \
     570.26 (NVIDIA's CUDA 12.8 release notes). The table does not know the node's GPU, so 570";

/// llama.cpp's `server-vulkan`.
const LLAMACPP_VULKAN: &str = ".devops/vulkan.Dockerfile: the Vulkan backend, which any GPU \
     whose driver has Vulkan runs, as the build table's Vulkan archive";

/// llama.cpp's CPU `server`.
const LLAMACPP_CPU: &str = ".devops/cpu.Dockerfile: the CPU backends alone (every x86 \
     generation on amd64), what a node with no GPU runs";

/// A llama.cpp server image row of one version form.
const fn llamacpp(
    form: Form,
    variant: &'static str,
    tag: &'static str,
    backend: Backend,
    source: &'static str,
) -> Row {
    Row {
        engine: "llamacpp",
        form,
        since: match form {
            Form::SemVer => LLAMACPP_SEMVER_SINCE,
            _ => LLAMACPP_BUILDS_SINCE,
        },
        until: "",
        variant,
        registry: "ghcr.io",
        repository: "ggml-org/llama.cpp",
        tag,
        backend,
        platforms: match form {
            Form::SemVer => BOTH,
            _ => LLAMACPP_PLATFORMS,
        },
        source,
    }
}

const CUDA13: Backend = Backend::Cuda {
    cuda: "13",
    min_driver: MIN_DRIVER_FOR_CUDA13,
};
const CUDA12_PTX: Backend = Backend::Cuda {
    cuda: "12",
    min_driver: MIN_DRIVER_FOR_CUDA12_PTX,
};

/// Every image row, each engine's (and each form's) best first.
pub(super) const ROWS: &[Row] = &[
    Row {
        engine: "vllm",
        form: Form::Release,
        since: VLLM_IMAGES_SINCE,
        until: "",
        variant: "cu130",
        registry: "docker.io",
        repository: "vllm/vllm-openai",
        tag: "v{v}",
        backend: Backend::Cuda {
            cuda: "13.0",
            min_driver: MIN_DRIVER_FOR_CUDA13,
        },
        platforms: BOTH,
        source: "vllm-project/vllm PR #39878 (2026-04-15): CUDA 13.0 wheels and Docker images \
                 are the unsuffixed default, CUDA 12.9 the `-cu129` variant; from v0.20.0 \
                 release tags are CUDA 13 unsuffixed and multi-arch (NVIDIA/Model-Optimizer \
                 PR #2042); the plain `:v0.20.2` resolves to a cu130 build (llm-d/llm-d-kv-cache \
                 PR #584); CUDA 13 needs driver 580",
    },
    Row {
        engine: "vllm",
        form: Form::Release,
        since: VLLM_IMAGES_SINCE,
        until: "",
        variant: "cu129",
        registry: "docker.io",
        repository: "vllm/vllm-openai",
        tag: "v{v}-cu129",
        backend: Backend::Cuda {
            cuda: "12.9",
            min_driver: MIN_DRIVER_FOR_CUDA12,
        },
        platforms: BOTH,
        source: "`-cu129` is the CUDA 12 opt-out from v0.20.0 (vllm-project/vllm PR #39878; \
                 NVIDIA/Model-Optimizer PR #2042); llm-d/llm-d-kv-cache PR #584 pins \
                 `vllm/vllm-openai:v0.20.2-cu129`; vLLM publishes cu129 and cu130 builds only \
                 (vllm-project/vllm#42756); CUDA 12 runs on driver 525 and newer, as the build \
                 table's cu129 wheel",
    },
    Row {
        engine: "sglang",
        form: Form::Release,
        since: SGLANG_IMAGES_SINCE,
        until: "",
        variant: "cu130",
        registry: "docker.io",
        repository: "lmsysorg/sglang",
        tag: "v{v}-cu130",
        backend: Backend::Cuda {
            cuda: "13.0",
            min_driver: MIN_DRIVER_FOR_CUDA13,
        },
        platforms: BOTH,
        source: "SGLang v0.5.11's release notes: CUDA 13.0 the default across SGLang, \
                 sgl-kernel and Docker images (quoted in gpustack/gpustack#5285); \
                 sgl-project/sglang .github/workflows/_docker-build-and-publish.yml builds the \
                 cu130 image on CUDA 13.0.1 for linux/amd64 and linux/arm64, and \
                 release-docker.yml at v0.5.18 tags it `v0.5.18` and `v0.5.18-cu130`; CUDA 13 \
                 needs driver 580",
    },
    Row {
        engine: "sglang",
        form: Form::Release,
        since: SGLANG_IMAGES_SINCE,
        until: SGLANG_CU129_UNTIL,
        variant: "cu129",
        registry: "docker.io",
        repository: "lmsysorg/sglang",
        tag: "v{v}-cu129",
        backend: Backend::Cuda {
            cuda: "12.9",
            min_driver: MIN_DRIVER_FOR_CUDA12,
        },
        platforms: BOTH,
        source: "sgl-project/sglang .github/workflows/_docker-build-and-publish.yml builds a cu129 \
                 image on CUDA 12.9.1 beside the cu130 one, for linux/amd64 and linux/arm64; \
                 release-docker.yml at v0.5.18 tags it `v0.5.18-cu129` (its tag_config, quoted \
                 from the tag in a deployment's notes of 2026-09-20), as release-docker-runtime.yml \
                 tags `v{version}-cu129-runtime`; PR #38404 (2026-09-10) retired the CUDA 12 lane: \
                 v0.5.19 is the last release with one. CUDA 12 runs on driver 525 and newer",
    },
    llamacpp(
        Form::Build,
        "cuda13",
        "server-cuda13-{v}",
        CUDA13,
        LLAMACPP_CUDA13,
    ),
    llamacpp(
        Form::Build,
        "cuda",
        "server-cuda-{v}",
        CUDA12_PTX,
        LLAMACPP_CUDA12,
    ),
    llamacpp(
        Form::Build,
        "vulkan",
        "server-vulkan-{v}",
        Backend::Vulkan,
        LLAMACPP_VULKAN,
    ),
    llamacpp(Form::Build, "cpu", "server-{v}", Backend::Cpu, LLAMACPP_CPU),
    llamacpp(
        Form::SemVer,
        "cuda13",
        "server-cuda13-{v}",
        CUDA13,
        LLAMACPP_CUDA13,
    ),
    llamacpp(
        Form::SemVer,
        "cuda",
        "server-cuda-{v}",
        CUDA12_PTX,
        LLAMACPP_CUDA12,
    ),
    llamacpp(
        Form::SemVer,
        "vulkan",
        "server-vulkan-{v}",
        Backend::Vulkan,
        LLAMACPP_VULKAN,
    ),
    llamacpp(
        Form::SemVer,
        "cpu",
        "server-{v}",
        Backend::Cpu,
        LLAMACPP_CPU,
    ),
];

/// The sources every llama.cpp row shares, said with its own.
pub(super) fn source_of(row: &Row) -> String {
    if row.engine == "llamacpp" {
        format!("{}; {LLAMACPP_TAGS}", row.source)
    } else {
        row.source.to_string()
    }
}
