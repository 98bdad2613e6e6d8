//! The Klusterlet operator end to end, with real processes: `ocm operator klusterlet` on a
//! simulated managed cluster (its own TLS API server) installs the agents a Klusterlet asks
//! for; the agents run as `ocm-agent` processes with the Deployments' own arguments and their
//! service accounts' tokens, started by the process kubelet (`ocm::process_kubelet`) as a
//! kubelet would start their pods — so the RBAC the operator renders is what they work with.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use ocm::simulated::SimulatedCluster;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::operator::v1::Klusterlet;
use ocm_api::work::v1::{AppliedManifestWork, ManifestWork};
use ocm_e2e::operator::{
    AGENT_NS, OperatedCluster, UPGRADED, accept_and_wait_available,
    accept_and_wait_available_within, condition_of, create_klusterlet, shorten_lease,
    wait_available_unknown, wait_deployment_available, write_agent_secret, write_bootstrap_secret,
};
use ocm_e2e::process::{HubProcess, ManagedApiserver};
use ocm_e2e::{wait_for, wait_for_within, wait_gone};
use serde_json::json;

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");

/// The executables (file names) of the processes running the `ocm agent` command for the pods
/// of the process kubelet whose folder is under `home` (their `KUBECONFIG` is there).
fn agent_executables(home: &Path) -> Vec<String> {
    let home = home.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let proc_dir = entry.path();
        let (Ok(environ), Ok(cmdline)) = (
            std::fs::read(proc_dir.join("environ")),
            std::fs::read(proc_dir.join("cmdline")),
        ) else {
            continue;
        };
        let ours = environ.split(|b| *b == 0).any(|var| {
            String::from_utf8_lossy(var)
                .strip_prefix("KUBECONFIG=")
                .is_some_and(|path| path.starts_with(&home))
        });
        let runs_agent = cmdline.split(|b| *b == 0).nth(1) == Some(b"agent".as_slice());
        if let (true, true, Ok(exe)) = (ours, runs_agent, std::fs::read_link(proc_dir.join("exe")))
        {
            found.push(
                exe.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
        }
    }
    found
}

/// The condition `type_` of a Klusterlet as `(status, reason)`.
fn condition(k: &Klusterlet, type_: &str) -> (String, String) {
    condition_of(k.status.as_ref().map(|s| &s.conditions), type_)
}

/// Waits until Klusterlet `klusterlet` has condition `type_` with `status` and `reason`.
async fn wait_condition(api: &Api<Klusterlet>, type_: &str, status: &str, reason: &str) {
    wait_for(
        api,
        "klusterlet",
        &format!("{type_} {status} {reason}"),
        |k| condition(k, type_) == (status.to_owned(), reason.to_owned()),
    )
    .await
    .unwrap();
}

/// Waits until agent Deployment `name` has its replica running.
async fn wait_running(spoke: &SimulatedCluster, name: &str) {
    wait_deployment_available(&spoke.client(), AGENT_NS, name, 1)
        .await
        .unwrap();
}

/// A bootstrap kubeconfig naming a hub nobody answers at: a port that was free a moment ago.
fn unreachable_bootstrap_kubeconfig() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let some_ca = rcgen::generate_simple_self_signed(vec!["hub".to_owned()])
        .unwrap()
        .cert
        .pem();
    ocm::commands::join::bootstrap_kubeconfig(
        &format!("https://127.0.0.1:{port}"),
        &some_ca,
        "abcdef.0123456789abcdef",
    )
}

/// The container args of Deployment `namespace/name`.
async fn deployment_args(client: &kube::Client, namespace: &str, name: &str) -> Vec<String> {
    let deployment = Api::<Deployment>::namespaced(client.clone(), namespace)
        .get(name)
        .await
        .unwrap();
    deployment.spec.unwrap().template.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap_or_default()
}

/// A hub, its bootstrap kubeconfig, and a simulated managed cluster with the klusterlet
/// operator on it.
async fn setup(
    home: &Path,
    cluster: &str,
) -> (ocm::embedded::EmbeddedHub, String, OperatedCluster) {
    let hub = ocm_e2e::start_fast_hub(&home.join("hub")).await.unwrap();
    let bootstrap = ocm_e2e::bootstrap_kubeconfig(&hub).await.unwrap();
    let cluster = OperatedCluster::start(OCM, home, cluster).await.unwrap();
    (hub, bootstrap, cluster)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_klusterlet_installs_agents_that_join_and_its_deletion_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (hub, bootstrap, operated) = setup(home, "c1").await;
    let spoke = &operated.spoke;
    let klusterlets: Api<Klusterlet> = Api::all(spoke.client());

    // Bad input: the cluster name names a namespace on the hub.
    let refused = create_klusterlet(
        &spoke.client(),
        "klusterlet",
        json!({"clusterName": "Not_A_Label"}),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&refused, kube::Error::Api(s) if s.code == 422),
        "{refused}"
    );

    // Without a bootstrap secret: installed, and the condition says what is missing. The
    // eviction grace reaches the work agent (which then runs and applies works with it).
    create_klusterlet(
        &spoke.client(),
        "klusterlet",
        json!({"clusterName": "c1",
               "workConfiguration": {"appliedManifestWorkEvictionGracePeriod": "90m"}}),
    )
    .await
    .unwrap();
    wait_condition(
        &klusterlets,
        "HubConnectionDegraded",
        "True",
        "BootstrapSecretMissing,HubKubeConfigSecretMissing",
    )
    .await;
    wait_condition(&klusterlets, "Applied", "True", "KlusterletApplied").await;
    let deployments: Api<Deployment> = Api::namespaced(spoke.client(), AGENT_NS);
    let work = deployments.get("klusterlet-work-agent").await.unwrap();
    let spec = work.spec.unwrap();
    assert_eq!(spec.replicas, Some(0), "no hub credentials yet");
    let args = spec.template.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap_or_default();
    assert!(
        args.contains(&"--appliedmanifestwork-eviction-grace-period=90m".to_owned()),
        "{args:?}"
    );
    wait_condition(
        &klusterlets,
        "WorkDesiredDegraded",
        "True",
        "HubKubeConfigMissing",
    )
    .await;

    // The bootstrap secret arrives: it works, the hub kubeconfig is still to come.
    write_bootstrap_secret(&spoke.client(), &bootstrap)
        .await
        .unwrap();
    wait_condition(
        &klusterlets,
        "HubConnectionDegraded",
        "True",
        "BootstrapSecretFunctional,HubKubeConfigSecretMissing",
    )
    .await;

    // The registration agent's pod runs; the hub admin accepts the cluster.
    wait_running(spoke, "klusterlet-registration-agent").await;
    let accepted = tokio::time::timeout(
        ocm_e2e::WAIT,
        ocm::accept::accept_when_asked(&hub.admin_client(), "c1", false),
    )
    .await
    .expect("cluster asks to join")
    .unwrap();
    assert!(accepted.accepted_now);
    wait_condition(
        &klusterlets,
        "HubConnectionDegraded",
        "False",
        "HubConnectionFunctional",
    )
    .await;

    // With hub credentials the work agent gets its replica.
    wait_running(spoke, "klusterlet-work-agent").await;
    let clusters: Api<ManagedCluster> = Api::all(hub.admin_client());
    wait_for(
        &clusters,
        "c1",
        "Joined and Available",
        ocm_e2e::joined_and_available,
    )
    .await
    .unwrap();
    wait_condition(&klusterlets, "Available", "True", "KlusterletAvailable").await;
    wait_condition(
        &klusterlets,
        "WorkDesiredDegraded",
        "False",
        "DeploymentsFunctional",
    )
    .await;

    // A ManifestWork with a namespace and a ConfigMap in it is applied by the work agent.
    let work: ManifestWork = serde_json::from_value(json!({
        "metadata": {"name": "hello", "namespace": "c1"},
        "spec": {"workload": {"manifests": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "hello"}},
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "hello", "namespace": "hello"}, "data": {"from": "hub"}}]}}}))
    .unwrap();
    Api::<ManifestWork>::namespaced(hub.admin_client(), "c1")
        .create(&PostParams::default(), &work)
        .await
        .unwrap();
    let configmaps: Api<ConfigMap> = Api::namespaced(spoke.client(), "hello");
    wait_for(&configmaps, "hello", "applied by the work agent", |_| true)
        .await
        .unwrap();

    // Status carries the Deployments' generations and what was installed.
    let k = klusterlets.get("klusterlet").await.unwrap();
    let status = k.status.unwrap();
    assert_eq!(status.observed_generation, k.metadata.generation);
    assert_eq!(status.generations.len(), 2);
    assert!(
        status
            .related_resources
            .iter()
            .any(|r| r.resource == "customresourcedefinitions")
    );

    // Upgrade: a new image rolls both agents; the cluster stays joined and the work applied.
    klusterlets
        .patch(
            "klusterlet",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"registrationImagePullSpec": UPGRADED,
                                          "workImagePullSpec": UPGRADED}})),
        )
        .await
        .unwrap();
    for name in ["klusterlet-registration-agent", "klusterlet-work-agent"] {
        wait_for(&deployments, name, "rolled to the new image", |d| {
            let spec = d.spec.as_ref().unwrap();
            spec.template.spec.as_ref().unwrap().containers[0]
                .image
                .as_deref()
                == Some(UPGRADED)
                && d.status.as_ref().is_some_and(|s| {
                    s.observed_generation == d.metadata.generation
                        && s.available_replicas == Some(1)
                })
        })
        .await
        .unwrap();
    }
    wait_condition(&klusterlets, "Available", "True", "KlusterletAvailable").await;
    let cluster = clusters.get("c1").await.unwrap();
    assert!(ocm_e2e::joined_and_available(&cluster));
    configmaps.get("hello").await.unwrap();
    // The new agents work: a change to the work reaches the cluster.
    Api::<ManifestWork>::namespaced(hub.admin_client(), "c1")
        .patch(
            "hello",
            &PatchParams::default(),
            &Patch::Json::<()>(serde_json::from_value(json!([
                {"op": "replace", "path": "/spec/workload/manifests/1/data/from", "value": "upgraded"}
            ])).unwrap()),
        )
        .await
        .unwrap();
    wait_for(
        &configmaps,
        "hello",
        "updated by the upgraded work agent",
        |c| {
            c.data
                .as_ref()
                .and_then(|d| d.get("from"))
                .map(String::as_str)
                == Some("upgraded")
        },
    )
    .await
    .unwrap();

    // The cluster's lease is short, so that losing its agent shows within seconds.
    shorten_lease(&hub.admin_client(), "c1").await.unwrap();

    // Deleting the Klusterlet removes the agents, what the works applied and the agent
    // namespaces; the cluster goes Unknown on the hub once its agents are gone.
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(spoke.client(), AGENT_NS);
    let agent_pods: Vec<String> = pods
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    assert_eq!(agent_pods.len(), 2, "{agent_pods:?}");
    klusterlets
        .delete("klusterlet", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&klusterlets, "klusterlet").await.unwrap();
    for name in ["klusterlet-registration-agent", "klusterlet-work-agent"] {
        assert!(
            deployments.get_opt(name).await.unwrap().is_none(),
            "{name} left"
        );
    }
    // The kubelet stopped the pods of the deleted Deployments.
    for pod in &agent_pods {
        wait_gone(&pods, pod).await.unwrap();
    }
    let applied: Api<AppliedManifestWork> = Api::all(spoke.client());
    assert!(
        applied
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    wait_gone(&configmaps, "hello").await.unwrap();
    let namespaces: Api<Namespace> = Api::all(spoke.client());
    wait_gone(&namespaces, AGENT_NS).await.unwrap();
    wait_gone(&namespaces, "open-cluster-management-agent-addon")
        .await
        .unwrap();
    for role in [
        "open-cluster-management:klusterlet-registration:agent",
        "open-cluster-management:klusterlet-work:agent",
        "open-cluster-management:klusterlet-work:execution",
    ] {
        let roles: Api<k8s_openapi::api::rbac::v1::ClusterRole> = Api::all(spoke.client());
        assert!(roles.get_opt(role).await.unwrap().is_none(), "{role} left");
    }
    wait_available_unknown(&hub.admin_client(), "c1")
        .await
        .unwrap();
    operated.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_singleton_klusterlet_joins_with_one_agent() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (hub, bootstrap, operated) = setup(home, "c2").await;
    let spoke = &operated.spoke;
    // As `ocm join` would: the bootstrap secret first, then the Klusterlet, back to back.
    write_bootstrap_secret(&spoke.client(), &bootstrap)
        .await
        .unwrap();
    create_klusterlet(
        &spoke.client(),
        "klusterlet",
        json!({"clusterName": "c2", "deployOption": {"mode": "Singleton"},
               "workConfiguration": {"appliedManifestWorkEvictionGracePeriod": "2h"}}),
    )
    .await
    .unwrap();
    wait_running(spoke, "klusterlet-agent").await;
    accept_and_wait_available(&hub.admin_client(), "c2")
        .await
        .unwrap();
    // The agent container's command is the image's `ocm-agent`, and that is what runs (the
    // tests' `ocm-agent` is `ocm-e2e-agent`), not `ocm`.
    assert_eq!(agent_executables(home), ["ocm-e2e-agent"]);
    let klusterlets: Api<Klusterlet> = Api::all(spoke.client());
    wait_condition(
        &klusterlets,
        "HubConnectionDegraded",
        "False",
        "HubConnectionFunctional",
    )
    .await;
    wait_condition(&klusterlets, "Available", "True", "KlusterletAvailable").await;
    let deployments: Api<Deployment> = Api::namespaced(spoke.client(), AGENT_NS);
    assert!(
        deployments
            .get_opt("klusterlet-registration-agent")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        deployments
            .get_opt("klusterlet-work-agent")
            .await
            .unwrap()
            .is_none()
    );

    // Switching to Default mode replaces the one agent by two; nothing of the old mode stays.
    klusterlets
        .patch(
            "klusterlet",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"deployOption": {"mode": "Default"}}})),
        )
        .await
        .unwrap();
    wait_running(spoke, "klusterlet-registration-agent").await;
    wait_running(spoke, "klusterlet-work-agent").await;
    wait_gone(&deployments, "klusterlet-agent").await.unwrap();
    wait_condition(&klusterlets, "Available", "True", "KlusterletAvailable").await;
    let clusters: Api<ManagedCluster> = Api::all(hub.admin_client());
    assert!(ocm_e2e::joined_and_available(
        &clusters.get("c2").await.unwrap()
    ));

    // Renaming the cluster (upstream documents no immutability and has no condition for it):
    // the agents restart with the new name, the credentials of the old name no longer count,
    // and the agent asks to join again as the new cluster — double opt-in once more.
    klusterlets
        .patch(
            "klusterlet",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"clusterName": "c2-renamed"}})),
        )
        .await
        .unwrap();
    accept_and_wait_available(&hub.admin_client(), "c2-renamed")
        .await
        .unwrap();
    wait_for(&klusterlets, "klusterlet", "connected as c2-renamed", |k| {
        condition(k, "HubConnectionDegraded") == ("False".into(), "HubConnectionFunctional".into())
            && k.metadata.generation == k.status.as_ref().and_then(|s| s.observed_generation)
    })
    .await
    .unwrap();
    let secret = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(spoke.client(), AGENT_NS)
        .get("hub-kubeconfig-secret")
        .await
        .unwrap();
    assert_eq!(
        secret.data.unwrap()["cluster-name"].0,
        b"c2-renamed",
        "the hub kubeconfig secret now belongs to the new name"
    );

    // A Hosted Klusterlet without its external kubeconfig installs nothing and says why.
    let hosted: Api<Klusterlet> = Api::all(spoke.client());
    let k: Klusterlet = serde_json::from_value(json!({
        "apiVersion": "operator.open-cluster-management.io/v1", "kind": "Klusterlet",
        "metadata": {"name": "hosted"},
        "spec": {"clusterName": "c3", "deployOption": {"mode": "Hosted"}}}))
    .unwrap();
    hosted.create(&PostParams::default(), &k).await.unwrap();
    wait_for(&hosted, "hosted", "ReadyToApply False", |k| {
        condition(k, "ReadyToApply") == ("False".into(), "KlusterletPrepareFailed".into())
    })
    .await
    .unwrap();
    assert!(
        Api::<Deployment>::namespaced(spoke.client(), "hosted")
            .get_opt("hosted-registration-agent")
            .await
            .unwrap()
            .is_none()
    );
    // It never applied on a managed cluster: only the cleanup finalizer, and deleting it
    // takes its agent namespace with it at once (nothing waits for an eviction timeout).
    let finalizers = hosted.get("hosted").await.unwrap().metadata.finalizers;
    assert_eq!(
        finalizers,
        Some(vec![
            "operator.open-cluster-management.io/klusterlet-cleanup".to_owned()
        ])
    );
    hosted
        .delete("hosted", &DeleteParams::default())
        .await
        .unwrap();
    ocm_e2e::wait_gone(&hosted, "hosted").await.unwrap();
    ocm_e2e::wait_gone(&Api::<Namespace>::all(spoke.client()), "hosted")
        .await
        .unwrap();
    operated.stop().await;
}

/// A bootstrap kubeconfig naming a hub nobody answers at: the Klusterlet says so in
/// `HubConnectionDegraded` (upstream's reason for a bootstrap kubeconfig that does not work
/// against the hub), with the connection error in the message; the agents still install. The
/// mark an earlier ocm-rs operator kept on such a Klusterlet is removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_hub_shows_in_hub_connection_degraded() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let operated = OperatedCluster::start(OCM, home, "c3").await.unwrap();
    let spoke = &operated.spoke;
    let bootstrap = unreachable_bootstrap_kubeconfig();
    write_bootstrap_secret(&spoke.client(), &bootstrap)
        .await
        .unwrap();
    create_klusterlet(&spoke.client(), "klusterlet", json!({"clusterName": "c3"}))
        .await
        .unwrap();
    let klusterlets: Api<Klusterlet> = Api::all(spoke.client());
    let k = wait_for(&klusterlets, "klusterlet", "hub connection judged", |k| {
        condition(k, "HubConnectionDegraded").1
            == "BootstrapSecretUnauthorized,HubKubeConfigSecretMissing"
    })
    .await
    .unwrap();
    let message = k
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == "HubConnectionDegraded")
        .unwrap()
        .message;
    assert!(message.contains("unreachable"), "{message}");
    wait_condition(&klusterlets, "Applied", "True", "KlusterletApplied").await;
    // The mark an earlier operator kept on such a Klusterlet is removed; others stay.
    let retired = "operator.open-cluster-management.io/hub-connection-lost-since";
    klusterlets
        .patch(
            "klusterlet",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"annotations": {
                retired: "2026-11-28T10:00:00Z", "example.com/kept": "yes"}}})),
        )
        .await
        .unwrap();
    let k = wait_for(
        &klusterlets,
        "klusterlet",
        "the retired mark removed",
        |k| {
            k.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| !a.contains_key(retired))
        },
    )
    .await
    .unwrap();
    assert_eq!(k.metadata.annotations.unwrap()["example.com/kept"], "yes");
    operated.stop().await;
}

/// A Hosted Klusterlet: its agents run on the management cluster (in the namespace named
/// after the Klusterlet, with their secrets — here two listed bootstrap kubeconfigs, of
/// which the agent chooses the one whose hub answers), reach the managed cluster through the
/// external kubeconfig, join, apply a work there; deleting it cleans both clusters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosted_klusterlet_runs_its_agents_on_the_management_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (hub, bootstrap, management) = setup(home, "management").await;
    let managed = SimulatedCluster::start(&home.join("c4"), ([127, 0, 0, 1], 0).into())
        .await
        .unwrap();
    let mgmt = management.spoke.client();
    let namespace =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "klusterlet"}});
    Api::<Namespace>::all(mgmt.clone())
        .patch(
            "klusterlet",
            &PatchParams::apply("e2e"),
            &Patch::Apply(&namespace),
        )
        .await
        .unwrap();
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(mgmt.clone(), "klusterlet");
    let secret = |name: &str, kubeconfig: &str| -> k8s_openapi::api::core::v1::Secret {
        serde_json::from_value(json!({"metadata": {"name": name},
                                      "stringData": {"kubeconfig": kubeconfig}}))
        .unwrap()
    };
    // Two hubs to choose from, listed in the agent namespace on the management cluster: the
    // first answers nowhere.
    for (name, kubeconfig) in [
        ("hub-a", unreachable_bootstrap_kubeconfig()),
        ("hub-b", bootstrap.clone()),
    ] {
        secrets
            .create(&PostParams::default(), &secret(name, &kubeconfig))
            .await
            .unwrap();
    }
    create_klusterlet(
        &mgmt,
        "klusterlet",
        json!({"clusterName": "c4", "deployOption": {"mode": "Hosted",
            "reportHostingCluster": "Enable", "hosted": {"managementClusterName": "management"}},
            "registrationConfiguration": {"bootstrapKubeConfigs": {"type": "LocalSecrets",
                "localSecretsConfig": {"kubeConfigSecrets": [{"name": "hub-a"}, {"name": "hub-b"}]}}}}),
    )
    .await
    .unwrap();
    let klusterlets: Api<Klusterlet> = Api::all(mgmt.clone());
    // No way to the managed cluster yet.
    wait_condition(
        &klusterlets,
        "ReadyToApply",
        "False",
        "KlusterletPrepareFailed",
    )
    .await;
    let managed_kubeconfig = std::fs::read_to_string(&managed.kubeconfig).unwrap();
    secrets
        .create(
            &PostParams::default(),
            &secret("external-managed-kubeconfig", &managed_kubeconfig),
        )
        .await
        .unwrap();
    wait_condition(&klusterlets, "ReadyToApply", "True", "KlusterletPrepared").await;
    wait_deployment_available(&mgmt, "klusterlet", "klusterlet-registration-agent", 1)
        .await
        .unwrap();
    accept_and_wait_available(&hub.admin_client(), "c4")
        .await
        .unwrap();
    wait_condition(&klusterlets, "Available", "True", "KlusterletAvailable").await;
    // The agent got the list (and the default timeout) and chose the hub that answers, in
    // its namespace on the management cluster.
    let args = deployment_args(&mgmt, "klusterlet", "klusterlet-registration-agent").await;
    for flag in [
        "--agent-namespace=klusterlet",
        "--bootstrap-kubeconfig-secrets=hub-a,hub-b",
        "--hub-connection-timeout-seconds=600",
    ] {
        assert!(args.contains(&flag.to_owned()), "{args:?}");
    }
    let chosen = secrets.get("bootstrap-hub-kubeconfig").await.unwrap();
    assert_eq!(
        String::from_utf8(chosen.data.unwrap()["kubeconfig"].0.clone()).unwrap(),
        bootstrap
    );
    // It reports where its agents run (the hub checks hosted addons against it).
    let clusters: Api<ocm_api::cluster::v1::ManagedCluster> = Api::all(hub.admin_client());
    wait_for(&clusters, "c4", "the hosting-cluster claim", |c| {
        c.status.as_ref().is_some_and(|s| {
            s.cluster_claims.iter().any(|claim| {
                claim.name == "hosting-cluster.open-cluster-management.io"
                    && claim.value == "management"
            })
        })
    })
    .await
    .unwrap();
    // The hub credentials stay on the management cluster; the managed cluster runs no agent.
    secrets.get("hub-kubeconfig-secret").await.unwrap();
    let on_managed: Api<Deployment> = Api::all(managed.client());
    assert!(
        on_managed
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    // Addons still run on the managed cluster: the addon namespace is made there.
    let managed_namespaces: Api<Namespace> = Api::all(managed.client());
    managed_namespaces
        .get("open-cluster-management-agent-addon")
        .await
        .unwrap();
    assert!(
        Api::<Namespace>::all(mgmt.clone())
            .get_opt("open-cluster-management-agent-addon")
            .await
            .unwrap()
            .is_none()
    );
    // So is `spec.namespace` (as upstream, in every mode); a new one replaces it there.
    let own = |ns: &Namespace| {
        ns.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("operator.open-cluster-management.io/klusterlet"))
            == Some(&"klusterlet".to_owned())
    };
    wait_for(
        &managed_namespaces,
        "open-cluster-management-agent",
        "the Klusterlet's namespace",
        own,
    )
    .await
    .unwrap();
    klusterlets
        .patch(
            "klusterlet",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"namespace": "open-cluster-management-agent-another"}})),
        )
        .await
        .unwrap();
    wait_for(
        &managed_namespaces,
        "open-cluster-management-agent-another",
        "the new namespace",
        own,
    )
    .await
    .unwrap();
    wait_gone(&managed_namespaces, "open-cluster-management-agent")
        .await
        .unwrap();
    // The agents and their hub credentials stay where they are.
    secrets.get("hub-kubeconfig-secret").await.unwrap();
    wait_condition(&klusterlets, "Available", "True", "KlusterletAvailable").await;

    create_configmap_work(&hub.admin_client(), "c4", "hello", "hub").await;
    let configmaps: Api<ConfigMap> = Api::namespaced(managed.client(), "default");
    wait_for(
        &configmaps,
        "hello",
        "applied on the managed cluster",
        |_| true,
    )
    .await
    .unwrap();

    shorten_lease(&hub.admin_client(), "c4").await.unwrap();
    klusterlets
        .delete("klusterlet", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&klusterlets, "klusterlet").await.unwrap();
    let applied: Api<AppliedManifestWork> = Api::all(managed.client());
    assert!(
        applied
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    wait_gone(&configmaps, "hello").await.unwrap();
    wait_gone(&Api::<Namespace>::all(mgmt.clone()), "klusterlet")
        .await
        .unwrap();
    wait_gone(&managed_namespaces, "open-cluster-management-agent-addon")
        .await
        .unwrap();
    wait_gone(&managed_namespaces, "open-cluster-management-agent-another")
        .await
        .unwrap();
    wait_available_unknown(&hub.admin_client(), "c4")
        .await
        .unwrap();
    managed.stop().await;
    management.stop().await;
}

/// Creates Klusterlet `klusterlet` for `cluster` listing bootstrap kubeconfig secrets `hub-a`
/// and `hub-b` (LocalSecrets), with the least connection timeout the API takes (180 s).
async fn create_listing_klusterlet(spoke: &kube::Client, cluster: &str) {
    create_klusterlet(
        spoke,
        "klusterlet",
        json!({"clusterName": cluster, "registrationConfiguration": {"bootstrapKubeConfigs": {
            "type": "LocalSecrets",
            "localSecretsConfig": {"kubeConfigSecrets": [{"name": "hub-a"}, {"name": "hub-b"}],
                                   "hubConnectionTimeoutSeconds": 180}}}}),
    )
    .await
    .unwrap();
}

/// `bootstrapKubeConfigs` LocalSecrets: of two listed bootstrap kubeconfigs, the first names
/// a hub nobody answers at. The operator hands the list and the timeout to the registration
/// agent (its Deployment's args); while the second is missing the Klusterlet names both in
/// `HubConnectionDegraded`; once it is there the agent chooses it, copies it into the
/// bootstrap secret, and the cluster joins its hub.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_secrets_the_agent_joins_the_first_hub_that_answers() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (hub, bootstrap, operated) = setup(home, "c5").await;
    let spoke = &operated.spoke;
    let unreachable = unreachable_bootstrap_kubeconfig();
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(spoke.client(), AGENT_NS);
    write_agent_secret(&spoke.client(), "hub-a", &unreachable)
        .await
        .unwrap();
    create_listing_klusterlet(&spoke.client(), "c5").await;
    // The registration agent gets the list and the timeout; the work agent does not.
    let deployments: Api<Deployment> = Api::namespaced(spoke.client(), AGENT_NS);
    wait_for(
        &deployments,
        "klusterlet-work-agent",
        "the agents' Deployments",
        |_| true,
    )
    .await
    .unwrap();
    let registration =
        deployment_args(&spoke.client(), AGENT_NS, "klusterlet-registration-agent").await;
    for flag in [
        "--bootstrap-kubeconfig-secrets=hub-a,hub-b",
        "--hub-connection-timeout-seconds=180",
        "--agent-namespace=open-cluster-management-agent",
    ] {
        assert!(registration.contains(&flag.to_owned()), "{registration:?}");
    }
    let work = deployment_args(&spoke.client(), AGENT_NS, "klusterlet-work-agent").await;
    assert!(
        !work
            .iter()
            .any(|a| a.starts_with("--bootstrap-kubeconfig-secrets")),
        "{work:?}"
    );
    let klusterlets: Api<Klusterlet> = Api::all(spoke.client());
    // The API's least hubConnectionTimeoutSeconds is 180.
    let short = json!({"spec": {"registrationConfiguration": {"bootstrapKubeConfigs": {
        "type": "LocalSecrets",
        "localSecretsConfig": {"kubeConfigSecrets": [{"name": "hub-a"}, {"name": "hub-b"}],
                               "hubConnectionTimeoutSeconds": 60}}}}});
    match klusterlets
        .patch("klusterlet", &PatchParams::default(), &Patch::Merge(&short))
        .await
    {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 422, "{status:?}");
            assert!(
                status.message.contains("hubConnectionTimeoutSeconds"),
                "{status:?}"
            );
        }
        other => panic!("a 60 s timeout was not refused: {other:?}"),
    }
    // None works yet: the condition names each listed secret, and nothing is copied.
    let degraded = wait_for(&klusterlets, "klusterlet", "no listed secret works", |k| {
        k.status.as_ref().is_some_and(|s| {
            s.conditions.iter().any(|c| {
                c.type_ == "HubConnectionDegraded"
                    && c.message.contains("no secret of bootstrapKubeConfigs")
            })
        })
    })
    .await
    .unwrap();
    let message = &degraded
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == "HubConnectionDegraded")
        .unwrap()
        .message;
    assert!(
        message.contains("secret hub-a: ") && message.contains("secret hub-b: not found"),
        "{message}"
    );
    assert!(
        secrets
            .get_opt("bootstrap-hub-kubeconfig")
            .await
            .unwrap()
            .is_none()
    );
    write_agent_secret(&spoke.client(), "hub-b", &bootstrap)
        .await
        .unwrap();
    accept_and_wait_available(&hub.admin_client(), "c5")
        .await
        .unwrap();
    // The agent copied the second one; the operator wrote no bootstrap secret of its own.
    let chosen = secrets.get("bootstrap-hub-kubeconfig").await.unwrap();
    let writers: Vec<String> = chosen
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|f| f.manager.clone())
        .collect();
    assert!(
        !writers.iter().any(|m| m == "klusterlet-operator"),
        "{writers:?}"
    );
    let chosen = String::from_utf8(chosen.data.unwrap()["kubeconfig"].0.clone()).unwrap();
    assert_eq!(chosen, bootstrap);
    wait_condition(
        &klusterlets,
        "HubConnectionDegraded",
        "False",
        "HubConnectionFunctional",
    )
    .await;
    operated.stop().await;
}

/// How long the agent may take to leave a lost hub: the least `hubConnectionTimeoutSeconds`
/// (180), the agent's check period at that timeout (30 s), and registering with the next hub.
const LOST_HUB_WAIT: Duration = Duration::from_secs(180 + 30 + 60);

/// Creates ManifestWork `name` in `cluster`'s namespace on `hub`: ConfigMap `name` in
/// `default`, its data saying `from`.
async fn create_configmap_work(hub: &kube::Client, cluster: &str, name: &str, from: &str) {
    let work: ManifestWork = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": cluster},
        "spec": {"workload": {"manifests": [
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": name, "namespace": "default"}, "data": {"from": from}}]}}}))
    .unwrap();
    Api::<ManifestWork>::namespaced(hub.clone(), cluster)
        .create(&PostParams::default(), &work)
        .await
        .unwrap();
}

/// `bootstrapKubeConfigs` LocalSecrets, the hub lost for good (upstream's `MultipleHubs`):
/// the cluster joins hub A (the first listed: an embedded `ocm hub` process) and applies A's
/// work; A is killed (`kill -9`). Hub B is a plain `ocm apiserver` run by `ocm hub
/// --kubeconfig`, so both kinds of hub take part. The Klusterlet shows the lost hub in
/// `HubConnectionDegraded`; once A has been out of reach for `hubConnectionTimeoutSeconds`
/// (180, the API's least) the registration agent the operator runs asks hub B by itself, B's
/// admin accepts, the cluster is Joined and Available on B, the work agent follows (B's work
/// applies), the Klusterlet's hub connection works again, and what A's work applied is the
/// same object throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_secrets_the_agent_moves_to_the_next_hub_when_its_hub_stays_lost() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let hub_a = HubProcess::start(OCM, home, &home.join("hub-a"), "127.0.0.1:0");
    let admin_a = hub_a.admin_client().await;
    let bootstrap_a = hub_a.bootstrap_kubeconfig(&admin_a).await;
    let hub_b = ManagedApiserver::start(OCM, home);
    let admin_b = hub_b.admin_client().await;
    let bootstrap_b = hub_b.bootstrap_kubeconfig(&admin_b).await;
    let operated = OperatedCluster::start(OCM, home, "c6").await.unwrap();
    let spoke = operated.spoke.client();
    write_agent_secret(&spoke, "hub-a", &bootstrap_a)
        .await
        .unwrap();
    write_agent_secret(&spoke, "hub-b", &bootstrap_b)
        .await
        .unwrap();
    create_listing_klusterlet(&spoke, "c6").await;
    accept_and_wait_available(&admin_a, "c6").await.unwrap();
    create_configmap_work(&admin_a, "c6", "moved", "a").await;
    let configmaps: Api<ConfigMap> = Api::namespaced(spoke.clone(), "default");
    let applied = wait_for(&configmaps, "moved", "A's work applied", |_| true)
        .await
        .unwrap();
    let klusterlets: Api<Klusterlet> = Api::all(spoke.clone());
    wait_condition(
        &klusterlets,
        "HubConnectionDegraded",
        "False",
        "HubConnectionFunctional",
    )
    .await;

    hub_a.process.kill_9();
    // The operator re-checks a working connection every minute.
    let lost = wait_for_within(
        LOST_HUB_WAIT,
        &klusterlets,
        "klusterlet",
        "A's loss seen",
        |k| condition(k, "HubConnectionDegraded").0 == "True",
    )
    .await
    .unwrap();
    let (_, reason) = condition(&lost, "HubConnectionDegraded");
    assert!(reason.ends_with("HubKubeConfigUnauthorized"), "{reason}");
    // c6 asks B once A has been lost for the timeout.
    accept_and_wait_available_within(LOST_HUB_WAIT, &admin_b, "c6")
        .await
        .unwrap();
    // The agent chose B's bootstrap kubeconfig; the operator sees the connection work again.
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(spoke.clone(), AGENT_NS);
    let chosen = secrets.get("bootstrap-hub-kubeconfig").await.unwrap();
    let chosen = String::from_utf8(chosen.data.unwrap()["kubeconfig"].0.clone()).unwrap();
    assert_eq!(chosen, bootstrap_b);
    wait_for_within(
        Duration::from_secs(90),
        &klusterlets,
        "klusterlet",
        "B's connection works",
        |k| condition(k, "HubConnectionDegraded").1 == "HubConnectionFunctional",
    )
    .await
    .unwrap();
    // The work agent works for B now: B's work, naming the same ConfigMap, applies it.
    create_configmap_work(&admin_b, "c6", "moved", "b").await;
    let taken_over = wait_for(&configmaps, "moved", "B's work applied", |c| {
        c.data.as_ref().is_some_and(|d| d["from"] == "b")
    })
    .await
    .unwrap();
    assert_eq!(
        taken_over.metadata.uid, applied.metadata.uid,
        "the same object throughout"
    );
    operated.stop().await;
    hub_b.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn klusterlets_share_upstreams_addon_namespace_and_the_last_one_removes_it() {
    const ADDON_NS: &str = "open-cluster-management-agent-addon";
    let dir = tempfile::tempdir().unwrap();
    let operated = OperatedCluster::start(OCM, dir.path(), "c7").await.unwrap();
    let client = operated.spoke.client();
    let klusterlets: Api<Klusterlet> = Api::all(client.clone());
    let namespaces: Api<Namespace> = Api::all(client.clone());
    // Two Klusterlets (two hubs, say), neither in the default agent namespace.
    for name in ["k1", "k2"] {
        create_klusterlet(
            &client,
            name,
            json!({"clusterName": "c7",
                   "namespace": format!("open-cluster-management-agent-{name}")}),
        )
        .await
        .unwrap();
        wait_for(&klusterlets, name, "Applied", |k| {
            condition(k, "Applied") == ("True".to_owned(), "KlusterletApplied".to_owned())
        })
        .await
        .unwrap();
    }
    // The addon namespace is upstream's, whatever the agent namespaces.
    wait_for(&namespaces, ADDON_NS, "the addon namespace", |_| true)
        .await
        .unwrap();
    for name in ["k1", "k2"] {
        let old_style = format!("open-cluster-management-agent-{name}-addon");
        assert!(namespaces.get_opt(&old_style).await.unwrap().is_none());
    }
    // One goes: its agent namespace goes, the shared one stays for the other.
    klusterlets
        .delete("k1", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&klusterlets, "k1").await.unwrap();
    wait_gone(&namespaces, "open-cluster-management-agent-k1")
        .await
        .unwrap();
    let shared = namespaces.get(ADDON_NS).await.unwrap();
    assert!(shared.metadata.deletion_timestamp.is_none());
    // The last one goes: so does the addon namespace.
    klusterlets
        .delete("k2", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&klusterlets, "k2").await.unwrap();
    wait_gone(&namespaces, ADDON_NS).await.unwrap();
    operated.stop().await;
}
