//! Per-cluster overrides of a ManifestWorkReplicaSet's template — an ocm-rs extension.
//!
//! Upstream OCM sends the same template to every selected cluster. Users who need "3 replicas
//! on big clusters, 1 elsewhere" otherwise keep one ManifestWorkReplicaSet per variant. Here a
//! ManifestWorkReplicaSet may carry a list of overrides in the annotation
//! [`OVERRIDES_ANNOTATION`] (JSON or YAML-as-JSON). The upstream fields are untouched, so the
//! object still round-trips through upstream tools; a hub without this extension ignores it.
//!
//! ```yaml
//! metadata:
//!   annotations:
//!     work.ocm-rs.io/overrides: |
//!       [{"name": "big", "priority": 10,
//!         "clusterSelector": {"matchLabels": {"size": "big"}},
//!         "patches": [{"kind": "Deployment", "name": "web", "namespace": "demo",
//!                      "patch": [{"op": "replace", "path": "/spec/replicas", "value": 3}]}]}]
//! ```
//!
//! For each cluster, the overrides whose `clusterSelector` (over the ManagedCluster's labels)
//! and `claimSelector` (over its `status.clusterClaims`) both match are applied in ascending
//! `priority` (then name) order, so the highest priority has the last word. Each patch is an
//! RFC 6902 JSON patch applied to every manifest of the template that matches its `kind`,
//! `name`, optional `namespace` and optional `apiVersion`. A patch that names no manifest or
//! fails to apply is an error for that cluster: its work is not changed and the
//! ManifestWorkReplicaSet's `ManifestworkApplied` condition names the problem.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use ocm_api::work::v1::ManifestWorkSpec;
use ocm_placement::scheduler::Selector;
use serde::{Deserialize, Serialize};

/// Annotation on a ManifestWorkReplicaSet holding its overrides (a JSON list).
pub const OVERRIDES_ANNOTATION: &str = "work.ocm-rs.io/overrides";

/// One override: where it applies and what it changes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Override {
    /// Name, for messages and ordering.
    #[serde(default)]
    pub name: String,
    /// Lower first; the highest priority is applied last and wins.
    #[serde(default)]
    pub priority: i32,
    /// Over the cluster's labels; absent matches every cluster.
    #[serde(default)]
    pub cluster_selector: Option<LabelSelector>,
    /// Over the cluster's claims (name → value); absent matches every cluster.
    #[serde(default)]
    pub claim_selector: Option<Vec<LabelSelectorRequirement>>,
    /// Patches to manifests of the template.
    #[serde(default)]
    pub patches: Vec<ManifestPatch>,
}

/// A JSON patch for the manifests with the given kind and name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestPatch {
    /// `apiVersion` of the manifest; absent matches any.
    #[serde(default)]
    pub api_version: Option<String>,
    /// `kind` of the manifest.
    pub kind: String,
    /// `metadata.name` of the manifest.
    pub name: String,
    /// `metadata.namespace` of the manifest; absent matches any.
    #[serde(default)]
    pub namespace: Option<String>,
    /// RFC 6902 operations.
    pub patch: json_patch::Patch,
}

/// What a cluster offers to selectors.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterFacts {
    /// ManagedCluster labels.
    pub labels: BTreeMap<String, String>,
    /// `status.clusterClaims`, name → value.
    pub claims: BTreeMap<String, String>,
}

/// Overrides that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OverrideError {
    /// The annotation is not a JSON list of overrides.
    #[error("annotation {OVERRIDES_ANNOTATION} is not a valid list of overrides: {0}")]
    Parse(String),
    /// A selector is invalid.
    #[error("override {name:?}: invalid selector: {message}")]
    Selector {
        /// Override name.
        name: String,
        /// Why.
        message: String,
    },
    /// A patch matches no manifest of the template.
    #[error("override {name:?}: no manifest of kind {kind} named {manifest}")]
    NoManifest {
        /// Override name.
        name: String,
        /// Kind of the wanted manifest.
        kind: String,
        /// Name of the wanted manifest.
        manifest: String,
    },
    /// A patch does not apply to its manifest.
    #[error("override {name:?}: patch of {kind} {manifest} failed: {message}")]
    Patch {
        /// Override name.
        name: String,
        /// Kind of the manifest.
        kind: String,
        /// Name of the manifest.
        manifest: String,
        /// Why.
        message: String,
    },
}

/// Reads the overrides of an object's annotations; none when the annotation is absent.
pub fn parse_overrides(
    annotations: Option<&BTreeMap<String, String>>,
) -> Result<Vec<Override>, OverrideError> {
    let Some(text) = annotations.and_then(|a| a.get(OVERRIDES_ANNOTATION)) else {
        return Ok(Vec::new());
    };
    let mut overrides: Vec<Override> =
        serde_json::from_str(text).map_err(|e| OverrideError::Parse(e.to_string()))?;
    overrides.sort_by(|a, b| a.priority.cmp(&b.priority).then(a.name.cmp(&b.name)));
    for o in &overrides {
        selectors(o)?;
    }
    Ok(overrides)
}

fn selectors(o: &Override) -> Result<(Selector, Selector), OverrideError> {
    let err = |message: String| OverrideError::Selector {
        name: o.name.clone(),
        message,
    };
    let labels = Selector::from_label_selector(o.cluster_selector.as_ref(), Selector::everything())
        .map_err(err)?;
    let claims =
        Selector::from_expressions(o.claim_selector.as_deref().unwrap_or_default()).map_err(err)?;
    Ok((labels, claims))
}

/// The template for one cluster: `template` with every matching override applied (in the
/// order [`parse_overrides`] returns them).
pub fn apply_overrides(
    template: &ManifestWorkSpec,
    overrides: &[Override],
    cluster: &ClusterFacts,
) -> Result<ManifestWorkSpec, OverrideError> {
    let mut spec = template.clone();
    for o in overrides {
        let (labels, claims) = selectors(o)?;
        if !labels.matches_map(&cluster.labels) || !claims.matches_map(&cluster.claims) {
            continue;
        }
        for patch in &o.patches {
            let mut hit = false;
            for manifest in &mut spec.workload.manifests {
                let object = &mut manifest.0;
                if !matches_manifest(object, patch) {
                    continue;
                }
                hit = true;
                json_patch::patch(object, &patch.patch).map_err(|e| OverrideError::Patch {
                    name: o.name.clone(),
                    kind: patch.kind.clone(),
                    manifest: patch.name.clone(),
                    message: e.to_string(),
                })?;
            }
            if !hit {
                return Err(OverrideError::NoManifest {
                    name: o.name.clone(),
                    kind: patch.kind.clone(),
                    manifest: patch.name.clone(),
                });
            }
        }
    }
    Ok(spec)
}

fn matches_manifest(object: &serde_json::Value, patch: &ManifestPatch) -> bool {
    let field = |pointer: &str| object.pointer(pointer).and_then(|v| v.as_str());
    field("/kind") == Some(patch.kind.as_str())
        && field("/metadata/name") == Some(patch.name.as_str())
        && patch
            .namespace
            .as_deref()
            .is_none_or(|ns| field("/metadata/namespace").unwrap_or("") == ns)
        && patch
            .api_version
            .as_deref()
            .is_none_or(|v| field("/apiVersion") == Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template() -> ManifestWorkSpec {
        serde_json::from_value(json!({"workload": {"manifests": [
            {"apiVersion": "apps/v1", "kind": "Deployment",
             "metadata": {"name": "web", "namespace": "demo"}, "spec": {"replicas": 1}},
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "web", "namespace": "demo"}, "data": {"a": "1"}}
        ]}}))
        .unwrap()
    }

    fn annotations(value: serde_json::Value) -> BTreeMap<String, String> {
        BTreeMap::from([(OVERRIDES_ANNOTATION.to_owned(), value.to_string())])
    }

    fn facts(labels: &[(&str, &str)], claims: &[(&str, &str)]) -> ClusterFacts {
        let map = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        ClusterFacts {
            labels: map(labels),
            claims: map(claims),
        }
    }

    fn replicas(spec: &ManifestWorkSpec) -> i64 {
        spec.workload.manifests[0].0["spec"]["replicas"]
            .as_i64()
            .unwrap()
    }

    #[test]
    fn matching_clusters_get_the_patch_and_others_the_template() {
        let overrides = parse_overrides(Some(&annotations(json!([{
            "name": "big",
            "clusterSelector": {"matchLabels": {"size": "big"}},
            "patches": [{"kind": "Deployment", "name": "web",
                         "patch": [{"op": "replace", "path": "/spec/replicas", "value": 3}]}]
        }]))))
        .unwrap();
        let big = apply_overrides(&template(), &overrides, &facts(&[("size", "big")], &[]));
        assert_eq!(replicas(&big.unwrap()), 3);
        let small = apply_overrides(&template(), &overrides, &facts(&[("size", "s")], &[]));
        assert_eq!(small.unwrap(), template());
    }

    #[test]
    fn higher_priority_is_applied_last() {
        let overrides = parse_overrides(Some(&annotations(json!([
            {"name": "b", "priority": 5, "patches": [{"kind": "Deployment", "name": "web",
                "patch": [{"op": "replace", "path": "/spec/replicas", "value": 5}]}]},
            {"name": "a", "priority": 1, "patches": [{"kind": "Deployment", "name": "web",
                "patch": [{"op": "replace", "path": "/spec/replicas", "value": 2}]}]}
        ]))))
        .unwrap();
        let spec = apply_overrides(&template(), &overrides, &ClusterFacts::default()).unwrap();
        assert_eq!(replicas(&spec), 5);
    }

    #[test]
    fn claim_selector_uses_cluster_claims() {
        let overrides = parse_overrides(Some(&annotations(json!([{
            "name": "eu",
            "claimSelector": [{"key": "region.open-cluster-management.io",
                               "operator": "In", "values": ["eu-west-1"]}],
            "patches": [{"kind": "ConfigMap", "name": "web", "namespace": "demo",
                         "patch": [{"op": "add", "path": "/data/region", "value": "eu"}]}]
        }]))))
        .unwrap();
        let eu = facts(&[], &[("region.open-cluster-management.io", "eu-west-1")]);
        let spec = apply_overrides(&template(), &overrides, &eu).unwrap();
        assert_eq!(spec.workload.manifests[1].0["data"]["region"], "eu");
        let us = facts(&[], &[("region.open-cluster-management.io", "us-east-1")]);
        assert_eq!(
            apply_overrides(&template(), &overrides, &us).unwrap(),
            template()
        );
    }

    #[test]
    fn bad_overrides_name_the_problem() {
        let err = parse_overrides(Some(&annotations(json!({"not": "a list"})))).unwrap_err();
        assert!(matches!(err, OverrideError::Parse(_)));
        let err = parse_overrides(Some(&annotations(json!([{
            "name": "x", "clusterSelector": {"matchExpressions": [
                {"key": "a", "operator": "Sometimes", "values": []}]}
        }]))))
        .unwrap_err();
        assert!(err.to_string().contains("Sometimes"), "{err}");
        let missing = parse_overrides(Some(&annotations(json!([{
            "name": "m", "patches": [{"kind": "Service", "name": "web",
                "patch": [{"op": "replace", "path": "/spec", "value": {}}]}]
        }]))))
        .unwrap();
        let err = apply_overrides(&template(), &missing, &ClusterFacts::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "override \"m\": no manifest of kind Service named web"
        );
        let failing = parse_overrides(Some(&annotations(json!([{
            "name": "f", "patches": [{"kind": "Deployment", "name": "web",
                "patch": [{"op": "remove", "path": "/spec/nothing"}]}]
        }]))))
        .unwrap();
        let err = apply_overrides(&template(), &failing, &ClusterFacts::default()).unwrap_err();
        assert!(matches!(err, OverrideError::Patch { .. }), "{err}");
        assert!(parse_overrides(None).unwrap().is_empty());
    }
}
