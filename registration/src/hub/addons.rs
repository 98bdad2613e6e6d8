//! Addons as the registration hub sees them (upstream's addon feature discovery and addon
//! health-check controllers), one controller per ManagedCluster that also watches the
//! ManagedClusterAddOns in its namespace:
//!
//! - **Feature labels.** The cluster carries one label per addon,
//!   `feature.open-cluster-management.io/addon-<addon>`, valued from the addon's `Available`
//!   condition: True → `available`, False → `unhealthy`, Unknown or absent → `unreachable`.
//!   The label goes when its addon goes or starts deleting. Nothing is changed while the
//!   cluster is being deleted or has no `ManagedClusterConditionAvailable` yet.
//! - **Unknown clusters.** When a change of the cluster shows `ManagedClusterConditionAvailable`
//!   Unknown (its agent stopped renewing its Lease, so nobody reports its addons' health), every
//!   addon of the cluster gets `Available` Unknown with the cluster's reason and message. Only
//!   a change of the cluster does this (as upstream): an addon's own status change does not
//!   bring it back, so a live agent and the hub never take turns writing it.

use ocm_runtime::cache::SharedCache;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{self, ObjectRef, Store, reflector};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use ocm_api::addon::names::conditions::AVAILABLE as ADDON_AVAILABLE;
use ocm_api::addon::names::labels::{
    ADDON_FEATURE_AVAILABLE, ADDON_FEATURE_PREFIX, ADDON_FEATURE_UNHEALTHY,
    ADDON_FEATURE_UNREACHABLE, addon_feature,
};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::names::conditions::AVAILABLE;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::cache::strip_managed_fields;
use ocm_runtime::conditions::{condition, find_condition, set_condition};
use serde_json::{Map, Value, json};
use tracing::info;

use super::HubContext;
use super::lease::{HealthError, RETRY, ticks};

const CONTROLLER: &str = "managed-cluster-addons";

/// The feature label value of an addon, from its `Available` condition.
pub(crate) fn feature_value(addon: &ManagedClusterAddOn) -> &'static str {
    let conditions = addon
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    match find_condition(conditions, ADDON_AVAILABLE).map(|c| c.status.as_str()) {
        Some("True") => ADDON_FEATURE_AVAILABLE,
        Some("False") => ADDON_FEATURE_UNHEALTHY,
        _ => ADDON_FEATURE_UNREACHABLE,
    }
}

/// The feature label changes `cluster` needs given its `addons`: label → new value, `None` to
/// remove it. `None` overall when nothing changes (or the cluster is left alone: deleting, or
/// without an availability condition yet).
pub(crate) fn feature_label_changes(
    cluster: &ManagedCluster,
    addons: &[Arc<ManagedClusterAddOn>],
) -> Option<BTreeMap<String, Option<String>>> {
    if cluster.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let conditions = cluster
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    find_condition(conditions, AVAILABLE)?;
    let wanted: BTreeMap<String, &str> = addons
        .iter()
        .filter(|a| a.metadata.deletion_timestamp.is_none())
        .map(|a| (addon_feature(&a.name_any()), feature_value(a)))
        .collect();
    let current = cluster.metadata.labels.clone().unwrap_or_default();
    let mut changes = BTreeMap::new();
    for (key, value) in &wanted {
        if current.get(key).map(String::as_str) != Some(*value) {
            changes.insert(key.clone(), Some((*value).to_owned()));
        }
    }
    for key in current.keys() {
        if key.starts_with(ADDON_FEATURE_PREFIX) && !wanted.contains_key(key) {
            changes.insert(key.clone(), None);
        }
    }
    (!changes.is_empty()).then_some(changes)
}

/// The conditions `addon` should have when its cluster's `ManagedClusterConditionAvailable` is
/// `cluster_available`: `Available` Unknown with the cluster's reason and message when that is
/// Unknown; `None` when nothing changes.
pub(crate) fn unknown_addon_conditions(
    cluster_available: &Condition,
    addon: &ManagedClusterAddOn,
) -> Option<Vec<Condition>> {
    if cluster_available.status != "Unknown" {
        return None;
    }
    let mut conditions = addon
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let wanted = condition(
        ADDON_AVAILABLE,
        "Unknown",
        &cluster_available.reason,
        &cluster_available.message,
        None,
    );
    set_condition(&mut conditions, wanted).then_some(conditions)
}

struct Ctx {
    hub: Arc<HubContext>,
    addons: Store<ManagedClusterAddOn>,
    /// Per cluster, the resourceVersion whose availability was last handed to its addons.
    propagated: Mutex<HashMap<String, String>>,
}

impl Ctx {
    /// Whether `cluster` is a version not looked at for its addons' availability yet (and
    /// remembers it).
    fn first_look(&self, cluster: &ManagedCluster) -> bool {
        let name = cluster.name_any();
        let version = cluster.meta().resource_version.clone().unwrap_or_default();
        let mut seen = self.propagated.lock().unwrap_or_else(|p| p.into_inner());
        seen.insert(name, version.clone()).as_ref() != Some(&version)
    }

    /// Forgets `cluster`: its next reconcile looks again.
    fn forget(&self, cluster: &str) {
        let mut seen = self.propagated.lock().unwrap_or_else(|p| p.into_inner());
        seen.remove(cluster);
    }
}

async fn reconcile(cluster: Arc<ManagedCluster>, ctx: Arc<Ctx>) -> Result<Action, HealthError> {
    ctx.hub.metrics.reconciled(CONTROLLER);
    if ctx.addons.wait_until_ready().await.is_err() {
        return Ok(Action::requeue(RETRY));
    }
    let name = cluster.name_any();
    let addons = ctx
        .addons
        .state_filter(|a| a.metadata.namespace.as_deref() == Some(name.as_str()));
    let conditions = cluster
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    if let Some(available) = find_condition(conditions, AVAILABLE)
        && ctx.first_look(&cluster)
    {
        let api: Api<ManagedClusterAddOn> = Api::namespaced(ctx.hub.client.clone(), &name);
        for addon in &addons {
            let Some(updated) = unknown_addon_conditions(available, addon) else {
                continue;
            };
            let addon_name = addon.name_any();
            let patch = json!({"metadata": {"resourceVersion": addon.meta().resource_version},
                               "status": {"conditions": updated}});
            if let Err(e) = api
                .patch_status(&addon_name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                ctx.forget(&name);
                return Err(HealthError::kube(
                    format!("set addon {addon_name} of {name} unknown"),
                    e,
                ));
            }
            info!(cluster = %name, addon = %addon_name, "addon availability unknown with its cluster's");
        }
    }
    if let Some(changes) = feature_label_changes(&cluster, &addons) {
        let labels: Map<String, Value> = changes
            .iter()
            .map(|(k, v)| (k.clone(), v.clone().map_or(Value::Null, Value::String)))
            .collect();
        let patch = json!({"metadata": {"labels": labels}});
        Api::<ManagedCluster>::all(ctx.hub.client.clone())
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| HealthError::kube(format!("update addon labels of {name}"), e))?;
        info!(cluster = %name, labels = ?changes, "updated addon feature labels");
    }
    Ok(Action::await_change())
}

fn error_policy(_cluster: Arc<ManagedCluster>, err: &HealthError, ctx: Arc<Ctx>) -> Action {
    super::error::retry_after(&ctx.hub.metrics, CONTROLLER, err, RETRY)
}

/// Runs the controller until `ctx.shutdown` is cancelled.
pub(crate) async fn run(ctx: Arc<HubContext>, clusters: SharedCache<ManagedCluster>) {
    let (addons, writer) = reflector::store();
    let addon_events = reflector(
        writer,
        watcher(
            Api::<ManagedClusterAddOn>::all(ctx.client.clone()),
            watcher::Config::default().any_semantic(),
        )
        .backoff_on_errors()
        .modify(strip_managed_fields),
    )
    .touched_objects();
    let controller = clusters
        .controller()
        .watches_stream(addon_events, |addon: ManagedClusterAddOn| {
            addon
                .metadata
                .namespace
                .as_deref()
                .map(ObjectRef::<ManagedCluster>::new)
        })
        .with_config(
            kube::runtime::controller::Config::default()
                .concurrency(4)
                .debounce(Duration::from_millis(100)),
        )
        .reconcile_all_on(ticks(ctx.options.resync))
        .run(
            reconcile,
            error_policy,
            Arc::new(Ctx {
                hub: ctx.clone(),
                addons,
                propagated: Mutex::new(HashMap::new()),
            }),
        )
        .for_each(|_| futures::future::ready(()));
    tokio::select! {
        () = controller => {}
        () = ctx.shutdown.cancelled() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use ocm_api::addon::v1beta1::ManagedClusterAddOnStatus;
    use ocm_api::cluster::v1::{ManagedClusterSpec, ManagedClusterStatus};

    fn cluster(available: Option<&str>, labels: &[(&str, &str)]) -> ManagedCluster {
        let mut c = ManagedCluster::new("c1", ManagedClusterSpec::default());
        c.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
        c.status = Some(ManagedClusterStatus {
            conditions: available
                .map(|s| {
                    vec![condition(
                        AVAILABLE,
                        s,
                        "ManagedClusterLeaseUpdateStopped",
                        "Registration agent stopped updating its lease.",
                        None,
                    )]
                })
                .unwrap_or_default(),
            ..ManagedClusterStatus::default()
        });
        c
    }

    fn addon(name: &str, available: Option<&str>) -> Arc<ManagedClusterAddOn> {
        let mut a = ManagedClusterAddOn::new(name, Default::default());
        a.metadata.namespace = Some("c1".into());
        a.status = Some(ManagedClusterAddOnStatus {
            conditions: available
                .map(|s| {
                    vec![condition(
                        ADDON_AVAILABLE,
                        s,
                        "LeaseUpdated",
                        "fine",
                        Some(1),
                    )]
                })
                .unwrap_or_default(),
            ..Default::default()
        });
        Arc::new(a)
    }

    fn set(pairs: &[(&str, Option<&str>)]) -> BTreeMap<String, Option<String>> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.map(str::to_owned)))
            .collect()
    }

    #[test]
    fn labels_follow_each_addons_availability() {
        let addons = [
            addon("a", Some("True")),
            addon("b", Some("False")),
            addon("c", Some("Unknown")),
            addon("d", None),
        ];
        let changes = feature_label_changes(&cluster(Some("True"), &[("env", "dev")]), &addons);
        assert_eq!(
            changes,
            Some(set(&[
                (
                    "feature.open-cluster-management.io/addon-a",
                    Some("available")
                ),
                (
                    "feature.open-cluster-management.io/addon-b",
                    Some("unhealthy")
                ),
                (
                    "feature.open-cluster-management.io/addon-c",
                    Some("unreachable")
                ),
                (
                    "feature.open-cluster-management.io/addon-d",
                    Some("unreachable")
                ),
            ]))
        );
        let labelled = cluster(
            Some("True"),
            &[
                ("feature.open-cluster-management.io/addon-a", "available"),
                ("feature.open-cluster-management.io/addon-b", "unhealthy"),
                ("feature.open-cluster-management.io/addon-c", "unreachable"),
                ("feature.open-cluster-management.io/addon-d", "unreachable"),
            ],
        );
        assert_eq!(feature_label_changes(&labelled, &addons), None);
    }

    #[test]
    fn labels_of_gone_or_deleting_addons_go() {
        let mut deleting = (*addon("b", Some("True"))).clone();
        deleting.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        let c = cluster(
            Some("Unknown"),
            &[
                ("feature.open-cluster-management.io/addon-gone", "available"),
                ("feature.open-cluster-management.io/addon-b", "available"),
                ("feature.open-cluster-management.io/other", "x"),
            ],
        );
        assert_eq!(
            feature_label_changes(&c, &[Arc::new(deleting)]),
            Some(set(&[
                ("feature.open-cluster-management.io/addon-b", None),
                ("feature.open-cluster-management.io/addon-gone", None),
            ]))
        );
    }

    #[test]
    fn clusters_deleting_or_without_availability_are_left_alone() {
        let addons = [addon("a", Some("True"))];
        assert_eq!(feature_label_changes(&cluster(None, &[]), &addons), None);
        let mut deleting = cluster(Some("True"), &[]);
        deleting.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        assert_eq!(feature_label_changes(&deleting, &addons), None);
    }

    #[test]
    fn an_unknown_cluster_makes_its_addons_unknown() {
        let unknown = cluster(Some("Unknown"), &[]);
        let available = &unknown.status.as_ref().unwrap().conditions[0];
        let conditions = unknown_addon_conditions(available, &addon("a", Some("True"))).unwrap();
        let c = find_condition(&conditions, ADDON_AVAILABLE).unwrap();
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            (
                "Unknown",
                "ManagedClusterLeaseUpdateStopped",
                "Registration agent stopped updating its lease."
            )
        );
        let mut already = (*addon("a", None)).clone();
        already.status = Some(ManagedClusterAddOnStatus {
            conditions,
            ..Default::default()
        });
        assert_eq!(unknown_addon_conditions(available, &already), None);
        for status in ["True", "False"] {
            let other = cluster(Some(status), &[]);
            let available = &other.status.as_ref().unwrap().conditions[0];
            assert_eq!(
                unknown_addon_conditions(available, &addon("a", Some("True"))),
                None
            );
        }
    }
}
