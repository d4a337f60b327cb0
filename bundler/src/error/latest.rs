//! Why `--engine ENGINE=latest` found no release to carry: the upstream
//! lists none of the forms the engine's tags take, or its newest lacks
//! assets the recipe table names.

/// `--engine ENGINE=latest` could not be made a concrete release.
#[derive(Debug, thiserror::Error)]
pub enum LatestError {
    /// No stable release among those listed has a tag of the engine's forms.
    #[error(
        "--engine {engine}=latest: {repo} lists no stable release tagged as {forms} among its \
         newest {looked}; name a release (--engine {engine}=TAG)"
    )]
    NoRelease {
        /// The engine.
        engine: String,
        /// Its release repository.
        repo: String,
        /// The tag forms looked for (`v0.3.0 or b8000`).
        forms: &'static str,
        /// How many releases were looked at.
        looked: usize,
    },
    /// The newest release lacks assets the recipe table names for it.
    #[error(
        "--engine {engine}=latest: the newest release of {repo}, {tag}, lacks what the recipe \
         table expects of it: {}; name a release that has them (--engine {engine}=TAG), or \
         wait for its upload to finish",
        .missing.join(", ")
    )]
    Incomplete {
        /// The engine.
        engine: String,
        /// Its release repository.
        repo: String,
        /// The release `latest` resolved to.
        tag: String,
        /// The asset names the table expects and the release lacks.
        missing: Vec<String>,
    },
}
