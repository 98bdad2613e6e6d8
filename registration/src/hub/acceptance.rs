//! ManagedCluster acceptance: the hub side of the double opt-in.
//!
//! For every ManagedCluster that is not being deleted:
//! - the ResourceCleanup finalizer (`cluster.open-cluster-management.io/resource-cleanup`) is
//!   added, as upstream's GC controller does for every cluster;
//! - with auto-approval configured ([`HubOptions::auto_approved_users`] not empty, upstream's
//!   `ManagedClusterAutoApproval` gate), a cluster without the
//!   `open-cluster-management.io/automatically-accepted-on` annotation is accepted once;
//! - `hubAcceptsClient: true` → finalizer `cluster.open-cluster-management.io/api-resource-cleanup`,
//!   the cluster namespace, the common and per-cluster RBAC of [`super::rbac`], condition
//!   `HubAcceptedManagedCluster` True/HubClusterAdminAccepted (False/Error with the messages of
//!   what failed);
//! - `hubAcceptsClient: false` after having been accepted → per-cluster ClusterRole in its
//!   not-accepted form, the two RoleBindings deleted (the work RoleBinding's finalizer is
//!   released once the namespace holds no ManifestWork; until then the cluster is looked at
//!   again after [`HubOptions::cleanup_requeue`]), then condition False/HubClusterAdminDenied.
//!
//! Deleting clusters are left to [`super::cleanup`]. The cluster namespace is never deleted.
//!
//! [`HubOptions::auto_approved_users`]: super::HubOptions::auto_approved_users
//! [`HubOptions::cleanup_requeue`]: super::HubOptions::cleanup_requeue

use ocm_runtime::cache::SharedCache;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use ocm_api::cluster::names::annotations::AUTOMATICALLY_ACCEPTED_ON;
use ocm_api::cluster::names::conditions::{HUB_ACCEPTED, hub_accepted};
use ocm_api::cluster::names::finalizers::{API_RESOURCE_CLEANUP, RESOURCE_CLEANUP};
use ocm_api::cluster::names::labels::CLUSTER_NAME;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::work::names::MANIFEST_WORK_FINALIZER;
use ocm_api::work::v1::ManifestWork;
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::conditions::{condition, find_condition, set_condition};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use tracing::{debug, info, warn};

use super::observed::{Observed, ObservedObjects, Owned, Written};
use super::rbac;
use super::{HubContext, HubOptions};

/// Field manager of everything the registration hub controllers apply.
pub(crate) const FIELD_MANAGER: &str = "registration-controller";

const CONTROLLER: &str = "managed-cluster-acceptance";

/// Message of the accepted condition.
pub(crate) const ACCEPTED_MESSAGE: &str = "Accepted by hub cluster admin";
/// Message of the denied condition.
pub(crate) const DENIED_MESSAGE: &str = "Denied by hub cluster admin";

pub(crate) use super::error::{HubError as Error, is_not_found};

// --- pure decisions --------------------------------------------------------------------------

/// What the acceptance controller does with one ManagedCluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Being deleted: left to the cleanup controller.
    Deleting,
    /// Auto-approval: stamp the accepted-on annotation, and set `hubAcceptsClient` when
    /// `set_accepts` (the cluster was not accepted yet).
    AutoAccept {
        /// Whether `spec.hubAcceptsClient` must be set to true too.
        set_accepts: bool,
    },
    /// `hubAcceptsClient: true`: namespace, RBAC, accepted condition.
    Accept,
    /// `hubAcceptsClient: false` after having been accepted: reduce RBAC, denied condition.
    Deny,
    /// Never accepted and not accepted now: nothing beyond the cleanup finalizer.
    Idle,
}

/// Decides what to do with `cluster`. `auto_approval` is whether auto-approval is configured.
pub(crate) fn decide(cluster: &ManagedCluster, auto_approval: bool) -> Decision {
    if cluster.meta().deletion_timestamp.is_some() {
        return Decision::Deleting;
    }
    if auto_approval
        && !cluster
            .annotations()
            .contains_key(AUTOMATICALLY_ACCEPTED_ON)
    {
        return Decision::AutoAccept {
            set_accepts: !cluster.spec.hub_accepts_client,
        };
    }
    if cluster.spec.hub_accepts_client {
        return Decision::Accept;
    }
    let was_accepted = cluster
        .status
        .as_ref()
        .and_then(|s| find_condition(&s.conditions, HUB_ACCEPTED))
        .is_some_and(|c| c.status == "True");
    if was_accepted {
        Decision::Deny
    } else {
        Decision::Idle
    }
}

/// The finalizers `cluster` must carry after `decision`, or `None` when they are already
/// right. Existing finalizers are kept in order; missing ones are appended.
pub(crate) fn wanted_finalizers(
    cluster: &ManagedCluster,
    decision: &Decision,
) -> Option<Vec<String>> {
    if *decision == Decision::Deleting {
        return None;
    }
    let mut finalizers = cluster.finalizers().to_vec();
    let mut changed = false;
    let mut need = vec![RESOURCE_CLEANUP];
    if *decision == Decision::Accept {
        need.push(API_RESOURCE_CLEANUP);
    }
    for f in need {
        if !finalizers.iter().any(|x| x == f) {
            finalizers.push(f.to_owned());
            changed = true;
        }
    }
    changed.then_some(finalizers)
}

/// The accepted condition after an accept attempt whose failures are `errors`.
pub(crate) fn accepted_condition(errors: &[String]) -> Condition {
    if errors.is_empty() {
        condition(
            HUB_ACCEPTED,
            "True",
            hub_accepted::ADMIN_ACCEPTED,
            ACCEPTED_MESSAGE,
            None,
        )
    } else {
        condition(
            HUB_ACCEPTED,
            "False",
            hub_accepted::ERROR,
            &errors.join("\n"),
            None,
        )
    }
}

/// The denied condition.
pub(crate) fn denied_condition() -> Condition {
    condition(
        HUB_ACCEPTED,
        "False",
        hub_accepted::ADMIN_DENIED,
        DENIED_MESSAGE,
        None,
    )
}

/// The conditions of `cluster` with `new` set, or `None` when nothing would change.
pub(crate) fn conditions_with(cluster: &ManagedCluster, new: Condition) -> Option<Vec<Condition>> {
    let mut conditions = cluster
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    set_condition(&mut conditions, new).then_some(conditions)
}

// --- API helpers shared with the cleanup controller ------------------------------------------

/// Server-side applies `obj` (force, [`FIELD_MANAGER`]).
pub(crate) async fn apply<K>(api: &Api<K>, obj: &K) -> Result<K, Error>
where
    K: Resource + Serialize + DeserializeOwned + Clone + Debug,
    K::DynamicType: Default,
{
    let name = obj.meta().name.clone().unwrap_or_default();
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(obj),
    )
    .await
    .map_err(|e| {
        Error::kube(
            format!("apply {} {name}", K::kind(&K::DynamicType::default())),
            e,
        )
    })
}

/// Deletes `name`; a missing object is not an error.
pub(crate) async fn delete_if_exists<K>(api: &Api<K>, name: &str) -> Result<(), Error>
where
    K: Resource + DeserializeOwned + Clone + Debug,
    K::DynamicType: Default,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(Error::kube(
            format!("delete {} {name}", K::kind(&K::DynamicType::default())),
            e,
        )),
    }
}

/// Replaces the finalizers of `obj` with `finalizers` (merge patch guarded by the object's
/// resourceVersion, so a concurrent change makes it fail with a conflict).
pub(crate) async fn set_finalizers<K>(
    api: &Api<K>,
    obj: &K,
    finalizers: &[String],
) -> Result<Option<K>, Error>
where
    K: Resource + DeserializeOwned + Clone + Debug,
    K::DynamicType: Default,
{
    let patch = json!({
        "metadata": {
            "resourceVersion": obj.meta().resource_version,
            "finalizers": finalizers,
        }
    });
    let name = obj.meta().name.clone().unwrap_or_default();
    match api
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(updated) => Ok(Some(updated)),
        Err(e) if is_not_found(&e) => Ok(None),
        Err(e) => Err(Error::kube(format!("update finalizers of {name}"), e)),
    }
}

/// Writes `conditions` as the ManagedCluster's status conditions (guarded by resourceVersion);
/// returns the updated object.
pub(crate) async fn write_conditions(
    api: &Api<ManagedCluster>,
    cluster: &ManagedCluster,
    conditions: Vec<Condition>,
) -> Result<ManagedCluster, Error> {
    let patch = json!({
        "metadata": { "resourceVersion": cluster.meta().resource_version },
        "status": { "conditions": conditions },
    });
    api.patch_status(
        &cluster.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .map_err(|e| Error::kube(format!("update status of {}", cluster.name_any()), e))
}

/// Sets condition `new` on the ManagedCluster when it differs from what `cluster` carries.
/// On a write conflict (someone else changed the cluster meanwhile) it re-reads the cluster
/// and tries again, a few times. Returns the updated cluster, or `None` when nothing changed.
pub(crate) async fn set_cluster_condition(
    api: &Api<ManagedCluster>,
    cluster: &ManagedCluster,
    new: Condition,
) -> Result<Option<ManagedCluster>, Error> {
    let mut current = cluster.clone();
    let mut attempts = 0;
    loop {
        let Some(conditions) = conditions_with(&current, new.clone()) else {
            return Ok(None);
        };
        match write_conditions(api, &current, conditions).await {
            Ok(updated) => return Ok(Some(updated)),
            Err(Error::Kube {
                source: kube::Error::Api(s),
                ..
            }) if s.is_conflict() && attempts < 3 => {
                attempts += 1;
                current = api
                    .get(&current.name_any())
                    .await
                    .map_err(|e| Error::kube(format!("get {}", current.name_any()), e))?;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Whether the cluster namespace still holds ManifestWorks (an uninstalled ManifestWork API
/// counts as none).
pub(crate) async fn has_manifest_works(client: &kube::Client, ns: &str) -> Result<bool, Error> {
    let api: Api<ManifestWork> = Api::namespaced(client.clone(), ns);
    match api.list_metadata(&ListParams::default().limit(1)).await {
        Ok(list) => Ok(!list.items.is_empty()),
        Err(e) if is_not_found(&e) => Ok(false),
        Err(e) => Err(Error::kube(format!("list manifestworks in {ns}"), e)),
    }
}

/// Outcome of removing the cluster's RoleBindings.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Removal {
    /// Both RoleBindings are gone (or going, with no finalizer of ours left).
    Done,
    /// ManifestWorks remain in the namespace: the work RoleBinding keeps its finalizer.
    WorksRemain,
}

/// Deletes the registration and work RoleBindings of `cluster`; releases the work
/// RoleBinding's finalizer once the namespace holds no ManifestWork.
pub(crate) async fn remove_role_bindings(
    client: &kube::Client,
    cluster: &str,
) -> Result<Removal, Error> {
    let api: Api<RoleBinding> = Api::namespaced(client.clone(), cluster);
    let mut errors = Vec::new();
    for name in [
        rbac::registration_role_binding_name(cluster),
        rbac::work_role_binding_name(cluster),
    ] {
        if let Err(e) = delete_if_exists(&api, &name).await {
            errors.push(e.to_string());
        }
    }
    if !errors.is_empty() {
        return Err(Error::Many(errors.join("\n")));
    }
    if has_manifest_works(client, cluster).await? {
        return Ok(Removal::WorksRemain);
    }
    let work_rb = match api.get_opt(&rbac::work_role_binding_name(cluster)).await {
        Ok(rb) => rb,
        Err(e) => return Err(Error::kube("get work rolebinding", e)),
    };
    if let Some(rb) = work_rb
        && rb.finalizers().iter().any(|f| f == MANIFEST_WORK_FINALIZER)
    {
        let rest: Vec<String> = rb
            .finalizers()
            .iter()
            .filter(|f| *f != MANIFEST_WORK_FINALIZER)
            .cloned()
            .collect();
        set_finalizers(&api, &rb, &rest).await?;
    }
    Ok(Removal::Done)
}

// --- reconcile -------------------------------------------------------------------------------

async fn accept(ctx: &AcceptanceContext, cluster: &ManagedCluster) -> Vec<String> {
    let name = cluster.name_any();
    let labels: &BTreeMap<String, String> = &ctx.hub.options.cluster_namespace_labels;
    let client = &ctx.hub.client;
    let seen = &ctx.observed;
    let mut errors = Vec::new();
    let mut push = |r: Result<(), Error>| {
        if let Err(e) = r {
            errors.push(e.to_string());
        }
    };

    let namespaces: Api<Namespace> = Api::all(client.clone());
    push(
        apply_unless_in_place(
            &namespaces,
            &seen.namespaces,
            &rbac::cluster_namespace(&name, labels),
        )
        .await,
    );

    let cluster_roles: Api<ClusterRole> = Api::all(client.clone());
    for role in [
        rbac::registration_cluster_role(labels),
        rbac::work_cluster_role(labels),
        rbac::cluster_role(&name, true, labels),
    ] {
        push(apply_unless_in_place(&cluster_roles, &seen.cluster_roles, &role).await);
    }
    let crbs: Api<ClusterRoleBinding> = Api::all(client.clone());
    push(
        apply_unless_in_place(
            &crbs,
            &seen.cluster_role_bindings,
            &rbac::cluster_role_binding(&name, labels),
        )
        .await,
    );
    let rbs: Api<RoleBinding> = Api::namespaced(client.clone(), &name);
    for rb in [
        rbac::registration_role_binding(&name, labels),
        rbac::work_role_binding(&name, labels),
    ] {
        push(apply_unless_in_place(&rbs, &seen.role_bindings, &rb).await);
    }
    errors
}

/// Applies `desired` unless its last watch event showed it as wanted already.
async fn apply_unless_in_place<K>(api: &Api<K>, seen: &Observed, desired: &K) -> Result<(), Error>
where
    K: Written + Serialize + DeserializeOwned + Clone + Debug,
    K::DynamicType: Default,
{
    if seen.in_place(desired) {
        return Ok(());
    }
    apply(api, desired).await.map(|_| ())
}

/// Returns `Some(delay)` when the cluster must be looked at again.
async fn deny(
    actx: &AcceptanceContext,
    cluster: &ManagedCluster,
) -> Result<Option<Duration>, Error> {
    let ctx = &actx.hub;
    let name = cluster.name_any();
    let labels = &ctx.options.cluster_namespace_labels;
    let mut errors = Vec::new();
    let cluster_roles: Api<ClusterRole> = Api::all(ctx.client.clone());
    let role = rbac::cluster_role(&name, false, labels);
    if let Err(e) = apply_unless_in_place(&cluster_roles, &actx.observed.cluster_roles, &role).await
    {
        errors.push(e.to_string());
    }
    let crbs: Api<ClusterRoleBinding> = Api::all(ctx.client.clone());
    let binding = rbac::cluster_role_binding(&name, labels);
    if let Err(e) =
        apply_unless_in_place(&crbs, &actx.observed.cluster_role_bindings, &binding).await
    {
        errors.push(e.to_string());
    }
    match remove_role_bindings(&ctx.client, &name).await {
        Ok(Removal::WorksRemain) => {
            debug!(cluster = %name, "manifestworks remain; work rolebinding kept");
            return Ok(Some(ctx.options.cleanup_requeue));
        }
        Ok(Removal::Done) => {}
        Err(e) => errors.push(e.to_string()),
    }
    if !errors.is_empty() {
        return Err(Error::Many(errors.join("\n")));
    }
    let api: Api<ManagedCluster> = Api::all(ctx.client.clone());
    if set_cluster_condition(&api, cluster, denied_condition())
        .await?
        .is_some()
    {
        info!(cluster = %name, "managed cluster denied by hub cluster admin");
    }
    Ok(None)
}

/// The value of the automatically-accepted-on annotation: RFC 3339 in UTC without fractional
/// seconds, like Go's `time.RFC3339`.
pub(crate) fn accepted_on_stamp(now: jiff::Timestamp) -> String {
    format!("{now:.0}")
}

/// The merge patch that accepts `cluster` automatically: the accepted-on annotation,
/// `hubAcceptsClient` when `set_accepts`, and the finalizers an accepted cluster carries when
/// it lacks some (then guarded by the resourceVersion, as the list is replaced whole).
pub(crate) fn auto_accept_patch(
    cluster: &ManagedCluster,
    set_accepts: bool,
    now: jiff::Timestamp,
) -> serde_json::Value {
    let mut patch = json!({
        "metadata": { "annotations": { AUTOMATICALLY_ACCEPTED_ON: accepted_on_stamp(now) } }
    });
    if set_accepts {
        patch["spec"] = json!({ "hubAcceptsClient": true });
    }
    if let Some(finalizers) = wanted_finalizers(cluster, &Decision::Accept) {
        patch["metadata"]["finalizers"] = json!(finalizers);
        patch["metadata"]["resourceVersion"] = json!(cluster.meta().resource_version);
    }
    patch
}

/// Accepts `cluster` automatically in one write; the cluster as written, or `None` when it
/// is gone.
async fn auto_accept(
    api: &Api<ManagedCluster>,
    cluster: &ManagedCluster,
    set_accepts: bool,
) -> Result<Option<ManagedCluster>, Error> {
    let patch = auto_accept_patch(cluster, set_accepts, jiff::Timestamp::now());
    match api
        .patch(
            &cluster.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(updated) => {
            info!(cluster = %cluster.name_any(), "managed cluster accepted automatically");
            Ok(Some(updated))
        }
        Err(e) if is_not_found(&e) => Ok(None),
        Err(e) => Err(Error::kube(
            format!("auto-accept {}", cluster.name_any()),
            e,
        )),
    }
}

/// What the acceptance controller's passes share.
struct AcceptanceContext {
    hub: Arc<HubContext>,
    /// What the watches last showed of the objects acceptance writes.
    observed: Arc<ObservedObjects>,
}

async fn reconcile(
    cluster: Arc<ManagedCluster>,
    actx: Arc<AcceptanceContext>,
) -> Result<Action, Error> {
    let ctx = &actx.hub;
    ctx.metrics.reconciled(CONTROLLER);
    let api: Api<ManagedCluster> = Api::all(ctx.client.clone());
    let auto_approval = !ctx.options.auto_approved_users.is_empty();
    let mut cluster = cluster;
    let mut decision = decide(&cluster, auto_approval);
    if decision == Decision::Deleting {
        return Ok(Action::await_change());
    }
    // Each write below returns the cluster as written and the pass goes on with it: a new
    // cluster is accepted in one pass, not one pass per write (behind every other cluster's
    // pass when a fleet registers at once).
    if let Decision::AutoAccept { set_accepts } = decision {
        let Some(updated) = auto_accept(&api, &cluster, set_accepts).await? else {
            return Ok(Action::await_change());
        };
        cluster = Arc::new(updated);
        decision = decide(&cluster, auto_approval);
    }
    if let Some(finalizers) = wanted_finalizers(&cluster, &decision) {
        let Some(updated) = set_finalizers(&api, &cluster, &finalizers).await? else {
            return Ok(Action::await_change());
        };
        cluster = Arc::new(updated);
        decision = decide(&cluster, auto_approval);
    }
    match decision {
        Decision::Accept => {
            let errors = accept(&actx, &cluster).await;
            if !errors.is_empty() {
                warn!(cluster = %cluster.name_any(), errors = ?errors, "accepting cluster failed");
            }
            let written =
                set_cluster_condition(&api, &cluster, accepted_condition(&errors)).await?;
            if written.is_some() && errors.is_empty() {
                info!(cluster = %cluster.name_any(), "managed cluster accepted by hub cluster admin");
            }
            if errors.is_empty() {
                Ok(Action::await_change())
            } else {
                Err(Error::Many(errors.join("\n")))
            }
        }
        Decision::Deny => match deny(&actx, &cluster).await? {
            Some(after) => Ok(Action::requeue(after)),
            None => Ok(Action::await_change()),
        },
        _ => Ok(Action::await_change()),
    }
}

fn error_policy(_cluster: Arc<ManagedCluster>, err: &Error, ctx: Arc<AcceptanceContext>) -> Action {
    let hub = &ctx.hub;
    super::error::retry_after(&hub.metrics, CONTROLLER, err, retry_delay(&hub.options))
}

/// Delay before retrying a failed reconcile.
pub(crate) fn retry_delay(options: &HubOptions) -> Duration {
    options.cleanup_requeue.min(Duration::from_secs(2))
}

/// The label keys and finalizers acceptance sets on what it writes.
fn owned_fields(options: &HubOptions) -> Owned {
    let mut labels: Vec<String> = options.cluster_namespace_labels.keys().cloned().collect();
    labels.push(CLUSTER_NAME.to_owned());
    Owned {
        labels,
        finalizers: vec![MANIFEST_WORK_FINALIZER.to_owned()],
    }
}

/// The objects of a watch labelled with a cluster name, each recorded in `pick(observed)`
/// before it is passed on to trigger its cluster's reconcile.
fn recorded_events<K>(
    api: Api<K>,
    observed: Arc<ObservedObjects>,
    pick: fn(&ObservedObjects) -> &Observed,
) -> impl futures::Stream<Item = Result<K, watcher::Error>> + Send + 'static
where
    K: Written + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let labelled = watcher::Config::default()
        .labels(CLUSTER_NAME)
        .any_semantic();
    watcher(api, labelled)
        .backoff_on_errors()
        .map_ok(move |event| {
            pick(&observed).record(&event);
            event
        })
        .touched_objects()
}

/// The cluster an object acceptance writes belongs to, from where it lives rather than from
/// its labels (which the change being reacted to may have altered): a namespace is its
/// cluster's (see [`cluster_of_namespace`]), a RoleBinding is its namespace's, a per-cluster
/// ClusterRole or binding is named after its cluster. Common roles belong to none.
fn owning_cluster<K: Resource>(obj: K) -> Option<ObjectRef<ManagedCluster>> {
    let meta = obj.meta();
    let name = meta.name.as_deref().unwrap_or_default();
    let cluster = match meta.namespace.as_deref() {
        Some(namespace) => namespace,
        None => name
            .strip_prefix(rbac::NAME_PREFIX)
            .filter(|rest| !rest.is_empty() && !rest.contains(':'))?,
    };
    Some(ObjectRef::new(cluster))
}

/// The cluster a cluster namespace belongs to: the one named like it.
fn cluster_of_namespace(namespace: Namespace) -> Option<ObjectRef<ManagedCluster>> {
    namespace.metadata.name.map(|name| ObjectRef::new(&name))
}

/// Runs the acceptance controller until `ctx.shutdown` is cancelled.
pub(crate) async fn run(ctx: Arc<HubContext>, clusters: SharedCache<ManagedCluster>) {
    let client = ctx.client.clone();
    let observed = Arc::new(ObservedObjects::new(&owned_fields(&ctx.options)));
    let controller = clusters
        .controller()
        .with_config(kube::runtime::controller::Config::default().concurrency(4))
        .watches_stream(
            recorded_events(
                Api::<Namespace>::all(client.clone()),
                observed.clone(),
                |o| &o.namespaces,
            ),
            cluster_of_namespace,
        )
        .watches_stream(
            recorded_events(
                Api::<ClusterRole>::all(client.clone()),
                observed.clone(),
                |o| &o.cluster_roles,
            ),
            owning_cluster,
        )
        .watches_stream(
            recorded_events(
                Api::<ClusterRoleBinding>::all(client.clone()),
                observed.clone(),
                |o| &o.cluster_role_bindings,
            ),
            owning_cluster,
        )
        .watches_stream(
            recorded_events(
                Api::<RoleBinding>::all(client.clone()),
                observed.clone(),
                |o| &o.role_bindings,
            ),
            owning_cluster,
        )
        .reconcile_all_on(resync_ticks(ctx.options.resync))
        .run(
            reconcile,
            error_policy,
            Arc::new(AcceptanceContext {
                hub: ctx.clone(),
                observed,
            }),
        )
        .for_each(|_| futures::future::ready(()));
    tokio::select! {
        () = controller => {}
        () = ctx.shutdown.cancelled() => {}
    }
}

/// A stream that ticks every `period` (not immediately).
pub(crate) fn resync_ticks(period: Duration) -> impl futures::Stream<Item = ()> + Send + 'static {
    let period = period.max(Duration::from_secs(1));
    futures::stream::unfold((), move |()| async move {
        tokio::time::sleep(period).await;
        Some(((), ()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use ocm_api::cluster::v1::{ManagedClusterSpec, ManagedClusterStatus};

    fn cluster(accepts: bool) -> ManagedCluster {
        ManagedCluster::new(
            "c1",
            ManagedClusterSpec {
                hub_accepts_client: accepts,
                ..ManagedClusterSpec::default()
            },
        )
    }

    fn with_condition(mut c: ManagedCluster, status: &str) -> ManagedCluster {
        c.status = Some(ManagedClusterStatus {
            conditions: vec![condition(HUB_ACCEPTED, status, "x", "y", None)],
            ..ManagedClusterStatus::default()
        });
        c
    }

    #[test]
    fn decisions_follow_spec_and_history() {
        assert_eq!(decide(&cluster(true), false), Decision::Accept);
        assert_eq!(decide(&cluster(false), false), Decision::Idle);
        assert_eq!(
            decide(&with_condition(cluster(false), "True"), false),
            Decision::Deny
        );
        assert_eq!(
            decide(&with_condition(cluster(false), "False"), false),
            Decision::Idle
        );
        let mut deleting = cluster(true);
        deleting.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::now()));
        assert_eq!(decide(&deleting, true), Decision::Deleting);
    }

    #[test]
    fn auto_approval_accepts_once() {
        assert_eq!(
            decide(&cluster(false), true),
            Decision::AutoAccept { set_accepts: true }
        );
        assert_eq!(
            decide(&cluster(true), true),
            Decision::AutoAccept { set_accepts: false }
        );
        let mut stamped = with_condition(cluster(false), "True");
        stamped.metadata.annotations = Some(BTreeMap::from([(
            AUTOMATICALLY_ACCEPTED_ON.to_owned(),
            "2026-01-01T00:00:00Z".to_owned(),
        )]));
        // Denied by the admin after auto-acceptance: stays denied.
        assert_eq!(decide(&stamped, true), Decision::Deny);
    }

    #[test]
    fn auto_accept_patch_adds_the_finalizers_of_an_accepted_cluster_guarded() {
        let now: jiff::Timestamp = "2026-11-29T12:00:00Z".parse().unwrap();
        let mut fresh = cluster(false);
        fresh.metadata.resource_version = Some("42".into());
        fresh.metadata.finalizers = Some(vec!["example.com/keep".into()]);
        assert_eq!(
            auto_accept_patch(&fresh, true, now),
            json!({
                "metadata": {
                    "annotations": { AUTOMATICALLY_ACCEPTED_ON: "2026-11-29T12:00:00Z" },
                    "finalizers": ["example.com/keep", RESOURCE_CLEANUP, API_RESOURCE_CLEANUP],
                    "resourceVersion": "42",
                },
                "spec": { "hubAcceptsClient": true },
            })
        );
        // Finalizers in place: no list to replace, no guard needed.
        let mut done = cluster(true);
        done.metadata.finalizers = Some(vec![RESOURCE_CLEANUP.into(), API_RESOURCE_CLEANUP.into()]);
        assert_eq!(
            auto_accept_patch(&done, false, now),
            json!({
                "metadata": {
                    "annotations": { AUTOMATICALLY_ACCEPTED_ON: "2026-11-29T12:00:00Z" },
                },
            })
        );
    }

    #[test]
    fn accepted_on_stamp_is_rfc3339_seconds() {
        let ts: jiff::Timestamp = "2026-11-22T06:29:24.123456789Z".parse().unwrap();
        assert_eq!(accepted_on_stamp(ts), "2026-11-22T06:29:24Z");
    }

    #[test]
    fn finalizers_are_added_only_when_missing() {
        let c = cluster(false);
        assert_eq!(
            wanted_finalizers(&c, &Decision::Idle),
            Some(vec![RESOURCE_CLEANUP.to_owned()])
        );
        assert_eq!(
            wanted_finalizers(&c, &Decision::Accept),
            Some(vec![
                RESOURCE_CLEANUP.to_owned(),
                API_RESOURCE_CLEANUP.to_owned()
            ])
        );
        let mut done = cluster(true);
        done.metadata.finalizers = Some(vec![
            "other".to_owned(),
            API_RESOURCE_CLEANUP.to_owned(),
            RESOURCE_CLEANUP.to_owned(),
        ]);
        assert_eq!(wanted_finalizers(&done, &Decision::Accept), None);
        assert_eq!(wanted_finalizers(&done, &Decision::Deleting), None);
    }

    #[test]
    fn conditions_change_only_when_different() {
        let ok = accepted_condition(&[]);
        assert_eq!(ok.status, "True");
        assert_eq!(ok.reason, "HubClusterAdminAccepted");
        assert_eq!(ok.message, "Accepted by hub cluster admin");
        let bad = accepted_condition(&["boom".to_owned(), "bang".to_owned()]);
        assert_eq!(
            (bad.status.as_str(), bad.reason.as_str()),
            ("False", "Error")
        );
        assert_eq!(bad.message, "boom\nbang");
        let denied = denied_condition();
        assert_eq!(denied.reason, "HubClusterAdminDenied");
        assert_eq!(denied.message, "Denied by hub cluster admin");

        let mut c = cluster(true);
        let first = conditions_with(&c, accepted_condition(&[])).expect("new condition");
        c.status = Some(ManagedClusterStatus {
            conditions: first,
            ..ManagedClusterStatus::default()
        });
        assert!(conditions_with(&c, accepted_condition(&[])).is_none());
        assert!(conditions_with(&c, denied_condition()).is_some());
    }
}
