use super::*;
use serde_json::json;

fn now() -> Timestamp {
    "2026-01-01T12:00:00Z".parse().unwrap()
}

fn replica_set(extra: serde_json::Value) -> ManifestWorkReplicaSet {
    let mut value = json!({
        "apiVersion": "work.open-cluster-management.io/v1alpha1",
        "kind": "ManifestWorkReplicaSet",
        "metadata": {"name": "app", "namespace": "default", "labels": {"team": "a"}},
        "spec": {
            "manifestWorkTemplate": {"workload": {"manifests": [
                {"apiVersion": "apps/v1", "kind": "Deployment",
                 "metadata": {"name": "web", "namespace": "demo"}, "spec": {"replicas": 1}}
            ]}},
            "placementRefs": [{"name": "p"}],
            "cascadeDeletionPolicy": "Background"
        }
    });
    json_merge(&mut value, extra);
    serde_json::from_value(value).unwrap()
}

fn json_merge(target: &mut serde_json::Value, patch: serde_json::Value) {
    json_patch::merge(target, &patch);
}

fn placement(selected: i32) -> BTreeMap<String, Placement> {
    let p: Placement = serde_json::from_value(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {},
        "status": {"numberOfSelectedClusters": selected,
                   "decisionGroups": [{"decisionGroupIndex": 0, "decisionGroupName": "",
                                       "decisions": ["p-decision-1"], "clusterCount": selected}]}
    }))
    .unwrap();
    BTreeMap::from([("p".to_owned(), p)])
}

fn decision(clusters: &[&str]) -> PlacementDecision {
    let decisions: Vec<_> = clusters
        .iter()
        .map(|c| json!({"clusterName": c, "reason": ""}))
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "PlacementDecision",
        "metadata": {"name": "p-decision-1", "namespace": "default", "labels": {
            "cluster.open-cluster-management.io/placement": "p",
            "cluster.open-cluster-management.io/decision-group-index": "0",
            "cluster.open-cluster-management.io/decision-group-name": ""}},
        "status": {"decisions": decisions}
    }))
    .unwrap()
}

fn work(
    cluster: &str,
    rs: &ManifestWorkReplicaSet,
    applied: bool,
    available: bool,
) -> ManifestWork {
    let cond = |t: &str, ok: bool| {
        json!({"type": t, "status": if ok {"True"} else {"False"}, "reason": "R", "message": "",
               "observedGeneration": 1, "lastTransitionTime": "2026-01-01T11:59:00Z"})
    };
    serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": format!("app-{cluster}"), "namespace": cluster, "generation": 1,
                     "labels": {"team": "a",
                                MANIFEST_WORK_REPLICA_SET_LABEL: "default.app",
                                PLACEMENT_NAME_LABEL: "p"}},
        "spec": rs.spec.manifest_work_template,
        "status": {"conditions": [cond("Applied", applied), cond("Available", available)]}
    }))
    .unwrap()
}

fn run(
    rs: &ManifestWorkReplicaSet,
    placements: &BTreeMap<String, Placement>,
    decisions: &[PlacementDecision],
    works: &[ManifestWork],
    clusters: &BTreeMap<String, ClusterFacts>,
) -> ReplicaSetPlan {
    plan(&ReplicaSetInput {
        replica_set: rs,
        placements,
        decisions,
        works,
        clusters,
        now: now(),
    })
}

fn cond<'a>(plan: &'a ReplicaSetPlan, t: &str) -> &'a Condition {
    plan.status
        .conditions
        .iter()
        .find(|c| c.type_ == t)
        .unwrap()
}

#[test]
fn fans_out_to_every_decided_cluster_with_upstream_labels() {
    let rs = replica_set(json!({}));
    let p = run(
        &rs,
        &placement(2),
        &[decision(&["c1", "c2"])],
        &[],
        &BTreeMap::new(),
    );
    assert_eq!(p.apply.len(), 2);
    let w = &p.apply[0];
    assert_eq!(w.namespace, "c1");
    assert_eq!(w.name, None);
    assert_eq!(w.generate_name, "app");
    assert_eq!(w.labels[MANIFEST_WORK_REPLICA_SET_LABEL], "default.app");
    assert_eq!(w.labels[PLACEMENT_NAME_LABEL], "p");
    assert_eq!(w.labels["team"], "a");
    assert_eq!(w.spec, rs.spec.manifest_work_template);
    assert_eq!(p.status.summary.total, 2);
    // Upstream never sets `desiredTotal` or `updated`: a client comparing the summary whole
    // sees zeros there.
    assert_eq!(
        p.status.summary,
        ManifestWorkReplicaSetSummary {
            total: 2,
            ..Default::default()
        }
    );
    assert_eq!(
        p.status.placements_summary[0].summary,
        ManifestWorkReplicaSetSummary {
            total: 2,
            ..Default::default()
        }
    );
    assert_eq!(
        cond(&p, replica_set::PLACEMENT_VERIFIED).reason,
        "AsExpected"
    );
    assert_eq!(
        cond(&p, replica_set::PLACEMENT_ROLLED_OUT).reason,
        "Progressing"
    );
    assert_eq!(
        p.status.placements_summary[0].available_decision_groups,
        "1 (2 / 2 clusters applied)"
    );
}

#[test]
fn available_works_complete_the_rollout_and_left_clusters_lose_their_work() {
    let rs = replica_set(json!({}));
    let works = vec![
        work("c1", &rs, true, true),
        work("c2", &rs, true, true),
        work("gone", &rs, true, true),
    ];
    let p = run(
        &rs,
        &placement(2),
        &[decision(&["c1", "c2"])],
        &works,
        &BTreeMap::new(),
    );
    assert!(p.apply.is_empty(), "{:?}", p.apply);
    assert_eq!(p.delete, vec![("gone".to_owned(), "app-gone".to_owned())]);
    assert_eq!(p.status.summary.total, 2);
    assert_eq!(p.status.summary.available, 2);
    assert_eq!(cond(&p, replica_set::PLACEMENT_ROLLED_OUT).status, "True");
    assert_eq!(
        cond(&p, replica_set::MANIFESTWORK_APPLIED).reason,
        "AsExpected"
    );
}

#[test]
fn progressive_rollout_waits_for_available_works() {
    let rs = replica_set(
        json!({"spec": {"placementRefs": [{"name": "p", "rolloutStrategy": {
        "type": "Progressive", "progressive": {"maxConcurrency": 1}}}]}}),
    );
    let d = [decision(&["c1", "c2", "c3"])];
    let p = run(&rs, &placement(3), &d, &[], &BTreeMap::new());
    assert_eq!(
        p.apply
            .iter()
            .map(|w| w.namespace.as_str())
            .collect::<Vec<_>>(),
        ["c1"]
    );
    let p = run(
        &rs,
        &placement(3),
        &d,
        &[work("c1", &rs, true, false)],
        &BTreeMap::new(),
    );
    assert!(p.apply.is_empty(), "held while c1 is not available");
    let p = run(
        &rs,
        &placement(3),
        &d,
        &[work("c1", &rs, true, true)],
        &BTreeMap::new(),
    );
    assert_eq!(
        p.apply
            .iter()
            .map(|w| w.namespace.as_str())
            .collect::<Vec<_>>(),
        ["c2"]
    );
}

#[test]
fn template_change_updates_existing_works_in_place() {
    let old = replica_set(json!({}));
    let works = vec![work("c1", &old, true, true)];
    let new = replica_set(
        json!({"spec": {"manifestWorkTemplate": {"workload": {"manifests": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "demo"}}
        ]}}}}),
    );
    let p = run(
        &new,
        &placement(1),
        &[decision(&["c1"])],
        &works,
        &BTreeMap::new(),
    );
    assert_eq!(p.apply.len(), 1);
    assert_eq!(p.apply[0].name.as_deref(), Some("app-c1"));
    assert_eq!(p.apply[0].spec, new.spec.manifest_work_template);
}

#[test]
fn missing_placement_and_empty_decisions() {
    let rs = replica_set(json!({}));
    let p = run(&rs, &BTreeMap::new(), &[], &[], &BTreeMap::new());
    assert_eq!(
        cond(&p, replica_set::PLACEMENT_VERIFIED).reason,
        "PlacementDecisionNotFound"
    );
    let p = run(&rs, &placement(0), &[decision(&[])], &[], &BTreeMap::new());
    assert_eq!(
        cond(&p, replica_set::PLACEMENT_VERIFIED).reason,
        "PlacementDecisionEmpty"
    );
    assert_eq!(
        cond(&p, replica_set::MANIFESTWORK_APPLIED).reason,
        "PlacementDecisionEmpty"
    );
}

#[test]
fn works_of_a_placement_no_longer_referenced_are_deleted() {
    let rs = replica_set(json!({"spec": {"placementRefs": [{"name": "q"}]}}));
    let works = vec![work("c1", &rs, true, true)];
    let p = run(
        &rs,
        &placement(1),
        &[decision(&["c1"])],
        &works,
        &BTreeMap::new(),
    );
    assert_eq!(p.delete, vec![("c1".to_owned(), "app-c1".to_owned())]);
}

#[test]
fn overrides_give_clusters_different_specs() {
    let rs = replica_set(json!({"metadata": {"annotations": {
        super::super::overrides::OVERRIDES_ANNOTATION: json!([{
            "name": "big", "clusterSelector": {"matchLabels": {"size": "big"}},
            "patches": [{"kind": "Deployment", "name": "web",
                         "patch": [{"op": "replace", "path": "/spec/replicas", "value": 3}]}]
        }]).to_string()}}}));
    let clusters = BTreeMap::from([(
        "c1".to_owned(),
        ClusterFacts {
            labels: BTreeMap::from([("size".to_owned(), "big".to_owned())]),
            ..Default::default()
        },
    )]);
    let p = run(
        &rs,
        &placement(2),
        &[decision(&["c1", "c2"])],
        &[],
        &clusters,
    );
    let replicas: Vec<_> = p
        .apply
        .iter()
        .map(|w| {
            w.spec.workload.manifests[0].0["spec"]["replicas"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(replicas, [3, 1]);
}

#[test]
fn too_long_key_is_reported() {
    let long = "n".repeat(60);
    let rs = replica_set(json!({"metadata": {"name": long}}));
    let p = run(
        &rs,
        &placement(1),
        &[decision(&["c1"])],
        &[],
        &BTreeMap::new(),
    );
    assert!(p.apply.is_empty());
    assert_eq!(
        cond(&p, replica_set::MANIFESTWORK_APPLIED).reason,
        "InvalidManifestWorkName"
    );
}

#[test]
fn rollout_state_from_conditions() {
    let rs = replica_set(json!({}));
    assert_eq!(
        cluster_rollout_status("c1", &work("c1", &rs, false, false)).status,
        RolloutStatus::ToApply
    );
    assert_eq!(
        cluster_rollout_status("c1", &work("c1", &rs, true, false)).status,
        RolloutStatus::Progressing
    );
    assert_eq!(
        cluster_rollout_status("c1", &work("c1", &rs, true, true)).status,
        RolloutStatus::Succeeded
    );
}
