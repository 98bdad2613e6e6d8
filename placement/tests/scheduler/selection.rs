//! numberOfClusters, ordering and the PlacementSatisfied outcome of the selection.

use serde_json::json;

use crate::common::*;

#[test]
fn number_of_clusters() {
    // (case, numberOfClusters, selected, unscheduled, reason, message)
    let cases: Vec<(&str, Option<i32>, usize, i64, &str, &str)> = vec![
        (
            "unset selects all",
            None,
            5,
            0,
            "AllDecisionsScheduled",
            "All cluster decisions scheduled",
        ),
        (
            "fewer than feasible",
            Some(2),
            2,
            0,
            "AllDecisionsScheduled",
            "All cluster decisions scheduled",
        ),
        (
            "exactly feasible",
            Some(5),
            5,
            0,
            "AllDecisionsScheduled",
            "All cluster decisions scheduled",
        ),
        (
            "more than feasible",
            Some(7),
            5,
            2,
            "NotAllDecisionsScheduled",
            "2 cluster decisions unscheduled",
        ),
        (
            "zero",
            Some(0),
            0,
            0,
            "NoManagedClusterMatched",
            "No ManagedCluster matches any of the cluster predicate",
        ),
        (
            "negative selects nothing",
            Some(-1),
            0,
            -1,
            "NoManagedClusterMatched",
            "No ManagedCluster matches any of the cluster predicate",
        ),
    ];
    for (name, n, count, unscheduled, reason, message) in cases {
        let spec = match n {
            Some(n) => json!({ "numberOfClusters": n }),
            None => json!({}),
        };
        let result = World::fleet(5).schedule(&placement("p", spec));
        assert_eq!(result.selected.len(), count, "{name}");
        assert_eq!(
            result.status.number_of_selected_clusters as usize, count,
            "{name}"
        );
        assert_eq!(result.unscheduled, unscheduled, "{name}");
        let (status, r, m) = satisfied(&result);
        assert_eq!((r.as_str(), m.as_str()), (reason, message), "{name}");
        assert_eq!(
            status == "True",
            reason == "AllDecisionsScheduled",
            "{name}"
        );
    }
}

#[test]
fn best_total_first_then_name() {
    let world = World::new(vec![
        cluster("d").cpu("1").build(),
        cluster("c").cpu("9").build(),
        cluster("b").cpu("5").build(),
        cluster("a").cpu("5").build(),
        cluster("e").build(),
    ]);
    let result = world.schedule(&placement(
        "p",
        json!({"numberOfClusters": 3, "prioritizerPolicy": {"mode": "Exact", "configurations": [
            {"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}}
        ]}}),
    ));
    // c: 100, a and b: 0 (tie, by name), e: 0 (no resource; after a and b by name), d: -100.
    assert_eq!(selected(&result), strings(&["c", "a", "b"]));
    let totals: Vec<i64> = result.selected.iter().map(|s| s.total).collect();
    assert_eq!(totals, vec![100, 0, 0]);
    // Decisions list clusters by name.
    assert_eq!(
        decision_clusters(&result),
        vec![("p-decision-1".to_string(), strings(&["a", "b", "c"]))]
    );
}
