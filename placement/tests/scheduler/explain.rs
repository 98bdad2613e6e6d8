//! Per-cluster explanations.

use ocm_api::cluster::v1::TaintEffect;
use ocm_placement::scheduler::{
    ClusterVerdict, PredicatePart, ScoredOutcome, SpreadReason, TaintRejection, explain,
};
use serde_json::json;

use crate::common::*;

fn verdicts(world: &World, spec: serde_json::Value) -> Vec<(String, ClusterVerdict)> {
    let snapshot = world.snapshot();
    let explanation = explain(&placement("p", spec), &snapshot);
    explanation
        .clusters
        .into_iter()
        .map(|c| (c.cluster, c.verdict))
        .collect()
}

#[test]
fn every_cluster_gets_a_verdict() {
    let world = World::new(vec![
        cluster("best").label("env", "prod").cpu("8").build(),
        cluster("dev").label("env", "dev").cpu("8").build(),
        cluster("dying").label("env", "prod").terminating().build(),
        cluster("elsewhere")
            .set("other")
            .label("env", "prod")
            .build(),
        cluster("second").label("env", "prod").cpu("2").build(),
        cluster("tainted")
            .label("env", "prod")
            .taint("k", "v", TaintEffect::NoSelect, Some(500))
            .build(),
    ])
    .sets(vec![exclusive_set("default"), exclusive_set("other")]);
    let spec = json!({
        "numberOfClusters": 1,
        "predicates": [
            {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}},
            {"requiredClusterSelector": {"celSelector": {"celExpressions": ["managedCluster.metadata.name == \"x\""]}}}
        ],
        "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 60}],
        "prioritizerPolicy": {"mode": "Exact", "configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}, "weight": 2}]}
    });
    let got = verdicts(&world, spec);
    let find = |name: &str| {
        got.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap()
    };

    assert!(matches!(
        find("best"),
        ClusterVerdict::Scored { total: 200, rank: 1, outcome: ScoredOutcome::Selected, ref scores }
            if scores.len() == 1 && scores[0].name == "ResourceAllocatableCPU" && scores[0].weight == 2 && scores[0].score == 100
    ));
    assert!(matches!(
        find("second"),
        ClusterVerdict::Scored {
            total: -200,
            rank: 2,
            outcome: ScoredOutcome::NotSelected,
            ..
        }
    ));
    assert_eq!(find("dying"), ClusterVerdict::Terminating);
    assert_eq!(
        find("elsewhere"),
        ClusterVerdict::NotInEligibleSets {
            member_of: strings(&["other"])
        }
    );
    match find("dev") {
        ClusterVerdict::PredicatesNotMatched { misses } => {
            assert_eq!(misses.len(), 2);
            assert_eq!(misses[0].part, PredicatePart::LabelSelector);
            assert_eq!(
                misses[1].part,
                PredicatePart::CelExpression {
                    index: 0,
                    expression: "managedCluster.metadata.name == \"x\"".into(),
                    error: None
                }
            );
            let text = ClusterVerdict::PredicatesNotMatched { misses }.to_string();
            assert_eq!(
                text,
                "filtered: no predicate matches; predicates[0]: labelSelector does not match; predicates[1]: celExpressions[0] `managedCluster.metadata.name == \"x\"` is false"
            );
        }
        other => panic!("dev: {other:?}"),
    }
    match find("tainted") {
        ClusterVerdict::TaintNotTolerated { taint, rejection } => {
            assert_eq!(taint.key, "k");
            assert_eq!(
                rejection,
                TaintRejection::TolerationExpired { at: Some(at(-440)) }
            );
        }
        other => panic!("tainted: {other:?}"),
    }
    assert_eq!(got.len(), 6);
}

#[test]
fn misconfigured_and_spread_verdicts() {
    let world = World::fleet(2);
    let got = verdicts(&world, json!({"prioritizerPolicy": {"mode": "Nope"}}));
    assert!(got.iter().all(|(_, v)| *v == ClusterVerdict::NotEvaluated));

    let world = World::new(vec![
        cluster("a").label("zone", "z").build(),
        cluster("b").build(),
    ]);
    let got = verdicts(
        &world,
        json!({"spreadPolicy": {"spreadConstraints": [
            {"topologyKey": "zone", "topologyKeyType": "Label", "whenUnsatisfiable": "DoNotSchedule"}
        ]}}),
    );
    assert!(matches!(
        got[0].1,
        ClusterVerdict::Scored {
            outcome: ScoredOutcome::Selected,
            ..
        }
    ));
    assert!(matches!(
        got[1].1,
        ClusterVerdict::Scored {
            outcome: ScoredOutcome::SpreadRejected {
                constraint: 0,
                reason: SpreadReason::MissingTopologyKey
            },
            ..
        }
    ));
    assert!(
        got[1]
            .1
            .to_string()
            .starts_with("not selected: spreadConstraints[0] topology key missing")
    );
}
