//! Hub controllers of registration. [`run`] starts them all (under leader election when
//! configured) against a hub API server.

mod acceptance;
mod addons;
pub mod admission;
mod cleanup;
mod cluster_profiles;
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

use ocm_api::cluster::v1::ManagedCluster;
use ocm_runtime::cache::SharedCache;
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
    /// Whether ClusterProfiles are kept for the Cluster Inventory API (upstream's
    /// `ClusterProfile` hub gate; off by default).
    pub cluster_profiles: bool,
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
            cluster_profiles: false,
        }
    }
}

impl HubOptions {
    /// Applies the hub registration gates among `--feature-gates` values (each a
    /// comma-separated list of `<name>=<true|false>`, later entries winning) and returns the
    /// other entries, for the other components' gate parsers to accept or refuse.
    pub fn take_feature_gates<S: AsRef<str>>(&mut self, values: &[S]) -> Vec<String> {
        use ocm_api::cluster::names::hub_feature_gates as gates;
        let mut rest = Vec::new();
        for entry in values
            .iter()
            .flat_map(|v| v.as_ref().split(','))
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let parsed = entry.split_once('=').and_then(|(name, value)| {
                let on = match value.trim().to_ascii_lowercase().as_str() {
                    "true" => true,
                    "false" => false,
                    _ => return None,
                };
                Some((name.trim(), on))
            });
            match parsed {
                Some((gates::CLUSTER_PROFILE, on)) => self.cluster_profiles = on,
                Some((gates::DEFAULT_CLUSTER_SET, on)) => self.default_cluster_sets = on,
                _ => rest.push(entry.to_owned()),
            }
        }
        rest
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
    Box::pin(run_body(ctx, None))
}

/// Like [`run`], reading ManagedClusters from `clusters`, a cache shared with other
/// components of the process that the caller keeps filled ([`fill_cluster_cache`]).
#[inline(never)]
pub fn run_sharing(
    ctx: Arc<HubContext>,
    clusters: SharedCache<ManagedCluster>,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(run_body(ctx, Some(clusters)))
}

async fn run_body(ctx: Arc<HubContext>, shared: Option<SharedCache<ManagedCluster>>) {
    // One watch and one cached copy of every ManagedCluster for all the controllers below
    // (and for other components of the process when it is shared).
    let owned = shared.is_none();
    let clusters = shared.unwrap_or_default();
    tokio::join!(
        async {
            if owned {
                fill_cluster_cache(&ctx, &clusters).await;
            }
        },
        acceptance::run(ctx.clone(), clusters.clone()),
        addons::run(ctx.clone(), clusters.clone()),
        csr_approval::run(ctx.clone()),
        cleanup::run(ctx.clone(), clusters.clone()),
        lease::run(ctx.clone(), clusters.clone()),
        taints::run(ctx.clone(), clusters.clone()),
        clustersets::run(ctx.clone(), clusters.clone()),
        managed_namespaces::run(ctx.clone(), clusters.clone()),
        metrics::run(ctx.clone()),
        cluster_profiles::run(ctx.clone(), clusters.clone()),
    );
}

/// Keeps `clusters`, a ManagedCluster cache the hub controllers share, filled until
/// `ctx.shutdown` is cancelled.
pub async fn fill_cluster_cache(ctx: &HubContext, clusters: &SharedCache<ManagedCluster>) {
    let api = kube::Api::<ManagedCluster>::all(ctx.client.clone());
    tokio::select! {
        () = clusters.run(api, kube::runtime::watcher::Config::default().any_semantic()) => {}
        () = ctx.shutdown.cancelled() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::HubOptions;

    #[test]
    fn registration_gates_are_taken_and_the_rest_passed_on() {
        let mut options = HubOptions::default();
        let rest = options.take_feature_gates(&[
            "ClusterProfile=true, ManifestWorkReplicaSet=true",
            "DefaultClusterSet=false,Bogus",
        ]);
        assert!(options.cluster_profiles);
        assert!(!options.default_cluster_sets);
        assert_eq!(rest, ["ManifestWorkReplicaSet=true", "Bogus"]);
        // A malformed registration gate is left for the next parser to refuse.
        assert_eq!(
            options.take_feature_gates(&["ClusterProfile=yes"]),
            ["ClusterProfile=yes"]
        );
    }
}
