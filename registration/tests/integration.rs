//! The registration crate's integration tests, one module per file beside this one, built as one
//! test binary (one link instead of one per file: less disk and build time).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support_accept;
mod support_agent;

mod agent_join;
mod agent_multiple_hubs;
mod agent_rebootstrap;
mod agent_rotation;
mod hub_accept_flow;
mod hub_clusterset_sets;
mod hub_csr_approval;
mod hub_health_admission;
mod hub_health_lease;
