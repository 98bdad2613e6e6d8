//! `work.open-cluster-management.io/v1alpha1`.

mod manifest_work_replica_set;

pub use manifest_work_replica_set::*;
