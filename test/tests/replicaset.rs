//! ManifestWorkReplicaSet controller on the embedded hub: fan-out by placement decisions,
//! placement changes, progressive rollout, per-cluster overrides and cascading deletion.
//!
//! Decisions and work status are written by the test here (as the placement controller and
//! the work agents would), so each step of the rollout is under the test's control.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use ocm::embedded::{EmbeddedHub, EmbeddedHubOptions};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_api::work::v1::ManifestWork;
use ocm_api::work::v1alpha1::ManifestWorkReplicaSet;
use ocm_e2e::{WAIT, bind_namespace, wait_for, wait_gone};
use ocm_runtime::metrics::ControllerMetrics;
use ocm_runtime::shutdown::Shutdown;
use serde_json::json;

const NS: &str = "apps";

struct Fixture {
    hub: EmbeddedHub,
    client: kube::Client,
    shutdown: Shutdown,
    _dir: tempfile::TempDir,
}

impl Fixture {
    async fn start(clusters: &[&str]) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let hub = EmbeddedHub::start(EmbeddedHubOptions {
            listen: ([127, 0, 0, 1], 0).into(),
            memory: true,
            run_controllers: false,
            ..EmbeddedHubOptions::new(dir.path())
        })
        .await
        .unwrap();
        let client = hub.admin_client();
        for ns in clusters.iter().chain([&NS]) {
            let namespace: Namespace =
                serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
            Api::<Namespace>::all(client.clone())
                .create(&PostParams::default(), &namespace)
                .await
                .unwrap();
        }
        let shutdown = Shutdown::new();
        tokio::spawn(ocm_work::hub::run(
            client.clone(),
            ocm_work::hub::ReplicaSetOptions {
                retry: Duration::from_millis(200),
                ..Default::default()
            },
            ControllerMetrics::new("test"),
            shutdown.clone(),
        ));
        Fixture {
            hub,
            client,
            shutdown,
            _dir: dir,
        }
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.hub.stop().await;
    }

    /// A placement `p` whose (single) decision lists `clusters`.
    async fn decide(&self, clusters: &[&str]) {
        let placements: Api<Placement> = Api::namespaced(self.client.clone(), NS);
        let apply = PatchParams::apply("test").force();
        placements
            .patch(
                "p",
                &apply,
                &Patch::Apply(json!({
                    "apiVersion": "cluster.open-cluster-management.io/v1beta1",
                    "kind": "Placement", "metadata": {"name": "p"}, "spec": {}})),
            )
            .await
            .unwrap();
        placements
            .patch_status(
                "p",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {
                    "numberOfSelectedClusters": clusters.len(),
                    "decisionGroups": [{"decisionGroupIndex": 0, "decisionGroupName": "",
                        "decisions": ["p-decision-1"], "clusterCount": clusters.len()}]}})),
            )
            .await
            .unwrap();
        let decisions: Api<PlacementDecision> = Api::namespaced(self.client.clone(), NS);
        decisions
            .patch(
                "p-decision-1",
                &apply,
                &Patch::Apply(json!({
                    "apiVersion": "cluster.open-cluster-management.io/v1beta1",
                    "kind": "PlacementDecision",
                    "metadata": {"name": "p-decision-1", "labels": {
                        "cluster.open-cluster-management.io/placement": "p",
                        "cluster.open-cluster-management.io/decision-group-index": "0",
                        "cluster.open-cluster-management.io/decision-group-name": ""}}})),
            )
            .await
            .unwrap();
        let list: Vec<_> = clusters
            .iter()
            .map(|c| json!({"clusterName": c, "reason": ""}))
            .collect();
        decisions
            .patch_status(
                "p-decision-1",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"decisions": list}})),
            )
            .await
            .unwrap();
    }

    async fn create_replica_set(
        &self,
        spec_extra: serde_json::Value,
        annotations: serde_json::Value,
    ) {
        let mut spec = json!({
            "manifestWorkTemplate": {"workload": {"manifests": [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}},
                {"apiVersion": "apps/v1", "kind": "Deployment",
                 "metadata": {"name": "web", "namespace": "demo"},
                 "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                          "template": {"metadata": {"labels": {"app": "web"}},
                                       "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}
            ]}},
            "placementRefs": [{"name": "p"}],
            "cascadeDeletionPolicy": "Background"
        });
        json_patch::merge(&mut spec, &spec_extra);
        let rs: ManifestWorkReplicaSet = serde_json::from_value(json!({
            "apiVersion": "work.open-cluster-management.io/v1alpha1",
            "kind": "ManifestWorkReplicaSet",
            "metadata": {"name": "app", "namespace": NS, "annotations": annotations},
            "spec": spec
        }))
        .unwrap();
        Api::<ManifestWorkReplicaSet>::namespaced(self.client.clone(), NS)
            .create(&PostParams::default(), &rs)
            .await
            .unwrap();
    }

    async fn works(&self) -> Vec<ManifestWork> {
        Api::<ManifestWork>::all(self.client.clone())
            .list(
                &ListParams::default()
                    .labels("work.open-cluster-management.io/manifestworkreplicaset=apps.app"),
            )
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|w| w.metadata.deletion_timestamp.is_none())
            .collect()
    }

    /// Waits until the live works are exactly in `clusters`.
    async fn wait_for_works_in(&self, clusters: &[&str]) -> Vec<ManifestWork> {
        let want: BTreeSet<String> = clusters.iter().map(|c| (*c).to_owned()).collect();
        let api: Api<ManifestWorkReplicaSet> = Api::namespaced(self.client.clone(), NS);
        // Every work change triggers a status write on the replica set; wait on its watch.
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let works = self.works().await;
            let have: BTreeSet<String> = works.iter().filter_map(|w| w.namespace()).collect();
            if have == want {
                return works;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "works in {have:?}, want {want:?}"
            );
            let rv = api.get("app").await.unwrap().resource_version();
            let _ = tokio::time::timeout(
                Duration::from_secs(2),
                await_condition(
                    api.clone(),
                    "app",
                    move |o: Option<&ManifestWorkReplicaSet>| {
                        o.is_none_or(|o| o.resource_version() != rv)
                    },
                ),
            )
            .await;
        }
    }

    /// Reports `work` Applied and Available for its generation, as a work agent would.
    async fn report_available(&self, work: &ManifestWork) {
        let generation = work.metadata.generation.unwrap_or(1);
        let cond = |t: &str| {
            json!({"type": t, "status": "True", "reason": "Test", "message": "",
            "observedGeneration": generation, "lastTransitionTime": "2026-01-01T00:00:00Z"})
        };
        Api::<ManifestWork>::namespaced(self.client.clone(), &work.namespace().unwrap())
            .patch_status(
                &work.name_any(),
                &PatchParams::default(),
                &Patch::Merge(
                    json!({"status": {"conditions": [cond("Applied"), cond("Available")]}}),
                ),
            )
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fans_out_follows_decisions_and_reports_status() {
    let f = Fixture::start(&["c1", "c2", "c3"]).await;
    f.decide(&["c1", "c2"]).await;
    f.create_replica_set(json!({}), json!({})).await;
    let works = f.wait_for_works_in(&["c1", "c2"]).await;
    for w in &works {
        assert!(
            w.name_any().starts_with("app"),
            "generateName from the set: {}",
            w.name_any()
        );
        assert_eq!(
            w.labels()["work.open-cluster-management.io/placementname"],
            "p"
        );
    }
    let rs_api: Api<ManifestWorkReplicaSet> = Api::namespaced(f.client.clone(), NS);
    let rs = rs_api.get("app").await.unwrap();
    assert!(
        rs.finalizers()
            .contains(&"work.open-cluster-management.io/manifest-work-cleanup".to_owned())
    );

    // The placement changes: c1 leaves, c3 joins.
    f.decide(&["c2", "c3"]).await;
    let works = f.wait_for_works_in(&["c2", "c3"]).await;

    // Works become available → the set reports the rollout complete.
    for w in &works {
        f.report_available(w).await;
    }
    let rs = wait_for(
        &rs_api,
        "app",
        "ManifestworkApplied AsExpected",
        |rs: &ManifestWorkReplicaSet| {
            rs.status.as_ref().is_some_and(|s| {
                s.summary.available == 2
                    && s.conditions
                        .iter()
                        .any(|c| c.type_ == "ManifestworkApplied" && c.reason == "AsExpected")
                    && s.conditions
                        .iter()
                        .any(|c| c.type_ == "PlacementRolledOut" && c.status == "True")
            })
        },
    )
    .await
    .unwrap();
    assert_eq!(rs.status.unwrap().summary.total, 2);
    f.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progressive_rollout_holds_at_max_concurrency_until_available() {
    let f = Fixture::start(&["c1", "c2", "c3"]).await;
    f.decide(&["c1", "c2", "c3"]).await;
    f.create_replica_set(
        json!({"placementRefs": [{"name": "p", "rolloutStrategy": {
            "type": "Progressive", "progressive": {"maxConcurrency": 1}}}]}),
        json!({}),
    )
    .await;
    let works = f.wait_for_works_in(&["c1"]).await;
    // Still one while c1 is not available: wait for the set's status to settle first.
    let rs_api: Api<ManifestWorkReplicaSet> = Api::namespaced(f.client.clone(), NS);
    wait_for(
        &rs_api,
        "app",
        "status written",
        |rs: &ManifestWorkReplicaSet| rs.status.as_ref().is_some_and(|s| s.summary.total == 1),
    )
    .await
    .unwrap();
    assert_eq!(f.works().await.len(), 1);
    f.report_available(&works[0]).await;
    let works = f.wait_for_works_in(&["c1", "c2"]).await;
    let c2 = works
        .iter()
        .find(|w| w.namespace().as_deref() == Some("c2"))
        .unwrap();
    f.report_available(c2).await;
    f.wait_for_works_in(&["c1", "c2", "c3"]).await;
    f.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overrides_give_labelled_clusters_different_replicas() {
    let f = Fixture::start(&["big", "small"]).await;
    let clusters: Api<ManagedCluster> = Api::all(f.client.clone());
    for (name, size) in [("big", "large"), ("small", "tiny")] {
        let mc: ManagedCluster = serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
            "metadata": {"name": name, "labels": {"size": size}},
            "spec": {"hubAcceptsClient": true}}))
        .unwrap();
        clusters.create(&PostParams::default(), &mc).await.unwrap();
    }
    f.decide(&["big", "small"]).await;
    let overrides = json!([{"name": "large", "clusterSelector": {"matchLabels": {"size": "large"}},
        "patches": [{"kind": "Deployment", "name": "web",
                     "patch": [{"op": "replace", "path": "/spec/replicas", "value": 5}]}]}]);
    f.create_replica_set(
        json!({}),
        json!({"work.ocm-rs.io/overrides": overrides.to_string()}),
    )
    .await;
    let works = f.wait_for_works_in(&["big", "small"]).await;
    let replicas = |ns: &str| {
        works
            .iter()
            .find(|w| w.namespace().as_deref() == Some(ns))
            .map(|w| w.spec.workload.manifests[1].0["spec"]["replicas"].clone())
            .unwrap()
    };
    assert_eq!(replicas("big"), json!(5));
    assert_eq!(replicas("small"), json!(1));
    f.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreground_deletion_waits_for_the_works() {
    let f = Fixture::start(&["c1"]).await;
    f.decide(&["c1"]).await;
    f.create_replica_set(json!({"cascadeDeletionPolicy": "Foreground"}), json!({}))
        .await;
    let works = f.wait_for_works_in(&["c1"]).await;
    let name = works[0].name_any();
    let work_api: Api<ManifestWork> = Api::namespaced(f.client.clone(), "c1");
    // An agent's finalizer keeps the work while it cleans up.
    work_api
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["test/agent"]}})),
        )
        .await
        .unwrap();
    let rs_api: Api<ManifestWorkReplicaSet> = Api::namespaced(f.client.clone(), NS);
    rs_api
        .delete("app", &DeleteParams::default())
        .await
        .unwrap();
    wait_for(&work_api, &name, "work deleting", |w: &ManifestWork| {
        w.metadata.deletion_timestamp.is_some()
    })
    .await
    .unwrap();
    assert!(
        rs_api.get_opt("app").await.unwrap().is_some(),
        "set kept while its work exists"
    );
    work_api
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    wait_gone(&rs_api, "app").await.unwrap();
    f.stop().await;
}

/// Waits until the set reports `n` works, all available.
async fn wait_available(client: &kube::Client, n: i64) -> ManifestWorkReplicaSet {
    let api: Api<ManifestWorkReplicaSet> = Api::namespaced(client.clone(), NS);
    let result = wait_for(
        &api,
        "app",
        &format!("{n} works available"),
        move |rs: &ManifestWorkReplicaSet| {
            rs.status
                .as_ref()
                .is_some_and(|s| s.summary.total == n && s.summary.available == n)
        },
    )
    .await;
    if result.is_err() {
        let rs = api.get("app").await.map(|r| r.status);
        let p = Api::<Placement>::namespaced(client.clone(), NS)
            .get("p")
            .await
            .map(|p| p.status);
        eprintln!("set: {rs:?}\nplacement: {p:?}");
    }
    result.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn placement_and_replica_set_fan_out_to_fifty_joined_clusters() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, names, agents) = ocm_e2e::fleet(dir.path(), 50).await.unwrap();
    let client = hub.admin_client();
    let apply = PatchParams::apply("test").force();
    bind_namespace(&client, NS, "default").await.unwrap();
    let placements: Api<Placement> = Api::namespaced(client.clone(), NS);
    placements
        .patch(
            "p",
            &apply,
            &Patch::Apply(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "p"}, "spec": {}})),
        )
        .await
        .unwrap();
    let f = Fixture {
        hub,
        client: client.clone(),
        shutdown: Shutdown::new(),
        _dir: dir,
    };
    f.create_replica_set(json!({}), json!({})).await;
    wait_available(&client, 50).await;
    let works = f.works().await;
    assert_eq!(works.len(), 50);
    let placement = placements.get("p").await.unwrap();
    assert_eq!(placement.status.unwrap().number_of_selected_clusters, 50);

    // The placement narrows to the clusters labelled gold: the other works go away.
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    for name in names.iter().take(10) {
        clusters
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"tier": "gold"}}})),
            )
            .await
            .unwrap();
    }
    placements
        .patch("p", &apply, &Patch::Apply(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "p"},
            "spec": {"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"tier": "gold"}}}}]}})))
        .await
        .unwrap();
    let remaining = f
        .wait_for_works_in(
            &names
                .iter()
                .take(10)
                .map(String::as_str)
                .collect::<Vec<_>>(),
        )
        .await;
    assert_eq!(remaining.len(), 10);
    wait_available(&client, 10).await;
    agents.cancel();
    f.stop().await;
}
