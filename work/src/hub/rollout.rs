//! Rollout planning shared by every workload that follows a placement: given the clusters a
//! placement decided on (in decision groups) and how far each cluster's workload has got,
//! which clusters get the current version now, which timed out, and which left the placement.
//!
//! Semantics follow upstream OCM's rollout strategies (`All`, `Progressive`,
//! `ProgressivePerGroup`):
//!
//! - A cluster whose workload is not yet at the current version is `ToApply`; one being
//!   applied is `Progressing`; one done is `Succeeded`; `Failed` is a failure reported by the
//!   workload; `TimeOut` is a `Progressing`/`Failed` cluster past `progressDeadline`.
//! - **All**: every decided cluster is rolled out at once.
//! - **Progressive**: mandatory decision groups first (all their clusters, no failure
//!   allowed); then, over the other groups, clusters in name order until `maxConcurrency`
//!   clusters are in flight. In flight = `ToApply`, `Progressing`, `Failed` within the
//!   deadline, and `Succeeded` within `minSuccessTime` (the soak time). When more than
//!   `maxFailures` clusters failed or timed out, no new cluster starts.
//! - **ProgressivePerGroup**: mandatory groups first, then group by group in index order;
//!   the next group starts only when every cluster of the current one succeeded or failed
//!   within the group's `maxFailures` budget.
//!
//! `recheck_after` is the earliest moment the answer changes by the clock alone (end of a
//! soak time or a deadline), so a controller can requeue then.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use ocm_api::cluster::v1alpha1::{MandatoryDecisionGroup, RolloutStrategy, RolloutType};

/// A decision group of a placement, from the labels of its PlacementDecisions.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupKey {
    /// `cluster.open-cluster-management.io/decision-group-name` (may be empty).
    pub name: String,
    /// `cluster.open-cluster-management.io/decision-group-index`.
    pub index: i32,
}

/// The clusters a placement decided on, by decision group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterGroups {
    groups: BTreeMap<GroupKey, BTreeSet<String>>,
}

impl ClusterGroups {
    /// Adds `clusters` to group `key`.
    pub fn insert<I, S>(&mut self, key: GroupKey, clusters: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.groups
            .entry(key)
            .or_default()
            .extend(clusters.into_iter().map(Into::into));
    }

    /// Every decided cluster.
    pub fn clusters(&self) -> BTreeSet<&str> {
        self.groups
            .values()
            .flat_map(|c| c.iter().map(String::as_str))
            .collect()
    }

    /// Number of groups.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// Whether there is no group.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The group of each cluster (the first by index when a cluster is in several).
    pub fn group_of(&self) -> BTreeMap<&str, &GroupKey> {
        let mut out = BTreeMap::new();
        for (key, clusters) in self.ordered() {
            for cluster in clusters {
                out.entry(cluster.as_str()).or_insert(key);
            }
        }
        out
    }

    /// Groups in index order.
    fn ordered(&self) -> Vec<(&GroupKey, &BTreeSet<String>)> {
        let mut groups: Vec<_> = self.groups.iter().collect();
        groups.sort_by_key(|(k, _)| k.index);
        groups
    }

    /// The keys named by `mandatory` (by name when given, else by index) that exist here.
    fn resolve(&self, mandatory: &[MandatoryDecisionGroup]) -> BTreeSet<GroupKey> {
        let mut keys = BTreeSet::new();
        for wanted in mandatory {
            for key in self.groups.keys() {
                let matches = if wanted.group_name.is_empty() {
                    Some(key.index) == wanted.group_index
                } else {
                    key.name == wanted.group_name
                };
                if matches {
                    keys.insert(key.clone());
                }
            }
        }
        keys
    }

    /// The subset of groups whose key is (`keep = true`) or is not in `keys`.
    fn subset(&self, keys: &BTreeSet<GroupKey>, keep: bool) -> ClusterGroups {
        ClusterGroups {
            groups: self
                .groups
                .iter()
                .filter(|(k, _)| keys.contains(*k) == keep)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }
}

/// How far a cluster's workload has got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RolloutStatus {
    /// Not yet at the current version: to be applied.
    ToApply,
    /// Being applied.
    Progressing,
    /// Done.
    Succeeded,
    /// The workload reports a failure.
    Failed,
    /// Progressing or failed for longer than the progress deadline.
    TimeOut,
    /// Left alone.
    Skip,
}

/// One cluster's rollout state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterRolloutStatus {
    /// Cluster name.
    pub cluster: String,
    /// Its decision group, when known.
    pub group: Option<GroupKey>,
    /// State.
    pub status: RolloutStatus,
    /// When the state last changed (deadlines and soak times count from here).
    pub last_transition: Option<Timestamp>,
    /// When the state changes by the clock alone.
    pub recheck_at: Option<Timestamp>,
}

impl ClusterRolloutStatus {
    /// A cluster in `status` since `since`.
    pub fn new(cluster: &str, status: RolloutStatus, since: Option<Timestamp>) -> Self {
        ClusterRolloutStatus {
            cluster: cluster.to_owned(),
            group: None,
            status,
            last_transition: since,
            recheck_at: None,
        }
    }
}

/// What to do now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RolloutResult {
    /// Clusters that get (or keep getting) the current version now.
    pub to_rollout: Vec<ClusterRolloutStatus>,
    /// Clusters past their progress deadline.
    pub timed_out: Vec<ClusterRolloutStatus>,
    /// Clusters with a workload that the placement no longer selects.
    pub removed: Vec<ClusterRolloutStatus>,
    /// More clusters failed than `maxFailures` allows: the rollout stopped.
    pub max_failure_breach: bool,
    /// Look again after this long.
    pub recheck_after: Option<Duration>,
}

/// A rollout strategy that cannot be followed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RolloutError {
    /// `progressDeadline` is not `None` or digits followed by h, m or s.
    #[error("invalid progressDeadline {0:?}: use a number followed by h, m or s, or None")]
    InvalidDeadline(String),
    /// `minSuccessTime` is not a duration.
    #[error("invalid minSuccessTime {0:?}: use a duration such as 30s, 5m or 1h30m")]
    InvalidDuration(String),
    /// `maxFailures` / `maxConcurrency` is neither a number nor a percentage.
    #[error("invalid {field} {value:?}: use a number or a percentage such as 10%")]
    InvalidThreshold {
        /// Which field.
        field: &'static str,
        /// Its value.
        value: String,
    },
}

/// Plans the rollout of `groups` under `strategy`, given the state of the clusters that
/// already have a workload at the current version (`existing`), at time `now`.
pub fn plan_rollout(
    strategy: &RolloutStrategy,
    groups: &ClusterGroups,
    existing: &[ClusterRolloutStatus],
    now: Timestamp,
) -> Result<RolloutResult, RolloutError> {
    let decided = groups.clusters();
    let (current, removed): (Vec<_>, Vec<_>) = existing
        .iter()
        .cloned()
        .partition(|s| decided.contains(s.cluster.as_str()));
    let mut result = match strategy.type_.unwrap_or(RolloutType::All) {
        RolloutType::All => {
            let config = strategy.all.as_ref().map(|a| &a.rollout_config);
            let deadline = deadline(config.and_then(|c| c.progress_deadline.as_deref()))?;
            let total = decided.len();
            per_cluster(groups, total, total, None, deadline, current, now)
        }
        RolloutType::Progressive => {
            let settings = strategy.progressive.clone().unwrap_or_default();
            let config = &settings.rollout_config;
            let soak = soak_time(config.min_success_time.as_deref())?;
            let deadline = deadline(config.progress_deadline.as_deref())?;
            let max_failures = threshold(
                "maxFailures",
                config.max_failures.as_ref(),
                decided.len(),
                0,
            )?;
            let mandatory = &settings.mandatory_decision_groups.mandatory_decision_groups;
            let (first, rest) = mandatory_first(groups, mandatory, soak, deadline, &current, now)?;
            if let Some(first) = first {
                return Ok(finish(first, removed, now));
            }
            let rest_total = rest.clusters().len();
            let size = threshold(
                "maxConcurrency",
                settings.max_concurrency.as_ref(),
                rest_total,
                rest_total,
            )?;
            per_cluster(&rest, size, max_failures, soak, deadline, current, now)
        }
        RolloutType::ProgressivePerGroup => {
            let settings = strategy.progressive_per_group.clone().unwrap_or_default();
            let config = &settings.rollout_config;
            let soak = soak_time(config.min_success_time.as_deref())?;
            let deadline = deadline(config.progress_deadline.as_deref())?;
            // Validate maxFailures before using it per group.
            threshold("maxFailures", config.max_failures.as_ref(), 0, 0)?;
            let mandatory = &settings.mandatory_decision_groups.mandatory_decision_groups;
            let (first, rest) = mandatory_first(groups, mandatory, soak, deadline, &current, now)?;
            if let Some(first) = first {
                return Ok(finish(first, removed, now));
            }
            per_group(
                &rest,
                config.max_failures.as_ref(),
                soak,
                deadline,
                &current,
                now,
            )?
        }
    };
    result = finish(result, removed, now);
    Ok(result)
}

/// Rolls out the mandatory decision groups first (no failure allowed); returns their result
/// while they are unfinished, and the other groups.
fn mandatory_first(
    groups: &ClusterGroups,
    mandatory: &[MandatoryDecisionGroup],
    soak: Option<Duration>,
    deadline: Option<Duration>,
    current: &[ClusterRolloutStatus],
    now: Timestamp,
) -> Result<(Option<RolloutResult>, ClusterGroups), RolloutError> {
    let keys = groups.resolve(mandatory);
    let first = groups.subset(&keys, true);
    if !first.is_empty() {
        let result = per_group(&first, None, soak, deadline, current, now)?;
        if !result.to_rollout.is_empty() || !result.timed_out.is_empty() {
            return Ok((Some(result), ClusterGroups::default()));
        }
    }
    Ok((None, groups.subset(&keys, false)))
}

fn finish(
    mut result: RolloutResult,
    removed: Vec<ClusterRolloutStatus>,
    now: Timestamp,
) -> RolloutResult {
    result.removed = removed;
    result.recheck_after = result
        .to_rollout
        .iter()
        .filter_map(|s| s.recheck_at)
        .filter(|at| *at > now)
        .min()
        .and_then(|at| at.duration_since(now).try_into().ok());
    result
}

/// Places one known cluster into the rollout or the timed-out list.
fn classify(
    mut status: ClusterRolloutStatus,
    soak: Option<Duration>,
    deadline: Option<Duration>,
    now: Timestamp,
    rollout: &mut Vec<ClusterRolloutStatus>,
    timed_out: &mut Vec<ClusterRolloutStatus>,
) {
    let from = status.last_transition.unwrap_or(now);
    match status.status {
        RolloutStatus::ToApply => rollout.push(status),
        RolloutStatus::Succeeded => {
            if let Some(until) = soak.and_then(|d| add(from, d))
                && now < until
            {
                status.recheck_at = Some(until);
                rollout.push(status);
            }
        }
        RolloutStatus::TimeOut | RolloutStatus::Skip => {}
        RolloutStatus::Progressing | RolloutStatus::Failed => {
            let end = deadline.and_then(|d| add(from, d));
            status.recheck_at = end;
            match end {
                Some(end) if now >= end => {
                    status.status = RolloutStatus::TimeOut;
                    timed_out.push(status);
                }
                _ => rollout.push(status),
            }
        }
    }
}

fn add(at: Timestamp, d: Duration) -> Option<Timestamp> {
    let span = jiff::SignedDuration::try_from(d).ok()?;
    at.checked_add(span).ok()
}

/// Cluster by cluster, at most `size` in flight, stopping new clusters once more than
/// `max_failures` failed.
fn per_cluster(
    groups: &ClusterGroups,
    size: usize,
    max_failures: usize,
    soak: Option<Duration>,
    deadline: Option<Duration>,
    mut existing: Vec<ClusterRolloutStatus>,
    now: Timestamp,
) -> RolloutResult {
    let mut rollout = Vec::new();
    let mut timed_out = Vec::new();
    let mut failures = 0usize;
    let mut breach = false;
    existing.sort_by(|a, b| a.cluster.cmp(&b.cluster));
    let known: BTreeSet<String> = existing.iter().map(|s| s.cluster.clone()).collect();
    for status in existing {
        if status.cluster.is_empty() {
            continue;
        }
        let failed = matches!(
            status.status,
            RolloutStatus::TimeOut | RolloutStatus::Failed
        );
        if !breach || status.status != RolloutStatus::ToApply {
            classify(status, soak, deadline, now, &mut rollout, &mut timed_out);
        }
        if failed {
            failures += 1;
            breach = failures > max_failures;
        }
        if rollout.len() >= size {
            return RolloutResult {
                to_rollout: rollout,
                timed_out,
                max_failure_breach: breach,
                ..Default::default()
            };
        }
    }
    if !breach {
        let group_of = groups.group_of();
        for (cluster, group) in group_of {
            if known.contains(cluster) {
                continue;
            }
            let mut status = ClusterRolloutStatus::new(cluster, RolloutStatus::ToApply, None);
            status.group = Some(group.clone());
            rollout.push(status);
            if rollout.len() >= size {
                break;
            }
        }
    }
    RolloutResult {
        to_rollout: rollout,
        timed_out,
        max_failure_breach: breach,
        ..Default::default()
    }
}

/// Group by group: all clusters of the first unfinished group.
fn per_group(
    groups: &ClusterGroups,
    max_failures: Option<&IntOrString>,
    soak: Option<Duration>,
    deadline: Option<Duration>,
    existing: &[ClusterRolloutStatus],
    now: Timestamp,
) -> Result<RolloutResult, RolloutError> {
    let mut rollout = Vec::new();
    let mut timed_out = Vec::new();
    let mut states: BTreeMap<String, RolloutStatus> = BTreeMap::new();
    for status in existing {
        if status.cluster.is_empty() || status.status == RolloutStatus::ToApply {
            continue;
        }
        let before = timed_out.len();
        classify(
            status.clone(),
            soak,
            deadline,
            now,
            &mut rollout,
            &mut timed_out,
        );
        let state = if timed_out.len() > before {
            RolloutStatus::TimeOut
        } else {
            status.status
        };
        states.insert(status.cluster.clone(), state);
    }
    let mut total_failures = 0usize;
    let mut breach = false;
    for (key, clusters) in groups.ordered() {
        let budget = threshold("maxFailures", max_failures, clusters.len(), 0)?;
        let mut group_failures = 0usize;
        for cluster in clusters {
            if let Some(state) = states.get(cluster) {
                if matches!(state, RolloutStatus::TimeOut | RolloutStatus::Failed) {
                    group_failures += 1;
                    breach = group_failures > budget;
                }
                continue;
            }
            let mut status = ClusterRolloutStatus::new(cluster, RolloutStatus::ToApply, None);
            status.group = Some(key.clone());
            rollout.push(status);
        }
        total_failures += group_failures;
        if rollout.len() > total_failures || breach {
            break;
        }
    }
    Ok(RolloutResult {
        to_rollout: rollout,
        timed_out,
        max_failure_breach: breach,
        ..Default::default()
    })
}

/// `progressDeadline`: `None`/empty = no deadline.
fn deadline(text: Option<&str>) -> Result<Option<Duration>, RolloutError> {
    let text = text.unwrap_or("");
    if text.is_empty() || text == "None" {
        return Ok(None);
    }
    let invalid = || RolloutError::InvalidDeadline(text.to_owned());
    let (digits, unit) = text.split_at(text.len() - 1);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    let n: u64 = digits.parse().map_err(|_| invalid())?;
    let seconds = match unit {
        "h" => n.checked_mul(3600),
        "m" => n.checked_mul(60),
        "s" => Some(n),
        _ => None,
    }
    .ok_or_else(invalid)?;
    Ok(Some(Duration::from_secs(seconds)))
}

/// `minSuccessTime`: a Go duration; zero or absent = no soak time.
fn soak_time(text: Option<&str>) -> Result<Option<Duration>, RolloutError> {
    match text {
        None | Some("") => Ok(None),
        Some(text) => {
            let d = parse_go_duration(text)
                .ok_or_else(|| RolloutError::InvalidDuration(text.to_owned()))?;
            Ok((!d.is_zero()).then_some(d))
        }
    }
}

/// Parses a Go duration (`1h30m`, `90s`, `1.5h`, `300ms`, `0`).
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    if text == "0" {
        return Some(Duration::ZERO);
    }
    let mut rest = text;
    let mut total = 0f64;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if number_len == 0 {
            return None;
        }
        let value: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += value * factor;
    }
    Duration::try_from_secs_f64(total).ok()
}

/// A count or percentage of `total` (percentages round up); values ≤ 0 or above `total`
/// fall back to `default`.
fn threshold(
    field: &'static str,
    value: Option<&IntOrString>,
    total: usize,
    default: usize,
) -> Result<usize, RolloutError> {
    let n = match value {
        None => return Ok(default),
        Some(IntOrString::Int(n)) => i64::from(*n),
        Some(IntOrString::String(s)) => {
            let invalid = || RolloutError::InvalidThreshold {
                field,
                value: s.clone(),
            };
            let percent: f64 = s
                .strip_suffix('%')
                .ok_or_else(invalid)?
                .parse()
                .map_err(|_| invalid())?;
            (percent / 100.0 * total as f64).ceil() as i64
        }
    };
    if n <= 0 || n as usize > total {
        Ok(default)
    } else {
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests;
