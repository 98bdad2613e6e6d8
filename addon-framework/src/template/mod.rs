//! Template addons: addons defined by an AddOnTemplate instead of code, as upstream's hub
//! addon manager runs them.
//!
//! A ClusterManagementAddOn whose `defaultConfigs` name an AddOnTemplate is a template addon;
//! [`controller::run_template_addons`] (run by `ocm hub`) gives each one an addon manager with
//! a [`addon::TemplateAddon`]. Which template a cluster runs is an ordinary config (default,
//! placement or per-cluster), rolled out per the install strategy. The pure parts:
//! [`render`] (variables and the agent's Deployments and DaemonSets), [`registration`]
//! (credentials, CSR approval, hub RoleBindings) and [`signer`] (custom-signer certificates).

pub mod addon;
pub mod controller;
pub mod registration;
pub mod render;
pub mod signer;

pub use addon::{TemplateAddon, TemplateHistory};

/// Condition a template addon sets on each ManagedClusterAddOn it renders (an ocm-rs
/// addition; upstream renders an undefined variable as an empty string without a word): True
/// when every variable the template uses is defined, False ([`UNDEFINED_VARIABLES`], naming
/// them) when some render as empty strings.
pub const VARIABLES_DEFINED: &str = "TemplateVariablesDefined";

/// Reason of [`VARIABLES_DEFINED`] True.
pub const ALL_VARIABLES_DEFINED: &str = "AllVariablesDefined";

/// Reason of [`VARIABLES_DEFINED`] False.
pub const UNDEFINED_VARIABLES: &str = "UndefinedVariables";
pub use controller::{DEFAULT_MANAGER_NAMESPACE, run_template_addons};
