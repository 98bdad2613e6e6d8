//! Rollouts: each ManifestWorkReplicaSet with its summary and, for each placement it uses,
//! its progress per decision group — how many of the group's clusters have the work, applied,
//! available, degraded — read from the PlacementDecisions and the ManifestWorks themselves.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

use kube::ResourceExt;
use ocm_api::cluster::names::labels::{DECISION_GROUP_INDEX, DECISION_GROUP_NAME, PLACEMENT};
use ocm_api::work::names::MANIFEST_WORK_REPLICA_SET_LABEL;
use ocm_api::work::v1::ManifestWork;
use ocm_api::work::v1alpha1::ManifestWorkReplicaSet;

use super::{Page, Section, notices};
use crate::cache::{Kind, Snapshot};
use crate::html::{condition_status, conditions_table, esc, path_segment, table};

/// Kinds the page shows.
pub const KINDS: [Kind; 3] = [Kind::ReplicaSets, Kind::Works, Kind::Decisions];

/// One decision group's progress.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupProgress {
    /// The placement.
    pub placement: String,
    /// Group index (from the decisions' label).
    pub index: i64,
    /// Group name.
    pub name: String,
    /// Clusters in the group.
    pub clusters: usize,
    /// Of them, with the replica set's work.
    pub works: usize,
    /// Works Applied.
    pub applied: usize,
    /// Works Available.
    pub available: usize,
    /// Works Degraded.
    pub degraded: usize,
}

/// The progress of `rs` per placement and decision group.
pub fn progress(snapshot: &Snapshot, rs: &ManifestWorkReplicaSet) -> Vec<GroupProgress> {
    let ns = rs.namespace().unwrap_or_default();
    let key = format!("{ns}.{}", rs.name_any());
    let works: HashMap<String, &ManifestWork> = snapshot
        .works
        .iter()
        .filter(|w| w.labels().get(MANIFEST_WORK_REPLICA_SET_LABEL) == Some(&key))
        .filter_map(|w| Some((w.namespace()?, &**w)))
        .collect();
    let mut out = Vec::new();
    for reference in &rs.spec.placement_refs {
        let mut groups: BTreeMap<(i64, String), Vec<String>> = BTreeMap::new();
        for decision in snapshot.decisions.iter().filter(|d| {
            d.namespace().as_deref() == Some(ns.as_str())
                && d.labels().get(PLACEMENT) == Some(&reference.name)
        }) {
            let labels = decision.labels();
            let index = labels
                .get(DECISION_GROUP_INDEX)
                .and_then(|i| i.parse().ok())
                .unwrap_or(0);
            let name = labels.get(DECISION_GROUP_NAME).cloned().unwrap_or_default();
            groups.entry((index, name)).or_default().extend(
                decision
                    .status
                    .iter()
                    .flat_map(|s| s.decisions.iter())
                    .map(|d| d.cluster_name.clone()),
            );
        }
        for ((index, name), clusters) in groups {
            let mut group = GroupProgress {
                placement: reference.name.clone(),
                index,
                name,
                clusters: clusters.len(),
                ..GroupProgress::default()
            };
            for cluster in &clusters {
                let Some(work) = works.get(cluster) else {
                    continue;
                };
                group.works += 1;
                let conditions = work
                    .status
                    .as_ref()
                    .map(|s| s.conditions.as_slice())
                    .unwrap_or_default();
                let is = |t: &str| condition_status(conditions, t) == "True";
                group.applied += usize::from(is("Applied"));
                group.available += usize::from(is("Available"));
                group.degraded += usize::from(is("Degraded"));
            }
            out.push(group);
        }
    }
    out
}

/// A `<progress>` bar with its numbers in words.
fn bar(done: usize, total: usize, what: &str) -> String {
    format!(
        "<progress max=\"{}\" value=\"{done}\" aria-label=\"{what}\"></progress> {done}/{total} {what}",
        total.max(1)
    )
}

/// The rollouts page.
pub fn render(snapshot: &Snapshot) -> Page {
    let mut body = notices(snapshot, &KINDS);
    let mut sets: Vec<&ManifestWorkReplicaSet> =
        snapshot.replica_sets.iter().map(|r| &**r).collect();
    sets.sort_by_key(|r| (r.namespace(), r.name_any()));
    if sets.is_empty() {
        body.push_str("<p class=\"muted\">No ManifestWorkReplicaSets.</p>");
    }
    for rs in sets {
        let ns = rs.namespace().unwrap_or_default();
        let name = rs.name_any();
        let id = format!("rs-{}-{}", path_segment(&ns), path_segment(&name));
        let status = rs.status.as_ref();
        let summary = status.map(|s| s.summary).unwrap_or_default();
        let _ = write!(
            body,
            "<section class=\"card\" aria-labelledby=\"{id}\"><h2 id=\"{id}\">{}/{}</h2><p>{}</p>",
            esc(&ns),
            esc(&name),
            bar(
                summary.available.max(0) as usize,
                summary.total.max(0) as usize,
                "available"
            )
        );
        let _ = write!(
            body,
            "<p class=\"muted\">total {}, applied {}, available {}, progressing {}, degraded {}</p>",
            summary.total,
            summary.applied,
            summary.available,
            summary.progressing,
            summary.degraded
        );
        let strategies: BTreeMap<&str, String> = rs
            .spec
            .placement_refs
            .iter()
            .map(|r| {
                (
                    r.name.as_str(),
                    r.rollout_strategy
                        .as_ref()
                        .and_then(|s| s.type_.as_ref())
                        .map_or_else(|| "All".to_owned(), |t| format!("{t:?}")),
                )
            })
            .collect();
        let rows: Vec<Vec<String>> = progress(snapshot, rs)
            .iter()
            .map(|g| {
                vec![
                    format!(
                        "<a href=\"/placements/{}/{}\">{}</a>",
                        path_segment(&ns),
                        path_segment(&g.placement),
                        esc(&g.placement)
                    ),
                    esc(strategies
                        .get(g.placement.as_str())
                        .map_or("", String::as_str)),
                    if g.name.is_empty() {
                        g.index.to_string()
                    } else {
                        format!("{} ({})", g.index, esc(&g.name))
                    },
                    g.clusters.to_string(),
                    g.works.to_string(),
                    g.applied.to_string(),
                    bar(g.available, g.clusters, "available"),
                    g.degraded.to_string(),
                ]
            })
            .collect();
        body.push_str(&table(
            &format!("Progress of {ns}/{name} per decision group"),
            &[
                "Placement",
                "Strategy",
                "Group",
                "Clusters",
                "Works",
                "Applied",
                "Available",
                "Degraded",
            ],
            &rows,
        ));
        let conditions = status.map(|s| s.conditions.as_slice()).unwrap_or_default();
        body.push_str(&conditions_table(
            &format!("Conditions of {ns}/{name}"),
            conditions,
            snapshot.now,
        ));
        body.push_str("</section>");
    }
    Page::new("Rollouts", Section::Rollouts, &KINDS, body)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    #[test]
    fn progress_counts_works_per_group() {
        let rs: ManifestWorkReplicaSet = serde_json::from_value(json!({
            "apiVersion": "work.open-cluster-management.io/v1alpha1",
            "kind": "ManifestWorkReplicaSet",
            "metadata": {"name": "app", "namespace": "apps"},
            "spec": {"manifestWorkTemplate": {"workload": {"manifests": []}},
                     "placementRefs": [{"name": "web"}],
                     "cascadeDeletionPolicy": "Background"}
        }))
        .unwrap();
        let decision = |name: &str, index: &str, clusters: &[&str]| {
            Arc::new(
                serde_json::from_value(json!({
                    "apiVersion": "cluster.open-cluster-management.io/v1beta1",
                    "kind": "PlacementDecision",
                    "metadata": {"name": name, "namespace": "apps", "labels": {
                        PLACEMENT: "web", DECISION_GROUP_INDEX: index,
                        DECISION_GROUP_NAME: "canary"}},
                    "status": {"decisions": clusters.iter()
                        .map(|c| json!({"clusterName": c, "reason": ""})).collect::<Vec<_>>()}
                }))
                .unwrap(),
            )
        };
        let work = |cluster: &str, available: &str| {
            Arc::new(
                serde_json::from_value(json!({
                    "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
                    "metadata": {"name": "w", "namespace": cluster,
                        "labels": {MANIFEST_WORK_REPLICA_SET_LABEL: "apps.app"}},
                    "spec": {"workload": {"manifests": []}},
                    "status": {"conditions": [
                        {"type": "Applied", "status": "True", "reason": "", "message": "",
                         "lastTransitionTime": "2026-01-01T00:00:00Z"},
                        {"type": "Available", "status": available, "reason": "", "message": "",
                         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
                }))
                .unwrap(),
            )
        };
        let snapshot = Snapshot {
            replica_sets: vec![Arc::new(rs.clone())],
            decisions: vec![
                decision("web-decision-1", "0", &["c1", "c2"]),
                decision("web-decision-2", "1", &["c3"]),
            ],
            works: vec![work("c1", "True"), work("c2", "False")],
            ..Snapshot::default()
        };
        let groups = progress(&snapshot, &rs);
        assert_eq!(groups.len(), 2);
        assert_eq!(
            (groups[0].index, groups[0].clusters, groups[0].works),
            (0, 2, 2)
        );
        assert_eq!((groups[0].applied, groups[0].available), (2, 1));
        assert_eq!(
            (groups[1].index, groups[1].clusters, groups[1].works),
            (1, 1, 0)
        );
        let page = render(&snapshot);
        assert!(page.body.contains("1/2 available"));
        assert!(page.body.contains("0 (canary)"));
    }
}
