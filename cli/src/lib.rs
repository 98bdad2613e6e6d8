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

/// The environment variable that sets how long mimalloc keeps freed memory before it gives it
/// back to the system, in milliseconds (its default: 1,000).
pub const PURGE_DELAY_VAR: &str = "MIMALLOC_PURGE_DELAY";

/// Makes this process give freed memory back at once: unless `MIMALLOC_PURGE_DELAY` is set
/// already, runs the same executable again in place of this process (same PID, arguments
/// and environment) with it set to 0. mimalloc reads it only as the process starts, and it
/// purges delayed memory only on a later call into it, which an idle hub or agent may not
/// make for minutes: 3–4 MiB of a hub's idle 17 MiB heap stayed resident (docs/performance.md,
/// "Allocator: prompt purge"). Returns (and the process carries on as it is) when the
/// executable cannot be run again.
pub fn purge_freed_memory_promptly() {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        if std::env::var_os(PURGE_DELAY_VAR).is_some() {
            return;
        }
        let mut args = std::env::args_os();
        let Some(arg0) = args.next() else {
            return;
        };
        // `exec` returns only when it failed; then this process runs on as it is.
        let _failed = std::process::Command::new("/proc/self/exe")
            .arg0(arg0)
            .args(args)
            .env(PURGE_DELAY_VAR, "0")
            .exec();
    }
}
