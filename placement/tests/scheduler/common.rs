//! Builders for scheduler inputs and readers for its results.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use ocm_api::cluster::names::labels;
use ocm_api::cluster::v1::{
    ManagedCluster, ManagedClusterClaim, ManagedClusterSpec, ManagedClusterStatus, Taint,
    TaintEffect,
};
use ocm_api::cluster::v1alpha1::{
    AddOnPlacementScore, AddOnPlacementScoreItem, AddOnPlacementScoreStatus,
};
use ocm_api::cluster::v1beta1::{
    ClusterDecision, Placement, PlacementDecision, PlacementDecisionStatus, PlacementSpec,
};
use ocm_api::cluster::v1beta2::{
    ManagedClusterSelector, ManagedClusterSet, ManagedClusterSetBinding,
    ManagedClusterSetBindingSpec, ManagedClusterSetSpec, SelectorType,
};
use ocm_placement::scheduler::{ScheduleResult, Snapshot, SnapshotInput, schedule};
use serde_json::Value;

/// Namespace of the placements under test.
pub const NS: &str = "ns";

/// The fixed "now" of every test.
pub fn now() -> Timestamp {
    "2026-01-01T00:00:00Z".parse().unwrap()
}

/// `now` shifted by `secs`.
pub fn at(secs: i64) -> Timestamp {
    now().checked_add(SignedDuration::from_secs(secs)).unwrap()
}

/// A ManagedCluster under construction; starts in the exclusive set `default`.
pub struct ClusterBuilder(ManagedCluster);

/// A cluster named `name` in the set `default`.
pub fn cluster(name: &str) -> ClusterBuilder {
    let mut c = ManagedCluster::new(name, ManagedClusterSpec::default());
    c.metadata.labels = Some(BTreeMap::from([(
        labels::CLUSTER_SET.to_string(),
        "default".to_string(),
    )]));
    c.status = Some(ManagedClusterStatus::default());
    ClusterBuilder(c)
}

impl ClusterBuilder {
    /// Moves the cluster into exclusive set `set` (empty: no set).
    pub fn set(self, set: &str) -> Self {
        if set.is_empty() {
            let mut b = self;
            if let Some(l) = b.0.metadata.labels.as_mut() {
                l.remove(labels::CLUSTER_SET);
            }
            return b;
        }
        self.label(labels::CLUSTER_SET, set)
    }

    /// Adds a label.
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.0
            .metadata
            .labels
            .get_or_insert_default()
            .insert(key.into(), value.into());
        self
    }

    /// Adds a claim.
    pub fn claim(mut self, name: &str, value: &str) -> Self {
        self.status().cluster_claims.push(ManagedClusterClaim {
            name: name.into(),
            value: value.into(),
        });
        self
    }

    /// Adds a taint added `added_ago` seconds before now (`None`: no timeAdded).
    pub fn taint(
        mut self,
        key: &str,
        value: &str,
        effect: TaintEffect,
        added_ago: Option<i64>,
    ) -> Self {
        self.0.spec.taints.push(Taint {
            key: key.into(),
            value: value.into(),
            effect,
            time_added: added_ago.map(|s| Time(at(-s))),
        });
        self
    }

    /// Sets allocatable (and capacity) of `resource`.
    pub fn resource(mut self, resource: &str, allocatable: &str) -> Self {
        let status = self.status();
        status
            .allocatable
            .insert(resource.into(), Quantity(allocatable.into()));
        status
            .capacity
            .insert(resource.into(), Quantity(allocatable.into()));
        self
    }

    /// Sets allocatable CPU (and capacity).
    pub fn cpu(self, allocatable: &str) -> Self {
        self.resource("cpu", allocatable)
    }

    /// Sets allocatable memory (and capacity).
    pub fn memory(self, allocatable: &str) -> Self {
        self.resource("memory", allocatable)
    }

    /// Sets allocatable CPU without capacity.
    pub fn cpu_without_capacity(mut self, allocatable: &str) -> Self {
        self.status()
            .allocatable
            .insert("cpu".into(), Quantity(allocatable.into()));
        self
    }

    /// Marks the cluster as being deleted.
    pub fn terminating(mut self) -> Self {
        self.0.metadata.deletion_timestamp = Some(Time(at(-10)));
        self
    }

    fn status(&mut self) -> &mut ManagedClusterStatus {
        self.0.status.get_or_insert_default()
    }

    /// The cluster.
    pub fn build(self) -> Arc<ManagedCluster> {
        Arc::new(self.0)
    }
}

/// An exclusive-label cluster set.
pub fn exclusive_set(name: &str) -> Arc<ManagedClusterSet> {
    Arc::new(ManagedClusterSet::new(
        name,
        ManagedClusterSetSpec::default(),
    ))
}

/// A label-selector cluster set; `selector` is the JSON of the label selector (`None`: no
/// selector).
pub fn selector_set(name: &str, selector: Option<Value>) -> Arc<ManagedClusterSet> {
    Arc::new(ManagedClusterSet::new(
        name,
        ManagedClusterSetSpec {
            cluster_selector: Some(ManagedClusterSelector {
                selector_type: SelectorType::LabelSelector,
                label_selector: selector.map(|s| serde_json::from_value(s).unwrap()),
            }),
            managed_namespaces: Vec::new(),
        },
    ))
}

/// A binding of `set` into `namespace`.
pub fn binding(namespace: &str, set: &str) -> Arc<ManagedClusterSetBinding> {
    let mut b = ManagedClusterSetBinding::new(
        set,
        ManagedClusterSetBindingSpec {
            cluster_set: set.into(),
        },
    );
    b.metadata.namespace = Some(namespace.into());
    Arc::new(b)
}

/// An AddOnPlacementScore `resource` of `cluster`, valid until `valid_for` seconds from now.
pub fn score(
    cluster: &str,
    resource: &str,
    items: &[(&str, i32)],
    valid_for: Option<i64>,
) -> Arc<AddOnPlacementScore> {
    let mut s = AddOnPlacementScore::new(resource, Default::default());
    s.metadata.namespace = Some(cluster.into());
    s.status = Some(AddOnPlacementScoreStatus {
        conditions: Vec::new(),
        scores: items
            .iter()
            .map(|(n, v)| AddOnPlacementScoreItem {
                name: (*n).into(),
                value: *v,
            })
            .collect(),
        valid_until: valid_for.map(|s| Time(at(s))),
    });
    Arc::new(s)
}

/// PlacementDecision `<placement>-decision-<n>` in `namespace` listing `clusters`.
pub fn decision(
    namespace: &str,
    placement: &str,
    n: usize,
    clusters: &[&str],
) -> Arc<PlacementDecision> {
    let mut d = PlacementDecision::new(&format!("{placement}-decision-{n}"), Default::default());
    d.metadata = ObjectMeta {
        name: Some(format!("{placement}-decision-{n}")),
        namespace: Some(namespace.into()),
        labels: Some(BTreeMap::from([(
            labels::PLACEMENT.to_string(),
            placement.to_string(),
        )])),
        ..ObjectMeta::default()
    };
    d.status = Some(PlacementDecisionStatus {
        decisions: clusters
            .iter()
            .map(|c| ClusterDecision {
                cluster_name: (*c).into(),
                reason: String::new(),
                score: None,
            })
            .collect(),
    });
    Arc::new(d)
}

/// Placement `name` in [`NS`] with the spec given as JSON. `scoreCoordinate.type` defaults
/// to `BuiltIn` as the CRD schema default of the API server would make it.
pub fn placement(name: &str, mut spec: Value) -> Placement {
    if let Some(configs) = spec
        .pointer_mut("/prioritizerPolicy/configurations")
        .and_then(Value::as_array_mut)
    {
        for c in configs {
            if let Some(sc) = c.get_mut("scoreCoordinate").and_then(Value::as_object_mut) {
                sc.entry("type").or_insert(Value::from("BuiltIn"));
            }
        }
    }
    let spec: PlacementSpec = serde_json::from_value(spec).unwrap();
    let mut p = Placement::new(name, spec);
    p.metadata.namespace = Some(NS.into());
    p.metadata.uid = Some(format!("uid-{name}"));
    p.metadata.generation = Some(1);
    p
}

/// The objects of a test.
#[derive(Clone)]
pub struct World(pub SnapshotInput);

impl World {
    /// Set `default`, bound into [`NS`], with `clusters`.
    pub fn new(clusters: Vec<Arc<ManagedCluster>>) -> Self {
        World(SnapshotInput {
            clusters,
            cluster_sets: vec![exclusive_set("default")],
            bindings: vec![binding(NS, "default")],
            scores: Vec::new(),
            decisions: Vec::new(),
            now: now(),
        })
    }

    /// `n` plain clusters `c00`, `c01`, ... in set `default`.
    pub fn fleet(n: usize) -> Self {
        World::new(
            (0..n)
                .map(|i| cluster(&format!("c{i:02}")).build())
                .collect(),
        )
    }

    /// Adds score objects.
    pub fn scores(mut self, scores: Vec<Arc<AddOnPlacementScore>>) -> Self {
        self.0.scores.extend(scores);
        self
    }

    /// Adds decisions.
    pub fn decisions(mut self, decisions: Vec<Arc<PlacementDecision>>) -> Self {
        self.0.decisions.extend(decisions);
        self
    }

    /// Replaces the sets.
    pub fn sets(mut self, sets: Vec<Arc<ManagedClusterSet>>) -> Self {
        self.0.cluster_sets = sets;
        self
    }

    /// Replaces the bindings.
    pub fn bindings(mut self, bindings: Vec<Arc<ManagedClusterSetBinding>>) -> Self {
        self.0.bindings = bindings;
        self
    }

    /// The snapshot.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(self.0.clone())
    }

    /// Schedules `placement`.
    pub fn schedule(&self, placement: &Placement) -> ScheduleResult {
        schedule(placement, &self.snapshot())
    }

    /// Schedules `placement`, then replaces this placement's decisions in the world with the
    /// result (what the controller would write) and puts the status on the placement.
    pub fn apply(&mut self, placement: &mut Placement) -> ScheduleResult {
        let result = self.schedule(placement);
        let name = placement.metadata.name.clone().unwrap();
        self.0.decisions.retain(|d| {
            d.metadata.namespace.as_deref() != Some(NS)
                || d.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(labels::PLACEMENT))
                    != Some(&name)
        });
        self.0
            .decisions
            .extend(result.decisions.iter().cloned().map(Arc::new));
        placement.status = Some(result.status.clone());
        result
    }
}

/// Selected cluster names, best first.
pub fn selected(result: &ScheduleResult) -> Vec<String> {
    result.selected.iter().map(|c| c.name.to_string()).collect()
}

/// Selected cluster names, sorted.
pub fn selected_sorted(result: &ScheduleResult) -> Vec<String> {
    let mut v = selected(result);
    v.sort();
    v
}

/// The condition `type_` of the result's status.
pub fn condition<'a>(result: &'a ScheduleResult, type_: &str) -> &'a Condition {
    result
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .unwrap()
}

/// (status, reason, message) of `PlacementSatisfied`.
pub fn satisfied(result: &ScheduleResult) -> (String, String, String) {
    let c = condition(result, "PlacementSatisfied");
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

/// (status, reason, message) of `PlacementMisconfigured`.
pub fn misconfigured(result: &ScheduleResult) -> (String, String, String) {
    let c = condition(result, "PlacementMisconfigured");
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

/// Clusters of each PlacementDecision, by decision.
pub fn decision_clusters(result: &ScheduleResult) -> Vec<(String, Vec<String>)> {
    result
        .decisions
        .iter()
        .map(|d| {
            (
                d.metadata.name.clone().unwrap(),
                d.status
                    .as_ref()
                    .unwrap()
                    .decisions
                    .iter()
                    .map(|c| c.cluster_name.clone())
                    .collect(),
            )
        })
        .collect()
}

/// Shorthand for `vec!["a", "b"]` as owned strings.
pub fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}
