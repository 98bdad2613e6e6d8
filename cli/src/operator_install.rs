//! `ocm init --operator` and `ocm join --operator`: install an operator from its own
//! manifests (the same `ocm operator manifests` prints), then the ClusterManager or
//! Klusterlet it acts on; optionally wait until it did.

use std::time::Duration;

use anyhow::Context;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::Value;

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

/// Waits (up to `timeout`) until object `name` of `api` satisfies `done`.
pub async fn wait_until<K>(
    api: Api<K>,
    name: &str,
    timeout: Duration,
    done: impl Fn(&K) -> bool + Send + 'static,
) -> anyhow::Result<()>
where
    K: kube::Resource
        + Clone
        + k8s_openapi::serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    tokio::time::timeout(
        timeout,
        await_condition(api, name, move |o: Option<&K>| o.is_some_and(&done)),
    )
    .await
    .with_context(|| format!("{name} not ready after {} s", timeout.as_secs()))??;
    Ok(())
}

/// Whether `conditions` hold one of type `type_` with `status`.
pub fn has(
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    type_: &str,
    status: &str,
) -> bool {
    conditions
        .iter()
        .any(|c| c.type_ == type_ && c.status == status)
}
