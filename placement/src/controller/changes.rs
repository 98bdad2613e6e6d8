//! What a change of a watched object means for the placements: which of them must be
//! scheduled again. Upstream narrows its work queue the same way (a cluster change affects the
//! placements of namespaces bound to the cluster's sets, and so on).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use kube::ResourceExt;
use ocm_api::cluster::names::labels::PLACEMENT;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1alpha1::AddOnPlacementScore;
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_api::cluster::v1beta2::{ManagedClusterSet, ManagedClusterSetBinding};

use crate::scheduler::Snapshot;

/// A placement, by namespace and name.
pub(crate) type PlacementKey = (String, String);

/// One observed change of a watched object.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Change {
    /// A Placement was created, changed or deleted.
    Placement(PlacementKey),
    /// A PlacementDecision labelled with a placement changed: (placement, decision name).
    Decision(PlacementKey, String),
    /// A ManagedCluster changed (labels, claims, taints, resources, deletion).
    Cluster(String),
    /// A ManagedClusterSet changed.
    ClusterSet(String),
    /// A ManagedClusterSetBinding in this namespace changed.
    Binding(String),
}

/// The change a watched object's event stands for, if any.
pub(crate) trait ToChange {
    /// The change, or `None` when no placement can depend on this object.
    fn to_change(&self) -> Option<Change>;
}

impl ToChange for Placement {
    fn to_change(&self) -> Option<Change> {
        Some(Change::Placement((self.namespace()?, self.name_any())))
    }
}

impl ToChange for PlacementDecision {
    fn to_change(&self) -> Option<Change> {
        let placement = self.labels().get(PLACEMENT)?.clone();
        Some(Change::Decision(
            (self.namespace()?, placement),
            self.name_any(),
        ))
    }
}

impl ToChange for ManagedCluster {
    fn to_change(&self) -> Option<Change> {
        Some(Change::Cluster(self.name_any()))
    }
}

impl ToChange for ManagedClusterSet {
    fn to_change(&self) -> Option<Change> {
        Some(Change::ClusterSet(self.name_any()))
    }
}

impl ToChange for ManagedClusterSetBinding {
    fn to_change(&self) -> Option<Change> {
        Some(Change::Binding(self.namespace()?))
    }
}

impl ToChange for AddOnPlacementScore {
    /// Scores live in the namespace of the cluster they score: a score change is a change of
    /// that cluster for scheduling purposes.
    fn to_change(&self) -> Option<Change> {
        Some(Change::Cluster(self.namespace()?))
    }
}

/// Placements per namespace, and namespaces per bound set — the indexes that turn a change
/// into the placements it can affect.
pub(crate) struct Affected<'a> {
    placements_by_namespace: HashMap<&'a str, Vec<&'a PlacementKey>>,
    namespaces_by_set: HashMap<&'a str, HashSet<&'a str>>,
}

impl<'a> Affected<'a> {
    /// Indexes the placement keys and the bindings.
    pub(crate) fn new(
        placements: &'a [PlacementKey],
        bindings: &'a [Arc<ManagedClusterSetBinding>],
    ) -> Affected<'a> {
        let mut placements_by_namespace: HashMap<&str, Vec<&PlacementKey>> = HashMap::new();
        for key in placements {
            placements_by_namespace.entry(&key.0).or_default().push(key);
        }
        let mut namespaces_by_set: HashMap<&str, HashSet<&str>> = HashMap::new();
        for binding in bindings {
            if let Some(ns) = binding.metadata.namespace.as_deref() {
                namespaces_by_set
                    .entry(binding.spec.cluster_set.as_str())
                    .or_default()
                    .insert(ns);
            }
        }
        Affected {
            placements_by_namespace,
            namespaces_by_set,
        }
    }

    fn namespace(&self, ns: &str, out: &mut HashSet<PlacementKey>) {
        for key in self.placements_by_namespace.get(ns).into_iter().flatten() {
            out.insert((*key).clone());
        }
    }

    fn set(&self, set: &str, out: &mut HashSet<PlacementKey>) {
        for ns in self.namespaces_by_set.get(set).into_iter().flatten() {
            self.namespace(ns, out);
        }
    }

    /// Adds the placements `change` can affect to `out`. A cluster counts for the sets it
    /// belongs to in `before` or in `after` (joining, leaving and relabelled clusters).
    /// Decision changes are not resolved here: the caller decides whether they were its own.
    pub(crate) fn resolve(
        &self,
        change: &Change,
        before: Option<&Snapshot>,
        after: &Snapshot,
        out: &mut HashSet<PlacementKey>,
    ) {
        match change {
            Change::Placement(key) | Change::Decision(key, _) => {
                out.insert(key.clone());
            }
            Change::Binding(ns) => self.namespace(ns, out),
            Change::ClusterSet(set) => self.set(set, out),
            Change::Cluster(name) => {
                let mut sets = after.sets_of(name);
                if let Some(before) = before {
                    sets.extend(before.sets_of(name));
                }
                sets.sort();
                sets.dedup();
                for set in sets {
                    self.set(&set, out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::scheduler::SnapshotInput;
    use serde_json::json;

    fn cluster(name: &str, set: Option<&str>) -> Arc<ManagedCluster> {
        let labels = set.map_or(
            json!({}),
            |s| json!({"cluster.open-cluster-management.io/clusterset": s}),
        );
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "labels": labels}, "spec": {}}))
            .unwrap(),
        )
    }

    fn set(name: &str) -> Arc<ManagedClusterSet> {
        Arc::new(serde_json::from_value(json!({"metadata": {"name": name}, "spec": {}})).unwrap())
    }

    fn binding(ns: &str, set: &str) -> Arc<ManagedClusterSetBinding> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": set, "namespace": ns}, "spec": {"clusterSet": set}}))
            .unwrap(),
        )
    }

    fn snapshot(clusters: Vec<Arc<ManagedCluster>>) -> Snapshot {
        Snapshot::new(SnapshotInput {
            clusters,
            cluster_sets: vec![set("red"), set("blue")],
            bindings: vec![],
            scores: vec![],
            decisions: vec![],
            now: jiff::Timestamp::UNIX_EPOCH,
        })
    }

    fn key(ns: &str, name: &str) -> PlacementKey {
        (ns.to_string(), name.to_string())
    }

    fn resolve(change: Change, before: &Snapshot, after: &Snapshot) -> Vec<PlacementKey> {
        let placements = vec![
            key("a", "p1"),
            key("a", "p2"),
            key("b", "p3"),
            key("c", "p4"),
        ];
        let bindings = vec![
            binding("a", "red"),
            binding("b", "blue"),
            binding("c", "blue"),
        ];
        let affected = Affected::new(&placements, &bindings);
        let mut out = HashSet::new();
        affected.resolve(&change, Some(before), after, &mut out);
        let mut out: Vec<PlacementKey> = out.into_iter().collect();
        out.sort();
        out
    }

    #[test]
    fn a_cluster_change_reaches_the_placements_bound_to_its_sets_before_and_after() {
        let before = snapshot(vec![cluster("x", Some("red"))]);
        let same = snapshot(vec![cluster("x", Some("red"))]);
        assert_eq!(
            resolve(Change::Cluster("x".into()), &before, &same),
            vec![key("a", "p1"), key("a", "p2")]
        );
        // Moved from red to blue: both sides.
        let moved = snapshot(vec![cluster("x", Some("blue"))]);
        assert_eq!(
            resolve(Change::Cluster("x".into()), &before, &moved).len(),
            4
        );
        // Deleted: the sets it was in.
        let gone = snapshot(vec![]);
        assert_eq!(
            resolve(Change::Cluster("x".into()), &before, &gone),
            vec![key("a", "p1"), key("a", "p2")]
        );
        // A cluster in no set reaches nobody.
        let loose = snapshot(vec![cluster("y", None)]);
        assert!(resolve(Change::Cluster("y".into()), &loose, &loose).is_empty());
    }

    #[test]
    fn set_binding_placement_and_decision_changes() {
        let s = snapshot(vec![]);
        assert_eq!(
            resolve(Change::ClusterSet("blue".into()), &s, &s),
            vec![key("b", "p3"), key("c", "p4")]
        );
        assert!(resolve(Change::ClusterSet("green".into()), &s, &s).is_empty());
        assert_eq!(
            resolve(Change::Binding("a".into()), &s, &s),
            vec![key("a", "p1"), key("a", "p2")]
        );
        assert_eq!(
            resolve(Change::Placement(key("z", "new")), &s, &s),
            vec![key("z", "new")]
        );
        assert_eq!(
            resolve(
                Change::Decision(key("b", "p3"), "p3-decision-1".into()),
                &s,
                &s
            ),
            vec![key("b", "p3")]
        );
    }

    #[test]
    fn a_score_is_a_change_of_the_cluster_named_by_its_namespace() {
        let score: AddOnPlacementScore = serde_json::from_value(json!({
            "metadata": {"name": "demo", "namespace": "cluster1"}}))
        .unwrap();
        assert_eq!(score.to_change(), Some(Change::Cluster("cluster1".into())));
        let decision: PlacementDecision = serde_json::from_value(json!({
            "metadata": {"name": "d", "namespace": "ns"}}))
        .unwrap();
        assert_eq!(
            decision.to_change(),
            None,
            "unlabelled decisions belong to nobody"
        );
    }
}
