//! `llmgw recipe kernels`: a Hub kernel repository's build folders, and
//! which node each loads on — by the `kernels` client's own rules, the
//! ones `bundle create --kernel` chooses folders by. Asks the Hub (or
//! `--hf-endpoint`), as create does.

use clap::Args;
use llmgw_shared::kernels::{Target, Variant};

#[derive(Args, Debug)]
#[command(mut_arg("json", |a| a.help("Print a JSON array of folders instead of a table.")))]
pub struct KernelsArgs {
    /// The kernel repository, at a vN branch or revision:
    /// kernels-community/activation@v1 [default: its newest vN branch].
    #[arg(value_name = "REPO[@vN|@REV]")]
    pub repo: String,
    /// A node to check each folder against, as a miss records it:
    /// TORCH,BACKEND,CPU, e.g. torch2.11,cu130,x86_64 or none,cpu,aarch64 (repeatable).
    #[arg(long = "node", value_name = "TORCH,BACKEND,CPU", value_parser = parse_node)]
    pub nodes: Vec<Target>,
    /// The Hub [default: $HF_ENDPOINT, else https://huggingface.co].
    #[arg(long, value_name = "URL")]
    pub hf_endpoint: Option<String>,
    #[command(flatten)]
    pub output: crate::cli::OutputArg,
}

fn parse_node(s: &str) -> Result<Target, String> {
    Target::parse_short(s).ok_or_else(|| {
        "expected TORCH,BACKEND,CPU such as torch2.11,cu130,x86_64 or none,cpu,aarch64".to_string()
    })
}

/// One folder and what each node makes of it.
#[derive(serde::Serialize)]
struct Row {
    folder: String,
    /// For each `--node` in order: `loads`, or the client's reason not to.
    nodes: Vec<String>,
}

/// Asks the Hub for the folders and prints them, with each node's verdict.
pub fn run(a: KernelsArgs) -> anyhow::Result<()> {
    let (id, revision) = a.repo.split_once('@').unwrap_or((&a.repo, ""));
    llmgw_shared::check_repo_id("kernel repository id", id)
        .map_err(|e| crate::cli::UsageError(e.to_string()))?;
    let endpoint = a
        .hf_endpoint
        .or_else(|| std::env::var("HF_ENDPOINT").ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "https://huggingface.co".to_string());
    let token = std::env::var("HF_TOKEN")
        .ok()
        .and_then(llmgw_bundler::Token::new);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let builds = rt.block_on(llmgw_bundler::kernels::kernel_builds(
        endpoint.trim_end_matches('/'),
        token,
        llmgw_bundler::RetryPolicy::default(),
        id,
        revision,
    ))?;
    let rows: Vec<Row> = builds
        .variants
        .iter()
        .map(|v| Row {
            folder: v.name.clone(),
            nodes: a.nodes.iter().map(|n| verdict(n, v)).collect(),
        })
        .collect();
    if a.output.json {
        return crate::cli::print(&super::to_json(&rows)?);
    }
    eprintln!("{id}@{} is commit {}", builds.revision, builds.commit);
    let mut table = vec![
        std::iter::once("FOLDER".to_string())
            .chain(a.nodes.iter().map(Target::short))
            .collect::<Vec<_>>(),
    ];
    table.extend(rows.into_iter().map(|r| [vec![r.folder], r.nodes].concat()));
    crate::cli::print(&super::table(&table))
}

fn verdict(node: &Target, v: &Variant) -> String {
    match node.accepts(v) {
        Ok(()) => "loads".to_string(),
        Err(why) => format!("no: {why}"),
    }
}
