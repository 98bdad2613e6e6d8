//! The ClusterManager: what it installs on the hub ([`render`]) and with which permissions
//! ([`rbac`]).

pub mod rbac;
pub mod render;
