//! `cluster.open-cluster-management.io/v1`.

mod managed_cluster;

pub use managed_cluster::*;
