//! The operator: ClusterManager and Klusterlet reconcilers that install ocm-rs on real
//! clusters. So far: what a ClusterManager installs ([`cluster_manager::render`]).

pub mod cluster_manager;
