//! The placement debugger (upstream's `PlacementDebugServer`): how the scheduler would treat a
//! Placement right now, served over HTTPS at `/debug/placements/` ([`server`]).
//!
//! `GET /debug/placements/<namespace>/<name>` debugs a stored Placement, `POST
//! /debug/placements/` one given as the JSON body (at most 1 MiB; it need not exist). The
//! answer is upstream's JSON:
//!
//! ```json
//! {"placement": {...},
//!  "filteredPipelineResults": [{"name": "Predicate", "filteredClusters": ["c1", "c2"]},
//!                              {"name": "Predicate,TaintToleration", "filteredClusters": ["c1"]}],
//!  "prioritizeResults": [{"name": "Balance", "weight": 1, "scores": {"c1": 100}}, ...],
//!  "aggregatedScores": [{"clusterName": "c1", "score": 200}],
//!  "error": "..."}
//! ```
//!
//! `placement` is the Placement with only its name, namespace, labels and annotations as
//! metadata and an empty status; each pipeline entry lists the clusters left after the filters
//! named so far (the candidates being the members of the placement's eligible sets without a
//! deletion timestamp); `prioritizeResults` has one entry per prioritizer that ran, with the
//! score (before weighting) of every cluster that passed the filters; `aggregatedScores` the
//! weighted totals, best first (name breaks ties). A request that cannot be answered (a
//! malformed path or body, an unknown placement, a caller who may not create placements in its
//! namespace) gets `{"error": "..."}` with status 200, as upstream.
//!
//! Deviation: cluster lists are sorted by name (upstream's follow its cache).

pub mod server;

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use ocm_api::cluster::v1beta1::{Placement, PlacementStatus};
use serde::Serialize;

use crate::scheduler::{FilterReason, Snapshot, schedule};

/// Path prefix of the debugger.
pub const DEBUG_PATH: &str = "/debug/placements/";

/// Largest POST body accepted.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Name of the predicate filter in the pipeline.
const PREDICATE: &str = "Predicate";
/// Name of the taint filter in the pipeline.
const TAINT_TOLERATION: &str = "TaintToleration";

/// The debugger's answer.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DebugResult {
    /// The placement debugged (trimmed metadata, empty status).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// The clusters left after each step of the filter pipeline.
    #[serde(
        rename = "filteredPipelineResults",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub filter_results: Vec<FilterResult>,
    /// Each prioritizer's weight and scores.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prioritize_results: Vec<PrioritizerResult>,
    /// Weighted totals, best first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aggregated_scores: Vec<ClusterScore>,
    /// Why the request could not be answered.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub error: String,
}

impl DebugResult {
    /// An answer carrying only `error`.
    pub fn error(message: impl Into<String>) -> DebugResult {
        DebugResult {
            error: message.into(),
            ..DebugResult::default()
        }
    }
}

/// The clusters left after the filters `name` (comma-separated) ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FilterResult {
    /// The filters so far, e.g. `Predicate,TaintToleration`.
    pub name: String,
    /// The clusters that passed them, sorted.
    pub filtered_clusters: Vec<String>,
}

/// One prioritizer's weight and scores.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PrioritizerResult {
    /// Prioritizer name (`Balance`, `Steady`, `AddOn/<resource>/<score>`, ...).
    pub name: String,
    /// Its weight.
    pub weight: i32,
    /// Score (before weighting) by cluster.
    pub scores: BTreeMap<String, i64>,
}

/// A cluster's weighted total.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterScore {
    /// Cluster name.
    pub cluster_name: String,
    /// `Σ weight × score`.
    pub score: i64,
}

/// `namespace` and `name` from a GET path (`/debug/placements/<namespace>/<name>`).
pub fn parse_path(path: &str) -> Result<(String, String), String> {
    let key = path.strip_prefix(DEBUG_PATH).unwrap_or(path);
    match key.split('/').collect::<Vec<_>>().as_slice() {
        [namespace, name] if !namespace.is_empty() && !name.is_empty() => {
            Ok(((*namespace).to_owned(), (*name).to_owned()))
        }
        [name] if !name.is_empty() => Ok((String::new(), (*name).to_owned())),
        _ => Err(format!("unexpected key format: {key:?}")),
    }
}

/// The Placement of a POST body.
pub fn parse_body(body: &[u8]) -> Result<Placement, String> {
    if body.len() > MAX_BODY_BYTES {
        return Err(format!(
            "request body too large: exceeds maximum of {MAX_BODY_BYTES} bytes"
        ));
    }
    let mut value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| format!("failed to unmarshal placement JSON: {e}"))?;
    drop_nulls(&mut value);
    serde_json::from_value(value).map_err(|e| format!("failed to unmarshal placement JSON: {e}"))
}

/// Removes `null` members, which Go clients write for empty lists and unset fields and which
/// mean the same as leaving them out.
fn drop_nulls(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// `placement` as the answer shows it: name, namespace, labels and annotations, no status.
fn trimmed(placement: &Placement) -> Placement {
    let mut out = placement.clone();
    out.metadata = ObjectMeta {
        name: placement.metadata.name.clone(),
        namespace: placement.metadata.namespace.clone(),
        labels: placement.metadata.labels.clone(),
        annotations: placement.metadata.annotations.clone(),
        ..ObjectMeta::default()
    };
    out.status = Some(PlacementStatus::default());
    out
}

/// How the scheduler treats `placement` against `snapshot`.
pub fn debug(placement: &Placement, snapshot: &Snapshot) -> DebugResult {
    let result = schedule(placement, snapshot);
    let eligibility = crate::scheduler::filter::eligibility(placement, snapshot);
    let candidates: Vec<String> = eligibility
        .candidates
        .iter()
        .map(|&i| snapshot.names[i as usize].to_string())
        .collect();
    let rejected_by = |predicate: bool| -> Vec<&str> {
        result
            .filtered
            .iter()
            .filter(|f| match f.reason {
                FilterReason::NoPredicateMatched => true,
                FilterReason::TaintNotTolerated { .. } => !predicate,
                FilterReason::Terminating => false,
            })
            .map(|f| f.name.as_ref())
            .collect()
    };
    let after_predicate: Vec<String> = {
        let out = rejected_by(true);
        candidates
            .iter()
            .filter(|c| !out.contains(&c.as_str()))
            .cloned()
            .collect()
    };
    let feasible: Vec<String> = result.ranking.names().map(str::to_owned).collect();
    let filter_results = vec![
        FilterResult {
            name: PREDICATE.to_owned(),
            filtered_clusters: after_predicate,
        },
        FilterResult {
            name: format!("{PREDICATE},{TAINT_TOLERATION}"),
            filtered_clusters: feasible,
        },
    ];
    let prioritize_results = result
        .prioritizers
        .iter()
        .enumerate()
        .map(|(p, info)| PrioritizerResult {
            name: info.name.clone(),
            weight: info.weight,
            scores: (0..result.ranking.len())
                .map(|i| {
                    let score = result
                        .ranking
                        .scores
                        .get(p)
                        .and_then(|column| column.get(i))
                        .copied()
                        .unwrap_or_default();
                    (result.ranking.name(i).to_owned(), score)
                })
                .collect(),
        })
        .collect();
    let aggregated_scores = result
        .ranking
        .best_first()
        .into_iter()
        .map(|i| ClusterScore {
            cluster_name: result.ranking.name(i).to_owned(),
            score: result.ranking.totals.get(i).copied().unwrap_or_default(),
        })
        .collect();
    DebugResult {
        placement: Some(trimmed(placement)),
        filter_results,
        prioritize_results,
        aggregated_scores,
        error: String::new(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use super::*;
    use crate::scheduler::SnapshotInput;
    use ocm_api::cluster::v1::ManagedCluster;
    use ocm_api::cluster::v1beta2::ManagedClusterSetBinding;
    use serde_json::{Value, json};

    fn from<T: serde::de::DeserializeOwned>(v: Value) -> Arc<T> {
        Arc::new(serde_json::from_value(v).unwrap())
    }

    fn cluster(name: &str, env: &str, tainted: bool) -> Arc<ManagedCluster> {
        let taints = if tainted {
            json!([{"key": "maintenance", "effect": "NoSelect",
                    "timeAdded": "2026-01-01T00:00:00Z"}])
        } else {
            json!([])
        };
        from(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
            "metadata": {"name": name, "labels": {
                "cluster.open-cluster-management.io/clusterset": "dev", "env": env}},
            "spec": {"hubAcceptsClient": true, "taints": taints},
        }))
    }

    fn snapshot() -> Snapshot {
        Snapshot::new(SnapshotInput {
            clusters: vec![
                cluster("c1", "prod", false),
                cluster("c2", "prod", true),
                cluster("c3", "test", false),
                cluster("c4", "prod", false),
            ],
            cluster_sets: vec![from(json!({
                "apiVersion": "cluster.open-cluster-management.io/v1beta2",
                "kind": "ManagedClusterSet", "metadata": {"name": "dev"}, "spec": {}}))],
            bindings: vec![from::<ManagedClusterSetBinding>(json!({
                "apiVersion": "cluster.open-cluster-management.io/v1beta2",
                "kind": "ManagedClusterSetBinding",
                "metadata": {"name": "dev", "namespace": "apps"},
                "spec": {"clusterSet": "dev"}}))],
            scores: Vec::new(),
            decisions: Vec::new(),
            now: "2026-06-01T00:00:00Z".parse().unwrap(),
        })
    }

    fn placement(spec: Value) -> Placement {
        serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "p", "namespace": "apps", "uid": "u1", "resourceVersion": "9",
                         "labels": {"team": "a"}},
            "spec": spec,
            "status": {"numberOfSelectedClusters": 3},
        }))
        .unwrap()
    }

    #[test]
    fn the_pipeline_shows_what_each_filter_left_and_the_scores() {
        let p = placement(json!({"predicates": [{"requiredClusterSelector": {
            "labelSelector": {"matchLabels": {"env": "prod"}}}}]}));
        let result = debug(&p, &snapshot());
        let out = serde_json::to_value(&result).unwrap();
        assert_eq!(
            out["filteredPipelineResults"],
            json!([
                {"name": "Predicate", "filteredClusters": ["c1", "c2", "c4"]},
                {"name": "Predicate,TaintToleration", "filteredClusters": ["c1", "c4"]},
            ])
        );
        assert_eq!(out["prioritizeResults"][0]["name"], "Balance");
        assert_eq!(out["prioritizeResults"][0]["weight"], 1);
        assert_eq!(
            out["prioritizeResults"][0]["scores"],
            json!({"c1": 100, "c4": 100})
        );
        assert_eq!(out["prioritizeResults"][1]["name"], "Steady");
        assert_eq!(
            out["aggregatedScores"],
            json!([{"clusterName": "c1", "score": 100}, {"clusterName": "c4", "score": 100}])
        );
        // The placement comes back without runtime metadata or status.
        assert_eq!(
            out["placement"]["metadata"],
            json!({"name": "p", "namespace": "apps", "labels": {"team": "a"}})
        );
        assert_eq!(out["placement"]["status"]["numberOfSelectedClusters"], 0);
        assert!(out.get("error").is_none());
    }

    #[test]
    fn no_bound_cluster_still_shows_both_filter_steps() {
        let mut p = placement(json!({}));
        p.metadata.namespace = Some("elsewhere".into());
        let out = serde_json::to_value(debug(&p, &snapshot())).unwrap();
        assert_eq!(
            out["filteredPipelineResults"],
            json!([
                {"name": "Predicate", "filteredClusters": []},
                {"name": "Predicate,TaintToleration", "filteredClusters": []},
            ])
        );
    }

    #[test]
    fn paths_and_bodies_are_checked() {
        assert_eq!(
            parse_path("/debug/placements/ns/p").unwrap(),
            ("ns".to_owned(), "p".to_owned())
        );
        assert!(parse_path("/debug/placements/a/b/c").is_err());
        assert!(parse_path("/debug/placements/").is_err());
        assert!(parse_body(b"{not json").unwrap_err().contains("unmarshal"));
        assert!(
            parse_body(&vec![b' '; MAX_BODY_BYTES + 1])
                .unwrap_err()
                .contains("too large")
        );
        let p = parse_body(
            br#"{"apiVersion":"cluster.open-cluster-management.io/v1beta1","kind":"Placement","metadata":{"name":"x","namespace":"ns"},"spec":{}}"#,
        )
        .unwrap();
        assert_eq!(p.metadata.name.as_deref(), Some("x"));
        // As a Go client marshals one: nulls for unset lists and times.
        let p = parse_body(
            br#"{"kind":"Placement","apiVersion":"cluster.open-cluster-management.io/v1beta1","metadata":{"name":"x","namespace":"ns","creationTimestamp":null},"spec":{"clusterSets":["s"],"predicates":null,"prioritizerPolicy":{"mode":"","configurations":null},"tolerations":[{"key":"k","operator":"Exists"}],"decisionStrategy":{"groupStrategy":{"decisionGroups":null,"clustersPerDecisionGroup":0}}},"status":{"numberOfSelectedClusters":0,"decisionGroups":null,"conditions":null}}"#,
        )
        .unwrap();
        assert_eq!(p.spec.cluster_sets, ["s"]);
        assert_eq!(
            serde_json::to_value(DebugResult::error("nope")).unwrap(),
            json!({"error": "nope"})
        );
    }
}
