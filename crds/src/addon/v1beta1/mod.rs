//! `addon.open-cluster-management.io/v1beta1`: served alongside v1alpha1; ClusterManagementAddOn
//! and ManagedClusterAddOn drop the deprecated v1alpha1 fields and reshape registrations.

mod add_on_deployment_config;
mod cluster_management_add_on;
mod config;
mod managed_cluster_add_on;

pub use add_on_deployment_config::*;
pub use cluster_management_add_on::*;
pub use config::*;
pub use managed_cluster_add_on::*;
