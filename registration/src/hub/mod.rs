//! Hub controllers of registration. [`run`] starts them all (under leader election when
//! configured) against a hub API server.

mod acceptance;
mod addons;
pub mod admission;
mod cleanup;
mod clustersets;
mod csr_approval;
mod error;
mod lease;
mod managed_namespaces;
mod metrics;
mod observed;
pub mod rbac;
mod taints;

pub use csr_approval::{AgentCsr, Rejection, validate as validate_agent_csr};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use ocm_runtime::metrics::ControllerMetrics;
use ocm_runtime::shutdown::Shutdown;

/// Tunables of the hub controllers. `Default` gives upstream's defaults.
#[derive(Clone, Debug)]
pub struct HubOptions {
    /// A cluster is unavailable when its lease is older than this many lease durations
    /// (upstream: 5).
    pub lease_grace_multiplier: u32,
    /// Users whose bootstrap CSRs are approved and whose clusters are accepted
    /// automatically (upstream `--cluster-auto-approval-users`; empty = none).
    pub auto_approved_users: Vec<String>,
    /// Extra labels put on every cluster namespace.
    pub cluster_namespace_labels: BTreeMap<String, String>,
    /// Whether the `default` and `global` cluster sets are maintained (DefaultClusterSet gate).
    pub default_cluster_sets: bool,
    /// How long to wait before looking again at a cluster whose cleanup is not finished.
    pub cleanup_requeue: Duration,
    /// Full resync period of the controllers.
    pub resync: Duration,
}

impl Default for HubOptions {
    fn default() -> Self {
        HubOptions {
            lease_grace_multiplier: 5,
            auto_approved_users: Vec::new(),
            cluster_namespace_labels: BTreeMap::new(),
            default_cluster_sets: true,
            cleanup_requeue: Duration::from_secs(5),
            resync: Duration::from_secs(30 * 60),
        }
    }
}

/// What every hub controller gets.
pub struct HubContext {
    /// Client of the hub API server, with the hub controllers' identity.
    pub client: kube::Client,
    /// Tunables.
    pub options: HubOptions,
    /// Reconcile counters, errors and queue depths.
    pub metrics: ControllerMetrics,
    /// Cancelled when the controllers must stop.
    pub shutdown: Shutdown,
}

/// Runs every hub controller until `ctx.shutdown` is cancelled.
#[inline(never)]
pub fn run(ctx: Arc<HubContext>) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(run_body(ctx))
}

async fn run_body(ctx: Arc<HubContext>) {
    tokio::join!(
        acceptance::run(ctx.clone()),
        addons::run(ctx.clone()),
        csr_approval::run(ctx.clone()),
        cleanup::run(ctx.clone()),
        lease::run(ctx.clone()),
        taints::run(ctx.clone()),
        clustersets::run(ctx.clone()),
        managed_namespaces::run(ctx.clone()),
        metrics::run(ctx.clone()),
    );
}
