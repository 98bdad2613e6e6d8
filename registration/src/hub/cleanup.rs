//! Cleanup of a deleted ManagedCluster (its `deletionTimestamp` is set).
//!
//! 1. Garbage-collects the cluster namespace, resource type by resource type in upstream's
//!    order (ManagedClusterAddOns, then ManifestWorks). Each pass deletes only the objects of
//!    the lowest `open-cluster-management.io/cleanup-priority` bucket of the first type that
//!    still has objects (missing or invalid values count as 0), sets condition `Deleting`
//!    False/ResourceRemaining and looks again after [`HubOptions::cleanup_requeue`]. A type
//!    whose API is not installed is skipped. When nothing is left: `Deleting` True/NoResource.
//! 2. Removes the cluster's RBAC: ClusterRole and ClusterRoleBinding, both RoleBindings, and
//!    the work RoleBinding's finalizer (once no ManifestWork remains).
//! 3. Releases the finalizers `cluster.open-cluster-management.io/resource-cleanup` and
//!    `cluster.open-cluster-management.io/api-resource-cleanup`.
//!
//! The cluster namespace itself is kept, as upstream does.
//!
//! [`HubOptions::cleanup_requeue`]: super::HubOptions::cleanup_requeue

use ocm_runtime::cache::{Change, SharedCache};
use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use ocm_api::cluster::names::annotations::CLEANUP_PRIORITY;
use ocm_api::cluster::names::conditions::{DELETING, deleting};
use ocm_api::cluster::names::finalizers::{API_RESOURCE_CLEANUP, RESOURCE_CLEANUP};
use ocm_api::cluster::names::labels::CLUSTER_NAME;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_runtime::conditions::condition;
use tracing::{debug, info, warn};

use super::HubContext;
use super::acceptance::{
    Error, Removal, delete_if_exists, is_not_found, remove_role_bindings, resync_ticks,
    retry_delay, set_cluster_condition, set_finalizers,
};
use super::rbac;

const CONTROLLER: &str = "managed-cluster-cleanup";
const SWEEPER: &str = "managed-cluster-rbac-sweep";

/// Highest cleanup priority; higher or unparsable values count as the lowest (0).
const MAX_PRIORITY: u32 = 100;

/// A resource type cleaned from cluster namespaces.
#[derive(Clone, Copy, Debug)]
struct GcResource {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
}

/// Upstream's default `--gc-resource-list`, in deletion order.
const GC_RESOURCES: [GcResource; 2] = [
    GcResource {
        group: "addon.open-cluster-management.io",
        version: "v1beta1",
        kind: "ManagedClusterAddOn",
        plural: "managedclusteraddons",
    },
    GcResource {
        group: "work.open-cluster-management.io",
        version: "v1",
        kind: "ManifestWork",
        plural: "manifestworks",
    },
];

impl GcResource {
    fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.to_owned(),
            version: self.version.to_owned(),
            api_version: format!("{}/{}", self.group, self.version),
            kind: self.kind.to_owned(),
            plural: self.plural.to_owned(),
        }
    }
}

// --- pure decisions --------------------------------------------------------------------------

/// The cleanup priority of an object from its annotations: the value of
/// `open-cluster-management.io/cleanup-priority` when it is an integer in 0..=100, else 0.
pub(crate) fn cleanup_priority(annotations: &BTreeMap<String, String>) -> u32 {
    annotations
        .get(CLEANUP_PRIORITY)
        .and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|p| (0..=i64::from(MAX_PRIORITY)).contains(p))
        .and_then(|p| u32::try_from(p).ok())
        .unwrap_or(0)
}

/// One object left in the namespace: name, cleanup priority, whether it has finalizers.
#[derive(Clone, Debug)]
pub(crate) struct Remaining {
    pub(crate) name: String,
    pub(crate) priority: u32,
    pub(crate) has_finalizers: bool,
}

/// The names to delete in this pass: every object of the lowest priority present.
pub(crate) fn first_bucket(items: &[Remaining]) -> Vec<String> {
    let Some(lowest) = items.iter().map(|i| i.priority).min() else {
        return Vec::new();
    };
    items
        .iter()
        .filter(|i| i.priority == lowest)
        .map(|i| i.name.clone())
        .collect()
}

/// The `Deleting` condition while objects of `resource` remain.
pub(crate) fn remaining_condition(resource: &str, items: &[Remaining]) -> Condition {
    let pending = items.iter().filter(|i| i.has_finalizers).count();
    condition(
        DELETING,
        "False",
        deleting::RESOURCE_REMAINING,
        &format!(
            "The resource {resource} is remaining, the remaining count is {}, the finalizer pending count is {pending}",
            items.len()
        ),
        None,
    )
}

/// The `Deleting` condition once the namespace is clean.
pub(crate) fn no_resource_condition() -> Condition {
    condition(
        DELETING,
        "True",
        deleting::NO_RESOURCE,
        "No cleaned resource in cluster ns.",
        None,
    )
}

/// Whether `cluster` is being deleted and still carries one of our finalizers.
pub(crate) fn needs_cleanup(cluster: &ManagedCluster) -> bool {
    cluster.meta().deletion_timestamp.is_some()
        && cluster
            .finalizers()
            .iter()
            .any(|f| f == RESOURCE_CLEANUP || f == API_RESOURCE_CLEANUP)
}

/// The finalizers left once ours are released.
pub(crate) fn without_our_finalizers(cluster: &ManagedCluster) -> Vec<String> {
    cluster
        .finalizers()
        .iter()
        .filter(|f| *f != RESOURCE_CLEANUP && *f != API_RESOURCE_CLEANUP)
        .cloned()
        .collect()
}

// --- reconcile -------------------------------------------------------------------------------

/// Result of one garbage collection pass.
enum Gc {
    /// Objects remain; the condition describing them.
    Remaining(Condition),
    /// The namespace holds no object of any GC type.
    Clean,
}

async fn gc_pass(client: &kube::Client, ns: &str) -> Result<Gc, Error> {
    for res in GC_RESOURCES {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &res.api_resource());
        let list = match api.list_metadata(&ListParams::default()).await {
            Ok(list) => list,
            Err(e) if is_not_found(&e) => continue,
            Err(e) => return Err(Error::kube(format!("list {} in {ns}", res.plural), e)),
        };
        if list.items.is_empty() {
            continue;
        }
        let items: Vec<Remaining> = list
            .items
            .iter()
            .map(|o| Remaining {
                name: o.name_any(),
                priority: cleanup_priority(o.annotations()),
                has_finalizers: !o.finalizers().is_empty(),
            })
            .collect();
        let mut errors = Vec::new();
        for name in first_bucket(&items) {
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => debug!(namespace = ns, name, resource = res.plural, "deleted"),
                Err(e) if is_not_found(&e) => {}
                Err(e) => errors.push(format!("delete {} {ns}/{name}: {e}", res.plural)),
            }
        }
        if !errors.is_empty() {
            return Err(Error::Many(format!(
                "failed to clean up {}: {}",
                res.plural,
                errors.join("; ")
            )));
        }
        return Ok(Gc::Remaining(remaining_condition(res.plural, &items)));
    }
    Ok(Gc::Clean)
}

async fn reconcile(cluster: Arc<ManagedCluster>, ctx: Arc<HubContext>) -> Result<Action, Error> {
    if !needs_cleanup(&cluster) {
        return Ok(Action::await_change());
    }
    ctx.metrics.reconciled(CONTROLLER);
    let name = cluster.name_any();
    let api: Api<ManagedCluster> = Api::all(ctx.client.clone());
    let mut current = (*cluster).clone();

    let gc = match gc_pass(&ctx.client, &name).await {
        Ok(gc) => gc,
        Err(e) => {
            let failed = condition(DELETING, "False", deleting::ERROR, &e.to_string(), None);
            // Best effort: the error itself is what gets retried.
            let _ = set_cluster_condition(&api, &current, failed).await;
            return Err(e);
        }
    };
    let done = matches!(gc, Gc::Clean);
    let wanted = match gc {
        Gc::Remaining(c) => c,
        Gc::Clean => no_resource_condition(),
    };
    if let Some(updated) = set_cluster_condition(&api, &current, wanted).await? {
        current = updated;
    }
    if !done {
        return Ok(Action::requeue(ctx.options.cleanup_requeue));
    }

    // The namespace is clean: remove the cluster's RBAC.
    let mut errors = Vec::new();
    let role_name = rbac::cluster_role_name(&name);
    if let Err(e) = delete_if_exists(&Api::<ClusterRole>::all(ctx.client.clone()), &role_name).await
    {
        errors.push(e.to_string());
    }
    if let Err(e) = delete_if_exists(
        &Api::<ClusterRoleBinding>::all(ctx.client.clone()),
        &role_name,
    )
    .await
    {
        errors.push(e.to_string());
    }
    match remove_role_bindings(&ctx.client, &name).await {
        Ok(Removal::Done) => {}
        Ok(Removal::WorksRemain) => return Ok(Action::requeue(ctx.options.cleanup_requeue)),
        Err(e) => errors.push(e.to_string()),
    }
    if !errors.is_empty() {
        return Err(Error::Many(errors.join("\n")));
    }

    set_finalizers(&api, &current, &without_our_finalizers(&current)).await?;
    info!(cluster = %name, "managed cluster cleaned up; finalizers released");
    Ok(Action::await_change())
}

fn error_policy(_cluster: Arc<ManagedCluster>, err: &Error, ctx: Arc<HubContext>) -> Action {
    super::error::retry_after(&ctx.metrics, CONTROLLER, err, retry_delay(&ctx.options))
}

/// The RBAC objects a sweep removes: per-cluster ClusterRoles (named after the cluster in their
/// `open-cluster-management.io/cluster-name` label) whose ManagedCluster is gone.
pub(crate) fn orphaned_clusters<'a>(
    labelled_roles: impl IntoIterator<Item = (&'a str, &'a str)>,
    clusters: &std::collections::BTreeSet<String>,
) -> Vec<String> {
    labelled_roles
        .into_iter()
        .filter(|(role, cluster)| {
            !cluster.is_empty()
                && *role == rbac::cluster_role_name(cluster)
                && !clusters.contains(*cluster)
        })
        .map(|(_, cluster)| cluster.to_owned())
        .collect()
}

/// Removes the RBAC of clusters that are gone without cleanup (e.g. their finalizers were
/// removed by hand), and the two common ClusterRoles once no ManagedCluster is left, as
/// upstream does.
async fn sweep(ctx: &HubContext) -> Result<(), Error> {
    let client = &ctx.client;
    let clusters: std::collections::BTreeSet<String> = Api::<ManagedCluster>::all(client.clone())
        .list_metadata(&ListParams::default())
        .await
        .map_err(|e| Error::kube("list managedclusters", e))?
        .items
        .iter()
        .map(|c| c.name_any())
        .collect();
    let roles: Api<ClusterRole> = Api::all(client.clone());
    let labelled = roles
        .list_metadata(&ListParams::default().labels(CLUSTER_NAME))
        .await
        .map_err(|e| Error::kube("list cluster roles", e))?;
    let pairs: Vec<(String, String)> = labelled
        .items
        .iter()
        .map(|r| {
            let cluster = r.labels().get(CLUSTER_NAME).cloned().unwrap_or_default();
            (r.name_any(), cluster)
        })
        .collect();
    let orphans = orphaned_clusters(
        pairs.iter().map(|(r, c)| (r.as_str(), c.as_str())),
        &clusters,
    );
    let mut errors = Vec::new();
    for cluster in orphans {
        let name = rbac::cluster_role_name(&cluster);
        info!(cluster = %cluster, "removing the rbac of a managed cluster that is gone");
        if let Err(e) = delete_if_exists(&roles, &name).await {
            errors.push(e.to_string());
        }
        if let Err(e) =
            delete_if_exists(&Api::<ClusterRoleBinding>::all(client.clone()), &name).await
        {
            errors.push(e.to_string());
        }
        if let Err(e) = remove_role_bindings(client, &cluster).await {
            errors.push(e.to_string());
        }
    }
    // Look again right before deleting, to keep the window for a cluster created meanwhile
    // small (the acceptance controller re-applies the roles on its next accept anyway).
    if clusters.is_empty() && no_cluster_left(client).await? {
        for name in [rbac::REGISTRATION_CLUSTER_ROLE, rbac::WORK_CLUSTER_ROLE] {
            if let Err(e) = delete_if_exists(&roles, name).await {
                errors.push(e.to_string());
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Error::Many(errors.join("\n")))
    }
}

async fn no_cluster_left(client: &kube::Client) -> Result<bool, Error> {
    Api::<ManagedCluster>::all(client.clone())
        .list_metadata(&ListParams::default().limit(1))
        .await
        .map(|l| l.items.is_empty())
        .map_err(|e| Error::kube("list managedclusters", e))
}

/// Sweeps at start, after every ManagedCluster deletion, and every resync period.
async fn run_sweeper(ctx: Arc<HubContext>, clusters: SharedCache<ManagedCluster>) {
    let deletions = clusters.subscribe().filter_map(|change| {
        futures::future::ready(match change {
            Change::Deleted(_) => Some(()),
            Change::Applied(_) => None,
        })
    });
    let start = futures::stream::once(futures::future::ready(()));
    let triggers =
        futures::stream::select(start.chain(deletions), resync_ticks(ctx.options.resync));
    let mut triggers = std::pin::pin!(triggers);
    while triggers.next().await.is_some() {
        ctx.metrics.reconciled(SWEEPER);
        if let Err(e) = sweep(&ctx).await {
            ctx.metrics.failed(SWEEPER, e.kind());
            warn!(error = %e, "rbac sweep failed; retrying");
            tokio::time::sleep(retry_delay(&ctx.options)).await;
            // A failed sweep is retried by the next trigger or resync; try once more now.
            if let Err(e) = sweep(&ctx).await {
                ctx.metrics.failed(SWEEPER, e.kind());
            }
        }
    }
}

/// Runs the cleanup controller until `ctx.shutdown` is cancelled.
pub(crate) async fn run(ctx: Arc<HubContext>, clusters: SharedCache<ManagedCluster>) {
    let controller = clusters
        .controller()
        .with_config(kube::runtime::controller::Config::default().concurrency(4))
        .reconcile_all_on(resync_ticks(ctx.options.resync))
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|_| futures::future::ready(()));
    tokio::select! {
        () = controller => {}
        () = run_sweeper(ctx.clone(), clusters) => {}
        () = ctx.shutdown.cancelled() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use ocm_api::cluster::v1::ManagedClusterSpec;

    fn ann(v: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(CLEANUP_PRIORITY.to_owned(), v.to_owned())])
    }

    #[test]
    fn priorities_parse_with_upstreams_fallbacks() {
        assert_eq!(cleanup_priority(&BTreeMap::new()), 0);
        assert_eq!(cleanup_priority(&ann("10")), 10);
        assert_eq!(cleanup_priority(&ann("100")), 100);
        assert_eq!(cleanup_priority(&ann("101")), 0);
        assert_eq!(cleanup_priority(&ann("-1")), 0);
        assert_eq!(cleanup_priority(&ann("abc")), 0);
    }

    fn r(name: &str, priority: u32, fin: bool) -> Remaining {
        Remaining {
            name: name.to_owned(),
            priority,
            has_finalizers: fin,
        }
    }

    #[test]
    fn only_the_lowest_bucket_goes_first() {
        let items = vec![
            r("a", 50, false),
            r("b", 10, true),
            r("c", 10, false),
            r("d", 0, false),
        ];
        assert_eq!(first_bucket(&items), vec!["d".to_owned()]);
        assert_eq!(
            first_bucket(&items[..3]),
            vec!["b".to_owned(), "c".to_owned()]
        );
        assert!(first_bucket(&[]).is_empty());
        let c = remaining_condition("manifestworks", &items);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", "ResourceRemaining")
        );
        assert!(c.message.contains("remaining count is 4"));
        assert!(c.message.contains("finalizer pending count is 1"));
        let done = no_resource_condition();
        assert_eq!(
            (done.status.as_str(), done.reason.as_str()),
            ("True", "NoResource")
        );
    }

    #[test]
    fn sweep_picks_only_per_cluster_roles_of_missing_clusters() {
        let clusters = std::collections::BTreeSet::from(["live".to_owned()]);
        let roles = [
            ("open-cluster-management:managedcluster:live", "live"),
            ("open-cluster-management:managedcluster:gone", "gone"),
            ("open-cluster-management:managedcluster:registration", ""),
            ("someone-elses-role", "gone2"),
        ];
        assert_eq!(orphaned_clusters(roles, &clusters), vec!["gone".to_owned()]);
    }

    #[test]
    fn only_deleting_clusters_with_our_finalizers_are_cleaned() {
        let mut c = ManagedCluster::new("c1", ManagedClusterSpec::default());
        c.metadata.finalizers = Some(vec![RESOURCE_CLEANUP.to_owned(), "x".to_owned()]);
        assert!(!needs_cleanup(&c));
        c.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::now()));
        assert!(needs_cleanup(&c));
        assert_eq!(without_our_finalizers(&c), vec!["x".to_owned()]);
        c.metadata.finalizers = Some(vec!["x".to_owned()]);
        assert!(!needs_cleanup(&c));
    }
}
