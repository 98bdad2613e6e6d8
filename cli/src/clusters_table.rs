//! The cluster table `ocm get clusters` and `ocm demo` print: the columns kubectl shows for
//! ManagedCluster (NAME, HUB ACCEPTED, MANAGED CLUSTER URLS, JOINED, AVAILABLE, AGE), and
//! with `-o wide` the reported claims.

use ocm_api::cluster::v1::ManagedCluster;

/// One row per cluster, sorted by name, aligned like kubectl's output.
pub fn render(clusters: &[ManagedCluster], now: jiff::Timestamp) -> String {
    render_with(clusters, now, false)
}

/// [`render`] with, when `wide`, a CLAIMS column: the reported cluster claims (ClusterClaims
/// and, with the agent's `ClusterProperty` gate, ClusterProperties) as `name=value`.
pub fn render_with(clusters: &[ManagedCluster], now: jiff::Timestamp, wide: bool) -> String {
    let mut header: Vec<String> = [
        "NAME",
        "HUB ACCEPTED",
        "MANAGED CLUSTER URLS",
        "JOINED",
        "AVAILABLE",
        "AGE",
    ]
    .map(String::from)
    .to_vec();
    if wide {
        header.push("CLAIMS".into());
    }
    let mut rows: Vec<Vec<String>> = vec![header];
    let mut sorted: Vec<&ManagedCluster> = clusters.iter().collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for cluster in sorted {
        let condition = |t: &str| {
            cluster
                .status
                .as_ref()
                .and_then(|s| s.conditions.iter().find(|c| c.type_ == t))
                .map(|c| c.status.clone())
                .unwrap_or_default()
        };
        let urls: Vec<&str> = cluster
            .spec
            .managed_cluster_client_configs
            .iter()
            .map(|c| c.url.as_str())
            .collect();
        let age = cluster
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| human_age(now.duration_since(t.0)))
            .unwrap_or_else(|| "<unknown>".into());
        let mut row = vec![
            cluster.metadata.name.clone().unwrap_or_default(),
            cluster.spec.hub_accepts_client.to_string(),
            urls.join(","),
            condition("ManagedClusterJoined"),
            condition("ManagedClusterConditionAvailable"),
            age,
        ];
        if wide {
            let claims: Vec<String> = cluster
                .status
                .iter()
                .flat_map(|s| &s.cluster_claims)
                .map(|c| format!("{}={}", c.name, c.value))
                .collect();
            row.push(claims.join(","));
        }
        rows.push(row);
    }
    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}   ", width = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// kubectl's short age format: `45s`, `3m12s`, `5h`, `2d`.
pub fn human_age(age: jiff::SignedDuration) -> String {
    let secs = age.as_secs().max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 600 => format!("{}m{}s", s / 60, s % 60),
        s if s < 3 * 3600 => format!("{}m", s / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn table_has_kubectls_columns_and_condition_statuses() {
        let cluster: ManagedCluster = serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1",
            "kind": "ManagedCluster",
            "metadata": {"name": "c1", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"hubAcceptsClient": true, "leaseDurationSeconds": 60,
                     "managedClusterClientConfigs": [{"url": "https://c1:6443"}]},
            "status": {"conditions": [
                {"type": "ManagedClusterJoined", "status": "True", "reason": "r", "message": "",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "ManagedClusterConditionAvailable", "status": "Unknown", "reason": "r",
                 "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        }))
        .unwrap();
        let now: jiff::Timestamp = "2026-01-01T00:05:00Z".parse().unwrap();
        let text = render(&[cluster], now);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("NAME   HUB ACCEPTED   MANAGED CLUSTER URLS"),
            "{text}"
        );
        assert!(lines[1].starts_with("c1     true"), "{text}");
        assert!(lines[1].contains("https://c1:6443"));
        assert!(lines[1].contains("True"));
        assert!(lines[1].contains("Unknown"));
        assert!(lines[1].ends_with("5m0s"), "{text}");
    }

    #[test]
    fn wide_adds_the_reported_claims() {
        let cluster: ManagedCluster = serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1",
            "kind": "ManagedCluster",
            "metadata": {"name": "c1"},
            "spec": {"hubAcceptsClient": true},
            "status": {"clusterClaims": [{"name": "id.k8s.io", "value": "abc"},
                                         {"name": "prop1", "value": "value1"}]}
        }))
        .unwrap();
        let now: jiff::Timestamp = "2026-01-01T00:05:00Z".parse().unwrap();
        let text = render_with(std::slice::from_ref(&cluster), now, true);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].ends_with("CLAIMS"), "{text}");
        assert!(lines[1].ends_with("id.k8s.io=abc,prop1=value1"), "{text}");
        assert!(!render(&[cluster], now).contains("CLAIMS"));
    }
}
