//! Why the table gives no build: either the engine is not meant for this
//! machine at all ([`RecipeError::NotHere`]), or something is wrong that an
//! operator should hear about. Each message says what the machine has and
//! what the build needs.

/// Why no build of an engine was given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RecipeError {
    /// The engine is not meant for this node, as opposed to one it should
    /// run on and cannot: vLLM on a machine with no GPU is not a fault, and
    /// is not reported as one.
    #[error("{reason}")]
    NotHere {
        /// Why, in words for the operator.
        reason: String,
    },

    /// No recipe has this name.
    #[error("llmgw does not know how to install {engine:?}; it knows {}", .known.join(", "))]
    UnknownEngine {
        /// The name asked for.
        engine: String,
        /// The engines the table has, to name in the message.
        known: Vec<String>,
    },

    /// `builds()` was asked for an engine installed from PyPI.
    #[error(
        "{engine} is installed from PyPI as a Python environment, not from release \
         archives; see its environments. The engines with release archives are {}",
        .archive_engines.join(", ")
    )]
    FromPyPI {
        /// The engine asked for.
        engine: String,
        /// The engines that do have release archives, to name in the message.
        archive_engines: Vec<String>,
    },

    /// `environments()` was asked for an engine published as release
    /// archives.
    #[error(
        "{engine} is installed from release archives, not as a Python environment; \
         the engines with Python environments are {}",
        .python_engines.join(", ")
    )]
    NotPython {
        /// The engine asked for.
        engine: String,
        /// The engines that do have Python environments, to name in the message.
        python_engines: Vec<String>,
    },

    /// The version is not a plain release name, so it could not be put into
    /// an asset name safely.
    #[error(
        "{version:?} is not a version of {engine}: a version is a release name of letters, \
         digits, '.', '-' and '+' that starts with a letter or digit, such as b6123 or 0.20.0"
    )]
    InvalidVersion {
        /// The engine asked for.
        engine: String,
        /// The version given (quoted escaped).
        version: String,
    },

    /// Every build of the engine was tried against this node and none fits;
    /// `reasons` says why each went.
    #[error(
        "no build of {what} runs on this node: {}",
        .reasons.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    NoBuildHere {
        /// The engine and version asked for.
        what: String,
        /// Why each build was not taken.
        reasons: Vec<Misfit>,
    },

    /// A variant chosen for the node names no build there is for it.
    #[error("{what} has no build {variant:?} here; it has {}", .available.join(", "))]
    UnknownVariant {
        /// The engine and version asked for.
        what: String,
        /// The variant chosen.
        variant: String,
        /// The variants there are builds of.
        available: Vec<String>,
    },

    /// An image variant the table holds, but not for this version: the
    /// publisher began or stopped it elsewhere.
    #[error(
        "{what}'s images have no {variant:?}: the table's {variant} images are of {held}; it \
         has {}",
        .available.join(", ")
    )]
    ImageVariantNotThen {
        /// The engine and version asked for.
        what: String,
        /// The variant chosen.
        variant: String,
        /// The versions that variant is held for (`0.5.11 to 0.5.19`).
        held: String,
        /// The variants there are images of for this version.
        available: Vec<String>,
    },

    /// The engine publishes nothing for this processor architecture.
    #[error(
        "{engine} publishes no Linux build for {}; it has builds for {}",
        or_unknown(.arch),
        .published.join(" and ")
    )]
    UnknownArch {
        /// The engine asked for.
        engine: String,
        /// The node's architecture as it named it (empty when unknown).
        arch: String,
        /// The architectures the engine has builds for.
        published: &'static [&'static str],
    },

    /// The node's oldest GPU is older than every build of the engine.
    #[error(
        "no {engine} is built for GPUs of compute capability {cc:.1} on {arch}; \
         the node serves llama.cpp models"
    )]
    NoBuildForGpu {
        /// The engine asked for.
        engine: String,
        /// The compute capability of the node's oldest GPU.
        cc: f64,
        /// The node's architecture.
        arch: String,
    },

    /// The image table has no row for this version of the engine.
    #[error("the recipe table has no image of {engine} {version}: {reason}")]
    NoImages {
        /// The engine asked for.
        engine: String,
        /// The version asked for.
        version: String,
        /// Which versions the table does hold, and what to do.
        reason: String,
    },

    /// The engine's images of this version are not built for the
    /// architecture.
    #[error("{what} publishes no image for {arch}; its images are for {published}")]
    NoImageForArch {
        /// The engine and version asked for.
        what: String,
        /// The architecture asked for.
        arch: String,
        /// The architectures its images are built for.
        published: String,
    },

    /// `builds()` found no build of the version for the architecture, on a
    /// machine with or without a GPU; `reasons` says why. A list of
    /// reasons, one per host kind tried, each said once: not one cause, so
    /// it is part of the message (as [`RecipeError::NoBuildHere`]'s).
    #[error(
        "no build of {engine} {version} for {arch}: {}",
        .reasons.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    NoBuild {
        /// The engine asked for.
        engine: String,
        /// The version asked for.
        version: String,
        /// The node's architecture.
        arch: String,
        /// Why each host kind has no build, each reason once.
        reasons: Vec<RecipeError>,
    },
}

impl RecipeError {
    /// Whether this is the node not being meant for the engine, rather than
    /// a failure: callers report it quietly, or not at all.
    pub fn is_not_here(&self) -> bool {
        matches!(self, RecipeError::NotHere { .. })
    }
}

fn or_unknown(s: &str) -> &str {
    if s.trim().is_empty() {
        "an unrecognised system"
    } else {
        s
    }
}

/// Why one build does not fit a node's NVIDIA side.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Misfit {
    /// The node's driver is older than the build needs.
    #[error("{what} needs NVIDIA driver {need} or newer; this node has {have}")]
    Driver {
        /// The build.
        what: String,
        /// The oldest driver major version it runs on.
        need: u64,
        /// The node's driver version, as it reported it.
        have: String,
    },
    /// The node's oldest GPU is older than the build has kernels for.
    #[error(
        "{what} has kernels for compute capability {need:.1} and newer; this node has {have:.1}"
    )]
    Capability {
        /// The build.
        what: String,
        /// The lowest compute capability it has kernels for.
        need: f64,
        /// The compute capability of the node's oldest GPU.
        have: f64,
    },
}
