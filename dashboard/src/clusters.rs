//! What the pages say about one ManagedCluster: its state in one word, and the facts of its
//! row (version, capacity, set, taints, age), sortable.

use ocm_api::cluster::names::conditions::{AVAILABLE, JOINED};
use ocm_api::cluster::names::labels::CLUSTER_SET;
use ocm_api::cluster::v1::ManagedCluster;

use crate::html::{Tone, condition_status};

/// A cluster's state, as the overview counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ClusterState {
    /// Available: its agent heartbeats and reports healthy.
    Available,
    /// Available is False.
    Unavailable,
    /// Available is Unknown: its lease is stale.
    Unknown,
    /// Accepted, not joined yet (or not reporting yet).
    Joining,
    /// Asked to join; the hub admin has not accepted it.
    Pending,
}

impl ClusterState {
    /// Every state, in the order the overview shows them.
    pub const ALL: [ClusterState; 5] = [
        ClusterState::Available,
        ClusterState::Unavailable,
        ClusterState::Unknown,
        ClusterState::Joining,
        ClusterState::Pending,
    ];

    /// The state of `cluster`.
    pub fn of(cluster: &ManagedCluster) -> ClusterState {
        if !cluster.spec.hub_accepts_client {
            return ClusterState::Pending;
        }
        let conditions = cluster
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default();
        if condition_status(conditions, JOINED) != "True" {
            return ClusterState::Joining;
        }
        match condition_status(conditions, AVAILABLE) {
            "True" => ClusterState::Available,
            "False" => ClusterState::Unavailable,
            "Unknown" => ClusterState::Unknown,
            _ => ClusterState::Joining,
        }
    }

    /// Its word (also its value in `?state=`).
    pub fn name(self) -> &'static str {
        match self {
            ClusterState::Available => "Available",
            ClusterState::Unavailable => "Unavailable",
            ClusterState::Unknown => "Unknown",
            ClusterState::Joining => "Joining",
            ClusterState::Pending => "Pending acceptance",
        }
    }

    /// Its value in `?state=`.
    pub fn key(self) -> &'static str {
        match self {
            ClusterState::Available => "available",
            ClusterState::Unavailable => "unavailable",
            ClusterState::Unknown => "unknown",
            ClusterState::Joining => "joining",
            ClusterState::Pending => "pending",
        }
    }

    /// The state whose key is `key`.
    pub fn parse(key: &str) -> Option<ClusterState> {
        ClusterState::ALL.into_iter().find(|s| s.key() == key)
    }

    /// How its badge looks.
    pub fn tone(self) -> Tone {
        match self {
            ClusterState::Available => Tone::Good,
            ClusterState::Unavailable => Tone::Bad,
            ClusterState::Unknown => Tone::Warn,
            ClusterState::Joining | ClusterState::Pending => Tone::Idle,
        }
    }
}

/// The facts of one cluster's row.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterRow {
    /// Name.
    pub name: String,
    /// State.
    pub state: ClusterState,
    /// Status of `ManagedClusterJoined`.
    pub joined: String,
    /// Status of `ManagedClusterConditionAvailable`.
    pub available: String,
    /// Kubernetes version.
    pub version: String,
    /// CPU capacity as reported.
    pub cpu: String,
    /// Memory capacity as reported.
    pub memory: String,
    /// CPU capacity in millicores, for sorting.
    pub cpu_millis: u64,
    /// Memory capacity in bytes, for sorting.
    pub memory_bytes: u64,
    /// Its cluster set (label).
    pub set: String,
    /// Its taints, `key=value:Effect`.
    pub taints: Vec<String>,
    /// When it was created.
    pub created: Option<jiff::Timestamp>,
}

impl ClusterRow {
    /// The row of `cluster`.
    pub fn of(cluster: &ManagedCluster) -> ClusterRow {
        let status = cluster.status.as_ref();
        let conditions = status.map(|s| s.conditions.as_slice()).unwrap_or_default();
        let capacity = |key: &str| {
            status
                .and_then(|s| s.capacity.get(key))
                .map(|q| q.0.clone())
                .unwrap_or_default()
        };
        let cpu = capacity("cpu");
        let memory = capacity("memory");
        ClusterRow {
            name: cluster.metadata.name.clone().unwrap_or_default(),
            state: ClusterState::of(cluster),
            joined: condition_status(conditions, JOINED).to_owned(),
            available: condition_status(conditions, AVAILABLE).to_owned(),
            version: status
                .and_then(|s| s.version.as_ref())
                .map(|v| v.kubernetes.clone())
                .unwrap_or_default(),
            cpu_millis: quantity(&cpu, true),
            memory_bytes: quantity(&memory, false),
            cpu,
            memory,
            set: cluster
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(CLUSTER_SET))
                .cloned()
                .unwrap_or_default(),
            taints: cluster
                .spec
                .taints
                .iter()
                .map(|t| {
                    let value = if t.value.is_empty() {
                        String::new()
                    } else {
                        format!("={}", t.value)
                    };
                    format!("{}{value}:{:?}", t.key, t.effect)
                })
                .collect(),
            created: cluster.metadata.creation_timestamp.as_ref().map(|t| t.0),
        }
    }

    /// Whether the row matches the filter text: a substring of its name, set, version or a
    /// taint (case-insensitive), or `label=value` for one of the cluster's labels.
    pub fn matches(&self, cluster: &ManagedCluster, filter: &str) -> bool {
        let filter = filter.trim().to_lowercase();
        if filter.is_empty() {
            return true;
        }
        if let Some((key, value)) = filter.split_once('=')
            && let Some(labels) = &cluster.metadata.labels
            && labels
                .iter()
                .any(|(k, v)| k.to_lowercase() == key && v.to_lowercase() == value)
        {
            return true;
        }
        [&self.name, &self.set, &self.version]
            .into_iter()
            .chain(self.taints.iter())
            .any(|text| text.to_lowercase().contains(&filter))
    }
}

/// A Kubernetes quantity in millicores (`cpu`) or bytes, roughly (enough to sort by).
pub fn quantity(text: &str, millis: bool) -> u64 {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let Ok(number) = number.parse::<f64>() else {
        return 0;
    };
    let factor: f64 = match suffix {
        "m" => 0.001,
        "" => 1.0,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return 0,
    };
    let scale = if millis { 1000.0 } else { 1.0 };
    (number * factor * scale).round() as u64
}

/// How the overview sorts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    /// By name.
    Name,
    /// By state, then name.
    State,
    /// By Kubernetes version.
    Version,
    /// By CPU capacity.
    Cpu,
    /// By memory capacity.
    Memory,
    /// By cluster set.
    Set,
    /// By creation time.
    Age,
}

impl SortKey {
    /// Every key with its `?sort=` value and column title.
    pub const ALL: [(SortKey, &'static str, &'static str); 7] = [
        (SortKey::Name, "name", "Name"),
        (SortKey::State, "state", "State"),
        (SortKey::Version, "version", "Kubernetes"),
        (SortKey::Cpu, "cpu", "CPU"),
        (SortKey::Memory, "memory", "Memory"),
        (SortKey::Set, "set", "Cluster set"),
        (SortKey::Age, "age", "Age"),
    ];

    /// The key of `?sort=value` (name when unknown).
    pub fn parse(value: &str) -> SortKey {
        SortKey::ALL
            .iter()
            .find(|(_, v, _)| *v == value)
            .map_or(SortKey::Name, |(k, _, _)| *k)
    }
}

/// Sorts rows by `key` (ties by name), descending when `descending`.
pub fn sort_rows(rows: &mut [ClusterRow], key: SortKey, descending: bool) {
    rows.sort_by(|a, b| {
        let order = match key {
            SortKey::Name => std::cmp::Ordering::Equal,
            SortKey::State => a.state.cmp(&b.state),
            SortKey::Version => a.version.cmp(&b.version),
            SortKey::Cpu => a.cpu_millis.cmp(&b.cpu_millis),
            SortKey::Memory => a.memory_bytes.cmp(&b.memory_bytes),
            SortKey::Set => a.set.cmp(&b.set),
            // the smallest age (the newest cluster) first
            SortKey::Age => b.created.cmp(&a.created),
        }
        .then_with(|| a.name.cmp(&b.name));
        if descending { order.reverse() } else { order }
    });
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    pub(crate) fn cluster(
        name: &str,
        accepted: bool,
        available: &str,
        cpu: &str,
    ) -> ManagedCluster {
        serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
            "metadata": {"name": name, "labels": {CLUSTER_SET: "default", "env": "prod"},
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"hubAcceptsClient": accepted, "taints": [
                {"key": "cluster.open-cluster-management.io/unreachable", "effect": "NoSelect"}]},
            "status": {"conditions": [
                {"type": JOINED, "status": "True", "reason": "r", "message": "",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": AVAILABLE, "status": available, "reason": "r", "message": "",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "version": {"kubernetes": "v1.35.0"},
                "capacity": {"cpu": cpu, "memory": "16Gi"}}
        }))
        .unwrap()
    }

    #[test]
    fn states_follow_acceptance_and_conditions() {
        assert_eq!(
            ClusterState::of(&cluster("a", true, "True", "8")),
            ClusterState::Available
        );
        assert_eq!(
            ClusterState::of(&cluster("a", true, "Unknown", "8")),
            ClusterState::Unknown
        );
        assert_eq!(
            ClusterState::of(&cluster("a", true, "False", "8")),
            ClusterState::Unavailable
        );
        assert_eq!(
            ClusterState::of(&cluster("a", false, "True", "8")),
            ClusterState::Pending
        );
        let mut joining = cluster("a", true, "True", "8");
        joining.status = None;
        assert_eq!(ClusterState::of(&joining), ClusterState::Joining);
        for state in ClusterState::ALL {
            assert_eq!(ClusterState::parse(state.key()), Some(state));
        }
    }

    #[test]
    fn rows_report_facts_and_match_filters() {
        let c = cluster("web-1", true, "True", "8");
        let row = ClusterRow::of(&c);
        assert_eq!(row.version, "v1.35.0");
        assert_eq!(row.cpu_millis, 8000);
        assert_eq!(row.memory_bytes, 16 * 1024 * 1024 * 1024);
        assert_eq!(row.set, "default");
        assert_eq!(
            row.taints,
            ["cluster.open-cluster-management.io/unreachable:NoSelect"]
        );
        assert!(row.matches(&c, "WEB"));
        assert!(row.matches(&c, "env=prod"));
        assert!(row.matches(&c, "unreachable"));
        assert!(!row.matches(&c, "env=dev"));
        assert!(!row.matches(&c, "db"));
    }

    #[test]
    fn quantities_sort_by_size() {
        assert_eq!(quantity("500m", true), 500);
        assert_eq!(quantity("2", true), 2000);
        assert_eq!(quantity("1Gi", false), 1 << 30);
        assert_eq!(quantity("1G", false), 1_000_000_000);
        assert_eq!(quantity("weird", false), 0);
    }

    #[test]
    fn sorting_by_a_column_then_by_name() {
        let mut rows: Vec<ClusterRow> = [("b", "4"), ("a", "16"), ("c", "4")]
            .iter()
            .map(|(n, cpu)| ClusterRow::of(&cluster(n, true, "True", cpu)))
            .collect();
        sort_rows(&mut rows, SortKey::Cpu, false);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["b", "c", "a"]);
        sort_rows(&mut rows, SortKey::Cpu, true);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["a", "c", "b"]);
        sort_rows(&mut rows, SortKey::Name, false);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
    }
}
