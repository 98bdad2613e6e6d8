//! Prioritizers, weights, modes and score normalization.

use serde_json::{Value, json};

use crate::common::*;

/// Scores of each feasible cluster by the only prioritizer of an Exact policy.
fn scores_of(world: &World, prioritizer: Value) -> Vec<(String, i64)> {
    let p = placement(
        "p",
        json!({"prioritizerPolicy": {"mode": "Exact", "configurations": [prioritizer]}}),
    );
    let result = world.schedule(&p);
    assert_eq!(
        misconfigured(&result).0,
        "False",
        "{:?}",
        result.misconfiguration
    );
    assert_eq!(result.prioritizers.len(), 1);
    result
        .ranking
        .names()
        .zip(&result.ranking.scores[0])
        .map(|(c, s)| (c.to_string(), *s))
        .collect()
}

fn builtin(name: &str) -> Value {
    json!({"scoreCoordinate": {"builtIn": name}})
}

fn addon(resource: &str, score: &str) -> Value {
    json!({"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": resource, "scoreName": score}}})
}

fn pairs(v: &[(&str, i64)]) -> Vec<(String, i64)> {
    v.iter().map(|(n, s)| (n.to_string(), *s)).collect()
}

#[test]
fn balance() {
    let cases: Vec<(
        &str,
        Vec<std::sync::Arc<ocm_api::cluster::v1beta1::PlacementDecision>>,
        Vec<(&str, i64)>,
    )> = vec![
        (
            "no decisions anywhere",
            vec![],
            vec![("c00", 100), ("c01", 100), ("c02", 100), ("c03", 100)],
        ),
        (
            "counts of other placements, own decisions excluded",
            vec![
                decision(NS, "q", 1, &["c00", "c01"]),
                decision(NS, "r", 1, &["c00"]),
                decision("other", "p", 1, &["c02"]),
                decision(NS, "p", 1, &["c00", "c01", "c02", "c03"]),
            ],
            vec![("c00", -100), ("c01", 0), ("c02", 0), ("c03", 100)],
        ),
        (
            "truncation: 1 of 3 gives 2 × trunc(16.67) = 32",
            vec![
                decision(NS, "q", 1, &["c00", "c01"]),
                decision(NS, "r", 1, &["c00"]),
                decision(NS, "s", 1, &["c00"]),
            ],
            vec![("c00", -100), ("c01", 32), ("c02", 100), ("c03", 100)],
        ),
        (
            "the busiest cluster being busy only with this placement does not count",
            vec![
                decision(NS, "p", 1, &["c00"]),
                decision(NS, "p", 2, &["c00"]),
                decision(NS, "p", 3, &["c00"]),
                decision(NS, "q", 1, &["c01", "c02"]),
                decision(NS, "r", 1, &["c02"]),
            ],
            vec![("c00", 100), ("c01", 0), ("c02", -100), ("c03", 100)],
        ),
        (
            "decisions naming unknown clusters count towards the maximum",
            vec![
                decision(NS, "q", 1, &["gone", "c00"]),
                decision(NS, "r", 1, &["gone"]),
                decision(NS, "s", 1, &["gone"]),
                decision(NS, "t", 1, &["gone"]),
            ],
            vec![("c00", 2 * 25), ("c01", 100), ("c02", 100), ("c03", 100)],
        ),
    ];
    for (name, decisions, want) in cases {
        let world = World::fleet(4).decisions(decisions);
        assert_eq!(
            scores_of(&world, builtin("Balance")),
            pairs(&want),
            "{name}"
        );
    }
}

#[test]
fn steady() {
    let world = World::fleet(3).decisions(vec![
        decision(NS, "p", 1, &["c01"]),
        decision(NS, "q", 1, &["c02"]),
    ]);
    assert_eq!(
        scores_of(&world, builtin("Steady")),
        pairs(&[("c00", 0), ("c01", 100), ("c02", 0)])
    );
}

#[test]
fn allocatable_resources() {
    type Build = fn(&str, &str) -> ClusterBuilder;
    let cpu: Build = |n, v| cluster(n).cpu(v);
    let memory: Build = |n, v| cluster(n).memory(v);
    let cases: Vec<(&str, &str, Build, Vec<&str>, Vec<(&str, i64)>)> = vec![
        (
            "min -100, max 100",
            "ResourceAllocatableCPU",
            cpu,
            vec!["2", "4", "6"],
            vec![("c0", -100), ("c1", 0), ("c2", 100)],
        ),
        (
            "truncated toward zero",
            "ResourceAllocatableCPU",
            cpu,
            vec!["1", "2", "4"],
            vec![("c0", -100), ("c1", -33), ("c2", 100)],
        ),
        (
            "all equal: 100",
            "ResourceAllocatableCPU",
            cpu,
            vec!["3", "3"],
            vec![("c0", 100), ("c1", 100)],
        ),
        (
            "quantities with suffixes",
            "ResourceAllocatableCPU",
            cpu,
            vec!["3800m", "4", "2000m"],
            vec![("c0", 80), ("c1", 100), ("c2", -100)],
        ),
        (
            "memory",
            "ResourceAllocatableMemory",
            memory,
            vec!["1Gi", "3Gi", "2Gi"],
            vec![("c0", -100), ("c1", 100), ("c2", 0)],
        ),
    ];
    for (name, prioritizer, build, values, want) in cases {
        let clusters = values
            .iter()
            .enumerate()
            .map(|(i, v)| build(&format!("c{i}"), v).build())
            .collect();
        let world = World::new(clusters);
        assert_eq!(
            scores_of(&world, builtin(prioritizer)),
            pairs(&want),
            "{name}"
        );
    }

    // Clusters without the resource (or without its capacity) score 0 and do not count for
    // min/max.
    let world = World::new(vec![
        cluster("a").cpu("2").build(),
        cluster("b").cpu("8").build(),
        cluster("c").build(),
        cluster("d").cpu_without_capacity("100").build(),
        cluster("e").memory("1Gi").build(),
    ]);
    assert_eq!(
        scores_of(&world, builtin("ResourceAllocatableCPU")),
        pairs(&[("a", -100), ("b", 100), ("c", 0), ("d", 0), ("e", 0)])
    );
}

#[test]
fn addon_scores() {
    let world = World::fleet(5).scores(vec![
        score("c00", "demo", &[("cpu", 30), ("mem", 1)], Some(3600)),
        score("c01", "demo", &[("cpu", 90)], Some(600)),
        score("c02", "demo", &[("cpu", 100)], Some(-10)),
        score("c03", "other", &[("cpu", 100)], None),
        score("c04", "demo", &[("mem", 50)], None),
    ]);
    let p = placement(
        "p",
        json!({"prioritizerPolicy": {"mode": "Exact", "configurations": [addon("demo", "cpu")]}}),
    );
    let result = world.schedule(&p);
    assert_eq!(result.prioritizers[0].name, "AddOn/demo/cpu");
    let got: Vec<i64> = result.ranking.scores[0].clone();
    assert_eq!(
        got,
        vec![30, 90, 0, 0, 0],
        "valid, valid, expired, other object, no such score"
    );
    assert_eq!(result.warnings.len(), 1);
    assert_eq!(result.warnings[0].plugin, "AddOn/demo/cpu");
    assert_eq!(
        result.warnings[0].message,
        "AddOnPlacementScores c02/demo expired"
    );
    assert_eq!(
        result.requeue_at,
        Some(at(600)),
        "earliest validUntil still ahead"
    );
    assert_eq!(selected(&result)[..2], strings(&["c01", "c00"]));
    assert_eq!(misconfigured(&result).0, "False");
}

#[test]
fn modes_and_weights() {
    let world = World::new(vec![
        cluster("big").cpu("8").build(),
        cluster("mid").cpu("4").build(),
        cluster("small").cpu("1").build(),
    ])
    .decisions(vec![
        decision(NS, "p", 1, &["small"]),
        decision(NS, "q", 1, &["big"]),
    ]);
    // (case, policy, prioritizers, selection best first)
    let cases: Vec<(&str, Value, Vec<(&str, i32)>, Vec<&str>)> = vec![
        (
            "default: Balance and Steady",
            json!(null),
            vec![("Balance", 1), ("Steady", 1)],
            // small: 100 + 100, mid: 100 + 0, big: -100 + 0
            vec!["small", "mid", "big"],
        ),
        (
            "Additive adds CPU",
            json!({"configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}, "weight": 2}]}),
            vec![("Balance", 1), ("Steady", 1), ("ResourceAllocatableCPU", 2)],
            // small: 200 - 200 = 0, mid: 100 + 2 × trunc(-14.29) = 72, big: -100 + 200 = 100
            vec!["big", "mid", "small"],
        ),
        (
            "Additive overrides a default weight",
            json!({"mode": "Additive", "configurations": [{"scoreCoordinate": {"builtIn": "Steady"}, "weight": 3}]}),
            vec![("Balance", 1), ("Steady", 3)],
            vec!["small", "mid", "big"],
        ),
        (
            "weight 0 disables a default",
            json!({"configurations": [{"scoreCoordinate": {"builtIn": "Balance"}, "weight": 0}, {"scoreCoordinate": {"builtIn": "Steady"}, "weight": 0}]}),
            vec![],
            vec!["big", "mid", "small"],
        ),
        (
            "Exact uses only the configured ones, weight defaults to 1",
            json!({"mode": "Exact", "configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}}]}),
            vec![("ResourceAllocatableCPU", 1)],
            vec!["big", "mid", "small"],
        ),
        (
            "negative weight prefers the least",
            json!({"mode": "Exact", "configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}, "weight": -1}]}),
            vec![("ResourceAllocatableCPU", -1)],
            vec!["small", "mid", "big"],
        ),
        (
            "a built-in listed twice keeps its last weight",
            json!({"mode": "Exact", "configurations": [
                {"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}, "weight": 2},
                {"scoreCoordinate": {"builtIn": "Steady"}, "weight": 10},
                {"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}, "weight": -10}
            ]}),
            vec![("ResourceAllocatableCPU", -10), ("Steady", 10)],
            vec!["small", "mid", "big"],
        ),
        (
            "Exact with nothing: ties broken by name",
            json!({"mode": "Exact"}),
            vec![],
            vec!["big", "mid", "small"],
        ),
        (
            "an unknown built-in with weight 0 is not checked",
            json!({"mode": "Exact", "configurations": [{"scoreCoordinate": {"builtIn": "Nonsense"}, "weight": 0}]}),
            vec![],
            vec!["big", "mid", "small"],
        ),
    ];
    for (name, policy, want_prioritizers, want_order) in cases {
        let mut spec = json!({});
        if !policy.is_null() {
            spec["prioritizerPolicy"] = policy;
        }
        let result = world.schedule(&placement("p", spec));
        assert_eq!(misconfigured(&result).0, "False", "{name}");
        let got: Vec<(&str, i32)> = result
            .prioritizers
            .iter()
            .map(|p| (p.name.as_str(), p.weight))
            .collect();
        assert_eq!(got, want_prioritizers, "{name}");
        assert_eq!(selected(&result), strings(&want_order), "{name}");
        for s in &result.selected {
            let total: i64 = s
                .scores
                .iter()
                .zip(&result.prioritizers)
                .map(|(score, p)| score * i64::from(p.weight))
                .sum();
            assert_eq!(s.total, total, "{name}: total of {}", s.name);
        }
    }
}

#[test]
fn two_addon_prioritizers_both_count() {
    let world = World::fleet(2).scores(vec![
        score("c00", "a", &[("s", 10)], None),
        score("c01", "b", &[("s", 15)], None),
    ]);
    let result = world.schedule(&placement(
        "p",
        json!({"prioritizerPolicy": {"mode": "Exact", "configurations": [addon("a", "s"), addon("b", "s")]}}),
    ));
    let names: Vec<&str> = result
        .prioritizers
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(names, vec!["AddOn/a/s", "AddOn/b/s"]);
    assert_eq!(selected(&result), strings(&["c01", "c00"]));
    assert_eq!(result.selected[0].scores, vec![0, 15]);
}

#[test]
fn invalid_prioritizer_policies_are_misconfigured() {
    let cases = [
        (
            json!({"configurations": [{"scoreCoordinate": {"builtIn": "Nonsense"}}]}),
            ":incorrect builtin prioritizer: Nonsense",
        ),
        (
            json!({"mode": "Exact", "configurations": [{"scoreCoordinate": {"builtIn": "Spread"}, "weight": 2}]}),
            ":incorrect builtin prioritizer: Spread",
        ),
        (
            json!({"mode": "Bogus"}),
            ":incorrect prioritizer policy mode: Bogus",
        ),
        (
            json!({"configurations": [{"scoreCoordinate": {"type": "AddOn"}}]}),
            ":addOn should not be empty",
        ),
    ];
    for (policy, want) in cases {
        let result =
            World::fleet(3).schedule(&placement("p", json!({ "prioritizerPolicy": policy })));
        assert_eq!(
            misconfigured(&result),
            ("True".into(), "Misconfigured".into(), want.into())
        );
        assert!(result.selected.is_empty());
        assert!(result.ranking.is_empty());
        assert_eq!(satisfied(&result).1, "NoManagedClusterMatched");
        assert_eq!(
            decision_clusters(&result),
            vec![("p-decision-1".to_string(), vec![])]
        );
    }
}
