//! `work.open-cluster-management.io/v1`.

mod applied_manifest_work;
mod manifest_work;

pub use applied_manifest_work::*;
pub use manifest_work::*;
