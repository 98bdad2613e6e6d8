//! Rust types of every Open Cluster Management API, wire-compatible with upstream OCM.
//!
//! One module per API group ([`cluster`], [`work`], [`addon`], [`operator`], and the
//! SIG-Multicluster [`about`] and [`multicluster`] APIs), one module per
//! version inside it, one file per kind. Each group also has a `names` module with its
//! well-known labels, annotations, finalizers, condition types and reasons.
//!
//! [`crds`] assembles the CustomResourceDefinitions that are installed on a hub and on a
//! managed cluster; the `crdgen` binary writes them to `crds/manifests/`.

pub mod about;
pub mod addon;
mod approval;
pub mod cluster;
pub mod crds;
pub mod multicluster;
pub mod operator;
pub mod schema;
pub mod work;
