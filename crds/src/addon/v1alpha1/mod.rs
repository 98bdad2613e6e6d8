//! `addon.open-cluster-management.io/v1alpha1`: the storage version of every addon kind.

mod add_on_deployment_config;
mod add_on_template;
mod cluster_management_add_on;
mod config;
mod managed_cluster_add_on;

pub use add_on_deployment_config::*;
pub use add_on_template::*;
pub use cluster_management_add_on::*;
pub use config::*;
pub use managed_cluster_add_on::*;
