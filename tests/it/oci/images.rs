//! Container images end to end (#30, the create side): images made in the
//! test as OCI layouts, pushed by the real `skopeo` into Debian's
//! `docker-registry` on loopback, carried by `llmgw bundle create --image`
//! and taken in by `llmgw bundle import`; the token flow, the 429 and the
//! hostile registries against the fixture's stand-in; an image missed
//! through the mirror carried by `--want`; engine images chosen by the
//! recipe table and `--driver`, fetched through `--registry` (#52): vLLM's
//! from docker.io and llama.cpp's server images from ghcr.io.

pub mod common;

mod distribution;
mod engine;
mod engine_llamacpp;
mod hostile;
mod layout;
mod token;
mod want;
