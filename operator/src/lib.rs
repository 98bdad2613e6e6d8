//! Operator: ClusterManager and Klusterlet reconcilers that install ocm-rs on real clusters.
