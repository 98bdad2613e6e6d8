//! Conditions over time: a cluster object holds only the latest state of each condition, so
//! the dashboard remembers each change of a cluster's conditions (type, status, reason) it has
//! seen since it started, the last [`KEEP`] per cluster.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use ocm_api::cluster::v1::ManagedCluster;

/// How many changes are kept per cluster.
pub const KEEP: usize = 50;

/// One change of a condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    /// The condition's `lastTransitionTime` (when the status changed on the hub).
    pub at: Option<jiff::Timestamp>,
    /// Condition type.
    pub type_: String,
    /// New status.
    pub status: String,
    /// Its reason.
    pub reason: String,
    /// Its message.
    pub message: String,
}

/// The changes of `conditions` not already last in `seen` for their type.
pub fn changes(seen: &VecDeque<Transition>, conditions: &[Condition]) -> Vec<Transition> {
    conditions
        .iter()
        .filter(|c| {
            let last = seen.iter().rev().find(|t| t.type_ == c.type_);
            !last.is_some_and(|t| t.status == c.status && t.reason == c.reason)
        })
        .map(|c| Transition {
            at: Some(c.last_transition_time.0),
            type_: c.type_.clone(),
            status: c.status.clone(),
            reason: c.reason.clone(),
            message: c.message.clone(),
        })
        .collect()
}

/// Condition changes by cluster name.
#[derive(Debug, Default)]
pub struct History {
    clusters: Mutex<HashMap<String, VecDeque<Transition>>>,
}

impl History {
    /// Records the changes in `cluster`'s conditions.
    pub fn record(&self, cluster: &ManagedCluster) {
        let Some(name) = cluster.metadata.name.as_deref() else {
            return;
        };
        let Some(status) = &cluster.status else {
            return;
        };
        let mut clusters = self.clusters.lock().unwrap_or_else(|e| e.into_inner());
        let seen = clusters.entry(name.to_owned()).or_default();
        let mut new = changes(seen, &status.conditions);
        new.sort_by_key(|t| t.at);
        for change in new {
            if seen.len() == KEEP {
                seen.pop_front();
            }
            seen.push_back(change);
        }
    }

    /// `cluster`'s recorded changes, newest first.
    pub fn of(&self, cluster: &str) -> Vec<Transition> {
        let clusters = self.clusters.lock().unwrap_or_else(|e| e.into_inner());
        clusters
            .get(cluster)
            .map(|seen| seen.iter().rev().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn cluster(available: &str, reason: &str, at: &str) -> ManagedCluster {
        serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
            "metadata": {"name": "c1"}, "spec": {},
            "status": {"conditions": [
                {"type": "ManagedClusterJoined", "status": "True", "reason": "Joined",
                 "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "ManagedClusterConditionAvailable", "status": available,
                 "reason": reason, "message": "m", "lastTransitionTime": at},
            ]}
        }))
        .unwrap()
    }

    #[test]
    fn only_changes_are_recorded_newest_first() {
        let history = History::default();
        history.record(&cluster("True", "Up", "2026-01-01T00:01:00Z"));
        history.record(&cluster("True", "Up", "2026-01-01T00:01:00Z"));
        history.record(&cluster("Unknown", "Stale", "2026-01-01T00:02:00Z"));
        let seen: Vec<(String, String)> = history
            .of("c1")
            .into_iter()
            .map(|t| (t.type_, t.status))
            .collect();
        assert_eq!(
            seen,
            [
                ("ManagedClusterConditionAvailable".into(), "Unknown".into()),
                ("ManagedClusterConditionAvailable".into(), "True".into()),
                ("ManagedClusterJoined".into(), "True".into()),
            ]
        );
        assert!(history.of("c2").is_empty());
    }

    #[test]
    fn at_most_keep_changes_per_cluster() {
        let history = History::default();
        for i in 0..(KEEP + 10) {
            let status = if i % 2 == 0 { "True" } else { "False" };
            history.record(&cluster(status, "R", "2026-01-01T00:01:00Z"));
        }
        assert_eq!(history.of("c1").len(), KEEP);
    }
}
