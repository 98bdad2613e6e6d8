//! A test fleet for addon authors (feature `testing`): `cargo test` an addon end to end with no
//! cluster anywhere.
//!
//! [`TestFleet::start`] runs, in the test's process, an embedded hub (real TLS, CSR signer, RBAC,
//! admission) with the addons' hub controllers, simulated managed clusters each joined by its
//! own registration agent and running a work agent (the workload simulator makes Deployments
//! available), and the author's addons under an [`AddonManager`]. [`TestFleet::agent_credentials`]
//! hands out exactly what an addon's agent pod would mount — the `<addon>-hub-kubeconfig` Secret
//! the registration agent wrote on the cluster, as files in a directory — so the author's agent
//! code runs in the test with its real credentials (see
//! [`crate::agent_helpers::RotatingHubClient`]). Addon Lease health is checked every second
//! with a five-second grace, so Available follows an agent within seconds.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, PostParams};
use kube::runtime::wait::await_condition;
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_hub::embedded::HubControllers;
use ocm_hub::fleet::{Fleet, FleetOptions};
use ocm_registration::agent::AgentOptions;
use ocm_runtime::shutdown::Shutdown;
use serde_json::json;

use crate::agent::AgentAddon;
use crate::manager::{AddonManager, run_install_strategies};

/// How long the fleet waits for something before giving up.
pub const WAIT: Duration = Duration::from_secs(60);

/// Why the test fleet could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TestFleetError(pub String);

fn fail(what: &str, err: impl std::fmt::Display) -> TestFleetError {
    TestFleetError(format!("{what}: {err}"))
}

/// A hub, simulated clusters and the author's addons, all in this process.
pub struct TestFleet {
    fleet: Fleet,
    stop: Shutdown,
    credentials: PathBuf,
}

impl std::fmt::Debug for TestFleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestFleet")
            .field("clusters", &self.fleet.clusters)
            .finish_non_exhaustive()
    }
}

impl TestFleet {
    /// Starts a hub under `dir` with `clusters` simulated clusters (`c01`, `c02`…, all Joined
    /// and Available when this returns) and runs `addons`' manager.
    pub async fn start(
        dir: &Path,
        clusters: usize,
        addons: Vec<Arc<dyn AgentAddon>>,
    ) -> Result<TestFleet, TestFleetError> {
        let controllers = HubControllers(vec![Arc::new(|client, shutdown| {
            Box::pin(run_install_strategies(client, shutdown))
        })]);
        let fleet = Fleet::start(
            dir,
            FleetOptions {
                extra_controllers: controllers,
                agent_options: Arc::new(|cluster| AgentOptions {
                    cluster_name: cluster.to_owned(),
                    status_sync_period: Duration::from_secs(1),
                    addon_lease_check_period: Duration::from_secs(1),
                    addon_lease_grace: Duration::from_secs(5),
                    ..AgentOptions::default()
                }),
                join_timeout: WAIT,
                ..FleetOptions::new(clusters)
            },
        )
        .await
        .map_err(|e| fail("starting the fleet", e))?;
        let stop = Shutdown::new();
        let mut manager = AddonManager::new(fleet.hub.admin_client());
        for addon in addons {
            manager = manager.with_addon(addon);
        }
        tokio::spawn(manager.run(stop.child()));
        Ok(TestFleet {
            fleet,
            stop,
            credentials: dir.join("agent-credentials"),
        })
    }

    /// An admin client of the hub.
    pub fn hub_client(&self) -> kube::Client {
        self.fleet.hub.admin_client()
    }

    /// The clusters' names.
    pub fn clusters(&self) -> &[String] {
        &self.fleet.clusters
    }

    /// An admin client of cluster `name`.
    pub async fn spoke(&self, name: &str) -> Result<kube::Client, TestFleetError> {
        self.fleet
            .spoke(name)
            .await
            .map_err(|e| fail(&format!("cluster {name}"), e))
    }

    /// Enables `addon` on `cluster`: its ClusterManagementAddOn (Manual install) if missing,
    /// and the cluster's ManagedClusterAddOn.
    pub async fn enable(&self, addon: &str, cluster: &str) -> Result<(), TestFleetError> {
        let cmas: Api<ClusterManagementAddOn> = Api::all(self.hub_client());
        let cma: ClusterManagementAddOn = serde_json::from_value(json!({
            "apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ClusterManagementAddOn",
            "metadata": {"name": addon},
            "spec": {"installStrategy": {"type": "Manual"}},
        }))
        .map_err(|e| fail("building the ClusterManagementAddOn", e))?;
        match cmas.create(&PostParams::default(), &cma).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(err) => {
                return Err(fail(
                    &format!("creating ClusterManagementAddOn {addon}"),
                    err,
                ));
            }
        }
        let mcas: Api<ManagedClusterAddOn> = Api::namespaced(self.hub_client(), cluster);
        let mca: ManagedClusterAddOn = serde_json::from_value(json!({
            "apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ManagedClusterAddOn",
            "metadata": {"name": addon, "namespace": cluster},
            "spec": {},
        }))
        .map_err(|e| fail("building the ManagedClusterAddOn", e))?;
        match mcas.create(&PostParams::default(), &mca).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
            Err(err) => Err(fail(&format!("enabling {addon} on {cluster}"), err)),
        }
    }

    /// Installs `addon` with a Placements strategy: a Placement `<addon>` in namespace
    /// `addons` (bound to the `global` set) selecting the clusters labelled `key=value`, and
    /// the ClusterManagementAddOn pointing at it.
    pub async fn install_by_placement(
        &self,
        addon: &str,
        key: &str,
        value: &str,
    ) -> Result<(), TestFleetError> {
        let client = self.hub_client();
        let create = |what: &'static str, object: serde_json::Value| {
            let client = client.clone();
            async move {
                let api_version = object["apiVersion"].as_str().unwrap_or("v1").to_owned();
                let (group, version) = api_version.split_once('/').unwrap_or(("", "v1"));
                let kind = object["kind"].as_str().unwrap_or_default().to_owned();
                let resource = kube::core::ApiResource::from_gvk_with_plural(
                    &kube::core::GroupVersionKind::gvk(group, version, &kind),
                    &crate::works::plural(&kind),
                );
                let api: Api<kube::api::DynamicObject> = match object
                    .pointer("/metadata/namespace")
                    .and_then(|n| n.as_str())
                {
                    Some(ns) => Api::namespaced_with(client, ns, &resource),
                    None => Api::all_with(client, &resource),
                };
                let object: kube::api::DynamicObject =
                    serde_json::from_value(object).map_err(|e| fail(what, e))?;
                match api.create(&PostParams::default(), &object).await {
                    Ok(_) => Ok(()),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
                    Err(err) => Err(fail(what, err)),
                }
            }
        };
        create(
            "namespace addons",
            json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "addons"}}),
        )
        .await?;
        create(
            "binding addons to global",
            json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"name": "global", "namespace": "addons"},
            "spec": {"clusterSet": "global"}}),
        )
        .await?;
        create(
            "the placement",
            json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": addon, "namespace": "addons"},
            "spec": {"clusterSets": ["global"], "predicates": [{"requiredClusterSelector": {
                "labelSelector": {"matchLabels": {key: value}}}}]}}),
        )
        .await?;
        create(
            "the ClusterManagementAddOn",
            json!({
            "apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ClusterManagementAddOn",
            "metadata": {"name": addon},
            "spec": {"installStrategy": {"type": "Placements",
                     "placements": [{"namespace": "addons", "name": addon}]}}}),
        )
        .await
    }

    /// Sets (`Some`) or removes (`None`) label `key` on ManagedCluster `cluster`.
    pub async fn label_cluster(
        &self,
        cluster: &str,
        key: &str,
        value: Option<&str>,
    ) -> Result<(), TestFleetError> {
        let clusters: Api<ocm_api::cluster::v1::ManagedCluster> = Api::all(self.hub_client());
        let patch = json!({"metadata": {"labels": {key: value}}});
        clusters
            .patch(
                cluster,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&patch),
            )
            .await
            .map_err(|e| fail(&format!("labelling {cluster}"), e))?;
        Ok(())
    }

    /// Waits until `addon`'s ManagedClusterAddOn on `cluster` is gone.
    pub async fn wait_addon_gone(&self, cluster: &str, addon: &str) -> Result<(), TestFleetError> {
        let mcas: Api<ManagedClusterAddOn> = Api::namespaced(self.hub_client(), cluster);
        tokio::time::timeout(
            WAIT,
            await_condition(mcas, addon, |m: Option<&ManagedClusterAddOn>| m.is_none()),
        )
        .await
        .map_err(|_| TestFleetError(format!("{addon} on {cluster} still there")))?
        .map_err(|e| fail(&format!("watching {addon} on {cluster}"), e))?;
        Ok(())
    }

    /// Waits until `addon`'s ManagedClusterAddOn on `cluster` satisfies `condition`.
    pub async fn wait_addon(
        &self,
        cluster: &str,
        addon: &str,
        condition: impl Fn(&ManagedClusterAddOn) -> bool + Send + 'static,
    ) -> Result<ManagedClusterAddOn, TestFleetError> {
        let mcas: Api<ManagedClusterAddOn> = Api::namespaced(self.hub_client(), cluster);
        let found = tokio::time::timeout(
            WAIT,
            await_condition(mcas, addon, move |m: Option<&ManagedClusterAddOn>| {
                m.is_some_and(&condition)
            }),
        )
        .await
        .map_err(|_| TestFleetError(format!("{addon} on {cluster}: condition not met in time")))?
        .map_err(|e| fail(&format!("watching {addon} on {cluster}"), e))?;
        found.ok_or_else(|| TestFleetError(format!("{addon} on {cluster} is gone")))
    }

    /// What `addon`'s agent pod on `cluster` would mount: the `<addon>-hub-kubeconfig` Secret
    /// as files in a directory of its own (see
    /// [`crate::agent_helpers::mount_agent_credentials`]); returns the directory and the
    /// install namespace.
    pub async fn agent_credentials(
        &self,
        cluster: &str,
        addon: &str,
    ) -> Result<(PathBuf, String), TestFleetError> {
        let dir = self.credentials.join(cluster).join(addon);
        let namespace = crate::agent_helpers::mount_agent_credentials(
            &self.hub_client(),
            &self.spoke(cluster).await?,
            cluster,
            addon,
            &dir,
            WAIT,
        )
        .await
        .map_err(|e| fail(&format!("credentials of {addon} on {cluster}"), e))?;
        Ok((dir, namespace))
    }

    /// A token cancelled when the fleet stops (for agents the test runs).
    pub fn shutdown(&self) -> Shutdown {
        self.stop.child()
    }

    /// Stops the addons, the clusters' agents and the hub.
    pub async fn stop(self) {
        self.stop.cancel();
        self.fleet.stop().await;
    }
}
