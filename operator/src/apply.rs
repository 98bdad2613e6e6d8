//! Writing what an operator renders: server-side apply of each object, deletion in reverse
//! order, the cleanup finalizer, `relatedResources` entries, and reading Deployments'
//! rollout state. Shared by the ClusterManager and Klusterlet controllers.

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

/// How soon a controller looks again while its Deployments roll out.
pub const ROLLOUT_RECHECK: std::time::Duration = std::time::Duration::from_secs(2);

/// Where a rendered object lives.
struct Coordinates<'a> {
    group: &'a str,
    version: &'a str,
    kind: &'a str,
    resource: String,
    namespace: &'a str,
    name: &'a str,
}

/// Plural resource of a kind the operators render (all regular English plurals).
fn plural(kind: &str) -> String {
    let lower = kind.to_lowercase();
    if lower.ends_with('s') {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    }
}

fn coordinates(object: &Value) -> Coordinates<'_> {
    let text = |p: &str| {
        object
            .pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let api_version = text("/apiVersion");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = text("/kind");
    Coordinates {
        group,
        version,
        kind,
        resource: plural(kind),
        namespace: text("/metadata/namespace"),
        name: text("/metadata/name"),
    }
}

/// The API of a rendered object, and its name.
pub fn api_of(client: &kube::Client, object: &Value) -> (Api<DynamicObject>, String) {
    let at = coordinates(object);
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(at.group, at.version, at.kind),
        &at.resource,
    );
    let api = match at.namespace {
        "" => Api::all_with(client.clone(), &resource),
        ns => Api::namespaced_with(client.clone(), ns, &resource),
    };
    (api, at.name.to_owned())
}

/// `relatedResources` entry of a rendered object.
pub fn related(object: &Value) -> Value {
    let at = coordinates(object);
    json!({"group": at.group, "version": at.version, "resource": at.resource,
           "namespace": at.namespace, "name": at.name})
}

/// Deletes what an earlier pass installed (its `relatedResources`, `before`) and this one no
/// longer renders (`now`, as `relatedResources` entries): a mode or namespace change must not
/// leave the old agents or components running. CustomResourceDefinitions are never deleted
/// (they hold everyone's data).
pub async fn prune(
    client: &kube::Client,
    before: &[Value],
    now: &[Value],
) -> Result<(), kube::Error> {
    for gone in before.iter().filter(|entry| !now.contains(entry)) {
        let text = |k: &str| gone[k].as_str().unwrap_or_default().to_owned();
        let (group, version, resource) = (text("group"), text("version"), text("resource"));
        if resource == "customresourcedefinitions" || resource.is_empty() || version.is_empty() {
            continue;
        }
        let api_resource = ApiResource {
            api_version: if group.is_empty() {
                version.clone()
            } else {
                format!("{group}/{version}")
            },
            group,
            version,
            kind: String::new(),
            plural: resource,
        };
        let namespace = text("namespace");
        let api: Api<DynamicObject> = if namespace.is_empty() {
            Api::all_with(client.clone(), &api_resource)
        } else {
            Api::namespaced_with(client.clone(), &namespace, &api_resource)
        };
        match api.delete(&text("name"), &DeleteParams::background()).await {
            Ok(_) => {}
            // Gone, or already on its way (a terminating namespace answers 409).
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// What to write into `relatedResources` before a pass applies what it `planned` (as
/// [`related`] entries): the earlier entries (`before`) and the planned ones not among them;
/// `None` when none is new. Recorded before it exists, an object is pruned later even when
/// the pass's own status write is lost (a change of the object meanwhile answers it 409) — for
/// instance a component turned on and off again at once.
pub fn record_ahead(before: &[Value], planned: &[Value]) -> Option<Vec<Value>> {
    let new: Vec<&Value> = planned.iter().filter(|e| !before.contains(e)).collect();
    if new.is_empty() {
        return None;
    }
    let mut recorded = before.to_vec();
    recorded.extend(new.into_iter().cloned());
    Some(recorded)
}

/// The `relatedResources` to report after a pass: when everything applied (`complete`), what
/// was installed `before` and is no longer in `now` is deleted ([`prune`]) and `now` is the
/// list; otherwise nothing is deleted and the earlier entries stay on the list, to be pruned
/// by a later complete pass.
pub async fn settle_related(
    client: &kube::Client,
    before: Vec<Value>,
    mut now: Vec<Value>,
    complete: bool,
) -> Result<Vec<Value>, kube::Error> {
    if complete {
        prune(client, &before, &now).await?;
    } else {
        for entry in before {
            if !now.contains(&entry) {
                now.push(entry);
            }
        }
    }
    Ok(now)
}

/// A Deployment with `replicas` wanted and `available` available, for tests.
#[cfg(test)]
pub(crate) fn test_deployment(
    replicas: i32,
    available: i32,
) -> k8s_openapi::api::apps::v1::Deployment {
    serde_json::from_value(
        json!({"spec": {"replicas": replicas, "selector": {}, "template": {}},
                                  "status": {"availableReplicas": available}}),
    )
    .unwrap_or_default()
}

/// `relatedResources` of a status as JSON entries (as [`related`] makes them).
pub fn related_entries(list: Option<&[ocm_api::operator::v1::RelatedResourceMeta]>) -> Vec<Value> {
    list.unwrap_or_default()
        .iter()
        .filter_map(|r| serde_json::to_value(r).ok())
        .collect()
}

/// Control-plane nodes of the cluster (for the replica rule); 0 when they cannot be listed.
pub async fn control_plane_nodes(client: &kube::Client) -> usize {
    let nodes: Api<Node> = Api::all(client.clone());
    let mut count = 0;
    for label in [
        "node-role.kubernetes.io/control-plane",
        "node-role.kubernetes.io/master",
    ] {
        if let Ok(list) = nodes.list(&ListParams::default().labels(label)).await {
            count = count.max(list.items.len());
        }
    }
    count
}

/// What applying a rendering did.
#[derive(Debug, Default)]
pub struct Applied {
    /// The first object the server refused, and why (nothing after it was applied).
    pub failure: Option<String>,
    /// Deployments still rolling out their current generation.
    pub rolling: Vec<String>,
    /// `(namespace, name, generation)` of each Deployment as written.
    pub deployments: Vec<(String, String, i64)>,
}

/// Server-side applies `objects` in order as `field_manager`, stopping at the first refusal.
pub async fn apply_all(client: &kube::Client, field_manager: &str, objects: &[Value]) -> Applied {
    let params = PatchParams::apply(field_manager).force();
    let mut out = Applied::default();
    for object in objects {
        let (api, name) = api_of(client, object);
        match api.patch(&name, &params, &Patch::Apply(object)).await {
            Ok(written) => {
                if object["kind"] == "Deployment" {
                    if !deployment_up_to_date(&written) {
                        out.rolling.push(name.clone());
                    }
                    out.deployments.push((
                        written.metadata.namespace.clone().unwrap_or_default(),
                        name,
                        written.metadata.generation.unwrap_or_default(),
                    ));
                }
            }
            Err(err) => {
                out.failure = Some(format!(
                    "{} {name}: {err}",
                    object["kind"].as_str().unwrap_or_default()
                ));
                break;
            }
        }
    }
    out
}

/// Deletes `objects` in reverse order (those already gone are fine).
pub async fn delete_all(client: &kube::Client, objects: &[Value]) -> Result<(), kube::Error> {
    for object in objects.iter().rev() {
        let (api, name) = api_of(client, object);
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => {}
            // Gone, or already on its way (a terminating namespace answers 409).
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// Adds (`present`) or removes `finalizer` on the object `api` serves, guarded by
/// `resource_version`; `Ok(true)` when it patched.
pub async fn set_finalizer<K>(
    api: &Api<K>,
    meta: &kube::api::ObjectMeta,
    finalizer: &str,
    present: bool,
) -> Result<bool, kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let current = meta.finalizers.clone().unwrap_or_default();
    let has = current.iter().any(|f| f == finalizer);
    if has == present {
        return Ok(false);
    }
    let mut wanted: Vec<String> = current.into_iter().filter(|f| f != finalizer).collect();
    if present {
        wanted.push(finalizer.to_owned());
    }
    patch_metadata(api, meta, json!({"finalizers": wanted})).await?;
    Ok(true)
}

/// Merge-patches `metadata` (the fields of `fields`, a JSON object) of the object `meta`
/// describes, guarded by its `resourceVersion`: a conflict rather than a write over a change
/// the caller has not seen.
pub async fn patch_metadata<K>(
    api: &Api<K>,
    meta: &kube::api::ObjectMeta,
    mut fields: Value,
) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    if let Some(fields) = fields.as_object_mut() {
        fields.insert("resourceVersion".into(), json!(meta.resource_version));
    }
    let name = meta.name.clone().unwrap_or_default();
    api.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(&json!({ "metadata": fields })),
    )
    .await?;
    Ok(())
}

/// Whether a Deployment (as the server returned it) has rolled out its current generation.
pub fn deployment_up_to_date(deployment: &DynamicObject) -> bool {
    let value = &deployment.data;
    let generation = deployment.metadata.generation.unwrap_or_default();
    let replicas = value
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let status = |field: &str| {
        value
            .pointer(&format!("/status/{field}"))
            .and_then(Value::as_i64)
            .unwrap_or_default()
    };
    status("observedGeneration") >= generation
        && status("updatedReplicas") >= replicas
        && status("availableReplicas") >= replicas
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_new_entries_are_recorded_ahead_after_the_earlier_ones() {
        let entry = |name: &str| {
            related(&json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "namespace": "ns"}}))
        };
        let before = vec![entry("a"), entry("gone")];
        assert_eq!(record_ahead(&before, &[entry("a")]), None);
        assert_eq!(
            record_ahead(&before, &[entry("a"), entry("b")]),
            Some(vec![entry("a"), entry("gone"), entry("b")])
        );
        assert_eq!(record_ahead(&[], &[entry("a")]), Some(vec![entry("a")]));
    }

    #[test]
    fn related_entries_name_the_plural_resource() {
        let entry = related(&json!({"apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding", "metadata": {"name": "b"}}));
        assert_eq!(entry["resource"], "clusterrolebindings");
        assert_eq!(entry["group"], "rbac.authorization.k8s.io");
        let entry = related(&json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "n"}}));
        assert_eq!(entry["group"], "");
        assert_eq!(entry["resource"], "namespaces");
        assert_eq!(
            plural("CustomResourceDefinition"),
            "customresourcedefinitions"
        );
    }
}
