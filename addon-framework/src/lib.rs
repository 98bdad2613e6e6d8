//! The addon framework: an addon is a Rust trait ([`agent::AgentAddon`]); the framework
//! installs its agent on clusters through ManifestWork, registers the agent with the hub and
//! tracks its health — as upstream OCM's Go addon framework does, over the same API objects.
//!
//! The pure parts — the works an addon becomes ([`works`]), registration defaults and status
//! ([`registration`]), health from work status ([`health`]), which clusters an install
//! strategy picks ([`install`]) — are separate from the controllers that read and write the
//! hub ([`manager`]). [`agent_helpers`] serves the addon agents on the clusters: hub clients
//! from the mounted registration secret, and the Lease they renew.

pub mod agent;
pub mod agent_helpers;
mod config_fetch;
pub mod configs;
pub mod csr;
mod csr_approval;
mod error;
pub mod health;
pub mod hosted;
pub mod install;
mod install_changes;
mod install_configs;
mod install_controller;
mod install_steps;
mod install_watch;
pub mod manager;
mod mca_status;
pub mod registration;
mod stored_template;
pub mod template;
#[cfg(feature = "testing")]
pub mod testing;
pub mod token_infra;
pub mod work_applier;
pub mod works;

pub use agent::{
    AddonConfigs, AddonError, AddonOptions, AgentAddon, HealthProber, RegistrationConfig, Rendered,
    WorkHealthCheck,
};
