//! Certificate rotation: with a hub signer issuing short-lived certificates the agent renews
//! its certificate again and again with its current hub credentials, switches clients, and
//! keeps renewing its lease long after the first certificates expired.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support_agent;

use std::collections::BTreeSet;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use ocm_registration::agent::{AgentOptions, DEFAULT_AGENT_NAMESPACE, HUB_KUBECONFIG_SECRET};
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::conditions::find_condition;
use support_agent::*;

/// Lifetime of every certificate the hub signs.
const SIGNING: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_lived_certificates_are_rotated_without_losing_the_lease() {
    let bench = Bench::start(SIGNING).await;
    bench.create_nodes(&[("n1", "2", "4Gi", false)]).await;
    // The default five-minute check period: rotation follows each certificate's deadline.
    let mut options = bench.options("rot1");
    options.cert_check_period = AgentOptions::default().cert_check_period;
    let approver = bench.spawn_approver("rot1");
    let agent = join(&bench, options, 1).await;

    // Watch the certificate in the hub kubeconfig secret change several times.
    let secrets = Api::<Secret>::namespaced(bench.spoke.clone(), DEFAULT_AGENT_NAMESPACE);
    let first = bench.hub_secret().await.unwrap().data.unwrap()["tls.crt"].clone();
    let mut seen = BTreeSet::from([first.0.clone()]);
    let mut events = std::pin::pin!(
        watcher(
            secrets,
            watcher::Config::default().fields(&format!("metadata.name={HUB_KUBECONFIG_SECRET}"))
        )
        .backoff_on_errors()
        .applied_objects()
    );
    let rotations = async {
        while seen.len() < 4 {
            let secret = events.next().await.unwrap().unwrap();
            seen.insert(secret.data.unwrap()["tls.crt"].0.clone());
        }
    };
    tokio::time::timeout(WAIT, rotations)
        .await
        .expect("three rotations");

    // Long after the first certificate expired the lease is still renewed, and every CSR
    // after the first was made with the agent's own certificate (no rebootstrap).
    let first_expired = jiff::Timestamp::now() + SIGNING;
    bench.wait_lease_renewed_after("rot1", first_expired).await;
    let csrs = bench.csrs("rot1").await;
    let bootstrap_csrs = csrs
        .iter()
        .filter(|c| {
            c.spec
                .username
                .as_deref()
                .is_some_and(|u| u.starts_with("system:bootstrap:"))
        })
        .count();
    assert!(bootstrap_csrs <= 1, "{csrs:#?}");
    let agent_name = String::from_utf8(
        bench.hub_secret().await.unwrap().data.unwrap()["agent-name"]
            .0
            .clone(),
    )
    .unwrap();
    let renewal_user = format!("system:open-cluster-management:rot1:{agent_name}");
    let renewals = csrs
        .iter()
        .filter(|c| c.spec.username.as_deref() == Some(renewal_user.as_str()))
        .count();
    assert_eq!(renewals + bootstrap_csrs, csrs.len(), "{csrs:#?}");
    assert!(renewals >= 1, "{csrs:#?}");
    let mc = bench
        .wait_cluster("rot1", "ClusterCertificateRotated", |mc| {
            mc.status.as_ref().is_some_and(|s| {
                find_condition(&s.conditions, "ClusterCertificateRotated")
                    .is_some_and(|c| c.status == "True")
            })
        })
        .await;
    let rotated = find_condition(
        &mc.status.as_ref().unwrap().conditions,
        "ClusterCertificateRotated",
    )
    .unwrap()
    .clone();
    assert_eq!(rotated.reason, "ClientCertificateUpdated");
    assert!(rotated.message.contains("rotated"), "{}", rotated.message);
    approver.abort();
    agent.stop().await;
}
