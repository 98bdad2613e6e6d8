//! One pass over one ManifestWork: finalizer, AppliedManifestWork, apply every manifest,
//! remove what left the work, write status; or, for a work being deleted, clean up and release
//! it.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use ocm_api::work::names::{
    MANIFEST_WORK_FINALIZER, conditions as types, manifest_reasons, work_reasons,
};
use ocm_api::work::v1::{
    AppliedManifestResourceMeta, AppliedManifestWork, DeletePropagationPolicyType,
    ManifestCondition, ManifestResourceMeta, ManifestResourceStatus, ManifestWork,
    ManifestWorkStatus,
};
use ocm_runtime::conditions::condition;
use ocm_runtime::shutdown::Shutdown;
use serde_json::{Value, json};

use super::applied::{self, clean_up, owner_reference, release};
use super::apply::{Resolved, apply};
pub(crate) use super::context::Ctx;
use crate::status::{
    LiveObject, manifest_config, merge_conditions, observe_manifest, work_conditions,
};

/// Whether the work's status already reports the object of `id` as `Complete` (a condition
/// rule said so): such a manifest is not applied again, as upstream.
fn completed(work: &ManifestWork, id: &AppliedManifestResourceMeta) -> bool {
    work.status
        .iter()
        .flat_map(|s| s.resource_status.iter())
        .flat_map(|r| r.manifests.iter())
        .filter(|m| {
            let meta = &m.resource_meta;
            meta.group == id.group
                && meta.resource == id.resource
                && meta.namespace == id.namespace
                && meta.name == id.name
        })
        .flat_map(|m| m.conditions.iter())
        .any(|c| c.type_ == types::COMPLETE && c.status == "True")
}

/// Forgets the applied-content hashes of work `work` except those of `keep`.
fn forget_applied(ctx: &Ctx, work: &str, keep: &[String]) {
    let prefix = format!("{work}/");
    if let Ok(mut m) = ctx.last_applied.lock() {
        m.retain(|k, _| !k.starts_with(&prefix) || keep.contains(k));
    }
}

/// A pass that could not finish; retried.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PassError {
    #[error("hub: {0}")]
    Hub(kube::Error),
    #[error("managed cluster: {0}")]
    Spoke(kube::Error),
}

/// Runs the ManifestWork controller until `shutdown`.
pub(crate) async fn run(ctx: Arc<Ctx>, shutdown: Shutdown) {
    let works: Api<ManifestWork> = Api::namespaced(ctx.hub.clone(), &ctx.options.cluster_name);
    let concurrency = ctx.options.concurrency;
    let controller =
        ocm_runtime::cache::controller(works, watcher::Config::default().any_semantic());
    // A restarted agent connection builds a new Ctx, so this is set once per Ctx.
    let _ = ctx.hub_works.set(controller.store());
    let running = controller
        .with_config(kube::runtime::controller::Config::default().concurrency(concurrency))
        .run(reconcile, error_policy, ctx)
        .for_each(|_| futures::future::ready(()));
    tokio::select! {
        () = running => {}
        () = shutdown.cancelled() => {}
    }
}

fn error_policy(_work: Arc<ManifestWork>, err: &PassError, ctx: Arc<Ctx>) -> Action {
    tracing::debug!(%err, "work pass failed");
    Action::requeue(ctx.options.status_sync_interval.min(Duration::from_secs(2)))
}

async fn reconcile(work: Arc<ManifestWork>, ctx: Arc<Ctx>) -> Result<Action, PassError> {
    let name = work.name_any();
    let works: Api<ManifestWork> = Api::namespaced(ctx.hub.clone(), &ctx.options.cluster_name);
    if work.metadata.deletion_timestamp.is_some() {
        return delete_work(&work, &works, &ctx).await;
    }
    if !work
        .finalizers()
        .iter()
        .any(|f| f == MANIFEST_WORK_FINALIZER)
    {
        let mut finalizers = work.finalizers().to_vec();
        finalizers.push(MANIFEST_WORK_FINALIZER.to_owned());
        let patch = json!({"metadata": {"finalizers": finalizers,
                                        "resourceVersion": work.resource_version()}});
        works
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(PassError::Hub)?;
        return Ok(Action::await_change());
    }
    let amw = applied::ensure(&ctx, &name, work.labels())
        .await
        .map_err(PassError::Spoke)?;
    let owner = owner_reference(&amw);
    let generation = work.metadata.generation.unwrap_or(0);
    let spec = &work.spec;
    let delete_option = spec.delete_option.clone().unwrap_or_default();
    let policy = delete_option.propagation_policy.unwrap_or_default();
    let rules = delete_option
        .selectively_orphans
        .as_ref()
        .map(|s| s.orphaning_rules.clone())
        .unwrap_or_default();
    let executor = spec
        .executor
        .as_ref()
        .and_then(|e| e.subject.service_account.as_ref());

    let kinds: Vec<(String, String)> = spec
        .workload
        .manifests
        .iter()
        .map(|m| {
            let v = &m.0;
            let api_version = v["apiVersion"].as_str().unwrap_or("");
            let group = api_version.split_once('/').map(|(g, _)| g).unwrap_or("");
            (
                group.to_owned(),
                v["kind"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let mut results: Vec<Option<ManifestCondition>> = vec![None; kinds.len()];
    let mut applied_now: Vec<AppliedManifestResourceMeta> = Vec::new();
    let mut retry_soon = false;
    let mut writes = 0u64;
    let mut seen_keys: Vec<String> = Vec::new();
    let mut prescribed: Vec<AppliedManifestResourceMeta> = Vec::new();

    // Write-ahead: the AppliedManifestWork names every object of the work before any is
    // written, so a pass cut short still knows what it may have created.
    let mut recorded = amw
        .status
        .as_ref()
        .map(|s| s.applied_resources.clone())
        .unwrap_or_default();
    let mut resolved_first = Vec::with_capacity(kinds.len());
    let mut upcoming = Vec::new();
    for (index, manifest) in spec.workload.manifests.iter().enumerate() {
        let resolved = ctx
            .discovery
            .resolve(&ctx.spoke, api_version_of(&manifest.0), &kinds[index].1)
            .await;
        if let Ok(resolved) = &resolved {
            let meta = resolved_meta(manifest_meta(index, &manifest.0, &kinds[index]), resolved);
            if !read_only(manifest_config(&spec.manifest_configs, &meta)) {
                upcoming.push(object_id(&meta));
            }
        }
        resolved_first.push(resolved.ok());
    }
    record_intents(&ctx, &amw, &mut recorded, &upcoming)
        .await
        .map_err(PassError::Spoke)?;

    for index in super::order::apply_order(&kinds) {
        let manifest = &spec.workload.manifests[index].0;
        let mut meta = manifest_meta(index, manifest, &kinds[index]);
        // A kind unknown before this pass (a CRD applied earlier in it) is resolved again.
        let resolved = match resolved_first[index].clone() {
            Some(resolved) => Ok(resolved),
            None => {
                ctx.discovery
                    .resolve(&ctx.spoke, api_version_of(manifest), &meta.kind)
                    .await
            }
        };
        let mut conditions = Vec::new();
        let (live, applied_condition) = match resolved {
            Err(message) => {
                retry_soon = true;
                (
                    LiveObject::IncompleteMeta,
                    condition(
                        types::APPLIED,
                        "False",
                        manifest_reasons::APPLIED_MANIFEST_FAILED,
                        &message,
                        Some(generation),
                    ),
                )
            }
            Ok(resolved) => {
                meta = resolved_meta(meta, &resolved);
                let id = object_id(&meta);
                let config = manifest_config(&spec.manifest_configs, &meta);
                if !read_only(config) {
                    record_intents(&ctx, &amw, &mut recorded, std::slice::from_ref(&id))
                        .await
                        .map_err(PassError::Spoke)?;
                    prescribed.push(id.clone());
                }
                let orphan = is_orphaned(policy, &rules, &id);
                let mut desired = manifest.clone();
                if let Some(meta_obj) = desired.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta_obj.remove("uid");
                    meta_obj.remove("resourceVersion");
                    if resolved.namespaced {
                        meta_obj.insert("namespace".into(), json!(meta.namespace));
                    }
                    if !orphan {
                        let mut owners = meta_obj
                            .get("ownerReferences")
                            .and_then(Value::as_array)
                            .cloned()
                            .unwrap_or_default();
                        owners.push(owner.clone());
                        meta_obj.insert("ownerReferences".into(), Value::Array(owners));
                    }
                }
                let key = format!(
                    "{name}/{}/{}/{}/{}",
                    id.group, id.resource, id.namespace, id.name
                );
                let content = super::ignore::spec_hash(&desired);
                seen_keys.push(key.clone());
                let changed = ctx
                    .last_applied
                    .lock()
                    .map(|m| m.get(&key).is_some_and(|h| *h != content))
                    .unwrap_or(false);
                let complete = completed(&work, &id);
                match apply(
                    &ctx.spoke, &resolved, &desired, config, executor, changed, complete,
                )
                .await
                {
                    Ok(result) => {
                        if let Ok(mut m) = ctx.last_applied.lock() {
                            m.insert(key, content);
                        }
                        writes += u64::from(result.wrote);
                        let uid = result
                            .live
                            .as_ref()
                            .and_then(|l| l.pointer("/metadata/uid"))
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned();
                        if !read_only(config) && !uid.is_empty() {
                            applied_now.push(AppliedManifestResourceMeta { uid, ..id });
                        }
                        let observed = observe_manifest(
                            match &result.live {
                                Some(l) => LiveObject::Found(l),
                                None => LiveObject::NotFound,
                            },
                            &meta,
                            config,
                            generation,
                        );
                        conditions.extend(observed.conditions);
                        let status_feedback = observed.feedback;
                        results[index] = Some(ManifestCondition {
                            resource_meta: meta.clone(),
                            status_feedback,
                            conditions: Vec::new(),
                        });
                        (
                            LiveObject::NotFound,
                            condition(
                                types::APPLIED,
                                "True",
                                manifest_reasons::APPLIED_MANIFEST_COMPLETE,
                                "Apply manifest complete",
                                Some(generation),
                            ),
                        )
                    }
                    Err(failure) => {
                        retry_soon = true;
                        (
                            LiveObject::IncompleteMeta,
                            condition(
                                types::APPLIED,
                                "False",
                                failure.reason,
                                &failure.message,
                                Some(generation),
                            ),
                        )
                    }
                }
            }
        };
        let entry = results[index].get_or_insert_with(|| ManifestCondition {
            resource_meta: meta.clone(),
            status_feedback: None,
            conditions: Vec::new(),
        });
        if entry.conditions.is_empty() && conditions.is_empty() {
            // Failed before reading: availability comes from what was (not) read.
            let config = manifest_config(&spec.manifest_configs, &meta);
            conditions.extend(observe_manifest(live, &meta, config, generation).conditions);
        }
        entry.conditions.push(applied_condition);
        entry.conditions.extend(conditions);
    }
    forget_applied(&ctx, &name, &seen_keys);

    // Objects that left the work.
    applied_now.sort_by(|a, b| {
        (&a.group, &a.resource, &a.namespace, &a.name).cmp(&(
            &b.group,
            &b.resource,
            &b.namespace,
            &b.name,
        ))
    });
    let previous = recorded;
    let amw_uid = amw.uid().unwrap_or_default();
    let (failed, left) = applied::left_the_work(&previous, &applied_now, &prescribed);
    let mut keep = applied_now.clone();
    keep.extend(failed);
    for old in &left {
        let orphan = policy == DeletePropagationPolicyType::Orphan
            || (policy == DeletePropagationPolicyType::SelectivelyOrphan
                && applied::orphaned(&rules, old));
        match release(&ctx, old, &amw_uid, orphan).await {
            Ok(applied::Removal::Gone) => {}
            Ok(applied::Removal::Pending) => {
                keep.push(old.clone());
                retry_soon = true;
            }
            Err(e) => {
                tracing::debug!(%e, "removing an object that left the work");
                keep.push(old.clone());
                retry_soon = true;
            }
        }
    }
    if keep != previous {
        let amw_api: Api<AppliedManifestWork> = Api::all(ctx.spoke.clone());
        amw_api
            .patch_status(
                &amw.name_any(),
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"appliedResources": keep}})),
            )
            .await
            .map_err(PassError::Spoke)?;
    }

    // Status, written only when it changed.
    let old = work.status.clone().unwrap_or_default();
    let old_manifests = old
        .resource_status
        .as_ref()
        .map(|r| r.manifests.clone())
        .unwrap_or_default();
    let mut changed = false;
    let mut manifests = Vec::with_capacity(results.len());
    for mut entry in results.into_iter().flatten() {
        let previous = old_manifests
            .iter()
            .find(|m| m.resource_meta == entry.resource_meta);
        let mut conditions = previous.map(|p| p.conditions.clone()).unwrap_or_default();
        changed |= merge_conditions(&mut conditions, &entry.conditions);
        changed |= conditions.len() != entry.conditions.len();
        conditions.retain(|c| entry.conditions.iter().any(|n| n.type_ == c.type_));
        entry.conditions = conditions;
        changed |= previous.is_none_or(|p| p.status_feedback != entry.status_feedback);
        manifests.push(entry);
    }
    changed |= manifests.len() != old_manifests.len();
    let mut conditions = old.conditions.clone();
    changed |= merge_conditions(&mut conditions, &work_conditions(&manifests, generation));
    if changed {
        let status = ManifestWorkStatus {
            conditions,
            resource_status: Some(ManifestResourceStatus { manifests }),
        };
        works
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": status})),
            )
            .await
            .map_err(PassError::Hub)?;
    }
    ctx.stats.send_modify(|s| {
        s.passes += 1;
        s.writes += writes;
    });
    let next = if retry_soon {
        ctx.options.status_sync_interval.min(Duration::from_secs(1))
    } else {
        ctx.options.status_sync_interval
    };
    Ok(Action::requeue(next))
}

/// `apiVersion` of a manifest ("" when it has none).
fn api_version_of(manifest: &Value) -> &str {
    manifest["apiVersion"].as_str().unwrap_or("")
}

/// What a manifest says about its object before its resource is resolved: `kind` is its
/// (group, kind).
fn manifest_meta(index: usize, manifest: &Value, kind: &(String, String)) -> ManifestResourceMeta {
    let api_version = api_version_of(manifest);
    let text = |pointer: &str| {
        manifest
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    ManifestResourceMeta {
        ordinal: index as i32,
        group: kind.0.clone(),
        kind: kind.1.clone(),
        version: api_version
            .rsplit('/')
            .next()
            .unwrap_or(api_version)
            .to_owned(),
        name: text("/metadata/name"),
        namespace: text("/metadata/namespace"),
        resource: String::new(),
    }
}

/// `meta` with its resolved resource: the plural, no namespace when cluster-scoped, `default`
/// when namespaced and the manifest names none.
fn resolved_meta(mut meta: ManifestResourceMeta, resolved: &Resolved) -> ManifestResourceMeta {
    meta.resource = resolved.resource.plural.clone();
    if !resolved.namespaced {
        meta.namespace = String::new();
    } else if meta.namespace.is_empty() {
        meta.namespace = "default".into();
    }
    meta
}

/// The applied-resources entry of a resolved manifest's object (no uid).
fn object_id(meta: &ManifestResourceMeta) -> AppliedManifestResourceMeta {
    AppliedManifestResourceMeta {
        group: meta.group.clone(),
        version: meta.version.clone(),
        resource: meta.resource.clone(),
        namespace: meta.namespace.clone(),
        name: meta.name.clone(),
        uid: String::new(),
    }
}

/// Whether a manifest's config makes it `ReadOnly` (never written, so never recorded).
fn read_only(config: Option<&ocm_api::work::v1::ManifestConfigOption>) -> bool {
    config
        .and_then(|c| c.update_strategy.as_ref())
        .is_some_and(|s| s.type_ == ocm_api::work::v1::UpdateStrategyType::ReadOnly)
}

/// Records `upcoming` in the AppliedManifestWork's status before they are written (see
/// [`applied::with_intents`]); no write when it names them already.
async fn record_intents(
    ctx: &Ctx,
    amw: &AppliedManifestWork,
    recorded: &mut Vec<AppliedManifestResourceMeta>,
    upcoming: &[AppliedManifestResourceMeta],
) -> Result<(), kube::Error> {
    let Some(next) = applied::with_intents(recorded, upcoming) else {
        return Ok(());
    };
    Api::<AppliedManifestWork>::all(ctx.spoke.clone())
        .patch_status(
            &amw.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"appliedResources": next}})),
        )
        .await?;
    *recorded = next;
    Ok(())
}

/// Whether the work's delete option leaves `res` on the cluster.
fn is_orphaned(
    policy: DeletePropagationPolicyType,
    rules: &[ocm_api::work::v1::OrphaningRule],
    res: &AppliedManifestResourceMeta,
) -> bool {
    match policy {
        DeletePropagationPolicyType::Orphan => true,
        DeletePropagationPolicyType::SelectivelyOrphan => applied::orphaned(rules, res),
        DeletePropagationPolicyType::Foreground => false,
    }
}

/// A work being deleted: `Deleting`, clean up what it applied, then release its finalizer.
async fn delete_work(
    work: &ManifestWork,
    works: &Api<ManifestWork>,
    ctx: &Ctx,
) -> Result<Action, PassError> {
    let name = work.name_any();
    forget_applied(ctx, &name, &[]);
    if !work
        .finalizers()
        .iter()
        .any(|f| f == MANIFEST_WORK_FINALIZER)
    {
        return Ok(Action::await_change());
    }
    let generation = work.metadata.generation.unwrap_or(0);
    let mut conditions = work
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    if merge_conditions(
        &mut conditions,
        &[condition(
            types::DELETING,
            "True",
            work_reasons::WORK_DELETING,
            "Delete manifests",
            Some(generation),
        )],
    ) {
        works
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"conditions": conditions}})),
            )
            .await
            .map_err(PassError::Hub)?;
    }
    let delete_option = work.spec.delete_option.clone().unwrap_or_default();
    let policy = delete_option.propagation_policy.unwrap_or_default();
    let rules = delete_option
        .selectively_orphans
        .map(|s| s.orphaning_rules)
        .unwrap_or_default();
    let amw_api: Api<AppliedManifestWork> = Api::all(ctx.spoke.clone());
    let amw_name = applied::applied_work_name(&ctx.hub_hash, &name);
    if let Some(amw) = amw_api.get_opt(&amw_name).await.map_err(PassError::Spoke)? {
        let orphan_all = policy == DeletePropagationPolicyType::Orphan;
        let rules = if policy == DeletePropagationPolicyType::SelectivelyOrphan {
            rules
        } else {
            Vec::new()
        };
        if !clean_up(ctx, &amw, orphan_all, &rules)
            .await
            .map_err(PassError::Spoke)?
        {
            return Ok(Action::requeue(Duration::from_millis(500)));
        }
    }
    let finalizers: Vec<String> = work
        .finalizers()
        .iter()
        .filter(|f| *f != MANIFEST_WORK_FINALIZER)
        .cloned()
        .collect();
    let patch =
        json!({"metadata": {"finalizers": finalizers, "resourceVersion": work.resource_version()}});
    match works
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(Action::await_change()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(Action::await_change()),
        Err(e) => Err(PassError::Hub(e)),
    }
}
