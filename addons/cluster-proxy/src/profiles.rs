//! Publishes how to reach each cluster through this proxy in its ClusterProfiles (the Cluster
//! Inventory API's `status.accessProviders`), as upstream's cluster-proxy does: the provider
//! `open-cluster-management`, whose server is this proxy's URL for the cluster, trusted
//! through the proxy's CA, with the exec extension `{"clusterName": <cluster>}` a credential
//! plugin receives. A consumer configured with that provider name (and `ocm clusterprofile
//! credentials` as its plugin) reaches the cluster as its own hub identity; the proxy's
//! authorization (`managedclusters/proxy`) decides.
//!
//! Only profiles OCM made are touched: label `x-k8s.io/cluster-manager=open-cluster-management`
//! and a `open-cluster-management.io/cluster-name` label. Other providers in the list stay.
//! Without the ClusterProfile CRD on the hub the watch keeps retrying quietly, and starts
//! working once the hub's `ClusterProfile` gate installs it.

use std::sync::Arc;

use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use ocm_api::multicluster::v1alpha1::{
    AccessProvider, ClusterProfile, KubeconfigCluster, NamedExtension,
};
use ocm_api::multicluster::{
    ACCESS_PROVIDER_NAME, CLUSTER_MANAGER_NAME, EXEC_EXTENSION, LABEL_CLUSTER_MANAGER,
    LABEL_CLUSTER_NAME,
};
use ocm_api::schema::PreservedObject;
use ocm_runtime::shutdown::Shutdown;
use serde_json::json;

use crate::ProxyError;
use crate::pki::Endpoint;

/// How long to wait before retrying a failed update.
const RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// The cluster a profile is for, when it is one of OCM's.
pub fn profile_cluster(profile: &ClusterProfile) -> Option<&str> {
    let labels = profile.metadata.labels.as_ref()?;
    if labels.get(LABEL_CLUSTER_MANAGER).map(String::as_str) != Some(CLUSTER_MANAGER_NAME) {
        return None;
    }
    labels
        .get(LABEL_CLUSTER_NAME)
        .map(String::as_str)
        .filter(|c| !c.is_empty())
}

/// The access provider this proxy publishes for `cluster`.
pub fn access_provider(endpoint: &Endpoint, cluster: &str) -> AccessProvider {
    AccessProvider {
        name: ACCESS_PROVIDER_NAME.to_owned(),
        cluster: Some(KubeconfigCluster {
            server: format!("{}/clusters/{cluster}", endpoint.url.trim_end_matches('/')),
            certificate_authority_data: Some(k8s_openapi::ByteString(
                endpoint.ca_pem.as_bytes().to_vec(),
            )),
            extensions: vec![NamedExtension {
                name: EXEC_EXTENSION.to_owned(),
                extension: PreservedObject(json!({"clusterName": cluster})),
            }],
            ..KubeconfigCluster::default()
        }),
    }
}

/// `current` with `ours` in place of any provider of its name (appended when absent), or
/// `None` when it is there already.
pub fn with_provider(
    current: &[AccessProvider],
    ours: AccessProvider,
) -> Option<Vec<AccessProvider>> {
    if current.contains(&ours) {
        return None;
    }
    let mut next = current.to_vec();
    match next.iter_mut().find(|p| p.name == ours.name) {
        Some(existing) => *existing = ours,
        None => next.push(ours),
    }
    Some(next)
}

struct Ctx {
    hub: kube::Client,
    endpoint: Endpoint,
}

async fn reconcile(profile: Arc<ClusterProfile>, ctx: Arc<Ctx>) -> Result<Action, ProxyError> {
    let Some(cluster) = profile_cluster(&profile) else {
        return Ok(Action::await_change());
    };
    let current = profile
        .status
        .as_ref()
        .map(|s| s.access_providers.as_slice())
        .unwrap_or_default();
    let Some(next) = with_provider(current, access_provider(&ctx.endpoint, cluster)) else {
        return Ok(Action::await_change());
    };
    let namespace = profile.namespace().unwrap_or_default();
    let api: Api<ClusterProfile> = Api::namespaced(ctx.hub.clone(), &namespace);
    // The whole list, guarded by the version it was read at: a merge patch replaces lists,
    // and another publisher's provider must not be lost to a race.
    let patch = json!({
        "metadata": {"resourceVersion": profile.meta().resource_version},
        "status": {"accessProviders": next},
    });
    api.patch_status(
        &profile.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await?;
    tracing::info!(%namespace, cluster, "published the proxy's access provider");
    Ok(Action::await_change())
}

fn error_policy(_profile: Arc<ClusterProfile>, err: &ProxyError, _ctx: Arc<Ctx>) -> Action {
    match err {
        ProxyError::Api(kube::Error::Api(s)) if s.code == 409 => {
            tracing::debug!(error = %err, "access provider update conflicted; retrying");
        }
        _ => tracing::warn!(error = %err, "could not publish the access provider; retrying"),
    }
    Action::requeue(RETRY)
}

/// Keeps the proxy's access provider on every OCM ClusterProfile of the hub until
/// `shutdown`. The hub identity needs `get`, `list`, `watch` on `clusterprofiles` and `patch`
/// on `clusterprofiles/status` (group `multicluster.x-k8s.io`).
pub async fn run(hub: kube::Client, endpoint: Endpoint, shutdown: Shutdown) {
    let config = watcher::Config::default()
        .labels(&format!(
            "{LABEL_CLUSTER_MANAGER}={CLUSTER_MANAGER_NAME},{LABEL_CLUSTER_NAME}"
        ))
        .any_semantic();
    let ctx = Arc::new(Ctx {
        hub: hub.clone(),
        endpoint,
    });
    ocm_runtime::cache::controller(Api::<ClusterProfile>::all(hub), config)
        .graceful_shutdown_on(async move { shutdown.cancelled().await })
        .run(reconcile, error_policy, ctx)
        .for_each(|result| {
            if let Err(err) = result {
                // Without the CRD (the hub's ClusterProfile gate off) the watch fails until
                // it appears; that is expected, not worth a warning each time.
                tracing::debug!(error = %err, "cluster profile watch");
            }
            futures::future::ready(())
        })
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocm_api::multicluster::v1alpha1::ClusterProfileSpec;

    fn endpoint() -> Endpoint {
        Endpoint {
            url: "https://proxy.example.com:8443/".to_owned(),
            ca_pem: "PEM".to_owned(),
        }
    }

    #[test]
    fn the_provider_points_at_the_proxy_path_of_the_cluster() {
        let provider = access_provider(&endpoint(), "c1");
        let json = serde_json::to_value(&provider).expect("serializes");
        assert_eq!(
            json,
            json!({"name": "open-cluster-management", "cluster": {
                "server": "https://proxy.example.com:8443/clusters/c1",
                "certificate-authority-data": "UEVN",
                "extensions": [{"name": "client.authentication.k8s.io/exec",
                                "extension": {"clusterName": "c1"}}],
            }})
        );
    }

    #[test]
    fn other_providers_stay_and_ours_is_replaced_or_added() {
        let other = AccessProvider {
            name: "someone-else".to_owned(),
            cluster: None,
        };
        let ours = access_provider(&endpoint(), "c1");
        let added = with_provider(std::slice::from_ref(&other), ours.clone()).expect("added");
        assert_eq!(added, vec![other.clone(), ours.clone()]);
        assert_eq!(with_provider(&added, ours.clone()), None);
        let stale = AccessProvider {
            name: ACCESS_PROVIDER_NAME.to_owned(),
            cluster: None,
        };
        assert_eq!(
            with_provider(&[stale, other.clone()], ours.clone()),
            Some(vec![ours, other])
        );
    }

    #[test]
    fn only_ocm_profiles_with_a_cluster_name_are_served() {
        let mut profile = ClusterProfile::new("c1", ClusterProfileSpec::default());
        assert_eq!(profile_cluster(&profile), None);
        profile
            .labels_mut()
            .insert(LABEL_CLUSTER_MANAGER.to_owned(), "other".to_owned());
        profile
            .labels_mut()
            .insert(LABEL_CLUSTER_NAME.to_owned(), "c1".to_owned());
        assert_eq!(profile_cluster(&profile), None);
        profile.labels_mut().insert(
            LABEL_CLUSTER_MANAGER.to_owned(),
            CLUSTER_MANAGER_NAME.to_owned(),
        );
        assert_eq!(profile_cluster(&profile), Some("c1"));
    }
}
