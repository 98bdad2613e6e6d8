//! AppliedManifestWork bookkeeping on the managed cluster: its name, the owner reference it
//! puts on applied objects, removing what a work no longer applies, and the sweep that
//! finishes deleted AppliedManifestWorks and evicts those no longer managed (see [`evict`]).

use std::sync::Arc;

use futures::FutureExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::reflector::{ObjectRef, Store};
use ocm_api::work::names::APPLIED_MANIFEST_WORK_FINALIZER;
use ocm_api::work::v1::{AppliedManifestResourceMeta, AppliedManifestWork, OrphaningRule};
use ocm_runtime::shutdown::Shutdown;
use serde_json::{Value, json};

use super::context::Ctx;
use super::evict;

/// `<hubHash>-<work>`.
pub fn applied_work_name(hub_hash: &str, work: &str) -> String {
    format!("{hub_hash}-{work}")
}

/// The owner reference an applied object carries.
pub(crate) fn owner_reference(amw: &AppliedManifestWork) -> Value {
    json!({
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "AppliedManifestWork",
        "name": amw.name_any(),
        "uid": amw.uid().unwrap_or_default(),
    })
}

/// Gets (or creates) the AppliedManifestWork of `work`; one recorded under another agent id
/// (an earlier default) is given this agent's, so that it stays this agent's after a move to
/// another hub.
pub(crate) async fn ensure(
    ctx: &Ctx,
    work: &str,
    labels: &std::collections::BTreeMap<String, String>,
) -> Result<AppliedManifestWork, kube::Error> {
    let api: Api<AppliedManifestWork> = Api::all(ctx.spoke.clone());
    let name = applied_work_name(&ctx.hub_hash, work);
    if let Some(existing) = api.get_opt(&name).await? {
        if existing.spec.agent_id == ctx.agent_id {
            return Ok(existing);
        }
        let patch = json!({"metadata": {"resourceVersion": existing.resource_version()},
                           "spec": {"agentID": ctx.agent_id}});
        return api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await;
    }
    let amw: AppliedManifestWork = serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "AppliedManifestWork",
        "metadata": {"name": name, "labels": labels,
                     "finalizers": [APPLIED_MANIFEST_WORK_FINALIZER]},
        "spec": {"hubHash": ctx.hub_hash, "agentID": ctx.agent_id, "manifestWorkName": work},
    }))
    .map_err(kube::Error::SerdeError)?;
    match api.create(&PostParams::default(), &amw).await {
        Ok(created) => Ok(created),
        Err(kube::Error::Api(e)) if e.code == 409 => api.get(&name).await,
        Err(e) => Err(e),
    }
}

/// Whether `rules` orphan the object `res`.
pub(crate) fn orphaned(rules: &[OrphaningRule], res: &AppliedManifestResourceMeta) -> bool {
    rules.iter().any(|r| {
        r.group.as_deref().unwrap_or("") == res.group
            && r.resource == res.resource
            && r.name == res.name
            && r.namespace.as_deref().unwrap_or("") == res.namespace
    })
}

/// Whether two entries name the same object (group, resource, namespace, name; not the uid).
pub(crate) fn same_identity(
    a: &AppliedManifestResourceMeta,
    b: &AppliedManifestResourceMeta,
) -> bool {
    a.group == b.group && a.resource == b.resource && a.namespace == b.namespace && a.name == b.name
}

/// The applied resources to record before a pass writes any object: `recorded` followed by
/// the objects of `upcoming` it does not name yet, without a uid (they may not exist yet);
/// `None` when `recorded` already names them all. Recording them first (write-ahead) means a
/// pass cut short after creating an object (the agent killed, the cluster unreachable) still
/// leaves that object in the AppliedManifestWork, so it is removed when its manifest leaves
/// the work or the work is deleted, instead of being forgotten on the cluster.
pub(crate) fn with_intents(
    recorded: &[AppliedManifestResourceMeta],
    upcoming: &[AppliedManifestResourceMeta],
) -> Option<Vec<AppliedManifestResourceMeta>> {
    let mut out = recorded.to_vec();
    for id in upcoming {
        if !out.iter().any(|r| same_identity(r, id)) {
            out.push(AppliedManifestResourceMeta {
                uid: String::new(),
                ..id.clone()
            });
        }
    }
    (out.len() != recorded.len()).then_some(out)
}

/// Sorts out the objects a pass found recorded (`previous`) that it did not apply
/// (`applied_now` are recorded anew): those the work still prescribes (`prescribed`) stay
/// recorded as they are, since their apply failed and is retried, and the object is not
/// removed for that; the others left the work and are to be released. Returns (kept, left).
pub(crate) fn left_the_work(
    previous: &[AppliedManifestResourceMeta],
    applied_now: &[AppliedManifestResourceMeta],
    prescribed: &[AppliedManifestResourceMeta],
) -> (
    Vec<AppliedManifestResourceMeta>,
    Vec<AppliedManifestResourceMeta>,
) {
    previous
        .iter()
        .filter(|old| !applied_now.iter().any(|n| same_identity(n, old)))
        .cloned()
        .partition(|old| prescribed.iter().any(|p| same_identity(p, old)))
}

/// Whether the live object (uid `live_uid`) is the one an applied-resources entry recorded
/// with `recorded_uid`. An entry recorded before its object was created has no uid and stands
/// for whatever object has the name; whether that object is ours is the owner reference's say.
pub(crate) fn same_object(recorded_uid: &str, live_uid: &str) -> bool {
    recorded_uid.is_empty() || live_uid == recorded_uid
}

/// The outcome of removing one applied object.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Removal {
    /// Gone (or never ours).
    Gone,
    /// Deletion requested; it still exists.
    Pending,
}

fn api_for(ctx: &Ctx, res: &AppliedManifestResourceMeta) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(&res.group, &res.version, "");
    let mut ar = ApiResource::from_gvk_with_plural(&gvk, &res.resource);
    ar.kind = String::new();
    if res.namespace.is_empty() {
        Api::all_with(ctx.spoke.clone(), &ar)
    } else {
        Api::namespaced_with(ctx.spoke.clone(), &res.namespace, &ar)
    }
}

/// Whether the resource list of a group version (`None`: the group version is not served)
/// still has `resource`.
pub(crate) fn lists_resource(list: Option<&APIResourceList>, resource: &str) -> bool {
    list.is_some_and(|l| l.resources.iter().any(|r| r.name == resource))
}

/// Whether the managed cluster still serves the type of `res` (a CRD deleted in the same
/// cleanup takes its type, and so its objects, with it). Asked through discovery, which every
/// authenticated user may read.
async fn served(ctx: &Ctx, res: &AppliedManifestResourceMeta) -> Result<bool, kube::Error> {
    let list = if res.group.is_empty() {
        ctx.spoke.list_core_api_resources(&res.version).await
    } else {
        ctx.spoke
            .list_api_group_resources(&format!("{}/{}", res.group, res.version))
            .await
    };
    match list {
        Ok(list) => Ok(lists_resource(Some(&list), &res.resource)),
        Err(kube::Error::Api(e)) if e.is_not_found() => Ok(lists_resource(None, &res.resource)),
        Err(e) => Err(e),
    }
}

/// `err` from reading or deleting `res`, unless the type of `res` is no longer served: then
/// the object is gone with its type (a request for it may fail otherwise than NotFound, e.g.
/// Forbidden once the aggregated ClusterRole that granted it went in the same cleanup).
async fn gone_with_its_type(
    ctx: &Ctx,
    res: &AppliedManifestResourceMeta,
    err: kube::Error,
) -> Result<Removal, kube::Error> {
    if served(ctx, res).await? {
        Err(err)
    } else {
        Ok(Removal::Gone)
    }
}

/// Stops `amw_uid` from owning `res`: removes only our owner reference when `orphan` is set
/// or another owner remains; otherwise deletes the object (uid precondition). An object whose
/// type the cluster no longer serves is gone.
pub(crate) async fn release(
    ctx: &Ctx,
    res: &AppliedManifestResourceMeta,
    amw_uid: &str,
    orphan: bool,
) -> Result<Removal, kube::Error> {
    let api = api_for(ctx, res);
    let live = match api.get_opt(&res.name).await {
        Ok(live) => live,
        Err(err) => return gone_with_its_type(ctx, res, err).await,
    };
    let Some(live) = live else {
        return Ok(Removal::Gone);
    };
    let live_uid = live.uid().unwrap_or_default();
    if !same_object(&res.uid, &live_uid) {
        return Ok(Removal::Gone);
    }
    let owners = live.owner_references();
    if !owners.iter().any(|o| o.uid == amw_uid) {
        return Ok(Removal::Gone);
    }
    if live.metadata.deletion_timestamp.is_some() {
        return Ok(Removal::Pending);
    }
    let others: Vec<_> = owners
        .iter()
        .filter(|o| o.uid != amw_uid)
        .cloned()
        .collect();
    let shared = others.iter().any(|o| o.kind == "AppliedManifestWork");
    if orphan || shared {
        let patch = json!({"metadata": {"ownerReferences": others,
                                        "resourceVersion": live.resource_version()}});
        api.patch(&res.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        return Ok(Removal::Gone);
    }
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(live_uid),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    match api.delete(&res.name, &params).await {
        Ok(_) => Ok(Removal::Pending),
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(Removal::Gone),
        Err(e) => gone_with_its_type(ctx, res, e).await,
    }
}

/// Removes everything `amw` applied (orphaning what `rules`/`orphan_all` say), then its
/// finalizer and the AppliedManifestWork itself. `Ok(false)` = objects are still going away.
pub(crate) async fn clean_up(
    ctx: &Ctx,
    amw: &AppliedManifestWork,
    orphan_all: bool,
    rules: &[OrphaningRule],
) -> Result<bool, kube::Error> {
    let uid = amw.uid().unwrap_or_default();
    let mut pending = false;
    let mut failed = None;
    // Every object is asked to go, whatever happened to the ones before it.
    for res in amw
        .status
        .as_ref()
        .map(|s| s.applied_resources.as_slice())
        .unwrap_or_default()
    {
        let orphan = orphan_all || orphaned(rules, res);
        match release(ctx, res, &uid, orphan).await {
            Ok(Removal::Pending) => pending = true,
            Ok(Removal::Gone) => {}
            Err(err) => failed = failed.or(Some(err)),
        }
    }
    if let Some(err) = failed {
        return Err(err);
    }
    if pending {
        return Ok(false);
    }
    let api: Api<AppliedManifestWork> = Api::all(ctx.spoke.clone());
    let name = amw.name_any();
    let finalizers: Vec<String> = amw
        .finalizers()
        .iter()
        .filter(|f| *f != APPLIED_MANIFEST_WORK_FINALIZER)
        .cloned()
        .collect();
    if finalizers.len() != amw.finalizers().len() {
        let patch = json!({"metadata": {"finalizers": finalizers}});
        match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(true),
            Err(e) => return Err(e),
        }
    }
    match api.delete(&name, &DeleteParams::default()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(true),
        Err(e) => Err(e),
    }
}

/// Every status-sync interval: finishes this agent's AppliedManifestWorks being deleted (by a
/// cluster admin, or by eviction), and marks, unmarks or evicts those no longer managed (of a
/// hub the agent left, or whose ManifestWork is gone) as [`evict::decide`] says.
pub(crate) async fn sweep(ctx: Arc<Ctx>, shutdown: Shutdown) {
    let mut tick = tokio::time::interval(ctx.options.status_sync_interval);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        if let Err(err) = sweep_once(&ctx).await {
            tracing::debug!(%err, "sweeping AppliedManifestWorks");
        }
    }
}

/// The reconciler's view of the cluster's ManifestWorks, once its first list is complete.
fn synced_works(ctx: &Ctx) -> Option<&Store<ocm_api::work::v1::ManifestWork>> {
    let store = ctx.hub_works.get()?;
    matches!(store.wait_until_ready().now_or_never(), Some(Ok(()))).then_some(store)
}

/// Whether the ManifestWork `name` exists on the current hub.
async fn work_on_hub(ctx: &Ctx, name: &str) -> Result<bool, kube::Error> {
    Ok(match synced_works(ctx) {
        Some(store) => store
            .get(&ObjectRef::new(name).within(&ctx.options.cluster_name))
            .is_some(),
        None => {
            let works: Api<ocm_api::work::v1::ManifestWork> =
                Api::namespaced(ctx.hub.clone(), &ctx.options.cluster_name);
            works.get_opt(name).await?.is_some()
        }
    })
}

async fn sweep_once(ctx: &Ctx) -> Result<(), kube::Error> {
    let api: Api<AppliedManifestWork> = Api::all(ctx.spoke.clone());
    let agent = evict::Agent {
        hub_hash: &ctx.hub_hash,
        agent_id: &ctx.agent_id,
        grace: ctx.options.eviction_grace,
    };
    for amw in api.list(&Default::default()).await?.items {
        if !evict::ours(&amw, agent) {
            continue;
        }
        // One record that cannot be handled now does not hold the others up.
        if let Err(err) = sweep_one(ctx, &api, agent, &amw).await {
            tracing::debug!(%err, name = %amw.name_any(), "sweeping an AppliedManifestWork");
        }
    }
    Ok(())
}

async fn sweep_one(
    ctx: &Ctx,
    api: &Api<AppliedManifestWork>,
    agent: evict::Agent<'_>,
    amw: &AppliedManifestWork,
) -> Result<(), kube::Error> {
    // Only the current hub can say whether a work exists; another hub's record is unmanaged
    // whatever its work.
    let present =
        amw.spec.hub_hash != ctx.hub_hash || work_on_hub(ctx, &amw.spec.manifest_work_name).await?;
    let name = amw.name_any();
    let mark = |at: Option<String>| async move {
        let patch = json!({"status": {"evictionStartTime": at}});
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(drop)
    };
    match evict::decide(amw, agent, present, jiff::Timestamp::now()) {
        evict::Action::Nothing => Ok(()),
        evict::Action::FinishDeletion => clean_up(ctx, amw, false, &[]).await.map(drop),
        evict::Action::Mark => {
            tracing::info!(name = %amw.name_any(), hub_hash = %amw.spec.hub_hash,
                "AppliedManifestWork no longer managed; evicting it after the grace period");
            mark(Some(jiff::Timestamp::now().to_string())).await
        }
        evict::Action::Unmark => mark(None).await,
        evict::Action::Evict => {
            tracing::info!(name = %amw.name_any(), hub_hash = %amw.spec.hub_hash,
                "evicting an AppliedManifestWork no longer managed");
            match api.delete(&amw.name_any(), &DeleteParams::default()).await {
                // Held by its finalizer: start releasing what it applied at once.
                Ok(outcome) => match outcome.left() {
                    Some(deleting) => clean_up(ctx, &deleting, false, &[]).await.map(drop),
                    None => Ok(()),
                },
                Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
                Err(e) => Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applied_works_are_named_by_hub_hash_and_work() {
        assert_eq!(applied_work_name("abc", "app"), "abc-app");
    }

    fn resource(name: &str, uid: &str) -> AppliedManifestResourceMeta {
        AppliedManifestResourceMeta {
            group: String::new(),
            version: "v1".into(),
            resource: "configmaps".into(),
            namespace: "default".into(),
            name: name.into(),
            uid: uid.into(),
        }
    }

    #[test]
    fn objects_about_to_be_applied_are_recorded_first_without_a_uid() {
        let recorded = vec![resource("a", "uid-a")];
        // Known ones keep their uid; new ones are appended without one.
        assert_eq!(
            with_intents(&recorded, &[resource("a", ""), resource("b", "")]),
            Some(vec![resource("a", "uid-a"), resource("b", "")])
        );
        // Nothing to record: no write.
        assert_eq!(with_intents(&recorded, &[resource("a", "")]), None);
        assert_eq!(with_intents(&recorded, &[]), None);
        // An identity is recorded once, whatever the version or uid it comes with.
        let mut other_version = resource("b", "x");
        other_version.version = "v2".into();
        assert_eq!(
            with_intents(&[], &[resource("b", ""), other_version]),
            Some(vec![resource("b", "")])
        );
    }

    #[test]
    fn only_objects_whose_manifest_left_the_work_are_released() {
        let previous = vec![
            resource("applied", "u1"),
            resource("failed", "u2"),
            resource("failed-before-created", ""),
            resource("dropped", "u3"),
            resource("dropped-before-created", ""),
        ];
        let applied_now = vec![resource("applied", "u1"), resource("new", "u4")];
        let prescribed = vec![
            resource("applied", ""),
            resource("new", ""),
            resource("failed", ""),
            resource("failed-before-created", ""),
        ];
        let (kept, left) = left_the_work(&previous, &applied_now, &prescribed);
        assert_eq!(
            kept,
            vec![
                resource("failed", "u2"),
                resource("failed-before-created", "")
            ]
        );
        assert_eq!(
            left,
            vec![
                resource("dropped", "u3"),
                resource("dropped-before-created", "")
            ]
        );
    }

    #[test]
    fn an_object_is_gone_with_its_type() {
        let list: APIResourceList = serde_json::from_value(serde_json::json!({
            "groupVersion": "my.domain/v2",
            "resources": [{"name": "guestbooks", "singularName": "guestbook",
                           "namespaced": true, "kind": "Guestbook", "verbs": ["get"]}]}))
        .unwrap();
        assert!(lists_resource(Some(&list), "guestbooks"));
        assert!(!lists_resource(Some(&list), "libraries"));
        assert!(
            !lists_resource(None, "guestbooks"),
            "group version not served"
        );
    }

    #[test]
    fn an_entry_without_a_uid_stands_for_the_object_of_its_name() {
        assert!(same_object("", "u1"));
        assert!(same_object("u1", "u1"));
        assert!(!same_object("u1", "u2"), "re-created by someone else");
    }

    #[test]
    fn orphaning_rules_match_group_resource_namespace_and_name() {
        let res = AppliedManifestResourceMeta {
            group: "apps".into(),
            version: "v1".into(),
            resource: "deployments".into(),
            namespace: "shop".into(),
            name: "web".into(),
            uid: "u".into(),
        };
        let rule = |ns: &str| OrphaningRule {
            group: Some("apps".into()),
            resource: "deployments".into(),
            name: "web".into(),
            namespace: Some(ns.into()),
        };
        assert!(orphaned(&[rule("shop")], &res));
        assert!(!orphaned(&[rule("other")], &res));
    }
}
