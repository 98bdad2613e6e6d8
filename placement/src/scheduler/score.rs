//! Prioritizers: which ones run with which weight, and their scores.
//!
//! Weights (upstream's `getWeights`): mode `Additive` (the default; also an empty mode) starts
//! from `Balance=1, Steady=1` and lets the configurations override or add; mode `Exact` uses
//! only the configurations. A configuration without a weight has weight 1; a built-in listed
//! twice keeps its first position and its last weight; every AddOn configuration counts on its
//! own. Prioritizers with weight 0 do not run (and are not checked). Any other mode, an unknown
//! built-in (including `Spread`, whose job is done by `spreadPolicy` instead), or an AddOn
//! coordinate without `addOn` makes the placement Misconfigured with an empty plugin name.
//!
//! Scores, each within −100..100 and truncated toward zero like Go's `int64(float)`:
//! - `Balance`: for a cluster that appears `n > 0` times in the decisions of *other*
//!   placements, where the busiest cluster appears `max` times:
//!   `2 × trunc(100 × (0.5 − n / max))`; 100 when `n = 0`.
//! - `Steady`: 100 when the cluster is in this placement's decisions, else 0.
//! - `ResourceAllocatableCPU` / `ResourceAllocatableMemory`: over the feasible clusters that
//!   report both allocatable and capacity for the resource,
//!   `trunc((alloc − min) / (max − min) − 0.5) × 2 × 100)`; 100 for all when `max = min`; 0
//!   for clusters without the resource.
//! - `AddOn/<resource>/<score>`: the value of `<score>` in the AddOnPlacementScore
//!   `<resource>` of the cluster's namespace; 0 when the object or the score is missing, or
//!   when `now` is after its `validUntil` (which also yields a Warning). A `validUntil` still
//!   ahead is a requeue time.
//!
//! Total = Σ weight × score.

use k8s_openapi::jiff::Timestamp;
use ocm_api::cluster::names::{PRIORITIZER_MODE_ADDITIVE, PRIORITIZER_MODE_EXACT, prioritizers};
use ocm_api::cluster::v1beta1::{AddOnScore, Placement, ScoreCoordinateType};

use super::result::{Misconfiguration, PrioritizerInfo, Warning};
use super::snapshot::{OwnDecisions, Snapshot};

/// Highest score a prioritizer gives.
const MAX_SCORE: i64 = 100;

/// A prioritizer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Balance,
    Steady,
    Cpu,
    Memory,
    AddOn { resource: String, score: String },
}

/// A prioritizer and its weight.
#[derive(Clone, Debug)]
pub(crate) struct Planned {
    pub(crate) kind: Kind,
    pub(crate) weight: i32,
}

impl Planned {
    /// Upstream's plugin name.
    pub(crate) fn info(&self) -> PrioritizerInfo {
        let name = match &self.kind {
            Kind::Balance => prioritizers::BALANCE.to_string(),
            Kind::Steady => prioritizers::STEADY.to_string(),
            Kind::Cpu => prioritizers::RESOURCE_ALLOCATABLE_CPU.to_string(),
            Kind::Memory => prioritizers::RESOURCE_ALLOCATABLE_MEMORY.to_string(),
            Kind::AddOn { resource, score } => format!("AddOn/{resource}/{score}"),
        };
        PrioritizerInfo {
            name,
            weight: self.weight,
        }
    }
}

enum Coordinate<'a> {
    BuiltIn(&'a str),
    AddOn(Option<&'a AddOnScore>),
}

/// The prioritizers of `placement` with weight ≠ 0, in order.
pub(crate) fn plan(placement: &Placement) -> Result<Vec<Planned>, Misconfiguration> {
    let policy = placement.spec.prioritizer_policy.as_ref();
    let mode = policy.and_then(|p| p.mode.as_deref()).unwrap_or_default();
    let mut entries: Vec<(Coordinate<'_>, i32)> = match mode {
        PRIORITIZER_MODE_EXACT => Vec::new(),
        "" | PRIORITIZER_MODE_ADDITIVE => vec![
            (Coordinate::BuiltIn(prioritizers::BALANCE), 1),
            (Coordinate::BuiltIn(prioritizers::STEADY), 1),
        ],
        other => {
            return Err(Misconfiguration::new(
                "",
                format!("incorrect prioritizer policy mode: {other}"),
            ));
        }
    };
    for config in policy
        .map(|p| p.configurations.as_slice())
        .unwrap_or_default()
    {
        let weight = config.weight.unwrap_or(1);
        let coordinate = &config.score_coordinate;
        match coordinate.type_ {
            ScoreCoordinateType::BuiltIn => {
                let name = coordinate.built_in.as_str();
                match entries
                    .iter_mut()
                    .find(|(c, _)| matches!(c, Coordinate::BuiltIn(n) if *n == name))
                {
                    Some(entry) => entry.1 = weight,
                    None => entries.push((Coordinate::BuiltIn(name), weight)),
                }
            }
            ScoreCoordinateType::AddOn => {
                entries.push((Coordinate::AddOn(coordinate.add_on.as_ref()), weight));
            }
        }
    }
    let mut planned = Vec::with_capacity(entries.len());
    for (coordinate, weight) in entries {
        if weight == 0 {
            continue;
        }
        let kind = match coordinate {
            Coordinate::BuiltIn(prioritizers::BALANCE) => Kind::Balance,
            Coordinate::BuiltIn(prioritizers::STEADY) => Kind::Steady,
            Coordinate::BuiltIn(prioritizers::RESOURCE_ALLOCATABLE_CPU) => Kind::Cpu,
            Coordinate::BuiltIn(prioritizers::RESOURCE_ALLOCATABLE_MEMORY) => Kind::Memory,
            Coordinate::BuiltIn(other) => {
                return Err(Misconfiguration::new(
                    "",
                    format!("incorrect builtin prioritizer: {other}"),
                ));
            }
            Coordinate::AddOn(None) => {
                return Err(Misconfiguration::new("", "addOn should not be empty"));
            }
            Coordinate::AddOn(Some(a)) => Kind::AddOn {
                resource: a.resource_name.clone(),
                score: a.score_name.clone(),
            },
        };
        planned.push(Planned { kind, weight });
    }
    Ok(planned)
}

/// What one prioritizer produced.
pub(crate) struct Column {
    /// Score per feasible cluster.
    pub(crate) scores: Vec<i64>,
    pub(crate) warning: Option<Warning>,
    pub(crate) requeue: Option<Timestamp>,
}

/// Scores `feasible` (ascending snapshot indices) with `planned`.
pub(crate) fn score(
    planned: &Planned,
    snapshot: &Snapshot,
    feasible: &[u32],
    own: Option<&OwnDecisions>,
) -> Column {
    let mut column = Column {
        scores: Vec::new(),
        warning: None,
        requeue: None,
    };
    column.scores = match &planned.kind {
        Kind::Balance => balance(snapshot, feasible, own),
        Kind::Steady => steady(feasible, own),
        Kind::Cpu => allocatable(feasible, |i| snapshot.entry(i).cpu),
        Kind::Memory => allocatable(feasible, |i| snapshot.entry(i).memory),
        Kind::AddOn { resource, score } => {
            let (scores, expired, requeue) = addon(snapshot, feasible, resource, score);
            column.requeue = requeue;
            if !expired.is_empty() {
                column.warning = Some(Warning {
                    plugin: planned.info().name,
                    message: format!("AddOnPlacementScores{expired} expired"),
                });
            }
            scores
        }
    };
    column
}

fn steady(feasible: &[u32], own: Option<&OwnDecisions>) -> Vec<i64> {
    let mine = own.map(|o| o.clusters.as_slice()).unwrap_or_default();
    let mut j = 0;
    feasible
        .iter()
        .map(|&i| {
            while j < mine.len() && mine[j] < i {
                j += 1;
            }
            if j < mine.len() && mine[j] == i {
                MAX_SCORE
            } else {
                0
            }
        })
        .collect()
}

fn balance(snapshot: &Snapshot, feasible: &[u32], own: Option<&OwnDecisions>) -> Vec<i64> {
    let index = &snapshot.decisions;
    let mine = own.map(|o| o.counts.as_slice()).unwrap_or_default();
    let own_count = |id: u32| -> u32 {
        mine.binary_search_by_key(&id, |&(i, _)| i)
            .map(|k| mine[k].1)
            .unwrap_or(0)
    };
    // Highest count over other placements' decisions: scan clusters by total, descending,
    // until the total itself cannot beat the best so far.
    let mut max_count = 0u32;
    for &id in &index.by_total_desc {
        let total = index.totals[id as usize];
        if total <= max_count {
            break;
        }
        max_count = max_count.max(total - own_count(id));
    }
    feasible
        .iter()
        .map(|&i| {
            let total = index.totals.get(i as usize).copied().unwrap_or(0);
            let count = total - if total > 0 { own_count(i) } else { 0 };
            if count == 0 {
                MAX_SCORE
            } else {
                let usage = f64::from(count) / f64::from(max_count);
                2 * ((MAX_SCORE as f64) * (0.5 - usage)) as i64
            }
        })
        .collect()
}

fn allocatable(feasible: &[u32], value: impl Fn(u32) -> Option<f64>) -> Vec<i64> {
    let values: Vec<Option<f64>> = feasible.iter().map(|&i| value(i)).collect();
    let mut min = f64::INFINITY;
    let mut max = f64::NEG_INFINITY;
    for v in values.iter().flatten() {
        min = min.min(*v);
        max = max.max(*v);
    }
    values
        .iter()
        .map(|v| match v {
            None => 0,
            Some(v) if max - min != 0.0 => {
                let ratio = (v - min) / (max - min);
                ((ratio - 0.5) * 2.0 * 100.0) as i64
            }
            Some(_) => MAX_SCORE,
        })
        .collect()
}

/// Scores, the expired objects (` ns/name` each, upstream's message format) and the earliest
/// future `validUntil`.
fn addon(
    snapshot: &Snapshot,
    feasible: &[u32],
    resource: &str,
    score: &str,
) -> (Vec<i64>, String, Option<Timestamp>) {
    let now = snapshot.now;
    let mut expired = String::new();
    let mut requeue: Option<Timestamp> = None;
    let Some(objects) = snapshot.scores.by_resource.get(resource) else {
        return (vec![0; feasible.len()], expired, None);
    };
    let score_id = objects.score_ids.get(score).copied();
    let scores = feasible
        .iter()
        .map(|&i| {
            let Some(slot) = objects.slots.get(i as usize).and_then(Option::as_ref) else {
                return 0;
            };
            if let Some(valid_until) = slot.valid_until {
                if now > valid_until {
                    expired.push_str(&format!(" {}/{resource}", snapshot.entry(i).name));
                    return 0;
                }
                requeue = Some(requeue.map_or(valid_until, |r| r.min(valid_until)));
            }
            // Of duplicate names the last wins, as upstream's loop.
            score_id
                .and_then(|id| slot.items.iter().rev().find(|(k, _)| *k == id))
                .map_or(0, |&(_, v)| i64::from(v))
        })
        .collect();
    (scores, expired, requeue)
}
