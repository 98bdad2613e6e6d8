//! The ManifestWorks that carry an addon's manifests to a cluster — a pure plan.
//!
//! As upstream: works `addon-<addon>-deploy-<i>` in the cluster namespace (`i` from 0, a new
//! work whenever the next manifest would take a work past the 500 KiB manifest limit), labelled
//! `open-cluster-management.io/addon-name`, owned by the ManagedClusterAddOn (so they go with
//! it), annotated with the addon's config spec hashes. Manifests annotated
//! `addon.open-cluster-management.io/deletion-orphan` are kept on the cluster when the work goes
//! (`SelectivelyOrphan`). Jobs and Pods annotated `addon.open-cluster-management.io/addon-pre-delete`
//! (or with upstream's deprecated label) are not deployed with the others: they form the
//! pre-delete hook work `addon-<addon>-pre-delete`, applied when the addon is being deleted.
//! `manifestConfigs` (update strategies, feedback rules, health probes) go into the work that
//! holds the object they name.

use ocm_api::addon::names::annotations::{
    ADDON_PRE_DELETE_HOOK, CONFIG_SPEC_HASH, DELETION_ORPHAN,
};
use ocm_api::addon::names::labels::{ADDON_NAME, DEPRECATED_ADDON_PRE_DELETE_HOOK};
use ocm_api::work::names::MANIFEST_SIZE_LIMIT;
use serde_json::{Value, json};

use crate::agent::AddonError;

/// What a plan needs.
#[derive(Clone, Debug)]
pub struct WorkInput<'a> {
    /// The addon's name.
    pub addon: &'a str,
    /// The cluster (its namespace on the hub holds the works).
    pub cluster: &'a str,
    /// The ManagedClusterAddOn's uid (owner of the works).
    pub owner_uid: &'a str,
    /// The addon's manifests for this cluster.
    pub manifests: &'a [Value],
    /// `manifestConfigs` entries to place with the objects they name.
    pub manifest_configs: &'a [Value],
    /// Value of the `open-cluster-management.io/config-spec-hash` annotation, if the addon has
    /// configs.
    pub config_hash: Option<String>,
    /// Manifest bytes per work (upstream: 500 KiB).
    pub limit: usize,
}

impl WorkInput<'_> {
    /// The default manifest limit per work.
    pub const DEFAULT_LIMIT: usize = MANIFEST_SIZE_LIMIT;
}

/// The works for one addon on one cluster.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkPlan {
    /// `addon-<addon>-deploy-<i>`, in order.
    pub deploy: Vec<Value>,
    /// `addon-<addon>-pre-delete`, when the addon has hook objects.
    pub pre_delete: Option<Value>,
}

/// Name of the `i`-th deploy work of `addon`.
pub fn deploy_work_name(addon: &str, i: usize) -> String {
    format!("addon-{addon}-deploy-{i}")
}

/// Name of the pre-delete hook work of `addon`.
pub fn pre_delete_work_name(addon: &str) -> String {
    format!("addon-{addon}-pre-delete")
}

/// A work's resource identifier for `manifest`: group, plural resource, namespace, name.
pub fn identifier(manifest: &Value) -> Value {
    let text = |p: &str| manifest.pointer(p).and_then(Value::as_str).unwrap_or("");
    let api_version = text("/apiVersion");
    let group = api_version.split_once('/').map_or("", |(g, _)| g);
    json!({
        "group": group,
        "resource": plural(text("/kind")),
        "namespace": text("/metadata/namespace"),
        "name": text("/metadata/name"),
    })
}

/// The plural resource name of a kind (kube's English rules for the kinds addons carry).
pub fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if lower.ends_with("s")
        || lower.ends_with("x")
        || lower.ends_with("ch")
        || lower.ends_with("sh")
    {
        format!("{lower}es")
    } else if let Some(stem) = lower.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        format!("{stem}ies")
    } else {
        format!("{lower}s")
    }
}

fn annotated(manifest: &Value, key: &str) -> bool {
    manifest
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .is_some()
}

fn is_pre_delete_hook(manifest: &Value) -> bool {
    let kind = manifest.get("kind").and_then(Value::as_str).unwrap_or("");
    let labelled = manifest
        .pointer("/metadata/labels")
        .and_then(|l| l.get(DEPRECATED_ADDON_PRE_DELETE_HOOK))
        .is_some();
    matches!(kind, "Job" | "Pod") && (annotated(manifest, ADDON_PRE_DELETE_HOOK) || labelled)
}

fn same_object(config: &Value, id: &Value) -> bool {
    let field = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_owned();
    let rid = config.get("resourceIdentifier").unwrap_or(&Value::Null);
    ["group", "resource", "namespace", "name"]
        .iter()
        .all(|f| field(rid, f) == field(id, f))
}

fn work(
    input: &WorkInput<'_>,
    name: String,
    manifests: Vec<Value>,
    extra_configs: Vec<Value>,
) -> Value {
    let ids: Vec<Value> = manifests.iter().map(identifier).collect();
    let mut configs: Vec<Value> = input
        .manifest_configs
        .iter()
        .filter(|c| ids.iter().any(|id| same_object(c, id)))
        .cloned()
        .collect();
    configs.extend(extra_configs);
    let orphans: Vec<Value> = manifests
        .iter()
        .zip(&ids)
        .filter(|(m, _)| annotated(m, DELETION_ORPHAN))
        .map(|(_, id)| id.clone())
        .collect();
    let mut spec = json!({"workload": {"manifests": manifests}});
    if !configs.is_empty() {
        spec["manifestConfigs"] = json!(configs);
    }
    if !orphans.is_empty() {
        spec["deleteOption"] = json!({
            "propagationPolicy": "SelectivelyOrphan",
            "selectivelyOrphans": {"orphaningRules": orphans},
        });
    }
    let mut metadata = json!({
        "name": name,
        "namespace": input.cluster,
        "labels": {ADDON_NAME: input.addon},
        "ownerReferences": [{
            "apiVersion": "addon.open-cluster-management.io/v1alpha1",
            "kind": "ManagedClusterAddOn",
            "name": input.addon,
            "uid": input.owner_uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }],
    });
    if let Some(hash) = &input.config_hash {
        metadata["annotations"] = json!({CONFIG_SPEC_HASH: hash});
    }
    json!({
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": metadata,
        "spec": spec,
    })
}

/// Plans the works for `input`. Fails on a manifest without `apiVersion`, `kind` or
/// `metadata.name`, or one larger than the limit on its own.
pub fn plan(input: &WorkInput<'_>) -> Result<WorkPlan, AddonError> {
    let mut hooks = Vec::new();
    let mut chunks: Vec<(usize, Vec<Value>)> = Vec::new();
    for (i, manifest) in input.manifests.iter().enumerate() {
        let text = |p: &str| manifest.pointer(p).and_then(Value::as_str).unwrap_or("");
        if text("/apiVersion").is_empty()
            || text("/kind").is_empty()
            || text("/metadata/name").is_empty()
        {
            return Err(AddonError::new(format!(
                "manifest {i} of addon {} has no apiVersion, kind or metadata.name",
                input.addon
            )));
        }
        if is_pre_delete_hook(manifest) {
            hooks.push(manifest.clone());
            continue;
        }
        let size = manifest.to_string().len();
        if size > input.limit {
            return Err(AddonError::new(format!(
                "manifest {} {} of addon {} is {size} bytes, more than a work holds ({} bytes)",
                text("/kind"),
                text("/metadata/name"),
                input.addon,
                input.limit
            )));
        }
        match chunks.last_mut() {
            Some((used, items)) if *used + size <= input.limit => {
                *used += size;
                items.push(manifest.clone());
            }
            _ => chunks.push((size, vec![manifest.clone()])),
        }
    }
    let deploy = chunks
        .into_iter()
        .enumerate()
        .map(|(i, (_, manifests))| {
            work(
                input,
                deploy_work_name(input.addon, i),
                manifests,
                Vec::new(),
            )
        })
        .collect();
    let pre_delete = (!hooks.is_empty()).then(|| {
        let probes: Vec<Value> = hooks
            .iter()
            .map(|h| {
                json!({
                    "resourceIdentifier": identifier(h),
                    "feedbackRules": [{"type": "WellKnownStatus"}],
                })
            })
            .collect();
        work(input, pre_delete_work_name(input.addon), hooks, probes)
    });
    Ok(WorkPlan { deploy, pre_delete })
}

/// Whether every Job and Pod of a pre-delete hook work (with its status) has finished:
/// a Job reports `JobComplete` True or `JobSucceeded` ≥ 1, a Pod `PodPhase` Succeeded.
pub fn hook_completed(work: &Value) -> bool {
    let manifests = work
        .pointer("/spec/workload/manifests")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let statuses = work
        .pointer("/status/resourceStatus/manifests")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let field = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_owned();
    !manifests.is_empty()
        && manifests.iter().all(|manifest| {
            let id = identifier(manifest);
            let Some(values) = statuses
                .iter()
                .find(|s| {
                    let meta = s.get("resourceMeta").unwrap_or(&Value::Null);
                    ["group", "resource", "namespace", "name"]
                        .iter()
                        .all(|f| field(meta, f) == field(&id, f))
                })
                .and_then(|s| s.pointer("/statusFeedback/values"))
                .and_then(Value::as_array)
            else {
                return false;
            };
            let value = |name: &str| {
                values
                    .iter()
                    .find(|v| v.get("name").and_then(Value::as_str) == Some(name))
                    .and_then(|v| v.get("fieldValue"))
            };
            let text = |name: &str| {
                value(name)
                    .and_then(|v| v.get("string"))
                    .and_then(Value::as_str)
            };
            let number = |name: &str| {
                value(name)
                    .and_then(|v| v.get("integer"))
                    .and_then(Value::as_i64)
            };
            match manifest.get("kind").and_then(Value::as_str) {
                Some("Job") => {
                    text("JobComplete") == Some("True") || number("JobSucceeded").unwrap_or(0) >= 1
                }
                Some("Pod") => text("PodPhase") == Some("Succeeded"),
                _ => true,
            }
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn cm(name: &str, bytes: usize) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": "addon-ns"},
               "data": {"x": "a".repeat(bytes)}})
    }

    fn input<'a>(manifests: &'a [Value], configs: &'a [Value], limit: usize) -> WorkInput<'a> {
        WorkInput {
            addon: "hello",
            cluster: "c1",
            owner_uid: "uid-1",
            manifests,
            manifest_configs: configs,
            config_hash: Some("{\"a\":\"b\"}".into()),
            limit,
        }
    }

    #[test]
    fn works_are_named_labelled_owned_and_split_at_the_limit() {
        let manifests = vec![cm("a", 300), cm("b", 300), cm("c", 300)];
        let plan = plan(&input(&manifests, &[], 1000)).unwrap();
        assert_eq!(plan.deploy.len(), 2);
        assert_eq!(plan.deploy[0]["metadata"]["name"], "addon-hello-deploy-0");
        assert_eq!(plan.deploy[1]["metadata"]["name"], "addon-hello-deploy-1");
        assert_eq!(
            plan.deploy[0]["spec"]["workload"]["manifests"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        assert_eq!(plan.deploy[0]["metadata"]["namespace"], "c1");
        assert_eq!(plan.deploy[0]["metadata"]["labels"][ADDON_NAME], "hello");
        assert_eq!(
            plan.deploy[0]["metadata"]["ownerReferences"][0]["uid"],
            "uid-1"
        );
        assert_eq!(
            plan.deploy[0]["metadata"]["annotations"][CONFIG_SPEC_HASH],
            "{\"a\":\"b\"}"
        );
        assert!(plan.pre_delete.is_none());
    }

    #[test]
    fn orphans_hooks_and_configs_go_where_they_belong() {
        let mut kept = cm("kept", 10);
        kept["metadata"]["annotations"] = json!({DELETION_ORPHAN: ""});
        let job = json!({"apiVersion": "batch/v1", "kind": "Job",
                         "metadata": {"name": "cleanup", "namespace": "addon-ns",
                                      "annotations": {ADDON_PRE_DELETE_HOOK: ""}}});
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                                "metadata": {"name": "agent", "namespace": "addon-ns"}});
        let configs = vec![json!({
            "resourceIdentifier": {"group": "apps", "resource": "deployments",
                                   "namespace": "addon-ns", "name": "agent"},
            "feedbackRules": [{"type": "WellKnownStatus"}]})];
        let manifests = vec![kept, job, deployment];
        let plan = plan(&input(&manifests, &configs, 500_000)).unwrap();
        let deploy = &plan.deploy[0];
        assert_eq!(
            deploy["spec"]["workload"]["manifests"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        assert_eq!(
            deploy["spec"]["deleteOption"]["propagationPolicy"],
            "SelectivelyOrphan"
        );
        assert_eq!(
            deploy["spec"]["deleteOption"]["selectivelyOrphans"]["orphaningRules"][0]["name"],
            "kept"
        );
        assert_eq!(
            deploy["spec"]["manifestConfigs"][0]["resourceIdentifier"]["name"],
            "agent"
        );
        let hook = plan.pre_delete.unwrap();
        assert_eq!(hook["metadata"]["name"], "addon-hello-pre-delete");
        assert_eq!(
            hook["spec"]["manifestConfigs"][0]["resourceIdentifier"]["resource"],
            "jobs"
        );
    }

    #[test]
    fn malformed_or_oversize_manifests_are_refused() {
        let bad = vec![json!({"kind": "ConfigMap"})];
        assert!(plan(&input(&bad, &[], 1000)).is_err());
        let big = vec![cm("big", 2000)];
        let err = plan(&input(&big, &[], 1000)).unwrap_err();
        assert!(err.0.contains("more than a work holds"), "{err}");
    }

    #[test]
    fn hooks_complete_when_their_jobs_succeed() {
        let job = json!({"apiVersion": "batch/v1", "kind": "Job",
                         "metadata": {"name": "cleanup", "namespace": "ns"}});
        let mut work = json!({"spec": {"workload": {"manifests": [job]}}});
        assert!(!hook_completed(&work));
        work["status"] = json!({"resourceStatus": {"manifests": [{
            "resourceMeta": {"group": "batch", "resource": "jobs", "namespace": "ns", "name": "cleanup"},
            "statusFeedback": {"values": [{"name": "JobSucceeded",
                                           "fieldValue": {"type": "Integer", "integer": 0}}]}}]}});
        assert!(!hook_completed(&work));
        work["status"]["resourceStatus"]["manifests"][0]["statusFeedback"]["values"][0]["fieldValue"]
            ["integer"] = json!(1);
        assert!(hook_completed(&work));
    }

    #[test]
    fn plurals_follow_kubes_rules() {
        assert_eq!(plural("Deployment"), "deployments");
        assert_eq!(plural("NetworkPolicy"), "networkpolicies");
        assert_eq!(plural("Ingress"), "ingresses");
        assert_eq!(plural("Gateway"), "gateways");
    }
}
