//! The bundler's integration tests, in one binary (`cargo test -p
//! llmgw-bundler --test it`), one module per feature.

mod cache;
mod refused;
