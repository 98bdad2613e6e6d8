//! Decision groups and PlacementDecision objects: naming, labels, owner, paging at 100.

use serde_json::{Value, json};

use crate::common::*;

/// Clusters `c00`..`c09`; even ones labelled `zone=a`, `c00`..`c02` claim `canary=true`.
fn fleet() -> World {
    World::new(
        (0..10)
            .map(|i| {
                let mut c =
                    cluster(&format!("c{i:02}")).label("zone", if i % 2 == 0 { "a" } else { "b" });
                if i < 3 {
                    c = c.claim("canary", "true");
                }
                c.build()
            })
            .collect(),
    )
}

/// (name, clusters) of every group.
fn groups(strategy: Value, n: Option<i32>) -> Vec<(String, Vec<String>)> {
    let mut spec = json!({"decisionStrategy": {"groupStrategy": strategy}});
    if let Some(n) = n {
        spec["numberOfClusters"] = json!(n);
    }
    let result = fleet().schedule(&placement("p", spec));
    assert_eq!(
        misconfigured(&result).0,
        "False",
        "{:?}",
        result.misconfiguration
    );
    result
        .groups
        .iter()
        .map(|g| {
            (
                g.name.clone(),
                g.clusters.iter().map(|c| c.to_string()).collect(),
            )
        })
        .collect()
}

fn g(name: &str, clusters: &[&str]) -> (String, Vec<String>) {
    (name.to_string(), strings(clusters))
}

const ALL: [&str; 10] = [
    "c00", "c01", "c02", "c03", "c04", "c05", "c06", "c07", "c08", "c09",
];

#[test]
fn group_strategies() {
    let cases: Vec<(&str, Value, Option<i32>, Vec<(String, Vec<String>)>)> = vec![
        ("no strategy: one group", json!({}), None, vec![g("", &ALL)]),
        (
            "clustersPerDecisionGroup 4",
            json!({"clustersPerDecisionGroup": 4}),
            None,
            vec![
                g("", &["c00", "c01", "c02", "c03"]),
                g("", &["c04", "c05", "c06", "c07"]),
                g("", &["c08", "c09"]),
            ],
        ),
        (
            "clustersPerDecisionGroup 25% of 10 rounds up to 3",
            json!({"clustersPerDecisionGroup": "25%"}),
            None,
            vec![
                g("", &["c00", "c01", "c02"]),
                g("", &["c03", "c04", "c05"]),
                g("", &["c06", "c07", "c08"]),
                g("", &["c09"]),
            ],
        ),
        (
            "100%",
            json!({"clustersPerDecisionGroup": "100%"}),
            None,
            vec![g("", &ALL)],
        ),
        (
            "0 means all",
            json!({"clustersPerDecisionGroup": 0}),
            None,
            vec![g("", &ALL)],
        ),
        (
            "named groups first, leftovers unnamed",
            json!({"decisionGroups": [
                {"groupName": "canary", "groupClusterSelector": {"claimSelector": {"matchExpressions": [{"key": "canary", "operator": "Exists"}]}}},
                {"groupName": "zone-a", "groupClusterSelector": {"labelSelector": {"matchLabels": {"zone": "a"}}}}
            ]}),
            None,
            vec![
                g("canary", &["c00", "c01", "c02"]),
                g("zone-a", &["c04", "c06", "c08"]),
                g("", &["c03", "c05", "c07", "c09"]),
            ],
        ),
        (
            "named groups are cut to the group length too",
            json!({"clustersPerDecisionGroup": 2, "decisionGroups": [
                {"groupName": "zone-a", "groupClusterSelector": {"labelSelector": {"matchLabels": {"zone": "a"}}}}
            ]}),
            None,
            vec![
                g("zone-a", &["c00", "c02"]),
                g("zone-a", &["c04", "c06"]),
                g("zone-a", &["c08"]),
                g("", &["c01", "c03"]),
                g("", &["c05", "c07"]),
                g("", &["c09"]),
            ],
        ),
        (
            "a named group matching nothing has no group",
            json!({"decisionGroups": [
                {"groupName": "none", "groupClusterSelector": {"labelSelector": {"matchLabels": {"zone": "z"}}}},
                {"groupName": "all", "groupClusterSelector": {}}
            ]}),
            None,
            vec![g("all", &ALL)],
        ),
        (
            "groups only hold selected clusters",
            json!({"decisionGroups": [
                {"groupName": "zone-b", "groupClusterSelector": {"labelSelector": {"matchLabels": {"zone": "b"}}}}
            ]}),
            Some(4),
            vec![g("zone-b", &["c01", "c03"]), g("", &["c00", "c02"])],
        ),
        (
            "nothing selected: one empty group",
            json!({"clustersPerDecisionGroup": 3}),
            Some(0),
            vec![g("", &[])],
        ),
    ];
    for (name, strategy, n, want) in cases {
        assert_eq!(groups(strategy, n), want, "{name}");
    }
}

#[test]
fn decisions_objects_labels_owner_and_status() {
    let result = fleet().schedule(&placement(
        "p",
        json!({"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": 6, "decisionGroups": [
            {"groupName": "canary", "groupClusterSelector": {"claimSelector": {"matchExpressions": [{"key": "canary", "operator": "Exists"}]}}}
        ]}}}),
    ));
    let names: Vec<String> = result
        .decisions
        .iter()
        .map(|d| d.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(
        names,
        strings(&["p-decision-1", "p-decision-2", "p-decision-3"])
    );
    let labels: Vec<(String, String, String)> = result
        .decisions
        .iter()
        .map(|d| {
            let l = d.metadata.labels.as_ref().unwrap();
            (
                l["cluster.open-cluster-management.io/placement"].clone(),
                l["cluster.open-cluster-management.io/decision-group-name"].clone(),
                l["cluster.open-cluster-management.io/decision-group-index"].clone(),
            )
        })
        .collect();
    assert_eq!(
        labels,
        vec![
            ("p".into(), "canary".into(), "0".into()),
            ("p".into(), "".into(), "1".into()),
            ("p".into(), "".into(), "2".into()),
        ]
    );
    for d in &result.decisions {
        assert_eq!(d.metadata.namespace.as_deref(), Some(NS));
        let owners = d.metadata.owner_references.as_ref().unwrap();
        assert_eq!(owners.len(), 1);
        let o = &owners[0];
        assert_eq!(
            (
                o.api_version.as_str(),
                o.kind.as_str(),
                o.name.as_str(),
                o.uid.as_str()
            ),
            (
                "cluster.open-cluster-management.io/v1beta1",
                "Placement",
                "p",
                "uid-p"
            )
        );
        assert_eq!(
            (o.controller, o.block_owner_deletion),
            (Some(true), Some(true))
        );
        for c in &d.status.as_ref().unwrap().decisions {
            assert_eq!((c.reason.as_str(), c.score), ("", None));
        }
    }
    let status: Vec<(i32, String, Vec<String>, i32)> = result
        .status
        .decision_groups
        .iter()
        .map(|g| {
            (
                g.decision_group_index,
                g.decision_group_name.clone(),
                g.decisions.clone(),
                g.clusters_count,
            )
        })
        .collect();
    assert_eq!(
        status,
        vec![
            (0, "canary".into(), strings(&["p-decision-1"]), 3),
            (1, "".into(), strings(&["p-decision-2"]), 6),
            (2, "".into(), strings(&["p-decision-3"]), 1),
        ]
    );
    assert_eq!(result.status.number_of_selected_clusters, 10);
}

#[test]
fn more_than_100_clusters_are_paged() {
    let result = World::fleet(250).schedule(&placement("p", json!({})));
    let pages: Vec<(String, usize)> = decision_clusters(&result)
        .into_iter()
        .map(|(n, c)| (n, c.len()))
        .collect();
    assert_eq!(
        pages,
        vec![
            ("p-decision-1".to_string(), 100),
            ("p-decision-2".to_string(), 100),
            ("p-decision-3".to_string(), 50)
        ]
    );
    let all: Vec<String> = decision_clusters(&result)
        .into_iter()
        .flat_map(|(_, c)| c)
        .collect();
    let mut sorted = all.clone();
    sorted.sort();
    assert_eq!(all, sorted, "pages follow cluster names");
    assert_eq!(result.status.decision_groups.len(), 1);
    assert_eq!(result.status.decision_groups[0].clusters_count, 250);
    assert_eq!(result.status.decision_groups[0].decisions.len(), 3);

    // Numbering continues across groups; each group pages on its own.
    let result = World::fleet(250).schedule(&placement(
        "p",
        json!({"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": 120}}}),
    ));
    let pages: Vec<(String, usize)> = decision_clusters(&result)
        .into_iter()
        .map(|(n, c)| (n, c.len()))
        .collect();
    assert_eq!(
        pages,
        vec![
            ("p-decision-1".to_string(), 100),
            ("p-decision-2".to_string(), 20),
            ("p-decision-3".to_string(), 100),
            ("p-decision-4".to_string(), 20),
            ("p-decision-5".to_string(), 10)
        ]
    );
}

#[test]
fn invalid_group_strategies_are_misconfigured() {
    let result = fleet().schedule(&placement(
        "p",
        json!({"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "abc"}}}),
    ));
    assert_eq!(
        misconfigured(&result),
        (
            "True".into(),
            "Misconfigured".into(),
            ":abc invalid type: string is not a percentage".into()
        )
    );
    // As upstream: the clusters are still selected, but no group and no decision is produced.
    assert_eq!(result.selected.len(), 10);
    assert!(result.groups.is_empty());
    assert!(result.decisions.is_empty());
    assert_eq!(satisfied(&result).1, "AllDecisionsScheduled");

    let result = fleet().schedule(&placement(
        "p",
        json!({"decisionStrategy": {"groupStrategy": {"decisionGroups": [
            {"groupName": "ok", "groupClusterSelector": {"labelSelector": {"matchLabels": {"zone": "a"}}}},
            {"groupName": "bad", "groupClusterSelector": {"labelSelector": {"matchExpressions": [{"key": "zone", "operator": "In"}]}}}
        ]}}}),
    ));
    assert_eq!(
        misconfigured(&result).2,
        ":values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
    );
    let kept: Vec<String> = result.groups.iter().map(|g| g.name.clone()).collect();
    assert_eq!(kept, strings(&["ok"]), "groups before the bad one are kept");
}
