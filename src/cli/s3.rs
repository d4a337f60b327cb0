//! `--store s3://BUCKET/PREFIX`: the flags that reach an S3-compatible
//! store. They are parsed here and handed to the mirror library as a
//! [`StoreLocation`]; the session a command works on a bucket through
//! (the lock object, the work folder, publishing) is the library's
//! (`llmgw_mirror::StoreLocation::transact`).

use std::path::PathBuf;

use clap::Args;
use llmgw_mirror::{BucketAccess, StoreLocation};

use crate::cli::StoreArg;

/// How to reach a store in S3-compatible object storage; credentials come
/// from `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (or the other usual
/// `AWS_*` variables).
#[derive(Args, Debug, Clone)]
pub struct S3Arg {
    /// With --store s3://BUCKET/PREFIX: the S3 server's URL (Ceph RGW, Garage, MinIO…);
    /// requests are path-style. Plain http:// is allowed when given here.
    #[arg(long, env = "AWS_ENDPOINT_URL", value_name = "URL")]
    pub s3_endpoint: Option<String>,
    /// With --store s3://…: the bucket's region.
    #[arg(long, env = "AWS_REGION", value_name = "REGION")]
    pub s3_region: Option<String>,
    /// With --store s3://…: the local folder the store's manifests and state are copied
    /// into (and an import stages its bundle in: room for one bundle). When unset, a
    /// command that writes to the bucket (import, gc, trust add/remove, remove, policy,
    /// have, verify) uses a folder of its own for that store, the same on every run:
    /// $XDG_CACHE_HOME/llmgw/s3/HASH (else ~/.cache/…; HASH of the store URL and the
    /// endpoint), so a stopped import, or a volume set taken in over several runs, picks
    /// up where it stopped; `mirror serve` and the commands that only read use a fresh
    /// temporary folder.
    #[arg(long, env = "LLMGW_WORK_DIR", value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
}

impl StoreArg {
    /// Where the store is: `--store` with the S3 flags given.
    pub fn location(&self, s3: &S3Arg) -> StoreLocation {
        StoreLocation::new(
            &self.path,
            &BucketAccess {
                endpoint: s3.s3_endpoint.clone(),
                region: s3.s3_region.clone(),
                work_dir: s3.work_dir.clone(),
            },
        )
    }

    /// Where the store is, for the commands that take no S3 flags: a
    /// bucket is reached with the `AWS_*` variables and worked on in
    /// `LLMGW_WORK_DIR` (or the folder the library picks).
    pub fn location_from_env(&self) -> StoreLocation {
        self.location(&S3Arg::from_env())
    }
}

impl S3Arg {
    /// The settings from the environment alone, for the commands that take
    /// no S3 flags.
    pub fn from_env() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Self {
            s3_endpoint: var("AWS_ENDPOINT_URL"),
            s3_region: var("AWS_REGION"),
            work_dir: var("LLMGW_WORK_DIR").map(PathBuf::from),
        }
    }
}
