//! API Priority and Fairness configuration in every logical cluster, as kube-apiserver's
//! bootstrap-configuration ensurer and its APF config controller keep it:
//!
//! - the [bootstrap objects](crate::flowcontrol::bootstrap) are created when missing (mandatory
//!   and suggested alike);
//! - a mandatory object's spec is put back whenever it differs (the `exempt` level may tune
//!   `spec.exempt`), and its `apf.kubernetes.io/autoupdate-spec` annotation is reset to
//!   `"true"`;
//! - a suggested object's spec is put back while that annotation is `"true"` (or, without a
//!   boolean annotation, while the object is at generation 1, and the annotation is then
//!   recorded);
//! - an object carrying the annotation as `"true"` whose name kube's bootstrap no longer has is
//!   deleted;
//! - every FlowSchema has a `Dangling` condition: `True`/`NotFound` when its priority level
//!   does not exist, `False`/`Found` when it does.
//!
//! kube-apiserver runs the ensurer once a minute; here every change of either kind triggers a
//! pass over its cluster, so drift is put right at once. A process may host thousands of
//! clusters (on SQLite, every commit an fsync): a pass issues each step's writes together and
//! several clusters are passed over at once, so the store's group commit makes them durable
//! in few commits.

use std::collections::HashSet;

use futures::future::join_all;
use serde_json::{Value, json};

use crate::control::ServerAccess;
use crate::flowcontrol::{AUTO_UPDATE_ANNOTATION, Bootstrap, Class, DANGLING, Kind, bootstrap};
use crate::ops::{DeleteOptions, Managed, Target};
use ocm_apiserver_storage::{Bucket, ObjectKey};

/// The field manager of the bootstrap writes (kube's ensurer's).
const PRODUCER: &str = "api-priority-and-fairness-config-producer-v1";
/// The field manager of the `Dangling` condition (kube's APF controller's).
const CONSUMER: &str = "api-priority-and-fairness-config-consumer-v1";

fn bucket(cluster: &str, kind: Kind) -> Bucket {
    Bucket::new(cluster, &kind.storage_resource())
}

fn stored(server: &ServerAccess, cluster: &str, kind: Kind, name: &str) -> Option<Value> {
    let key = ObjectKey::new(bucket(cluster, kind), "", name);
    let object = server.get(&key)?;
    serde_json::from_slice(&object.value).ok()
}

fn all(server: &ServerAccess, cluster: &str, kind: Kind) -> Vec<Value> {
    let (_, items) = server.list(&bucket(cluster, kind), None, None);
    items
        .into_iter()
        .filter_map(|(_, _, o)| serde_json::from_slice(&o.value).ok())
        .collect()
}

fn annotation(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(AUTO_UPDATE_ANNOTATION))
        .and_then(Value::as_str)
}

/// Go's `strconv.ParseBool`.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// What a pass must do to a stored bootstrap object: `None` when it is up to date, else
/// whether to replace the spec and the annotation value to write.
fn revision(boot: &Bootstrap, current: &Value) -> Option<(bool, bool)> {
    let auto_update = match boot.class {
        Class::Mandatory => true,
        Class::Suggested => annotation(current)
            .and_then(parse_bool)
            .unwrap_or_else(|| current.pointer("/metadata/generation") == Some(&json!(1))),
    };
    let update_annotation = annotation(current).and_then(parse_bool) != Some(auto_update);
    let spec = current.get("spec").unwrap_or(&Value::Null);
    let replace_spec = auto_update && !crate::flowcontrol::spec_equalish(boot, spec);
    (update_annotation || replace_spec).then_some((replace_spec, auto_update))
}

/// Creates or puts right one bootstrap object. Returns whether it is done.
async fn ensure(server: &ServerAccess, cluster: &str, boot: &Bootstrap) -> bool {
    let bucket = bucket(cluster, boot.kind);
    let Some(mut ctx) = server.writer(&bucket, PRODUCER) else {
        return true;
    };
    let name = boot.name().to_owned();
    let result = match stored(server, cluster, boot.kind, &name) {
        None => ctx
            .create("", boot.object.clone(), Managed::RecordUpdate)
            .await
            .map(|_| ()),
        Some(current) => {
            if meta_deleting(&current) || revision(boot, &current).is_none() {
                return true;
            }
            let mut mutate = |_: &mut crate::ops::Ctx, current: &Value| {
                let mut next = current.clone();
                if let Some((replace_spec, auto_update)) = revision(boot, current) {
                    if replace_spec {
                        next["spec"] = boot.spec().clone();
                    }
                    let meta = next
                        .as_object_mut()
                        .map(|m| m.entry("metadata").or_insert_with(|| json!({})));
                    if let Some(meta) = meta.and_then(Value::as_object_mut) {
                        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
                        if !annotations.is_object() {
                            *annotations = json!({});
                        }
                        annotations[AUTO_UPDATE_ANNOTATION] = json!(auto_update.to_string());
                    }
                }
                Ok(next)
            };
            ctx.update(
                "",
                &name,
                &Target::Main,
                Managed::RecordUpdate,
                false,
                &mut mutate,
            )
            .await
            .map(|_| ())
        }
    };
    match result {
        Ok(()) => true,
        Err(err) if matches!(err.code, 404 | 409) => false,
        Err(err) => {
            tracing::warn!(%err, cluster, name, "keeping an APF bootstrap object failed");
            false
        }
    }
}

fn meta_deleting(obj: &Value) -> bool {
    crate::meta::is_deleting(obj)
}

/// Deletes the objects that carry the autoupdate annotation as true but that kube's bootstrap
/// no longer has (kube's `removeDanglingBootstrapConfiguration`), all at once.
async fn remove_retired(server: &ServerAccess, cluster: &str, boot: &[Bootstrap]) -> bool {
    let mut retired: Vec<(Kind, String)> = Vec::new();
    for kind in [Kind::FlowSchema, Kind::PriorityLevel] {
        let names: HashSet<&str> = boot
            .iter()
            .filter(|b| b.kind == kind)
            .map(Bootstrap::name)
            .collect();
        for obj in all(server, cluster, kind) {
            let name = crate::meta::meta_str(&obj, "name");
            if names.contains(name)
                || annotation(&obj).and_then(parse_bool) != Some(true)
                || meta_deleting(&obj)
            {
                continue;
            }
            retired.push((kind, name.to_owned()));
        }
    }
    let deletes = retired.into_iter().map(|(kind, name)| async move {
        let Some(mut ctx) = server.writer(&bucket(cluster, kind), PRODUCER) else {
            return true;
        };
        match ctx.delete("", &name, &DeleteOptions::default()).await {
            Err(err) if err.code != 404 => {
                tracing::warn!(%err, cluster, name, "removing a retired APF object failed");
                false
            }
            _ => true,
        }
    });
    join_all(deletes).await.into_iter().all(|done| done)
}

/// The FlowSchema's `status.conditions` with `Dangling` set for a priority level that does or
/// does not exist; `None` when the condition already says so.
fn dangling_conditions(schema: &Value, found: bool) -> Option<Vec<Value>> {
    let level = schema
        .pointer("/spec/priorityLevelConfiguration/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let (status, reason, message) = crate::flowcontrol::dangling(found, level);
    let conditions: Vec<Value> = schema
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let current = conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(DANGLING));
    let same = current.is_some_and(|c| {
        c.get("status").and_then(Value::as_str) == Some(status)
            && c.get("reason").and_then(Value::as_str) == Some(reason)
            && c.get("message").and_then(Value::as_str) == Some(message.as_str())
    });
    if same {
        return None;
    }
    let condition = json!({
        "type": DANGLING,
        "status": status,
        "lastTransitionTime": crate::meta::now(),
        "reason": reason,
        "message": message,
    });
    let mut out: Vec<Value> = conditions
        .into_iter()
        .filter(|c| c.get("type").and_then(Value::as_str) != Some(DANGLING))
        .collect();
    out.push(condition);
    Some(out)
}

/// Whether the priority level `schema` references is one of `levels`.
fn level_found(levels: &HashSet<String>, schema: &Value) -> bool {
    levels.contains(
        schema
            .pointer("/spec/priorityLevelConfiguration/name")
            .and_then(Value::as_str)
            .unwrap_or(""),
    )
}

/// Sets the `Dangling` condition of one FlowSchema by a `/status` write. Returns whether it
/// is done.
async fn set_dangling(
    server: &ServerAccess,
    cluster: &str,
    levels: &HashSet<String>,
    name: String,
) -> bool {
    let Some(mut ctx) = server.writer(&bucket(cluster, Kind::FlowSchema), CONSUMER) else {
        return true;
    };
    let conditions = |current: &Value| dangling_conditions(current, level_found(levels, current));
    match super::set_conditions(&mut ctx, &name, conditions).await {
        Err(err) => {
            tracing::debug!(%err, cluster, name, "setting Dangling failed; will retry");
            false
        }
        Ok(()) => true,
    }
}

/// Sets the `Dangling` condition of every FlowSchema of `cluster`, all writes at once (the
/// store makes them durable together). Returns whether all are done.
async fn sync_dangling(server: &ServerAccess, cluster: &str) -> bool {
    let levels: HashSet<String> = all(server, cluster, Kind::PriorityLevel)
        .iter()
        .map(|l| crate::meta::meta_str(l, "name").to_owned())
        .collect();
    let names: Vec<String> = all(server, cluster, Kind::FlowSchema)
        .into_iter()
        .filter(|schema| dangling_conditions(schema, level_found(&levels, schema)).is_some())
        .map(|schema| crate::meta::meta_str(&schema, "name").to_owned())
        .collect();
    let writes = names
        .into_iter()
        .map(|name| set_dangling(server, cluster, &levels, name));
    join_all(writes).await.into_iter().all(|done| done)
}

/// One pass over `cluster`: bootstrap objects, retired objects, `Dangling` conditions. Each
/// step's writes are issued together, so a new cluster's configuration costs the store a few
/// group commits rather than one commit per object; a new FlowSchema gets its `Dangling`
/// condition in the round of status writes right after the creates. Returns whether
/// everything is done (else the pass should be retried).
pub(crate) async fn sync_cluster(server: &ServerAccess, cluster: &str) -> bool {
    let boot = bootstrap();
    let ensured = join_all(boot.iter().map(|item| ensure(server, cluster, item))).await;
    let mut done = ensured.into_iter().all(|done| done);
    done &= remove_retired(server, cluster, boot).await;
    done &= sync_dangling(server, cluster).await;
    done
}

/// How many clusters the controller passes over at once.
const CONCURRENT_CLUSTERS: usize = 16;

/// Whether a storage resource is a flowcontrol kind.
fn is_flowcontrol(resource: &str) -> bool {
    resource == Kind::FlowSchema.storage_resource()
        || resource == Kind::PriorityLevel.storage_resource()
}

pub(crate) async fn run(server: ServerAccess) {
    let access = server.clone();
    super::run_per_cluster(
        server,
        super::PerCluster {
            keeps: is_flowcontrol,
            relevant: |event: &ocm_apiserver_storage::Event| {
                is_flowcontrol(&event.key.bucket.resource)
            },
            sync: |cluster: String, _first: bool| {
                let server = access.clone();
                async move { sync_cluster(&server, &cluster).await }
            },
            concurrency: CONCURRENT_CLUSTERS,
        },
    )
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boot(name: &str, kind: Kind) -> Bootstrap {
        bootstrap()
            .iter()
            .find(|b| b.kind == kind && b.name() == name)
            .cloned()
            .unwrap()
    }

    #[test]
    fn suggested_objects_follow_their_annotation() {
        let b = boot("global-default", Kind::FlowSchema);
        let mut current = b.object.clone();
        current["metadata"]["generation"] = json!(2);
        assert_eq!(revision(&b, &current), None);
        current["spec"]["matchingPrecedence"] = json!(100);
        assert_eq!(revision(&b, &current), Some((true, true)));
        current["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION] = json!("false");
        assert_eq!(revision(&b, &current), None);
        // Without the annotation: kept up to date only at generation 1.
        current["metadata"]["annotations"] = json!({});
        assert_eq!(revision(&b, &current), Some((false, false)));
        current["metadata"]["generation"] = json!(1);
        assert_eq!(revision(&b, &current), Some((true, true)));
    }

    #[test]
    fn mandatory_objects_are_always_put_back() {
        let b = boot("catch-all", Kind::PriorityLevel);
        let mut current = b.object.clone();
        current["metadata"]["annotations"][AUTO_UPDATE_ANNOTATION] = json!("false");
        assert_eq!(revision(&b, &current), Some((false, true)));
        current["spec"]["limited"]["nominalConcurrencyShares"] = json!(50);
        assert_eq!(revision(&b, &current), Some((true, true)));
    }

    #[test]
    fn dangling_is_replaced_only_when_it_changes() {
        let schema = json!({"spec": {"priorityLevelConfiguration": {"name": "x"}},
                            "status": {"conditions": [{"type": "Other", "status": "True"}]}});
        let set = dangling_conditions(&schema, false).unwrap();
        assert_eq!(set.len(), 2);
        assert_eq!(set[1]["reason"], "NotFound");
        let with = json!({"spec": schema["spec"], "status": {"conditions": set}});
        assert!(dangling_conditions(&with, false).is_none());
        assert_eq!(
            dangling_conditions(&with, true).unwrap()[1]["status"],
            "False"
        );
    }
}
