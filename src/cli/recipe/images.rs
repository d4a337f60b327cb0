//! `llmgw recipe images`: the container images of an engine version the
//! recipe table lists for an architecture, best first, with the CUDA and
//! the NVIDIA driver each needs (`-` for a Vulkan or CPU image) — what
//! `bundle create --engine-image` chooses from, for checking it by hand.

use clap::Args;
use llmgw_shared::recipe::{self, EngineImage};

#[derive(Args, Debug)]
#[command(mut_arg("json", |a| a.help("Print a JSON array of images instead of a table.")))]
pub struct ImagesArgs {
    /// The engine: vllm, sglang or llamacpp.
    pub engine: String,
    /// The engine's version, as its releases name it: 0.34.0, 0.5.14;
    /// llama.cpp's build b9300 or SemVer release v0.4.1.
    pub version: String,
    /// The nodes' architecture, by Go's name: amd64 or arm64.
    #[arg(long, value_parser = super::parse_arch)]
    pub arch: String,
    /// A node's NVIDIA driver (575.57.08): only the images it runs, best
    /// first. Left out: every image the table lists.
    #[arg(long, value_parser = super::parse_driver)]
    pub driver: Option<String>,
    /// Only this variant (cu130, cu129; llama.cpp's cuda13, cuda, vulkan, cpu).
    #[arg(long, value_name = "VARIANT")]
    pub variant: Option<String>,
    #[command(flatten)]
    pub output: crate::cli::OutputArg,
}

/// Prints the images, as a table or JSON.
pub fn run(a: ImagesArgs) -> anyhow::Result<()> {
    tracing::debug!(engine = %a.engine, version = %a.version, arch = %a.arch,
        driver = ?a.driver, "images");
    let images = recipe::images(
        &a.engine,
        &a.version,
        a.variant.as_deref(),
        &a.arch,
        a.driver.as_deref(),
    )?;
    let out = if a.output.json {
        super::to_json(&images)?
    } else {
        table(&images)
    };
    crate::cli::print(&out)
}

/// One image a row: its variant, its reference, its CUDA, the driver it
/// needs, the platforms it is built for.
fn table(images: &[EngineImage]) -> String {
    let mut rows = vec![[
        "VARIANT".to_string(),
        "IMAGE".to_string(),
        "CUDA".to_string(),
        "DRIVER".to_string(),
        "PLATFORMS".to_string(),
    ]];
    for i in images {
        rows.push([
            i.variant.clone(),
            i.reference(),
            if i.cuda.is_empty() {
                "-".to_string()
            } else {
                i.cuda.clone()
            },
            if i.min_driver == 0 {
                "-".to_string()
            } else {
                format!(">= {}", i.min_driver)
            },
            i.platforms
                .iter()
                .map(|p| format!("linux/{p}"))
                .collect::<Vec<_>>()
                .join(","),
        ]);
    }
    super::table(&rows)
}
