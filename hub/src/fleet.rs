//! A hub and simulated managed clusters in one process: an embedded hub (in memory) whose
//! bootstrap token is approved automatically, and clusters — logical clusters of its server —
//! each joined by its own registration agent and running a work agent, the way
//! `ocm join --simulated` runs them. Scenario tests and the addon framework's test fleet stand
//! on it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use kube::api::Api;
use kube::runtime::wait::await_condition;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_registration::agent::{Agent, AgentOptions};
use ocm_registration::hub::HubOptions;
use ocm_runtime::shutdown::Shutdown;

use crate::embedded::{EmbeddedHub, EmbeddedHubOptions, HubControllers};

/// Builds the registration agent's options for a cluster name.
pub type AgentOptionsFn = Arc<dyn Fn(&str) -> AgentOptions + Send + Sync>;

/// How to start a fleet.
#[derive(Clone)]
pub struct FleetOptions {
    /// Cluster names.
    pub clusters: Vec<String>,
    /// The hub controllers' tunables (the bootstrap token's user is added to the auto-approved
    /// users).
    pub hub: HubOptions,
    /// Extra hub controllers (e.g. the addons' install strategies).
    pub extra_controllers: HubControllers,
    /// Each registration agent's options.
    pub agent_options: AgentOptionsFn,
    /// The work agents' status sync interval.
    pub status_sync_interval: Duration,
    /// How long to wait for every cluster to be Joined and Available.
    pub join_timeout: Duration,
}

impl std::fmt::Debug for FleetOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetOptions")
            .field("clusters", &self.clusters)
            .finish_non_exhaustive()
    }
}

impl FleetOptions {
    /// `n` clusters `c01`, `c02`…, default hub and agent options, status every second.
    pub fn new(n: usize) -> FleetOptions {
        FleetOptions {
            clusters: (1..=n).map(|i| format!("c{i:02}")).collect(),
            hub: HubOptions::default(),
            extra_controllers: HubControllers::default(),
            agent_options: Arc::new(|cluster| AgentOptions {
                cluster_name: cluster.to_owned(),
                ..AgentOptions::default()
            }),
            status_sync_interval: Duration::from_secs(1),
            join_timeout: Duration::from_secs(60),
        }
    }
}

/// A running fleet.
pub struct Fleet {
    /// The hub.
    pub hub: EmbeddedHub,
    /// The clusters' names.
    pub clusters: Vec<String>,
    agents: Shutdown,
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet")
            .field("hub", &self.hub)
            .field("clusters", &self.clusters)
            .finish()
    }
}

/// Whether the cluster reports `ManagedClusterJoined` and `ManagedClusterConditionAvailable`
/// True.
pub fn joined_and_available(cluster: &ManagedCluster) -> bool {
    let is_true = |t: &str| {
        cluster.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == t && c.status == "True")
        })
    };
    is_true("ManagedClusterJoined") && is_true("ManagedClusterConditionAvailable")
}

impl Fleet {
    /// Starts the hub under `dir` (objects in memory) and joins every cluster; returns once
    /// each is Joined and Available.
    #[inline(never)]
    pub fn start(
        dir: &Path,
        options: FleetOptions,
    ) -> futures::future::BoxFuture<'_, anyhow::Result<Fleet>> {
        Box::pin(Self::start_body(dir, options))
    }

    async fn start_body(dir: &Path, options: FleetOptions) -> anyhow::Result<Fleet> {
        let token = crate::bootstrap::BootstrapToken::generate()?;
        let mut hub_options = options.hub.clone();
        hub_options
            .auto_approved_users
            .push(format!("system:bootstrap:{}", token.id));
        let hub = EmbeddedHub::start(EmbeddedHubOptions {
            listen: ([127, 0, 0, 1], 0).into(),
            memory: true,
            hub: hub_options,
            extra_controllers: options.extra_controllers.clone(),
            ..EmbeddedHubOptions::new(dir)
        })
        .await?;
        crate::bootstrap::init_with_token(&hub.admin_client(), &token, None).await?;
        let bootstrap =
            crate::join::bootstrap_kubeconfig(&hub.url, &hub.ca_pem, &token.to_string());
        let agents = Shutdown::new();
        for name in &options.clusters {
            let spoke = crate::simulated::logical_spoke(&hub.server, name).await?;
            crate::join::prepare_spoke(&spoke, &bootstrap).await?;
            let registration = Agent::new(spoke.clone(), (options.agent_options)(name));
            tokio::spawn(registration.run(agents.child()));
            let work = ocm_work::agent::WorkAgent::new(
                spoke,
                ocm_work::agent::WorkAgentOptions {
                    cluster_name: name.clone(),
                    status_sync_interval: options.status_sync_interval,
                    ..Default::default()
                },
            );
            tokio::spawn(work.run(agents.child()));
        }
        let clusters: Api<ManagedCluster> = Api::all(hub.admin_client());
        for name in &options.clusters {
            let joined = await_condition(clusters.clone(), name, |c: Option<&ManagedCluster>| {
                c.is_some_and(joined_and_available)
            });
            tokio::time::timeout(options.join_timeout, joined)
                .await
                .map_err(|_| {
                    anyhow::anyhow!("cluster {name} not Joined and Available in time")
                })??;
        }
        Ok(Fleet {
            hub,
            clusters: options.clusters,
            agents,
        })
    }

    /// An admin client of cluster `name` (its own API server).
    pub async fn spoke(&self, name: &str) -> anyhow::Result<kube::Client> {
        crate::simulated::logical_spoke(&self.hub.server, name).await
    }

    /// The token that stops the clusters' agents.
    pub fn agents(&self) -> Shutdown {
        self.agents.clone()
    }

    /// Stops the agents and the hub.
    pub async fn stop(self) {
        self.agents.cancel();
        self.hub.stop().await;
    }
}
