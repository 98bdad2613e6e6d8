//! The operator: ClusterManager and Klusterlet reconcilers that install ocm-rs on real
//! clusters. So far: the ClusterManager in Default mode ([`cluster_manager`]: what it installs,
//! with which permissions, and its controller) and the hub operator's own install manifests
//! ([`manifests`]).

pub mod cluster_manager;
pub mod manifests;
