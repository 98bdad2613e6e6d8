//! What [`schedule`](super::schedule) returns.

use std::fmt;
use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use ocm_api::cluster::v1::Taint;
use ocm_api::cluster::v1beta1::{PlacementDecision, PlacementStatus};

/// A cluster name, shared with the snapshot.
pub type ClusterName = Arc<str>;

/// The outcome of scheduling one placement against one snapshot.
#[derive(Clone, Debug)]
pub struct ScheduleResult {
    /// Set when the placement must be left alone (nothing else is filled in then).
    pub skipped: Option<SkipReason>,
    /// Number of bindings in the placement's namespace whose set exists.
    pub valid_bindings: usize,
    /// Bound sets intersected with `spec.clusterSets`, sorted.
    pub eligible_cluster_sets: Vec<String>,
    /// Number of clusters in the eligible sets, terminating ones excluded.
    pub available_clusters: usize,
    /// The prioritizers that ran (weight ≠ 0), in a stable order: in `Additive` mode the
    /// defaults (`Balance`, `Steady`) first, then the configured ones in spec order.
    pub prioritizers: Vec<PrioritizerInfo>,
    /// The clusters that passed every filter, with their scores.
    pub ranking: Ranking,
    /// The selected clusters, best first (total descending, then name ascending).
    pub selected: Vec<SelectedCluster>,
    /// How many wanted clusters could not be selected: `numberOfClusters` (or, when it is
    /// unset, the number of feasible clusters) minus the selected ones. Negative when
    /// `numberOfClusters` is negative.
    pub unscheduled: i64,
    /// Clusters of the eligible sets that did not pass, and why.
    pub filtered: Vec<FilteredCluster>,
    /// Selected clusters that the spread policy left out, and why.
    pub spread_rejected: Vec<SpreadRejection>,
    /// The decision groups.
    pub groups: Vec<DecisionGroupResult>,
    /// The PlacementDecisions that must exist (create or update them; delete every other
    /// PlacementDecision labelled with this placement).
    pub decisions: Vec<PlacementDecision>,
    /// The placement's new status. Conditions carry `lastTransitionTime = now`; use
    /// [`merge_conditions`](super::merge_conditions) to keep the times of unchanged ones.
    pub status: PlacementStatus,
    /// Why the spec cannot be scheduled, if it cannot.
    pub misconfiguration: Option<Misconfiguration>,
    /// Non-fatal problems: expired AddOnPlacementScores (upstream turns them into a Warning
    /// `DecisionUpdate` event) and eligible sets whose label selector is invalid.
    pub warnings: Vec<Warning>,
    /// The earliest time the result can change by the clock alone (a toleration expiring, an
    /// AddOnPlacementScore reaching `validUntil`); requeue the placement then.
    pub requeue_at: Option<Timestamp>,
}

/// Why a placement was not scheduled at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// The placement has a deletion timestamp.
    Deleting,
    /// The placement carries `cluster.open-cluster-management.io/experimental-scheduling-disable: "true"`.
    SchedulingDisabled,
}

/// A prioritizer that ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrioritizerInfo {
    /// `Balance`, `Steady`, `ResourceAllocatableCPU`, `ResourceAllocatableMemory` or
    /// `AddOn/<resourceName>/<scoreName>` (upstream's plugin names).
    pub name: String,
    /// Its weight.
    pub weight: i32,
}

/// The feasible clusters (those that passed every filter), by name, with one column of
/// scores per prioritizer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ranking {
    /// `Σ weight × score` per cluster.
    pub totals: Vec<i64>,
    /// `scores[p][i]`: score (−100..100, before weighting) of cluster `i` by prioritizer `p`
    /// of [`ScheduleResult::prioritizers`]. A cluster a prioritizer cannot score (no
    /// allocatable resource, no score object) has 0.
    pub scores: Vec<Vec<i64>>,
    /// The snapshot's cluster names (shared, not copied).
    pub(crate) names: Arc<[ClusterName]>,
    /// Snapshot indices of the feasible clusters, ascending (so by name).
    pub(crate) indices: Vec<u32>,
}

impl Ranking {
    /// Number of feasible clusters.
    pub fn len(&self) -> usize {
        self.indices.len()
    }

    /// Whether no cluster is feasible.
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }

    /// Name of cluster `i`.
    pub fn name(&self, i: usize) -> &str {
        &self.names[self.indices[i] as usize]
    }

    /// Name of cluster `i`, shared.
    pub fn cluster_name(&self, i: usize) -> ClusterName {
        self.names[self.indices[i] as usize].clone()
    }

    /// Names of the feasible clusters, ascending.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.indices
            .iter()
            .map(|&i| self.names[i as usize].as_ref())
    }

    /// Scores of cluster `i`, one per prioritizer.
    pub fn row(&self, i: usize) -> Vec<i64> {
        self.scores.iter().map(|column| column[i]).collect()
    }

    /// Position of `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.indices
            .binary_search_by(|&i| self.names[i as usize].as_ref().cmp(name))
            .ok()
    }

    /// Positions ordered best first: total descending, then name ascending (upstream's
    /// order).
    pub fn best_first(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_unstable_by(|&a, &b| self.totals[b].cmp(&self.totals[a]).then(a.cmp(&b)));
        order
    }
}

/// A selected cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelectedCluster {
    /// Cluster name.
    pub name: ClusterName,
    /// `Σ weight × score`.
    pub total: i64,
    /// Score per prioritizer (same order as [`ScheduleResult::prioritizers`]).
    pub scores: Vec<i64>,
}

/// A cluster of the eligible sets that did not pass the filters.
#[derive(Clone, Debug, PartialEq)]
pub struct FilteredCluster {
    /// Cluster name.
    pub name: ClusterName,
    /// Why.
    pub reason: FilterReason,
}

/// Why a cluster of the eligible sets was filtered out.
#[derive(Clone, Debug, PartialEq)]
pub enum FilterReason {
    /// It has a deletion timestamp.
    Terminating,
    /// None of the predicates matched it (see
    /// [`explain`](super::explain()) for which part of each predicate failed).
    NoPredicateMatched,
    /// One of its taints is not tolerated.
    TaintNotTolerated {
        /// The first taint that is not tolerated.
        taint: Taint,
        /// Whether a toleration matched but its `tolerationSeconds` have run out.
        rejection: TaintRejection,
    },
}

/// Why a taint is not tolerated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaintRejection {
    /// No toleration matches it (or, for `NoSelectIfNew`, the cluster is not already
    /// selected and no toleration matches).
    NoMatchingToleration,
    /// A toleration matches but its `tolerationSeconds`, counted from the taint's
    /// `timeAdded`, are over; `at` is when it expired (absent when the taint has no
    /// `timeAdded`, which upstream treats as long expired).
    TolerationExpired {
        /// Expiry time.
        at: Option<Timestamp>,
    },
}

/// A feasible cluster the spread policy did not select.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpreadRejection {
    /// Cluster name.
    pub name: ClusterName,
    /// Index of the `DoNotSchedule` constraint that kept it out.
    pub constraint: usize,
    /// Why.
    pub reason: SpreadReason,
}

/// Why the spread policy left a feasible cluster out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpreadReason {
    /// The cluster has no value for the constraint's topology key.
    MissingTopologyKey,
    /// Selecting it would push its domain more than `maxSkew` above the least-selected
    /// domain.
    WouldExceedMaxSkew,
}

/// One decision group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecisionGroupResult {
    /// Index (from 0), the `decision-group-index` label.
    pub index: i32,
    /// Name (empty for the groups of leftover clusters), the `decision-group-name` label.
    pub name: String,
    /// Its clusters, sorted by name.
    pub clusters: Vec<ClusterName>,
    /// Names of its PlacementDecisions.
    pub decision_names: Vec<String>,
}

/// A spec the scheduler cannot use; reported as `PlacementMisconfigured=True` with message
/// `<plugin>:<message>` (the plugin is empty for prioritizer and decision-group problems, as
/// upstream).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{plugin}:{message}")]
pub struct Misconfiguration {
    /// `Predicate`, `TaintToleration`, `Spread` or empty.
    pub plugin: String,
    /// What is wrong.
    pub message: String,
}

impl Misconfiguration {
    pub(crate) fn new(plugin: &str, message: impl Into<String>) -> Self {
        Misconfiguration {
            plugin: plugin.to_string(),
            message: message.into(),
        }
    }
}

/// A non-fatal problem found while scoring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// The prioritizer (`AddOn/<resource>/<score>`), empty for set problems.
    pub plugin: String,
    /// What happened, e.g. `AddOnPlacementScores cluster1/demo expired`.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} in plugin {}", self.message, self.plugin)
    }
}

impl ScheduleResult {
    /// A result that leaves the placement alone.
    pub(crate) fn skipped(reason: SkipReason) -> Self {
        ScheduleResult {
            skipped: Some(reason),
            valid_bindings: 0,
            eligible_cluster_sets: Vec::new(),
            available_clusters: 0,
            prioritizers: Vec::new(),
            ranking: Ranking::default(),
            selected: Vec::new(),
            unscheduled: 0,
            filtered: Vec::new(),
            spread_rejected: Vec::new(),
            groups: Vec::new(),
            decisions: Vec::new(),
            status: PlacementStatus::default(),
            misconfiguration: None,
            warnings: Vec::new(),
            requeue_at: None,
        }
    }

    /// Names of the selected clusters, best first.
    pub fn selected_names(&self) -> Vec<&str> {
        self.selected.iter().map(|c| c.name.as_ref()).collect()
    }
}
