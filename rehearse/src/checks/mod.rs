//! What a node does, one module per kind of client: the node lines
//! (`env_block`), Python environments, the Hub, images and charts,
//! releases. Each gives rows of the report; none stops the others.

pub mod env_block;
pub mod hub;
pub mod oci;
pub mod python;
pub mod releases;
