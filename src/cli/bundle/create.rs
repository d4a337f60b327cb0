//! `llmgw bundle create`: the flags, and the run that hands them to
//! llmgw-bundler. stdout gets the result (the manifest sha256, or the
//! `--json` summary); stderr gets progress and the human summary.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use llmgw_bundler::{CreateReport, CreateSettings, CreateSpec, Options, SpecEnv};
use llmgw_bundler::{RetryPolicy, Token};

use crate::cli::UsageError;

#[derive(Args, Debug)]
#[command(
    after_help = crate::cli::help::after_notes(crate::cli::help::CREATE, crate::cli::help::CREATE_NOTES),
    mut_arg("json", |a| a.help(
        "Print a JSON summary (manifest sha256, artifacts, bytes, gaps) on stdout."
    ))
)]
pub struct CreateArgs {
    /// The bundle to write: PATH.tar, PATH.tar.zst, or a directory.
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// Node architectures to carry builds for: amd64, arm64 (comma-separated or repeated).
    #[arg(long, value_name = "ARCH,...", value_delimiter = ',')]
    pub arch: Vec<String>,
    /// llmgw's own release to carry (tag VERSION, else vVERSION); needs --trust.
    #[arg(long, value_name = "VERSION")]
    pub llmgw: Option<String>,
    /// Where llmgw's releases are published [default: llmgw/llmgw].
    #[arg(long, value_name = "OWNER/REPO")]
    pub llmgw_repo: Option<String>,
    /// GitHub-compatible API of llmgw's release server (Gitea's works) [default: --github-api].
    #[arg(long, value_name = "URL")]
    pub llmgw_api: Option<String>,
    /// minisign public key that must have signed llmgw's SHA256SUMS (repeatable).
    #[arg(long, value_name = "KEY.pub")]
    pub trust: Vec<PathBuf>,
    /// An engine of the recipe table at a version, e.g. llamacpp=b6123, llamacpp=v0.3.0,
    /// uv=0.12.20; llamacpp=latest or uv=latest is resolved now to the newest stable release
    /// and recorded as its tag; a Python engine may name one variant, vllm=0.33.0:cu13 (only
    /// that environment; `llmgw recipe environments` lists them) (repeatable).
    #[arg(long = "engine", value_name = "NAME=VERSION[:VARIANT]")]
    pub engines: Vec<String>,
    /// A Hugging Face model, e.g. acme/tiny@main or org/m:*.Q4_K_M.gguf,config.json (repeatable).
    #[arg(long = "model", value_name = "REPO[@REVISION][:GLOB,...]")]
    pub models: Vec<String>,
    /// A Hugging Face dataset, same syntax as --model (repeatable).
    #[arg(long = "dataset", value_name = "REPO[@REVISION][:GLOB,...]")]
    pub datasets: Vec<String>,
    /// A Hub kernel repository (the `kernels` library's), at a vN branch or revision [default:
    /// its newest vN], with only the build folders named, else those the bundle's Python
    /// environments load, e.g. kernels-community/activation@v1 (repeatable).
    #[arg(long = "kernel", value_name = "REPO[@vN|@REV][:VARIANT,...]")]
    pub kernels: Vec<String>,
    /// A kernels.lock (`kernels lock`): every kernel it pins, at its commit.
    #[arg(long, value_name = "PATH")]
    pub kernels_lock: Option<PathBuf>,
    /// GitHub API for engine releases [default: https://api.github.com].
    #[arg(long, value_name = "URL")]
    pub github_api: Option<String>,
    /// Hugging Face Hub [default: $HF_ENDPOINT, else https://huggingface.co].
    #[arg(long, value_name = "URL")]
    pub hf_endpoint: Option<String>,
    /// Download cache, reused by later runs; when given, .tar/.tar.zst runs keep every blob there
    /// too (written twice) [default: $XDG_CACHE_HOME/llmgw, else ~/.cache/llmgw].
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// Parallel downloads [default: 4].
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// zstd level of a .tar.zst, 1 to 19 [default: 3]; parts that do not compress are stored.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub zstd_level: Option<i32>,
    /// Record assets missing from their release as gaps in the manifest instead of failing.
    #[arg(long)]
    pub allow_missing: bool,
    /// Sign the manifest with this minisign secret key (as `minisign -G` writes it; an
    /// encrypted one reads LLMGW_SIGN_PASSWORD or asks on the terminal).
    #[arg(long, value_name = "KEY")]
    pub sign_key: Option<PathBuf>,
    /// The series the bundle belongs to [default: default].
    #[arg(long, value_name = "NAME")]
    pub channel: Option<String>,
    /// The bundle's place in its channel [default with --sign-key: the number after KEY.sequence].
    #[arg(long, value_name = "N")]
    pub sequence: Option<u64>,
    /// When import starts warning (or refusing): a duration after creation (90d, 12h, 2w) or a
    /// UTC time (2027-03-01T00:00:00Z).
    #[arg(long, value_name = "DURATION|TIME")]
    pub expires: Option<String>,
    #[command(flatten)]
    pub output: crate::cli::OutputArg,
    /// A container image, e.g. vllm/vllm-openai:v0.34.0 or ghcr.io/acme/app@sha256:HEX,
    /// normalized as Docker does; or NAME:TAG=oci-layout:PATH[:REF], an image from a local
    /// OCI layout (REF picks an org.opencontainers.image.ref.name of its index.json; the only
    /// image by default) served as NAME:TAG with no registry host. For an index, the --arch
    /// platforms and their attestations are carried (repeatable).
    #[arg(long = "image", value_name = "REF")]
    pub images: Vec<String>,
    /// A Helm chart: in a registry, oci://REGISTRY/REPOSITORY:VERSION, or packaged
    /// on disk, PATH.tgz (name and version from its Chart.yaml; carried as helm push
    /// makes it, served as oci://MIRROR/charts/NAME) (repeatable).
    #[arg(long = "chart", value_name = "oci://REGISTRY/REPO:VERSION|PATH.tgz")]
    pub charts: Vec<String>,
    /// A registry to ask over plain HTTP, HOST:PORT (a site's own build registry;
    /// repeatable).
    #[arg(long = "insecure-registry", value_name = "HOST:PORT")]
    pub insecure_registries: Vec<String>,
    /// Ask the registry HOST at URL instead: a site's pull-through cache, a test's
    /// registry. Every digest is checked the same, and the image is recorded and served
    /// under HOST, e.g. docker.io=https://cache.site.example (repeatable).
    #[arg(long = "registry", value_name = "HOST=URL")]
    pub registries: Vec<String>,
    /// An engine's container images from the recipe table, for every --arch, each under
    /// its publisher's name (docker.io/vllm/vllm-openai:v0.34.0-cu129): ENGINE=VERSION
    /// the best image a node on --driver runs, or without --driver every image the table
    /// lists; :VARIANT (cu130, cu129) only that one; llamacpp=b9300 or =v0.4.1 its server
    /// images (with --driver, the CPU server too). See `llmgw recipe images` (repeatable).
    #[arg(long = "engine-image", value_name = "ENGINE=VERSION[:VARIANT]")]
    pub engine_images: Vec<String>,
    /// The site's newest NVIDIA driver (575.57.08): --engine-image carries the best image a
    /// node on it runs. Left out: every image the table lists for the version.
    #[arg(long, value_name = "VERSION")]
    pub driver: Option<String>,
    /// A site's own Python environment, resolved per --arch, served at
    /// /pypi/NAME-ARCH/simple/ (repeatable); NAME=PATH/uv.lock or
    /// NAME=PATH/pylock.toml carries exactly what that lock names instead.
    #[arg(long = "python-env", value_name = "NAME=REQ[,REQ...]|NAME=LOCK")]
    pub python_envs: Vec<String>,
    /// The simple API Python packages come from [default: https://pypi.org/simple].
    #[arg(long, value_name = "URL")]
    pub pypi: Option<String>,
    /// Use URL for an index the recipe names, e.g. pytorch-cu129=URL (repeatable).
    #[arg(long = "index", value_name = "NAME=URL")]
    pub indexes: Vec<String>,
    /// The uv that resolves Python environments [default: uv on PATH].
    #[arg(long, value_name = "PATH")]
    pub uv: Option<PathBuf>,
    /// GitHub's raw file server, for uv's interpreter list [default: https://raw.githubusercontent.com].
    #[arg(long, value_name = "URL")]
    pub github_raw: Option<String>,
    /// The manylinux glibc tag nodes' wheels must fit [default: the recipe table's figure for
    /// each engine version (`llmgw recipe environments`), 2_28 for --python-env].
    #[arg(long, value_name = "2_NN")]
    pub manylinux: Option<String>,
    /// Plan everything (llmgw's release, engine builds, Python environments, Hub files,
    /// images and charts)
    /// and print what would be fetched and carried, with sizes; download nothing large and
    /// write no bundle. Works with --have, --base and --need.
    #[arg(long)]
    pub dry_run: bool,
    /// A have-list from `llmgw mirror have` (repeatable): make a delta that carries only
    /// the blobs none of the lists holds; the others become delta.prerequisites.
    #[arg(long, value_name = "have.json")]
    pub have: Vec<PathBuf>,
    /// A manifest.json of a bundle the site imported (repeatable): like --have, for sites
    /// where nothing may leave the secure side.
    #[arg(long, value_name = "MANIFEST.json")]
    pub base: Vec<PathBuf>,
    /// A need-list from `llmgw bundle import --need-out`: make a repair bundle that carries
    /// exactly those blobs (give the same request that made the delta).
    #[arg(long, value_name = "need.json", conflicts_with_all = ["have", "base"])]
    pub need: Option<PathBuf>,
    /// Write volumes of at most SIZE bytes instead of one bundle (--out NAME.tar gives
    /// NAME.v0001-of-000N.tar … and NAME.sha256): bytes with K/M/G/T suffixes, or fat32,
    /// dvd5, dvd9, bd25, bd50.
    #[arg(long, value_name = "SIZE")]
    pub volume_size: Option<String>,
    /// With --volume-size: blobs larger than this are cut into chunks of this size
    /// [default: 1G, or a quarter of a smaller volume].
    #[arg(long, value_name = "SIZE")]
    pub chunk_size: Option<String>,
    /// With --volume-size: add K parity volumes (Reed–Solomon), so that any K lost or
    /// damaged volumes are rebuilt at import.
    #[arg(long, value_name = "K")]
    pub parity: Option<u32>,
    /// A TOML file with the same settings; flags override it.
    #[arg(long, value_name = "FILE")]
    pub spec: Option<PathBuf>,
    /// A want-list from `llmgw mirror misses --out`: also carry what nodes asked the mirror
    /// for and it did not hold, where its upstream has it (a Hub file or repository at its
    /// revision, an engine's release asset, a project added to an environment this request
    /// carries); each want not met is a gap saying why.
    #[arg(long, value_name = "want.json")]
    pub want: Option<PathBuf>,
    /// Where the nodes' CPython comes from: carried (the python-build-standalone build the
    /// carried uv installs) or none (the nodes bring their own CPython of each environment's
    /// version; recorded in the manifest) [default: carried].
    #[arg(long, value_name = "carried|none")]
    pub python_interpreter: Option<String>,
    /// A requirement laid over every upstream pin of the environments ENV names (uv's
    /// overrides), e.g. vllm=flashinfer-python==0.7.4; ENV is an environment's name, with or
    /// without its -ARCH, or its engine; recorded in the manifest (repeatable).
    #[arg(long = "override", value_name = "ENV=REQ")]
    pub overrides: Vec<String>,
    /// A bound on what the resolver may pick for the environments ENV names (uv's
    /// constraints), e.g. tools=numpy<2.3; recorded in the manifest (repeatable).
    #[arg(long = "constraint", value_name = "ENV=REQ")]
    pub constraints: Vec<String>,
    /// The CPython version of the --python-env environments, e.g. 3.11 [default: 3.12].
    #[arg(long, value_name = "VERSION")]
    pub python: Option<String>,
    /// Leave out the files the engines of the carried environments fetch at run time
    /// (gpt-oss's tiktoken encodings, which Harmony loads in vLLM and SGLang; FlashInfer's
    /// cubin wheels and CuTe DSL FMHA kernels); each is recorded in the manifest as a gap.
    #[arg(long)]
    pub no_extras: bool,
    /// Fetch HOST's runtime extras from URL instead (a site's own copy, a test's fixture):
    /// URL/PATH for each file, checked against the same digests the recipe table pins;
    /// for flashinfer.ai, FlashInfer's per-CUDA index of flashinfer-jit-cache is read at
    /// URL/whl/cuXYZ (repeatable).
    #[arg(long = "extras-base", value_name = "HOST=URL")]
    pub extras_bases: Vec<String>,
    /// Who may sign a release repository's assets, besides the signers the recipe table
    /// names: github:OWNER/REPO=ISSUER,IDENTITY (an IDENTITY ending in @ admits any ref of
    /// that workflow); or a PyPI project's files (PEP 740 attestations), instead of the
    /// table's or the Trusted Publisher PyPI names: pypi:PROJECT=ISSUER,IDENTITY. Its
    /// signatures are then required (repeatable).
    #[arg(long = "identity", value_name = "SOURCE=ISSUER,IDENTITY")]
    pub identities: Vec<String>,
    /// The Sigstore trusted_root.json publishers' signatures are verified against
    /// (a site's own, or a current copy); carried in the bundle [default: the copy this
    /// binary embeds].
    #[arg(long = "trusted-root", value_name = "FILE")]
    pub trusted_root: Option<PathBuf>,
    /// Carry an artifact whose policy expects a publisher's signature that it does not
    /// have, recording it as unsigned in the manifest and the SBOM.
    #[arg(long)]
    pub allow_unsigned_upstream: bool,
    /// For tests only (hidden): a JSON file of FlashInfer CuTe DSL FMHA pins for releases
    /// the recipe table lacks, so a loopback fixture's checksums.txt can be checked; a
    /// release the table pins is refused in it.
    #[arg(long = "flashinfer-dsl-pins", value_name = "FILE", hide = true)]
    pub dsl_pins: Option<std::path::PathBuf>,
    /// A line per file fetched, besides the progress line.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// Once written, rehearse the bundle as `llmgw bundle rehearse` does (a throwaway store,
    /// the mirror on a private loopback, every request a node makes); exit 1 if a node would
    /// fail.
    #[arg(long)]
    pub rehearse: bool,
}

pub fn run(args: CreateArgs) -> anyhow::Result<()> {
    let json = args.output.json;
    let verbose = args.verbose;
    let rehearse = args.rehearse;
    let spec = CreateSpec::resolve(settings(args), &SpecEnv::from_process())?;
    let mut opts = options(verbose)?;
    opts.check = Some(std::sync::Arc::new(
        crate::cli::check_written::AsImportWould::of(
            spec.llmgw
                .as_ref()
                .map(|l| l.trust.as_slice())
                .unwrap_or_default(),
        )?,
    ));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    if spec.dry_run {
        let d = rt.block_on(llmgw_bundler::dry_run(&spec, &opts))?;
        return crate::cli::print(&if json {
            format!("{}\n", serde_json::to_string_pretty(&d)?)
        } else {
            d.to_text()
        });
    }
    let report = rt.block_on(async {
        tokio::select! {
            r = llmgw_bundler::create(&spec, &opts) => r.map_err(anyhow::Error::from),
            _ = tokio::signal::ctrl_c() => Err(stopped(&spec.out)),
        }
    });
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            // Downloads and the writer stop with the process; what they
            // wrote is what the next run carries on from.
            rt.shutdown_background();
            return Err(e);
        }
    };

    tell(&report);
    if json {
        let mut s = serde_json::to_string_pretty(&report)?;
        s.push('\n');
        crate::cli::print(&s)?;
    } else {
        crate::cli::print(&format!("{}\n", report.manifest_sha256))?;
    }
    if rehearse {
        rehearse_written(&spec, &report)?;
    }
    Ok(())
}

/// `--rehearse`: `llmgw bundle rehearse` of what was just written, its
/// report on stderr (stdout is the manifest sha256 or the JSON summary).
fn rehearse_written(spec: &CreateSpec, report: &CreateReport) -> anyhow::Result<()> {
    if !report.volumes.is_empty() {
        anyhow::bail!(
            "--rehearse: a bundle cut into volumes is rehearsed after `bundle import` joins \
             them; import the set into a scratch store, or make one bundle to rehearse"
        );
    }
    let exe = std::env::current_exe()?;
    let mut c = std::process::Command::new(exe);
    c.args(["bundle", "rehearse"])
        .arg(&report.out)
        .args(["--sha256", report.manifest_sha256.as_str()]);
    for key in spec.llmgw.iter().flat_map(|l| &l.trust) {
        c.arg("--trust").arg(key);
    }
    let o = c.output()?;
    eprint!("{}", String::from_utf8_lossy(&o.stdout));
    eprint!("{}", String::from_utf8_lossy(&o.stderr));
    if !o.status.success() {
        anyhow::bail!(
            "--rehearse: the bundle {} was written, but a node would fail with it (the \
             report above says where and how to fix it)",
            report.out.display()
        );
    }
    Ok(())
}

/// The run's options from the environment: `SOURCE_DATE_EPOCH`, `HF_TOKEN`,
/// the signing key's password, and a progress bar on a terminal (plain
/// lines in a log).
fn options(verbose: bool) -> anyhow::Result<Options> {
    let source_date_epoch = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) if !v.trim().is_empty() => Some(v.trim().parse::<u64>().map_err(|_| {
            UsageError(format!(
                "SOURCE_DATE_EPOCH={v:?}: expected a number of seconds since 1970"
            ))
        })?),
        _ => None,
    };
    Ok(Options {
        progress: std::sync::Arc::new(crate::cli::progress::Fetching::new(verbose)),
        hf_token: std::env::var("HF_TOKEN").ok().and_then(Token::new),
        retry: RetryPolicy::default(),
        source_date_epoch,
        password: sign_password(),
        check: None,
    })
}

/// What the run did, on stderr: what it left out, the delta or repair,
/// the volumes and the bundle written, its signer, and the manifest's
/// sha256 to carry apart.
fn tell(report: &CreateReport) {
    if !report.gaps.is_empty() {
        eprintln!(
            "{} asked for and not carried (--allow-missing or --want; recorded in the manifest):",
            report.gaps.len()
        );
        for g in &report.gaps {
            eprintln!(
                "  missing: {}: {}",
                llmgw_shared::shown(&g.what),
                llmgw_shared::shown_message(&g.reason)
            );
        }
    }
    if report.prerequisites > 0 {
        eprintln!(
            "delta: {} ({} bytes) the site holds are not carried (delta.prerequisites); \
             import checks the store has them",
            llmgw_shared::plural(report.prerequisites, "blob", "blobs"),
            report.prerequisite_bytes
        );
    }
    if report.repairs > 0 {
        eprintln!(
            "repair bundle: {} for the bundle that needed them; import it, then that bundle",
            llmgw_shared::plural(report.repairs, "blob", "blobs")
        );
    }
    for v in &report.volumes {
        eprintln!("wrote volume {}", v.display());
    }
    eprintln!(
        "wrote {} ({}, {} bytes; {} downloaded, {} from the cache or an earlier run)",
        if report.volumes.is_empty() {
            report.out.display().to_string()
        } else {
            llmgw_shared::plural(report.volumes.len(), "volume", "volumes")
        },
        llmgw_shared::plural(report.blobs, "file", "files"),
        report.bytes,
        report.bytes_downloaded,
        report.bytes_reused
    );
    if let Some(key) = &report.signed_by {
        eprintln!(
            "signed by key {key}: channel {}, sequence {}",
            report.channel,
            report.sequence.unwrap_or_default()
        );
    }
    eprintln!(
        "manifest sha256 {} (also in {}): carry it apart from the bundle; import refuses the bundle without it",
        report.manifest_sha256,
        report.sha256_file.display()
    );
}

/// The command line's layer of the settings; the spec file's lies under
/// it, merged by `CreateSpec::resolve`.
fn settings(args: CreateArgs) -> CreateSettings {
    CreateSettings {
        spec: args.spec,
        out: args.out,
        arch: args.arch,
        llmgw: args.llmgw,
        llmgw_repo: args.llmgw_repo,
        llmgw_api: args.llmgw_api,
        trust: args.trust,
        engines: args.engines,
        models: args.models,
        datasets: args.datasets,
        kernels: args.kernels,
        kernels_lock: args.kernels_lock,
        github_api: args.github_api,
        hf_endpoint: args.hf_endpoint,
        cache: args.cache,
        jobs: args.jobs,
        zstd_level: args.zstd_level,
        allow_missing: args.allow_missing,
        series: llmgw_bundler::SeriesSpec {
            sign_key: args.sign_key,
            channel: args.channel,
            sequence: args.sequence,
            expires: args.expires,
        },
        python_envs: args.python_envs,
        pypi: args.pypi,
        indexes: args.indexes,
        uv: args.uv,
        manylinux: args.manylinux,
        github_raw: args.github_raw,
        dry_run: args.dry_run,
        delta: llmgw_bundler::DeltaSpec {
            have: args.have,
            base: args.base,
            need: args.need,
        },
        volume_size: args.volume_size,
        chunk_size: args.chunk_size,
        parity: args.parity,
        images: args.images,
        charts: args.charts,
        insecure_registries: args.insecure_registries,
        registries: args.registries,
        engine_images: args.engine_images,
        driver: args.driver,
        want: args.want,
        python_interpreter: args.python_interpreter,
        overrides: args.overrides,
        constraints: args.constraints,
        python: args.python,
        no_extras: args.no_extras,
        extras_bases: args.extras_bases,
        identities: args.identities,
        trusted_root: args.trusted_root,
        allow_unsigned_upstream: args.allow_unsigned_upstream,
        dsl_pins: args.dsl_pins,
    }
}

/// Ctrl-C: the run stops where it is, and says how to carry on.
fn stopped(out: &std::path::Path) -> anyhow::Error {
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned());
    let partial = name.map(|n| out.with_file_name(format!(".{n}.partial")));
    let kept = match partial {
        Some(p) if p.is_file() => format!(" (what was written so far is in {})", p.display()),
        _ => String::new(),
    };
    crate::cli::Interrupted(format!(
        "stopped; run the same command again to resume{kept}"
    ))
    .into()
}

/// Where the password of an encrypted signing key comes from:
/// `LLMGW_SIGN_PASSWORD`, else the terminal when there is one.
pub fn sign_password() -> llmgw_shared::Password {
    use llmgw_shared::Password;
    match std::env::var("LLMGW_SIGN_PASSWORD") {
        Ok(p) => Password::Given(p),
        Err(_) if std::io::stdin().is_terminal() => Password::Prompt,
        Err(_) => Password::Unavailable,
    }
}
