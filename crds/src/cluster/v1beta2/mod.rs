//! `cluster.open-cluster-management.io/v1beta2`.

mod managed_cluster_set;
mod managed_cluster_set_binding;

pub use managed_cluster_set::*;
pub use managed_cluster_set_binding::*;
