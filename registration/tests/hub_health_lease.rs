//! Hub health against the embedded server: the hub creates the cluster Lease, an expired
//! Lease makes the cluster Unknown and unreachable-tainted, renewing it and the agent's
//! Available=True remove the taint, clock sync is judged on renewals, and the fleet gauges
//! follow.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Debug;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Resource, ResourceExt};
use ocm_api::cluster::names::MANAGED_CLUSTER_LEASE;
use ocm_api::cluster::names::conditions::{AVAILABLE, CLOCK_SYNCED};
use ocm_api::cluster::names::labels::CLUSTER_NAME;
use ocm_api::cluster::names::taints::{UNAVAILABLE, UNREACHABLE};
use ocm_api::cluster::v1::{ManagedCluster, ManagedClusterSpec};
use ocm_apiserver::ApiServer;
use ocm_registration::hub::{HubContext, HubOptions};
use ocm_runtime::metrics::ControllerMetrics;
use ocm_runtime::shutdown::Shutdown;
use serde::de::DeserializeOwned;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(15);

struct Hub {
    _server: ApiServer,
    client: kube::Client,
    ctx: Arc<HubContext>,
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.ctx.shutdown.cancel();
    }
}

async fn install_crds(client: &kube::Client) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in ocm_api::crds::hub() {
        api.create(&PostParams::default(), &crd).await.unwrap();
    }
    for crd in ocm_api::crds::hub() {
        tokio::time::timeout(
            WAIT,
            await_condition(
                api.clone(),
                &crd.name_any(),
                conditions::is_crd_established(),
            ),
        )
        .await
        .unwrap()
        .unwrap();
    }
}

async fn start_hub(multiplier: u32) -> Hub {
    let server = ApiServer::in_memory().await.unwrap();
    let client = kube::Client::new(server.service(), "default");
    install_crds(&client).await;
    let ctx = Arc::new(HubContext {
        client: client.clone(),
        options: HubOptions {
            lease_grace_multiplier: multiplier,
            ..HubOptions::default()
        },
        metrics: ControllerMetrics::new("ocm"),
        shutdown: Shutdown::new(),
    });
    tokio::spawn(ocm_registration::hub::run(ctx.clone()));
    Hub {
        _server: server,
        client,
        ctx,
    }
}

async fn wait_for<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    pred: impl Fn(&K) -> bool + Send + 'static,
) -> K
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let cond = move |o: Option<&K>| o.is_some_and(&pred);
    match tokio::time::timeout(WAIT, await_condition(api.clone(), name, cond)).await {
        Ok(Ok(Some(obj))) => obj,
        other => panic!(
            "timed out waiting for {what}: {other:?}; now {:?}",
            api.get_opt(name).await
        ),
    }
}

fn available(c: &ManagedCluster) -> Option<(String, String)> {
    c.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == AVAILABLE)
        .map(|c| (c.status.clone(), c.reason.clone()))
}

fn taint_keys(c: &ManagedCluster) -> Vec<String> {
    c.spec.taints.iter().map(|t| t.key.clone()).collect()
}

/// What the agent does: renew the Lease and report Available=True.
async fn agent_heartbeat(client: &kube::Client, cluster: &str) {
    let leases: Api<Lease> = Api::namespaced(client.clone(), cluster);
    leases
        .patch(
            MANAGED_CLUSTER_LEASE,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"renewTime": MicroTime(jiff::Timestamp::now())}})),
        )
        .await
        .unwrap();
}

async fn agent_reports_available(client: &kube::Client, cluster: &ManagedCluster) {
    let api: Api<ManagedCluster> = Api::all(client.clone());
    let mut cluster = cluster.clone();
    // As an agent does: the status write is conditional on the version read; when the hub
    // wrote in between (409), read again and retry.
    loop {
        let mut conditions = cluster.status.clone().unwrap_or_default().conditions;
        ocm_runtime::conditions::set_condition(
            &mut conditions,
            ocm_runtime::conditions::condition(
                AVAILABLE,
                "True",
                "ManagedClusterAvailable",
                "Managed cluster is available",
                None,
            ),
        );
        let written = api
            .patch_status(
                &cluster.name_any(),
                &PatchParams::default(),
                &Patch::Merge(
                    json!({"metadata": {"resourceVersion": cluster.resource_version()},
                    "status": {"conditions": conditions}}),
                ),
            )
            .await;
        match written {
            Ok(_) => return,
            Err(kube::Error::Api(e)) if e.code == 409 => {
                cluster = api.get(&cluster.name_any()).await.unwrap();
            }
            Err(e) => panic!("reporting Available: {e}"),
        }
    }
}

#[tokio::test]
async fn expired_lease_makes_the_cluster_unknown_and_unreachable_until_renewed() {
    let hub = start_hub(2).await;
    let clusters: Api<ManagedCluster> = Api::all(hub.client.clone());
    clusters
        .create(
            &PostParams::default(),
            &ManagedCluster::new(
                "c1",
                ManagedClusterSpec {
                    hub_accepts_client: true,
                    lease_duration_seconds: Some(1),
                    ..ManagedClusterSpec::default()
                },
            ),
        )
        .await
        .unwrap();

    // The hub creates the Lease once the cluster is accepted.
    let leases: Api<Lease> = Api::namespaced(hub.client.clone(), "c1");
    let lease = wait_for(&leases, MANAGED_CLUSTER_LEASE, "the cluster lease", |_| {
        true
    })
    .await;
    assert_eq!(
        lease.labels().get(CLUSTER_NAME).map(String::as_str),
        Some("c1")
    );
    assert_eq!(
        lease.spec.as_ref().unwrap().holder_identity.as_deref(),
        Some(MANAGED_CLUSTER_LEASE)
    );

    // Never renewed: after 2 × 1 s the cluster is Unknown and tainted unreachable.
    let unknown = wait_for(&clusters, "c1", "Available=Unknown", |c| {
        available(c).is_some_and(|(s, _)| s == "Unknown")
    })
    .await;
    assert_eq!(
        available(&unknown).unwrap().1,
        "ManagedClusterLeaseUpdateStopped"
    );
    let tainted = wait_for(&clusters, "c1", "the unreachable taint", |c| {
        taint_keys(c) == [UNREACHABLE]
    })
    .await;
    let taint = &tainted.spec.taints[0];
    assert!(taint.time_added.is_some(), "timeAdded stamped: {taint:?}");
    assert_eq!(taint.effect, ocm_api::cluster::v1::TaintEffect::NoSelect);

    // The agent comes back: lease renewed, Available=True → taint removed, clock synced.
    agent_heartbeat(&hub.client, "c1").await;
    let current = clusters.get("c1").await.unwrap();
    agent_reports_available(&hub.client, &current).await;
    let renewed_at = Instant::now();
    let healthy = wait_for(&clusters, "c1", "taints removed", |c| {
        c.spec.taints.is_empty() && available(c).is_some_and(|(s, _)| s == "True")
    })
    .await;
    assert!(!taint_keys(&healthy).iter().any(|k| k == UNAVAILABLE));
    let synced = wait_for(&clusters, "c1", "ClockSynced=True", |c| {
        c.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == CLOCK_SYNCED && c.status == "True")
        })
    })
    .await;
    assert!(synced.spec.taints.is_empty());

    // The agent stops again: Unknown exactly one grace period (2 s) after the renewal, found
    // through the requeue at expiry.
    wait_for(&clusters, "c1", "Available=Unknown again", |c| {
        available(c).is_some_and(|(s, _)| s == "Unknown")
    })
    .await;
    let elapsed = renewed_at.elapsed();
    assert!(
        elapsed >= Duration::from_millis(1500) && elapsed < Duration::from_secs(6),
        "expired after {elapsed:?}"
    );
    wait_for(&clusters, "c1", "unreachable again", |c| {
        taint_keys(c) == [UNREACHABLE]
    })
    .await;

    // The fleet gauges follow.
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let text = hub.ctx.metrics.encode();
        if text.contains("ocm_managed_clusters{condition=\"Available\",status=\"Unknown\"} 1")
            && text.contains("ocm_managed_clusters{condition=\"HubAccepted\",status=\"True\"} 1")
        {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "gauges: {text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_agent_reporting_unavailable_gives_the_unavailable_taint() {
    let hub = start_hub(5).await;
    let clusters: Api<ManagedCluster> = Api::all(hub.client.clone());
    clusters
        .create(
            &PostParams::default(),
            &ManagedCluster::new(
                "c2",
                ManagedClusterSpec {
                    hub_accepts_client: true,
                    lease_duration_seconds: Some(60),
                    ..ManagedClusterSpec::default()
                },
            ),
        )
        .await
        .unwrap();
    // No Available condition yet: unreachable.
    let c = wait_for(&clusters, "c2", "unreachable", |c| {
        taint_keys(c) == [UNREACHABLE]
    })
    .await;
    let mut conditions = c.status.clone().unwrap_or_default().conditions;
    ocm_runtime::conditions::set_condition(
        &mut conditions,
        ocm_runtime::conditions::condition(
            AVAILABLE,
            "False",
            "ManagedClusterKubeAPIServerUnavailable",
            "down",
            None,
        ),
    );
    clusters
        .patch_status(
            "c2",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": conditions}})),
        )
        .await
        .unwrap();
    wait_for(&clusters, "c2", "unavailable", |c| {
        taint_keys(c) == [UNAVAILABLE]
    })
    .await;
}
