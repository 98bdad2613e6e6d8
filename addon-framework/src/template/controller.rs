//! The hub controller that runs template addons: one [`AddonManager`] with a
//! [`TemplateAddon`] for every ClusterManagementAddOn whose `defaultConfigs` name the
//! `addontemplates` kind, started when such a ClusterManagementAddOn appears and stopped once
//! it is gone (or no longer names templates) and its last ManagedClusterAddOn has gone too —
//! so that deleting addons still runs their pre-delete hooks. When one stops, the
//! `SingleNamespace` hub RoleBindings it made are removed (those in cluster namespaces go with
//! their ManagedClusterAddOn).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, DeleteParams, ListParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use ocm_api::addon::names::labels::{ADDON_NAME, ADDON_TEMPLATE_NAME};
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::shutdown::Shutdown;

use super::addon::{TemplateAddon, TemplateHistory};
use crate::configs::{TEMPLATE_RESOURCE, is_template_addon};
use crate::manager::AddonManager;

/// Where signing CA secrets without a namespace are read when the caller does not say: the
/// namespace upstream's hub addon manager runs in.
pub const DEFAULT_MANAGER_NAMESPACE: &str = "open-cluster-management-hub";

/// Which running template addons to start and stop, given the ClusterManagementAddOns that are
/// template addons and whether an addon still has ManagedClusterAddOns — pure.
fn changes(
    wanted: &BTreeSet<String>,
    has_addons: impl Fn(&str) -> bool,
    running: &BTreeSet<String>,
) -> (Vec<String>, Vec<String>) {
    let start = wanted.difference(running).cloned().collect();
    let stop = running
        .iter()
        .filter(|name| !wanted.contains(*name) && !has_addons(name))
        .cloned()
        .collect();
    (start, stop)
}

/// Runs every template addon of the hub until `shutdown`; signing CA secrets without a
/// namespace are read from `manager_namespace`.
#[inline(never)]
pub fn run_template_addons(
    client: kube::Client,
    manager_namespace: String,
    shutdown: Shutdown,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(run_template_addons_body(
        client,
        manager_namespace,
        shutdown,
    ))
}

async fn run_template_addons_body(
    client: kube::Client,
    manager_namespace: String,
    shutdown: Shutdown,
) {
    let history = Arc::new(TemplateHistory::default());
    let templates = feed_history(client.clone(), history.clone(), shutdown.clone());
    let (cmas, cma_writer) = reflector::store();
    let (mcas, mca_writer) = reflector::store();
    let cma_events = watcher(
        Api::<ClusterManagementAddOn>::all(client.clone()),
        watcher::Config::default(),
    )
    .backoff_on_errors()
    .reflect(cma_writer)
    .map(|_| ());
    let mca_events = watcher(
        Api::<ManagedClusterAddOn>::all(client.clone()),
        watcher::Config::default(),
    )
    .backoff_on_errors()
    .modify(|m: &mut ManagedClusterAddOn| {
        m.metadata.managed_fields = None;
        m.status = None;
    })
    .reflect(mca_writer)
    .map(|_| ());
    let mut events = std::pin::pin!(
        futures::stream::select(cma_events, mca_events).take_until(shutdown.cancelled())
    );
    let mut running: BTreeMap<String, Shutdown> = BTreeMap::new();
    let mut tasks = vec![templates];
    while events.next().await.is_some() {
        if !ready(&cmas) || !ready(&mcas) {
            continue;
        }
        let wanted: BTreeSet<String> = cmas
            .state()
            .iter()
            .filter(|c| is_template_addon(c))
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        // Asked only of running addons that are no longer wanted: no pass over every
        // ManagedClusterAddOn of the hub on each of their events.
        let has_addons = |name: &str| {
            mcas.find(|m| m.metadata.name.as_deref() == Some(name))
                .is_some()
        };
        let names: BTreeSet<String> = running.keys().cloned().collect();
        let (start, stop) = changes(&wanted, has_addons, &names);
        for name in start {
            tracing::info!(addon = name, "starting the template addon");
            let child = shutdown.child();
            let addon =
                TemplateAddon::new(&name, client.clone(), history.clone(), &manager_namespace);
            let manager = AddonManager::new(client.clone()).with_addon(Arc::new(addon));
            tasks.push(tokio::spawn(manager.run(child.clone())));
            running.insert(name, child);
        }
        for name in stop {
            tracing::info!(addon = name, "stopping the template addon: it is gone");
            if let Some(child) = running.remove(&name) {
                child.cancel();
            }
            remove_shared_bindings(&client, &name).await;
        }
    }
    for task in tasks {
        let _ = task.await;
    }
}

/// Whether a cache holds its first list (events before that are not acted on).
fn ready<K>(store: &Store<K>) -> bool
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    use futures::FutureExt;
    matches!(store.wait_until_ready().now_or_never(), Some(Ok(())))
}

/// Keeps `history` fed with every AddOnTemplate version, read as plain JSON (the spec hash is
/// that of the object as stored).
fn feed_history(
    client: kube::Client,
    history: Arc<TemplateHistory>,
    shutdown: Shutdown,
) -> tokio::task::JoinHandle<()> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(ocm_api::addon::GROUP, "v1alpha1", "AddOnTemplate"),
        TEMPLATE_RESOURCE,
    );
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    tokio::spawn(async move {
        watcher(api, watcher::Config::default())
            .backoff_on_errors()
            .applied_objects()
            .take_until(shutdown.cancelled())
            .for_each(|object| {
                if let Ok(object) = object {
                    let name = object.metadata.name.clone().unwrap_or_default();
                    match serde_json::to_value(&object).map(|v| history.record(&v)) {
                        Ok(Ok(hash)) => tracing::debug!(template = name, hash, "template seen"),
                        Ok(Err(err)) | Err(err) => {
                            tracing::warn!(template = name, %err, "not an AddOnTemplate spec")
                        }
                    }
                }
                async {}
            })
            .await;
    })
}

/// Deletes the hub RoleBindings a template addon made outside cluster namespaces.
async fn remove_shared_bindings(client: &kube::Client, addon: &str) {
    let bindings: Api<RoleBinding> = Api::all(client.clone());
    let selector = format!("{ADDON_NAME}={addon},{ADDON_TEMPLATE_NAME}");
    let Ok(list) = bindings
        .list(&ListParams::default().labels(&selector))
        .await
    else {
        tracing::warn!(
            addon,
            "could not list the addon's hub RoleBindings to remove them"
        );
        return;
    };
    for binding in list {
        let (Some(namespace), Some(name)) = (binding.metadata.namespace, binding.metadata.name)
        else {
            continue;
        };
        let api: Api<RoleBinding> = Api::namespaced(client.clone(), &namespace);
        if let Err(err) = api.delete(&name, &DeleteParams::default()).await {
            tracing::warn!(addon, namespace, name, %err, "could not remove a hub RoleBinding");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn template_addons_stop_only_once_their_addons_are_gone() {
        let none = set(&[]);
        let (start, stop) = changes(&set(&["a", "b"]), |n| none.contains(n), &set(&["b"]));
        assert_eq!((start, stop), (vec!["a".to_owned()], vec![]));
        let b = set(&["b"]);
        let (start, stop) = changes(&set(&[]), |n| b.contains(n), &set(&["b", "c"]));
        assert_eq!((start, stop), (vec![], vec!["c".to_owned()]));
    }

    #[test]
    fn template_addons_are_those_whose_defaults_name_templates() {
        let cma = |configs: serde_json::Value| -> ClusterManagementAddOn {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "addon.open-cluster-management.io/v1beta1",
                "kind": "ClusterManagementAddOn", "metadata": {"name": "a"},
                "spec": {"defaultConfigs": configs}}))
            .unwrap()
        };
        assert!(is_template_addon(&cma(serde_json::json!([
            {"group": "addon.open-cluster-management.io", "resource": "addontemplates", "name": "t"}]))));
        assert!(!is_template_addon(&cma(serde_json::json!([
            {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
             "name": "d", "namespace": "n"}]))));
    }
}
