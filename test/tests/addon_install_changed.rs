//! The addon install controller plans what changed, not the fleet: on a fleet of accepted
//! clusters with an addon enabled on each, an agent-style status write of one addon (its
//! `Available`) makes the controller look at no addon of the fleet, while a change the plan
//! reads (the addon's own configs) re-plans that addon on every cluster — counted by the
//! controller's [`InstallStats`], not timed.
//!
//! Each measurement ends with a probe: an addon of another name enabled on one more cluster,
//! which the controller adopts (owner reference of its ClusterManagementAddOn). ManagedClusterAddOn
//! events arrive in order on one watch, so once the probe is adopted every earlier change has
//! been seen and planned.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use kube::api::{Api, Patch, PatchParams, PostParams};
use ocm_addon_framework::manager::{InstallStats, run_install_strategies_counted};
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_e2e::{accepted_cluster_without_agent, wait_for};
use serde_json::{Value, json};

/// Clusters of the fleet.
const FLEET: usize = 24;

fn cma(name: &str, annotations: Value) -> ClusterManagementAddOn {
    serde_json::from_value(json!({
        "apiVersion": "addon.open-cluster-management.io/v1beta1",
        "kind": "ClusterManagementAddOn",
        "metadata": {"name": name, "annotations": annotations}, "spec": {}}))
    .unwrap()
}

fn mca(name: &str, cluster: &str) -> ManagedClusterAddOn {
    serde_json::from_value(json!({
        "apiVersion": "addon.open-cluster-management.io/v1beta1",
        "kind": "ManagedClusterAddOn",
        "metadata": {"name": name, "namespace": cluster}, "spec": {}}))
    .unwrap()
}

/// Enables addon `probe` on `cluster` and waits until the controller adopted it.
async fn probe(client: &kube::Client, cluster: &str) {
    let api: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), cluster);
    api.create(&PostParams::default(), &mca("probe", cluster))
        .await
        .unwrap();
    wait_for(
        &api,
        "probe",
        "adopted by its ClusterManagementAddOn",
        |m| {
            m.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.kind == "ClusterManagementAddOn" && o.name == "probe")
        },
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_write_of_one_addon_plans_nothing_of_the_fleet() {
    let dir = tempfile::tempdir().unwrap();
    let hub = ocm_e2e::start_fast_hub(dir.path()).await.unwrap();
    let client = hub.admin_client();
    let clusters: Vec<String> = (0..=FLEET).map(|i| format!("fleet-{i}")).collect();
    futures::future::try_join_all(
        clusters
            .iter()
            .map(|c| accepted_cluster_without_agent(&client, c)),
    )
    .await
    .unwrap();
    let cmas: Api<ClusterManagementAddOn> = Api::all(client.clone());
    cmas.create(&PostParams::default(), &cma("steady", json!({})))
        .await
        .unwrap();
    let lifecycle = ocm_api::addon::names::annotations::LIFECYCLE;
    cmas.create(
        &PostParams::default(),
        &cma("probe", json!({lifecycle: "addon-manager"})),
    )
    .await
    .unwrap();
    // `steady` on every cluster but the last, which the probes use.
    let (fleet, spare) = clusters.split_at(FLEET);
    for cluster in fleet {
        Api::<ManagedClusterAddOn>::namespaced(client.clone(), cluster)
            .create(&PostParams::default(), &mca("steady", cluster))
            .await
            .unwrap();
    }
    let stats = Arc::new(InstallStats::default());
    let stop = ocm_runtime::shutdown::Shutdown::new();
    tokio::spawn(run_install_strategies_counted(
        client.clone(),
        stop.child(),
        stats.clone(),
    ));
    probe(&client, &spare[0]).await;
    assert!(stats.full_passes() >= 1);
    assert!(
        stats.examined() >= FLEET as u64,
        "the first pass looks at every addon: {}",
        stats.examined()
    );

    // What an addon agent writes: its Available condition (and the lease-like check time).
    let steady: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), &fleet[0]);
    let before = stats.examined();
    let passes = stats.passes();
    steady
        .patch_status(
            "steady",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "conditions": [{"type": "Available", "status": "True", "reason": "Ready",
                                "message": "the agent is running",
                                "lastTransitionTime": "2026-11-30T00:00:00Z"}],
                "healthCheck": {"mode": "Lease"}}})),
        )
        .await
        .unwrap();
    probe(&client, &fleet[1]).await;
    let examined = stats.examined() - before;
    println!("a status write and a probe: {examined} addons looked at of a fleet of {FLEET}");
    assert!(stats.passes() > passes);
    assert!(
        examined < FLEET as u64 / 2,
        "a status write of one addon looked at {examined} addons of a fleet of {FLEET}"
    );

    // A change the plan reads (the addon's own configs): that addon on every cluster.
    let before = stats.examined();
    steady
        .patch(
            "steady",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"configs": [{
                "group": "addon.open-cluster-management.io",
                "resource": "addondeploymentconfigs", "namespace": &fleet[0], "name": "own"}]}})),
        )
        .await
        .unwrap();
    wait_for(&steady, "steady", "its own config handed out", |m| {
        m.status.as_ref().is_some_and(|s| {
            s.config_references
                .iter()
                .any(|r| r.desired_config.as_ref().is_some_and(|d| d.name == "own"))
        })
    })
    .await
    .unwrap();
    println!(
        "a config change: {} addons looked at",
        stats.examined() - before
    );
    assert!(
        stats.examined() - before >= FLEET as u64,
        "a config change re-plans the addon on all {FLEET} clusters: {}",
        stats.examined() - before
    );
    stop.cancel();
}
