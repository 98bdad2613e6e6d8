//! spreadPolicy: maxSkew over label or claim topologies, DoNotSchedule and ScheduleAnyway.

use ocm_placement::scheduler::SpreadReason;
use serde_json::{Value, json};

use crate::common::*;

/// Zones by label: a0..a3 (cpu 10..7, best ranked), b0, b1 (cpu 5, 4), c0 (cpu 1), and n0
/// without zone (cpu 0.5). Claims `region`: a* and b0 in `east`, the rest in `west`.
fn fleet() -> World {
    let c = |name: &str, zone: Option<&str>, cpu: &str, region: &str| {
        let mut b = cluster(name).cpu(cpu).claim("region", region);
        if let Some(z) = zone {
            b = b.label("zone", z);
        }
        b.build()
    };
    World::new(vec![
        c("a0", Some("a"), "10", "east"),
        c("a1", Some("a"), "9", "east"),
        c("a2", Some("a"), "8", "east"),
        c("a3", Some("a"), "7", "east"),
        c("b0", Some("b"), "5", "east"),
        c("b1", Some("b"), "4", "west"),
        c("c0", Some("c"), "1", "west"),
        c("n0", None, "500m", "west"),
    ])
}

fn spec(n: Option<i32>, constraints: Value) -> Value {
    let mut spec = json!({
        "prioritizerPolicy": {"mode": "Exact", "configurations": [
            {"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}}
        ]},
        "spreadPolicy": {"spreadConstraints": constraints}
    });
    if let Some(n) = n {
        spec["numberOfClusters"] = json!(n);
    }
    spec
}

fn zone(max_skew: i32, when: &str) -> Value {
    json!({"topologyKey": "zone", "topologyKeyType": "Label", "maxSkew": max_skew, "whenUnsatisfiable": when})
}

#[test]
fn spread_constraints() {
    // (case, numberOfClusters, constraints, selected best first, satisfied reason)
    let cases: Vec<(&str, Option<i32>, Value, Vec<&str>, &str)> = vec![
        (
            "no constraint: best ranked",
            Some(4),
            json!([]),
            vec!["a0", "a1", "a2", "a3"],
            "AllDecisionsScheduled",
        ),
        (
            "DoNotSchedule maxSkew 1 spreads over zones",
            Some(4),
            json!([zone(1, "DoNotSchedule")]),
            vec!["a0", "a1", "b0", "c0"],
            "AllDecisionsScheduled",
        ),
        (
            "DoNotSchedule stops when the skew cannot be kept",
            Some(7),
            json!([zone(1, "DoNotSchedule")]),
            vec!["a0", "a1", "b0", "b1", "c0"],
            "NotAllDecisionsScheduled",
        ),
        (
            "DoNotSchedule maxSkew 2",
            Some(7),
            json!([zone(2, "DoNotSchedule")]),
            vec!["a0", "a1", "a2", "b0", "b1", "c0"],
            "NotAllDecisionsScheduled",
        ),
        (
            "ScheduleAnyway reaches the count, spreading first",
            Some(7),
            json!([zone(1, "ScheduleAnyway")]),
            vec!["a0", "a1", "a2", "b0", "b1", "c0", "n0"],
            "AllDecisionsScheduled",
        ),
        (
            "ScheduleAnyway is the default",
            Some(4),
            json!([{"topologyKey": "zone", "topologyKeyType": "Label"}]),
            vec!["a0", "a1", "b0", "c0"],
            "AllDecisionsScheduled",
        ),
        (
            "without numberOfClusters, DoNotSchedule leaves clusters out",
            None,
            json!([zone(1, "DoNotSchedule")]),
            vec!["a0", "a1", "b0", "b1", "c0"],
            "NotAllDecisionsScheduled",
        ),
        (
            "without numberOfClusters, ScheduleAnyway selects all",
            None,
            json!([zone(1, "ScheduleAnyway")]),
            vec!["a0", "a1", "a2", "a3", "b0", "b1", "c0", "n0"],
            "AllDecisionsScheduled",
        ),
        (
            "claim topology",
            Some(4),
            json!([{"topologyKey": "region", "topologyKeyType": "Claim", "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}]),
            vec!["a0", "a1", "b1", "c0"],
            "AllDecisionsScheduled",
        ),
        (
            "a label key is not a claim",
            Some(2),
            json!([{"topologyKey": "zone", "topologyKeyType": "Claim", "whenUnsatisfiable": "DoNotSchedule"}]),
            vec![],
            "NoManagedClusterMatched",
        ),
        (
            "hard zone, soft region: region decides among zone-equal choices",
            Some(3),
            json!([
                zone(1, "DoNotSchedule"),
                {"topologyKey": "region", "topologyKeyType": "Claim", "maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway"}
            ]),
            // a0 (east), then b0 would make east 2 vs west 0: b1 (west) is preferred; then c0.
            vec!["a0", "b1", "c0"],
            "AllDecisionsScheduled",
        ),
    ];
    for (name, n, constraints, want, reason) in cases {
        let result = fleet().schedule(&placement("p", spec(n, constraints)));
        assert_eq!(
            misconfigured(&result).0,
            "False",
            "{name}: {:?}",
            result.misconfiguration
        );
        assert_eq!(selected(&result), strings(&want), "{name}");
        assert_eq!(satisfied(&result).1, reason, "{name}");
    }
}

#[test]
fn spread_rejections_are_reported() {
    let result = fleet().schedule(&placement(
        "p",
        spec(Some(7), json!([zone(1, "DoNotSchedule")])),
    ));
    let rejected: Vec<(String, usize, SpreadReason)> = result
        .spread_rejected
        .iter()
        .map(|r| (r.name.to_string(), r.constraint, r.reason))
        .collect();
    assert_eq!(
        rejected,
        vec![
            ("a2".to_string(), 0, SpreadReason::WouldExceedMaxSkew),
            ("a3".to_string(), 0, SpreadReason::WouldExceedMaxSkew),
            ("n0".to_string(), 0, SpreadReason::MissingTopologyKey),
        ]
    );
    assert_eq!(satisfied(&result).2, "2 cluster decisions unscheduled");

    // When the count is reached, the remaining clusters are simply not selected.
    let result = fleet().schedule(&placement(
        "p",
        spec(Some(2), json!([zone(1, "DoNotSchedule")])),
    ));
    let rejected: Vec<String> = result
        .spread_rejected
        .iter()
        .map(|r| r.name.to_string())
        .collect();
    assert_eq!(rejected, strings(&["n0"]));
}

#[test]
fn one_domain_never_skews() {
    let world = World::new(
        (0..5)
            .map(|i| cluster(&format!("c{i}")).label("zone", "a").build())
            .collect(),
    );
    let result = world.schedule(&placement("p", json!({"numberOfClusters": 3, "spreadPolicy": {"spreadConstraints": [zone(1, "DoNotSchedule")]}})));
    assert_eq!(selected(&result), strings(&["c0", "c1", "c2"]));
}

#[test]
fn invalid_spread_constraints_are_misconfigured() {
    let cases = [
        (
            json!([zone(0, "DoNotSchedule")]),
            "Spread:spreadConstraints[0].maxSkew must be at least 1",
        ),
        (
            json!([zone(1, "DoNotSchedule"), {"topologyKey": "", "topologyKeyType": "Label"}]),
            "Spread:spreadConstraints[1].topologyKey must not be empty",
        ),
    ];
    for (constraints, want) in cases {
        let result = fleet().schedule(&placement("p", spec(Some(2), constraints)));
        assert_eq!(misconfigured(&result).2, want);
        assert!(result.selected.is_empty());
    }
}
