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

fn csr_label(cluster: &str) -> ListParams {
    ListParams::default().labels(&format!(
        "open-cluster-management.io/cluster-name={cluster}"
    ))
}

/// Acceptance applies only what its watches show missing or different; RBAC someone else
/// deletes or changes after the join is put back all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acceptance_restores_rbac_deleted_or_changed_after_the_join() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start_hub(dir.path(), fast_hub_options(), Duration::from_secs(86400))
        .await
        .unwrap();
    let bootstrap = bootstrap_kubeconfig(&hub).await.unwrap();
    let (_spoke, _agent) = join_and_accept(&hub, &bootstrap, "c1").await;
    let admin = hub.admin_client();

    let bindings = Api::<RoleBinding>::namespaced(admin.clone(), "c1");
    let binding = "open-cluster-management:managedcluster:c1:registration";
    let before = bindings.get(binding).await.unwrap();
    bindings.delete(binding, &Default::default()).await.unwrap();
    wait_for(&bindings, binding, "the RoleBinding made again", |b| {
        b.metadata.uid != before.metadata.uid
    })
    .await
    .unwrap();

    let roles = Api::<ClusterRole>::all(admin.clone());
    let role = "open-cluster-management:managedcluster:c1";
    roles
        .patch(
            role,
            &PatchParams::default(),
            &Patch::Merge(json!({ "rules": [] })),
        )
        .await
        .unwrap();
    wait_for(&roles, role, "the rules put back", |r| {
        r.rules.as_ref().is_some_and(|rules| !rules.is_empty())
    })
    .await
    .unwrap();

    let namespaces = Api::<Namespace>::all(admin.clone());
    namespaces
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "metadata": { "labels": { "open-cluster-management.io/cluster-name": "other" } }
            })),
        )
        .await
        .unwrap();
    wait_for(&namespaces, "c1", "the cluster-name label put back", |ns| {
        ns.metadata.labels.as_ref().is_some_and(|l| {
            l.get("open-cluster-management.io/cluster-name")
                .map(String::as_str)
                == Some("c1")
        })
    })
    .await
    .unwrap();
}

/// The hub's count of `GET managedclusters/<name>`.
async fn cluster_reads(admin: &kube::Client) -> u64 {
    let metrics = admin
        .request_text(http::Request::get("/metrics").body(Vec::new()).unwrap())
        .await
        .unwrap();
    ocm_apiserver::metrics::sum_requests(&metrics, |c| {
        c.label("verb") == "GET" && c.label("resource") == "managedclusters"
    })
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

    let reads_before = cluster_reads(&admin).await;

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
        // One claim at a time: each is a status sync of its own.
        let reported = if name == "id.k8s.io" { 1 } else { 2 };
        wait_for(&clusters, "c1", "claim reported", move |c| {
            c.status
                .as_ref()
                .is_some_and(|s| s.cluster_claims.len() == reported)
        })
        .await
        .unwrap();
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

    // The status syncs of the claims and the node (and the echoes of the agent's own writes)
    // started from the ManagedCluster its watch delivered or its own write returned: at most
    // one read by name (a watch event of an older write arriving after the agent's newest one
    // makes its next write conflict once), where a read per sync made four or more.
    let reads = cluster_reads(&admin).await - reads_before;
    assert!(reads <= 1, "{reads} reads of the ManagedCluster by name");

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
    set_lease_duration(&hub, "c1", 1).await.unwrap();
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
    set_lease_duration(&hub, "c1", 2).await.unwrap();
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
    set_lease_duration(&hub, "c1", 2).await.unwrap();
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

/// The real signing duration of the issue: `ocm hub --cluster-signing-duration-seconds 60`.
const SIXTY_SECONDS: Duration = Duration::from_secs(60);

/// Joins `spoke` to `hub` as `cluster` with [`rotation_agent_options`] (five-minute check
/// period) and accepts it; returns once it is Joined and Available.
async fn join_for_rotation(
    hub: &ocm::embedded::EmbeddedHub,
    spoke: &kube::Client,
    cluster: &str,
) -> RunningAgent {
    let bootstrap = bootstrap_kubeconfig(hub).await.unwrap();
    let agent = join(spoke, &bootstrap, rotation_agent_options(cluster))
        .await
        .unwrap();
    tokio::time::timeout(
        WAIT,
        ocm::accept::accept_when_asked(&hub.admin_client(), cluster, false),
    )
    .await
    .expect("cluster asks to join")
    .unwrap();
    let clusters: Api<ManagedCluster> = Api::all(hub.admin_client());
    wait_for(
        &clusters,
        cluster,
        "Joined and Available",
        joined_and_available,
    )
    .await
    .unwrap();
    agent
}

/// Waits (watching the spoke secret) for a certificate other than `current`; returns it and
/// its end of validity.
async fn next_certificate(
    spoke: &kube::Client,
    ca_pem: &str,
    current: &[u8],
) -> (Vec<u8>, jiff::Timestamp) {
    let secrets: Api<Secret> = Api::namespaced(spoke.clone(), "open-cluster-management-agent");
    let current = current.to_vec();
    let secret = wait_for(
        &secrets,
        "hub-kubeconfig-secret",
        "a new certificate",
        move |s| {
            s.data
                .as_ref()
                .and_then(|d| d.get("tls.crt"))
                .is_some_and(|c| c.0 != current)
        },
    )
    .await
    .unwrap();
    let pem = secret.data.unwrap()["tls.crt"].0.clone();
    let not_after = certificate_not_after(&pem, ca_pem).unwrap();
    (pem, not_after)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_second_certificates_rotate_at_their_deadline_with_the_default_check_period() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start_hub(dir.path(), fast_hub_options(), SIXTY_SECONDS)
        .await
        .unwrap();
    let csrs = CsrLog::start(&hub.admin_client(), "c1");
    let spoke = simulated_spoke(&hub, "c1").await.unwrap();
    let agent = join_for_rotation(&hub, &spoke, "c1").await;
    set_lease_duration(&hub, "c1", 5).await.unwrap();
    let clusters: Api<ManagedCluster> = Api::all(hub.admin_client());
    let mut progress = agent.progress.clone();
    let rebootstraps = tokio::spawn(async move {
        let mut seen = Vec::new();
        while progress.changed().await.is_ok() {
            let p = progress.borrow_and_update().clone();
            if matches!(
                p,
                ocm_registration::agent::AgentProgress::Rebootstrapping { .. }
            ) {
                seen.push(p.to_string());
            }
        }
        seen
    });

    // Each certificate lives 60 s from issuance (360 s from its backdated notBefore). Every
    // one is replaced 45–48 s after it arrived: before it expires, not at once, and without
    // the five-minute check.
    let (mut pem, mut not_after) = agent_certificate(&spoke, &hub.ca_pem).await.unwrap();
    for _ in 0..2 {
        let (next, next_after) = next_certificate(&spoke, &hub.ca_pem, &pem).await;
        let arrived = jiff::Timestamp::now();
        let issued_before = next_after - SIXTY_SECONDS;
        assert!(
            arrived < not_after,
            "rotated at {arrived}, after expiry {not_after}"
        );
        let used = issued_before.duration_since(not_after - SIXTY_SECONDS);
        assert!(
            used.as_secs() >= 40 && used.as_secs() <= 55,
            "the previous certificate was used {used:?}"
        );
        let mc = clusters.get("c1").await.unwrap();
        assert_eq!(
            cluster_condition(&mc, "ManagedClusterConditionAvailable"),
            "True"
        );
        (pem, not_after) = (next, next_after);
    }
    // The heartbeat goes on with the newest certificate.
    let now = jiff::Timestamp::now();
    wait_for(
        &Api::<Lease>::namespaced(hub.admin_client(), "c1"),
        "managed-cluster-lease",
        "renewed after the second rotation",
        move |l| {
            l.spec
                .as_ref()
                .and_then(|s| s.renew_time.as_ref())
                .is_some_and(|t| t.0 > now)
        },
    )
    .await
    .unwrap();
    let mc = clusters.get("c1").await.unwrap();
    assert_eq!(
        cluster_condition(&mc, "ManagedClusterConditionAvailable"),
        "True"
    );
    assert_eq!(cluster_condition(&mc, "ClusterCertificateRotated"), "True");

    // One bootstrap CSR; every other was a renewal the hub approved by itself.
    let seen = csrs.snapshot();
    let bootstrap: Vec<_> = seen
        .values()
        .filter(|c| c.username.starts_with("system:bootstrap:"))
        .collect();
    assert_eq!(bootstrap.len(), 1, "{seen:#?}");
    let renewals: Vec<_> = seen
        .values()
        .filter(|c| c.username.starts_with("system:open-cluster-management:c1:"))
        .collect();
    assert!(renewals.len() >= 2, "{seen:#?}");
    assert_eq!(renewals.len() + 1, seen.len(), "{seen:#?}");
    for csr in renewals {
        assert_eq!(
            csr.approved_reason.as_deref(),
            Some("AutoApprovedByHubCSRApprovingController"),
            "{seen:#?}"
        );
    }
    agent.stop().await.unwrap();
    assert_eq!(rebootstraps.await.unwrap(), Vec::<String>::new());
    hub.stop().await;
}

/// A hub in `dir` and a managed cluster in its own server (so it outlives hub restarts).
async fn hub_and_separate_spoke(
    dir: &std::path::Path,
    spoke_dir: &std::path::Path,
) -> (ocm::embedded::EmbeddedHub, ocm::simulated::SimulatedCluster) {
    let hub = start_hub(dir, fast_hub_options(), SIXTY_SECONDS)
        .await
        .unwrap();
    let spoke = ocm::simulated::SimulatedCluster::start(spoke_dir, ([127, 0, 0, 1], 0).into())
        .await
        .unwrap();
    (hub, spoke)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_down_across_the_rotation_deadline_gets_the_renewal_as_soon_as_it_returns() {
    let dir = tempfile::tempdir().unwrap();
    let spoke_dir = tempfile::tempdir().unwrap();
    let (hub, spoke_cluster) = hub_and_separate_spoke(dir.path(), spoke_dir.path()).await;
    let spoke = spoke_cluster.client();
    let agent = join_for_rotation(&hub, &spoke, "c1").await;
    let ca_pem = hub.ca_pem.clone();
    let (pem, not_after) = agent_certificate(&spoke, &ca_pem).await.unwrap();
    // The deadline is 45–48 s after issuance, i.e. 12–15 s before expiry. The hub goes away
    // 20 s before expiry and comes back 8 s before it: past the deadline, still valid.
    let stop_at = not_after - Duration::from_secs(20);
    assert!(jiff::Timestamp::now() < stop_at, "joining took too long");
    sleep_until(stop_at).await;
    let port: u16 = hub.url.rsplit(':').next().unwrap().parse().unwrap();
    hub.stop().await;
    let stopped = jiff::Timestamp::now();
    sleep_until(not_after - Duration::from_secs(8)).await;
    let hub = ocm::embedded::EmbeddedHub::start(ocm::embedded::EmbeddedHubOptions {
        listen: ([127, 0, 0, 1], port).into(),
        hub: fast_hub_options(),
        csr_signing_duration: SIXTY_SECONDS,
        ..ocm::embedded::EmbeddedHubOptions::new(dir.path())
    })
    .await
    .unwrap();
    let returned = jiff::Timestamp::now();
    let csrs = CsrLog::start(&hub.admin_client(), "c1");

    let (_, next_after) = next_certificate(&spoke, &ca_pem, &pem).await;
    let arrived = jiff::Timestamp::now();
    assert!(
        arrived < not_after,
        "the renewal came at {arrived}, after the old certificate expired at {not_after} (hub down {stopped}..{returned})"
    );
    assert!(next_after - SIXTY_SECONDS >= returned - Duration::from_secs(1));
    // Renewed with its own certificate, approved by the hub: no second bootstrap.
    let seen = csrs.snapshot();
    assert_eq!(
        seen.values()
            .filter(|c| c.username.starts_with("system:bootstrap:"))
            .count(),
        1,
        "{seen:#?}"
    );
    let clusters: Api<ManagedCluster> = Api::all(hub.admin_client());
    wait_for(&clusters, "c1", "rotated and Available", |mc| {
        joined_and_available(mc) && cluster_condition(mc, "ClusterCertificateRotated") == "True"
    })
    .await
    .unwrap();
    agent.stop().await.unwrap();
    spoke_cluster.stop().await;
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_down_past_expiry_sends_the_agent_back_to_bootstrap_and_it_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let spoke_dir = tempfile::tempdir().unwrap();
    let (hub, spoke_cluster) = hub_and_separate_spoke(dir.path(), spoke_dir.path()).await;
    let spoke = spoke_cluster.client();
    let agent = join_for_rotation(&hub, &spoke, "c1").await;
    let ca_pem = hub.ca_pem.clone();
    let (pem, not_after) = agent_certificate(&spoke, &ca_pem).await.unwrap();
    let stop_at = not_after - Duration::from_secs(20);
    assert!(jiff::Timestamp::now() < stop_at, "joining took too long");
    sleep_until(stop_at).await;
    let stopped_hub = {
        let port: u16 = hub.url.rsplit(':').next().unwrap().parse().unwrap();
        hub.stop().await;
        port
    };
    // Back only after the certificate expired.
    sleep_until(not_after + Duration::from_secs(2)).await;
    let hub = ocm::embedded::EmbeddedHub::start(ocm::embedded::EmbeddedHubOptions {
        listen: ([127, 0, 0, 1], stopped_hub).into(),
        hub: fast_hub_options(),
        csr_signing_duration: SIXTY_SECONDS,
        ..ocm::embedded::EmbeddedHubOptions::new(dir.path())
    })
    .await
    .unwrap();
    // The agent asks again with the bootstrap token; the hub admin approves it again.
    wait_for_bootstrap_csr(&hub.admin_client(), "c1")
        .await
        .expect("the agent asks again with the bootstrap token");
    let approved = ocm::accept::accept_cluster(&hub.admin_client(), "c1", false)
        .await
        .unwrap();
    assert_eq!(approved.approved_csrs.len(), 1, "{approved:?}");
    next_certificate(&spoke, &ca_pem, &pem).await;
    let clusters: Api<ManagedCluster> = Api::all(hub.admin_client());
    let mc = wait_for(&clusters, "c1", "the expiry reported", |mc| {
        mc.status.as_ref().is_some_and(|s| {
            s.conditions.iter().any(|c| {
                c.type_ == "ClusterCertificateRotated"
                    && c.status == "False"
                    && c.reason == "ClientCertificateExpired"
            })
        })
    })
    .await
    .unwrap();
    let condition = mc
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == "ClusterCertificateRotated")
        .unwrap();
    assert!(
        condition.message.contains("expired"),
        "{}",
        condition.message
    );
    wait_for(&clusters, "c1", "Available again", joined_and_available)
        .await
        .unwrap();
    agent.stop().await.unwrap();
    spoke_cluster.stop().await;
    hub.stop().await;
}
