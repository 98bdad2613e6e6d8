//! Eligible sets, bindings, candidates and terminating clusters.

use serde_json::json;

use crate::common::*;

/// Clusters `a1`, `a2`, `a-dying` (terminating) in set `a`, `b1` in set `b`, `x1` in no set
/// labelled `env=prod`, `x2` in no set.
fn fleet() -> World {
    World::new(vec![
        cluster("a1").set("a").label("env", "prod").build(),
        cluster("a2").set("a").build(),
        cluster("a-dying").set("a").terminating().build(),
        cluster("b1").set("b").label("env", "prod").build(),
        cluster("x1").set("").label("env", "prod").build(),
        cluster("x2").set("").build(),
    ])
}

#[test]
fn eligible_sets_bindings_and_candidates() {
    struct Case {
        name: &'static str,
        sets: Vec<std::sync::Arc<ocm_api::cluster::v1beta2::ManagedClusterSet>>,
        bindings: Vec<(&'static str, &'static str)>,
        spec_sets: Vec<&'static str>,
        want: Vec<&'static str>,
        reason: &'static str,
        message: &'static str,
    }
    let cases = vec![
        Case {
            name: "no binding",
            sets: vec![exclusive_set("a")],
            bindings: vec![],
            spec_sets: vec![],
            want: vec![],
            reason: "NoManagedClusterSetBindings",
            message: "No valid ManagedClusterSetBindings found in placement namespace",
        },
        Case {
            name: "binding to a missing set",
            sets: vec![exclusive_set("b")],
            bindings: vec![(NS, "a")],
            spec_sets: vec![],
            want: vec![],
            reason: "NoManagedClusterSetBindings",
            message: "No valid ManagedClusterSetBindings found in placement namespace",
        },
        Case {
            name: "binding in another namespace",
            sets: vec![exclusive_set("a")],
            bindings: vec![("other", "a")],
            spec_sets: vec![],
            want: vec![],
            reason: "NoManagedClusterSetBindings",
            message: "No valid ManagedClusterSetBindings found in placement namespace",
        },
        Case {
            name: "spec.clusterSets not bound",
            sets: vec![exclusive_set("a"), exclusive_set("b")],
            bindings: vec![(NS, "a")],
            spec_sets: vec!["b", "c"],
            want: vec![],
            reason: "NoIntersection",
            message: "None of ManagedClusterSets [b,c] is bound to placement namespace",
        },
        Case {
            name: "bound set is empty",
            sets: vec![exclusive_set("empty")],
            bindings: vec![(NS, "empty")],
            spec_sets: vec![],
            want: vec![],
            reason: "AllManagedClusterSetsEmpty",
            message: "All ManagedClusterSets [empty] have no member ManagedCluster",
        },
        Case {
            name: "exclusive set, terminating member excluded",
            sets: vec![exclusive_set("a"), exclusive_set("b")],
            bindings: vec![(NS, "a")],
            spec_sets: vec![],
            want: vec!["a1", "a2"],
            reason: "AllDecisionsScheduled",
            message: "All cluster decisions scheduled",
        },
        Case {
            name: "all bound sets when spec.clusterSets is empty",
            sets: vec![exclusive_set("a"), exclusive_set("b")],
            bindings: vec![(NS, "a"), (NS, "b")],
            spec_sets: vec![],
            want: vec!["a1", "a2", "b1"],
            reason: "AllDecisionsScheduled",
            message: "All cluster decisions scheduled",
        },
        Case {
            name: "spec.clusterSets narrows the bound sets",
            sets: vec![exclusive_set("a"), exclusive_set("b")],
            bindings: vec![(NS, "a"), (NS, "b")],
            spec_sets: vec!["b", "zzz"],
            want: vec!["b1"],
            reason: "AllDecisionsScheduled",
            message: "All cluster decisions scheduled",
        },
        Case {
            name: "label-selector set",
            sets: vec![selector_set(
                "prod",
                Some(json!({"matchLabels": {"env": "prod"}})),
            )],
            bindings: vec![(NS, "prod")],
            spec_sets: vec![],
            want: vec!["a1", "b1", "x1"],
            reason: "AllDecisionsScheduled",
            message: "All cluster decisions scheduled",
        },
        Case {
            name: "global set (empty selector) selects every cluster",
            sets: vec![selector_set("global", Some(json!({})))],
            bindings: vec![(NS, "global")],
            spec_sets: vec![],
            want: vec!["a1", "a2", "b1", "x1", "x2"],
            reason: "AllDecisionsScheduled",
            message: "All cluster decisions scheduled",
        },
        Case {
            name: "label-selector set without selector selects nothing",
            sets: vec![selector_set("none", None)],
            bindings: vec![(NS, "none")],
            spec_sets: vec![],
            want: vec![],
            reason: "AllManagedClusterSetsEmpty",
            message: "All ManagedClusterSets [none] have no member ManagedCluster",
        },
        Case {
            name: "overlapping sets are merged",
            sets: vec![
                exclusive_set("a"),
                selector_set("prod", Some(json!({"matchLabels": {"env": "prod"}}))),
            ],
            bindings: vec![(NS, "prod"), (NS, "a")],
            spec_sets: vec![],
            want: vec!["a1", "a2", "b1", "x1"],
            reason: "AllDecisionsScheduled",
            message: "All cluster decisions scheduled",
        },
    ];
    for case in cases {
        let world = fleet()
            .sets(case.sets)
            .bindings(case.bindings.iter().map(|(ns, s)| binding(ns, s)).collect());
        let p = placement("p", json!({"clusterSets": case.spec_sets}));
        let result = world.schedule(&p);
        assert_eq!(
            selected_sorted(&result),
            strings(&case.want),
            "{}",
            case.name
        );
        let (status, reason, message) = satisfied(&result);
        assert_eq!(reason, case.reason, "{}", case.name);
        assert_eq!(message, case.message, "{}", case.name);
        assert_eq!(
            status == "True",
            case.reason == "AllDecisionsScheduled",
            "{}",
            case.name
        );
        assert_eq!(
            misconfigured(&result).1,
            "Succeedconfigured",
            "{}",
            case.name
        );
    }
}

#[test]
fn terminating_clusters_are_reported_and_never_selected() {
    let world = fleet()
        .sets(vec![exclusive_set("a")])
        .bindings(vec![binding(NS, "a")]);
    let result = world.schedule(&placement("p", json!({})));
    assert_eq!(selected_sorted(&result), strings(&["a1", "a2"]));
    assert_eq!(result.available_clusters, 2);
    assert_eq!(result.filtered.len(), 1);
    assert_eq!(result.filtered[0].name.as_ref(), "a-dying");
    assert_eq!(
        result.filtered[0].reason,
        ocm_placement::scheduler::FilterReason::Terminating
    );

    let only_dying = World::new(vec![cluster("d").terminating().build()]);
    let result = only_dying.schedule(&placement("p", json!({})));
    assert_eq!(satisfied(&result).1, "AllManagedClusterSetsEmpty");
}

#[test]
fn invalid_set_selector_selects_nothing_with_a_warning() {
    let world = fleet()
        .sets(vec![selector_set(
            "bad",
            Some(json!({"matchExpressions": [{"key": "env", "operator": "In"}]})),
        )])
        .bindings(vec![binding(NS, "bad")]);
    let result = world.schedule(&placement("p", json!({})));
    assert!(result.selected.is_empty());
    assert_eq!(satisfied(&result).1, "AllManagedClusterSetsEmpty");
    assert_eq!(result.warnings.len(), 1);
    assert!(
        result.warnings[0]
            .message
            .starts_with("ManagedClusterSet bad selects no cluster"),
        "{:?}",
        result.warnings
    );
}

#[test]
fn skipped_placements() {
    let world = fleet()
        .sets(vec![exclusive_set("a")])
        .bindings(vec![binding(NS, "a")]);
    let mut p = placement("p", json!({}));
    p.metadata.annotations = Some(
        [(
            "cluster.open-cluster-management.io/experimental-scheduling-disable".to_string(),
            "true".to_string(),
        )]
        .into_iter()
        .collect(),
    );
    let result = world.schedule(&p);
    assert_eq!(
        result.skipped,
        Some(ocm_placement::scheduler::SkipReason::SchedulingDisabled)
    );
    assert!(result.decisions.is_empty());

    let mut p = placement("p", json!({}));
    p.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now()));
    let result = world.schedule(&p);
    assert_eq!(
        result.skipped,
        Some(ocm_placement::scheduler::SkipReason::Deleting)
    );
    assert!(result.decisions.is_empty());
}
