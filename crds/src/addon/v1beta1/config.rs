//! References to addon configuration objects, shared by ClusterManagementAddOn and
//! ManagedClusterAddOn.

/// Shared with v1alpha1: the two versions define these identically.
pub use crate::addon::v1alpha1::{AddOnConfig, ConfigGroupResource, ConfigSpecHash};
