//! `llmgw recipe`: asks the recipe table which builds of an engine exist,
//! and which of them a machine gets — the same answers the bundler and the
//! nodes work from, for checking them by hand.

use anyhow::Context;
use clap::{Args, Subcommand};
use llmgw_shared::recipe::{self, Build, Environment, Host};

use super::help;

mod images;
mod kernels;

#[derive(Subcommand, Debug)]
pub enum RecipeCommand {
    /// The builds a machine like the one described may run, best first, or
    /// why none can.
    #[command(after_help = help::after(help::CANDIDATES, help::RECIPE_EXIT_CODES))]
    Candidates(CandidatesArgs),
    /// Every build of an engine version published for an architecture: what
    /// an offline bundle carries (llama.cpp and uv only).
    #[command(after_help = help::after(help::BUILDS, help::RECIPE_EXIT_CODES))]
    Builds(BuildsArgs),
    /// Every Python environment of vLLM or SGLang a node of an architecture
    /// may be given: what an offline bundle carries for them.
    #[command(after_help = help::after_notes(
        help::ENVIRONMENTS,
        &format!("{}{}", help::ENVIRONMENTS_NOTES, help::RECIPE_EXIT_CODES)
    ))]
    Environments(BuildsArgs),
    /// The container images of vLLM, SGLang or llama.cpp's server published
    /// for an architecture, best first, with the CUDA and NVIDIA driver each
    /// needs: what `bundle create --engine-image` chooses from.
    #[command(after_help = help::after_notes(
        help::IMAGES,
        &format!("{}{}", help::IMAGES_NOTES, help::RECIPE_EXIT_CODES)
    ))]
    Images(images::ImagesArgs),
    /// A Hub kernel repository's build folders, and which node each loads
    /// on by the `kernels` client's rules: what `bundle create --kernel`
    /// chooses from (asks the Hub).
    #[command(after_help = help::after_notes(help::KERNELS, help::KERNELS_NOTES))]
    Kernels(kernels::KernelsArgs),
}

#[derive(Args, Debug)]
#[command(mut_arg("json", |a| a.help("Print a JSON array of builds instead of a table.")))]
pub struct CandidatesArgs {
    /// The engine: llamacpp, vllm, sglang or uv.
    pub engine: String,
    /// The engine's version, as its releases name it: b6123, 0.20.0.
    pub version: String,
    /// The machine's architecture, by Go's name: amd64 or arm64.
    #[arg(long, value_parser = parse_arch)]
    pub arch: String,
    /// The machine's NVIDIA driver version (550.54.15). Leave it out for a
    /// machine with no NVIDIA GPU.
    #[arg(long, value_parser = parse_driver)]
    pub driver: Option<String>,
    /// The compute capability of the machine's oldest NVIDIA GPU (8.6);
    /// unknown when left out.
    #[arg(long, value_parser = parse_compute_capability, requires = "driver")]
    pub cc: Option<f64>,
    /// Only this build (cuda-12.8, cu129), as chosen for a node.
    #[arg(long, value_name = "VARIANT")]
    pub variant: Option<String>,
    #[command(flatten)]
    pub output: super::OutputArg,
}

#[derive(Args, Debug)]
#[command(mut_arg("json", |a| a.help("Print a JSON array instead of a table.")))]
pub struct BuildsArgs {
    /// The engine: llamacpp or uv (builds), vllm or sglang (environments).
    pub engine: String,
    /// The engine's version, as its releases name it: b6123, 0.20.1.
    pub version: String,
    /// The architecture the builds are for, by Go's name: amd64 or arm64.
    #[arg(long, value_parser = parse_arch)]
    pub arch: String,
    #[command(flatten)]
    pub output: super::OutputArg,
}

pub fn run(cmd: RecipeCommand) -> anyhow::Result<()> {
    let (builds, json) = match cmd {
        RecipeCommand::Candidates(a) => {
            let host = Host {
                arch: a.arch,
                nvidia_driver: a.driver,
                min_compute_capability: a.cc.unwrap_or(0.0),
            };
            tracing::debug!(engine = %a.engine, version = %a.version, ?host, "candidates");
            let builds = recipe::candidates(&a.engine, &a.version, a.variant.as_deref(), &host)?;
            (builds, a.output.json)
        }
        RecipeCommand::Builds(a) => {
            tracing::debug!(engine = %a.engine, version = %a.version, arch = %a.arch, "builds");
            (
                recipe::builds(&a.engine, &a.version, &a.arch)?,
                a.output.json,
            )
        }
        RecipeCommand::Environments(a) => {
            tracing::debug!(engine = %a.engine, version = %a.version, arch = %a.arch, "environments");
            let envs = recipe::environments(&a.engine, &a.version, &a.arch)?;
            let out = if a.output.json {
                to_json(&envs)?
            } else {
                environments_table(&envs)
            };
            return super::print(&out);
        }
        RecipeCommand::Images(a) => return images::run(a),
        RecipeCommand::Kernels(a) => return kernels::run(a),
    };
    let out = if json {
        to_json(&builds)?
    } else {
        builds_table(&builds)
    };
    super::print(&out)
}

fn to_json<T: serde::Serialize>(items: &[T]) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(items).context("writing the answer as JSON")?;
    s.push('\n');
    Ok(s)
}

/// `--arch`: Go's names only, with the one to use for `uname -m`'s.
fn parse_arch(s: &str) -> Result<String, String> {
    match recipe::arch_problem(s) {
        None => Ok(s.to_string()),
        Some(problem) => Err(problem),
    }
}

/// `--driver`: a version as nvidia-smi prints it, 1 to 3 numbers with dots
/// (550, 550.54, 550.54.15); the recipe table's own check.
fn parse_driver(s: &str) -> Result<String, String> {
    match recipe::driver_problem(s) {
        None => Ok(s.to_string()),
        Some(problem) => Err(format!(
            "{problem}, or leave --driver out for a machine with no NVIDIA GPU"
        )),
    }
}

/// A compute capability is major.minor with one digit of minor, as NVIDIA
/// writes it: "8.6", "12.0", or "9" for 9.0.
fn parse_compute_capability(s: &str) -> Result<f64, String> {
    let (major, minor) = s.split_once('.').unwrap_or((s, "0"));
    let digits = |p: &str, max: usize| {
        !p.is_empty() && p.len() <= max && p.bytes().all(|b| b.is_ascii_digit())
    };
    if !digits(major, 2) || !digits(minor, 1) {
        return Err(format!(
            "{s:?} is not a compute capability; give major.minor as nvidia-smi \
             --query-gpu=compute_cap prints it, such as 8.6"
        ));
    }
    s.parse::<f64>()
        .map_err(|e| format!("{s:?} is not a compute capability: {e}"))
}

/// The builds as an aligned table, one build a row: what it is, what it
/// installs, what it computes with, and why it was chosen if not plainly.
fn builds_table(builds: &[Build]) -> String {
    let mut rows = vec![[
        "VARIANT".to_string(),
        "INSTALLS".to_string(),
        "GPU BACKEND".to_string(),
        "NOTE".to_string(),
    ]];
    for b in builds {
        rows.push([
            b.variant.clone(),
            installs(b),
            or_dash(&b.gpu_backend),
            b.note.clone(),
        ]);
    }
    table(&rows)
}

/// The environments, one a row: its name, what it installs, what the node
/// must have besides (OS packages, free disk), and why, if it is a fallback.
fn environments_table(envs: &[Environment]) -> String {
    let mut rows = vec![[
        "NAME".to_string(),
        "INSTALLS".to_string(),
        "NODE NEEDS".to_string(),
        "NOTE".to_string(),
    ]];
    for e in envs {
        let mut needs: Vec<String> = e
            .build
            .packages
            .iter()
            .map(|(family, names)| format!("{family}:{}", names.join(",")))
            .collect();
        if e.build.free_gb > 0 {
            needs.push(format!("{} GB free", e.build.free_gb));
        }
        if !e.manylinux.is_empty() {
            needs.push(format!(
                "glibc {}+ (manylinux_{})",
                e.manylinux.replace('_', "."),
                e.manylinux
            ));
        }
        rows.push([
            e.name.clone(),
            installs(&e.build),
            needs.join(" "),
            e.build.note.clone(),
        ]);
    }
    table(&rows)
}

/// Rows of cells as aligned columns.
fn table<R: AsRef<[String]>>(rows: &[R]) -> String {
    let columns = rows.iter().map(|r| r.as_ref().len()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.as_ref().get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (cell, w) in r.as_ref().iter().zip(&widths) {
            line.push_str(&format!("{cell:<w$}  "));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// What a build puts on the node: its release assets, or its Python
/// environment and where the engine in it comes from.
fn installs(b: &Build) -> String {
    if !b.assets.is_empty() {
        return b.assets.join(" ");
    }
    let mut what = format!("python {}", b.python);
    if let Some(w) = &b.wheel {
        what.push_str(&format!(
            " + {}*{} from {} {}",
            w.prefix, w.suffix, w.repo, w.tag
        ));
    }
    if !b.requirements.is_empty() {
        what.push_str(&format!(" + {}", b.requirements.join(" ")));
    }
    if !b.index_packages.is_empty() {
        what.push_str(&format!(
            " + {} from {}",
            b.index_packages.join(" "),
            b.extra_index
        ));
    }
    what
}

fn or_dash(s: &str) -> String {
    if s.is_empty() {
        "-".to_string()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::parse_compute_capability as cc;
    use super::{parse_arch, parse_driver};

    #[test]
    fn arches_are_go_names_and_others_get_a_hint() {
        assert_eq!(parse_arch("amd64").as_deref(), Ok("amd64"));
        assert_eq!(parse_arch("arm64").as_deref(), Ok("arm64"));
        assert!(parse_arch("x86_64").unwrap_err().contains("use amd64"));
        assert!(parse_arch("aarch64").unwrap_err().contains("use arm64"));
        assert!(
            parse_arch("riscv64")
                .unwrap_err()
                .contains("amd64 or arm64")
        );
    }

    #[test]
    fn drivers_are_dotted_numbers() {
        for good in ["550", "550.54", "550.54.15", "9999"] {
            assert_eq!(parse_driver(good).as_deref(), Ok(good));
        }
        for bad in [
            "",
            "abc",
            "550.",
            ".54",
            "550.54.15.1",
            "550 ",
            "v550",
            "5-5",
        ] {
            let e = parse_driver(bad).unwrap_err();
            assert!(
                e.contains("is not an NVIDIA driver version"),
                "{bad:?}: {e}"
            );
        }
    }

    #[test]
    fn compute_capabilities_are_major_dot_minor() {
        assert_eq!(cc("8.6"), Ok(8.6));
        assert_eq!(cc("12.0"), Ok(12.0));
        assert_eq!(cc("9"), Ok(9.0));
        for bad in [
            "", "8.", ".6", "8.65", "abc", "8,6", "-1", "123.0", "NaN", "inf",
        ] {
            let e = cc(bad).unwrap_err();
            assert!(e.contains("is not a compute capability"), "{bad:?}: {e}");
        }
    }
}
