//! The `ocm` command as a library: each subcommand's flags and behaviour (in [`commands`]),
//! and the pieces they share — the embedded hub ([`embedded`]), simulated managed clusters
//! ([`simulated`]), the bootstrap token and RBAC of `ocm init` ([`bootstrap`]), the CSR checks
//! of `ocm accept` ([`accept`]) and the cluster table ([`clusters_table`]). Scenario tests use
//! the same pieces in-process.

pub mod accept;
pub mod admission;
pub mod bootstrap;
pub mod clusters_table;
pub mod commands;
pub mod embedded;
pub mod sample_app;
pub mod simulated;
pub mod text_table;
