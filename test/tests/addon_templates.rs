//! Template addons end to end on three simulated clusters: an AddOnTemplate (an agent
//! Deployment, its RBAC and a ConfigMap using variables) rendered per cluster, registration
//! giving each agent exactly the declared hub permissions (checked with access reviews) and a
//! custom-signer certificate signed by the template's CA, a template edit rolled out one
//! cluster at a time, everything gone with the ClusterManagementAddOn; errors as conditions
//! naming them (a variable nothing defines renders empty, as upstream, and is named in
//! `TemplateVariablesDefined`); and `ocm addon create` from a directory of YAML, as a process.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use ocm::embedded::EmbeddedHub;
use ocm_addon_framework::manager::run_install_strategies;
use ocm_addon_framework::template::run_template_addons;
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::work::v1::ManifestWork;
use ocm_e2e::addon_condition as condition;
use ocm_e2e::{WAIT, bind_namespace, wait_for, wait_gone};
use ocm_runtime::kubeconfig::{KubeconfigAuth, ServerInfo};
use ocm_runtime::shutdown::Shutdown;
use serde_json::{Value, json};

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");
const ADDON: &str = "hello-template";
const AGENT_NS: &str = "hello-template-ns";
/// Where the AddOnDeploymentConfig moves the agent (every namespaced object, the Namespace and
/// the binding's ServiceAccount subject).
const INSTALL_NS: &str = "hello-agents";
const SIGNER: &str = "example.com/hello";
const MANAGER_NS: &str = "open-cluster-management-hub";

fn templates(client: &kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(
            "addon.open-cluster-management.io",
            "v1alpha1",
            "AddOnTemplate",
        ),
        "addontemplates",
    );
    Api::all_with(client.clone(), &resource)
}

async fn create<K>(api: &Api<K>, object: Value) -> K
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + serde::Serialize,
{
    api.create(
        &PostParams::default(),
        &serde_json::from_value(object).unwrap(),
    )
    .await
    .unwrap()
}

/// The agent's manifests: a namespace, a service account with a cluster role binding, the
/// agent Deployment and a ConfigMap filled from variables.
fn agent_manifests(version: &str) -> Value {
    json!([
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": AGENT_NS}},
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": "hello-agent", "namespace": AGENT_NS}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "hello-template-agent"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
         "subjects": [{"kind": "ServiceAccount", "name": "hello-agent", "namespace": AGENT_NS}]},
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "hello-agent", "namespace": AGENT_NS},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "hello"}},
                  "template": {"metadata": {"labels": {"app": "hello"}},
                               "spec": {"serviceAccountName": "hello-agent", "containers": [
                                   {"name": "agent", "image": "quay.io/example/hello:v1",
                                    "args": ["--cluster={{CLUSTER_NAME}}",
                                             "--hub-kubeconfig={{HUB_KUBECONFIG}}"]}]}}}},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "hello-{{CLUSTER_NAME}}", "namespace": AGENT_NS},
         "data": {"cluster": "{{CLUSTER_NAME}}", "level": "{{LOG_LEVEL}}", "version": version}}
    ])
}

fn template_spec(version: &str) -> Value {
    json!({
        "addonName": ADDON,
        // The agent's Deployment (where the AddOnDeploymentConfig moves it) has a
        // manifestConfig of its own, as upstream's test template: merged with the availability
        // probe's feedback rule, not in its way.
        "agentSpec": {"workload": {"manifests": agent_manifests(version)},
                      "manifestConfigs": [{"resourceIdentifier": {"group": "apps",
                          "resource": "deployments", "name": "hello-agent", "namespace": INSTALL_NS},
                          "updateStrategy": {"type": "ServerSideApply"}}]},
        "registration": [
            {"type": "KubeClient", "kubeClient": {"hubPermissions": [
                {"type": "CurrentCluster", "currentCluster": {"clusterRoleName": "hello-reader"}},
                {"type": "SingleNamespace", "singleNamespace": {"namespace": "hello-shared",
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                "name": "shared-reader"}}}]}},
            // Two groups and two units, as upstream's test template asks.
            {"type": "CustomSigner", "customSigner": {"signerName": SIGNER,
                "signingCA": {"name": "hello-ca"},
                "subject": {"user": "user1", "groups": ["g1", "g2"],
                            "organizationUnit": ["o1", "o2"]}}}
        ]
    })
}

/// A CA as the `tls.crt` / `tls.key` of a Secret.
fn signing_ca() -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::default();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "hello-template-ca");
    (params.self_signed(&key).unwrap().pem(), key.serialize_pem())
}

async fn ensure_namespace(client: &kube::Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    match api
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": name}})).unwrap(),
        )
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(err) => panic!("creating namespace {name}: {err}"),
    }
}

async fn create_ca_secret(client: &kube::Client) -> String {
    let (cert, key) = signing_ca();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), MANAGER_NS);
    create(
        &secrets,
        json!({"metadata": {"name": "hello-ca", "namespace": MANAGER_NS},
               "type": "kubernetes.io/tls",
               "stringData": {"tls.crt": cert, "tls.key": key}}),
    )
    .await;
    cert
}

/// The hub roles the template's permissions bind.
async fn create_hub_roles(client: &kube::Client) {
    let cluster_roles: Api<k8s_openapi::api::rbac::v1::ClusterRole> = Api::all(client.clone());
    create(
        &cluster_roles,
        json!({"metadata": {"name": "hello-reader"},
               "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]}),
    )
    .await;
    ensure_namespace(client, "hello-shared").await;
    let roles: Api<k8s_openapi::api::rbac::v1::Role> =
        Api::namespaced(client.clone(), "hello-shared");
    create(
        &roles,
        json!({"metadata": {"name": "shared-reader", "namespace": "hello-shared"},
               "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]}),
    )
    .await;
}

/// Waits until the addon satisfies `condition`; on a timeout the failure shows its status.
async fn wait_addon(
    mcas: &Api<ManagedClusterAddOn>,
    name: &str,
    what: &str,
    check: impl Fn(&ManagedClusterAddOn) -> bool,
) -> ManagedClusterAddOn {
    match wait_for(mcas, name, what, check).await {
        Ok(mca) => mca,
        Err(err) => {
            let now = mcas.get_opt(name).await.ok().flatten();
            panic!("{err}: the addon is now {:#?}", now.map(|m| m.status));
        }
    }
}

/// The hub as the addon agent on `cluster` sees it: the client certificate of its
/// `<addon>-hub-kubeconfig` Secret.
async fn agent_hub_client(hub: &EmbeddedHub, spoke: &kube::Client) -> kube::Client {
    let secrets: Api<Secret> = Api::namespaced(spoke.clone(), INSTALL_NS);
    let secret = wait_for(
        &secrets,
        &format!("{ADDON}-hub-kubeconfig"),
        "the agent's hub credentials",
        |s| {
            s.data
                .as_ref()
                .is_some_and(|d| d.contains_key("tls.crt") && d.contains_key("kubeconfig"))
        },
    )
    .await
    .unwrap();
    let data = secret.data.unwrap();
    let text = |k: &str| String::from_utf8(data[k].0.clone()).unwrap();
    ocm_runtime::kubeconfig::client_for(
        &ServerInfo {
            server: hub.url.clone(),
            ca_pem: Some(hub.ca_pem.clone()),
            proxy_url: None,
        },
        &KubeconfigAuth::ClientCertData {
            cert_pem: text("tls.crt"),
            key_pem: text("tls.key"),
        },
    )
    .await
    .unwrap()
}

/// Whether the hub lets `client` do `verb` on `resource` in `namespace` (a
/// SelfSubjectAccessReview).
async fn can(client: &kube::Client, verb: &str, resource: &str, namespace: &str) -> bool {
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let review = reviews
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": {"verb": verb, "resource": resource,
                                                "namespace": namespace}}}))
            .unwrap(),
        )
        .await
        .unwrap();
    review.status.unwrap().allowed
}

fn start_controllers(client: &kube::Client) -> Shutdown {
    let stop = Shutdown::new();
    tokio::spawn(run_install_strategies(client.clone(), stop.child()));
    tokio::spawn(run_template_addons(
        client.clone(),
        MANAGER_NS.to_owned(),
        stop.child(),
    ));
    stop
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_addon_renders_registers_rolls_out_and_goes_with_its_addon() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, names, _agents) = ocm_e2e::fleet(dir.path(), 3).await.unwrap();
    let client = hub.admin_client();
    let _stop = start_controllers(&client);
    ensure_namespace(&client, MANAGER_NS).await;
    let ca_cert = create_ca_secret(&client).await;
    create_hub_roles(&client).await;
    bind_namespace(&client, "addons", "default").await.unwrap();
    let placements: Api<ocm_api::cluster::v1beta1::Placement> =
        Api::namespaced(client.clone(), "addons");
    create(
        &placements,
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
               "metadata": {"name": "everywhere", "namespace": "addons"}, "spec": {}}),
    )
    .await;
    let configs: Api<ocm_api::addon::v1alpha1::AddOnDeploymentConfig> =
        Api::namespaced(client.clone(), "addons");
    create(
        &configs,
        json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1",
               "kind": "AddOnDeploymentConfig",
               "metadata": {"name": "hello-values", "namespace": "addons"},
               "spec": {"customizedVariables": [{"name": "LOG_LEVEL", "value": "4"}],
                        "agentInstallNamespace": INSTALL_NS}}),
    )
    .await;
    create(
        &templates(&client),
        json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "AddOnTemplate",
               "metadata": {"name": "hello-template"}, "spec": template_spec("v1")}),
    )
    .await;
    let cmas: Api<ClusterManagementAddOn> = Api::all(client.clone());
    create(
        &cmas,
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
               "kind": "ClusterManagementAddOn",
               // No lifecycle annotation: the addon manager's, as upstream's default.
               "metadata": {"name": ADDON},
               "spec": {
                   "defaultConfigs": [
                       {"group": "addon.open-cluster-management.io", "resource": "addontemplates",
                        "name": "hello-template"},
                       {"group": "addon.open-cluster-management.io",
                        "resource": "addondeploymentconfigs", "namespace": "addons",
                        "name": "hello-values"}],
                   "installStrategy": {"type": "Placements", "placements": [
                       {"namespace": "addons", "name": "everywhere",
                        "rolloutStrategy": {"type": "Progressive",
                                            "progressive": {"maxConcurrency": 1}}}]}}}),
    )
    .await;

    let mut agent_clients = BTreeMap::new();
    for name in &names {
        let mcas: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), name);
        let mca = wait_addon(&mcas, ADDON, "the template addon Available", |m| {
            condition(m, "Available").is_some_and(|(s, _, _)| s == "True")
        })
        .await;
        let status = mca.status.clone().unwrap();
        assert_eq!(status.namespace, INSTALL_NS);
        assert_eq!(condition(&mca, "RegistrationApplied").unwrap().0, "True");
        // Rendered with this cluster's values.
        let spoke = ocm_e2e::simulated_spoke(&hub, name).await.unwrap();
        let maps: Api<ConfigMap> = Api::namespaced(spoke.clone(), INSTALL_NS);
        let map = wait_for(
            &maps,
            &format!("hello-{name}"),
            "the rendered ConfigMap",
            |_| true,
        )
        .await
        .unwrap();
        let data = map.data.unwrap();
        assert_eq!(
            (data["cluster"].as_str(), data["level"].as_str()),
            (name.as_str(), "4")
        );
        let deployments: Api<Deployment> = Api::namespaced(spoke.clone(), INSTALL_NS);
        let deployment = deployments.get("hello-agent").await.unwrap();
        let pod = deployment.spec.unwrap().template.spec.unwrap();
        let container = &pod.containers[0];
        assert_eq!(
            container.args.as_ref().unwrap()[0],
            format!("--cluster={name}")
        );
        let env: BTreeMap<String, String> = container
            .env
            .iter()
            .flatten()
            .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
            .collect();
        assert_eq!(env["CLUSTER_NAME"], *name);
        assert_eq!(env["HUB_KUBECONFIG"], "/managed/hub-kubeconfig/kubeconfig");
        assert_eq!(env["INSTALL_NAMESPACE"], INSTALL_NS);
        let bindings: Api<k8s_openapi::api::rbac::v1::ClusterRoleBinding> = Api::all(spoke.clone());
        let binding = bindings.get("hello-template-agent").await.unwrap();
        assert_eq!(
            binding.subjects.unwrap()[0].namespace.as_deref(),
            Some(INSTALL_NS),
            "the ServiceAccount subject moved with the agent"
        );
        let volumes: Vec<String> = pod
            .volumes
            .iter()
            .flatten()
            .map(|v| v.secret.as_ref().unwrap().secret_name.clone().unwrap())
            .collect();
        assert_eq!(
            volumes,
            [
                "hello-template-hub-kubeconfig",
                "hello-template-example.com-hello-client-cert"
            ]
        );
        // The custom signer's certificate is signed by the template's CA.
        let secrets: Api<Secret> = Api::namespaced(spoke.clone(), INSTALL_NS);
        let signed = wait_for(
            &secrets,
            "hello-template-example.com-hello-client-cert",
            "the custom-signer certificate",
            |s| s.data.as_ref().is_some_and(|d| d.contains_key("tls.crt")),
        )
        .await
        .unwrap();
        let pem = signed.data.unwrap()["tls.crt"].0.clone();
        let (_, cert) = x509_parser::pem::parse_x509_pem(&pem).unwrap();
        let cert = cert.parse_x509().unwrap();
        let (_, ca) = x509_parser::pem::parse_x509_pem(ca_cert.as_bytes()).unwrap();
        let ca = ca.parse_x509().unwrap();
        assert_eq!(cert.issuer(), ca.subject());
        assert!(
            cert.verify_signature(Some(ca.public_key())).is_ok(),
            "the certificate is signed by the template's CA"
        );
        let organizations: Vec<&str> = cert
            .subject()
            .iter_organization()
            .map(|o| o.as_str().unwrap())
            .collect();
        assert_eq!(organizations, ["g1", "g2"]);
        // One request was enough (a certificate missing a group was asked for again and
        // again).
        let csrs: Api<k8s_openapi::api::certificates::v1::CertificateSigningRequest> =
            Api::all(client.clone());
        let selector = format!(
            "open-cluster-management.io/addon-name={ADDON},open-cluster-management.io/cluster-name={name}"
        );
        let asked = csrs
            .list(&kube::api::ListParams::default().labels(&selector))
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|c| c.spec.signer_name == SIGNER)
            .count();
        assert_eq!(asked, 1);
        agent_clients.insert(name.clone(), agent_hub_client(&hub, &spoke).await);
    }
    // Exactly the declared hub permissions: the ClusterRole in its own cluster namespace, the
    // Role in the shared namespace; nothing in another cluster's namespace or elsewhere.
    for (name, agent) in &agent_clients {
        let other = names.iter().find(|n| *n != name).unwrap();
        assert!(can(agent, "get", "configmaps", name).await);
        assert!(can(agent, "list", "configmaps", name).await);
        assert!(!can(agent, "delete", "configmaps", name).await);
        assert!(!can(agent, "get", "configmaps", other).await);
        assert!(can(agent, "get", "secrets", "hello-shared").await);
        assert!(!can(agent, "list", "secrets", "hello-shared").await);
        assert!(!can(agent, "get", "configmaps", "default").await);
    }

    // Editing the template rolls out one cluster at a time (Progressive, maxConcurrency 1).
    let all: Api<ManagedClusterAddOn> = Api::all(client.clone());
    let mut events = std::pin::pin!(kube::runtime::watcher(
        all.clone(),
        kube::runtime::watcher::Config::default().fields(&format!("metadata.name={ADDON}")),
    ));
    let mut seen = BTreeMap::new();
    while let Some(event) = events.next().await {
        match event.unwrap() {
            kube::runtime::watcher::Event::InitApply(m) => {
                seen.insert(m.metadata.namespace.clone().unwrap(), m);
            }
            kube::runtime::watcher::Event::InitDone => break,
            _ => {}
        }
    }
    let template_hash = |m: &ManagedClusterAddOn| {
        m.status.as_ref().and_then(|s| {
            s.config_references
                .iter()
                .find(|r| r.resource == "addontemplates")
                .cloned()
        })
    };
    let before = template_hash(&seen[&names[0]])
        .and_then(|r| r.desired_config)
        .and_then(|d| d.spec_hash)
        .unwrap();
    let mut template = templates(&client).get("hello-template").await.unwrap();
    template.data["spec"] = template_spec("v2");
    templates(&client)
        .replace("hello-template", &PostParams::default(), &template)
        .await
        .unwrap();
    let state = |m: &ManagedClusterAddOn| {
        let r = template_hash(m);
        let new = r
            .as_ref()
            .and_then(|r| r.desired_config.as_ref())
            .and_then(|d| d.spec_hash.as_ref())
            .is_some_and(|h| *h != before);
        let applied = r.is_some_and(|r| r.desired_config == r.last_applied_config);
        (new, applied)
    };
    let mut max_in_flight = 0;
    tokio::time::timeout(WAIT, async {
        while let Some(event) = events.next().await {
            if let kube::runtime::watcher::Event::Apply(m) = event.unwrap() {
                seen.insert(m.metadata.namespace.clone().unwrap(), m);
            }
            let in_flight = seen.values().filter(|m| state(m) == (true, false)).count();
            max_in_flight = max_in_flight.max(in_flight);
            if seen.len() == names.len() && seen.values().all(|m| state(m) == (true, true)) {
                break;
            }
        }
    })
    .await
    .expect("every cluster applied the new template");
    assert_eq!(
        max_in_flight, 1,
        "the template edit reached two clusters at once"
    );
    for name in &names {
        let spoke = ocm_e2e::simulated_spoke(&hub, name).await.unwrap();
        let maps: Api<ConfigMap> = Api::namespaced(spoke, INSTALL_NS);
        wait_for(
            &maps,
            &format!("hello-{name}"),
            "the new template's ConfigMap",
            |m| m.data.as_ref().is_some_and(|d| d["version"] == "v2"),
        )
        .await
        .unwrap();
    }

    // Deleting the ClusterManagementAddOn removes everything.
    cmas.delete(ADDON, &DeleteParams::default()).await.unwrap();
    for name in &names {
        let mcas: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), name);
        wait_gone(&mcas, ADDON).await.unwrap();
        let works: Api<ManifestWork> = Api::namespaced(client.clone(), name);
        wait_gone(&works, "addon-hello-template-deploy-0")
            .await
            .unwrap();
        let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), name);
        wait_gone(
            &bindings,
            "open-cluster-management:hello-template:clusterrole:agent",
        )
        .await
        .unwrap();
        let spoke = ocm_e2e::simulated_spoke(&hub, name).await.unwrap();
        let deployments: Api<Deployment> = Api::namespaced(spoke, INSTALL_NS);
        wait_gone(&deployments, "hello-agent").await.unwrap();
    }
    let shared: Api<RoleBinding> = Api::namespaced(client.clone(), "hello-shared");
    wait_gone(&shared, "open-cluster-management:hello-template:role:agent")
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn template_errors_are_conditions_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, names, _agents) = ocm_e2e::fleet(dir.path(), 1).await.unwrap();
    let client = hub.admin_client();
    let _stop = start_controllers(&client);
    let cluster = &names[0];
    let cmas: Api<ClusterManagementAddOn> = Api::all(client.clone());
    create(
        &cmas,
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
               "kind": "ClusterManagementAddOn", "metadata": {"name": ADDON},
               "spec": {"defaultConfigs": [{"group": "addon.open-cluster-management.io",
                        "resource": "addontemplates", "name": "hello-template"}]}}),
    )
    .await;
    let mcas: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), cluster);
    create(
        &mcas,
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
               "kind": "ManagedClusterAddOn",
               "metadata": {"name": ADDON, "namespace": cluster}, "spec": {}}),
    )
    .await;
    let applied_message = |wanted: &'static str| {
        move |m: &ManagedClusterAddOn| {
            condition(m, "ManifestApplied")
                .is_some_and(|(s, _, msg)| s == "False" && msg.contains(wanted))
        }
    };
    // No template yet.
    wait_addon(
        &mcas,
        ADDON,
        "the missing template named",
        applied_message("AddOnTemplate hello-template does not exist"),
    )
    .await;
    // A template whose signing CA is missing, then with a variable nothing defines.
    // No AddOnDeploymentConfig gives LOG_LEVEL here.
    let spec = template_spec("v1");
    create(
        &templates(&client),
        json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "AddOnTemplate",
               "metadata": {"name": "hello-template"}, "spec": spec}),
    )
    .await;
    wait_addon(
        &mcas,
        ADDON,
        "the missing signing CA named",
        applied_message("the signing CA secret open-cluster-management-hub/hello-ca of custom signer example.com/hello does not exist"),
    )
    .await;
    ensure_namespace(&client, MANAGER_NS).await;
    create_ca_secret(&client).await;
    // As upstream, the undefined variable renders empty and the agent is deployed; the
    // addon's status names the variable and where it is used.
    let mca = wait_addon(&mcas, ADDON, "the undefined variable named", |m| {
        condition(m, "TemplateVariablesDefined")
            .is_some_and(|(s, r, _)| s == "False" && r == "UndefinedVariables")
    })
    .await;
    let (_, _, message) = condition(&mca, "TemplateVariablesDefined").unwrap();
    assert!(
        message.contains("{{LOG_LEVEL}} (in ConfigMap hello-template-ns/hello-{{CLUSTER_NAME}})"),
        "{message}"
    );
    let works: Api<ManifestWork> = Api::namespaced(client.clone(), cluster);
    let work = wait_for(
        &works,
        "addon-hello-template-deploy-0",
        "the agent's work",
        |_| true,
    )
    .await
    .unwrap();
    let config_map = work
        .spec
        .workload
        .manifests
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .find(|m| m["kind"] == "ConfigMap")
        .unwrap();
    assert_eq!(config_map["data"]["level"], "");
    assert_eq!(config_map["data"]["cluster"], cluster.as_str());
    // A template for another addon is refused by name.
    let mut other = template_spec("v1");
    other["addonName"] = json!("someone-else");
    let mut template = templates(&client).get("hello-template").await.unwrap();
    template.data["spec"] = other;
    templates(&client)
        .replace("hello-template", &PostParams::default(), &template)
        .await
        .unwrap();
    wait_for(
        &mcas,
        ADDON,
        "the wrong addon named",
        applied_message(
            "AddOnTemplate hello-template is for addon someone-else, not hello-template",
        ),
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ocm_addon_create_makes_a_working_addon_from_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, names, _agents) = ocm_e2e::fleet(dir.path(), 2).await.unwrap();
    let client = hub.admin_client();
    let _stop = start_controllers(&client);
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    clusters
        .patch(
            &names[0],
            &PatchParams::apply("test").force(),
            &Patch::Apply(json!({"apiVersion": "cluster.open-cluster-management.io/v1",
                "kind": "ManagedCluster", "metadata": {"name": names[0], "labels": {"pick": "me"}}})),
        )
        .await
        .unwrap();
    bind_namespace(&client, "addons", "default").await.unwrap();
    let placements: Api<ocm_api::cluster::v1beta1::Placement> =
        Api::namespaced(client.clone(), "addons");
    create(
        &placements,
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
               "metadata": {"name": "picked", "namespace": "addons"},
               "spec": {"predicates": [{"requiredClusterSelector": {
                   "labelSelector": {"matchLabels": {"pick": "me"}}}}]}}),
    )
    .await;
    let cluster_roles: Api<k8s_openapi::api::rbac::v1::ClusterRole> = Api::all(client.clone());
    create(
        &cluster_roles,
        json!({"metadata": {"name": "hello-reader"},
               "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
    )
    .await;
    let manifests = dir.path().join("manifests");
    std::fs::create_dir(&manifests).unwrap();
    std::fs::write(
        manifests.join("deployment.yaml"),
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: hello-agent
  namespace: hello-create
spec:
  replicas: 1
  selector:
    matchLabels: {app: hello}
  template:
    metadata:
      labels: {app: hello}
    spec:
      containers:
      - name: agent
        image: quay.io/example/hello:v1
        args: ["--cluster={{CLUSTER_NAME}}"]
"#,
    )
    .unwrap();
    std::fs::write(
        manifests.join("namespace-and-config.yaml"),
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: hello-create\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hello\n  namespace: hello-create\n\
         data:\n  cluster: \"{{CLUSTER_NAME}}\"\n",
    )
    .unwrap();
    std::fs::write(manifests.join("README.md"), "not a manifest").unwrap();
    let kubeconfig = hub.admin_kubeconfig.to_string_lossy().into_owned();
    let home = dir.path().join("home");
    let args = [
        "addon",
        "create",
        "hello-create",
        "-f",
        manifests.to_str().unwrap(),
        "--hub-registration",
        "--cluster-role-bind",
        "hello-reader",
        "--placement-ref",
        "addons/picked",
        "--kubeconfig",
        &kubeconfig,
    ];
    let (code, out, err) = tokio::task::spawn_blocking({
        let home = home.clone();
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            ocm_e2e::process::run_ocm(OCM, &home, &args)
        }
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("addontemplate hello-create-0.0.1 created"),
        "{out}"
    );
    assert!(
        out.contains("clustermanagementaddon hello-create created"),
        "{out}"
    );

    // Installed where the placement points, available, with its hub permission.
    let mcas: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), &names[0]);
    let mca = wait_addon(&mcas, "hello-create", "the created addon Available", |m| {
        condition(m, "Available").is_some_and(|(s, _, _)| s == "True")
    })
    .await;
    // Without an AddOnDeploymentConfig the agent stays in its Deployment's namespace.
    assert_eq!(mca.status.unwrap().namespace, "hello-create");
    let spoke = ocm_e2e::simulated_spoke(&hub, &names[0]).await.unwrap();
    let maps: Api<ConfigMap> = Api::namespaced(spoke.clone(), "hello-create");
    let map = wait_for(&maps, "hello", "the rendered ConfigMap", |_| true)
        .await
        .unwrap();
    assert_eq!(map.data.unwrap()["cluster"], names[0]);
    let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), &names[0]);
    let binding = wait_for(
        &bindings,
        "open-cluster-management:hello-create:clusterrole:agent",
        "the agent's hub permission",
        |_| true,
    )
    .await
    .unwrap();
    assert_eq!(binding.role_ref.name, "hello-reader");
    let other: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), &names[1]);
    assert!(other.get_opt("hello-create").await.unwrap().is_none());

    // Run again: left alone without --overwrite; a bad flag is a clear error.
    let (code, out, _) = ocm_e2e::process::run_ocm(OCM, &home, &args);
    assert_eq!(code, 0);
    assert!(out.contains("exists and is left as it is"), "{out}");
    let (code, _, err) = ocm_e2e::process::run_ocm(
        OCM,
        &home,
        &[
            "addon",
            "create",
            "x",
            "-f",
            manifests.to_str().unwrap(),
            "--cluster-role-bind",
            "r",
            "--kubeconfig",
            &kubeconfig,
        ],
    );
    assert_ne!(code, 0);
    assert!(err.contains("needs --hub-registration"), "{err}");
}

/// The agent manifests of the hosted test: everything on the hosting cluster, one object
/// nowhere.
fn hosted_template() -> Value {
    let hosting = json!({"addon.open-cluster-management.io/hosted-manifest-location": "hosting"});
    json!({
        "addonName": "hello-hosted",
        "agentSpec": {"workload": {"manifests": [
            {"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": "hello-hosted-ns", "annotations": hosting}},
            {"apiVersion": "apps/v1", "kind": "Deployment",
             "metadata": {"name": "hello-hosted-agent", "namespace": "hello-hosted-ns",
                          "annotations": hosting},
             "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "hosted"}},
                      "template": {"metadata": {"labels": {"app": "hosted"}},
                                   "spec": {"containers": [{"name": "agent",
                                       "image": "quay.io/example/hello:v1",
                                       "args": ["--managed-cluster={{CLUSTER_NAME}}"]}]}}}},
            {"apiVersion": "batch/v1", "kind": "Job",
             "metadata": {"name": "hello-hosted-cleanup", "namespace": "hello-hosted-ns",
                          "annotations": {
                              "addon.open-cluster-management.io/hosted-manifest-location": "hosting",
                              "addon.open-cluster-management.io/addon-pre-delete": ""}},
             "spec": {"template": {"spec": {"restartPolicy": "Never",
                      "containers": [{"name": "cleanup", "image": "quay.io/example/hello:v1"}]}}}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "hello-hosted-nowhere",
                          "annotations": {"addon.open-cluster-management.io/hosted-manifest-location": "none"}},
             "rules": []}
        ]}},
        "registration": [{"type": "KubeClient"}]
    })
}

/// Joins simulated cluster `options.cluster_name` with its klusterlet hosted on
/// `hosting_spoke`: its registration agent keeps its secrets (and its hosted addons' secrets and
/// Leases) there. Returns the cluster's client and the agent's stop token, once Joined and
/// Available.
async fn join_hosted_cluster(
    hub: &EmbeddedHub,
    hosting_spoke: &kube::Client,
    options: ocm_registration::agent::AgentOptions,
) -> (kube::Client, Shutdown) {
    let name = options.cluster_name.clone();
    let agent_namespace = format!("klusterlet-{name}");
    let spoke = ocm_e2e::simulated_spoke(hub, &name).await.unwrap();
    let bootstrap = ocm_e2e::bootstrap_kubeconfig(hub).await.unwrap();
    ocm::commands::join::prepare_spoke(&spoke, &bootstrap)
        .await
        .unwrap();
    ensure_namespace(hosting_spoke, &agent_namespace).await;
    let secrets: Api<Secret> = Api::namespaced(hosting_spoke.clone(), &agent_namespace);
    create(
        &secrets,
        json!({"metadata": {"name": "bootstrap-hub-kubeconfig", "namespace": agent_namespace},
               "stringData": {"kubeconfig": bootstrap}}),
    )
    .await;
    let agent = ocm_registration::agent::Agent::new(
        spoke.clone(),
        ocm_registration::agent::AgentOptions {
            agent_namespace,
            ..options
        },
    )
    .with_secrets_on(hosting_spoke.clone());
    let stop = Shutdown::new();
    tokio::spawn(agent.run(stop.child()));
    // The hub accepts clusters by itself here; the agent's CSR still needs approving.
    let client = hub.admin_client();
    let accepted =
        tokio::time::timeout(WAIT, ocm::accept::accept_when_asked(&client, &name, false))
            .await
            .expect("the hosted cluster asks to join")
            .unwrap();
    assert_eq!(accepted.approved_csrs.len(), 1);
    let clusters: Api<ManagedCluster> = Api::all(client);
    wait_for(
        &clusters,
        &name,
        "Joined and Available",
        ocm_e2e::joined_and_available,
    )
    .await
    .unwrap();
    (spoke, stop)
}

/// Creates the ClusterClaim a klusterlet reports where its agents run with.
async fn claim_hosting_cluster(spoke: &kube::Client, value: &str) {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(
            "cluster.open-cluster-management.io",
            "v1alpha1",
            "ClusterClaim",
        ),
        "clusterclaims",
    );
    let claims: Api<DynamicObject> = Api::all_with(spoke.clone(), &resource);
    create(
        &claims,
        json!({"apiVersion": "cluster.open-cluster-management.io/v1alpha1", "kind": "ClusterClaim",
               "metadata": {"name": "hosting-cluster.open-cluster-management.io"},
               "spec": {"value": value}}),
    )
    .await;
}

async fn wait_claim(client: &kube::Client, cluster: &str, value: &str) {
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    wait_for(
        &clusters,
        cluster,
        "the hosting-cluster claim reported",
        |c| {
            c.status.as_ref().is_some_and(|s| {
                s.cluster_claims.iter().any(|claim| {
                    claim.name == "hosting-cluster.open-cluster-management.io"
                        && claim.value == value
                })
            })
        },
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosted_addon_lands_on_its_hosting_cluster_and_an_invalid_topology_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // c01 hosts; c02 runs its own klusterlet.
    let (hub, names, _agents) = ocm_e2e::fleet(dir.path(), 2).await.unwrap();
    let (hosting, own) = (names[0].clone(), names[1].clone());
    let client = hub.admin_client();
    let _stop = start_controllers(&client);
    let hosting_spoke = ocm_e2e::simulated_spoke(&hub, &hosting).await.unwrap();
    let own_spoke = ocm_e2e::simulated_spoke(&hub, &own).await.unwrap();

    // Cluster "hosted" runs its klusterlet on c01 (Hosted mode).
    let (hosted_spoke, agent_stop) =
        join_hosted_cluster(&hub, &hosting_spoke, ocm_e2e::fast_agent_options("hosted")).await;
    // Each klusterlet reports where it runs.
    claim_hosting_cluster(&hosted_spoke, &hosting).await;
    claim_hosting_cluster(&own_spoke, &own).await;
    wait_claim(&client, "hosted", &hosting).await;
    wait_claim(&client, &own, &own).await;

    create(
        &templates(&client),
        json!({"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "AddOnTemplate",
               "metadata": {"name": "hello-hosted"}, "spec": hosted_template()}),
    )
    .await;
    let cmas: Api<ClusterManagementAddOn> = Api::all(client.clone());
    create(
        &cmas,
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
               "kind": "ClusterManagementAddOn", "metadata": {"name": "hello-hosted"},
               "spec": {"defaultConfigs": [{"group": "addon.open-cluster-management.io",
                        "resource": "addontemplates", "name": "hello-hosted"}]}}),
    )
    .await;
    let enable_hosted_on = |cluster: String| {
        let client = client.clone();
        let hosting = hosting.clone();
        async move {
            let mcas: Api<ManagedClusterAddOn> = Api::namespaced(client, &cluster);
            create(
                &mcas,
                json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
                       "kind": "ManagedClusterAddOn",
                       "metadata": {"name": "hello-hosted", "namespace": cluster,
                                    "annotations": {"addon.open-cluster-management.io/hosting-cluster-name": hosting}},
                       "spec": {}}),
            )
            .await;
            mcas
        }
    };

    // Valid: hosted on the cluster its klusterlet runs on.
    let mcas = enable_hosted_on("hosted".to_owned()).await;
    let mca = wait_addon(&mcas, "hello-hosted", "the hosted addon Available", |m| {
        condition(m, "Available").is_some_and(|(s, _, _)| s == "True")
    })
    .await;
    let validity = condition(&mca, "HostingClusterValidity").unwrap();
    assert_eq!(
        (validity.0.as_str(), validity.1.as_str()),
        ("True", "HostingClusterValid")
    );
    let finalizers = mca.metadata.finalizers.unwrap_or_default();
    for finalizer in [
        "addon.open-cluster-management.io/hosting-manifests-cleanup",
        "addon.open-cluster-management.io/hosting-addon-pre-delete",
    ] {
        assert!(finalizers.contains(&finalizer.to_owned()), "{finalizers:?}");
    }
    let hosting_works: Api<ManifestWork> = Api::namespaced(client.clone(), &hosting);
    let work = hosting_works
        .get("addon-hello-hosted-deploy-hosting-hosted-0")
        .await
        .unwrap();
    assert_eq!(
        work.metadata.labels.unwrap()["open-cluster-management.io/addon-namespace"],
        "hosted"
    );
    let manifests = &work.spec.workload.manifests;
    assert_eq!(manifests.len(), 2, "the `none` manifest goes nowhere");
    let own_works: Api<ManifestWork> = Api::namespaced(client.clone(), "hosted");
    assert!(
        own_works
            .get_opt("addon-hello-hosted-deploy-0")
            .await
            .unwrap()
            .is_none()
    );
    // The agent runs on the hosting cluster, with its hub credentials there.
    let deployments: Api<Deployment> = Api::namespaced(hosting_spoke.clone(), "hello-hosted-ns");
    let deployment = wait_for(
        &deployments,
        "hello-hosted-agent",
        "the hosted agent",
        |_| true,
    )
    .await
    .unwrap();
    assert_eq!(
        deployment.spec.unwrap().template.spec.unwrap().containers[0]
            .args
            .as_ref()
            .unwrap()[0],
        "--managed-cluster=hosted"
    );
    let agent_secrets: Api<Secret> = Api::namespaced(hosting_spoke.clone(), "hello-hosted-ns");
    wait_for(
        &agent_secrets,
        "hello-hosted-hub-kubeconfig",
        "the hosted agent's hub credentials on the hosting cluster",
        |s| {
            s.data
                .as_ref()
                .is_some_and(|d| d.contains_key("kubeconfig"))
        },
    )
    .await
    .unwrap();
    let on_target: Api<Secret> = Api::namespaced(hosted_spoke.clone(), "hello-hosted-ns");
    assert!(
        on_target
            .get_opt("hello-hosted-hub-kubeconfig")
            .await
            .unwrap()
            .is_none()
    );

    // Invalid: c02's klusterlet runs on c02, so an agent hosted on c01 could never be observed.
    let refused = enable_hosted_on(own.clone()).await;
    let mca = wait_addon(&refused, "hello-hosted", "the topology refused", |m| {
        condition(m, "HostingClusterValidity").is_some_and(|(s, _, _)| s == "False")
    })
    .await;
    let (_, reason, message) = condition(&mca, "HostingClusterValidity").unwrap();
    assert_eq!(reason, "HostingClusterMismatch");
    assert!(
        message.contains(&format!("runs on cluster {own}")),
        "{message}"
    );
    assert!(
        hosting_works
            .get_opt(&format!("addon-hello-hosted-deploy-hosting-{own}-0"))
            .await
            .unwrap()
            .is_none()
    );
    let own_cluster_works: Api<ManifestWork> = Api::namespaced(client.clone(), &own);
    assert!(
        own_cluster_works
            .get_opt("addon-hello-hosted-deploy-0")
            .await
            .unwrap()
            .is_none()
    );

    // Removing the hosted addon runs its hook on the hosting cluster, then removes its agent
    // from there.
    let jobs: Api<k8s_openapi::api::batch::v1::Job> =
        Api::namespaced(hosting_spoke.clone(), "hello-hosted-ns");
    let hook_ran = tokio::spawn(async move {
        wait_for(
            &jobs,
            "hello-hosted-cleanup",
            "the hosted pre-delete Job",
            |job| job.status.as_ref().and_then(|s| s.succeeded).unwrap_or(0) >= 1,
        )
        .await
        .is_ok()
    });
    mcas.delete("hello-hosted", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&mcas, "hello-hosted").await.unwrap();
    assert!(
        hook_ran.await.unwrap(),
        "the hosted pre-delete hook never ran"
    );
    wait_gone(
        &hosting_works,
        "addon-hello-hosted-pre-delete-hosting-hosted",
    )
    .await
    .unwrap();
    wait_gone(&hosting_works, "addon-hello-hosted-deploy-hosting-hosted-0")
        .await
        .unwrap();
    wait_gone(&deployments, "hello-hosted-agent").await.unwrap();
    agent_stop.cancel();
}

/// A trait addon in hosted mode with Lease health: nothing to deploy, its agent's Lease lives
/// where the agent runs.
struct LeaseHosted {
    options: ocm_addon_framework::AddonOptions,
}

#[async_trait::async_trait]
impl ocm_addon_framework::AgentAddon for LeaseHosted {
    fn options(&self) -> &ocm_addon_framework::AddonOptions {
        &self.options
    }

    async fn manifests(
        &self,
        _cluster: &ManagedCluster,
        _addon: &ManagedClusterAddOn,
        _configs: &ocm_addon_framework::AddonConfigs,
    ) -> Result<Vec<Value>, ocm_addon_framework::AddonError> {
        Ok(Vec::new())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosted_addons_lease_is_observed_where_its_agent_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, names, _agents) = ocm_e2e::fleet(dir.path(), 1).await.unwrap();
    let hosting = names[0].clone();
    let client = hub.admin_client();
    let hosting_spoke = ocm_e2e::simulated_spoke(&hub, &hosting).await.unwrap();
    let (hosted_spoke, agent_stop) = join_hosted_cluster(
        &hub,
        &hosting_spoke,
        ocm_registration::agent::AgentOptions {
            addon_lease_check_period: std::time::Duration::from_millis(500),
            ..ocm_e2e::fast_agent_options("leased")
        },
    )
    .await;
    let stop = Shutdown::new();
    let addon = LeaseHosted {
        options: ocm_addon_framework::AddonOptions {
            hosted_mode: true,
            ..ocm_addon_framework::AddonOptions::new("leased")
        },
    };
    tokio::spawn(
        ocm_addon_framework::manager::AddonManager::new(client.clone())
            .with_addon(std::sync::Arc::new(addon))
            .run(stop.child()),
    );
    let cmas: Api<ClusterManagementAddOn> = Api::all(client.clone());
    create(
        &cmas,
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
               "kind": "ClusterManagementAddOn", "metadata": {"name": "leased"}, "spec": {}}),
    )
    .await;
    let mcas: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), "leased");
    create(
        &mcas,
        json!({"apiVersion": "addon.open-cluster-management.io/v1beta1",
               "kind": "ManagedClusterAddOn",
               "metadata": {"name": "leased", "namespace": "leased",
                            "annotations": {"addon.open-cluster-management.io/hosting-cluster-name": hosting}},
               "spec": {}}),
    )
    .await;
    // No Lease anywhere yet: Unknown.
    wait_addon(&mcas, "leased", "no Lease found", |m| {
        condition(m, "Available")
            .is_some_and(|(s, r, _)| s == "Unknown" && r == "ManagedClusterAddOnLeaseNotFound")
    })
    .await;
    // The agent (here: the test) renews its Lease on the hosting cluster, where it runs.
    let namespace = "open-cluster-management-agent-addon";
    ensure_namespace(&hosting_spoke, namespace).await;
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(hosting_spoke.clone(), namespace);
    create(
        &leases,
        json!({"metadata": {"name": "leased", "namespace": namespace},
               "spec": {"renewTime": jiff::Timestamp::now().to_string()}}),
    )
    .await;
    let mca = wait_addon(
        &mcas,
        "leased",
        "the hosting cluster's Lease observed",
        |m| condition(m, "Available").is_some_and(|(s, _, _)| s == "True"),
    )
    .await;
    assert_eq!(
        condition(&mca, "Available").unwrap().1,
        "ManagedClusterAddOnLeaseUpdated"
    );
    // The managed cluster itself holds no such Lease.
    let on_target: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(hosted_spoke, namespace);
    assert!(on_target.get_opt("leased").await.unwrap().is_none());
    stop.cancel();
    agent_stop.cancel();
}
