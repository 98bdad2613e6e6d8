//! `cluster.open-cluster-management.io/v1beta1`: placements and their decisions.

mod placement;
mod placement_decision;

pub use placement::*;
pub use placement_decision::*;
