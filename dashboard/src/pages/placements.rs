//! Placements: a table of every placement, and one placement's decisions by group with the
//! reasoning of `ocm explain placement` (the scheduler's own [`explain`]) as a table.

use std::fmt::Write;
use std::sync::Arc;

use kube::ResourceExt;
use ocm_api::cluster::names::labels::{DECISION_GROUP_INDEX, DECISION_GROUP_NAME, PLACEMENT};
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_placement::scheduler::{
    ClusterVerdict, ScoredOutcome, Snapshot as SchedulerSnapshot, SnapshotInput, explain,
};

use super::{Page, Section, cluster_filter, notices};
use crate::cache::{Kind, Snapshot};
use crate::html::{Tone, badge, condition_status, conditions_table, esc, path_segment, table};
use crate::query::Query;

/// Kinds the list shows.
pub const LIST_KINDS: [Kind; 2] = [Kind::Placements, Kind::Decisions];

/// Kinds a placement's page shows (its explanation reads the scheduler's inputs).
pub const KINDS: [Kind; 6] = [
    Kind::Placements,
    Kind::Decisions,
    Kind::Clusters,
    Kind::ClusterSets,
    Kind::SetBindings,
    Kind::Scores,
];

/// The most explanation rows one page shows.
pub const MAX_EXPLAINED: usize = 500;

/// The placements table.
pub fn render_list(snapshot: &Snapshot) -> Page {
    let mut placements: Vec<&Arc<Placement>> = snapshot.placements.iter().collect();
    placements.sort_by_key(|p| (p.namespace(), p.name_any()));
    let rows: Vec<Vec<String>> = placements
        .iter()
        .map(|p| {
            let ns = p.namespace().unwrap_or_default();
            let name = p.name_any();
            let status = p.status.as_ref();
            let conditions = status.map(|s| s.conditions.as_slice()).unwrap_or_default();
            vec![
                esc(&ns),
                format!(
                    "<a href=\"/placements/{}/{}\">{}</a>",
                    path_segment(&ns),
                    path_segment(&name),
                    esc(&name)
                ),
                esc(&p.spec.cluster_sets.join(", ")),
                p.spec
                    .number_of_clusters
                    .map_or_else(|| "all".to_owned(), |n| n.to_string()),
                status
                    .map(|s| s.number_of_selected_clusters.to_string())
                    .unwrap_or_default(),
                status
                    .map(|s| s.decision_groups.len().to_string())
                    .unwrap_or_default(),
                crate::html::status_badge(
                    condition_status(conditions, "PlacementSatisfied"),
                    false,
                ),
                crate::html::status_badge(
                    condition_status(conditions, "PlacementMisconfigured"),
                    true,
                ),
            ]
        })
        .collect();
    let mut body = notices(snapshot, &LIST_KINDS);
    body.push_str(&table(
        "Placements",
        &[
            "Namespace",
            "Name",
            "Cluster sets",
            "Wants",
            "Selected",
            "Groups",
            "Satisfied",
            "Misconfigured",
        ],
        &rows,
    ));
    Page::new("Placements", Section::Placements, &LIST_KINDS, body)
}

/// The decisions of `placement` (by its label in its namespace), sorted by name.
pub fn decisions_of<'a>(
    snapshot: &'a Snapshot,
    placement: &Placement,
) -> Vec<&'a PlacementDecision> {
    let ns = placement.namespace();
    let name = placement.name_any();
    let mut decisions: Vec<&PlacementDecision> = snapshot
        .decisions
        .iter()
        .filter(|d| d.namespace() == ns && d.labels().get(PLACEMENT) == Some(&name))
        .map(|d| &**d)
        .collect();
    decisions.sort_by_key(|d| d.name_any());
    decisions
}

/// Placement `namespace/name`: conditions, decisions by group, and why each cluster was or
/// was not chosen.
pub fn render(snapshot: &Snapshot, namespace: &str, name: &str, query: &Query) -> Page {
    let Some(placement) = snapshot
        .placements
        .iter()
        .find(|p| p.namespace().as_deref() == Some(namespace) && p.name_any() == name)
    else {
        let mut page = super::not_found(&format!("Placement {namespace}/{name}"));
        page.section = Section::Placements;
        page.kinds = KINDS.to_vec();
        return page;
    };
    let mut body = notices(snapshot, &KINDS);
    let conditions = placement
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    body.push_str(&conditions_table("Conditions", conditions, snapshot.now));

    // Decisions by group.
    let rows: Vec<Vec<String>> = decisions_of(snapshot, placement)
        .iter()
        .map(|d| {
            let label = |k: &str| esc(&d.labels().get(k).cloned().unwrap_or_default());
            let clusters: Vec<String> = d
                .status
                .iter()
                .flat_map(|s| s.decisions.iter())
                .map(|c| {
                    format!(
                        "<a href=\"/clusters/{}\">{}</a>",
                        path_segment(&c.cluster_name),
                        esc(&c.cluster_name)
                    )
                })
                .collect();
            vec![
                esc(&d.name_any()),
                label(DECISION_GROUP_INDEX),
                label(DECISION_GROUP_NAME),
                clusters.len().to_string(),
                clusters.join(" "),
            ]
        })
        .collect();
    body.push_str(&table(
        "Decisions",
        &[
            "PlacementDecision",
            "Group",
            "Group name",
            "Clusters",
            "Chosen",
        ],
        &rows,
    ));

    // Why.
    let scheduler = SchedulerSnapshot::new(SnapshotInput {
        clusters: snapshot.clusters.clone(),
        cluster_sets: snapshot.cluster_sets.clone(),
        bindings: snapshot.bindings.clone(),
        scores: snapshot.scores.clone(),
        decisions: snapshot.decisions.clone(),
        now: snapshot.now,
    });
    let explanation = explain(placement, &scheduler);
    if let Some(m) = &explanation.result.misconfiguration {
        let _ = write!(
            body,
            "<p class=\"notice error\" role=\"alert\">Misconfigured: {}</p>",
            esc(&format!("{m:?}"))
        );
    }
    let filter = query.get("q").unwrap_or_default().to_lowercase();
    let mut explained: Vec<_> = explanation
        .clusters
        .iter()
        .filter(|c| c.cluster.to_lowercase().contains(&filter))
        .collect();
    // Chosen first by rank, then scored, then the rest by name.
    explained.sort_by_key(|c| match &c.verdict {
        ClusterVerdict::Scored {
            outcome: ScoredOutcome::Selected,
            rank,
            ..
        } => (0, *rank, c.cluster.clone()),
        ClusterVerdict::Scored { rank, .. } => (1, *rank, c.cluster.clone()),
        _ => (2, 0, c.cluster.clone()),
    });
    let total = explained.len();
    let rows: Vec<Vec<String>> = explained
        .iter()
        .take(MAX_EXPLAINED)
        .map(|c| {
            let (tone, word, rank, score) = match &c.verdict {
                ClusterVerdict::Scored {
                    outcome,
                    rank,
                    total,
                    ..
                } => {
                    let (tone, word) = match outcome {
                        ScoredOutcome::Selected => (Tone::Good, "Selected"),
                        _ => (Tone::Idle, "Not selected"),
                    };
                    (tone, word, rank.to_string(), total.to_string())
                }
                ClusterVerdict::NotInEligibleSets { .. } => {
                    (Tone::Idle, "Not eligible", String::new(), String::new())
                }
                ClusterVerdict::NotEvaluated => {
                    (Tone::Idle, "Not evaluated", String::new(), String::new())
                }
                _ => (Tone::Bad, "Filtered", String::new(), String::new()),
            };
            vec![
                format!(
                    "<a href=\"/clusters/{}\">{}</a>",
                    path_segment(&c.cluster),
                    esc(&c.cluster)
                ),
                badge(tone, word),
                rank,
                score,
                esc(&c.verdict.to_string()),
            ]
        })
        .collect();
    body.push_str(&cluster_filter("explain-filter", &filter));
    body.push_str(&table(
        "Why each cluster was or was not chosen (ocm explain placement)",
        &["Cluster", "Outcome", "Rank", "Score", "Reason"],
        &rows,
    ));
    if total > MAX_EXPLAINED {
        let _ = write!(
            body,
            "<p class=\"muted\">Showing the first {MAX_EXPLAINED} of {total} clusters; filter to see others.</p>"
        );
    }
    Page::new(
        format!("Placement {namespace}/{name}"),
        Section::Placements,
        &KINDS,
        body,
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn snapshot() -> Snapshot {
        let placement: Placement = serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "web", "namespace": "apps"},
            "spec": {"clusterSets": ["default"]},
            "status": {"numberOfSelectedClusters": 1, "conditions": []}
        }))
        .unwrap();
        let decision: PlacementDecision = serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "PlacementDecision",
            "metadata": {"name": "web-decision-1", "namespace": "apps", "labels": {
                PLACEMENT: "web", DECISION_GROUP_INDEX: "0", DECISION_GROUP_NAME: ""}},
            "status": {"decisions": [{"clusterName": "c1", "reason": ""}]}
        }))
        .unwrap();
        Snapshot {
            clusters: vec![Arc::new(crate::clusters::tests::cluster(
                "c1", true, "True", "8",
            ))],
            placements: vec![Arc::new(placement)],
            decisions: vec![Arc::new(decision)],
            now: "2026-01-02T00:00:00Z".parse().unwrap(),
            ..Snapshot::default()
        }
    }

    #[test]
    fn lists_placements_and_explains_one() {
        let s = snapshot();
        let list = render_list(&s);
        assert!(list.body.contains("href=\"/placements/apps/web\""));
        let page = render(&s, "apps", "web", &Query::default());
        assert_eq!(page.status, 200);
        assert!(page.body.contains("web-decision-1"));
        // no ManagedClusterSetBinding in apps: c1 is not eligible, and the table says why
        assert!(page.body.contains("Not eligible"));
        assert!(page.body.contains("not in an eligible cluster set"));
        assert_eq!(render(&s, "apps", "nope", &Query::default()).status, 404);
    }
}
