//! The `ocm` command as a library: each subcommand's flags and behaviour (in [`commands`]),
//! and the pieces they share — the embedded hub, simulated managed clusters and the bootstrap
//! tokens and RBAC of `ocm init` (re-exported from `ocm-hub`), the CSR checks of `ocm accept`
//! ([`accept`]) and the cluster table ([`clusters_table`]). Scenario tests use
//! the same pieces in-process.

pub mod clusters_table;
pub mod commands;
pub mod sample_app;

pub use ocm_hub::{admission, bootstrap, embedded, fleet, process_kubelet, simulated};
pub use ocm_registration::accept;

/// The memory allocator the `ocm` executable installs as its global allocator (mimalloc):
/// under the hub's churn of small JSON values glibc malloc spent about half the hub's CPU in
/// its own bookkeeping (`malloc_consolidate`, `unlink_chunk`); see docs/performance.md,
/// "Allocator".
pub type Allocator = mimalloc::MiMalloc;

/// The allocator value for `#[global_allocator]`.
pub const ALLOCATOR: Allocator = mimalloc::MiMalloc;
