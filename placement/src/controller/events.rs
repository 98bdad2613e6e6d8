//! The Events a placement gets when its decisions are written, as upstream's scheduler emits
//! them (reasons DecisionCreate, DecisionUpdate, DecisionDelete and ScoreUpdate, regarding the
//! Placement with the PlacementDecision as the related object).

use ocm_api::cluster::v1beta1::Placement;

use crate::scheduler::{Ranking, Warning};

/// Longest note of a ScoreUpdate event (upstream's cap, placement#40).
pub(crate) const MAX_NOTE: usize = 1000;

/// One Event to publish about a placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlacementEvent {
    /// Warning rather than Normal.
    pub(crate) warning: bool,
    /// Short reason, e.g. `DecisionCreate`.
    pub(crate) reason: &'static str,
    /// The action, e.g. `DecisionCreated`.
    pub(crate) action: &'static str,
    /// Human-readable note.
    pub(crate) note: String,
    /// The PlacementDecision the event is about.
    pub(crate) decision: String,
}

/// What one write did to the placement's pages.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct WriteReport {
    /// Pages created, in write order.
    pub(crate) created: Vec<String>,
    /// Pages whose clusters or labels were written (created ones included), in write order.
    pub(crate) updated: Vec<String>,
    /// Pages deleted.
    pub(crate) deleted: Vec<String>,
}

impl WriteReport {
    pub(crate) fn updated(&mut self, page: &str) {
        if !self.updated.iter().any(|p| p == page) {
            self.updated.push(page.to_string());
        }
    }
}

/// `cluster:score ` for each ranked cluster, best first, cut at [`MAX_NOTE`] characters with
/// `......` (as upstream).
pub(crate) fn score_note(ranking: &Ranking) -> String {
    let mut note = String::new();
    for i in ranking.best_first() {
        let item = format!("{}:{} ", ranking.name(i), ranking.totals[i]);
        if note.len() + item.len() > MAX_NOTE {
            note.push_str("......");
            break;
        }
        note.push_str(&item);
    }
    note
}

/// The events for `report`: per created page DecisionCreate; per written page DecisionUpdate
/// (Warning, naming the first warning, when scheduling warned) and ScoreUpdate; per deleted
/// page DecisionDelete.
pub(crate) fn decision_events(
    placement: &Placement,
    report: &WriteReport,
    warnings: &[Warning],
    scores: &str,
) -> Vec<PlacementEvent> {
    let name = placement.metadata.name.as_deref().unwrap_or_default();
    let ns = placement.metadata.namespace.as_deref().unwrap_or_default();
    let mut out = Vec::new();
    for page in &report.created {
        out.push(PlacementEvent {
            warning: false,
            reason: "DecisionCreate",
            action: "DecisionCreated",
            note: format!("Decision {page} is created with placement {name} in namespace {ns}"),
            decision: page.clone(),
        });
    }
    for page in &report.updated {
        let mut note =
            format!("Decision {page} is updated with placement {name} in namespace {ns}");
        if let Some(w) = warnings.first() {
            note.push_str(&format!(": {w}"));
        }
        out.push(PlacementEvent {
            warning: !warnings.is_empty(),
            reason: "DecisionUpdate",
            action: "DecisionUpdated",
            note,
            decision: page.clone(),
        });
        out.push(PlacementEvent {
            warning: false,
            reason: "ScoreUpdate",
            action: "ScoreUpdated",
            note: scores.to_string(),
            decision: page.clone(),
        });
    }
    for page in &report.deleted {
        out.push(PlacementEvent {
            warning: false,
            reason: "DecisionDelete",
            action: "DecisionDeleted",
            note: format!("Decision {page} is deleted with placement {name} in namespace {ns}"),
            decision: page.clone(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn placement() -> Placement {
        serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {}}))
            .unwrap()
    }

    #[test]
    fn create_update_delete_and_score_events() {
        let report = WriteReport {
            created: vec!["p-decision-2".into()],
            updated: vec!["p-decision-1".into(), "p-decision-2".into()],
            deleted: vec!["p-decision-3".into()],
        };
        let events = decision_events(&placement(), &report, &[], "c1:100 ");
        let reasons: Vec<(&str, &str)> = events
            .iter()
            .map(|e| (e.reason, e.decision.as_str()))
            .collect();
        assert_eq!(
            reasons,
            vec![
                ("DecisionCreate", "p-decision-2"),
                ("DecisionUpdate", "p-decision-1"),
                ("ScoreUpdate", "p-decision-1"),
                ("DecisionUpdate", "p-decision-2"),
                ("ScoreUpdate", "p-decision-2"),
                ("DecisionDelete", "p-decision-3"),
            ]
        );
        assert_eq!(
            events[0].note,
            "Decision p-decision-2 is created with placement p in namespace ns"
        );
        assert_eq!(events[2].note, "c1:100 ");
        assert!(events.iter().all(|e| !e.warning));
    }

    #[test]
    fn a_scheduling_warning_makes_the_update_a_warning() {
        let report = WriteReport {
            updated: vec!["p-decision-1".into()],
            ..WriteReport::default()
        };
        let warning = Warning {
            plugin: "AddOn/demo/score".into(),
            message: "AddOnPlacementScores c1/demo expired".into(),
        };
        let events = decision_events(&placement(), &report, &[warning], "");
        assert!(events[0].warning);
        assert_eq!(
            events[0].note,
            "Decision p-decision-1 is updated with placement p in namespace ns: \
             AddOnPlacementScores c1/demo expired in plugin AddOn/demo/score"
        );
    }

    #[test]
    fn the_score_note_is_best_first_and_capped() {
        let ranking = Ranking {
            names: (0..200).map(|i| format!("cluster-{i:03}").into()).collect(),
            indices: (0..200).collect(),
            totals: (0..200).map(|i| i as i64).collect(),
            scores: vec![],
        };
        let note = score_note(&ranking);
        assert!(
            note.starts_with("cluster-199:199 cluster-198:198 "),
            "{note}"
        );
        assert!(note.ends_with("......"));
        assert!(note.len() <= MAX_NOTE + 6);
    }
}
