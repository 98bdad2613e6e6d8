//! The embedded hub and what it shares with the `ocm` command: the API server under a data
//! directory with the OCM CRDs, the hub's admission policies as in-process hooks
//! ([`admission`]), `kube-public/cluster-info` and the bootstrap roles and tokens
//! ([`bootstrap`]), the hub controllers under leader election ([`embedded`]), and simulated
//! managed clusters ([`simulated`]). Scenario tests and the addon framework's test fleet build
//! on it.

pub mod admission;
pub mod bootstrap;
pub mod embedded;
pub mod fleet;
pub mod join;
pub mod process_kubelet;
pub mod simulated;
