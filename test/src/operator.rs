//! Fixtures for the operator scenarios: the operators as `ocm` processes, simulated managed
//! clusters whose ocm Deployments run as processes, and the steps `ocm join` takes.

use std::path::Path;

use anyhow::Context;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use ocm::simulated::SimulatedCluster;
use ocm_api::operator::v1::Klusterlet;
use ocm_runtime::shutdown::Shutdown;
use serde_json::json;

use crate::process::Process;
use crate::wait_for;

/// The `ocm` image the operator scenarios install.
pub const IMAGE: &str = "example.com/ocm:e2e";
/// Another tag of it, for upgrades.
pub const UPGRADED: &str = "example.com/ocm:e2e-2";
/// The default agent namespace.
pub const AGENT_NS: &str = "open-cluster-management-agent";

/// `(status, reason)` of condition `type_` among `conditions`.
pub fn condition_of(conditions: Option<&Vec<Condition>>, type_: &str) -> (String, String) {
    conditions
        .and_then(|c| c.iter().find(|c| c.type_ == type_))
        .map(|c| (c.status.clone(), c.reason.clone()))
        .unwrap_or_default()
}

/// Starts `ocm operator <which> --kubeconfig KUBECONFIG --image IMAGE` and waits until it runs.
pub fn start_operator(bin: &str, home: &Path, which: &str, kubeconfig: &Path) -> Process {
    let kubeconfig = kubeconfig.to_string_lossy();
    let operator = Process::spawn(
        bin,
        home,
        &[
            "operator",
            which,
            "--kubeconfig",
            &kubeconfig,
            "--image",
            IMAGE,
        ],
    );
    operator.wait_line(&format!("ocm operator {which} running"));
    operator
}

/// Waits until Deployment `namespace/name` has `replicas` of its current template available.
pub async fn wait_deployment_available(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    replicas: i32,
) -> anyhow::Result<Deployment> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    wait_for(&deployments, name, "its replicas running", |d| {
        d.status.as_ref().is_some_and(|s| {
            s.available_replicas == Some(replicas) && s.observed_generation == d.metadata.generation
        })
    })
    .await
}

/// Writes the bootstrap kubeconfig Secret into the agent namespace (as `ocm join` does).
pub async fn write_bootstrap_secret(spoke: &kube::Client, bootstrap: &str) -> anyhow::Result<()> {
    write_agent_secret(spoke, "bootstrap-hub-kubeconfig", bootstrap).await
}

/// Writes Secret `name` holding `kubeconfig` into the agent namespace (made when missing).
pub async fn write_agent_secret(
    spoke: &kube::Client,
    name: &str,
    kubeconfig: &str,
) -> anyhow::Result<()> {
    let namespace =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": AGENT_NS}});
    Api::<Namespace>::all(spoke.clone())
        .patch(
            AGENT_NS,
            &PatchParams::apply("e2e"),
            &Patch::Apply(&namespace),
        )
        .await?;
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": AGENT_NS},
        "stringData": {"kubeconfig": kubeconfig}}))?;
    Api::<Secret>::namespaced(spoke.clone(), AGENT_NS)
        .create(&PostParams::default(), &secret)
        .await
        .with_context(|| format!("writing secret {name}"))?;
    Ok(())
}

/// Creates Klusterlet `name` with `spec`.
pub async fn create_klusterlet(
    spoke: &kube::Client,
    name: &str,
    spec: serde_json::Value,
) -> Result<Klusterlet, kube::Error> {
    let klusterlet: Klusterlet = serde_json::from_value(json!({
        "apiVersion": "operator.open-cluster-management.io/v1", "kind": "Klusterlet",
        "metadata": {"name": name}, "spec": spec}))
    .map_err(kube::Error::SerdeError)?;
    Api::<Klusterlet>::all(spoke.clone())
        .create(&PostParams::default(), &klusterlet)
        .await
}

/// A simulated managed cluster (its own TLS API server) with the klusterlet operator and a
/// process kubelet running [`IMAGE`] Deployments.
pub struct OperatedCluster {
    /// The cluster.
    pub spoke: SimulatedCluster,
    /// `ocm operator klusterlet`.
    pub operator: Process,
    /// Stops the process kubelet.
    pub kubelet: Shutdown,
}

impl OperatedCluster {
    /// Starts it under `home/<name>`.
    pub async fn start(bin: &str, home: &Path, name: &str) -> anyhow::Result<OperatedCluster> {
        let spoke = SimulatedCluster::start(&home.join(name), ([127, 0, 0, 1], 0).into()).await?;
        let operator = start_operator(bin, home, "klusterlet", &spoke.kubeconfig);
        let kubelet =
            crate::start_process_kubelet(bin, &spoke.kubeconfig, IMAGE, &home.join(name)).await?;
        Ok(OperatedCluster {
            spoke,
            operator,
            kubelet,
        })
    }

    /// Stops the kubelet (and its processes), the operator and the cluster.
    pub async fn stop(self) {
        self.kubelet.cancel();
        self.operator.stop();
        self.spoke.stop().await;
    }
}

/// Shortens cluster `name`'s lease to 2 s, so that losing its agent shows within seconds.
pub async fn shorten_lease(hub: &kube::Client, name: &str) -> anyhow::Result<()> {
    Api::<ocm_api::cluster::v1::ManagedCluster>::all(hub.clone())
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"leaseDurationSeconds": 2}})),
        )
        .await?;
    Ok(())
}

/// Waits until the hub calls cluster `name`'s availability Unknown.
pub async fn wait_available_unknown(hub: &kube::Client, name: &str) -> anyhow::Result<()> {
    let clusters: Api<ocm_api::cluster::v1::ManagedCluster> = Api::all(hub.clone());
    wait_for(&clusters, name, "Available Unknown", |c| {
        crate::cluster_condition(c, "ManagedClusterConditionAvailable") == "Unknown"
    })
    .await?;
    Ok(())
}

/// Accepts cluster `name` once it asks to join (as `ocm accept` does) and waits until it is
/// Joined and Available.
pub async fn accept_and_wait_available(hub: &kube::Client, name: &str) -> anyhow::Result<()> {
    accept_and_wait_available_within(crate::WAIT, hub, name).await
}

/// [`accept_and_wait_available`], the cluster given up to `ask_wait` to ask.
pub async fn accept_and_wait_available_within(
    ask_wait: std::time::Duration,
    hub: &kube::Client,
    name: &str,
) -> anyhow::Result<()> {
    tokio::time::timeout(ask_wait, ocm::accept::accept_when_asked(hub, name, false))
        .await
        .with_context(|| format!("{name} did not ask to join"))??;
    let clusters: Api<ocm_api::cluster::v1::ManagedCluster> = Api::all(hub.clone());
    wait_for(
        &clusters,
        name,
        "Joined and Available",
        crate::joined_and_available,
    )
    .await?;
    Ok(())
}
