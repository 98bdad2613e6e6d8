//! `cluster.open-cluster-management.io/v1alpha1`: cluster claims, addon placement scores, and
//! the rollout strategies shared by the workload APIs.

mod add_on_placement_score;
mod cluster_claim;
mod rollout;

pub use add_on_placement_score::*;
pub use cluster_claim::*;
pub use rollout::*;
