//! Cluster sets (upstream's default/global set, cluster set and binding controllers).
//!
//! - With [`HubOptions::default_cluster_sets`] (upstream's DefaultClusterSet gate):
//!   the `default` set (selector type `ExclusiveClusterSetLabel`) and the `global` set (type
//!   `LabelSelector`, empty selector: every cluster) exist; they are recreated when deleted and
//!   their cluster selector is reset when changed (the rest of the spec, such as
//!   `managedNamespaces`, is the admin's), unless annotated
//!   `cluster.open-cluster-management.io/autoupdate: "false"`. Clusters without a (non-empty)
//!   `cluster.open-cluster-management.io/clusterset` label get `default` — done at admission
//!   by [`super::admission`] and, so that it holds on any API server, by a controller here.
//! - Every set gets condition `ClusterSetEmpty`: False/ClustersSelected
//!   ("N ManagedClusters selected") or True/NoClusterMatched ("No ManagedCluster selected").
//! - Every ManagedClusterSetBinding gets condition `Bound`: True/ClusterSetBound when its set
//!   exists, else False/ClusterSetNotFound.
//!
//! [`HubOptions::default_cluster_sets`]: super::HubOptions::default_cluster_sets

use ocm_runtime::cache::SharedCache;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::{Selector, SelectorExt};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use ocm_api::cluster::names::annotations::AUTOUPDATE;
use ocm_api::cluster::names::conditions::{BOUND, CLUSTER_SET_EMPTY, bound, cluster_set_empty};
use ocm_api::cluster::names::labels::CLUSTER_SET;
use ocm_api::cluster::names::{DEFAULT_CLUSTER_SET, GLOBAL_CLUSTER_SET};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta2::{
    ManagedClusterSelector, ManagedClusterSet, ManagedClusterSetBinding, ManagedClusterSetSpec,
    SelectorType,
};

use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::conditions::{condition, set_condition};
use serde_json::json;
use tracing::info;

use super::HubContext;
use super::lease::{HealthError, RETRY, has_code, ticks};

const SET_CONTROLLER: &str = "managed-cluster-set";
const BINDING_CONTROLLER: &str = "managed-cluster-set-binding";
const BUILTIN_CONTROLLER: &str = "builtin-cluster-sets";
const LABEL_CONTROLLER: &str = "default-cluster-set-label";

/// Message of ClusterSetEmpty=True.
const NO_CLUSTER_SELECTED: &str = "No ManagedCluster selected";

// --- pure functions ----------------------------------------------------------------------------

/// The spec a built-in set must have, or `None` for other names.
pub(crate) fn builtin_spec(name: &str) -> Option<ManagedClusterSetSpec> {
    let selector = match name {
        DEFAULT_CLUSTER_SET => ManagedClusterSelector {
            selector_type: SelectorType::ExclusiveClusterSetLabel,
            label_selector: None,
        },
        GLOBAL_CLUSTER_SET => ManagedClusterSelector {
            selector_type: SelectorType::LabelSelector,
            label_selector: Some(LabelSelector::default()),
        },
        _ => return None,
    };
    Some(ManagedClusterSetSpec {
        cluster_selector: Some(selector),
        managed_namespaces: Vec::new(),
    })
}

/// What to do about one built-in set.
#[derive(Clone, Debug)]
pub(crate) enum BuiltinAction {
    /// Fine as it is (or not ours to touch).
    Keep,
    /// Missing: create it.
    Create(ManagedClusterSet),
    /// Its cluster selector drifted: put this spec (the right selector, the rest as it was)
    /// back.
    Reset(ManagedClusterSetSpec),
}

/// The action for built-in set `name` given its current state.
pub(crate) fn builtin_action(name: &str, current: Option<&ManagedClusterSet>) -> BuiltinAction {
    let Some(spec) = builtin_spec(name) else {
        return BuiltinAction::Keep;
    };
    let Some(current) = current else {
        return BuiltinAction::Create(ManagedClusterSet::new(name, spec));
    };
    if current.metadata.deletion_timestamp.is_some()
        || current
            .annotations()
            .get(AUTOUPDATE)
            .is_some_and(|v| v == "false")
    {
        return BuiltinAction::Keep;
    }
    // Only the selector is the hub's (as upstream): `managedNamespaces` and anything else
    // stay as the admin set them. A missing selector is the same as the schema default
    // (ExclusiveClusterSetLabel).
    let selector = current.spec.cluster_selector.clone().unwrap_or_default();
    if Some(selector) == spec.cluster_selector {
        BuiltinAction::Keep
    } else {
        BuiltinAction::Reset(ManagedClusterSetSpec {
            cluster_selector: spec.cluster_selector,
            ..current.spec.clone()
        })
    }
}

/// The `ClusterSetEmpty` condition for a set selecting `count` clusters.
pub(crate) fn empty_condition(count: usize) -> Condition {
    if count == 0 {
        condition(
            CLUSTER_SET_EMPTY,
            "True",
            cluster_set_empty::NO_CLUSTER_MATCHED,
            NO_CLUSTER_SELECTED,
            None,
        )
    } else {
        condition(
            CLUSTER_SET_EMPTY,
            "False",
            cluster_set_empty::CLUSTERS_SELECTED,
            &format!("{count} ManagedClusters selected"),
            None,
        )
    }
}

/// The `Bound` condition of a binding whose set exists or not.
pub(crate) fn bound_condition(set_exists: bool) -> Condition {
    if set_exists {
        condition(BOUND, "True", bound::CLUSTER_SET_BOUND, "", None)
    } else {
        condition(BOUND, "False", bound::CLUSTER_SET_NOT_FOUND, "", None)
    }
}

/// `conditions` with `new` set, or `None` when nothing but timestamps would change.
pub(crate) fn updated_conditions(
    conditions: &[Condition],
    new: Condition,
) -> Option<Vec<Condition>> {
    let mut out = conditions.to_vec();
    set_condition(&mut out, new).then_some(out)
}

/// Whether a cluster must be given the `default` cluster set label.
pub(crate) fn needs_default_label(cluster: &ManagedCluster) -> bool {
    cluster.metadata.deletion_timestamp.is_none()
        && cluster
            .labels()
            .get(CLUSTER_SET)
            .is_none_or(|v| v.is_empty())
}

// --- built-in sets -----------------------------------------------------------------------------

async fn ensure_builtin_sets(ctx: &HubContext) -> Result<(), HealthError> {
    let api: Api<ManagedClusterSet> = Api::all(ctx.client.clone());
    for name in [DEFAULT_CLUSTER_SET, GLOBAL_CLUSTER_SET] {
        ctx.metrics.reconciled(BUILTIN_CONTROLLER);
        let current = api
            .get_opt(name)
            .await
            .map_err(|e| HealthError::kube(format!("get cluster set {name}"), e))?;
        match builtin_action(name, current.as_ref()) {
            BuiltinAction::Keep => {}
            BuiltinAction::Create(set) => match api.create(&PostParams::default(), &set).await {
                Ok(_) => info!(set = name, "created built-in cluster set"),
                Err(e) if has_code(&e, 409) => {}
                Err(e) => return Err(HealthError::kube(format!("create cluster set {name}"), e)),
            },
            BuiltinAction::Reset(spec) => {
                // A replace (guarded by resourceVersion): a merge patch could not remove
                // fields such as `matchLabels`.
                let Some(mut set) = current else { continue };
                set.spec = spec;
                api.replace(name, &PostParams::default(), &set)
                    .await
                    .map_err(|e| HealthError::kube(format!("reset cluster set {name}"), e))?;
                info!(set = name, "reset built-in cluster set");
            }
        }
    }
    Ok(())
}

/// Keeps `default` and `global` in place, looking again whenever a set changes.
async fn run_builtin_sets(ctx: Arc<HubContext>) {
    let api: Api<ManagedClusterSet> = Api::all(ctx.client.clone());
    let mut events = watcher(api, watcher::Config::default().any_semantic())
        .backoff_on_errors()
        .boxed();
    let mut pending = true;
    loop {
        if pending {
            match ensure_builtin_sets(&ctx).await {
                Ok(()) => pending = false,
                Err(err) => {
                    // Only counted and logged: the loop below waits RETRY before trying again.
                    let _ =
                        super::error::retry_after(&ctx.metrics, BUILTIN_CONTROLLER, &err, RETRY);
                }
            }
        }
        let wait = if pending {
            RETRY
        } else {
            Duration::from_secs(3600)
        };
        tokio::select! {
            () = ctx.shutdown.cancelled() => return,
            () = tokio::time::sleep(wait) => {}
            event = events.next() => match event {
                Some(Ok(watcher::Event::Apply(set) | watcher::Event::Delete(set)))
                    if builtin_spec(&set.name_any()).is_some() => pending = true,
                Some(Ok(watcher::Event::InitDone)) => pending = true,
                Some(_) => {}
                None => return,
            },
        }
    }
}

// --- default cluster set label -----------------------------------------------------------------

async fn reconcile_label(
    cluster: Arc<ManagedCluster>,
    ctx: Arc<HubContext>,
) -> Result<Action, HealthError> {
    ctx.metrics.reconciled(LABEL_CONTROLLER);
    if !needs_default_label(&cluster) {
        return Ok(Action::await_change());
    }
    let name = cluster.name_any();
    let api: Api<ManagedCluster> = Api::all(ctx.client.clone());
    let patch = json!({"metadata": {
        "resourceVersion": cluster.meta().resource_version,
        "labels": {CLUSTER_SET: DEFAULT_CLUSTER_SET},
    }});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| HealthError::kube(format!("label cluster {name}"), e))?;
    info!(cluster = %name, "put cluster into the default cluster set");
    Ok(Action::await_change())
}

fn label_error_policy(
    _cluster: Arc<ManagedCluster>,
    err: &HealthError,
    ctx: Arc<HubContext>,
) -> Action {
    super::error::retry_after(&ctx.metrics, LABEL_CONTROLLER, err, RETRY)
}

async fn run_default_label(ctx: Arc<HubContext>, clusters: SharedCache<ManagedCluster>) {
    clusters
        .controller()
        .reconcile_all_on(ticks(ctx.options.resync))
        .run(reconcile_label, label_error_policy, ctx.clone())
        .for_each(|_| futures::future::ready(()))
        .await;
}

// --- set status --------------------------------------------------------------------------------

/// Labels of every cluster, as the cluster watch shows them; used only to tell which
/// cluster events may change set membership.
#[derive(Default)]
struct ClusterLabels {
    by_name: Mutex<HashMap<String, LabelsAt>>,
}

/// A cluster's labels and the resourceVersion they were seen at.
type LabelsAt = (BTreeMap<String, String>, String);

impl ClusterLabels {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, LabelsAt>> {
        self.by_name.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a cluster event; true when set membership may have changed: a new cluster,
    /// changed labels, or the same version delivered again (a deletion, or a relist).
    fn observe(&self, cluster: &ManagedCluster) -> bool {
        let name = cluster.name_any();
        let labels = cluster.labels().clone();
        let rv = cluster.resource_version().unwrap_or_default();
        let mut map = self.lock();
        match map.get_mut(&name) {
            Some((_, old_rv)) if *old_rv == rv => true,
            Some((old_labels, old_rv)) => {
                *old_rv = rv;
                if *old_labels == labels {
                    false
                } else {
                    *old_labels = labels;
                    true
                }
            }
            None => {
                map.insert(name, (labels, rv));
                true
            }
        }
    }
}

/// The label selector choosing a set's clusters, or `None` when the set selects nothing.
pub(crate) fn member_selector(set: &ManagedClusterSet) -> Option<Selector> {
    let selector = set.spec.cluster_selector.clone().unwrap_or_default();
    match selector.selector_type {
        SelectorType::ExclusiveClusterSetLabel => Some(Selector::from_iter([(
            CLUSTER_SET.to_owned(),
            set.name_any(),
        )])),
        SelectorType::LabelSelector => Selector::try_from(selector.label_selector?).ok(),
    }
}

/// How many of `clusters` the set selects.
pub(crate) fn count_members<'a>(
    set: &ManagedClusterSet,
    clusters: impl IntoIterator<Item = &'a ManagedCluster>,
) -> usize {
    let Some(selector) = member_selector(set) else {
        return 0;
    };
    clusters
        .into_iter()
        .filter(|c| selector.matches(c.labels()))
        .count()
}

struct SetCtx {
    hub: Arc<HubContext>,
    /// Every ManagedCluster, as the set controller's cluster watch has them: sets count their
    /// members here rather than listing the clusters for each reconcile (at 10,000 joining
    /// clusters every join changed membership, and each reconcile listed all of them).
    clusters: Store<ManagedCluster>,
}

async fn reconcile_set(
    set: Arc<ManagedClusterSet>,
    ctx: Arc<SetCtx>,
) -> Result<Action, HealthError> {
    ctx.hub.metrics.reconciled(SET_CONTROLLER);
    if set.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    // Count only once the cluster cache holds its first full list.
    if ctx.clusters.wait_until_ready().await.is_err() {
        return Ok(Action::await_change());
    }
    let count = count_members(&set, ctx.clusters.state().iter().map(|c| &**c));
    let conditions = set
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let Some(next) = updated_conditions(&conditions, empty_condition(count)) else {
        return Ok(Action::await_change());
    };
    let name = set.name_any();
    let api: Api<ManagedClusterSet> = Api::all(ctx.hub.client.clone());
    let patch = json!({
        "metadata": {"resourceVersion": set.meta().resource_version},
        "status": {"conditions": next},
    });
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| HealthError::kube(format!("update status of cluster set {name}"), e))?;
    Ok(Action::await_change())
}

fn set_error_policy(_set: Arc<ManagedClusterSet>, err: &HealthError, ctx: Arc<SetCtx>) -> Action {
    super::error::retry_after(&ctx.hub.metrics, SET_CONTROLLER, err, RETRY)
}

async fn run_set_status(ctx: Arc<HubContext>, clusters: SharedCache<ManagedCluster>) {
    let controller = ocm_runtime::cache::controller(
        Api::<ManagedClusterSet>::all(ctx.client.clone()),
        watcher::Config::default().any_semantic(),
    )
    .with_config(kube::runtime::controller::Config::default().debounce(Duration::from_millis(200)));
    let sets: Store<ManagedClusterSet> = controller.store();
    let observer = Arc::new(ClusterLabels::default());
    let cluster_events = clusters.touched();
    controller
        .watches_shared_stream(cluster_events, move |cluster| {
            let changed = observer.observe(&cluster);
            let refs: Vec<ObjectRef<ManagedClusterSet>> = if changed {
                sets.state()
                    .iter()
                    .map(|s| ObjectRef::from_obj(&**s))
                    .collect()
            } else {
                Vec::new()
            };
            refs
        })
        .reconcile_all_on(ticks(ctx.options.resync))
        .run(
            reconcile_set,
            set_error_policy,
            Arc::new(SetCtx {
                hub: ctx.clone(),
                clusters: clusters.store(),
            }),
        )
        .for_each(|_| futures::future::ready(()))
        .await;
}

// --- bindings ----------------------------------------------------------------------------------

async fn reconcile_binding(
    binding: Arc<ManagedClusterSetBinding>,
    ctx: Arc<HubContext>,
) -> Result<Action, HealthError> {
    ctx.metrics.reconciled(BINDING_CONTROLLER);
    let set_name = &binding.spec.cluster_set;
    let sets: Api<ManagedClusterSet> = Api::all(ctx.client.clone());
    let exists = if set_name.is_empty() {
        false
    } else {
        sets.get_opt(set_name)
            .await
            .map_err(|e| HealthError::kube(format!("get cluster set {set_name}"), e))?
            .is_some()
    };
    let conditions = binding
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let Some(next) = updated_conditions(&conditions, bound_condition(exists)) else {
        return Ok(Action::await_change());
    };
    let name = binding.name_any();
    let namespace = binding.namespace().unwrap_or_default();
    let api: Api<ManagedClusterSetBinding> = Api::namespaced(ctx.client.clone(), &namespace);
    let patch = json!({
        "metadata": {"resourceVersion": binding.meta().resource_version},
        "status": {"conditions": next},
    });
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| {
            HealthError::kube(format!("update status of binding {namespace}/{name}"), e)
        })?;
    Ok(Action::await_change())
}

fn binding_error_policy(
    _binding: Arc<ManagedClusterSetBinding>,
    err: &HealthError,
    ctx: Arc<HubContext>,
) -> Action {
    super::error::retry_after(&ctx.metrics, BINDING_CONTROLLER, err, RETRY)
}

async fn run_bindings(ctx: Arc<HubContext>) {
    let controller = ocm_runtime::cache::controller(
        Api::<ManagedClusterSetBinding>::all(ctx.client.clone()),
        watcher::Config::default().any_semantic(),
    );
    let bindings: Store<ManagedClusterSetBinding> = controller.store();
    controller
        .watches(
            Api::<ManagedClusterSet>::all(ctx.client.clone()),
            watcher::Config::default().any_semantic(),
            move |set| {
                let name = set.name_any();
                bindings
                    .state()
                    .iter()
                    .filter(|b| b.spec.cluster_set == name)
                    .map(|b| ObjectRef::from_obj(&**b))
                    .collect::<Vec<_>>()
            },
        )
        .reconcile_all_on(ticks(ctx.options.resync))
        .run(reconcile_binding, binding_error_policy, ctx.clone())
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// Runs the cluster set controllers until `ctx.shutdown` is cancelled.
pub(crate) async fn run(ctx: Arc<HubContext>, clusters: SharedCache<ManagedCluster>) {
    let builtin = {
        let ctx = ctx.clone();
        let clusters = clusters.clone();
        async move {
            if ctx.options.default_cluster_sets {
                tokio::join!(
                    run_builtin_sets(ctx.clone()),
                    run_default_label(ctx.clone(), clusters.clone())
                );
            } else {
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        _ = builtin => {}
        () = run_set_status(ctx.clone(), clusters.clone()) => {}
        () = run_bindings(ctx.clone()) => {}
        () = ctx.shutdown.cancelled() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use ocm_api::cluster::v1::ManagedClusterSpec;
    use ocm_api::cluster::v1beta2::ManagedNamespaceConfig;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn set(name: &str, selector: Option<ManagedClusterSelector>) -> ManagedClusterSet {
        ManagedClusterSet::new(
            name,
            ManagedClusterSetSpec {
                cluster_selector: selector,
                managed_namespaces: Vec::new(),
            },
        )
    }

    #[test]
    fn builtin_sets_are_created_reset_or_left_alone() {
        let BuiltinAction::Create(created) = builtin_action("default", None) else {
            panic!("default must be created");
        };
        assert_eq!(
            serde_json::to_value(&created.spec).unwrap(),
            json!({"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}})
        );
        let BuiltinAction::Create(global) = builtin_action("global", None) else {
            panic!("global must be created");
        };
        assert_eq!(
            serde_json::to_value(&global.spec).unwrap(),
            json!({"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": {}}})
        );
        assert!(matches!(
            builtin_action("default", Some(&created)),
            BuiltinAction::Keep
        ));
        assert!(matches!(
            builtin_action("default", Some(&set("default", None))),
            BuiltinAction::Keep
        ));
        assert!(matches!(builtin_action("dev", None), BuiltinAction::Keep));

        let mut drifted = global.clone();
        drifted.spec.cluster_selector = Some(ManagedClusterSelector {
            selector_type: SelectorType::LabelSelector,
            label_selector: Some(LabelSelector {
                match_labels: Some(labels(&[("a", "b")])),
                ..LabelSelector::default()
            }),
        });
        assert!(matches!(
            builtin_action("global", Some(&drifted)),
            BuiltinAction::Reset(spec) if spec == global.spec
        ));
        // The admin's managed namespaces are not the hub's to reset (as upstream) …
        let mut with_namespaces = global.clone();
        with_namespaces.spec.managed_namespaces = vec![ManagedNamespaceConfig {
            name: "team-a".into(),
        }];
        assert!(matches!(
            builtin_action("global", Some(&with_namespaces)),
            BuiltinAction::Keep
        ));
        // … and survive a reset of the selector.
        drifted.spec.managed_namespaces = with_namespaces.spec.managed_namespaces.clone();
        assert!(matches!(
            builtin_action("global", Some(&drifted)),
            BuiltinAction::Reset(spec) if spec == with_namespaces.spec
        ));
        drifted.spec.managed_namespaces.clear();
        drifted.metadata.annotations = Some(labels(&[(AUTOUPDATE, "false")]));
        assert!(matches!(
            builtin_action("global", Some(&drifted)),
            BuiltinAction::Keep
        ));
        drifted.metadata.annotations = None;
        drifted.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::now()));
        assert!(matches!(
            builtin_action("global", Some(&drifted)),
            BuiltinAction::Keep
        ));
    }

    #[test]
    fn conditions_of_sets_and_bindings() {
        let empty = empty_condition(0);
        assert_eq!(
            (
                empty.status.as_str(),
                empty.reason.as_str(),
                empty.message.as_str()
            ),
            ("True", "NoClusterMatched", "No ManagedCluster selected")
        );
        let two = empty_condition(2);
        assert_eq!(
            (
                two.status.as_str(),
                two.reason.as_str(),
                two.message.as_str()
            ),
            ("False", "ClustersSelected", "2 ManagedClusters selected")
        );
        let list = vec![two.clone()];
        assert_eq!(updated_conditions(&list, empty_condition(2)), None);
        assert!(updated_conditions(&list, empty_condition(3)).is_some());
        assert_eq!(bound_condition(true).reason, "ClusterSetBound");
        assert_eq!(bound_condition(false).status, "False");
        assert_eq!(bound_condition(false).reason, "ClusterSetNotFound");
    }

    #[test]
    fn default_label_only_where_missing() {
        let mut c = ManagedCluster::new("c1", ManagedClusterSpec::default());
        assert!(needs_default_label(&c));
        c.metadata.labels = Some(labels(&[(CLUSTER_SET, "")]));
        assert!(needs_default_label(&c));
        c.metadata.labels = Some(labels(&[(CLUSTER_SET, "dev")]));
        assert!(!needs_default_label(&c));
        c.metadata.labels = None;
        c.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::now()));
        assert!(!needs_default_label(&c));
    }

    #[test]
    fn label_cache_reports_membership_changes_only() {
        let cache = ClusterLabels::default();
        let mut c = ManagedCluster::new("c1", ManagedClusterSpec::default());
        c.metadata.resource_version = Some("1".into());
        assert!(cache.observe(&c));
        c.metadata.resource_version = Some("2".into());
        assert!(!cache.observe(&c), "status-only change");
        c.metadata.labels = Some(labels(&[(CLUSTER_SET, "dev")]));
        c.metadata.resource_version = Some("3".into());
        assert!(cache.observe(&c));
        assert!(cache.observe(&c), "deletion or relist: same version again");
    }

    #[test]
    fn members_are_counted_by_each_selector_type() {
        let cluster = |name: &str, pairs: &[(&str, &str)]| {
            let mut c = ManagedCluster::new(name, ManagedClusterSpec::default());
            c.metadata.labels = Some(labels(pairs));
            c
        };
        let clusters = [
            cluster("a", &[(CLUSTER_SET, "dev"), ("env", "prod")]),
            cluster("b", &[(CLUSTER_SET, "dev")]),
            cluster("c", &[(CLUSTER_SET, "default"), ("env", "prod")]),
        ];
        assert_eq!(count_members(&set("dev", None), &clusters), 2);
        assert_eq!(count_members(&set("other", None), &clusters), 0);
        let by_label = |selector: Option<LabelSelector>| {
            set(
                "s",
                Some(ManagedClusterSelector {
                    selector_type: SelectorType::LabelSelector,
                    label_selector: selector,
                }),
            )
        };
        assert_eq!(
            count_members(&by_label(Some(LabelSelector::default())), &clusters),
            3,
            "an empty selector selects every cluster"
        );
        let prod = LabelSelector {
            match_labels: Some(labels(&[("env", "prod")])),
            ..LabelSelector::default()
        };
        assert_eq!(count_members(&by_label(Some(prod)), &clusters), 2);
        assert_eq!(
            count_members(&by_label(None), &clusters),
            0,
            "no selector selects nothing"
        );
    }
}
