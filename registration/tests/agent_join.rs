//! The registration agent joins a hub over real TLS: bootstrap token → ManagedCluster and CSR →
//! approval → hub kubeconfig secret → acceptance → Joined, lease, status; a restart reuses the
//! stored certificate; claims are ordered, truncated and filtered; ClusterProperties are
//! reported with their gate; managed namespaces are created, reported and released.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support_agent;

use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::Api;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_registration::agent::AgentProgress;
use ocm_runtime::conditions::{find_condition, is_true};
use support_agent::*;

fn conditions(
    mc: &ManagedCluster,
) -> Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    mc.status.clone().unwrap_or_default().conditions
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_join_end_to_end_then_restart_reuses_the_certificate() {
    let bench = Bench::start(Duration::from_secs(3600)).await;
    bench
        .create_nodes(&[
            ("n1", "4", "8Gi", false),
            ("n2", "2", "4Gi", false),
            ("n3", "8", "16Gi", true),
        ])
        .await;
    bench.create_claim("id.k8s.io", "cluster-id-1", false).await;
    bench.create_claim("region.example.com", "eu", false).await;

    let mut options = bench.options("cluster1");
    options.cluster_annotations = [
        (
            "agent.open-cluster-management.io/owner".to_owned(),
            "team-a".to_owned(),
        ),
        ("example.com/ignored".to_owned(), "x".to_owned()),
    ]
    .into();
    options.cluster_labels = [("env".to_owned(), "dev".to_owned())].into();
    let mut agent = bench.spawn_agent(options.clone());

    // The agent registers with the bootstrap token: a ManagedCluster and a CSR.
    let csr_name = bench.approve_next_csr("cluster1", &[]).await;
    agent
        .wait_progress("the certificate", |p| {
            matches!(
                p,
                AgentProgress::CertificateIssued | AgentProgress::WaitingForAcceptance
            )
        })
        .await;
    let csr = Api::<CertificateSigningRequest>::all(bench.hub.clone())
        .get(&csr_name)
        .await
        .unwrap();
    assert!(csr_name.starts_with("cluster1-"), "{csr_name}");
    assert_eq!(
        csr.spec.username.as_deref(),
        Some(format!("system:bootstrap:{TOKEN_ID}").as_str())
    );
    assert_eq!(csr.spec.signer_name, "kubernetes.io/kube-apiserver-client");
    let mc = bench
        .wait_cluster("cluster1", "the ManagedCluster", |_| true)
        .await;
    assert!(!mc.spec.hub_accepts_client);
    assert_eq!(
        mc.spec.managed_cluster_client_configs[0].url,
        "https://spoke1.example:6443"
    );
    let annotations = mc.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations
            .get("agent.open-cluster-management.io/owner")
            .map(String::as_str),
        Some("team-a")
    );
    assert!(!annotations.contains_key("example.com/ignored"));
    assert_eq!(
        mc.metadata
            .labels
            .clone()
            .unwrap_or_default()
            .get("env")
            .map(String::as_str),
        Some("dev")
    );

    // The hub kubeconfig secret holds the issued certificate and upstream's kubeconfig shape.
    agent
        .wait_progress("waiting for acceptance", |p| {
            *p == AgentProgress::WaitingForAcceptance
        })
        .await;
    let secret = bench.hub_secret().await.expect("hub kubeconfig secret");
    let data = secret.data.clone().unwrap();
    for key in [
        "kubeconfig",
        "tls.crt",
        "tls.key",
        "cluster-name",
        "agent-name",
    ] {
        assert!(data.contains_key(key), "missing {key}");
    }
    assert_eq!(data["cluster-name"].0, b"cluster1");
    let agent_name = String::from_utf8(data["agent-name"].0.clone()).unwrap();
    assert_eq!(agent_name.len(), 5);
    let kubeconfig = String::from_utf8(data["kubeconfig"].0.clone()).unwrap();
    for needle in [
        "default-context",
        "default-auth",
        "client-certificate: tls.crt",
        "namespace: configuration",
        bench.url.as_str(),
    ] {
        assert!(kubeconfig.contains(needle), "{needle} in {kubeconfig}");
    }
    let issued = String::from_utf8(csr.status.unwrap().certificate.unwrap().0).unwrap();
    assert_eq!(
        String::from_utf8(data["tls.crt"].0.clone()).unwrap().trim(),
        issued.trim()
    );
    assert!(!is_true(&conditions(&mc), "ManagedClusterJoined"));

    // Accepted: Joined, Available, lease renewed, resources, version and claims reported.
    let before_accept = jiff::Timestamp::now();
    bench.accept("cluster1", 1).await;
    agent
        .wait_progress("Available", |p| *p == AgentProgress::Available)
        .await;
    let mc = bench
        .wait_cluster("cluster1", "joined status", |mc| {
            let s = mc.status.clone().unwrap_or_default();
            is_true(&s.conditions, "ManagedClusterJoined")
                && is_true(&s.conditions, "ManagedClusterConditionAvailable")
                && !s.cluster_claims.is_empty()
        })
        .await;
    let status = mc.status.clone().unwrap();
    let available = find_condition(&status.conditions, "ManagedClusterConditionAvailable").unwrap();
    assert_eq!(available.reason, "ManagedClusterAvailable");
    assert_eq!(status.capacity["cpu"].0, "14");
    assert_eq!(status.capacity["memory"].0, "28Gi");
    assert_eq!(status.allocatable["cpu"].0, "6");
    assert_eq!(status.allocatable["memory"].0, "12Gi");
    assert!(
        !status
            .version
            .clone()
            .unwrap_or_default()
            .kubernetes
            .is_empty(),
        "{status:?}"
    );
    let claims: Vec<_> = status
        .cluster_claims
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(claims, ["id.k8s.io", "region.example.com"]);
    let renewed = bench
        .wait_lease_renewed_after("cluster1", before_accept)
        .await;
    let first_renewal = renewed.spec.unwrap().renew_time.unwrap().0;
    bench
        .wait_lease_renewed_after("cluster1", first_renewal)
        .await;
    assert_eq!(bench.csrs("cluster1").await.len(), 1);

    // Restart: the stored certificate is reused, no new CSR.
    agent.stop().await;
    let restarted_at = jiff::Timestamp::now();
    let mut agent = bench.spawn_agent(options);
    agent
        .wait_progress("Available after restart", |p| {
            *p == AgentProgress::Available
        })
        .await;
    bench
        .wait_lease_renewed_after("cluster1", restarted_at)
        .await;
    let csrs = bench.csrs("cluster1").await;
    assert_eq!(csrs.len(), 1, "no new CSR after a restart: {csrs:#?}");
    let again = bench.hub_secret().await.unwrap().data.unwrap();
    assert_eq!(again["agent-name"].0, agent_name.as_bytes());
    assert_eq!(again["tls.crt"].0, data["tls.crt"].0);
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_are_ordered_truncated_and_spoke_only_claims_stay_home() {
    let bench = Bench::start(Duration::from_secs(3600)).await;
    bench.create_nodes(&[("n1", "2", "4Gi", false)]).await;
    for (name, value, spoke_only) in [
        ("zone.example.com", "z1", false),
        ("platform.open-cluster-management.io", "AWS", false),
        ("app.example.com", "a", false),
        ("secret.example.com", "s", true),
        ("id.k8s.io", "id-1", false),
        ("mine.reserved.io", "r", false),
        ("beta.example.com", "b", false),
    ] {
        bench.create_claim(name, value, spoke_only).await;
    }
    let mut options = bench.options("cluster2");
    options.max_custom_cluster_claims = 2;
    options.reserved_claim_suffixes = vec!["reserved.io".into()];
    // Long period: later changes must arrive through the node and claim watches.
    options.status_sync_period = Duration::from_secs(600);
    let agent = join(&bench, options, 60).await;

    let names = |mc: &ManagedCluster| -> Vec<String> {
        mc.status
            .clone()
            .unwrap_or_default()
            .cluster_claims
            .iter()
            .map(|c| c.name.clone())
            .collect()
    };
    let mc = bench
        .wait_cluster("cluster2", "claims", |mc| {
            !mc.status
                .clone()
                .unwrap_or_default()
                .cluster_claims
                .is_empty()
        })
        .await;
    assert_eq!(
        names(&mc),
        [
            "id.k8s.io",
            "mine.reserved.io",
            "platform.open-cluster-management.io",
            "app.example.com",
            "beta.example.com",
        ]
    );

    // A new claim sorting first among the custom ones and a new node show up without waiting
    // for the periodic sync.
    bench.create_claim("aaa.example.com", "new", false).await;
    bench.create_nodes(&[("n2", "3", "4Gi", false)]).await;
    let mc = bench
        .wait_cluster("cluster2", "the new claim and node", |mc| {
            let s = mc.status.clone().unwrap_or_default();
            s.cluster_claims.iter().any(|c| c.name == "aaa.example.com")
                && s.capacity.get("cpu").is_some_and(|q| q.0 == "5")
        })
        .await;
    assert_eq!(
        names(&mc),
        [
            "id.k8s.io",
            "mine.reserved.io",
            "platform.open-cluster-management.io",
            "aaa.example.com",
            "app.example.com",
        ]
    );
    assert_eq!(mc.status.unwrap().capacity["memory"].0, "8Gi");
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_cluster_claim_api_the_status_has_no_claims() {
    let bench = Bench::start_with(Duration::from_secs(3600), false).await;
    bench.create_nodes(&[("n1", "2", "4Gi", false)]).await;
    let agent = join(&bench, bench.options("noclaims"), 60).await;
    let mc = bench
        .wait_cluster("noclaims", "resources", |mc| {
            mc.status
                .as_ref()
                .is_some_and(|s| s.capacity.get("cpu").is_some_and(|q| q.0 == "2"))
        })
        .await;
    let status = mc.status.unwrap();
    assert!(status.cluster_claims.is_empty(), "{status:?}");
    assert!(is_true(&status.conditions, "ManagedClusterJoined"));
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_cluster_waits_and_resumes_when_accepted_again() {
    let bench = Bench::start(Duration::from_secs(3600)).await;
    bench.create_nodes(&[("n1", "2", "4Gi", false)]).await;
    let mut agent = join(&bench, bench.options("deny1"), 1).await;
    bench.set_hub_accepted_status("deny1", "False").await;
    agent
        .wait_progress("waiting for acceptance", |p| {
            *p == AgentProgress::WaitingForAcceptance
        })
        .await;
    let accepted_again = jiff::Timestamp::now();
    bench.set_hub_accepted("deny1").await;
    agent
        .wait_progress("Available again", |p| *p == AgentProgress::Available)
        .await;
    bench
        .wait_lease_renewed_after("deny1", accepted_again)
        .await;
    assert_eq!(bench.csrs("deny1").await.len(), 1);
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_properties_are_reported_beside_claims_with_the_gate() {
    use kube::api::{DeleteParams, Patch, PatchParams};
    use ocm_api::about::v1alpha1::ClusterProperty;
    let bench = Bench::start(Duration::from_secs(3600)).await;
    bench.create_nodes(&[("n1", "2", "4Gi", false)]).await;
    install_crds(&bench.spoke, ocm_api::crds::about()).await;
    bench
        .create_claim("shared.example.com", "from-claim", false)
        .await;
    let mut options = bench.options("props1");
    options.apply_feature_gates("ClusterProperty=true").unwrap();
    // Long period: property changes must arrive through the property watch.
    options.status_sync_period = Duration::from_secs(600);
    let agent = join(&bench, options, 60).await;
    let properties: Api<ClusterProperty> = Api::all(bench.spoke.clone());
    let claim = |mc: &ManagedCluster, name: &str| -> Option<String> {
        mc.status
            .as_ref()?
            .cluster_claims
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.value.clone())
    };
    create(
        &properties,
        serde_json::json!({"metadata": {"name": "prop1"}, "spec": {"value": "value1"}}),
    )
    .await;
    create(
        &properties,
        serde_json::json!({"metadata": {"name": "shared.example.com"},
                           "spec": {"value": "from-property"}}),
    )
    .await;
    // Both properties arrive (as two watch events, possibly in two status updates); a
    // property wins over a claim of the same name.
    let mc = bench
        .wait_cluster(
            "props1",
            "prop1=value1 and shared.example.com=from-property",
            move |mc| {
                claim(mc, "prop1").as_deref() == Some("value1")
                    && claim(mc, "shared.example.com").as_deref() == Some("from-property")
            },
        )
        .await;
    assert_eq!(claim(&mc, "prop1").as_deref(), Some("value1"));
    properties
        .patch(
            "prop1",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"value": "value2"}})),
        )
        .await
        .unwrap();
    bench
        .wait_cluster("props1", "prop1=value2", move |mc| {
            claim(mc, "prop1").as_deref() == Some("value2")
        })
        .await;
    properties
        .delete("prop1", &DeleteParams::default())
        .await
        .unwrap();
    properties
        .delete("shared.example.com", &DeleteParams::default())
        .await
        .unwrap();
    let mc = bench
        .wait_cluster("props1", "prop1 gone", move |mc| {
            claim(mc, "prop1").is_none()
        })
        .await;
    assert_eq!(
        claim(&mc, "shared.example.com").as_deref(),
        Some("from-claim")
    );
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_gate_cluster_properties_are_not_reported() {
    use ocm_api::about::v1alpha1::ClusterProperty;
    let bench = Bench::start(Duration::from_secs(3600)).await;
    bench.create_nodes(&[("n1", "2", "4Gi", false)]).await;
    install_crds(&bench.spoke, ocm_api::crds::about()).await;
    create(
        &Api::<ClusterProperty>::all(bench.spoke.clone()),
        serde_json::json!({"metadata": {"name": "prop1"}, "spec": {"value": "value1"}}),
    )
    .await;
    bench.create_claim("claim1", "c", false).await;
    let agent = join(&bench, bench.options("props2"), 60).await;
    let mc = bench
        .wait_cluster("props2", "claims", |mc| {
            mc.status
                .as_ref()
                .is_some_and(|s| !s.cluster_claims.is_empty())
        })
        .await;
    let names: Vec<String> = mc
        .status
        .unwrap()
        .cluster_claims
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, ["claim1"]);
    agent.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managed_namespaces_are_created_labelled_reported_and_released() {
    use k8s_openapi::api::core::v1::Namespace;
    use kube::api::{DeleteParams, Patch, PatchParams};
    use ocm_registration::agent::managed_namespaces::hub_cluster_set_label;
    let bench = Bench::start(Duration::from_secs(3600)).await;
    bench.create_nodes(&[("n1", "2", "4Gi", false)]).await;
    let mut options = bench.options("mns1");
    options.status_sync_period = Duration::from_secs(600);
    let agent = join(&bench, options, 60).await;
    let label = hub_cluster_set_label(&bench.url);
    let namespaces: Api<Namespace> = Api::all(bench.spoke.clone());
    let clusters: Api<ManagedCluster> = Api::all(bench.hub.clone());
    // The hub (played here) lists two namespaces of set "universal".
    let list = |names: &[&str]| {
        let entries: Vec<serde_json::Value> = names
            .iter()
            .map(|n| serde_json::json!({"name": n, "clusterSet": "universal"}))
            .collect();
        serde_json::json!({"status": {"managedNamespaces": entries}})
    };
    clusters
        .patch_status(
            "mns1",
            &PatchParams::default(),
            &Patch::Merge(list(&["team-a", "team-b"])),
        )
        .await
        .unwrap();
    let mc = bench
        .wait_cluster("mns1", "both NamespaceAvailable", |mc| {
            let entries = &mc.status.as_ref().unwrap().managed_namespaces;
            entries.len() == 2
                && entries.iter().all(|e| {
                    find_condition(&e.conditions, "NamespaceAvailable")
                        .is_some_and(|c| c.status == "True" && c.reason == "NamespaceApplied")
                })
        })
        .await;
    assert_eq!(
        mc.status.unwrap().managed_namespaces[0].cluster_set,
        "universal"
    );
    let labelled = |ns: &Namespace| ns.metadata.labels.clone().unwrap_or_default();
    for name in ["team-a", "team-b"] {
        let ns = namespaces.get(name).await.unwrap();
        assert_eq!(labelled(&ns).get(&label).map(String::as_str), Some("true"));
    }
    // Deleted on the managed cluster: created again (the labelled watch wakes the agent).
    namespaces
        .delete("team-b", &DeleteParams::default())
        .await
        .unwrap();
    let label_b = label.clone();
    wait_for(
        &namespaces,
        "team-b",
        "team-b back",
        move |ns: &Namespace| {
            ns.metadata.deletion_timestamp.is_none()
                && ns
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(&label_b))
                    .is_some_and(|v| v == "true")
        },
    )
    .await;
    // Dropped from the list: kept, labelled "false"; the other stays "true".
    clusters
        .patch_status(
            "mns1",
            &PatchParams::default(),
            &Patch::Merge(list(&["team-b"])),
        )
        .await
        .unwrap();
    let label_a = label.clone();
    wait_for(
        &namespaces,
        "team-a",
        "team-a released",
        move |ns: &Namespace| {
            ns.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(&label_a))
                .is_some_and(|v| v == "false")
        },
    )
    .await;
    let ns = namespaces.get("team-b").await.unwrap();
    assert_eq!(labelled(&ns).get(&label).map(String::as_str), Some("true"));
    agent.stop().await;
}
