//! Acceptance, denial and deletion of ManagedClusters by the hub controllers, against the
//! embedded API server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support_accept;

use std::collections::BTreeMap;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::work::v1::{ManifestWork, ManifestWorkSpec};
use ocm_registration::hub::HubOptions;
use ocm_registration::hub::rbac;
use serde_json::json;
use support_accept::{Hub, cluster_condition, wait_for, wait_gone};

const ACCEPTED: &str = "HubAcceptedManagedCluster";
const CLUSTER_GROUP: &str = "cluster.open-cluster-management.io";
const WORK_GROUP: &str = "work.open-cluster-management.io";

fn accepted(c: &ManagedCluster) -> bool {
    cluster_condition(c, ACCEPTED).is_some_and(|(s, _, _)| s == "True")
}

fn denied(c: &ManagedCluster) -> bool {
    cluster_condition(c, ACCEPTED)
        .is_some_and(|(s, r, _)| s == "False" && r == "HubClusterAdminDenied")
}

async fn set_accepts(hub: &Hub, name: &str, accepts: bool) {
    let api: Api<ManagedCluster> = Api::all(hub.admin.clone());
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"hubAcceptsClient": accepts}})),
    )
    .await
    .unwrap();
}

fn work(name: &str, ns: &str, annotations: &[(&str, &str)], finalizers: &[&str]) -> ManifestWork {
    let mut w = ManifestWork::new(name, ManifestWorkSpec::default());
    w.metadata.namespace = Some(ns.to_owned());
    if !annotations.is_empty() {
        w.metadata.annotations = Some(
            annotations
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
    }
    if !finalizers.is_empty() {
        w.metadata.finalizers = Some(finalizers.iter().map(|f| (*f).to_owned()).collect());
    }
    w.spec.workload.manifests = vec![
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{name}"), "namespace": "default"}
        }))
        .unwrap(),
    ];
    w
}

#[tokio::test]
async fn accepting_a_cluster_creates_namespace_rbac_finalizers_and_condition() {
    let hub = Hub::start(HubOptions {
        cluster_namespace_labels: BTreeMap::from([("team".to_owned(), "blue".to_owned())]),
        ..HubOptions::default()
    })
    .await;
    hub.create_cluster("c1", true).await;
    let clusters: Api<ManagedCluster> = Api::all(hub.admin.clone());
    let c1 = wait_for(&clusters, "c1", "c1 accepted", accepted).await;
    let (_, reason, message) = cluster_condition(&c1, ACCEPTED).unwrap();
    assert_eq!(reason, "HubClusterAdminAccepted");
    assert_eq!(message, "Accepted by hub cluster admin");
    let finalizers = c1.finalizers();
    assert!(
        finalizers.contains(&"cluster.open-cluster-management.io/api-resource-cleanup".to_owned())
    );
    assert!(finalizers.contains(&"cluster.open-cluster-management.io/resource-cleanup".to_owned()));

    let ns = Api::<Namespace>::all(hub.admin.clone())
        .get("c1")
        .await
        .unwrap();
    let labels = ns.labels();
    assert_eq!(
        labels
            .get("open-cluster-management.io/cluster-name")
            .map(String::as_str),
        Some("c1")
    );
    assert_eq!(labels.get("team").map(String::as_str), Some("blue"));

    let roles: Api<ClusterRole> = Api::all(hub.admin.clone());
    let role = roles
        .get("open-cluster-management:managedcluster:c1")
        .await
        .unwrap();
    assert_eq!(
        role.rules,
        rbac::cluster_role("c1", true, &BTreeMap::new()).rules
    );
    assert_eq!(role.labels().get("team").map(String::as_str), Some("blue"));
    for common in [rbac::REGISTRATION_CLUSTER_ROLE, rbac::WORK_CLUSTER_ROLE] {
        roles.get(common).await.unwrap();
    }
    Api::<ClusterRoleBinding>::all(hub.admin.clone())
        .get("open-cluster-management:managedcluster:c1")
        .await
        .unwrap();
    let rbs: Api<RoleBinding> = Api::namespaced(hub.admin.clone(), "c1");
    rbs.get("open-cluster-management:managedcluster:c1:registration")
        .await
        .unwrap();
    let work_rb = rbs
        .get("open-cluster-management:managedcluster:c1:work")
        .await
        .unwrap();
    assert_eq!(
        work_rb.finalizers(),
        &["cluster.open-cluster-management.io/manifest-work-cleanup".to_owned()]
    );

    // What the agent of c1 may now do, through its own identity.
    let agent = hub.agent("c1", "agent1");
    let agent_clusters: Api<ManagedCluster> = Api::all(agent.clone());
    agent_clusters.get("c1").await.unwrap();
    agent_clusters
        .patch_status(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"version": {"kubernetes": "v1.33.0"}}})),
        )
        .await
        .unwrap();
    let leases_admin: Api<Lease> = Api::namespaced(hub.admin.clone(), "c1");
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some("managed-cluster-lease".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec::default()),
    };
    // The hub lease controller may have created it already.
    match leases_admin.create(&PostParams::default(), &lease).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.is_already_exists() => {}
        Err(e) => panic!("create lease: {e}"),
    }
    let agent_leases: Api<Lease> = Api::namespaced(agent.clone(), "c1");
    let mut got = agent_leases.get("managed-cluster-lease").await.unwrap();
    got.spec
        .get_or_insert_with(LeaseSpec::default)
        .holder_identity = Some("agent1".to_owned());
    agent_leases
        .replace("managed-cluster-lease", &PostParams::default(), &got)
        .await
        .unwrap();
    Api::<ManifestWork>::namespaced(agent.clone(), "c1")
        .list(&Default::default())
        .await
        .unwrap();

    // ... and may not do for another cluster.
    hub.create_cluster("other", false).await;
    assert!(agent_clusters.get("other").await.is_err());
    let user = "system:open-cluster-management:c1:agent1";
    let groups = ["system:open-cluster-management:c1"];
    assert!(
        hub.can(
            user,
            &groups,
            "get",
            CLUSTER_GROUP,
            "managedclusters",
            None,
            None,
            Some("c1")
        )
        .await
    );
    assert!(
        !hub.can(
            user,
            &groups,
            "get",
            CLUSTER_GROUP,
            "managedclusters",
            None,
            None,
            Some("other")
        )
        .await
    );
    assert!(
        !hub.can(
            user,
            &groups,
            "update",
            CLUSTER_GROUP,
            "managedclusters",
            Some("status"),
            None,
            Some("other")
        )
        .await
    );
    assert!(
        !hub.can(
            user,
            &groups,
            "list",
            WORK_GROUP,
            "manifestworks",
            None,
            Some("other"),
            None
        )
        .await
    );
    assert!(
        !hub.can(
            user,
            &groups,
            "get",
            "coordination.k8s.io",
            "leases",
            None,
            Some("other"),
            None
        )
        .await
    );
    assert!(
        hub.can(
            user,
            &groups,
            "renew",
            "register.open-cluster-management.io",
            "managedclusters",
            Some("clientcertificates"),
            None,
            None
        )
        .await
    );
    assert!(
        !hub.can(
            user,
            &groups,
            "delete",
            CLUSTER_GROUP,
            "managedclusters",
            None,
            None,
            Some("c1")
        )
        .await
    );
}

#[tokio::test]
async fn a_never_accepted_cluster_gets_only_the_cleanup_finalizer() {
    let hub = Hub::start(HubOptions::default()).await;
    hub.create_cluster("c2", false).await;
    let clusters: Api<ManagedCluster> = Api::all(hub.admin.clone());
    let c2 = wait_for(&clusters, "c2", "c2 has a finalizer", |c| {
        !c.finalizers().is_empty()
    })
    .await;
    assert_eq!(
        c2.finalizers(),
        &["cluster.open-cluster-management.io/resource-cleanup".to_owned()]
    );
    // Everything that happens to c2 happens in the reconcile that added the finalizer or the
    // one it triggered; wait for that one before checking nothing else was made.
    hub.wait_reconciles("managed-cluster-acceptance", 2).await;
    assert!(cluster_condition(&clusters.get("c2").await.unwrap(), ACCEPTED).is_none());
    assert!(
        Api::<Namespace>::all(hub.admin.clone())
            .get_opt("c2")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        Api::<ClusterRole>::all(hub.admin.clone())
            .get_opt("open-cluster-management:managedcluster:c2")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn denying_reduces_permissions_and_sets_the_condition() {
    let hub = Hub::start(HubOptions::default()).await;
    hub.create_cluster("c3", true).await;
    let clusters: Api<ManagedCluster> = Api::all(hub.admin.clone());
    wait_for(&clusters, "c3", "c3 accepted", accepted).await;

    set_accepts(&hub, "c3", false).await;
    let c3 = wait_for(&clusters, "c3", "c3 denied", denied).await;
    assert_eq!(
        cluster_condition(&c3, ACCEPTED).unwrap().2,
        "Denied by hub cluster admin"
    );

    let role = Api::<ClusterRole>::all(hub.admin.clone())
        .get("open-cluster-management:managedcluster:c3")
        .await
        .unwrap();
    assert_eq!(
        role.rules,
        rbac::cluster_role("c3", false, &BTreeMap::new()).rules
    );
    let rbs: Api<RoleBinding> = Api::namespaced(hub.admin.clone(), "c3");
    wait_gone(
        &rbs,
        "open-cluster-management:managedcluster:c3:registration",
        "registration rb",
    )
    .await;
    wait_gone(
        &rbs,
        "open-cluster-management:managedcluster:c3:work",
        "work rb",
    )
    .await;
    // The namespace stays.
    Api::<Namespace>::all(hub.admin.clone())
        .get("c3")
        .await
        .unwrap();

    let user = "system:open-cluster-management:c3:agent";
    let groups = ["system:open-cluster-management:c3"];
    assert!(
        hub.can(
            user,
            &groups,
            "get",
            CLUSTER_GROUP,
            "managedclusters",
            None,
            None,
            Some("c3")
        )
        .await
    );
    assert!(
        !hub.can(
            user,
            &groups,
            "update",
            CLUSTER_GROUP,
            "managedclusters",
            Some("status"),
            None,
            Some("c3")
        )
        .await
    );
    assert!(
        !hub.can(
            user,
            &groups,
            "renew",
            "register.open-cluster-management.io",
            "managedclusters",
            Some("clientcertificates"),
            None,
            None
        )
        .await
    );
    assert!(
        !hub.can(
            user,
            &groups,
            "list",
            WORK_GROUP,
            "manifestworks",
            None,
            Some("c3"),
            None
        )
        .await
    );
    assert!(
        !hub.can(
            user,
            &groups,
            "update",
            "coordination.k8s.io",
            "leases",
            None,
            Some("c3"),
            Some("managed-cluster-lease")
        )
        .await
    );

    // Accepting again restores everything.
    set_accepts(&hub, "c3", true).await;
    wait_for(&clusters, "c3", "c3 accepted again", accepted).await;
    assert!(
        hub.can(
            user,
            &groups,
            "list",
            WORK_GROUP,
            "manifestworks",
            None,
            Some("c3"),
            None
        )
        .await
    );
}

#[tokio::test]
async fn denying_keeps_the_work_binding_until_manifestworks_are_gone() {
    let hub = Hub::start(HubOptions::default()).await;
    hub.create_cluster("c4", true).await;
    let clusters: Api<ManagedCluster> = Api::all(hub.admin.clone());
    wait_for(&clusters, "c4", "c4 accepted", accepted).await;
    let works: Api<ManifestWork> = Api::namespaced(hub.admin.clone(), "c4");
    works
        .create(&PostParams::default(), &work("w1", "c4", &[], &[]))
        .await
        .unwrap();

    set_accepts(&hub, "c4", false).await;
    let rbs: Api<RoleBinding> = Api::namespaced(hub.admin.clone(), "c4");
    let rb = wait_for(
        &rbs,
        "open-cluster-management:managedcluster:c4:work",
        "work rb terminating",
        |rb| rb.metadata.deletion_timestamp.is_some(),
    )
    .await;
    assert_eq!(
        rb.finalizers(),
        &["cluster.open-cluster-management.io/manifest-work-cleanup".to_owned()]
    );
    wait_gone(
        &rbs,
        "open-cluster-management:managedcluster:c4:registration",
        "registration rb",
    )
    .await;
    // While the work remains, the binding keeps its finalizer and the cluster is not yet
    // reported denied (upstream requeues before writing the condition).
    assert!(!denied(&clusters.get("c4").await.unwrap()));

    works.delete("w1", &DeleteParams::default()).await.unwrap();
    wait_gone(
        &rbs,
        "open-cluster-management:managedcluster:c4:work",
        "work rb",
    )
    .await;
    wait_for(&clusters, "c4", "c4 denied", denied).await;
}

#[tokio::test]
async fn deleting_a_cluster_cleans_its_namespace_then_releases_it() {
    let hub = Hub::start(HubOptions::default()).await;
    hub.create_cluster("c5", true).await;
    let clusters: Api<ManagedCluster> = Api::all(hub.admin.clone());
    wait_for(&clusters, "c5", "c5 accepted", |c| {
        accepted(c) && c.finalizers().len() == 2
    })
    .await;
    let works: Api<ManifestWork> = Api::namespaced(hub.admin.clone(), "c5");
    // `held` carries a finalizer nobody removes but the test: cleanup must wait for it.
    works
        .create(
            &PostParams::default(),
            &work("held", "c5", &[], &["test.example.com/hold"]),
        )
        .await
        .unwrap();
    works
        .create(
            &PostParams::default(),
            &work(
                "late",
                "c5",
                &[("open-cluster-management.io/cleanup-priority", "50")],
                &[],
            ),
        )
        .await
        .unwrap();

    clusters
        .delete("c5", &DeleteParams::default())
        .await
        .unwrap();
    let c5 = wait_for(&clusters, "c5", "Deleting=False/ResourceRemaining", |c| {
        cluster_condition(c, "Deleting")
            .is_some_and(|(s, r, _)| s == "False" && r == "ResourceRemaining")
    })
    .await;
    assert!(c5.metadata.deletion_timestamp.is_some());
    // `held` (priority 0) is being deleted; `late` (priority 50) waits for it.
    wait_for(&works, "held", "held terminating", |w| {
        w.metadata.deletion_timestamp.is_some()
    })
    .await;
    assert!(
        works
            .get("late")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_none()
    );
    // RBAC is kept while works remain.
    Api::<ClusterRole>::all(hub.admin.clone())
        .get("open-cluster-management:managedcluster:c5")
        .await
        .unwrap();

    works
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    wait_gone(&works, "late", "late work").await;
    wait_gone(&clusters, "c5", "cluster c5").await;

    for name in ["open-cluster-management:managedcluster:c5"] {
        assert!(
            Api::<ClusterRole>::all(hub.admin.clone())
                .get_opt(name)
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            Api::<ClusterRoleBinding>::all(hub.admin.clone())
                .get_opt(name)
                .await
                .unwrap()
                .is_none()
        );
    }
    let rbs: Api<RoleBinding> = Api::namespaced(hub.admin.clone(), "c5");
    assert!(
        rbs.list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    // The namespace is kept, like upstream.
    Api::<Namespace>::all(hub.admin.clone())
        .get("c5")
        .await
        .unwrap();
}

#[tokio::test]
async fn deleting_a_never_accepted_cluster_releases_it() {
    let hub = Hub::start(HubOptions::default()).await;
    hub.create_cluster("c6", false).await;
    let clusters: Api<ManagedCluster> = Api::all(hub.admin.clone());
    wait_for(&clusters, "c6", "c6 finalizer", |c| {
        !c.finalizers().is_empty()
    })
    .await;
    clusters
        .delete("c6", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&clusters, "c6", "cluster c6").await;
}

#[tokio::test]
async fn rbac_of_a_cluster_deleted_without_cleanup_is_swept() {
    let hub = Hub::start(HubOptions::default()).await;
    hub.create_cluster("c7", true).await;
    let clusters: Api<ManagedCluster> = Api::all(hub.admin.clone());
    wait_for(&clusters, "c7", "c7 accepted", |c| {
        accepted(c) && c.finalizers().len() == 2
    })
    .await;
    // Someone strips the finalizers and deletes the cluster: no cleanup pass runs.
    clusters
        .patch(
            "c7",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    clusters
        .delete("c7", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&clusters, "c7", "cluster c7").await;

    let roles: Api<ClusterRole> = Api::all(hub.admin.clone());
    let name = "open-cluster-management:managedcluster:c7";
    wait_gone(&roles, name, "c7 cluster role").await;
    wait_gone(
        &Api::<ClusterRoleBinding>::all(hub.admin.clone()),
        name,
        "c7 binding",
    )
    .await;
    let rbs: Api<RoleBinding> = Api::namespaced(hub.admin.clone(), "c7");
    wait_gone(
        &rbs,
        "open-cluster-management:managedcluster:c7:registration",
        "registration rb",
    )
    .await;
    wait_gone(
        &rbs,
        "open-cluster-management:managedcluster:c7:work",
        "work rb",
    )
    .await;
    // No cluster is left: the common roles go too.
    wait_gone(&roles, rbac::REGISTRATION_CLUSTER_ROLE, "registration role").await;
    wait_gone(&roles, rbac::WORK_CLUSTER_ROLE, "work role").await;
}

#[tokio::test]
async fn deleting_a_cluster_removes_addons_before_manifestworks() {
    use ocm_api::addon::v1beta1::{ManagedClusterAddOn, ManagedClusterAddOnSpec};

    let hub = Hub::start(HubOptions::default()).await;
    hub.create_cluster("c8", true).await;
    let clusters: Api<ManagedCluster> = Api::all(hub.admin.clone());
    wait_for(&clusters, "c8", "c8 accepted", |c| {
        accepted(c) && c.finalizers().len() == 2
    })
    .await;
    let addons: Api<ManagedClusterAddOn> = Api::namespaced(hub.admin.clone(), "c8");
    let mut addon = ManagedClusterAddOn::new("my-addon", ManagedClusterAddOnSpec::default());
    addon.metadata.finalizers = Some(vec!["test.example.com/hold".to_owned()]);
    addons.create(&PostParams::default(), &addon).await.unwrap();
    let works: Api<ManifestWork> = Api::namespaced(hub.admin.clone(), "c8");
    works
        .create(&PostParams::default(), &work("w", "c8", &[], &[]))
        .await
        .unwrap();

    clusters
        .delete("c8", &DeleteParams::default())
        .await
        .unwrap();
    let c8 = wait_for(&clusters, "c8", "addons remaining", |c| {
        cluster_condition(c, "Deleting").is_some_and(|(s, r, m)| {
            s == "False" && r == "ResourceRemaining" && m.contains("managedclusteraddons")
        })
    })
    .await;
    assert!(c8.metadata.deletion_timestamp.is_some());
    wait_for(&addons, "my-addon", "addon terminating", |a| {
        a.metadata.deletion_timestamp.is_some()
    })
    .await;
    // ManifestWorks wait for the addons.
    assert!(
        works
            .get("w")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_none()
    );

    addons
        .patch(
            "my-addon",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    wait_gone(&works, "w", "work w").await;
    wait_gone(&clusters, "c8", "cluster c8").await;
}
