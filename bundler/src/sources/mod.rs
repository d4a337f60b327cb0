//! The upstreams a bundle is gathered from, one folder per kind: GitHub-style
//! releases (`github`), llmgw's own signed release (`llmgw_release`), the
//! engines' builds from the recipe table (`engines`) and their runtime
//! extras (`extras`), the Hugging Face Hub
//! (`hub`), Python package indexes with their interpreter (`python`), and
//! OCI registries for container images and Helm charts (`oci`).
//!
//! Invariant: a source only plans — it asks its upstream what exists and
//! turns a request into planned artifacts, each with the digest its
//! publisher states; every byte is then fetched and checked by `fetch`, the
//! one verified downloader, never by a source itself.

pub mod engines;
pub mod extras;
pub mod github;
pub mod hub;
pub mod llmgw_release;
pub mod oci;
pub mod python;
