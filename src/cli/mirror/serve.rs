//! `llmgw mirror serve`: the store over GitHub-release and Hugging Face Hub
//! compatible HTTP.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use llmgw_mirror::{BucketServing, ServeConfig, StoreLocation, TlsFiles, start};
use llmgw_mirror::{ConnLimits, Held, MMAP_THRESHOLD, default_max_connections};

use crate::cli::StoreArg;
use crate::cli::help;

/// How a GET of a blob in a bucket is answered.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlobDelivery {
    Proxy,
    Presigned,
}

/// Serve the store to nodes: GitHub releases, the Hugging Face Hub API,
/// `/v1/index`, `/healthz`, `/readyz` and `/metrics`.
#[derive(Args, Debug)]
#[command(after_help = help::after(help::SERVE, help::SERVE_EXIT_CODES))]
pub struct ServeArgs {
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub s3: crate::cli::s3::S3Arg,
    /// With --store s3://…: how often the bucket's manifests are listed, so this replica
    /// learns of bundles another import added.
    #[arg(long, default_value_t = 5, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub s3_poll_seconds: u64,
    /// With --store s3://…: how a GET of a file is answered — `proxy` streams it through
    /// the mirror (nodes talk to the mirror only, the token applies); `presigned` answers
    /// 307 to a short-lived presigned URL on --s3-public-endpoint (HEAD and every JSON
    /// answer still come from the mirror).
    #[arg(long, value_enum, default_value_t = BlobDelivery::Proxy)]
    pub blob_delivery: BlobDelivery,
    /// With --blob-delivery presigned: the S3 endpoint nodes reach, which presigned URLs
    /// point at (default: --s3-endpoint).
    #[arg(long, value_name = "URL")]
    pub s3_public_endpoint: Option<String>,
    /// With --blob-delivery presigned: how long a presigned URL stays valid.
    #[arg(long, default_value_t = 300, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=604800))]
    pub presign_seconds: u64,
    /// With --store s3://… and --blob-delivery proxy: a folder this replica keeps whole
    /// blobs in once read from the bucket (checked against their sha256), so many nodes
    /// pulling one file cost about one read of it from the bucket.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// With --cache-dir: the most bytes the cache holds (K, M, G, T: powers of 1024). When
    /// a new blob would pass it, the least recently used blobs are evicted, whole; a blob
    /// larger than this is streamed from the bucket and never cached. Unbounded when unset.
    #[arg(long, value_name = "SIZE", requires = "cache_dir", value_parser = parse_cache_size)]
    pub cache_size: Option<u64>,
    /// Address and port to listen on: an IP address (0.0.0.0 for every interface) or a
    /// host name that resolves to one (localhost:8080).
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR:PORT", value_parser = parse_listen)]
    pub listen: SocketAddr,
    /// The base URL nodes reach this mirror at, used in the URLs of JSON
    /// answers; without it, X-Forwarded-Proto/Host or Host are used.
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// TLS certificate chain (PEM); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM); needs --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// A file holding the bearer token clients must send
    /// (`Authorization: Bearer <token>`; HF clients send HF_TOKEN). Off when unset.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Connections open at most; past it the one quiet longest is closed
    /// (default: half the file descriptors the process may open).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: Option<u32>,
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    // A fixed mmap threshold (see MMAP_THRESHOLD for why).
    // SAFETY: mallopt only sets an allocator parameter; it is called before
    // any thread of the server starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(async move {
        let mut location = args.store.location(&args.s3);
        match &mut location {
            StoreLocation::Folder(_) if args.blob_delivery == BlobDelivery::Presigned => {
                return Err(crate::cli::UsageError(
                    "--blob-delivery presigned needs a store in a bucket (--store \
                     s3://BUCKET/PREFIX)"
                        .into(),
                )
                .into());
            }
            StoreLocation::Bucket(b) if args.blob_delivery == BlobDelivery::Presigned => {
                let public = args
                    .s3_public_endpoint
                    .clone()
                    .or_else(|| args.s3.s3_endpoint.clone())
                    .ok_or_else(|| {
                        crate::cli::UsageError(
                            "--blob-delivery presigned needs --s3-public-endpoint (the S3 URL \
                             nodes reach) or --s3-endpoint"
                                .into(),
                        )
                    })?;
                b.config.presign = Some((public, Duration::from_secs(args.presign_seconds)));
            }
            _ => {}
        }
        let store = args.store.path;
        let cfg = ServeConfig {
            store: location,
            bucket: BucketServing {
                poll: Duration::from_secs(args.s3_poll_seconds),
                cache_dir: args.cache_dir,
                cache_size: args.cache_size,
            },
            listen: args.listen,
            public_url: args.public_url,
            tls: args
                .tls_cert
                .zip(args.tls_key)
                .map(|(cert, key)| TlsFiles { cert, key }),
            token_file: args.token_file,
            limits: ConnLimits {
                max_connections: args
                    .max_connections
                    .map_or_else(default_max_connections, |n| n as usize),
                ..ConnLimits::default()
            },
        };
        let running = start(cfg).await?;
        if running.held == Held::Empty {
            eprintln!(
                "llmgw: the store {} holds no bundles yet: every file request gets 404 until one \
                 is imported (`llmgw bundle import BUNDLE --store {}`; served without a restart)",
                store.display(),
                store.display()
            );
        }
        // One line on stdout that scripts can read the address from.
        crate::cli::print(&format!(
            "llmgw mirror serving {} on {}\n",
            store.display(),
            running.url()
        ))?;
        shutdown_signal().await;
        tracing::info!("stopping: finishing requests in flight (up to 10 s)");
        running.shutdown(Duration::from_secs(10)).await?;
        Ok(())
    })
}

/// `--listen`: ADDRESS:PORT, where the address may be a host name
/// (`localhost:8080`); a name is resolved and its first IPv4 address used
/// (else its first).
fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    let give =
        "give ADDRESS:PORT, such as 127.0.0.1:8080, 0.0.0.0:8080, [::]:8080 or localhost:8080";
    let Some((host, port)) = s.rsplit_once(':') else {
        return Err(format!("{s:?} has no port; {give}"));
    };
    if host.is_empty() || port.parse::<u16>().is_err() {
        return Err(format!("{s:?} is not an address and port; {give}"));
    }
    // IPv4 first: a container without IPv6 cannot bind ::1.
    let addrs: Vec<SocketAddr> = s
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host:?} ({e}); {give}"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| format!("{host:?} resolves to no address; {give}"))
}

/// Ctrl-C or SIGTERM (what Kubernetes sends).
async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {},
                    _ = term.recv() => {},
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

/// `--cache-size`: bytes with an optional K, M, G or T suffix, read by the
/// project's one size parser.
fn parse_cache_size(text: &str) -> Result<u64, String> {
    llmgw_shared::size::parse("--cache-size", text).map_err(|e| e.to_string())
}
