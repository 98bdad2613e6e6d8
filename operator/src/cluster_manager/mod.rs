//! The ClusterManager: what it installs on the hub ([`render`]).

pub mod render;
