//! Network faults between agents and the hub (issue 19). Each managed cluster reaches the hub
//! through a [`FaultProxy`] of its own (real TLS passes through it), so one cluster can be cut
//! off while the rest of the fleet goes on: a partition longer than the lease grace, and one
//! across the expiry of the agent's client certificate.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use ocm::embedded::EmbeddedHub;
use ocm_api::cluster::names::taints::UNREACHABLE;
use ocm_api::cluster::v1::{ManagedCluster, TaintEffect};
use ocm_api::cluster::v1beta1::Placement;
use ocm_api::work::v1::ManifestWork;
use ocm_e2e::faultproxy::FaultProxy;
use ocm_e2e::*;
use ocm_registration::agent::{
    AgentProgress, BOOTSTRAP_KUBECONFIG_SECRET, DEFAULT_AGENT_NAMESPACE,
};
use serde_json::json;

const AVAILABLE: &str = "ManagedClusterConditionAvailable";

/// Joins simulated cluster `name` to `hub` through a fault proxy of its own and accepts it.
async fn join_through_proxy(
    hub: &EmbeddedHub,
    name: &str,
) -> (FaultProxy, kube::Client, RunningAgent) {
    let proxy = FaultProxy::in_front_of(&hub.url).await.unwrap();
    let bootstrap = bootstrap_kubeconfig_via(hub, &proxy.https_url())
        .await
        .unwrap();
    let (spoke, agent) = join_and_accept(hub, &bootstrap, name).await;
    // The agent keeps the server of its bootstrap kubeconfig in the hub kubeconfig it writes:
    // all its hub traffic, and that of the work agent reading the same secret, crosses the
    // proxy.
    assert_eq!(
        hub_server_of_agent(&spoke).await.unwrap(),
        proxy.https_url()
    );
    assert!(proxy.stats().bytes_to_target > 0);
    (proxy, spoke, agent)
}

fn tainted_unreachable(cluster: &ManagedCluster) -> bool {
    cluster
        .spec
        .taints
        .iter()
        .any(|t| t.key == UNREACHABLE && t.effect == TaintEffect::NoSelect)
}

/// Available, with no unreachable taint left.
fn back(cluster: &ManagedCluster) -> bool {
    joined_and_available(cluster) && !cluster.spec.taints.iter().any(|t| t.key == UNREACHABLE)
}

/// Waits until the agent's progress satisfies `want`; returns it.
async fn wait_progress(
    agent: &RunningAgent,
    what: &str,
    want: impl Fn(&AgentProgress) -> bool,
) -> AgentProgress {
    let mut progress = agent.progress.clone();
    let seen = tokio::time::timeout(WAIT, progress.wait_for(|p| want(p)))
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for the agent: {what}"))
        .expect("the agent is running");
    seen.clone()
}

// ---- a partition longer than the lease grace ----

const NS: &str = "faults";
const FIRST: &str = "faults.example.com/first";

fn settings_work(value: &str) -> ManifestWork {
    serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": "settings"},
        "spec": {"workload": {"manifests": [
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "settings", "namespace": "default"},
             "data": {"mode": value}}]}}
    }))
    .unwrap()
}

fn mode(config_map: &ConfigMap) -> &str {
    config_map
        .data
        .as_ref()
        .and_then(|d| d.get("mode"))
        .map_or("", String::as_str)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_past_the_lease_grace_moves_placements_and_leaves_workloads_running() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start_fast_hub(dir.path()).await.unwrap();
    let admin = hub.admin_client();
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    let (proxy_a, spoke_a, agent_a) = join_through_proxy(&hub, "a").await;
    let (proxy_b, spoke_b, agent_b) = join_through_proxy(&hub, "b").await;
    let work_a = RunningWorkAgent::start(&spoke_a, "a");
    let work_b = RunningWorkAgent::start(&spoke_b, "b");
    // A heartbeats every 2 s; with the grace multiplier 2 the hub gives up on it after 4 s.
    set_lease_duration(&hub, "a", 2).await.unwrap();

    // A workload on A: a ConfigMap applied by its work agent.
    let works: Api<ManifestWork> = Api::namespaced(admin.clone(), "a");
    works
        .create(&PostParams::default(), &settings_work("before"))
        .await
        .unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(spoke_a.clone(), "default");
    wait_for(&config_maps, "settings", "applied by the work", |cm| {
        mode(cm) == "before"
    })
    .await
    .unwrap();

    // A placement of one cluster, without tolerations, that chose A: at first only A fits;
    // then both do, and `Steady` keeps A.
    bind_namespace(&admin, NS, "default").await.unwrap();
    clusters
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {FIRST: "true"}}})),
        )
        .await
        .unwrap();
    apply_placement(
        &admin,
        NS,
        "p",
        json!({"numberOfClusters": 1, "predicates": [{"requiredClusterSelector": {
            "labelSelector": {"matchLabels": {FIRST: "true"}}}}]}),
    )
    .await
    .unwrap();
    wait_decided(&admin, NS, "p", &["a"]).await.unwrap();
    apply_placement(&admin, NS, "p", json!({"numberOfClusters": 1}))
        .await
        .unwrap();
    let placements: Api<Placement> = Api::namespaced(admin.clone(), NS);
    wait_for(&placements, "p", "the relaxed spec scheduled", |p| {
        placement_condition(p, "PlacementSatisfied")
            .is_some_and(|c| c.observed_generation == p.metadata.generation)
    })
    .await
    .unwrap();
    wait_decided(&admin, NS, "p", &["a"]).await.unwrap();
    wait_for(
        &clusters,
        "a",
        "Available on a 2 s lease",
        joined_and_available,
    )
    .await
    .unwrap();

    // Cut A off: its connections are reset, new ones lead nowhere.
    proxy_a.partition().await;
    let sent = proxy_a.stats();
    wait_for(
        &clusters,
        "a",
        "Available Unknown and tainted unreachable",
        |c| cluster_condition(c, AVAILABLE) == "Unknown" && tainted_unreachable(c),
    )
    .await
    .unwrap();
    wait_decided(&admin, NS, "p", &["b"]).await.unwrap();
    // B never noticed; A's workload keeps running without the hub.
    assert!(joined_and_available(&clusters.get("b").await.unwrap()));
    assert_eq!(mode(&config_maps.get("settings").await.unwrap()), "before");
    let during = proxy_a.stats();
    assert_eq!(during.bytes_to_target, sent.bytes_to_target, "{during:?}");
    assert_eq!(during.bytes_to_client, sent.bytes_to_client, "{during:?}");
    assert!(
        during.accepted > sent.accepted,
        "the agents kept trying: {during:?}"
    );

    // Heal: the agents reconnect by themselves.
    proxy_a.heal();
    wait_for(&clusters, "a", "Available again, taint gone", back)
        .await
        .unwrap();
    assert_eq!(mode(&config_maps.get("settings").await.unwrap()), "before");
    // The work agent is back too: a change of the work reaches A.
    works
        .patch(
            "settings",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"workload": {"manifests": [
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "settings", "namespace": "default"},
                 "data": {"mode": "after"}}]}}})),
        )
        .await
        .unwrap();
    wait_for(&config_maps, "settings", "updated after healing", |cm| {
        mode(cm) == "after"
    })
    .await
    .unwrap();
    assert_eq!(proxy_b.stats().aborted, 0);

    work_a.stop().await;
    work_b.stop().await;
    agent_a.stop().await.unwrap();
    agent_b.stop().await.unwrap();
    hub.stop().await;
}

// ---- certificate expiry during a partition ----

/// Lifetime of the client certificates: room to join a cluster and cut it off before its
/// rotation deadline (75–80 % of its life), little to wait for its expiry.
const SHORT_CERTIFICATES: Duration = Duration::from_secs(15);

/// Joins `name` through its own proxy on a 2 s lease and cuts it off at once; returns the end
/// of validity of its certificate too.
async fn join_and_cut_off(
    hub: &EmbeddedHub,
    name: &str,
) -> (FaultProxy, kube::Client, RunningAgent, jiff::Timestamp) {
    let (proxy, spoke, agent) = join_through_proxy(hub, name).await;
    set_lease_duration(hub, name, 2).await.unwrap();
    let (_, not_after) = agent_certificate(&spoke, &hub.ca_pem).await.unwrap();
    proxy.partition().await;
    // The earliest rotation deadline is a quarter of the lifetime before expiry.
    assert!(
        jiff::Timestamp::now() + SHORT_CERTIFICATES / 4 < not_after,
        "joining took too long: {name} was cut off after its certificate was due for rotation"
    );
    (proxy, spoke, agent, not_after)
}

/// The agent of `name` asks again with its bootstrap kubeconfig; the hub admin approves the
/// CSR; the cluster reports that its certificate had expired and is available again.
async fn recovers_through_bootstrap(hub: &EmbeddedHub, csrs: &CsrLog, name: &str) {
    let admin = hub.admin_client();
    wait_for_bootstrap_csr(&admin, name).await.unwrap();
    let approved = ocm::accept::accept_cluster(&admin, name, false)
        .await
        .unwrap();
    assert_eq!(approved.approved_csrs.len(), 1, "{approved:?}");
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    const ROTATED: &str = "ClusterCertificateRotated";
    let mc = wait_for(&clusters, name, "the expiry reported", |mc| {
        managed_cluster_condition(mc, ROTATED)
            .is_some_and(|c| c.status == "False" && c.reason == "ClientCertificateExpired")
    })
    .await
    .unwrap();
    let message = &managed_cluster_condition(&mc, ROTATED).unwrap().message;
    assert!(message.contains("expired"), "{message}");
    wait_for(&clusters, name, "Available again, taint gone", back)
        .await
        .unwrap();
    // Two CSRs, both from a bootstrap token: the join and the return.
    let seen = csrs.snapshot();
    assert_eq!(seen.len(), 2, "{seen:#?}");
    for csr in seen.values() {
        assert!(csr.username.starts_with("system:bootstrap:"), "{seen:#?}");
        assert!(csr.issued, "{seen:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificates_expiring_in_a_partition_send_agents_back_to_their_bootstrap_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start_hub(dir.path(), fast_hub_options(), SHORT_CERTIFICATES)
        .await
        .unwrap();
    let admin = hub.admin_client();
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    let csrs_a = CsrLog::start(&admin, "a");
    let csrs_b = CsrLog::start(&admin, "b");
    let (proxy_a, _spoke_a, agent_a, expiry_a) = join_and_cut_off(&hub, "a").await;
    let (proxy_b, spoke_b, agent_b, expiry_b) = join_and_cut_off(&hub, "b").await;
    // B also loses its bootstrap kubeconfig while cut off.
    Api::<Secret>::namespaced(spoke_b.clone(), DEFAULT_AGENT_NAMESPACE)
        .delete(BOOTSTRAP_KUBECONFIG_SECRET, &DeleteParams::default())
        .await
        .unwrap();

    // The hub hears nothing from either.
    for name in ["a", "b"] {
        wait_for(&clusters, name, "Available Unknown", |c| {
            cluster_condition(c, AVAILABLE) == "Unknown"
        })
        .await
        .unwrap();
    }
    // Their certificates expire out of the hub's reach. A's agent turns to its bootstrap
    // kubeconfig (and waits there for the hub); B's has none, and says so.
    wait_progress(&agent_a, "registering again", |p| {
        matches!(
            p,
            AgentProgress::Bootstrapping | AgentProgress::Retrying { .. }
        )
    })
    .await;
    let waiting = wait_progress(&agent_b, "waiting for its bootstrap kubeconfig", |p| {
        *p == AgentProgress::WaitingForBootstrapKubeconfig
    })
    .await;
    assert!(
        waiting.to_string().contains("bootstrap kubeconfig"),
        "{waiting}"
    );
    // Not before their certificates had expired (no renewal got through: see the CSR logs).
    let now = jiff::Timestamp::now();
    assert!(
        now >= expiry_a && now >= expiry_b,
        "{now}: {expiry_a}, {expiry_b}"
    );

    // Heal: A registers again with its bootstrap token and is back.
    proxy_a.heal();
    proxy_b.heal();
    recovers_through_bootstrap(&hub, &csrs_a, "a").await;
    // B, with the hub reachable again, still waits for what it lacks and asks for nothing.
    assert_eq!(
        *agent_b.progress.borrow(),
        AgentProgress::WaitingForBootstrapKubeconfig
    );
    assert_eq!(csrs_b.snapshot().len(), 1);
    assert_eq!(
        cluster_condition(&clusters.get("b").await.unwrap(), AVAILABLE),
        "Unknown"
    );
    // A new bootstrap kubeconfig brings it back.
    let bootstrap = bootstrap_kubeconfig_via(&hub, &proxy_b.https_url())
        .await
        .unwrap();
    ocm::commands::join::prepare_spoke(&spoke_b, &bootstrap)
        .await
        .unwrap();
    recovers_through_bootstrap(&hub, &csrs_b, "b").await;

    agent_a.stop().await.unwrap();
    agent_b.stop().await.unwrap();
    hub.stop().await;
}
