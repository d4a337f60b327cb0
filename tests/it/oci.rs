//! OCI: container images carried and served (#30), models as OCI artifacts
//! (#31) and the mirror's own container image (#36), each checked with the
//! real clients (`clients`: skopeo, containerd's `ctr`, Helm).

pub mod clients;

mod image;
mod images;
mod models;
mod push;
mod serve;
