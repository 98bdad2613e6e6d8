//! The helloworld agent: copies the ConfigMaps of its cluster's namespace on the hub into its
//! own namespace on the managed cluster, and renews its health Lease; [`cleanup`] removes the
//! copies (labelled [`COPIED_LABEL`]) when the addon goes.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use ocm_addon_framework::agent_helpers::{LeaseUpdater, RotatingHubClient};
use ocm_runtime::shutdown::Shutdown;
use serde_json::json;

/// Label on the copies the agent writes.
pub const COPIED_LABEL: &str = "helloworld.open-cluster-management.io/copied-from-hub";

/// Why copying stopped (it is retried).
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Reading the hub credentials.
    #[error("hub credentials")]
    Credentials(#[from] ocm_addon_framework::agent_helpers::AgentHelperError),
    /// The managed cluster refused a write.
    #[error("writing a copy")]
    Api(#[from] kube::Error),
}

/// The copy of a hub ConfigMap in `namespace`: same name and data, labelled.
pub fn copy_of(source: &ConfigMap, namespace: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": source.metadata.name, "namespace": namespace,
                     "labels": {COPIED_LABEL: "true"}},
        "data": source.data,
    })
}

/// Deletes the copies the agent wrote in `namespace` (the ConfigMaps labelled
/// [`COPIED_LABEL`]); returns how many there were.
pub async fn cleanup(spoke: &kube::Client, namespace: &str) -> Result<usize, kube::Error> {
    let configmaps: Api<ConfigMap> = Api::namespaced(spoke.clone(), namespace);
    let copies = configmaps
        .list(&ListParams::default().labels(&format!("{COPIED_LABEL}=true")))
        .await?;
    for copy in &copies.items {
        let Some(name) = copy.metadata.name.as_deref() else {
            continue;
        };
        match configmaps.delete(name, &DeleteParams::default()).await {
            Ok(_) => tracing::info!(configmap = name, "deleted the copy"),
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(err) => return Err(err),
        }
    }
    Ok(copies.items.len())
}

/// Copies until the watch ends or fails (the hub credentials may have rotated).
async fn copy_once(
    hub: &RotatingHubClient,
    spoke: &kube::Client,
    cluster: &str,
    namespace: &str,
) -> Result<(), AgentError> {
    let source: Api<ConfigMap> = Api::namespaced(hub.client().await?, cluster);
    let target: Api<ConfigMap> = Api::namespaced(spoke.clone(), namespace);
    let params = PatchParams::apply("helloworld-agent").force();
    let mut events = std::pin::pin!(watcher(source, watcher::Config::default()).applied_objects());
    while let Some(event) = events.next().await {
        let source = match event {
            Ok(source) => source,
            Err(err) => {
                tracing::debug!(%err, "hub watch failed; starting again");
                return Ok(());
            }
        };
        let Some(name) = source.metadata.name.clone() else {
            continue;
        };
        target
            .patch(&name, &params, &Patch::Apply(copy_of(&source, namespace)))
            .await?;
        tracing::info!(configmap = name, "copied from the hub");
    }
    Ok(())
}

/// Runs the agent of addon `addon` (the name of the Lease it renews in `namespace`) until
/// `shutdown`: hub credentials from `hub` (the mounted `<addon>-hub-kubeconfig`), the managed
/// cluster through `spoke`.
pub async fn run(
    hub: RotatingHubClient,
    spoke: kube::Client,
    cluster: String,
    namespace: String,
    addon: String,
    shutdown: Shutdown,
) {
    let lease = LeaseUpdater::new(spoke.clone(), namespace.clone(), addon);
    tokio::spawn(lease.run(shutdown.clone()));
    while !shutdown.is_cancelled() {
        let copying = copy_once(&hub, &spoke, &cluster, &namespace);
        tokio::select! {
            _ = shutdown.cancelled() => break,
            result = copying => {
                if let Err(err) = result {
                    tracing::warn!(%err, "copying ConfigMaps; retrying");
                }
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_keep_name_and_data_and_are_labelled() {
        let source: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": "greeting", "namespace": "c1", "uid": "u"},
            "data": {"hello": "world"}}))
        .unwrap_or_default();
        let copy = copy_of(&source, "agent-ns");
        assert_eq!(copy["metadata"]["name"], "greeting");
        assert_eq!(copy["metadata"]["namespace"], "agent-ns");
        assert_eq!(copy["metadata"]["labels"][COPIED_LABEL], "true");
        assert_eq!(copy["data"]["hello"], "world");
        assert!(copy["metadata"].get("uid").is_none());
    }
}
