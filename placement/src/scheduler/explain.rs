//! Why each cluster was or was not chosen (for `ocm explain placement`).

use std::collections::HashMap;
use std::fmt;

use ocm_api::cluster::v1::Taint;
use ocm_api::cluster::v1beta1::Placement;

use super::filter::{self, SelectorMiss};
use super::result::{FilterReason, ScheduleResult, SpreadReason, TaintRejection};
use super::schedule::schedule;
use super::snapshot::Snapshot;

/// A schedule result with a verdict for every cluster of the snapshot.
#[derive(Clone, Debug)]
pub struct Explanation {
    /// The result of [`schedule`](super::schedule()).
    pub result: ScheduleResult,
    /// One entry per cluster of the snapshot, by name.
    pub clusters: Vec<ClusterExplanation>,
}

/// The verdict on one cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterExplanation {
    /// Cluster name.
    pub cluster: String,
    /// What happened to it.
    pub verdict: ClusterVerdict,
}

/// What happened to a cluster.
#[derive(Clone, Debug, PartialEq)]
pub enum ClusterVerdict {
    /// It is in none of the placement's eligible sets; `member_of` lists the sets it is in.
    NotInEligibleSets {
        /// Sets the cluster belongs to, sorted.
        member_of: Vec<String>,
    },
    /// It has a deletion timestamp.
    Terminating,
    /// No predicate matched; for each predicate, the first part that failed.
    PredicatesNotMatched {
        /// One entry per predicate.
        misses: Vec<PredicateMiss>,
    },
    /// A taint is not tolerated.
    TaintNotTolerated {
        /// The taint.
        taint: Taint,
        /// Why.
        rejection: TaintRejection,
    },
    /// Eligible, but scheduling stopped before it (misconfigured or skipped placement).
    NotEvaluated,
    /// It passed the filters and was scored.
    Scored {
        /// Score of each prioritizer.
        scores: Vec<PrioritizerScore>,
        /// `Σ weight × score`.
        total: i64,
        /// Rank among the feasible clusters, from 1.
        rank: usize,
        /// Whether it was selected.
        outcome: ScoredOutcome,
    },
}

/// Why a predicate did not match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PredicateMiss {
    /// Index of the predicate.
    pub predicate: usize,
    /// The part that failed.
    pub part: PredicatePart,
}

/// The part of a predicate that failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PredicatePart {
    /// The label selector.
    LabelSelector,
    /// The claim selector.
    ClaimSelector,
    /// A CEL expression returned false or failed.
    CelExpression {
        /// Index of the expression.
        index: usize,
        /// The expression.
        expression: String,
        /// The evaluation error, if it failed.
        error: Option<String>,
    },
}

/// One prioritizer's score of a cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrioritizerScore {
    /// Prioritizer name.
    pub name: String,
    /// Its weight.
    pub weight: i32,
    /// Its score (before weighting).
    pub score: i64,
}

/// Whether a scored cluster was selected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScoredOutcome {
    /// Selected.
    Selected,
    /// Ranked below the clusters that were selected.
    NotSelected,
    /// Left out by spread constraint `constraint`.
    SpreadRejected {
        /// Constraint index.
        constraint: usize,
        /// Why.
        reason: SpreadReason,
    },
}

/// Schedules `placement` and explains the verdict on every cluster of `snapshot`.
pub fn explain(placement: &Placement, snapshot: &Snapshot) -> Explanation {
    let result = schedule(placement, snapshot);
    let eligibility = filter::eligibility(placement, snapshot);
    let filtered: HashMap<&str, &FilterReason> = result
        .filtered
        .iter()
        .map(|f| (f.name.as_ref(), &f.reason))
        .collect();
    let spread: HashMap<&str, (usize, SpreadReason)> = result
        .spread_rejected
        .iter()
        .map(|r| (r.name.as_ref(), (r.constraint, r.reason)))
        .collect();
    let selected: HashMap<&str, ()> = result
        .selected
        .iter()
        .map(|s| (s.name.as_ref(), ()))
        .collect();
    let mut rank_of = vec![0; result.ranking.len()];
    for (rank, pos) in result.ranking.best_first().into_iter().enumerate() {
        rank_of[pos] = rank + 1;
    }
    let predicates = if filtered
        .values()
        .any(|r| matches!(r, FilterReason::NoPredicateMatched))
    {
        filter::compile_predicates(placement, snapshot).unwrap_or_default()
    } else {
        Vec::new()
    };

    let clusters = snapshot
        .clusters
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let name = entry.name.as_ref();
            let verdict = if let Some(reason) = filtered.get(name) {
                match reason {
                    FilterReason::Terminating => ClusterVerdict::Terminating,
                    FilterReason::TaintNotTolerated { taint, rejection } => {
                        ClusterVerdict::TaintNotTolerated {
                            taint: taint.clone(),
                            rejection: rejection.clone(),
                        }
                    }
                    FilterReason::NoPredicateMatched => ClusterVerdict::PredicatesNotMatched {
                        misses: predicates
                            .iter()
                            .enumerate()
                            .filter_map(|(k, p)| {
                                let miss = p.check(entry, snapshot.cel.get()).err()?;
                                let part = match miss {
                                    SelectorMiss::Label => PredicatePart::LabelSelector,
                                    SelectorMiss::Claim => PredicatePart::ClaimSelector,
                                    SelectorMiss::Cel { index, error } => {
                                        PredicatePart::CelExpression {
                                            index,
                                            expression: cel_source(placement, k, index),
                                            error,
                                        }
                                    }
                                };
                                Some(PredicateMiss { predicate: k, part })
                            })
                            .collect(),
                    },
                }
            } else if let Some(pos) = result.ranking.position(name) {
                let scores = result
                    .prioritizers
                    .iter()
                    .zip(&result.ranking.scores)
                    .map(|(p, column)| PrioritizerScore {
                        name: p.name.clone(),
                        weight: p.weight,
                        score: column[pos],
                    })
                    .collect();
                let outcome = if selected.contains_key(name) {
                    ScoredOutcome::Selected
                } else if let Some(&(constraint, reason)) = spread.get(name) {
                    ScoredOutcome::SpreadRejected { constraint, reason }
                } else {
                    ScoredOutcome::NotSelected
                };
                ClusterVerdict::Scored {
                    scores,
                    total: result.ranking.totals[pos],
                    rank: rank_of[pos],
                    outcome,
                }
            } else if eligibility.candidates.binary_search(&(i as u32)).is_ok() {
                ClusterVerdict::NotEvaluated
            } else {
                ClusterVerdict::NotInEligibleSets {
                    member_of: snapshot.sets_of(name),
                }
            };
            ClusterExplanation {
                cluster: name.to_string(),
                verdict,
            }
        })
        .collect();
    Explanation { result, clusters }
}

fn cel_source(placement: &Placement, predicate: usize, index: usize) -> String {
    placement
        .spec
        .predicates
        .get(predicate)
        .and_then(|p| p.required_cluster_selector.as_ref())
        .and_then(|s| s.cel_selector.as_ref())
        .and_then(|c| c.cel_expressions.get(index))
        .cloned()
        .unwrap_or_default()
}

impl fmt::Display for PredicatePart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PredicatePart::LabelSelector => write!(f, "labelSelector does not match"),
            PredicatePart::ClaimSelector => write!(f, "claimSelector does not match"),
            PredicatePart::CelExpression {
                index,
                expression,
                error: None,
            } => write!(f, "celExpressions[{index}] `{expression}` is false"),
            PredicatePart::CelExpression {
                index,
                expression,
                error: Some(e),
            } => write!(f, "celExpressions[{index}] `{expression}` failed: {e}"),
        }
    }
}

impl fmt::Display for ClusterVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClusterVerdict::NotInEligibleSets { member_of } if member_of.is_empty() => {
                write!(f, "not in an eligible cluster set (in no set)")
            }
            ClusterVerdict::NotInEligibleSets { member_of } => write!(
                f,
                "not in an eligible cluster set (in {})",
                member_of.join(", ")
            ),
            ClusterVerdict::Terminating => write!(f, "filtered: terminating"),
            ClusterVerdict::PredicatesNotMatched { misses } => {
                write!(f, "filtered: no predicate matches")?;
                for m in misses {
                    write!(f, "; predicates[{}]: {}", m.predicate, m.part)?;
                }
                Ok(())
            }
            ClusterVerdict::TaintNotTolerated { taint, rejection } => {
                write!(
                    f,
                    "filtered: taint {}={}:{:?} not tolerated",
                    taint.key, taint.value, taint.effect
                )?;
                match rejection {
                    TaintRejection::NoMatchingToleration => Ok(()),
                    TaintRejection::TolerationExpired { at: Some(at) } => {
                        write!(f, " (toleration expired at {at})")
                    }
                    TaintRejection::TolerationExpired { at: None } => {
                        write!(f, " (toleration expired: taint has no timeAdded)")
                    }
                }
            }
            ClusterVerdict::NotEvaluated => write!(f, "not evaluated"),
            ClusterVerdict::Scored {
                scores,
                total,
                rank,
                outcome,
            } => {
                match outcome {
                    ScoredOutcome::Selected => write!(f, "selected")?,
                    ScoredOutcome::NotSelected => write!(f, "not selected")?,
                    ScoredOutcome::SpreadRejected { constraint, reason } => write!(
                        f,
                        "not selected: spreadConstraints[{constraint}] {}",
                        match reason {
                            SpreadReason::MissingTopologyKey => "topology key missing",
                            SpreadReason::WouldExceedMaxSkew => "would exceed maxSkew",
                        }
                    )?,
                }
                write!(f, ", rank {rank}, total {total}")?;
                for s in scores {
                    write!(f, ", {} {}×{}", s.name, s.weight, s.score)?;
                }
                Ok(())
            }
        }
    }
}
