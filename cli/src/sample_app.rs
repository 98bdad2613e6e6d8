//! The sample application `ocm demo` places on every cluster: a ManagedClusterSetBinding of
//! the `default` set into namespace `demo`, a Placement that selects every cluster of it, and a
//! ManifestWorkReplicaSet with a Namespace, a ConfigMap and a Deployment whose ready replicas
//! come back as status feedback.

use std::collections::BTreeMap;

use anyhow::Context;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use ocm_api::work::v1::ManifestWork;
use ocm_runtime::backoff::WatchBackoffExt;
use serde_json::{Value, json};

/// Namespace on the hub holding the placement and the replica set.
pub const NAMESPACE: &str = "demo";
/// Name of the placement and of the ManifestWorkReplicaSet.
pub const NAME: &str = "hello";
/// Label selector of the sample's ManifestWorks.
pub const WORK_SELECTOR: &str = "work.open-cluster-management.io/manifestworkreplicaset=demo.hello";

const FIELD_MANAGER: &str = "ocm-demo";

/// The objects of the sample, in creation order.
pub fn objects() -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"name": "default", "namespace": NAMESPACE},
            "spec": {"clusterSet": "default"}
        }),
        json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "spec": {"clusterSets": ["default"]}
        }),
        json!({
            "apiVersion": "work.open-cluster-management.io/v1alpha1",
            "kind": "ManifestWorkReplicaSet",
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            "spec": {
                "placementRefs": [{"name": NAME, "rolloutStrategy": {"type": "All"}}],
                "cascadeDeletionPolicy": "Background",
                "manifestWorkTemplate": {
                    "workload": {"manifests": [
                        {"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": "hello"}},
                        {"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "hello", "namespace": "hello"},
                         "data": {"greeting": "Hello from the hub"}},
                        {"apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": {"name": "hello", "namespace": "hello"},
                         "spec": {
                            "replicas": 2,
                            "selector": {"matchLabels": {"app": "hello"}},
                            "template": {
                                "metadata": {"labels": {"app": "hello"}},
                                "spec": {"containers": [{"name": "hello",
                                    "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                                    "args": ["netexec"]}]}
                            }
                         }}
                    ]},
                    "manifestConfigs": [{
                        "resourceIdentifier": {"group": "apps", "resource": "deployments",
                                               "name": "hello", "namespace": "hello"},
                        "feedbackRules": [{"type": "WellKnownStatus"}]
                    }]
                }
            }
        }),
    ]
}

/// Applies the sample's objects on the hub (server-side apply; idempotent).
pub async fn place(admin: &kube::Client) -> anyhow::Result<()> {
    let params = PatchParams::apply(FIELD_MANAGER).force();
    for object in objects() {
        let kind = object["kind"].as_str().unwrap_or_default().to_owned();
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        match kind.as_str() {
            "Namespace" => Api::<Namespace>::all(admin.clone())
                .patch(&name, &params, &Patch::Apply(&object))
                .await
                .map(|_| ()),
            _ => {
                let api_version = object["apiVersion"].as_str().unwrap_or_default();
                let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
                let gvk = kube::api::GroupVersionKind::gvk(group, version, &kind);
                let (resource, _) = kube::discovery::pinned_kind(admin, &gvk)
                    .await
                    .with_context(|| format!("finding the API of {kind}"))?;
                Api::<kube::api::DynamicObject>::namespaced_with(
                    admin.clone(),
                    NAMESPACE,
                    &resource,
                )
                .patch(&name, &params, &Patch::Apply(&object))
                .await
                .map(|_| ())
            }
        }
        .with_context(|| format!("applying {kind} {name}"))?;
    }
    Ok(())
}

/// One row of the sample's status table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Cluster (namespace of the work).
    pub cluster: String,
    /// Work name.
    pub work: String,
    /// Status of the work's `Applied` condition.
    pub applied: String,
    /// Status of the work's `Available` condition.
    pub available: String,
    /// `ready/replicas` from the Deployment's feedback, `-` before it arrives.
    pub ready: String,
}

/// The table row of one of the sample's works.
pub fn row(work: &ManifestWork) -> Row {
    let status = work.status.clone().unwrap_or_default();
    let condition = |t: &str| {
        status
            .conditions
            .iter()
            .find(|c| c.type_ == t)
            .map(|c| c.status.clone())
            .unwrap_or_else(|| "-".into())
    };
    let feedback: BTreeMap<String, i64> = status
        .resource_status
        .iter()
        .flat_map(|r| r.manifests.iter())
        .filter(|m| m.resource_meta.kind == "Deployment")
        .flat_map(|m| m.status_feedback.iter().flat_map(|f| f.values.iter()))
        .filter_map(|v| Some((v.name.clone(), v.field_value.integer?)))
        .collect();
    let ready = match (feedback.get("ReadyReplicas"), feedback.get("Replicas")) {
        (Some(r), Some(n)) => format!("{r}/{n}"),
        _ => "-".into(),
    };
    Row {
        cluster: work.metadata.namespace.clone().unwrap_or_default(),
        work: work.metadata.name.clone().unwrap_or_default(),
        applied: condition("Applied"),
        available: condition("Available"),
        ready,
    }
}

/// Whether a row shows the sample fully running.
pub fn is_running(row: &Row) -> bool {
    row.applied == "True"
        && row.available == "True"
        && row
            .ready
            .split_once('/')
            .is_some_and(|(r, n)| r == n && r != "0")
}

/// Renders rows as a table.
pub fn render(rows: &[Row]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.cluster.clone(),
                r.work.clone(),
                r.applied.clone(),
                r.available.clone(),
                r.ready.clone(),
            ]
        })
        .collect();
    ocm_runtime::text_table::render(
        &["CLUSTER", "WORK", "APPLIED", "AVAILABLE", "READY"],
        &cells,
    )
}

/// Waits until the sample runs on every cluster in `clusters`; returns the rows.
pub async fn wait_running(admin: &kube::Client, clusters: &[String]) -> anyhow::Result<Vec<Row>> {
    if clusters.is_empty() {
        // Running on every one of no clusters: nothing to wait for (no work will ever come).
        return Ok(Vec::new());
    }
    let api: Api<ManifestWork> = Api::all(admin.clone());
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut stream = watcher(api, watcher::Config::default().labels(WORK_SELECTOR))
        .backoff_on_errors()
        .applied_objects()
        .boxed();
    while let Some(event) = stream.next().await {
        let Ok(work) = event else { continue };
        let r = row(&work);
        rows.insert(r.cluster.clone(), r);
        if clusters.iter().all(|c| rows.get(c).is_some_and(is_running)) {
            return Ok(rows.into_values().collect());
        }
    }
    anyhow::bail!("lost the watch on the hub")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_reads_conditions_and_feedback() {
        let work: ManifestWork = serde_json::from_value(json!({
            "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
            "metadata": {"name": "hello-abcde", "namespace": "cluster1"},
            "spec": {"workload": {"manifests": []}},
            "status": {
                "conditions": [
                    {"type": "Applied", "status": "True", "reason": "r", "message": "",
                     "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    {"type": "Available", "status": "True", "reason": "r", "message": "",
                     "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "resourceStatus": {"manifests": [{
                    "resourceMeta": {"ordinal": 2, "group": "apps", "version": "v1",
                        "kind": "Deployment", "resource": "deployments", "name": "hello",
                        "namespace": "hello"},
                    "statusFeedback": {"values": [
                        {"name": "ReadyReplicas", "fieldValue": {"type": "Integer", "integer": 2}},
                        {"name": "Replicas", "fieldValue": {"type": "Integer", "integer": 2}}]},
                    "conditions": []}]}
            }
        }))
        .unwrap();
        let r = row(&work);
        assert_eq!(r.ready, "2/2");
        assert!(is_running(&r));
        let text = render(&[r]);
        assert!(text.contains("cluster1"), "{text}");
        assert!(text.starts_with("CLUSTER"), "{text}");
    }

    #[test]
    fn without_feedback_the_sample_is_not_running() {
        let work: ManifestWork = serde_json::from_value(json!({
            "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
            "metadata": {"name": "hello-abcde", "namespace": "cluster1"},
            "spec": {"workload": {"manifests": []}}
        }))
        .unwrap();
        let r = row(&work);
        assert_eq!(r.applied, "-");
        assert!(!is_running(&r));
    }
}
