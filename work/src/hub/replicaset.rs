//! The pure planning step of the ManifestWorkReplicaSet controller: from a
//! ManifestWorkReplicaSet, its placements, their decisions, the managed clusters and the
//! ManifestWorks it already owns, decide which works to create or update, which to delete,
//! what its status says, and when to look again. No I/O.
//!
//! Follows upstream OCM's controller:
//! - works are created in each decided cluster's namespace with the template as spec, the
//!   ManifestWorkReplicaSet's labels plus [`MANIFEST_WORK_REPLICA_SET_LABEL`]
//!   (`<namespace>.<name>`) and [`PLACEMENT_NAME_LABEL`]; new works get `generateName`
//!   `<name>`, existing ones keep their name;
//! - each placement is rolled out with its strategy ([`super::rollout`]); works of clusters
//!   that left the decisions, and of placements no longer referenced, are deleted;
//! - status: `PlacementVerified`, `PlacementRolledOut`, `ManifestworkApplied`, the summary
//!   and the per-placement summary (`total`, `applied`, `available`, `progressing`,
//!   `degraded`; `desiredTotal` and `updated` stay 0, as upstream never sets them).
//!
//! One deviation, documented for users: upstream derives a cluster's rollout state only
//! from the work's `Progressing` condition, which its agent sets only through condition
//! rules, so without such a rule a progressive rollout never advances. Here, a work without
//! a current `Progressing` condition is `Succeeded` once `Applied` and `Available` are True
//! for its generation, and `Progressing` while only `Applied` is.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use ocm_api::cluster::names::labels as cluster_labels;
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_api::work::names::{
    MANIFEST_WORK_REPLICA_SET_LABEL, PLACEMENT_NAME_LABEL, conditions as work_conditions,
    replica_set,
};
use ocm_api::work::v1::{ManifestWork, ManifestWorkSpec};
use ocm_api::work::v1alpha1::{
    ManifestWorkReplicaSet, ManifestWorkReplicaSetStatus, ManifestWorkReplicaSetSummary,
    PlacementSummary,
};

use super::overrides::{ClusterFacts, apply_overrides, parse_overrides};
use super::rollout::{ClusterGroups, ClusterRolloutStatus, GroupKey, RolloutStatus, plan_rollout};

/// The longest the controller waits before looking again (upstream: 30 min).
pub const MAX_REQUEUE: Duration = Duration::from_secs(30 * 60);

/// Reason of `ManifestworkApplied` False when the overrides annotation cannot be used
/// (ocm-rs extension).
pub const INVALID_OVERRIDES: &str = "InvalidOverrides";

/// Everything the planner reads.
#[derive(Clone, Debug)]
pub struct ReplicaSetInput<'a> {
    /// The ManifestWorkReplicaSet.
    pub replica_set: &'a ManifestWorkReplicaSet,
    /// Placements of its namespace by name.
    pub placements: &'a BTreeMap<String, Placement>,
    /// PlacementDecisions of its namespace.
    pub decisions: &'a [PlacementDecision],
    /// Its ManifestWorks (labelled with its key), in every cluster namespace.
    pub works: &'a [ManifestWork],
    /// Labels and claims of managed clusters, by name (for overrides).
    pub clusters: &'a BTreeMap<String, ClusterFacts>,
    /// The current time.
    pub now: Timestamp,
}

/// A ManifestWork to create or update.
#[derive(Clone, Debug, PartialEq)]
pub struct DesiredWork {
    /// Cluster namespace.
    pub namespace: String,
    /// Existing name to update, or `None` to create with [`DesiredWork::generate_name`].
    pub name: Option<String>,
    /// `generateName` for a new work.
    pub generate_name: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Spec (template with the cluster's overrides).
    pub spec: ManifestWorkSpec,
}

/// What to do.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplicaSetPlan {
    /// Works to create or update.
    pub apply: Vec<DesiredWork>,
    /// Works to delete: (namespace, name).
    pub delete: Vec<(String, String)>,
    /// The new status (conditions not yet merged with the old ones).
    pub status: ManifestWorkReplicaSetStatus,
    /// Look again after this long.
    pub requeue_after: Option<Duration>,
}

/// The `<namespace>.<name>` key of a ManifestWorkReplicaSet, as put on its works.
pub fn replica_set_key(rs: &ManifestWorkReplicaSet) -> String {
    format!(
        "{}.{}",
        rs.metadata.namespace.as_deref().unwrap_or_default(),
        rs.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Decision groups of a placement from its PlacementDecisions' labels and status.
pub fn placement_groups(placement: &str, decisions: &[PlacementDecision]) -> ClusterGroups {
    let mut groups = ClusterGroups::default();
    for d in decisions {
        let labels = d.metadata.labels.clone().unwrap_or_default();
        if labels.get(cluster_labels::PLACEMENT).map(String::as_str) != Some(placement) {
            continue;
        }
        let key = GroupKey {
            name: labels
                .get(cluster_labels::DECISION_GROUP_NAME)
                .cloned()
                .unwrap_or_default(),
            index: labels
                .get(cluster_labels::DECISION_GROUP_INDEX)
                .and_then(|i| i.parse().ok())
                .unwrap_or(0),
        };
        let clusters = d
            .status
            .as_ref()
            .map(|s| {
                s.decisions
                    .iter()
                    .map(|c| c.cluster_name.clone())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        groups.insert(key, clusters);
    }
    groups
}

fn find<'c>(conditions: &'c [Condition], type_: &str) -> Option<&'c Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

fn current(c: Option<&Condition>, generation: i64) -> Option<&Condition> {
    c.filter(|c| c.observed_generation == Some(generation))
}

fn since(c: &Condition) -> Option<Timestamp> {
    Some(c.last_transition_time.0)
}

/// A cluster's rollout state from its work's conditions (see the module doc for the
/// fallback when there is no `Progressing` condition).
pub fn cluster_rollout_status(cluster: &str, work: &ManifestWork) -> ClusterRolloutStatus {
    let generation = work.metadata.generation.unwrap_or(0);
    let conditions = work
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let to_apply = ClusterRolloutStatus::new(cluster, RolloutStatus::ToApply, None);
    let Some(applied) = current(find(conditions, work_conditions::APPLIED), generation) else {
        return to_apply;
    };
    if applied.status != "True" {
        return to_apply;
    }
    let degraded = find(conditions, work_conditions::DEGRADED);
    if degraded.is_some_and(|d| d.observed_generation != Some(generation)) {
        return to_apply;
    }
    if let Some(progressing) = find(conditions, work_conditions::PROGRESSING) {
        if progressing.observed_generation != Some(generation) {
            return to_apply;
        }
        let (status, at) = match (progressing.status.as_str(), degraded) {
            ("True", Some(d)) if d.status == "True" => (RolloutStatus::Failed, since(d)),
            ("True", _) => (RolloutStatus::Progressing, since(progressing)),
            ("False", _) => (RolloutStatus::Succeeded, since(progressing)),
            _ => (RolloutStatus::Progressing, since(progressing)),
        };
        return ClusterRolloutStatus::new(cluster, status, at);
    }
    match current(find(conditions, work_conditions::AVAILABLE), generation) {
        Some(available) if available.status == "True" => {
            ClusterRolloutStatus::new(cluster, RolloutStatus::Succeeded, since(available))
        }
        _ => ClusterRolloutStatus::new(cluster, RolloutStatus::Progressing, since(applied)),
    }
}

fn condition(type_: &str, ok: bool, reason: &str, message: &str) -> Condition {
    ocm_runtime::conditions::condition(
        type_,
        if ok { "True" } else { "False" },
        reason,
        message,
        None,
    )
}

fn label_value_errors(value: &str) -> Option<String> {
    let valid_chars = value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    let edges = value.is_empty()
        || (value.as_bytes()[0].is_ascii_alphanumeric()
            && value.as_bytes()[value.len() - 1].is_ascii_alphanumeric());
    if value.len() > 63 {
        Some("must be no more than 63 characters".into())
    } else if !valid_chars || !edges {
        Some(
            "a valid label must be an empty string or consist of alphanumeric characters, \
             '-', '_' or '.', and must start and end with an alphanumeric character"
                .into(),
        )
    } else {
        None
    }
}

/// Plans one reconcile of a ManifestWorkReplicaSet that is not being deleted.
pub fn plan(input: &ReplicaSetInput<'_>) -> ReplicaSetPlan {
    let rs = input.replica_set;
    let key = replica_set_key(rs);
    let mut status = ManifestWorkReplicaSetStatus::default();
    let mut apply = Vec::new();
    let mut delete = Vec::new();
    let stop = |status: ManifestWorkReplicaSetStatus| ReplicaSetPlan {
        apply: Vec::new(),
        delete: Vec::new(),
        status,
        requeue_after: None,
    };

    if let Some(problem) = label_value_errors(&key) {
        status.conditions.push(condition(
            replica_set::MANIFESTWORK_APPLIED,
            false,
            replica_set::INVALID_MANIFEST_WORK_NAME,
            &format!(
                "ManifestWork owner reference {key:?} (namespace.name) is not a valid label \
                 value: {problem}; recreate the ManifestWorkReplicaSet with a shorter namespace \
                 and/or name so the combined length is at most 63 characters"
            ),
        ));
        return stop(status);
    }
    let overrides = match parse_overrides(rs.metadata.annotations.as_ref()) {
        Ok(o) => o,
        Err(err) => {
            status.conditions.push(condition(
                replica_set::MANIFESTWORK_APPLIED,
                false,
                INVALID_OVERRIDES,
                &err.to_string(),
            ));
            return stop(status);
        }
    };
    let mut override_errors = Vec::new();
    let spec_for = |cluster: &str, errors: &mut Vec<String>| -> Option<ManifestWorkSpec> {
        let facts = input.clusters.get(cluster).cloned().unwrap_or_default();
        match apply_overrides(&rs.spec.manifest_work_template, &overrides, &facts) {
            Ok(spec) => Some(spec),
            Err(err) => {
                errors.push(format!("cluster {cluster}: {err}"));
                None
            }
        }
    };

    let referenced: BTreeSet<&str> = rs
        .spec
        .placement_refs
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    // Works by placement, then cluster.
    let mut by_placement: BTreeMap<&str, BTreeMap<&str, &ManifestWork>> = BTreeMap::new();
    for work in input.works {
        let labels = work.metadata.labels.clone().unwrap_or_default();
        if labels.get(MANIFEST_WORK_REPLICA_SET_LABEL) != Some(&key) {
            continue;
        }
        let (Some(ns), Some(name)) = (
            work.metadata.namespace.as_deref(),
            work.metadata.name.as_deref(),
        ) else {
            continue;
        };
        let placement = work
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(PLACEMENT_NAME_LABEL))
            .map(String::as_str)
            .unwrap_or("");
        if !referenced.contains(placement) {
            if work.metadata.deletion_timestamp.is_none() {
                delete.push((ns.to_owned(), name.to_owned()));
            }
            continue;
        }
        by_placement.entry(placement).or_default().insert(ns, work);
    }

    let mut requeue = MAX_REQUEUE;
    let (mut count, mut desired_total, mut succeeded_total) = (0i64, 0i64, 0i64);
    let mut summaries = Vec::new();
    let mut labels: BTreeMap<String, String> = rs.metadata.labels.clone().unwrap_or_default();
    labels.insert(MANIFEST_WORK_REPLICA_SET_LABEL.to_owned(), key.clone());
    for reference in &rs.spec.placement_refs {
        let Some(placement) = input.placements.get(&reference.name) else {
            status.conditions.push(condition(
                replica_set::PLACEMENT_VERIFIED,
                false,
                replica_set::PLACEMENT_DECISION_NOT_FOUND,
                &format!("Placement {} not found", reference.name),
            ));
            return ReplicaSetPlan {
                delete,
                ..stop(status)
            };
        };
        let works = by_placement
            .remove(reference.name.as_str())
            .unwrap_or_default();
        let groups = placement_groups(&reference.name, input.decisions);
        let decided = groups.clusters();
        let mut existing = Vec::new();
        let mut up_to_date: BTreeSet<&str> = BTreeSet::new();
        let mut succeeded = 0i64;
        for (cluster, work) in &works {
            if work.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let Some(spec) = spec_for(cluster, &mut override_errors) else {
                continue;
            };
            if work.spec != spec {
                continue;
            }
            let state = cluster_rollout_status(cluster, work);
            if decided.contains(cluster) {
                up_to_date.insert(cluster);
            }
            if decided.contains(cluster) && state.status == RolloutStatus::Succeeded {
                succeeded += 1;
            }
            existing.push(state);
        }
        let strategy = reference.rollout_strategy.clone().unwrap_or_default();
        let result = match plan_rollout(&strategy, &groups, &existing, input.now) {
            Ok(result) => result,
            Err(err) => {
                status.conditions.push(condition(
                    replica_set::PLACEMENT_VERIFIED,
                    false,
                    replica_set::NOT_AS_EXPECTED,
                    &format!("placement {}: {err}", reference.name),
                ));
                continue;
            }
        };
        if let Some(after) = result.recheck_after {
            requeue = requeue.min(after);
        }
        let mut present: BTreeSet<String> = up_to_date.iter().map(|c| (*c).to_owned()).collect();
        for target in result.to_rollout {
            if target.status != RolloutStatus::ToApply {
                continue;
            }
            let cluster = target.cluster.as_str();
            let Some(spec) = spec_for(cluster, &mut override_errors) else {
                continue;
            };
            let existing_work = works.get(cluster);
            let mut work_labels = labels.clone();
            work_labels.insert(PLACEMENT_NAME_LABEL.to_owned(), reference.name.clone());
            let name = existing_work.and_then(|w| w.metadata.name.clone());
            let unchanged = existing_work.is_some_and(|w| {
                w.spec == spec && w.metadata.labels.as_ref() == Some(&work_labels)
            });
            if !unchanged {
                apply.push(DesiredWork {
                    namespace: cluster.to_owned(),
                    name,
                    generate_name: rs.metadata.name.clone().unwrap_or_default(),
                    labels: work_labels,
                    spec,
                });
            }
            present.insert(cluster.to_owned());
        }
        // Every work of a cluster that is no longer decided goes away.
        for (cluster, work) in &works {
            if !decided.contains(cluster) && work.metadata.deletion_timestamp.is_none() {
                if let Some(name) = &work.metadata.name {
                    delete.push(((*cluster).to_owned(), name.clone()));
                }
                present.remove(*cluster);
            }
        }
        let selected = placement
            .status
            .as_ref()
            .map(|s| i64::from(s.number_of_selected_clusters))
            .unwrap_or(0);
        let decision_groups = placement
            .status
            .as_ref()
            .map(|s| s.decision_groups.len())
            .unwrap_or(0);
        // As upstream's controller: `desiredTotal` and `updated` stay 0 (never set).
        let mut summary = ManifestWorkReplicaSetSummary {
            total: present.len() as i64,
            ..Default::default()
        };
        for (cluster, work) in &works {
            if work.metadata.deletion_timestamp.is_some() || !up_to_date.contains(cluster) {
                continue;
            }
            let conditions = work
                .status
                .as_ref()
                .map(|s| s.conditions.as_slice())
                .unwrap_or_default();
            let is_true = |t: &str| find(conditions, t).is_some_and(|c| c.status == "True");
            summary.applied += i64::from(is_true(work_conditions::APPLIED));
            summary.available += i64::from(is_true(work_conditions::AVAILABLE));
            summary.progressing += i64::from(is_true(work_conditions::PROGRESSING));
            summary.degraded += i64::from(is_true(work_conditions::DEGRADED));
        }
        summaries.push(PlacementSummary {
            name: reference.name.clone(),
            available_decision_groups: format!(
                "{decision_groups} ({} / {selected} clusters applied)",
                present.len()
            ),
            summary,
        });
        count += present.len() as i64;
        desired_total += selected;
        succeeded_total += succeeded;
    }

    let mut summary = ManifestWorkReplicaSetSummary {
        total: count,
        ..Default::default()
    };
    for p in &summaries {
        summary.applied += p.summary.applied;
        summary.available += p.summary.available;
        summary.progressing += p.summary.progressing;
        summary.degraded += p.summary.degraded;
    }
    status.placements_summary = summaries;
    if !status
        .conditions
        .iter()
        .any(|c| c.type_ == replica_set::PLACEMENT_VERIFIED)
    {
        status.conditions.push(if count == 0 {
            condition(
                replica_set::PLACEMENT_VERIFIED,
                false,
                replica_set::PLACEMENT_DECISION_EMPTY,
                "",
            )
        } else {
            condition(
                replica_set::PLACEMENT_VERIFIED,
                true,
                replica_set::AS_EXPECTED,
                "",
            )
        });
    }
    let complete = desired_total == succeeded_total;
    status.conditions.push(condition(
        replica_set::PLACEMENT_ROLLED_OUT,
        complete,
        if complete {
            replica_set::COMPLETE
        } else {
            replica_set::PROGRESSING
        },
        "",
    ));
    let applied = if !override_errors.is_empty() {
        override_errors.sort();
        override_errors.dedup();
        condition(
            replica_set::MANIFESTWORK_APPLIED,
            false,
            INVALID_OVERRIDES,
            &override_errors.join("; "),
        )
    } else if count == 0 {
        let empty = status.conditions.iter().any(|c| {
            c.type_ == replica_set::PLACEMENT_VERIFIED
                && c.reason == replica_set::PLACEMENT_DECISION_EMPTY
        });
        let reason = if empty {
            replica_set::PLACEMENT_DECISION_EMPTY
        } else {
            replica_set::NOT_AS_EXPECTED
        };
        condition(replica_set::MANIFESTWORK_APPLIED, false, reason, "")
    } else if summary.available == summary.total
        && summary.progressing == 0
        && summary.degraded == 0
    {
        condition(
            replica_set::MANIFESTWORK_APPLIED,
            true,
            replica_set::AS_EXPECTED,
            "",
        )
    } else if summary.progressing > 0 && summary.degraded == 0 {
        condition(
            replica_set::MANIFESTWORK_APPLIED,
            false,
            replica_set::PROCESSING,
            "",
        )
    } else {
        condition(
            replica_set::MANIFESTWORK_APPLIED,
            false,
            replica_set::NOT_AS_EXPECTED,
            "",
        )
    };
    status.conditions.push(applied);
    status.summary = summary;
    ReplicaSetPlan {
        apply,
        delete,
        status,
        requeue_after: (requeue < MAX_REQUEUE).then_some(requeue),
    }
}

#[cfg(test)]
mod tests;
