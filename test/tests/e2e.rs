//! The test crate's integration tests, one module per file beside this one, built as one
//! test binary (one link instead of one per file: less disk and build time).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod addon_admission;
mod addon_hub;
mod addon_install_changed;
mod addon_registration;
mod addon_rollout;
mod addon_templates;
mod addons;
mod cluster_profiles;
mod cluster_proxy;
mod cluster_proxy_exec;
mod crashes;
mod dashboard;
mod faults;
mod get_cli;
mod hub_admission;
mod hub_components;
mod image;
mod join_back_to_back;
mod join_process;
mod multi_hubs;
mod operator_cli;
mod operator_hub;
mod operator_klusterlet;
mod operator_rbac;
mod placement;
mod placement_controller;
mod process_kubelet;
mod proxy_bench;
mod registration;
mod replicaset;
mod work;
