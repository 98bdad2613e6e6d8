//! The whole operator path with real processes: `ocm operator hub` on a hub cluster (a plain
//! `ocm apiserver`) installs the hub components a ClusterManager asks for, and the process
//! kubelet runs them as `ocm` processes with their own service accounts; the klusterlet
//! operator on a simulated managed cluster installs agents that join that hub; a ManifestWork
//! is applied; the hub's policies answer from the webhook pods (the ManagedClusterAddOn one
//! from the addon webhook's); the dashboard comes and goes with the ClusterManager's annotation; a new image
//! rolls the hub; deleting the ClusterManager removes the components. A Hosted ClusterManager
//! runs them on a management cluster, its webhooks reached by the hosted hub's API server at
//! the configured addresses.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::operator::v1::{ClusterManager, Klusterlet};
use ocm_api::work::v1::ManifestWork;
use ocm_e2e::operator::{
    IMAGE, OperatedCluster, UPGRADED, accept_and_wait_available, condition_of, create_klusterlet,
    shorten_lease, start_operator, wait_available_unknown, wait_deployment_available,
    write_bootstrap_secret,
};
use ocm_e2e::process::start_apiserver;
use ocm_e2e::{wait_for, wait_gone};
use ocm_operator::cluster_manager::render::HUB_NAMESPACE;
use serde_json::json;

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");

/// The hub components a default ClusterManager runs.
const COMPONENTS: [&str; 6] = [
    "cluster-manager-registration-controller",
    "cluster-manager-placement-controller",
    "cluster-manager-addon-manager-controller",
    "cluster-manager-registration-webhook",
    "cluster-manager-work-webhook",
    "cluster-manager-addon-webhook",
];

async fn wait_cluster_manager(api: &Api<ClusterManager>, type_: &str, status: &str, reason: &str) {
    wait_for(
        api,
        "cluster-manager",
        &format!("{type_} {status} {reason}"),
        |cm| {
            condition_of(cm.status.as_ref().map(|s| &s.conditions), type_)
                == (status.to_owned(), reason.to_owned())
        },
    )
    .await
    .unwrap();
}

/// ManagedClusterAddOn `converted` in `namespace`, written in v1alpha1 with `installNamespace:
/// converted-agent`, reads in v1beta1 with it in the annotation (the conversion webhook's
/// work: without it the API server would only rename the version).
async fn assert_converted(client: &kube::Client, namespace: &str) {
    let beta =
        Api::<ocm_api::addon::v1beta1::ManagedClusterAddOn>::namespaced(client.clone(), namespace)
            .get("converted")
            .await
            .unwrap();
    assert_eq!(
        beta.metadata.annotations.unwrap_or_default()
            [ocm_api::addon::names::annotations::V1ALPHA1_INSTALL_NAMESPACE],
        "converted-agent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_manager_runs_the_hub_as_processes_and_klusterlets_join_it() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (apiserver, kubeconfig) = start_apiserver(OCM, home, &[]);
    let admin = ocm_runtime::kubeconfig::client_from_file(&kubeconfig)
        .await
        .unwrap();
    let kubelet = ocm_e2e::start_process_kubelet(OCM, &kubeconfig, IMAGE, &home.join("hub"))
        .await
        .unwrap();
    let operator = start_operator(OCM, home, "hub", &kubeconfig);

    // ClusterManager applied → every hub component runs as a process.
    let cluster_managers: Api<ClusterManager> = Api::all(admin.clone());
    let cm: ClusterManager = serde_json::from_value(json!({
        "apiVersion": "operator.open-cluster-management.io/v1", "kind": "ClusterManager",
        "metadata": {"name": "cluster-manager"}, "spec": {}}))
    .unwrap();
    cluster_managers
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    for name in COMPONENTS {
        wait_deployment_available(&admin, HUB_NAMESPACE, name, 1)
            .await
            .unwrap();
    }
    wait_cluster_manager(
        &cluster_managers,
        "Applied",
        "True",
        "ClusterManagerApplied",
    )
    .await;
    wait_cluster_manager(
        &cluster_managers,
        "Progressing",
        "False",
        "ClusterManagerUpToDate",
    )
    .await;
    wait_cluster_manager(
        &cluster_managers,
        "HubRegistrationDegraded",
        "False",
        "RegistrationFunctional",
    )
    .await;
    wait_cluster_manager(
        &cluster_managers,
        "HubPlacementDegraded",
        "False",
        "PlacementFunctional",
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(admin.clone(), HUB_NAMESPACE);
    let running = pods.list(&Default::default()).await.unwrap().items;
    assert_eq!(running.len(), COMPONENTS.len());
    for pod in &running {
        let status = pod.status.as_ref().unwrap();
        assert_eq!(
            status.phase.as_deref(),
            Some("Running"),
            "{:?}",
            pod.metadata.name
        );
    }

    // The hub's bootstrap token (as `ocm init` makes it), then two managed clusters join
    // through their klusterlet operators: one Default, one Singleton.
    let token = ocm::bootstrap::init_hub(&admin, None).await.unwrap();
    let server = ocm_runtime::kubeconfig::current_server(
        &ocm_runtime::kubeconfig::parse(&std::fs::read_to_string(&kubeconfig).unwrap()).unwrap(),
    )
    .unwrap();
    let bootstrap = ocm::commands::join::bootstrap_kubeconfig(
        &server.server,
        server.ca_pem.as_deref().unwrap(),
        &token.to_string(),
    );
    let mut clusters_up = Vec::new();
    for (name, mode) in [("c1", "Default"), ("c2", "Singleton")] {
        let operated = OperatedCluster::start(OCM, home, name).await.unwrap();
        write_bootstrap_secret(&operated.spoke.client(), &bootstrap)
            .await
            .unwrap();
        create_klusterlet(
            &operated.spoke.client(),
            "klusterlet",
            json!({"clusterName": name, "deployOption": {"mode": mode}}),
        )
        .await
        .unwrap();
        let accepted = tokio::time::timeout(
            ocm_e2e::WAIT,
            ocm::accept::accept_when_asked(&admin, name, false),
        )
        .await
        .expect("cluster asks to join")
        .unwrap();
        assert!(accepted.accepted_now);
        clusters_up.push(operated);
    }
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    for name in ["c1", "c2"] {
        wait_for(
            &clusters,
            name,
            "Joined and Available",
            ocm_e2e::joined_and_available,
        )
        .await
        .unwrap();
    }
    // The hub's registration controller (a process) prepared the cluster's namespace.
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    namespaces.get("c1").await.unwrap();

    // The hub's admission policies run in the webhook pods, each reached through its group's
    // Service: a ManifestWork without manifests is refused by the work webhook (the plain API
    // server alone would take it).
    let empty: ManifestWork = serde_json::from_value(json!({
        "metadata": {"name": "empty", "namespace": "c1"},
        "spec": {"workload": {"manifests": []}}}))
    .unwrap();
    let refused = Api::<ManifestWork>::namespaced(admin.clone(), "c1")
        .create(&PostParams::default(), &empty)
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("denied the request"),
        "{refused}"
    );
    // Upstream's names: the webhook CA in Secret `signer-secret`, its bundle in ConfigMap
    // `ca-bundle-configmap`, and each group's webhooks sent to that group's Service.
    let signer = Api::<Secret>::namespaced(admin.clone(), HUB_NAMESPACE)
        .get("signer-secret")
        .await
        .unwrap();
    let ca = signer.data.unwrap()["tls.crt"].0.clone();
    let bundle = Api::<ConfigMap>::namespaced(admin.clone(), HUB_NAMESPACE)
        .get("ca-bundle-configmap")
        .await
        .unwrap();
    assert_eq!(
        bundle.data.unwrap()["ca-bundle.crt"].as_bytes(),
        ca.as_slice()
    );
    let validating = Api::<ValidatingWebhookConfiguration>::all(admin.clone())
        .get("ocm-hub-validating-webhooks")
        .await
        .unwrap();
    for hook in validating.webhooks.unwrap() {
        let group = hook.rules.unwrap()[0].api_groups.clone().unwrap()[0].clone();
        let service = hook.client_config.service.unwrap().name;
        let expected = match group.as_str() {
            "work.open-cluster-management.io" => "cluster-manager-work-webhook",
            "addon.open-cluster-management.io" => "cluster-manager-addon-webhook",
            _ => "cluster-manager-registration-webhook",
        };
        assert_eq!(service, expected, "{}", hook.name);
    }

    // The addon CRDs convert through the same pod: a ManagedClusterAddOn written in v1alpha1
    // with the deprecated installNamespace reads back in v1beta1 with it in the annotation
    // (without the webhook the API server would only rename the version).
    let alpha: ocm_api::addon::v1alpha1::ManagedClusterAddOn = serde_json::from_value(json!({
        "apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ManagedClusterAddOn",
        "metadata": {"name": "converted", "namespace": "c1"},
        "spec": {"installNamespace": "converted-agent"}}))
    .unwrap();
    Api::<ocm_api::addon::v1alpha1::ManagedClusterAddOn>::namespaced(admin.clone(), "c1")
        .create(&PostParams::default(), &alpha)
        .await
        .unwrap();
    assert_converted(&admin, "c1").await;
    // The ManagedClusterAddOn policy answers from the addon webhook's pod too: another addon's
    // agent, though granted broad rights on addon status, may not write this addon's.
    let grant = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: careless-addon-status}
rules:
- {apiGroups: [addon.open-cluster-management.io], resources: [managedclusteraddons/status], verbs: [get, patch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: careless-addon-status}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: careless-addon-status}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:open-cluster-management:addon:other"}
"#;
    let (ok, _, err) = ocm_e2e::kubectl(&kubeconfig, &["apply", "-f", "-"], Some(grant))
        .await
        .unwrap();
    assert!(ok, "{err}");
    let (ok, _, err) = ocm_e2e::kubectl(
        &kubeconfig,
        &[
            "patch",
            "managedclusteraddon",
            "converted",
            "-n",
            "c1",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"conditions":[]}}"#,
            "--as=system:open-cluster-management:cluster:c1:addon:other:agent:other",
            "--as-group=system:open-cluster-management:cluster:c1:addon:other",
            "--as-group=system:open-cluster-management:addon:other",
        ],
        None,
    )
    .await
    .unwrap();
    assert!(
        !ok && err.contains("Error from server (Forbidden)")
            && err.contains(
                "managedclusteraddonvalidators.admission.addon.open-cluster-management.io"
            )
            && err.contains("which belongs to another addon"),
        "{err}"
    );

    // A ManifestWork reaches c2's single agent.
    let work: ManifestWork = serde_json::from_value(json!({
        "metadata": {"name": "hello", "namespace": "c2"},
        "spec": {"workload": {"manifests": [
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "hello", "namespace": "default"}, "data": {"from": "hub"}}]}}}))
    .unwrap();
    Api::<ManifestWork>::namespaced(admin.clone(), "c2")
        .create(&PostParams::default(), &work)
        .await
        .unwrap();
    let configmaps: Api<ConfigMap> = Api::namespaced(clusters_up[1].spoke.client(), "default");
    wait_for(
        &configmaps,
        "hello",
        "applied by the singleton agent",
        |_| true,
    )
    .await
    .unwrap();

    // The dashboard, off by default, on through the ClusterManager's annotation: the
    // operator deploys it, it runs as a process under its own service account and its page
    // lists the clusters; with the annotation gone, so is everything it brought.
    let deployments: Api<Deployment> = Api::namespaced(admin.clone(), HUB_NAMESPACE);
    let dashboard = "cluster-manager-dashboard";
    assert!(deployments.get_opt(dashboard).await.unwrap().is_none());
    let annotate = |value: serde_json::Value| {
        let cluster_managers = cluster_managers.clone();
        async move {
            cluster_managers
                .patch(
                    "cluster-manager",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"annotations": {
                        "operator.open-cluster-management.io/dashboard": value}}})),
                )
                .await
                .unwrap();
        }
    };
    annotate(json!("enabled")).await;
    wait_deployment_available(&admin, HUB_NAMESPACE, dashboard, 1)
        .await
        .unwrap();
    let services: Api<Service> = Api::namespaced(admin.clone(), HUB_NAMESPACE);
    assert_eq!(
        services
            .get(dashboard)
            .await
            .unwrap()
            .spec
            .unwrap()
            .ports
            .unwrap()[0]
            .port,
        8090
    );
    let dashboard_pods = pods
        .list(&ListParams::default().labels(&format!("app={dashboard}")))
        .await
        .unwrap()
        .items;
    // The process kubelet moved the pod's port 8090 to a free local one and says which.
    let ports: serde_json::Value = serde_json::from_str(
        &dashboard_pods[0].metadata.annotations.as_ref().unwrap()
            [ocm::process_kubelet::pod::PORTS_ANNOTATION],
    )
    .unwrap();
    let url = format!("http://127.0.0.1:{}/", ports["8090"]);
    let page = ocm_e2e::process::wait_dashboard_page(&url, "/", &["c1", "c2"]).await;
    assert!(!page.contains("Cannot watch"), "{page}");
    annotate(serde_json::Value::Null).await;
    wait_gone(&deployments, dashboard).await.unwrap();
    wait_gone(&services, dashboard).await.unwrap();
    wait_gone(
        &Api::<ServiceAccount>::namespaced(admin.clone(), HUB_NAMESPACE),
        "dashboard-sa",
    )
    .await
    .unwrap();
    wait_gone(
        &Api::<ClusterRole>::all(admin.clone()),
        "open-cluster-management:cluster-manager-dashboard",
    )
    .await
    .unwrap();

    // Upgrade: new images roll every hub component; the clusters stay Available.
    let leases: Api<Lease> = Api::namespaced(admin.clone(), HUB_NAMESPACE);
    let lock = "cluster-manager-registration-controller-lock";
    let holder = |l: &Lease| l.spec.as_ref().and_then(|s| s.holder_identity.clone());
    let old_leader = holder(&leases.get(lock).await.unwrap()).unwrap();
    cluster_managers
        .patch(
            "cluster-manager",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {
                "registrationImagePullSpec": UPGRADED, "placementImagePullSpec": UPGRADED,
                "workImagePullSpec": UPGRADED, "addOnManagerImagePullSpec": UPGRADED}})),
        )
        .await
        .unwrap();
    for name in COMPONENTS {
        wait_for(&deployments, name, "rolled to the new image", |d| {
            let pod = d.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
            pod.containers[0].image.as_deref() == Some(UPGRADED)
                && d.status.as_ref().is_some_and(|s| {
                    s.observed_generation == d.metadata.generation
                        && s.available_replicas == Some(1)
                })
        })
        .await
        .unwrap();
    }
    wait_cluster_manager(
        &cluster_managers,
        "Progressing",
        "False",
        "ClusterManagerUpToDate",
    )
    .await;
    // The new registration controller leads (the old one handed its lease over on SIGTERM).
    wait_for(&leases, lock, "a new registration leader", |l| {
        holder(l).is_some_and(|h| !h.is_empty() && h != old_leader)
    })
    .await
    .unwrap();
    for name in ["c1", "c2"] {
        assert!(ocm_e2e::joined_and_available(
            &clusters.get(name).await.unwrap()
        ));
    }

    // Klusterlet of c1 deleted → its agents go, and the hub sees c1 go Unknown.
    shorten_lease(&admin, "c1").await.unwrap();
    let c1 = clusters_up.remove(0);
    let klusterlets: Api<Klusterlet> = Api::all(c1.spoke.client());
    klusterlets
        .delete("klusterlet", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&klusterlets, "klusterlet").await.unwrap();
    wait_available_unknown(&admin, "c1").await.unwrap();
    c1.stop().await;

    // ClusterManager deleted → the hub components and their namespace are gone.
    cluster_managers
        .delete("cluster-manager", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&cluster_managers, "cluster-manager")
        .await
        .unwrap();
    for name in COMPONENTS {
        assert!(
            deployments.get_opt(name).await.unwrap().is_none(),
            "{name} left"
        );
    }
    wait_gone(&namespaces, HUB_NAMESPACE).await.unwrap();
    // The addon CRDs stay, no longer sending conversions to the webhook that went.
    let crds: Api<CustomResourceDefinition> = Api::all(admin.clone());
    let crd = crds
        .get("managedclusteraddons.addon.open-cluster-management.io")
        .await
        .unwrap();
    assert_eq!(crd.spec.conversion.unwrap().strategy, "None");
    for operated in clusters_up {
        operated.stop().await;
    }
    kubelet.cancel();
    operator.stop();
    apiserver.stop();
}

/// The hub components a Hosted ClusterManager runs (no addon webhook server: its webhooks go
/// to the registration one).
const HOSTED_COMPONENTS: [&str; 5] = [
    "cluster-manager-registration-controller",
    "cluster-manager-placement-controller",
    "cluster-manager-addon-manager-controller",
    "cluster-manager-registration-webhook",
    "cluster-manager-work-webhook",
];

/// A port nothing listens on now, on any address.
fn free_port() -> u16 {
    std::net::TcpListener::bind("0.0.0.0:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs kubectl with `kubeconfig` and expects it to succeed; returns its stdout.
async fn kubectl_ok(kubeconfig: &std::path::Path, args: &[&str], stdin: Option<&str>) -> String {
    let (ok, out, err) = ocm_e2e::kubectl(kubeconfig, args, stdin).await.unwrap();
    assert!(ok, "kubectl {args:?}: {err}");
    out
}

/// A Hosted ClusterManager, as a user runs it: the hub components run on a management
/// cluster (in the namespace named after the ClusterManager) and reach the hub through the
/// external kubeconfig; the CRDs go on the hub. Without the webhook addresses nothing is
/// applied and the condition names them; with them the hub's API server calls the webhook
/// servers (in the host network of the management cluster, at the configured address —
/// 127.0.0.2, so the serving certificate must name it) and so enforces the policies for a
/// kubectl user; a cluster joins that hub; deleting the ClusterManager unregisters the
/// webhooks from the hub.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosted_cluster_manager_runs_the_hub_components_on_a_management_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (management_server, management_kubeconfig) =
        start_apiserver(OCM, &home.join("management"), &[]);
    let (hub_server, hub_kubeconfig) = start_apiserver(OCM, &home.join("hub"), &[]);
    let management = ocm_runtime::kubeconfig::client_from_file(&management_kubeconfig)
        .await
        .unwrap();
    let hub = ocm_runtime::kubeconfig::client_from_file(&hub_kubeconfig)
        .await
        .unwrap();
    let kubelet = ocm_e2e::start_process_kubelet(
        OCM,
        &management_kubeconfig,
        IMAGE,
        &home.join("management"),
    )
    .await
    .unwrap();
    let operator = start_operator(OCM, home, "hub", &management_kubeconfig);

    // Hosted, without webhook addresses: refused as a whole, the condition names the fields.
    let cluster_manager = |hosted: &str| {
        format!(
            "apiVersion: operator.open-cluster-management.io/v1\nkind: ClusterManager\n\
             metadata: {{name: cluster-manager}}\n\
             spec: {{deployOption: {{mode: Hosted{hosted}}}}}\n"
        )
    };
    kubectl_ok(
        &management_kubeconfig,
        &["apply", "-f", "-"],
        Some(&cluster_manager("")),
    )
    .await;
    let cluster_managers: Api<ClusterManager> = Api::all(management.clone());
    wait_cluster_manager(&cluster_managers, "Applied", "False", "WebhookApplyFailed").await;
    let cm = cluster_managers.get("cluster-manager").await.unwrap();
    let applied = cm
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Applied")
        .unwrap();
    for field in [
        "spec.deployOption.hosted.registrationWebhookConfiguration.address",
        "spec.deployOption.hosted.workWebhookConfiguration.address",
    ] {
        assert!(applied.message.contains(field), "{}", applied.message);
    }
    let crds: Api<CustomResourceDefinition> = Api::all(hub.clone());
    assert!(
        crds.get_opt("managedclusters.cluster.open-cluster-management.io")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        Api::<Deployment>::all(management.clone())
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    // The addresses (the webhook servers in the management cluster's host network, on ports
    // of their own), but no way to the hub yet: the condition names the secret.
    let (registration_port, work_port) = (free_port(), free_port());
    let hosted = format!(
        ", hosted: {{\
         registrationWebhookConfiguration: {{address: 127.0.0.2, port: {registration_port}, \
           bindConfiguration: {{port: {registration_port}, hostNetwork: true}}}}, \
         workWebhookConfiguration: {{address: 127.0.0.2, port: {work_port}, \
           bindConfiguration: {{port: {work_port}, hostNetwork: true}}}}}}"
    );
    kubectl_ok(
        &management_kubeconfig,
        &["apply", "-f", "-"],
        Some(&cluster_manager(&hosted)),
    )
    .await;
    wait_cluster_manager(
        &cluster_managers,
        "Applied",
        "False",
        "RuntimeResourceApplyFailed",
    )
    .await;
    kubectl_ok(
        &management_kubeconfig,
        &["create", "namespace", "cluster-manager"],
        None,
    )
    .await;
    let from_file = format!("--from-file=kubeconfig={}", hub_kubeconfig.display());
    kubectl_ok(
        &management_kubeconfig,
        &[
            "create",
            "secret",
            "generic",
            "external-hub-kubeconfig",
            "-n",
            "cluster-manager",
            &from_file,
        ],
        None,
    )
    .await;
    for name in HOSTED_COMPONENTS {
        wait_deployment_available(&management, "cluster-manager", name, 1)
            .await
            .unwrap();
    }
    let deployments: Api<Deployment> = Api::namespaced(management.clone(), "cluster-manager");
    assert!(
        deployments
            .get_opt("cluster-manager-addon-webhook")
            .await
            .unwrap()
            .is_none()
    );
    wait_cluster_manager(
        &cluster_managers,
        "Applied",
        "True",
        "ClusterManagerApplied",
    )
    .await;
    // The CRDs are on the hub, the components are not.
    crds.get("managedclusters.cluster.open-cluster-management.io")
        .await
        .unwrap();
    let hub_deployments: Api<Deployment> = Api::all(hub.clone());
    assert!(
        hub_deployments
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    // The hub's webhooks name the configured addresses: the work group's the work server's,
    // every other group's (addon included) the registration server's; so does the addon
    // CRDs' conversion.
    let validating = wait_for(
        &Api::<ValidatingWebhookConfiguration>::all(hub.clone()),
        "ocm-hub-validating-webhooks",
        "registered on the hub",
        |_| true,
    )
    .await
    .unwrap();
    let registration_url = format!("https://127.0.0.2:{registration_port}/");
    let work_url = format!("https://127.0.0.2:{work_port}/");
    for hook in validating.webhooks.unwrap() {
        let group = hook.rules.unwrap()[0].api_groups.clone().unwrap()[0].clone();
        let url = hook.client_config.url.unwrap();
        let expected = if group == "work.open-cluster-management.io" {
            &work_url
        } else {
            &registration_url
        };
        assert!(url.starts_with(expected.as_str()), "{}: {url}", hook.name);
        assert!(hook.client_config.service.is_none());
    }
    let addon_crd = wait_for(
        &crds,
        "managedclusteraddons.addon.open-cluster-management.io",
        "converted by the webhook",
        |crd| {
            crd.spec
                .conversion
                .as_ref()
                .is_some_and(|c| c.strategy == "Webhook")
        },
    )
    .await
    .unwrap();
    let conversion_url = addon_crd.spec.conversion.unwrap().webhook.unwrap();
    assert!(
        conversion_url
            .client_config
            .unwrap()
            .url
            .unwrap()
            .starts_with(&registration_url)
    );

    // The hub's API server enforces the policies through the webhooks, for a kubectl user:
    // alice may create clusters (in the default set) but not accept them.
    let grant = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cluster-creator}
rules:
- {apiGroups: [cluster.open-cluster-management.io], resources: [managedclusters], verbs: [create, get, list, update, patch]}
- {apiGroups: [cluster.open-cluster-management.io], resources: [managedclustersets/join], resourceNames: [default], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: cluster-creator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-creator}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
"#;
    kubectl_ok(&hub_kubeconfig, &["apply", "-f", "-"], Some(grant)).await;
    let cluster = |accepted: bool| {
        format!(
            "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\n\
             metadata: {{name: c9}}\nspec: {{hubAcceptsClient: {accepted}}}\n"
        )
    };
    let (ok, _, err) = ocm_e2e::kubectl(
        &hub_kubeconfig,
        &["create", "-f", "-", "--as=alice"],
        Some(&cluster(true)),
    )
    .await
    .unwrap();
    assert!(
        !ok && err.contains("Error from server (Forbidden)")
            && err
                .contains("managedclustervalidators.admission.cluster.open-cluster-management.io")
            && err.contains("cannot update the HubAcceptsClient field"),
        "{err}"
    );
    kubectl_ok(
        &hub_kubeconfig,
        &["create", "-f", "-", "--as=alice"],
        Some(&cluster(false)),
    )
    .await;
    // The mutating webhook put it into the default cluster set.
    let set = kubectl_ok(
        &hub_kubeconfig,
        &[
            "get",
            "managedcluster",
            "c9",
            "-o",
            r"jsonpath={.metadata.labels.cluster\.open-cluster-management\.io/clusterset}",
        ],
        None,
    )
    .await;
    assert_eq!(set, "default");
    // The work server: a ManifestWork without manifests is refused, one with a manifest is
    // taken.
    kubectl_ok(&hub_kubeconfig, &["create", "namespace", "team-a"], None).await;
    let work = |manifests: &str| {
        format!(
            "apiVersion: work.open-cluster-management.io/v1\nkind: ManifestWork\n\
             metadata: {{name: hello, namespace: team-a}}\n\
             spec: {{workload: {{manifests: [{manifests}]}}}}\n"
        )
    };
    let (ok, _, err) = ocm_e2e::kubectl(&hub_kubeconfig, &["create", "-f", "-"], Some(&work("")))
        .await
        .unwrap();
    assert!(
        !ok && err.contains("manifestworkvalidators.admission.work.open-cluster-management.io")
            && err.contains("denied the request"),
        "{err}"
    );
    kubectl_ok(
        &hub_kubeconfig,
        &["create", "-f", "-"],
        Some(&work(
            "{apiVersion: v1, kind: ConfigMap, metadata: {name: hello, namespace: default}}",
        )),
    )
    .await;
    // The addon conversion, through the registration server: written in v1alpha1 with the
    // deprecated installNamespace, read in v1beta1 with it in the annotation.
    let alpha = "apiVersion: addon.open-cluster-management.io/v1alpha1\n\
                 kind: ManagedClusterAddOn\n\
                 metadata: {name: converted, namespace: team-a}\n\
                 spec: {installNamespace: converted-agent}\n";
    kubectl_ok(&hub_kubeconfig, &["create", "-f", "-"], Some(alpha)).await;
    assert_converted(&hub, "team-a").await;

    // A cluster joins the hosted hub (its registration passes the webhooks).
    let token = ocm::bootstrap::init_hub(&hub, None).await.unwrap();
    let server = ocm_runtime::kubeconfig::current_server(
        &ocm_runtime::kubeconfig::parse(&std::fs::read_to_string(&hub_kubeconfig).unwrap())
            .unwrap(),
    )
    .unwrap();
    let bootstrap = ocm::commands::join::bootstrap_kubeconfig(
        &server.server,
        server.ca_pem.as_deref().unwrap(),
        &token.to_string(),
    );
    let operated = OperatedCluster::start(OCM, home, "c1").await.unwrap();
    write_bootstrap_secret(&operated.spoke.client(), &bootstrap)
        .await
        .unwrap();
    create_klusterlet(
        &operated.spoke.client(),
        "klusterlet",
        json!({"clusterName": "c1"}),
    )
    .await
    .unwrap();
    accept_and_wait_available(&hub, "c1").await.unwrap();
    // The hub's registration controller (on the management cluster) made c1's namespace.
    Api::<Namespace>::all(hub.clone()).get("c1").await.unwrap();

    // Deleted: the hub's webhooks go first, the conversion is turned off (the CRDs stay).
    kubectl_ok(
        &management_kubeconfig,
        &[
            "delete",
            "clustermanager",
            "cluster-manager",
            "--wait=false",
        ],
        None,
    )
    .await;
    wait_gone(&cluster_managers, "cluster-manager")
        .await
        .unwrap();
    wait_gone(
        &Api::<Namespace>::all(management.clone()),
        "cluster-manager",
    )
    .await
    .unwrap();
    assert!(
        Api::<ValidatingWebhookConfiguration>::all(hub.clone())
            .get_opt("ocm-hub-validating-webhooks")
            .await
            .unwrap()
            .is_none()
    );
    let crd = crds
        .get("managedclusteraddons.addon.open-cluster-management.io")
        .await
        .unwrap();
    assert_eq!(crd.spec.conversion.unwrap().strategy, "None");
    operated.stop().await;
    kubelet.cancel();
    operator.stop();
    hub_server.stop();
    management_server.stop();
}
