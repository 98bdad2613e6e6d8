//! The crds crate's integration tests, one module per file beside this one, built as one
//! test binary (one link instead of one per file: less disk and build time).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod addon;
mod cluster;
mod manifests;
mod operator;
mod schema;
mod work;
