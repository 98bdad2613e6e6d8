//! Upstream's placement integration scenarios (reference §9) that the pure core can express:
//! each step changes the world, schedules, and "writes" the decisions back into the world.

use ocm_api::cluster::v1::TaintEffect;
use serde_json::json;

use crate::common::*;

#[test]
fn recreates_deleted_decisions() {
    let mut world = World::fleet(3);
    let mut p = placement("p", json!({}));
    let first = world.apply(&mut p);
    assert_eq!(first.decisions.len(), 1);
    // Someone deletes the decisions: the next run produces the same ones again.
    world.0.decisions.clear();
    let again = world.apply(&mut p);
    assert_eq!(decision_clusters(&again), decision_clusters(&first));
}

#[test]
fn terminating_clusters_are_dropped() {
    let mut world = World::fleet(3);
    let mut p = placement("p", json!({}));
    assert_eq!(world.apply(&mut p).selected.len(), 3);
    world.0.clusters[1] = cluster("c01").terminating().build();
    let result = world.apply(&mut p);
    assert_eq!(selected_sorted(&result), strings(&["c00", "c02"]));
}

#[test]
fn empty_decision_when_nothing_is_selected() {
    let mut world = World::new(vec![]);
    let mut p = placement("p", json!({}));
    let result = world.apply(&mut p);
    assert_eq!(
        decision_clusters(&result),
        vec![("p-decision-1".to_string(), vec![])]
    );
    assert_eq!(result.status.decision_groups.len(), 1);
    assert_eq!(result.status.decision_groups[0].clusters_count, 0);
    assert_eq!(satisfied(&result).1, "AllManagedClusterSetsEmpty");
}

#[test]
fn decisions_shrink_and_grow_across_100() {
    let mut world = World::fleet(230);
    let mut p = placement("p", json!({}));
    assert_eq!(world.apply(&mut p).decisions.len(), 3);
    world.0.clusters.truncate(90);
    let result = world.apply(&mut p);
    assert_eq!(
        result.decisions.len(),
        1,
        "surplus decisions are no longer wanted"
    );
    assert_eq!(world.0.decisions.len(), 1);
}

#[test]
fn cluster_sets_change() {
    let mut world = World::new(vec![
        cluster("a1").set("a").build(),
        cluster("b1").set("b").build(),
    ])
    .sets(vec![exclusive_set("a"), exclusive_set("b")])
    .bindings(vec![binding(NS, "a"), binding(NS, "b")]);
    let mut p = placement("p", json!({"clusterSets": ["a"]}));
    assert_eq!(selected(&world.apply(&mut p)), strings(&["a1"]));
    p.spec.cluster_sets = vec!["b".into()];
    assert_eq!(selected(&world.apply(&mut p)), strings(&["b1"]));
    // The set is unbound: no intersection any more.
    world
        .0
        .bindings
        .retain(|b| b.metadata.name.as_deref() != Some("b"));
    let result = world.apply(&mut p);
    assert!(result.selected.is_empty());
    assert_eq!(satisfied(&result).1, "NoIntersection");
    // A cluster moves into set a and p selects all of a.
    p.spec.cluster_sets.clear();
    world.0.clusters[1] = cluster("b1").set("a").build();
    assert_eq!(
        selected_sorted(&world.apply(&mut p)),
        strings(&["a1", "b1"])
    );
}

#[test]
fn number_of_clusters_up_and_down_keeps_existing_choices() {
    let mut world = World::fleet(6);
    let mut p = placement("p", json!({"numberOfClusters": 2}));
    assert_eq!(
        selected_sorted(&world.apply(&mut p)),
        strings(&["c00", "c01"])
    );
    // Another placement now uses c00 and c02, so Balance gives them -100.
    world
        .0
        .decisions
        .push(decision(NS, "other", 1, &["c00", "c02"]));
    p.spec.number_of_clusters = Some(4);
    let up = world.apply(&mut p);
    // c01: Steady 100 + Balance 100; c03..c05: 0 + 100; c00: 100 - 100; c02: 0 - 100.
    assert_eq!(selected_sorted(&up), strings(&["c01", "c03", "c04", "c05"]));
    assert_eq!(up.selected[0].total, 200);
    p.spec.number_of_clusters = Some(3);
    let down = world.apply(&mut p);
    // All four current ones have 200 now; ties go by name.
    assert_eq!(selected_sorted(&down), strings(&["c01", "c03", "c04"]));
    p.spec.number_of_clusters = Some(10);
    let over = world.apply(&mut p);
    assert_eq!(over.selected.len(), 6);
    assert_eq!(satisfied(&over).2, "4 cluster decisions unscheduled");
}

#[test]
fn misconfiguration_fixed() {
    let mut world = World::fleet(2);
    let mut p = placement("p", json!({"tolerations": [{"operator": "Equal"}]}));
    let broken = world.apply(&mut p);
    assert_eq!(misconfigured(&broken).0, "True");
    let broken_time = condition(&broken, "PlacementSatisfied")
        .last_transition_time
        .clone();
    assert_eq!(satisfied(&broken).1, "NoManagedClusterMatched");

    world.0.now = at(60);
    p.spec.tolerations.clear();
    let fixed = world.apply(&mut p);
    assert_eq!(
        misconfigured(&fixed),
        (
            "False".into(),
            "Succeedconfigured".into(),
            "Placement configurations check pass".into()
        )
    );
    assert_eq!(satisfied(&fixed).1, "AllDecisionsScheduled");
    assert_eq!(selected_sorted(&fixed), strings(&["c00", "c01"]));
    // Status changed: new transition time.
    assert_ne!(
        condition(&fixed, "PlacementSatisfied").last_transition_time,
        broken_time
    );
    let order: Vec<&str> = fixed
        .status
        .conditions
        .iter()
        .map(|c| c.type_.as_str())
        .collect();
    assert_eq!(order, vec!["PlacementMisconfigured", "PlacementSatisfied"]);

    // Nothing changes: transition times stay.
    world.0.now = at(120);
    let same = world.apply(&mut p);
    assert_eq!(same.status.conditions, fixed.status.conditions);
    assert_eq!(same.status.conditions[0].observed_generation, Some(1));
}

#[test]
fn score_updates_change_the_choice() {
    let spec = json!({"numberOfClusters": 1, "prioritizerPolicy": {"mode": "Exact", "configurations": [
        {"scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "demo", "scoreName": "s"}}, "weight": 1}
    ]}});
    let mut world = World::fleet(3).scores(vec![
        score("c00", "demo", &[("s", 10)], None),
        score("c01", "demo", &[("s", 50)], Some(300)),
    ]);
    let mut p = placement("p", spec);
    let first = world.apply(&mut p);
    assert_eq!(selected(&first), strings(&["c01"]));
    assert_eq!(first.requeue_at, Some(at(300)));
    // c02 reports a better score.
    world
        .0
        .scores
        .push(score("c02", "demo", &[("s", 90)], None));
    assert_eq!(selected(&world.apply(&mut p)), strings(&["c02"]));
    // c02's score is updated down; c01's expires when the clock passes validUntil.
    world
        .0
        .scores
        .retain(|s| s.metadata.namespace.as_deref() != Some("c02"));
    world.0.scores.push(score("c02", "demo", &[("s", 5)], None));
    world.0.now = at(301);
    let later = world.apply(&mut p);
    assert_eq!(selected(&later), strings(&["c00"]));
    assert_eq!(
        later.warnings[0].message,
        "AddOnPlacementScores c01/demo expired"
    );
}

#[test]
fn taint_changes() {
    let mut world = World::fleet(3);
    let mut p = placement(
        "p",
        json!({"tolerations": [{"key": "cluster.open-cluster-management.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}]}),
    );
    assert_eq!(world.apply(&mut p).selected.len(), 3);

    // c00 becomes unavailable: not tolerated, dropped.
    world.0.clusters[0] = cluster("c00")
        .taint(
            "cluster.open-cluster-management.io/unavailable",
            "",
            TaintEffect::NoSelect,
            Some(0),
        )
        .build();
    // c01 becomes unreachable: tolerated for 300 s.
    world.0.clusters[1] = cluster("c01")
        .taint(
            "cluster.open-cluster-management.io/unreachable",
            "",
            TaintEffect::NoSelect,
            Some(0),
        )
        .build();
    let tainted = world.apply(&mut p);
    assert_eq!(selected_sorted(&tainted), strings(&["c01", "c02"]));
    assert_eq!(tainted.requeue_at, Some(at(300)));

    // At the requeue time the toleration has expired.
    world.0.now = at(300);
    let expired = world.apply(&mut p);
    assert_eq!(selected_sorted(&expired), strings(&["c02"]));
    assert_eq!(expired.requeue_at, None);

    // The taints are removed: both come back.
    world.0.clusters[0] = cluster("c00").build();
    world.0.clusters[1] = cluster("c01").build();
    assert_eq!(selected_sorted(&world.apply(&mut p)).len(), 3);

    // NoSelectIfNew keeps selected clusters and refuses new ones.
    world.0.clusters[2] = cluster("c02")
        .taint("drain", "", TaintEffect::NoSelectIfNew, Some(0))
        .build();
    world.0.clusters.push(
        cluster("c03")
            .taint("drain", "", TaintEffect::NoSelectIfNew, Some(0))
            .build(),
    );
    assert_eq!(
        selected_sorted(&world.apply(&mut p)),
        strings(&["c00", "c01", "c02"])
    );
}

#[test]
fn predicate_changes() {
    let mut world = World::new(vec![
        cluster("a")
            .label("env", "prod")
            .claim("region", "us")
            .build(),
        cluster("b")
            .label("env", "dev")
            .claim("region", "eu")
            .build(),
    ]);
    let mut p = placement(
        "p",
        json!({"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}}]}),
    );
    assert_eq!(selected(&world.apply(&mut p)), strings(&["a"]));
    world.0.clusters[1] = cluster("b").label("env", "prod").build();
    assert_eq!(selected_sorted(&world.apply(&mut p)), strings(&["a", "b"]));
    p.spec = placement(
        "p",
        json!({"predicates": [{"requiredClusterSelector": {"celSelector": {"celExpressions": [
            "managedCluster.status.clusterClaims.exists(c, c.name == \"region\" && c.value == \"us\")"
        ]}}}]}),
    )
    .spec;
    assert_eq!(selected(&world.apply(&mut p)), strings(&["a"]));
}
