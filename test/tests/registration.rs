//! Registration scenarios in one process: an embedded hub served over real TLS with its CSR
//! signer and RBAC, simulated managed clusters as logical clusters, and registration agents
//! that reach the hub only through a bootstrap token and then their own certificates.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Node, Secret};
use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_e2e::*;
use serde_json::json;

/// Makes the cluster's agent heartbeat every `seconds` (the agent follows spec changes).
async fn set_lease_duration(hub: &ocm::embedded::EmbeddedHub, cluster: &str, seconds: i32) {
    Api::<ManagedCluster>::all(hub.admin_client())
        .patch(
            cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"leaseDurationSeconds": seconds}})),
        )
        .await
        .unwrap();
}

fn csr_label(cluster: &str) -> ListParams {
    ListParams::default().labels(&format!(
        "open-cluster-management.io/cluster-name={cluster}"
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_accept_prepares_namespace_rbac_and_reports_status() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start_hub(dir.path(), fast_hub_options(), Duration::from_secs(86400))
        .await
        .unwrap();
    let bootstrap = bootstrap_kubeconfig(&hub).await.unwrap();
    let (spoke, agent) = join_and_accept(&hub, &bootstrap, "c1").await;
    let admin = hub.admin_client();

    // Cluster namespace, per-cluster RBAC and the lease the hub prepared.
    let ns = Api::<Namespace>::all(admin.clone())
        .get("c1")
        .await
        .unwrap();
    assert_eq!(
        ns.metadata.labels.unwrap()["open-cluster-management.io/cluster-name"],
        "c1"
    );
    Api::<ClusterRole>::all(admin.clone())
        .get("open-cluster-management:managedcluster:c1")
        .await
        .unwrap();
    let bindings = Api::<RoleBinding>::namespaced(admin.clone(), "c1")
        .list(&ListParams::default())
        .await
        .unwrap();
    let names: Vec<String> = bindings
        .items
        .iter()
        .filter_map(|b| b.metadata.name.clone())
        .collect();
    assert!(
        names.contains(&"open-cluster-management:managedcluster:c1:registration".to_owned()),
        "{names:?}"
    );
    assert!(
        names.contains(&"open-cluster-management:managedcluster:c1:work".to_owned()),
        "{names:?}"
    );
    Api::<Lease>::namespaced(admin.clone(), "c1")
        .get("managed-cluster-lease")
        .await
        .unwrap();

    // Status: version and capacity summed over the simulated nodes.
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    let cluster = wait_for(&clusters, "c1", "capacity reported", |c| {
        c.status
            .as_ref()
            .is_some_and(|s| s.capacity.get("cpu").is_some_and(|q| q.0 == "8"))
    })
    .await
    .unwrap();
    let status = cluster.status.unwrap();
    assert!(!status.version.unwrap().kubernetes.is_empty());
    assert_eq!(
        cluster_condition(
            &clusters.get("c1").await.unwrap(),
            "HubAcceptedManagedCluster"
        ),
        "True"
    );

    // A ClusterClaim created on the managed cluster appears on the hub; spoke-only ones do not.
    let claims: Api<ocm_api::cluster::v1alpha1::ClusterClaim> = Api::all(spoke.clone());
    for (name, value, spoke_only) in [
        ("id.k8s.io", "c1-id", false),
        ("region.example.com", "eu-1", false),
        ("secret.example.com", "hidden", true),
    ] {
        let mut labels = BTreeMap::new();
        if spoke_only {
            labels.insert(
                "open-cluster-management.io/spoke-only".to_owned(),
                String::new(),
            );
        }
        let claim = serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
            "kind": "ClusterClaim",
            "metadata": {"name": name, "labels": labels},
            "spec": {"value": value},
        }))
        .unwrap();
        claims.create(&PostParams::default(), &claim).await.unwrap();
    }
    let cluster = wait_for(&clusters, "c1", "claims reported", |c| {
        c.status
            .as_ref()
            .is_some_and(|s| s.cluster_claims.len() == 2)
    })
    .await
    .unwrap();
    let reported: Vec<(String, String)> = cluster
        .status
        .unwrap()
        .cluster_claims
        .into_iter()
        .map(|c| (c.name, c.value))
        .collect();
    assert_eq!(
        reported,
        [
            ("id.k8s.io".to_owned(), "c1-id".to_owned()),
            ("region.example.com".to_owned(), "eu-1".to_owned())
        ]
    );

    // A node added on the managed cluster shows up in capacity.
    let nodes: Api<Node> = Api::all(spoke.clone());
    let node = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-3"}
    }))
    .unwrap();
    nodes.create(&PostParams::default(), &node).await.unwrap();
    nodes
        .patch_status(
            "node-3",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "capacity": {"cpu": "2", "memory": "4Gi"},
                "allocatable": {"cpu": "2", "memory": "4Gi"}}})),
        )
        .await
        .unwrap();
    wait_for(&clusters, "c1", "capacity includes node-3", |c| {
        c.status
            .as_ref()
            .is_some_and(|s| s.capacity.get("cpu").is_some_and(|q| q.0 == "10"))
    })
    .await
    .unwrap();

    agent.stop().await.unwrap();
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clusters_credentials_reach_only_its_own_objects() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start_hub(dir.path(), fast_hub_options(), Duration::from_secs(86400))
        .await
        .unwrap();
    let bootstrap = bootstrap_kubeconfig(&hub).await.unwrap();
    let (spoke_a, agent_a) = join_and_accept(&hub, &bootstrap, "a").await;
    let (_spoke_b, agent_b) = join_and_accept(&hub, &bootstrap, "b").await;
    let a = hub_client_of_agent(&spoke_a, &hub).await.unwrap();

    let forbidden = |r: Result<(), kube::Error>, what: &str| match r {
        Err(kube::Error::Api(s)) if s.code == 403 => {}
        other => panic!("{what}: expected 403, got {other:?}"),
    };
    let ok = |r: Result<(), kube::Error>, what: &str| {
        if let Err(err) = r {
            panic!("{what}: expected success, got {err:?}");
        }
    };
    let clusters: Api<ManagedCluster> = Api::all(a.clone());
    // B's ManagedCluster: every verb.
    forbidden(clusters.get("b").await.map(|_| ()), "get managedcluster b");
    forbidden(
        clusters
            .patch(
                "b",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
            )
            .await
            .map(|_| ()),
        "patch managedcluster b",
    );
    forbidden(
        clusters
            .patch_status(
                "b",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"clusterClaims": []}})),
            )
            .await
            .map(|_| ()),
        "patch managedcluster b status",
    );
    forbidden(
        clusters.delete("b", &Default::default()).await.map(|_| ()),
        "delete managedcluster b",
    );
    // Its own cluster: cannot accept itself or delete itself.
    forbidden(
        clusters.delete("a", &Default::default()).await.map(|_| ()),
        "delete managedcluster a",
    );
    // B's namespace: leases, secrets, manifestworks.
    let leases_b: Api<Lease> = Api::namespaced(a.clone(), "b");
    forbidden(
        leases_b.get("managed-cluster-lease").await.map(|_| ()),
        "get lease b",
    );
    forbidden(
        leases_b
            .patch(
                "managed-cluster-lease",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {}})),
            )
            .await
            .map(|_| ()),
        "patch lease b",
    );
    forbidden(
        leases_b.list(&ListParams::default()).await.map(|_| ()),
        "list leases b",
    );
    for ns in ["a", "b", "kube-system", "default"] {
        let secrets: Api<Secret> = Api::namespaced(a.clone(), ns);
        forbidden(
            secrets.list(&ListParams::default()).await.map(|_| ()),
            &format!("list secrets {ns}"),
        );
    }
    forbidden(
        Api::<Secret>::all(a.clone())
            .list(&ListParams::default())
            .await
            .map(|_| ()),
        "list secrets everywhere",
    );
    let works_b: Api<ocm_api::work::v1::ManifestWork> = Api::namespaced(a.clone(), "b");
    forbidden(
        works_b.list(&ListParams::default()).await.map(|_| ()),
        "list manifestworks b",
    );
    // B's CSRs: never approve, update or delete them.
    let csrs: Api<CertificateSigningRequest> = Api::all(a.clone());
    let b_csr = Api::<CertificateSigningRequest>::all(hub.admin_client())
        .list(&csr_label("b"))
        .await
        .unwrap()
        .items
        .remove(0);
    let b_name = b_csr.metadata.name.clone().unwrap();
    forbidden(
        csrs.delete(&b_name, &Default::default()).await.map(|_| ()),
        "delete CSR of b",
    );
    forbidden(
        csrs.replace_subresource("approval", &b_name, &PostParams::default(), &b_csr)
            .await
            .map(|_| ()),
        "approve CSR of b",
    );

    // What A must be able to do for its own job.
    ok(clusters.get("a").await.map(|_| ()), "get managedcluster a");
    ok(
        clusters
            .patch_status(
                "a",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {}})),
            )
            .await
            .map(|_| ()),
        "patch own status",
    );
    let leases_a: Api<Lease> = Api::namespaced(a.clone(), "a");
    let lease = leases_a.get("managed-cluster-lease").await.unwrap();
    ok(
        leases_a
            .replace("managed-cluster-lease", &PostParams::default(), &lease)
            .await
            .map(|_| ()),
        "update own lease",
    );
    let works_a: Api<ocm_api::work::v1::ManifestWork> = Api::namespaced(a.clone(), "a");
    ok(
        works_a.list(&ListParams::default()).await.map(|_| ()),
        "list own manifestworks",
    );

    agent_a.stop().await.unwrap();
    agent_b.stop().await.unwrap();
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bootstrap_token_can_only_ask_to_join() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start_hub(dir.path(), fast_hub_options(), Duration::from_secs(86400))
        .await
        .unwrap();
    let bootstrap = bootstrap_kubeconfig(&hub).await.unwrap();
    let client = ocm_runtime::kubeconfig::client_from_yaml(&bootstrap)
        .await
        .unwrap();
    let forbidden = |r: Result<(), kube::Error>, what: &str| match r {
        Err(kube::Error::Api(s)) if s.code == 403 => {}
        other => panic!("{what}: expected 403, got {other:?}"),
    };
    // It may create its ManagedCluster and a CSR.
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    let cluster = serde_json::from_value(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
        "metadata": {"name": "boot"}, "spec": {"hubAcceptsClient": false}
    }))
    .unwrap();
    clusters
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap();
    // ...but not accept it, change it, or delete it.
    forbidden(
        clusters
            .patch(
                "boot",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"hubAcceptsClient": true}})),
            )
            .await
            .map(|_| ()),
        "accept itself",
    );
    forbidden(
        clusters
            .delete("boot", &Default::default())
            .await
            .map(|_| ()),
        "delete cluster",
    );
    forbidden(
        clusters
            .patch_status(
                "boot",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {}})),
            )
            .await
            .map(|_| ()),
        "write status",
    );
    // It reads nothing else.
    forbidden(
        Api::<Secret>::all(client.clone())
            .list(&ListParams::default())
            .await
            .map(|_| ()),
        "list secrets",
    );
    forbidden(
        Api::<Namespace>::all(client.clone())
            .list(&ListParams::default())
            .await
            .map(|_| ()),
        "list namespaces",
    );
    forbidden(
        Api::<Lease>::all(client.clone())
            .list(&ListParams::default())
            .await
            .map(|_| ()),
        "list leases",
    );
    forbidden(
        Api::<ocm_api::work::v1::ManifestWork>::all(client.clone())
            .list(&ListParams::default())
            .await
            .map(|_| ()),
        "list manifestworks",
    );
    forbidden(
        Api::<ClusterRole>::all(client.clone())
            .list(&ListParams::default())
            .await
            .map(|_| ()),
        "list clusterroles",
    );
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_agent_makes_its_cluster_unknown_and_a_restart_recovers_without_a_new_csr() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start_hub(dir.path(), fast_hub_options(), Duration::from_secs(86400))
        .await
        .unwrap();
    let bootstrap = bootstrap_kubeconfig(&hub).await.unwrap();
    let (spoke, agent) = join_and_accept(&hub, &bootstrap, "c1").await;
    let admin = hub.admin_client();
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    set_lease_duration(&hub, "c1", 1).await;
    let csrs: Api<CertificateSigningRequest> = Api::all(admin.clone());
    let before = csrs.list(&csr_label("c1")).await.unwrap().items.len();

    agent.stop().await.unwrap();
    let unreachable = "cluster.open-cluster-management.io/unreachable";
    wait_for(&clusters, "c1", "Unknown with the unreachable taint", |c| {
        cluster_condition(c, "ManagedClusterConditionAvailable") == "Unknown"
            && c.spec.taints.iter().any(|t| t.key == unreachable)
    })
    .await
    .unwrap();

    let agent = start_agent(&spoke, fast_agent_options("c1"));
    wait_for(&clusters, "c1", "Available again, taint gone", |c| {
        cluster_condition(c, "ManagedClusterConditionAvailable") == "True"
            && !c.spec.taints.iter().any(|t| t.key == unreachable)
    })
    .await
    .unwrap();
    assert_eq!(
        csrs.list(&csr_label("c1")).await.unwrap().items.len(),
        before
    );
    agent.stop().await.unwrap();
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_lived_certificates_rotate_without_losing_heartbeats() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start_hub(dir.path(), fast_hub_options(), Duration::from_secs(20))
        .await
        .unwrap();
    let bootstrap = bootstrap_kubeconfig(&hub).await.unwrap();
    let (spoke, agent) = join_and_accept(&hub, &bootstrap, "c1").await;
    set_lease_duration(&hub, "c1", 2).await;
    let admin = hub.admin_client();
    let secrets: Api<Secret> = Api::namespaced(spoke.clone(), "open-cluster-management-agent");
    let cert_of = |s: &Secret| {
        s.data
            .as_ref()
            .and_then(|d| d.get("tls.crt"))
            .map(|b| b.0.clone())
            .unwrap_or_default()
    };
    let mut seen = vec![cert_of(
        &secrets.get("hub-kubeconfig-secret").await.unwrap(),
    )];
    let leases: Api<Lease> = Api::namespaced(admin.clone(), "c1");
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    while seen.len() < 4 {
        let known = seen.clone();
        let secret = wait_for(
            &secrets,
            "hub-kubeconfig-secret",
            "a new certificate",
            move |s| !known.contains(&cert_of(s)),
        )
        .await
        .unwrap();
        seen.push(cert_of(&secret));
        // The heartbeat goes on with the new certificate.
        let renewed = leases
            .get("managed-cluster-lease")
            .await
            .unwrap()
            .spec
            .and_then(|s| s.renew_time)
            .unwrap()
            .0;
        wait_for(
            &leases,
            "managed-cluster-lease",
            "renewed after rotation",
            move |l| {
                l.spec
                    .as_ref()
                    .and_then(|s| s.renew_time.as_ref())
                    .is_some_and(|t| t.0 > renewed)
            },
        )
        .await
        .unwrap();
        assert_eq!(
            cluster_condition(
                &clusters.get("c1").await.unwrap(),
                "ManagedClusterConditionAvailable"
            ),
            "True"
        );
    }
    agent.stop().await.unwrap();
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_clusters_credentials_stop_working() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start_hub(dir.path(), fast_hub_options(), Duration::from_secs(86400))
        .await
        .unwrap();
    let bootstrap = bootstrap_kubeconfig(&hub).await.unwrap();
    let (spoke, agent) = join_and_accept(&hub, &bootstrap, "c1").await;
    let own = hub_client_of_agent(&spoke, &hub).await.unwrap();
    let admin = hub.admin_client();
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    clusters
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"hubAcceptsClient": false}})),
        )
        .await
        .unwrap();
    wait_for(
        &clusters,
        "c1",
        "HubAccepted False / HubClusterAdminDenied",
        |c| {
            c.status.as_ref().is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.type_ == "HubAcceptedManagedCluster"
                        && c.status == "False"
                        && c.reason == "HubClusterAdminDenied"
                })
            })
        },
    )
    .await
    .unwrap();
    // The lease and status writes the agent lived on are refused now.
    let leases: Api<Lease> = Api::namespaced(own.clone(), "c1");
    let refused =
        |r: Result<(), kube::Error>| matches!(r, Err(kube::Error::Api(s)) if s.code == 403);
    let lease = Api::<Lease>::namespaced(admin.clone(), "c1")
        .get("managed-cluster-lease")
        .await
        .unwrap();
    assert!(refused(
        leases
            .replace("managed-cluster-lease", &PostParams::default(), &lease)
            .await
            .map(|_| ())
    ));
    assert!(refused(
        Api::<ManagedCluster>::all(own.clone())
            .patch_status(
                "c1",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {}}))
            )
            .await
            .map(|_| ())
    ));
    agent.stop().await.unwrap();
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_restarting_from_its_data_dir_loses_no_cluster_and_agents_recover() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start_hub(dir.path(), fast_hub_options(), Duration::from_secs(86400))
        .await
        .unwrap();
    let bootstrap = bootstrap_kubeconfig(&hub).await.unwrap();
    let spoke_dir = tempfile::tempdir().unwrap();
    // The spoke lives in its own server so that it survives the hub's restart.
    let spoke_cluster =
        ocm::simulated::SimulatedCluster::start(spoke_dir.path(), ([127, 0, 0, 1], 0).into())
            .await
            .unwrap();
    let spoke = spoke_cluster.client();
    let agent = join(&spoke, &bootstrap, fast_agent_options("c1"))
        .await
        .unwrap();
    ocm::accept::accept_when_asked(&hub.admin_client(), "c1", false)
        .await
        .unwrap();
    let clusters: Api<ManagedCluster> = Api::all(hub.admin_client());
    wait_for(
        &clusters,
        "c1",
        "Joined and Available",
        joined_and_available,
    )
    .await
    .unwrap();
    set_lease_duration(&hub, "c1", 2).await;
    let port: u16 = hub.url.rsplit(':').next().unwrap().parse().unwrap();
    hub.stop().await;

    let hub = ocm::embedded::EmbeddedHub::start(ocm::embedded::EmbeddedHubOptions {
        listen: ([127, 0, 0, 1], port).into(),
        hub: fast_hub_options(),
        ..ocm::embedded::EmbeddedHubOptions::new(dir.path())
    })
    .await
    .unwrap();
    let clusters: Api<ManagedCluster> = Api::all(hub.admin_client());
    let cluster = clusters
        .get("c1")
        .await
        .expect("cluster survives the restart");
    assert!(cluster.spec.hub_accepts_client);
    // The agent reconnects by itself: its lease moves again.
    let leases: Api<Lease> = Api::namespaced(hub.admin_client(), "c1");
    let restarted = jiff::Timestamp::now();
    wait_for(
        &leases,
        "managed-cluster-lease",
        "renewed after the hub restart",
        move |l| {
            l.spec
                .as_ref()
                .and_then(|s| s.renew_time.as_ref())
                .is_some_and(|t| t.0 > restarted)
        },
    )
    .await
    .unwrap();
    agent.stop().await.unwrap();
    spoke_cluster.stop().await;
    hub.stop().await;
}
