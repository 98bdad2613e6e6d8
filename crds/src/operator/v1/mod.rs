//! `operator.open-cluster-management.io/v1`: ClusterManager (hub) and Klusterlet (managed
//! cluster), the two objects the registration operators reconcile.

mod cluster_manager;
mod feature_gate;
mod klusterlet;
mod node_placement;
mod operator_status;
mod registration_auth;
mod resource_requirement;

pub use cluster_manager::*;
pub use feature_gate::*;
pub use klusterlet::*;
pub use node_placement::*;
pub use operator_status::*;
pub use registration_auth::*;
pub use resource_requirement::*;
