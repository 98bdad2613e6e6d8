//! Bringing hubs and managed clusters up from outside, as the `ocm` command and its
//! benchmarks do: install the operators and the ClusterManager or Klusterlet they act on
//! ([`operators`]), learn a hub's CA and check a bootstrap token before joining
//! ([`discovery`]), run a process kubelet for a simulated cluster ([`kubelet`]), choose the
//! controllers that run beside an embedded hub ([`controllers`]), and wait until clusters are
//! Joined and Available ([`wait`]).
//!
//! Like `ocm-hub`, this crate serves binaries and reports failures as `anyhow` errors with the
//! context a user acts on.

pub mod controllers;
pub mod discovery;
pub mod kubelet;
pub mod operators;
pub mod wait;
