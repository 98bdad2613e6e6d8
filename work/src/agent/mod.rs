//! The work agent on a managed cluster.
//!
//! [`WorkAgent::run`] reads the hub credentials the registration agent keeps in the managed
//! cluster's `hub-kubeconfig-secret` (and picks up rotated certificates by rebuilding its hub
//! client when the secret changes), watches the ManifestWorks of its cluster namespace on the
//! hub, and for each one:
//!
//! 1. adds the finalizer `cluster.open-cluster-management.io/manifest-work-cleanup`;
//! 2. keeps the AppliedManifestWork `<hubHash>-<work>` on the managed cluster (hubHash =
//!    lowercase hex SHA-256 of the hub URL), which owns every object applied and names each
//!    in its status before first writing it, so a pass cut short (the agent killed) forgets
//!    none of the objects it created;
//! 3. applies the manifests in upstream's kind order with their update strategy (`Update`,
//!    `CreateOnly`, `ServerSideApply`, `ReadOnly`), checking the executor's permissions with
//!    SubjectAccessReviews when the work names one; a manifest that fails does not stop the
//!    others;
//! 4. deletes objects whose manifest left the work (unless orphaned, and only its own claim
//!    when another work shares the object) — not those whose manifest failed to apply;
//! 5. writes status — per-manifest `Applied`, `Available`, feedback, rule conditions, and the
//!    work's `Applied` / `Available` — only when it changed;
//! 6. on deletion sets `Deleting`, removes what it applied (Foreground) or leaves it
//!    (Orphan / SelectivelyOrphan), then releases the finalizer.
//!
//! Beside it a sweep evicts this agent's AppliedManifestWorks no longer managed — those of a
//! hub the agent left (MultipleHubs), or whose ManifestWork is gone — after a grace period
//! (rules in `evict`).
//!
//! Every pass re-reads the applied objects, so drift (an object deleted or edited on the
//! managed cluster) is repaired at the next pass, every status-sync interval. While the hub is
//! unreachable the agent keeps working from the last ManifestWorks it saw.

mod applied;
mod apply;
pub mod compare;
mod context;
mod evict;
mod hashes;
mod hub;
mod ignore;
pub mod order;
mod reconcile;

use std::sync::Arc;
use std::time::Duration;

use ocm_runtime::shutdown::Shutdown;
use tokio::sync::watch;

pub use applied::applied_work_name;
pub use hashes::hub_hash;

/// How the work agent runs.
#[derive(Clone, Debug)]
pub struct WorkAgentOptions {
    /// Name of the managed cluster (its namespace on the hub).
    pub cluster_name: String,
    /// Namespace of the hub kubeconfig secret on the managed cluster.
    pub agent_namespace: String,
    /// Agent id recorded in AppliedManifestWorks (upstream's `--agent-id`); `None` = the
    /// registration agent's id stored in the hub kubeconfig secret (`agent-name`, kept across
    /// a move to another hub), else the hub hash.
    pub agent_id: Option<String>,
    /// How often each work's objects are read back, repaired and reported (upstream: 10 s).
    pub status_sync_interval: Duration,
    /// This agent's AppliedManifestWorks no longer managed — of a hub the agent left, or whose
    /// ManifestWork is gone — are deleted this long after the agent first finds them so
    /// (upstream's `--appliedmanifestwork-eviction-grace-period`, 60 min); 100 years or more
    /// turns eviction off.
    pub eviction_grace: Duration,
    /// Works reconciled at the same time (upstream: 10 workers).
    pub concurrency: u16,
}

impl Default for WorkAgentOptions {
    fn default() -> Self {
        WorkAgentOptions {
            cluster_name: String::new(),
            agent_namespace: "open-cluster-management-agent".to_owned(),
            agent_id: None,
            status_sync_interval: Duration::from_secs(10),
            eviction_grace: Duration::from_secs(60 * 60),
            concurrency: 10,
        }
    }
}

/// Errors that end [`WorkAgent::run`] (everything else is retried).
#[derive(Debug, thiserror::Error)]
pub enum WorkAgentError {
    /// The options are unusable.
    #[error("invalid work agent options: {0}")]
    Options(String),
}

/// Counters of what the agent has done since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkAgentStats {
    /// Completed passes over a ManifestWork.
    pub passes: u64,
    /// Writes (create, update, apply) to the managed cluster's objects.
    pub writes: u64,
}

/// The work agent of one managed cluster.
pub struct WorkAgent {
    spoke: kube::Client,
    secrets: kube::Client,
    options: WorkAgentOptions,
    stats: Arc<watch::Sender<WorkAgentStats>>,
    hub_client: ocm_runtime::kubeconfig::SharedClient,
}

impl WorkAgent {
    /// An agent applying to the cluster behind `spoke`.
    pub fn new(spoke: kube::Client, options: WorkAgentOptions) -> WorkAgent {
        let (stats, _) = watch::channel(WorkAgentStats::default());
        WorkAgent {
            secrets: spoke.clone(),
            spoke,
            options,
            stats: Arc::new(stats),
            hub_client: ocm_runtime::kubeconfig::SharedClient::new(),
        }
    }

    /// Reads the hub kubeconfig secret from another cluster than the managed one (Hosted
    /// mode: the management cluster the agent runs on).
    pub fn with_secrets_on(mut self, management: kube::Client) -> WorkAgent {
        self.secrets = management;
        self
    }

    /// Builds its hub client through `shared`, so that the registration agent of the same
    /// cluster in this process and this agent use one connection to the hub.
    pub fn with_shared_hub_client(
        mut self,
        shared: ocm_runtime::kubeconfig::SharedClient,
    ) -> WorkAgent {
        self.hub_client = shared;
        self
    }

    /// Follows the agent's counters.
    pub fn stats(&self) -> watch::Receiver<WorkAgentStats> {
        self.stats.subscribe()
    }

    /// Runs until `shutdown` is cancelled.
    #[inline(never)]
    pub fn run(
        self,
        shutdown: Shutdown,
    ) -> futures::future::BoxFuture<'static, Result<(), WorkAgentError>> {
        Box::pin(self.run_body(shutdown))
    }

    async fn run_body(self, shutdown: Shutdown) -> Result<(), WorkAgentError> {
        if self.options.cluster_name.is_empty() {
            return Err(WorkAgentError::Options("the cluster name is empty".into()));
        }
        hub::run_with_hub_credentials(
            hub::Clients {
                spoke: self.spoke,
                secrets: self.secrets,
                hub: self.hub_client,
            },
            self.options,
            self.stats,
            shutdown,
        )
        .await;
        Ok(())
    }
}
