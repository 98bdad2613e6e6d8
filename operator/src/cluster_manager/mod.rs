//! The ClusterManager: what it installs on the hub ([`render`]), with which permissions
//! ([`rbac`]), and the controller that keeps it there ([`controller`]).

pub mod controller;
pub mod rbac;
pub mod render;
