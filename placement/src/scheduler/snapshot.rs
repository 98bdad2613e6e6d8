//! The scheduler's input: every object a placement decision depends on, indexed once so that
//! many placements can be scheduled against it cheaply.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use kube_cel::cel::common::value::Val;

use k8s_openapi::jiff::Timestamp;
use ocm_api::cluster::names::{RESOURCE_CPU, RESOURCE_MEMORY, labels};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1alpha1::AddOnPlacementScore;
use ocm_api::cluster::v1beta1::PlacementDecision;
use ocm_api::cluster::v1beta2::{ManagedClusterSet, ManagedClusterSetBinding, SelectorType};

use super::cel::CelEnv;
use super::quantity;
use super::scores::{ResourceScores, ScoreIndex, ScoreSlot};
use super::selector::Selector;

/// The objects a snapshot is built from. Objects are shared (`Arc`), never cloned.
#[derive(Clone, Debug, Default)]
pub struct SnapshotInput {
    /// All ManagedClusters. Clusters without a name are ignored; of two clusters with the same
    /// name the first wins.
    pub clusters: Vec<Arc<ManagedCluster>>,
    /// All ManagedClusterSets.
    pub cluster_sets: Vec<Arc<ManagedClusterSet>>,
    /// All ManagedClusterSetBindings, of every namespace.
    pub bindings: Vec<Arc<ManagedClusterSetBinding>>,
    /// All AddOnPlacementScores (each lives in the namespace of the cluster it scores).
    pub scores: Vec<Arc<AddOnPlacementScore>>,
    /// All PlacementDecisions, of every placement: a placement's own decisions (found by the
    /// `cluster.open-cluster-management.io/placement` label in its namespace) feed `Steady` and
    /// `NoSelectIfNew`, the others feed `Balance`.
    pub decisions: Vec<Arc<PlacementDecision>>,
    /// The time the scheduler treats as now (toleration expiry, score validity).
    pub now: Timestamp,
}

/// An indexed, immutable view of the hub's objects for scheduling.
///
/// Built once per change of the inputs with [`Snapshot::new`]; [`schedule`](super::schedule)
/// then costs roughly linear time in the candidate clusters of one placement. Cluster
/// membership of every set, per-cluster claims and allocatable resources, decision counts per
/// cluster and the score objects per cluster are computed here, not per placement.
pub struct Snapshot {
    pub(crate) now: Timestamp,
    /// Clusters sorted by name; a cluster's position is its index everywhere else.
    pub(crate) clusters: Vec<ClusterEntry>,
    /// Cluster names by index, shared with results.
    pub(crate) names: Arc<[Arc<str>]>,
    pub(crate) sets: HashMap<String, SetEntry>,
    /// Bindings by namespace.
    pub(crate) bindings: HashMap<String, Vec<BindingEntry>>,
    pub(crate) scores: Arc<ScoreIndex>,
    pub(crate) decisions: DecisionIndex,
    pub(crate) cel: OnceLock<CelEnv>,
}

/// One cluster and what the scheduler reads from it, precomputed.
pub(crate) struct ClusterEntry {
    pub(crate) name: Arc<str>,
    pub(crate) cluster: Arc<ManagedCluster>,
    /// Claims by name (of duplicate names the last wins, as upstream).
    pub(crate) claims: BTreeMap<String, String>,
    pub(crate) terminating: bool,
    /// Whether the cluster has taints.
    pub(crate) tainted: bool,
    /// Allocatable CPU, when both allocatable and capacity report it.
    pub(crate) cpu: Option<f64>,
    /// Allocatable memory, when both allocatable and capacity report it.
    pub(crate) memory: Option<f64>,
    /// The cluster as a CEL value, built on first use by a CEL predicate and lent to each
    /// evaluation (a CEL context must own its variables).
    pub(crate) cel_value: Mutex<Option<Box<dyn Val>>>,
}

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

impl ClusterEntry {
    /// The cluster's labels.
    pub(crate) fn labels(&self) -> &BTreeMap<String, String> {
        self.cluster.metadata.labels.as_ref().unwrap_or(&NO_LABELS)
    }

    /// The value of a label.
    pub(crate) fn label(&self, key: &str) -> Option<&str> {
        self.labels().get(key).map(String::as_str)
    }

    /// The value of a claim.
    pub(crate) fn claim(&self, name: &str) -> Option<&str> {
        self.claims.get(name).map(String::as_str)
    }
}

/// A cluster set and its members.
pub(crate) struct SetEntry {
    /// Member cluster indices without a deletion timestamp, ascending.
    pub(crate) members: Vec<u32>,
    /// Member cluster indices with a deletion timestamp, ascending.
    pub(crate) terminating: Vec<u32>,
    /// Why the set's selector could not be used (its members are then empty).
    pub(crate) error: Option<String>,
}

/// A binding of a set into a namespace.
#[derive(Clone, Debug)]
pub(crate) struct BindingEntry {
    /// The bound set: the binding's name (which the webhook forces to equal
    /// `spec.clusterSet`), or `spec.clusterSet` when the name is missing. As upstream, a
    /// binding counts when its set exists; its `Bound` condition is not consulted.
    pub(crate) set: String,
}

/// PlacementDecisions, counted per cluster.
#[derive(Default)]
pub(crate) struct DecisionIndex {
    /// Decisions of each placement: namespace → placement name → clusters.
    pub(crate) by_placement: HashMap<String, HashMap<String, OwnDecisions>>,
    /// How often each name id appears over all decisions. Ids below the cluster count are
    /// cluster indices; higher ids are names of clusters not in the snapshot.
    pub(crate) totals: Vec<u32>,
    /// Name ids with a non-zero total, highest total first.
    pub(crate) by_total_desc: Vec<u32>,
}

/// The decisions of one placement.
#[derive(Default)]
pub(crate) struct OwnDecisions {
    /// Distinct indices of the known clusters in them, ascending.
    pub(crate) clusters: Vec<u32>,
    /// How often each name id appears in them.
    pub(crate) counts: Vec<(u32, u32)>,
}

impl DecisionIndex {
    /// The decisions of placement `namespace/name`, if any.
    pub(crate) fn own(&self, namespace: &str, name: &str) -> Option<&OwnDecisions> {
        self.by_placement.get(namespace).and_then(|m| m.get(name))
    }
}

impl Snapshot {
    /// Indexes `input`.
    pub fn new(input: SnapshotInput) -> Snapshot {
        let SnapshotInput {
            clusters,
            cluster_sets,
            bindings,
            scores,
            decisions,
            now,
        } = input;

        let clusters = index_clusters(clusters);
        let cluster_index: HashMap<Arc<str>, u32> = clusters
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.clone(), i as u32))
            .collect();
        let sets = index_sets(&cluster_sets, &clusters);
        let bindings = index_bindings(&bindings);
        let decisions = index_decisions(&decisions, &cluster_index);
        let by_resource = index_scores(scores, &cluster_index);
        let scores = Arc::new(ScoreIndex {
            cluster_index,
            by_resource,
        });
        let names = clusters.iter().map(|c| c.name.clone()).collect();
        Snapshot {
            now,
            clusters,
            names,
            sets,
            bindings,
            scores,
            decisions,
            cel: OnceLock::new(),
        }
    }

    /// The time the snapshot treats as now.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// Number of clusters in the snapshot.
    pub fn cluster_count(&self) -> usize {
        self.clusters.len()
    }

    /// The clusters, sorted by name.
    pub fn clusters(&self) -> impl Iterator<Item = &ManagedCluster> {
        self.clusters.iter().map(|c| c.cluster.as_ref())
    }

    /// The cluster named `name`.
    pub fn cluster(&self, name: &str) -> Option<&ManagedCluster> {
        self.index_of(name)
            .map(|i| self.clusters[i as usize].cluster.as_ref())
    }

    /// Names of the sets `name` belongs to, sorted.
    pub fn sets_of(&self, name: &str) -> Vec<String> {
        let Some(index) = self.index_of(name) else {
            return Vec::new();
        };
        let mut out: Vec<String> = self
            .sets
            .iter()
            .filter(|(_, set)| {
                set.members.binary_search(&index).is_ok()
                    || set.terminating.binary_search(&index).is_ok()
            })
            .map(|(name, _)| name.clone())
            .collect();
        out.sort();
        out
    }

    pub(crate) fn index_of(&self, name: &str) -> Option<u32> {
        self.scores.cluster_index.get(name).copied()
    }

    pub(crate) fn entry(&self, index: u32) -> &ClusterEntry {
        &self.clusters[index as usize]
    }

    /// The CEL environment, built on first use.
    pub(crate) fn cel_env(&self) -> &CelEnv {
        self.cel.get_or_init(|| CelEnv::new(self.scores.clone()))
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("now", &self.now)
            .field("clusters", &self.clusters.len())
            .field("sets", &self.sets.len())
            .field("binding_namespaces", &self.bindings.len())
            .finish_non_exhaustive()
    }
}

fn index_clusters(clusters: Vec<Arc<ManagedCluster>>) -> Vec<ClusterEntry> {
    let mut seen = HashSet::new();
    let mut entries: Vec<ClusterEntry> = clusters
        .into_iter()
        .filter_map(|cluster| {
            let name: Arc<str> = Arc::from(cluster.metadata.name.as_deref()?);
            if !seen.insert(name.clone()) {
                return None;
            }
            let status = cluster.status.as_ref();
            let mut claims = BTreeMap::new();
            if let Some(status) = status {
                for claim in &status.cluster_claims {
                    claims.insert(claim.name.clone(), claim.value.clone());
                }
            }
            let resource = |key: &str| -> Option<f64> {
                let status = status?;
                let allocatable = status.allocatable.get(key)?;
                status.capacity.get(key)?;
                quantity::approximate_f64(&allocatable.0)
            };
            Some(ClusterEntry {
                terminating: cluster.metadata.deletion_timestamp.is_some(),
                tainted: !cluster.spec.taints.is_empty(),
                cpu: resource(RESOURCE_CPU),
                memory: resource(RESOURCE_MEMORY),
                claims,
                name,
                cluster,
                cel_value: Mutex::new(None),
            })
        })
        .collect();
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    entries
}

fn index_sets(
    sets: &[Arc<ManagedClusterSet>],
    clusters: &[ClusterEntry],
) -> HashMap<String, SetEntry> {
    let mut out = HashMap::with_capacity(sets.len());
    // Exclusive sets, all at once: group clusters by their set label.
    let mut by_label: HashMap<&str, Vec<u32>> = HashMap::new();
    for (i, c) in clusters.iter().enumerate() {
        if let Some(set) = c.label(labels::CLUSTER_SET) {
            by_label.entry(set).or_default().push(i as u32);
        }
    }
    for set in sets {
        let Some(name) = set.metadata.name.clone() else {
            continue;
        };
        let selector = set.spec.cluster_selector.as_ref();
        let (members, error) = match selector.map(|s| s.selector_type).unwrap_or_default() {
            SelectorType::ExclusiveClusterSetLabel => (
                by_label.get(name.as_str()).cloned().unwrap_or_default(),
                None,
            ),
            SelectorType::LabelSelector => {
                let label_selector = selector.and_then(|s| s.label_selector.as_ref());
                match Selector::from_label_selector(label_selector, Selector::Nothing) {
                    Ok(selector) => (
                        clusters
                            .iter()
                            .enumerate()
                            .filter(|(_, c)| selector.matches_map(c.labels()))
                            .map(|(i, _)| i as u32)
                            .collect(),
                        None,
                    ),
                    Err(error) => (Vec::new(), Some(error)),
                }
            }
        };
        let (terminating, members): (Vec<u32>, Vec<u32>) = members
            .into_iter()
            .partition(|&i| clusters[i as usize].terminating);
        let entry = SetEntry {
            members,
            terminating,
            error,
        };
        out.insert(name, entry);
    }
    out
}

fn index_bindings(
    bindings: &[Arc<ManagedClusterSetBinding>],
) -> HashMap<String, Vec<BindingEntry>> {
    let mut out: HashMap<String, Vec<BindingEntry>> = HashMap::new();
    for binding in bindings {
        let namespace = binding.metadata.namespace.clone().unwrap_or_default();
        let set = binding
            .metadata
            .name
            .clone()
            .unwrap_or_else(|| binding.spec.cluster_set.clone());
        out.entry(namespace).or_default().push(BindingEntry { set });
    }
    for list in out.values_mut() {
        list.sort_by(|a, b| a.set.cmp(&b.set));
        list.dedup_by(|a, b| a.set == b.set);
    }
    out
}

fn index_decisions(
    decisions: &[Arc<PlacementDecision>],
    cluster_index: &HashMap<Arc<str>, u32>,
) -> DecisionIndex {
    let known = cluster_index.len() as u32;
    let mut extra: HashMap<&str, u32> = HashMap::new();
    let mut totals: Vec<u32> = vec![0; known as usize];
    let mut own_counts: HashMap<(String, String), HashMap<u32, u32>> = HashMap::new();
    for decision in decisions {
        let placement = decision
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(labels::PLACEMENT));
        let namespace = decision.metadata.namespace.clone().unwrap_or_default();
        let mut own = placement.map(|p| own_counts.entry((namespace, p.clone())).or_default());
        let Some(status) = decision.status.as_ref() else {
            continue;
        };
        for d in &status.decisions {
            let id = match cluster_index.get(d.cluster_name.as_str()) {
                Some(&i) => i,
                None => {
                    let next = known + extra.len() as u32;
                    *extra.entry(d.cluster_name.as_str()).or_insert(next)
                }
            };
            if id as usize >= totals.len() {
                totals.resize(id as usize + 1, 0);
            }
            totals[id as usize] += 1;
            if let Some(own) = own.as_mut() {
                *own.entry(id).or_default() += 1;
            }
        }
    }
    let mut by_placement: HashMap<String, HashMap<String, OwnDecisions>> = HashMap::new();
    for ((namespace, placement), counts) in own_counts {
        let mut counts: Vec<(u32, u32)> = counts.into_iter().collect();
        counts.sort_unstable();
        let clusters = counts
            .iter()
            .map(|&(id, _)| id)
            .filter(|&id| id < known)
            .collect();
        by_placement
            .entry(namespace)
            .or_default()
            .insert(placement, OwnDecisions { clusters, counts });
    }
    let mut by_total_desc: Vec<u32> = (0..totals.len() as u32)
        .filter(|&id| totals[id as usize] > 0)
        .collect();
    by_total_desc
        .sort_unstable_by(|&a, &b| totals[b as usize].cmp(&totals[a as usize]).then(a.cmp(&b)));
    DecisionIndex {
        by_placement,
        totals,
        by_total_desc,
    }
}

fn index_scores(
    scores: Vec<Arc<AddOnPlacementScore>>,
    cluster_index: &HashMap<Arc<str>, u32>,
) -> HashMap<String, ResourceScores> {
    let mut out: HashMap<String, ResourceScores> = HashMap::new();
    for score in scores {
        let (Some(namespace), Some(name)) = (
            score.metadata.namespace.as_deref(),
            score.metadata.name.as_deref(),
        ) else {
            continue;
        };
        let Some(&index) = cluster_index.get(namespace) else {
            continue;
        };
        let resource = out
            .entry(name.to_string())
            .or_insert_with(|| ResourceScores {
                score_ids: HashMap::new(),
                slots: std::iter::repeat_with(|| None)
                    .take(cluster_index.len())
                    .collect(),
            });
        let status = score.status.as_ref();
        let items = status
            .map(|s| s.scores.as_slice())
            .unwrap_or_default()
            .iter()
            .map(|item| {
                let next = resource.score_ids.len() as u32;
                let id = *resource.score_ids.entry(item.name.clone()).or_insert(next);
                (id, item.value)
            })
            .collect();
        let valid_until = status.and_then(|s| s.valid_until.as_ref()).map(|t| t.0);
        resource.slots[index as usize] = Some(ScoreSlot {
            object: score,
            valid_until,
            items,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{Snapshot, SnapshotInput};

    fn shared<T: Send + Sync>(_: &T) {}

    #[test]
    fn snapshot_can_be_shared_between_threads() {
        let snapshot = Snapshot::new(SnapshotInput::default());
        shared(&snapshot);
        let _ = snapshot.cel_env();
        shared(&snapshot);
    }
}
