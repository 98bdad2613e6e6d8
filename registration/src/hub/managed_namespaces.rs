//! Managed namespaces (upstream's managed-namespace controller): each ManagedCluster's
//! `status.managedNamespaces` lists, for every cluster set it belongs to, the namespaces in
//! that set's `spec.managedNamespaces` — `{name, clusterSet}`, sorted by set then name. The
//! agent creates them on the managed cluster and reports their `NamespaceAvailable`
//! condition in the same list.
//!
//! Sets being deleted contribute nothing; clusters being deleted are left alone. Written when
//! a cluster's labels change (membership) or a set changes, for the set's members and for the
//! clusters that list namespaces of it.
//!
//! Deviation from upstream: an entry that stays keeps the conditions the agent reported
//! (upstream writes the list without conditions, wiping them until the agent's next sync).

use ocm_runtime::cache::SharedCache;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams};
use kube::core::SelectorExt;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{self, ObjectRef, Store, reflector};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use ocm_api::cluster::v1::{ClusterSetManagedNamespaceConfig, ManagedCluster};
use ocm_api::cluster::v1beta2::ManagedClusterSet;
use ocm_runtime::backoff::WatchBackoffExt;
use serde_json::{Value, json};

use super::HubContext;
use super::clustersets::member_selector;
use super::lease::{HealthError, RETRY, ticks};

const CONTROLLER: &str = "managed-namespace";

// --- pure functions ----------------------------------------------------------------------------

/// Whether `set` selects `cluster`.
pub(crate) fn is_member(set: &ManagedClusterSet, cluster: &ManagedCluster) -> bool {
    member_selector(set).is_some_and(|s| s.matches(cluster.labels()))
}

/// The `status.managedNamespaces` `cluster` should have given every cluster set: one entry per
/// namespace of each set (not being deleted) that selects it, sorted by set then name, each
/// keeping the conditions of the same entry in `cluster`'s current list.
pub(crate) fn desired(
    cluster: &ManagedCluster,
    sets: &[Arc<ManagedClusterSet>],
) -> Vec<ClusterSetManagedNamespaceConfig> {
    let current: HashMap<(&str, &str), &ClusterSetManagedNamespaceConfig> = cluster
        .status
        .iter()
        .flat_map(|s| &s.managed_namespaces)
        .map(|e| ((e.cluster_set.as_str(), e.name.as_str()), e))
        .collect();
    let mut out = Vec::new();
    for set in sets {
        if set.metadata.deletion_timestamp.is_some() || !is_member(set, cluster) {
            continue;
        }
        let set_name = set.name_any();
        for ns in &set.spec.managed_namespaces {
            let conditions = current
                .get(&(set_name.as_str(), ns.name.as_str()))
                .map(|e| e.conditions.clone())
                .unwrap_or_default();
            out.push(ClusterSetManagedNamespaceConfig {
                name: ns.name.clone(),
                cluster_set: set_name.clone(),
                conditions,
            });
        }
    }
    out.sort_by(|a, b| (&a.cluster_set, &a.name).cmp(&(&b.cluster_set, &b.name)));
    out.dedup_by(|a, b| a.cluster_set == b.cluster_set && a.name == b.name);
    out
}

/// The merge patch writing `desired` as `cluster`'s managed namespaces, or `None` when they
/// are already so.
pub(crate) fn status_patch(
    cluster: &ManagedCluster,
    desired: &[ClusterSetManagedNamespaceConfig],
) -> Option<Value> {
    let current = cluster
        .status
        .as_ref()
        .map(|s| s.managed_namespaces.as_slice())
        .unwrap_or_default();
    if current == desired {
        return None;
    }
    let list = if desired.is_empty() {
        Value::Null
    } else {
        json!(desired)
    };
    Some(json!({
        "metadata": {"resourceVersion": cluster.meta().resource_version},
        "status": {"managedNamespaces": list},
    }))
}

/// Names of the clusters a change of `set` may concern: its members and the clusters that
/// list namespaces of it.
pub(crate) fn clusters_of_set<'a>(
    set: &ManagedClusterSet,
    clusters: impl IntoIterator<Item = &'a ManagedCluster>,
) -> Vec<String> {
    let name = set.name_any();
    clusters
        .into_iter()
        .filter(|c| {
            is_member(set, c)
                || c.status
                    .iter()
                    .flat_map(|s| &s.managed_namespaces)
                    .any(|e| e.cluster_set == name)
        })
        .map(|c| c.name_any())
        .collect()
}

// --- controller --------------------------------------------------------------------------------

struct Ctx {
    hub: Arc<HubContext>,
    sets: Store<ManagedClusterSet>,
}

async fn reconcile(cluster: Arc<ManagedCluster>, ctx: Arc<Ctx>) -> Result<Action, HealthError> {
    ctx.hub.metrics.reconciled(CONTROLLER);
    if cluster.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    if ctx.sets.wait_until_ready().await.is_err() {
        return Ok(Action::await_change());
    }
    let wanted = desired(&cluster, &ctx.sets.state());
    let Some(patch) = status_patch(&cluster, &wanted) else {
        return Ok(Action::await_change());
    };
    let name = cluster.name_any();
    Api::<ManagedCluster>::all(ctx.hub.client.clone())
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| HealthError::kube(format!("update managed namespaces of {name}"), e))?;
    Ok(Action::await_change())
}

fn error_policy(_cluster: Arc<ManagedCluster>, err: &HealthError, ctx: Arc<Ctx>) -> Action {
    super::error::retry_after(&ctx.hub.metrics, CONTROLLER, err, RETRY)
}

/// Runs the managed-namespace controller until `ctx.shutdown` is cancelled.
pub(crate) async fn run(ctx: Arc<HubContext>, clusters: SharedCache<ManagedCluster>) {
    tokio::select! {
        () = controller(ctx.clone(), clusters) => {}
        () = ctx.shutdown.cancelled() => {}
    }
}

/// The controller itself, until its watches end. Every cluster event is reconciled: without a
/// difference it costs no request.
async fn controller(ctx: Arc<HubContext>, clusters: SharedCache<ManagedCluster>) {
    let controller = clusters.controller().with_config(
        kube::runtime::controller::Config::default().debounce(Duration::from_millis(200)),
    );
    let clusters: Store<ManagedCluster> = controller.store();
    let (sets, writer) = reflector::store::<ManagedClusterSet>();
    let set_events = reflector(
        writer,
        watcher(
            Api::<ManagedClusterSet>::all(ctx.client.clone()),
            watcher::Config::default().any_semantic(),
        )
        .backoff_on_errors(),
    )
    .touched_objects();
    controller
        .watches_stream(set_events, move |set| {
            let names: BTreeSet<String> =
                clusters_of_set(&set, clusters.state().iter().map(|c| &**c))
                    .into_iter()
                    .collect();
            names
                .into_iter()
                .map(|n| ObjectRef::<ManagedCluster>::new(&n))
                .collect::<Vec<_>>()
        })
        .reconcile_all_on(ticks(ctx.options.resync))
        .run(
            reconcile,
            error_policy,
            Arc::new(Ctx {
                hub: ctx.clone(),
                sets,
            }),
        )
        .for_each(|_| futures::future::ready(()))
        .await;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
    use ocm_api::cluster::names::labels::CLUSTER_SET;
    use ocm_api::cluster::v1::{ManagedClusterSpec, ManagedClusterStatus};
    use ocm_api::cluster::v1beta2::{
        ManagedClusterSelector, ManagedClusterSetSpec, ManagedNamespaceConfig, SelectorType,
    };
    use ocm_runtime::conditions::condition;

    fn cluster(labels: &[(&str, &str)]) -> ManagedCluster {
        let mut c = ManagedCluster::new("c1", ManagedClusterSpec::default());
        c.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
        c.metadata.resource_version = Some("7".into());
        c
    }

    fn set(
        name: &str,
        selector: Option<LabelSelector>,
        namespaces: &[&str],
    ) -> Arc<ManagedClusterSet> {
        Arc::new(ManagedClusterSet::new(
            name,
            ManagedClusterSetSpec {
                cluster_selector: selector.map(|s| ManagedClusterSelector {
                    selector_type: SelectorType::LabelSelector,
                    label_selector: Some(s),
                }),
                managed_namespaces: namespaces
                    .iter()
                    .map(|n| ManagedNamespaceConfig { name: (*n).into() })
                    .collect(),
            },
        ))
    }

    fn entry(set: &str, name: &str) -> ClusterSetManagedNamespaceConfig {
        ClusterSetManagedNamespaceConfig {
            name: name.into(),
            cluster_set: set.into(),
            conditions: Vec::new(),
        }
    }

    #[test]
    fn every_set_of_the_cluster_contributes_its_namespaces_sorted() {
        let c = cluster(&[(CLUSTER_SET, "universal"), ("env", "dev")]);
        let sets = vec![
            set("universal", None, &["ns-b", "ns-a"]),
            set("other", None, &["ns-x"]),
            set(
                "by-label",
                Some(LabelSelector {
                    match_labels: Some(BTreeMap::from([("env".into(), "dev".into())])),
                    ..Default::default()
                }),
                &["ns-c"],
            ),
            set("everyone", Some(LabelSelector::default()), &[]),
        ];
        assert_eq!(
            desired(&c, &sets),
            vec![
                entry("by-label", "ns-c"),
                entry("universal", "ns-a"),
                entry("universal", "ns-b")
            ]
        );
        // A set being deleted contributes nothing.
        let mut deleting = (*sets[0]).clone();
        deleting.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::now()));
        assert_eq!(
            desired(&c, &[Arc::new(deleting)]),
            Vec::<ClusterSetManagedNamespaceConfig>::new()
        );
    }

    #[test]
    fn reported_conditions_stay_and_unchanged_lists_are_not_written() {
        let mut c = cluster(&[(CLUSTER_SET, "universal")]);
        let mut reported = entry("universal", "ns-a");
        reported.conditions = vec![condition(
            "NamespaceAvailable",
            "True",
            "NamespaceApplied",
            "ok",
            None,
        )];
        c.status = Some(ManagedClusterStatus {
            managed_namespaces: vec![reported.clone(), entry("gone", "ns-z")],
            ..Default::default()
        });
        let sets = vec![set("universal", None, &["ns-a", "ns-b"])];
        let wanted = desired(&c, &sets);
        assert_eq!(wanted, vec![reported.clone(), entry("universal", "ns-b")]);
        let patch = status_patch(&c, &wanted).unwrap();
        assert_eq!(patch["metadata"]["resourceVersion"], "7");
        assert_eq!(
            patch["status"]["managedNamespaces"][0]["conditions"][0]["reason"],
            "NamespaceApplied"
        );
        c.status.as_mut().unwrap().managed_namespaces = wanted.clone();
        assert_eq!(status_patch(&c, &wanted), None);
        // Leaving every set empties the list (a merge patch's null).
        let patch = status_patch(&c, &[]).unwrap();
        assert_eq!(patch["status"]["managedNamespaces"], Value::Null);
    }

    #[test]
    fn a_set_change_concerns_members_and_former_members() {
        let member = cluster(&[(CLUSTER_SET, "universal")]);
        let mut former = cluster(&[(CLUSTER_SET, "default")]);
        former.metadata.name = Some("c2".into());
        former.status = Some(ManagedClusterStatus {
            managed_namespaces: vec![entry("universal", "ns-a")],
            ..Default::default()
        });
        let mut stranger = cluster(&[(CLUSTER_SET, "default")]);
        stranger.metadata.name = Some("c3".into());
        let s = set("universal", None, &["ns-a"]);
        assert_eq!(
            clusters_of_set(&s, [&member, &former, &stranger]),
            vec!["c1".to_owned(), "c2".to_owned()]
        );
    }
}
