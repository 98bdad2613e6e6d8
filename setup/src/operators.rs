//! `ocm init --operator` and `ocm join --operator`: install an operator from its own
//! manifests (the same `ocm operator manifests` prints), then the ClusterManager or
//! Klusterlet it acts on; optionally wait until it did.

use std::time::Duration;

use anyhow::Context;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::Value;

use crate::wait::{has, wait_until};

/// Field manager of what `ocm init/join --operator` applies.
const FIELD_MANAGER: &str = "ocm-cli";

/// The default `ocm` image: what `scripts/build-image` tags (`docker load` names it so).
pub fn default_image() -> String {
    format!("ocm:{}", env!("CARGO_PKG_VERSION"))
}

/// Applies `manifests` (a CRD first, then the rest) and waits until the CRD is established.
pub async fn apply_operator(client: &kube::Client, manifests: &[Value]) -> anyhow::Result<()> {
    let applied = ocm_operator::apply::apply_all(client, FIELD_MANAGER, manifests).await;
    if let Some(failure) = applied.failure {
        anyhow::bail!("installing the operator: {failure}");
    }
    for crd in manifests
        .iter()
        .filter(|m| m["kind"] == "CustomResourceDefinition")
    {
        let name = crd["metadata"]["name"].as_str().unwrap_or_default();
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        tokio::time::timeout(
            Duration::from_secs(60),
            await_condition(crds, name, conditions::is_crd_established()),
        )
        .await
        .with_context(|| format!("CRD {name} not established after 60 s"))??;
    }
    Ok(())
}

/// Server-side applies one object (a ClusterManager or Klusterlet).
pub async fn apply_object(client: &kube::Client, object: &Value) -> anyhow::Result<()> {
    let (api, name) = ocm_operator::apply::api_of(client, object);
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(object),
    )
    .await
    .with_context(|| {
        format!(
            "applying {} {name}",
            object["kind"].as_str().unwrap_or_default()
        )
    })?;
    Ok(())
}

/// Name of the ClusterManager `ocm init --operator` creates.
pub const CLUSTER_MANAGER: &str = "cluster-manager";

/// Name of the Klusterlet `ocm join --operator` creates.
pub const KLUSTERLET: &str = "klusterlet";

/// Installs the cluster-manager operator (its own manifests) and ClusterManager
/// [`CLUSTER_MANAGER`] on the hub cluster.
pub async fn install_hub(client: &kube::Client, image: &str) -> anyhow::Result<()> {
    install_hub_operator(client, image).await?;
    create_cluster_manager(client).await
}

/// Installs the cluster-manager operator from its own manifests.
pub async fn install_hub_operator(client: &kube::Client, image: &str) -> anyhow::Result<()> {
    let crd = serde_json::to_value(cluster_manager_crd()?)?;
    apply_operator(client, &ocm_operator::manifests::hub_operator(image, crd)).await
}

/// Applies ClusterManager [`CLUSTER_MANAGER`]: the default spec with the placement debugger
/// on, as upstream's cluster-manager chart makes it.
pub async fn create_cluster_manager(client: &kube::Client) -> anyhow::Result<()> {
    let cluster_manager = serde_json::json!({
        "apiVersion": "operator.open-cluster-management.io/v1", "kind": "ClusterManager",
        "metadata": {"name": CLUSTER_MANAGER},
        "spec": {"placementConfiguration": {"featureGates": [
            {"feature": "PlacementDebugServer", "mode": "Enable"}]}}});
    apply_object(client, &cluster_manager).await
}

/// Waits until the ClusterManager says its components are applied and rolled out.
pub async fn wait_hub_ready(client: &kube::Client, timeout: Duration) -> anyhow::Result<()> {
    let api: Api<ocm_api::operator::v1::ClusterManager> = Api::all(client.clone());
    wait_until(api, CLUSTER_MANAGER, timeout, |cm| {
        let conditions = cm
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default();
        cm.status.as_ref().and_then(|s| s.observed_generation) == cm.metadata.generation
            && has(conditions, "Applied", "True")
            && has(conditions, "Progressing", "False")
    })
    .await
    .context("waiting for the hub components (kubectl get clustermanager cluster-manager -o yaml)")
}

/// What a Klusterlet installed by `ocm join --operator` asks for.
#[derive(Clone, Debug)]
pub struct KlusterletRequest<'a> {
    /// The `ocm` image.
    pub image: &'a str,
    /// The bootstrap kubeconfig.
    pub bootstrap: &'a str,
    /// The cluster's name on the hub.
    pub cluster_name: &'a str,
    /// One agent Deployment instead of two.
    pub singleton: bool,
    /// Requested lifetime of the agent's client certificate.
    pub client_cert_expiration_seconds: Option<i64>,
    /// Several hubs to choose from (then `bootstrap` is the first of them).
    pub several_hubs: Option<SeveralHubs<'a>>,
    /// `workConfiguration.appliedManifestWorkEvictionGracePeriod`; `None` = the agent's default.
    pub eviction_grace: Option<Duration>,
}

/// Several hubs for one Klusterlet (upstream's `MultipleHubs`):
/// `spec.registrationConfiguration.bootstrapKubeConfigs` of type `LocalSecrets`, which the
/// klusterlet operator hands to the registration agent (the agent chooses the hub).
#[derive(Clone, Copy, Debug)]
pub struct SeveralHubs<'a> {
    /// The hubs' bootstrap kubeconfigs, in order of preference.
    pub bootstrap_kubeconfigs: &'a [String],
    /// `hubConnectionTimeoutSeconds` (the API's minimum is 180).
    pub hub_connection_timeout_seconds: u64,
}

/// Installs the klusterlet operator (its own manifests), the bootstrap kubeconfig Secret and
/// Klusterlet [`KLUSTERLET`] on a managed cluster.
pub async fn install_klusterlet(
    spoke: &kube::Client,
    request: &KlusterletRequest<'_>,
) -> anyhow::Result<()> {
    install_klusterlet_operator(spoke, request.image).await?;
    create_klusterlet(spoke, request).await
}

/// Installs the klusterlet operator from its own manifests.
pub async fn install_klusterlet_operator(spoke: &kube::Client, image: &str) -> anyhow::Result<()> {
    let crd = serde_json::to_value(klusterlet_crd()?)?;
    apply_operator(
        spoke,
        &ocm_operator::manifests::klusterlet_operator(image, crd),
    )
    .await
}

/// Writes the bootstrap kubeconfig Secret and applies Klusterlet [`KLUSTERLET`].
pub async fn create_klusterlet(
    spoke: &kube::Client,
    request: &KlusterletRequest<'_>,
) -> anyhow::Result<()> {
    let mode = if request.singleton {
        "Singleton"
    } else {
        "Default"
    };
    let mut registration = serde_json::Map::new();
    if let Some(seconds) = request.client_cert_expiration_seconds {
        registration.insert("clientCertExpirationSeconds".into(), seconds.into());
    }
    match request.several_hubs {
        Some(hubs) => {
            let names =
                ocm_hub::join::prepare_spoke_for_hubs(spoke, hubs.bootstrap_kubeconfigs).await?;
            let secrets: Vec<serde_json::Value> = names
                .iter()
                .map(|name| serde_json::json!({"name": name}))
                .collect();
            registration.insert(
                "bootstrapKubeConfigs".into(),
                serde_json::json!({"type": "LocalSecrets", "localSecretsConfig": {
                    "kubeConfigSecrets": secrets,
                    "hubConnectionTimeoutSeconds": hubs.hub_connection_timeout_seconds}}),
            );
        }
        None => ocm_hub::join::prepare_spoke(spoke, request.bootstrap).await?,
    }
    let mut spec = serde_json::json!({
        "clusterName": request.cluster_name,
        "namespace": ocm_hub::join::AGENT_NAMESPACE,
        "deployOption": {"mode": mode}});
    if !registration.is_empty() {
        spec["registrationConfiguration"] = registration.into();
    }
    if let Some(grace) = request.eviction_grace {
        spec["workConfiguration"] =
            serde_json::json!({"appliedManifestWorkEvictionGracePeriod": go_duration(grace)});
    }
    let klusterlet = serde_json::json!({
        "apiVersion": "operator.open-cluster-management.io/v1", "kind": "Klusterlet",
        "metadata": {"name": KLUSTERLET}, "spec": spec});
    apply_object(spoke, &klusterlet).await
}

/// The ClusterManager CRD.
pub fn cluster_manager_crd() -> anyhow::Result<CustomResourceDefinition> {
    operator_crd(ocm_api::crds::hub(), "clustermanagers")
}

/// The Klusterlet CRD.
pub fn klusterlet_crd() -> anyhow::Result<CustomResourceDefinition> {
    operator_crd(ocm_api::crds::klusterlet(), "klusterlets")
}

/// The CRD of operator kind `plural` among `crds`.
fn operator_crd(
    crds: Vec<CustomResourceDefinition>,
    plural: &str,
) -> anyhow::Result<CustomResourceDefinition> {
    let name = format!("{plural}.operator.open-cluster-management.io");
    crds.into_iter()
        .find(|c| c.metadata.name.as_deref() == Some(name.as_str()))
        .ok_or_else(|| anyhow::anyhow!("the CRD {name} is missing from ocm-api"))
}

/// `duration` as the Klusterlet API writes durations (`90s`, `10m`, `2h`), in whole seconds
/// (a fraction rounds up).
fn go_duration(duration: Duration) -> String {
    let seconds = duration.as_secs() + u64::from(duration.subsec_nanos() > 0);
    match seconds {
        s if s > 0 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s > 0 && s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_written_in_the_largest_whole_unit() {
        assert_eq!(go_duration(Duration::from_secs(7200)), "2h");
        assert_eq!(go_duration(Duration::from_secs(600)), "10m");
        assert_eq!(go_duration(Duration::from_secs(90)), "90s");
        assert_eq!(go_duration(Duration::from_millis(1500)), "2s");
        assert_eq!(go_duration(Duration::ZERO), "0s");
    }

    #[test]
    fn both_operator_crds_are_found_among_the_api_crds() {
        let hub = cluster_manager_crd().unwrap();
        assert_eq!(
            hub.metadata.name.as_deref(),
            Some("clustermanagers.operator.open-cluster-management.io")
        );
        let spoke = klusterlet_crd().unwrap();
        assert_eq!(spoke.spec.names.kind, "Klusterlet");
    }

    #[test]
    fn the_default_image_is_the_one_build_image_tags() {
        assert_eq!(
            default_image(),
            format!("ocm:{}", env!("CARGO_PKG_VERSION"))
        );
    }
}
