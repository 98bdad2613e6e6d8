//! The placement status and its conditions.
//!
//! `PlacementMisconfigured` is True (reason `Misconfigured`, message `<plugin>:<message>`) when
//! the spec cannot be scheduled, else False (`Succeedconfigured`, "Placement configurations
//! check pass").
//!
//! `PlacementSatisfied` takes the first reason that applies, in upstream's order:
//! 1. `NoManagedClusterSetBindings` — no binding in the namespace refers to an existing set;
//! 2. `NoIntersection` — none of `spec.clusterSets` is bound;
//! 3. `AllManagedClusterSetsEmpty` — the eligible sets hold no cluster (terminating ones
//!    excluded);
//! 4. (`NotAllDecisionsScheduled` with the error, for internal errors, which the pure core
//!    does not have);
//! 5. `NoManagedClusterMatched` — nothing was selected (also when the spec is misconfigured or
//!    `numberOfClusters` is 0);
//! 6. `AllDecisionsScheduled` (True) — nothing wanted is missing;
//! 7. `NotAllDecisionsScheduled` — "`n` cluster decisions unscheduled".

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use ocm_api::cluster::names::conditions::{
    self, placement_misconfigured as misconfigured_reasons, placement_satisfied as reasons,
};

use super::result::Misconfiguration;

/// What `PlacementSatisfied` is computed from.
pub(crate) struct Satisfaction<'a> {
    pub(crate) cluster_sets_in_spec: &'a [String],
    pub(crate) eligible_sets: &'a [String],
    pub(crate) valid_bindings: usize,
    pub(crate) available_clusters: usize,
    pub(crate) selected: usize,
    pub(crate) unscheduled: i64,
}

fn condition(
    type_: &str,
    status: bool,
    reason: &str,
    message: String,
    now: Timestamp,
    generation: Option<i64>,
) -> Condition {
    Condition {
        type_: type_.to_string(),
        status: if status { "True" } else { "False" }.to_string(),
        reason: reason.to_string(),
        message,
        last_transition_time: Time(now),
        observed_generation: generation,
    }
}

/// The `PlacementSatisfied` condition.
pub(crate) fn satisfied(
    s: &Satisfaction<'_>,
    now: Timestamp,
    generation: Option<i64>,
) -> Condition {
    let (status, reason, message) = if s.valid_bindings == 0 {
        (
            false,
            reasons::NO_BINDINGS,
            "No valid ManagedClusterSetBindings found in placement namespace".to_string(),
        )
    } else if s.eligible_sets.is_empty() {
        (
            false,
            reasons::NO_INTERSECTION,
            format!(
                "None of ManagedClusterSets [{}] is bound to placement namespace",
                s.cluster_sets_in_spec.join(",")
            ),
        )
    } else if s.available_clusters == 0 {
        (
            false,
            reasons::ALL_SETS_EMPTY,
            format!(
                "All ManagedClusterSets [{}] have no member ManagedCluster",
                s.eligible_sets.join(",")
            ),
        )
    } else if s.selected == 0 {
        (
            false,
            reasons::NO_CLUSTER_MATCHED,
            "No ManagedCluster matches any of the cluster predicate".to_string(),
        )
    } else if s.unscheduled == 0 {
        (
            true,
            reasons::ALL_DECISIONS_SCHEDULED,
            "All cluster decisions scheduled".to_string(),
        )
    } else {
        (
            false,
            reasons::NOT_ALL_DECISIONS_SCHEDULED,
            format!("{} cluster decisions unscheduled", s.unscheduled),
        )
    };
    condition(
        conditions::PLACEMENT_SATISFIED,
        status,
        reason,
        message,
        now,
        generation,
    )
}

/// The `PlacementMisconfigured` condition.
pub(crate) fn misconfigured(
    problem: Option<&Misconfiguration>,
    now: Timestamp,
    generation: Option<i64>,
) -> Condition {
    match problem {
        Some(p) => condition(
            conditions::PLACEMENT_MISCONFIGURED,
            true,
            misconfigured_reasons::MISCONFIGURED,
            p.to_string(),
            now,
            generation,
        ),
        None => condition(
            conditions::PLACEMENT_MISCONFIGURED,
            false,
            misconfigured_reasons::SUCCEED_CONFIGURED,
            "Placement configurations check pass".to_string(),
            now,
            generation,
        ),
    }
}

/// Applies `updates` to `existing` as Kubernetes' `meta.SetStatusCondition` does: a condition
/// of a new type is appended; one of a known type takes the new reason, message and
/// observedGeneration, and keeps its `lastTransitionTime` unless its status changed.
pub fn merge_conditions(existing: &[Condition], updates: &[Condition]) -> Vec<Condition> {
    let mut out = existing.to_vec();
    for update in updates {
        match out.iter_mut().find(|c| c.type_ == update.type_) {
            Some(current) => {
                if current.status != update.status {
                    current.status = update.status.clone();
                    current.last_transition_time = update.last_transition_time.clone();
                }
                current.reason = update.reason.clone();
                current.message = update.message.clone();
                current.observed_generation = update.observed_generation;
            }
            None => out.push(update.clone()),
        }
    }
    out
}
