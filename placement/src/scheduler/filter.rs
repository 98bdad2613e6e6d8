//! Eligible cluster sets, candidate clusters, and the `Predicate` filter.

use ocm_api::cluster::v1beta1::{ClusterSelector, GroupClusterSelector, Placement};

use super::cel::{CelEnv, CompiledCel, cluster_value};

use super::result::Misconfiguration;
use super::selector::Selector;
use super::snapshot::{ClusterEntry, Snapshot};

/// Plugin name of the predicate filter (prefix of its misconfiguration messages).
pub(crate) const PREDICATE: &str = "Predicate";

/// The sets and clusters a placement may choose from.
pub(crate) struct Eligibility {
    /// Bindings in the namespace whose set exists.
    pub(crate) valid_bindings: usize,
    /// Bound sets ∩ `spec.clusterSets` (when given), sorted.
    pub(crate) sets: Vec<String>,
    /// Members of those sets without a deletion timestamp, ascending index.
    pub(crate) candidates: Vec<u32>,
    /// Members of those sets with a deletion timestamp, ascending index.
    pub(crate) terminating: Vec<u32>,
}

/// Upstream's `GetValidManagedClusterSetBindings`, `GetEligibleClusterSets` and
/// `GetAvailableClusters`.
pub(crate) fn eligibility(placement: &Placement, snapshot: &Snapshot) -> Eligibility {
    let namespace = placement.metadata.namespace.as_deref().unwrap_or_default();
    let bound: Vec<&str> = snapshot
        .bindings
        .get(namespace)
        .map(|list| {
            list.iter()
                .filter(|b| snapshot.sets.contains_key(&b.set))
                .map(|b| b.set.as_str())
                .collect()
        })
        .unwrap_or_default();
    let wanted = &placement.spec.cluster_sets;
    let mut sets: Vec<String> = bound
        .iter()
        .filter(|s| wanted.is_empty() || wanted.iter().any(|w| w == *s))
        .map(|s| s.to_string())
        .collect();
    sets.sort();
    sets.dedup();

    let (candidates, terminating) = match sets.as_slice() {
        [] => (Vec::new(), Vec::new()),
        [only] => snapshot
            .sets
            .get(only)
            .map(|s| (s.members.clone(), s.terminating.clone()))
            .unwrap_or_default(),
        many => {
            // 1: candidate, 2: terminating.
            let mut seen = vec![0u8; snapshot.clusters.len()];
            for name in many {
                if let Some(set) = snapshot.sets.get(name) {
                    for &m in &set.members {
                        seen[m as usize] = 1;
                    }
                    for &m in &set.terminating {
                        seen[m as usize] = 2;
                    }
                }
            }
            let pick = |kind: u8| -> Vec<u32> {
                (0..seen.len() as u32)
                    .filter(|&i| seen[i as usize] == kind)
                    .collect()
            };
            (pick(1), pick(2))
        }
    };
    Eligibility {
        valid_bindings: bound.len(),
        sets,
        candidates,
        terminating,
    }
}

/// A compiled cluster selector: labels AND claims AND every CEL expression.
pub(crate) struct CompiledSelector {
    pub(crate) label: Selector,
    pub(crate) claim: Selector,
    pub(crate) cel: Vec<CompiledCel>,
}

/// Which part of a selector rejected a cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SelectorMiss {
    Label,
    Claim,
    /// Expression `index` was false, or failed with the message.
    Cel {
        index: usize,
        error: Option<String>,
    },
}

impl CompiledSelector {
    /// Compiles a predicate's selector (upstream's `NewClusterSelector` + `Compile`): label
    /// selector, claim selector, then each CEL expression; the first error wins. The CEL
    /// environment is built only when there are expressions.
    pub(crate) fn compile(selector: &ClusterSelector, snapshot: &Snapshot) -> Result<Self, String> {
        let label = Selector::from_label_selector(
            selector.label_selector.as_ref(),
            Selector::everything(),
        )?;
        let claim = match &selector.claim_selector {
            Some(c) => Selector::from_expressions(&c.match_expressions)?,
            None => Selector::everything(),
        };
        let expressions = selector
            .cel_selector
            .as_ref()
            .map(|c| c.cel_expressions.as_slice())
            .unwrap_or_default();
        let cel = if expressions.is_empty() {
            Vec::new()
        } else {
            let env = snapshot.cel_env();
            expressions
                .iter()
                .map(|e| env.compile(e))
                .collect::<Result<Vec<_>, _>>()?
        };
        Ok(CompiledSelector { label, claim, cel })
    }

    /// Compiles a decision group's selector (labels and claims only).
    pub(crate) fn compile_group(selector: &GroupClusterSelector) -> Result<Self, String> {
        let label = Selector::from_label_selector(
            selector.label_selector.as_ref(),
            Selector::everything(),
        )?;
        let claim = match &selector.claim_selector {
            Some(c) => Selector::from_expressions(&c.match_expressions)?,
            None => Selector::everything(),
        };
        Ok(CompiledSelector {
            label,
            claim,
            cel: Vec::new(),
        })
    }

    /// Whether `entry` matches; `Err` says which part did not.
    pub(crate) fn check(
        &self,
        entry: &ClusterEntry,
        env: Option<&CelEnv>,
    ) -> Result<(), SelectorMiss> {
        if !self.label.matches_map(entry.labels()) {
            return Err(SelectorMiss::Label);
        }
        if !self.claim.matches_map(&entry.claims) {
            return Err(SelectorMiss::Claim);
        }
        if self.cel.is_empty() {
            return Ok(());
        }
        let Some(env) = env else {
            return Err(SelectorMiss::Cel {
                index: 0,
                error: Some("no CEL environment".into()),
            });
        };
        // Borrow the cluster's cached CEL value (or build one if it is in use elsewhere).
        let mut slot = entry.cel_value.try_lock().ok();
        let cached = slot.as_mut().and_then(|s| s.take());
        let value = match cached {
            Some(v) => v,
            None => cluster_value(&entry.cluster).map_err(|e| SelectorMiss::Cel {
                index: 0,
                error: Some(e),
            })?,
        };
        let ctx = env.bind(value);
        let mut outcome = Ok(());
        for (index, expr) in self.cel.iter().enumerate() {
            match expr.evaluate(&ctx) {
                Ok(true) => {}
                Ok(false) => {
                    outcome = Err(SelectorMiss::Cel { index, error: None });
                    break;
                }
                Err(e) => {
                    outcome = Err(SelectorMiss::Cel {
                        index,
                        error: Some(e),
                    });
                    break;
                }
            }
        }
        if let Some(slot) = slot.as_mut() {
            **slot = CelEnv::unbind(ctx);
        }
        outcome
    }

    /// Whether `entry` matches.
    pub(crate) fn matches(&self, entry: &ClusterEntry, env: Option<&CelEnv>) -> bool {
        self.check(entry, env).is_ok()
    }

    /// Whether the selector matches every cluster.
    fn is_everything(&self) -> bool {
        self.label.is_everything() && self.claim.is_everything() && self.cel.is_empty()
    }
}

/// The compiled predicates of a placement. Upstream compiles them only when there are
/// predicates and candidate clusters, so a bad selector is reported only then.
pub(crate) fn compile_predicates(
    placement: &Placement,
    snapshot: &Snapshot,
) -> Result<Vec<CompiledSelector>, Misconfiguration> {
    let empty = ClusterSelector::default();
    placement
        .spec
        .predicates
        .iter()
        .map(|p| {
            let selector = p.required_cluster_selector.as_ref().unwrap_or(&empty);
            CompiledSelector::compile(selector, snapshot)
                .map_err(|e| Misconfiguration::new(PREDICATE, e))
        })
        .collect()
}

/// Splits `candidates` into those matching at least one predicate and the rest.
pub(crate) fn apply_predicates(
    predicates: &[CompiledSelector],
    candidates: &[u32],
    snapshot: &Snapshot,
) -> (Vec<u32>, Vec<u32>) {
    if predicates.is_empty() || predicates.iter().any(CompiledSelector::is_everything) {
        return (candidates.to_vec(), Vec::new());
    }
    let env = snapshot.cel.get();
    candidates
        .iter()
        .partition(|&&i| predicates.iter().any(|p| p.matches(snapshot.entry(i), env)))
}
