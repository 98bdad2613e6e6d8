//! The scheduling pipeline: eligibility, filters, prioritizers, selection, groups,
//! decisions, status.

use k8s_openapi::jiff::Timestamp;
use ocm_api::cluster::names::annotations;
use ocm_api::cluster::v1beta1::{Placement, PlacementStatus};

use super::decisions;
use super::filter;
use super::groups;
use super::result::{
    FilterReason, FilteredCluster, Misconfiguration, Ranking, ScheduleResult, SelectedCluster,
    SkipReason, SpreadRejection, Warning,
};
use super::score::{self, Planned};
use super::select;
use super::snapshot::{OwnDecisions, Snapshot};
use super::spread;
use super::status::{self, Satisfaction, merge_conditions};
use super::taints::{self, Verdict};

/// What the filters and prioritizers produced.
struct Scored {
    /// Snapshot indices of the clusters that passed, ascending.
    feasible: Vec<u32>,
    planned: Vec<Planned>,
    /// One column per prioritizer.
    columns: Vec<Vec<i64>>,
    totals: Vec<i64>,
    warnings: Vec<Warning>,
    requeue: Option<Timestamp>,
}

fn earliest(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// Schedules `placement` against `snapshot`. Pure: reads nothing else, writes nothing.
///
/// See the [module documentation](super) for the algorithm.
pub fn schedule(placement: &Placement, snapshot: &Snapshot) -> ScheduleResult {
    if placement.metadata.deletion_timestamp.is_some() {
        return ScheduleResult::skipped(SkipReason::Deleting);
    }
    let disabled = placement
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(annotations::EXPERIMENTAL_SCHEDULING_DISABLE))
        .is_some_and(|v| v == "true");
    if disabled {
        return ScheduleResult::skipped(SkipReason::SchedulingDisabled);
    }
    let namespace = placement.metadata.namespace.as_deref().unwrap_or_default();
    let name = placement.metadata.name.as_deref().unwrap_or_default();
    let own = snapshot.decisions.own(namespace, name);
    let eligibility = filter::eligibility(placement, snapshot);

    let mut filtered: Vec<FilteredCluster> = eligibility
        .terminating
        .iter()
        .map(|&i| FilteredCluster {
            name: snapshot.entry(i).name.clone(),
            reason: FilterReason::Terminating,
        })
        .collect();

    let number_of_clusters = placement.spec.number_of_clusters;
    let mut misconfiguration: Option<Misconfiguration> = None;
    let mut ranking = Ranking::default();
    let mut prioritizers = Vec::new();
    let mut selected_positions: Vec<usize> = Vec::new();
    let mut spread_rejected = Vec::new();
    let mut warnings: Vec<Warning> = eligibility
        .sets
        .iter()
        .filter_map(|set| {
            let error = snapshot.sets.get(set)?.error.as_ref()?;
            Some(Warning {
                plugin: String::new(),
                message: format!(
                    "ManagedClusterSet {set} selects no cluster: invalid labelSelector: {error}"
                ),
            })
        })
        .collect();
    let mut requeue_at = None;
    let mut unscheduled = i64::from(number_of_clusters.unwrap_or(0));

    match filter_and_score(
        placement,
        snapshot,
        &eligibility.candidates,
        own,
        &mut filtered,
    ) {
        Err(m) => misconfiguration = Some(m),
        Ok(scored) => {
            prioritizers = scored.planned.iter().map(Planned::info).collect();
            warnings.extend(scored.warnings);
            let feasible_count = scored.feasible.len();
            let wanted = match number_of_clusters {
                Some(n) => usize::try_from(n).unwrap_or(0),
                None => feasible_count,
            };
            let terms = placement
                .spec
                .spread_policy
                .as_ref()
                .map(|p| p.spread_constraints.as_slice())
                .unwrap_or_default();
            if terms.is_empty() {
                selected_positions = select::top(&scored.totals, wanted);
                requeue_at = scored.requeue;
            } else if let Err(m) = spread::validate(terms) {
                misconfiguration = Some(m);
            } else {
                requeue_at = scored.requeue;
                let outcome =
                    spread::select(terms, snapshot, &scored.feasible, &scored.totals, wanted);
                selected_positions = outcome.selected;
                spread_rejected = outcome
                    .rejected
                    .into_iter()
                    .map(|(pos, constraint, reason)| SpreadRejection {
                        name: snapshot.entry(scored.feasible[pos]).name.clone(),
                        constraint,
                        reason,
                    })
                    .collect();
            }
            unscheduled = match number_of_clusters {
                Some(n) => i64::from(n) - selected_positions.len() as i64,
                None => (feasible_count - selected_positions.len()) as i64,
            };
            ranking = Ranking {
                names: snapshot.names.clone(),
                totals: scored.totals,
                scores: scored.columns,
                indices: scored.feasible,
            };
        }
    }

    let selected: Vec<SelectedCluster> = selected_positions
        .iter()
        .map(|&p| SelectedCluster {
            name: ranking.cluster_name(p),
            total: ranking.totals[p],
            scores: ranking.row(p),
        })
        .collect();
    let selected_indices: Vec<u32> = selected_positions
        .iter()
        .map(|&p| ranking.indices[p])
        .collect();

    let (groups, group_problem) = groups::build(placement, snapshot, &selected_indices);
    if group_problem.is_some() {
        misconfiguration = group_problem;
    }
    let (decisions, group_statuses, groups) = decisions::build(placement, snapshot, &groups);

    let now = snapshot.now;
    let generation = placement.metadata.generation;
    let satisfied = status::satisfied(
        &Satisfaction {
            cluster_sets_in_spec: &placement.spec.cluster_sets,
            eligible_sets: &eligibility.sets,
            valid_bindings: eligibility.valid_bindings,
            available_clusters: eligibility.candidates.len(),
            selected: selected.len(),
            unscheduled,
        },
        now,
        generation,
    );
    let misconfigured = status::misconfigured(misconfiguration.as_ref(), now, generation);
    let previous = placement.status.clone().unwrap_or_default();
    let status = PlacementStatus {
        number_of_selected_clusters: selected.len() as i32,
        decision_groups: group_statuses,
        conditions: merge_conditions(&previous.conditions, &[misconfigured, satisfied]),
        ..previous
    };

    ScheduleResult {
        skipped: None,
        valid_bindings: eligibility.valid_bindings,
        eligible_cluster_sets: eligibility.sets,
        available_clusters: eligibility.candidates.len(),
        prioritizers,
        ranking,
        selected,
        unscheduled,
        filtered,
        spread_rejected,
        groups,
        decisions,
        status,
        misconfiguration,
        warnings,
        requeue_at,
    }
}

/// Upstream's `Schedule` up to the scores: Predicate, TaintToleration, then the
/// prioritizers. The first misconfiguration stops it.
fn filter_and_score(
    placement: &Placement,
    snapshot: &Snapshot,
    candidates: &[u32],
    own: Option<&OwnDecisions>,
    filtered: &mut Vec<FilteredCluster>,
) -> Result<Scored, Misconfiguration> {
    let mut passed = candidates.to_vec();
    if !placement.spec.predicates.is_empty() && !candidates.is_empty() {
        let predicates = filter::compile_predicates(placement, snapshot)?;
        let (matched, rejected) = filter::apply_predicates(&predicates, candidates, snapshot);
        filtered.extend(rejected.into_iter().map(|i| FilteredCluster {
            name: snapshot.entry(i).name.clone(),
            reason: FilterReason::NoPredicateMatched,
        }));
        passed = matched;
    }

    let mut requeue = None;
    let mut feasible = Vec::with_capacity(passed.len());
    if !passed.is_empty() {
        let tolerations = &placement.spec.tolerations;
        taints::validate(tolerations)?;
        let mine = own.map(|o| o.clusters.as_slice()).unwrap_or_default();
        for i in passed {
            let entry = snapshot.entry(i);
            if !entry.tainted {
                feasible.push(i);
                continue;
            }
            let in_decisions = mine.binary_search(&i).is_ok();
            match taints::check(&entry.cluster, tolerations, in_decisions, snapshot.now) {
                Verdict::Tolerated { expires } => {
                    feasible.push(i);
                    requeue = earliest(requeue, expires);
                }
                Verdict::Rejected { taint, rejection } => filtered.push(FilteredCluster {
                    name: entry.name.clone(),
                    reason: FilterReason::TaintNotTolerated {
                        taint: entry.cluster.spec.taints[taint].clone(),
                        rejection,
                    },
                }),
            }
        }
    }

    let planned = score::plan(placement)?;
    let mut totals = vec![0i64; feasible.len()];
    let mut columns = Vec::with_capacity(planned.len());
    let mut warnings = Vec::new();
    for p in &planned {
        let column = score::score(p, snapshot, &feasible, own);
        let weight = i64::from(p.weight);
        for (total, s) in totals.iter_mut().zip(&column.scores) {
            *total += s * weight;
        }
        warnings.extend(column.warning);
        requeue = earliest(requeue, column.requeue);
        columns.push(column.scores);
    }
    Ok(Scored {
        feasible,
        planned,
        columns,
        totals,
        warnings,
        requeue,
    })
}
