//! The hub's admission policies hold the same on every hub: one suite of cases run twice —
//! against the embedded hub, where the policies are in-process hooks, and against a plain
//! `ocm apiserver` process managed by an `ocm hub --kubeconfig` process, where they are reached
//! only through the admission webhooks that hub registered. Every case must be decided the
//! same way, with the same code and reason (the webhook path adds kube's
//! `admission webhook "…" denied the request: ` in front of the same message).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_e2e::wait_for;
use ocm_runtime::kubeconfig::{KubeconfigAuth, KubeconfigSpec};
use serde_json::{Value, json};

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");

/// How a request ended: `None` when it was allowed.
#[derive(Clone, Debug, PartialEq)]
struct Refusal {
    code: u16,
    reason: String,
    message: String,
}

type Outcome = Option<Refusal>;

fn outcome<T>(result: Result<T, kube::Error>) -> Outcome {
    match result {
        Ok(_) => None,
        Err(kube::Error::Api(status)) => Some(Refusal {
            code: status.code,
            reason: status.reason.clone(),
            message: status.message.clone(),
        }),
        Err(other) => panic!("unexpected client error: {other}"),
    }
}

/// A client of the hub behind `kubeconfig` impersonating `user` in `groups`.
async fn as_user(kubeconfig: &Path, user: &str, groups: &[&str]) -> kube::Client {
    let text = std::fs::read_to_string(kubeconfig).unwrap();
    let mut parsed = ocm_runtime::kubeconfig::parse(&text).unwrap();
    for named in &mut parsed.auth_infos {
        if let Some(auth) = named.auth_info.as_mut() {
            auth.impersonate = Some(user.to_owned());
            auth.impersonate_groups = Some(groups.iter().map(|g| (*g).to_owned()).collect());
        }
    }
    ocm_runtime::kubeconfig::client_from_kubeconfig(parsed)
        .await
        .unwrap()
}

/// A client of the hub behind `kubeconfig` presenting bearer `token`.
async fn with_token(kubeconfig: &Path, token: &str) -> kube::Client {
    let text = std::fs::read_to_string(kubeconfig).unwrap();
    let server =
        ocm_runtime::kubeconfig::current_server(&ocm_runtime::kubeconfig::parse(&text).unwrap())
            .unwrap();
    let yaml = ocm_runtime::kubeconfig::render(&KubeconfigSpec {
        server,
        auth: KubeconfigAuth::Token(token.to_owned()),
        context: "t".into(),
        user: "t".into(),
        namespace: None,
    });
    ocm_runtime::kubeconfig::client_from_yaml(&yaml)
        .await
        .unwrap()
}

fn api(
    client: &kube::Client,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    ns: Option<&str>,
) -> Api<DynamicObject> {
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

async fn apply(client: &kube::Client, value: Value) {
    let group_version = value["apiVersion"].as_str().unwrap().to_owned();
    let (group, version) = group_version
        .split_once('/')
        .unwrap_or(("", &group_version));
    let kind = value["kind"].as_str().unwrap().to_owned();
    let plural = format!("{}s", kind.to_lowercase());
    let ns = value["metadata"]["namespace"].as_str().map(str::to_owned);
    let name = value["metadata"]["name"].as_str().unwrap().to_owned();
    api(client, group, version, &kind, &plural, ns.as_deref())
        .patch(
            &name,
            &kube::api::PatchParams::apply("hub-admission-test").force(),
            &kube::api::Patch::Apply(&value),
        )
        .await
        .unwrap_or_else(|e| panic!("applying {kind} {name}: {e}"));
}

fn work(name: &str, extra_spec: Value, config_data: &str) -> Value {
    let mut spec = json!({"workload": {"manifests": [{
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "default"},
        "data": {"blob": config_data},
    }]}});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra_spec.as_object()) {
        spec.extend(extra.clone());
    }
    json!({"apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
           "metadata": {"name": name, "namespace": "c1"}, "spec": spec})
}

/// Runs every case against the hub behind `kubeconfig`; returns (case, outcome) in order.
async fn run_cases(
    kubeconfig: &Path,
    token: &ocm::bootstrap::BootstrapToken,
) -> Vec<(&'static str, Outcome)> {
    let admin = ocm_runtime::kubeconfig::client_from_file(kubeconfig)
        .await
        .unwrap();
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    let mut results = Vec::new();

    // A bootstrap token holder may ask to join, not accept itself.
    ocm::bootstrap::init_with_token(&admin, token, None)
        .await
        .unwrap();
    let bootstrap = with_token(kubeconfig, &token.to_string()).await;
    let mcs = api(
        &bootstrap,
        "cluster.open-cluster-management.io",
        "v1",
        "ManagedCluster",
        "managedclusters",
        None,
    );
    let cluster = |name: &str, accepted: bool| {
        object(
            json!({"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
                      "metadata": {"name": name}, "spec": {"hubAcceptsClient": accepted}}),
        )
    };
    results.push((
        "bootstrap identity creates an accepted ManagedCluster",
        outcome(
            mcs.create(&PostParams::default(), &cluster("boot1", true))
                .await,
        ),
    ));
    results.push((
        "bootstrap identity creates a ManagedCluster asking to join",
        outcome(
            mcs.create(&PostParams::default(), &cluster("boot2", false))
                .await,
        ),
    ));

    // The hub admin accepts c1; the hub grants its agent rights and taints it unreachable
    // (no lease yet).
    let admin_mcs = api(
        &admin,
        "cluster.open-cluster-management.io",
        "v1",
        "ManagedCluster",
        "managedclusters",
        None,
    );
    results.push((
        "hub admin creates an accepted ManagedCluster",
        outcome(
            admin_mcs
                .create(&PostParams::default(), &cluster("c1", true))
                .await,
        ),
    ));
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    wait_for(
        &roles,
        "open-cluster-management:managedcluster:c1",
        "agent role of c1",
        |role| {
            role.rules
                .iter()
                .flatten()
                .any(|r| r.verbs.iter().any(|v| v == "update"))
        },
    )
    .await
    .unwrap();
    let bindings: Api<k8s_openapi::api::rbac::v1::ClusterRoleBinding> = Api::all(admin.clone());
    wait_for(
        &bindings,
        "open-cluster-management:managedcluster:c1",
        "agent binding of c1",
        |_| true,
    )
    .await
    .unwrap();
    wait_for(&clusters, "c1", "unreachable taint on c1", |c| {
        c.spec
            .taints
            .iter()
            .any(|t| t.key == "cluster.open-cluster-management.io/unreachable")
    })
    .await
    .unwrap();
    let agent = as_user(
        kubeconfig,
        "system:open-cluster-management:c1:agent1",
        &[
            "system:open-cluster-management:c1",
            "system:open-cluster-management:managed-clusters",
            "system:authenticated",
        ],
    )
    .await;
    let agent_mcs = api(
        &agent,
        "cluster.open-cluster-management.io",
        "v1",
        "ManagedCluster",
        "managedclusters",
        None,
    );
    // The agent writes with update (its role has no patch), as upstream's agent does, and
    // reads again when the hub wrote in between (409), as an agent does.
    let agent_replace = |change: fn(&mut Value)| {
        let agent_mcs = agent_mcs.clone();
        async move {
            loop {
                let got = agent_mcs.get("c1").await.unwrap();
                let mut value = serde_json::to_value(&got).unwrap();
                change(&mut value);
                let result = agent_mcs
                    .replace("c1", &PostParams::default(), &object(value))
                    .await;
                if !matches!(&result, Err(kube::Error::Api(s)) if s.code == 409) {
                    return outcome(result);
                }
            }
        }
    };
    results.push((
        "agent changes hubAcceptsClient of its cluster",
        agent_replace(|v| v["spec"]["hubAcceptsClient"] = json!(false)).await,
    ));
    results.push((
        "agent removes the hub's taints from its cluster",
        agent_replace(|v| v["spec"]["taints"] = json!([])).await,
    ));
    results.push((
        "agent updates its client configs",
        agent_replace(|v| {
            v["spec"]["managedClusterClientConfigs"] = json!([{"url": "https://c1.example:6443"}]);
        })
        .await,
    ));
    // Binding a set needs managedclustersets/bind.
    apply(
        &admin,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
    )
    .await;
    apply(&admin, json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2", "kind": "ManagedClusterSet",
                         "metadata": {"name": "prod"}, "spec": {}})).await;
    apply(
        &admin,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "dev", "namespace": "team"},
        "rules": [{"apiGroups": ["cluster.open-cluster-management.io"],
                   "resources": ["managedclustersetbindings"], "verbs": ["create", "get"]}]}),
    )
    .await;
    apply(
        &admin,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "dev", "namespace": "team"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "dev"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "dev"}]}),
    )
    .await;
    let dev = as_user(kubeconfig, "dev", &["system:authenticated"]).await;
    let dev_bindings = api(
        &dev,
        "cluster.open-cluster-management.io",
        "v1beta2",
        "ManagedClusterSetBinding",
        "managedclustersetbindings",
        Some("team"),
    );
    let binding = object(
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2",
        "kind": "ManagedClusterSetBinding", "metadata": {"name": "prod", "namespace": "team"},
        "spec": {"clusterSet": "prod"}}),
    );
    results.push((
        "user without managedclustersets/bind binds a set",
        outcome(dev_bindings.create(&PostParams::default(), &binding).await),
    ));
    apply(&admin, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "bind-prod"},
        "rules": [{"apiGroups": ["cluster.open-cluster-management.io"],
                   "resources": ["managedclustersets/bind"], "resourceNames": ["prod"], "verbs": ["create"]}]})).await;
    apply(&admin, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "dev-bind-prod"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "bind-prod"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "dev"}]})).await;
    results.push((
        "user with managedclustersets/bind binds the set",
        outcome(dev_bindings.create(&PostParams::default(), &binding).await),
    ));

    // Executors need execute-as; manifests have a size limit.
    apply(
        &admin,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "dev-works", "namespace": "c1"},
        "rules": [{"apiGroups": ["work.open-cluster-management.io"],
                   "resources": ["manifestworks"], "verbs": ["create", "get"]}]}),
    )
    .await;
    apply(
        &admin,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "dev-works", "namespace": "c1"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "dev-works"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "dev"}]}),
    )
    .await;
    let executor = json!({"executor": {"subject": {"type": "ServiceAccount",
        "serviceAccount": {"namespace": "apps", "name": "deployer"}}}});
    let dev_works = api(
        &dev,
        "work.open-cluster-management.io",
        "v1",
        "ManifestWork",
        "manifestworks",
        Some("c1"),
    );
    results.push((
        "ManifestWork whose executor the requester may not execute-as",
        outcome(
            dev_works
                .create(
                    &PostParams::default(),
                    &object(work("exec1", executor.clone(), "x")),
                )
                .await,
        ),
    ));
    apply(&admin, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "execute-as-deployer"},
        "rules": [{"apiGroups": ["work.open-cluster-management.io"], "resources": ["manifestworks"],
                   "resourceNames": ["system:serviceaccount:apps:deployer"], "verbs": ["execute-as"]}]})).await;
    apply(&admin, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "dev-execute-as", "namespace": "c1"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "execute-as-deployer"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "dev"}]})).await;
    results.push((
        "ManifestWork whose executor the requester may execute-as",
        outcome(
            dev_works
                .create(
                    &PostParams::default(),
                    &object(work("exec2", executor, "x")),
                )
                .await,
        ),
    ));
    let admin_works = api(
        &admin,
        "work.open-cluster-management.io",
        "v1",
        "ManifestWork",
        "manifestworks",
        Some("c1"),
    );
    results.push((
        "oversize ManifestWork",
        outcome(
            admin_works
                .create(
                    &PostParams::default(),
                    &object(work("big", json!({}), &"x".repeat(520_000))),
                )
                .await,
        ),
    ));
    results.push((
        "ManifestWork within the size limit",
        outcome(
            admin_works
                .create(
                    &PostParams::default(),
                    &object(work("small", json!({}), &"x".repeat(1000))),
                )
                .await,
        ),
    ));
    results
}

/// The addon kinds read the same through v1alpha1 and v1beta1 — on get, list and watch, and
/// whichever version wrote them — whether the hub converts in-process or by webhook.
async fn addon_versions_agree(kubeconfig: &Path) {
    use futures::{StreamExt, TryStreamExt};
    let admin = ocm_runtime::kubeconfig::client_from_file(kubeconfig)
        .await
        .unwrap();
    let group = "addon.open-cluster-management.io";
    let cma = |version| {
        api(
            &admin,
            group,
            version,
            "ClusterManagementAddOn",
            "clustermanagementaddons",
            None,
        )
    };
    let mca = |version| {
        api(
            &admin,
            group,
            version,
            "ManagedClusterAddOn",
            "managedclusteraddons",
            Some("c1"),
        )
    };
    // Watch through v1alpha1 before writing through v1beta1.
    let watch = cma("v1alpha1")
        .watch(&kube::api::WatchParams::default(), "0")
        .await
        .unwrap();
    cma("v1beta1")
        .create(&PostParams::default(), &object(json!({
            "apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ClusterManagementAddOn",
            "metadata": {"name": "hello"},
            "spec": {"defaultConfigs": [{"group": group, "resource": "addondeploymentconfigs",
                                         "namespace": "team", "name": "hello-config"}]}})))
        .await
        .unwrap();
    let alpha = cma("v1alpha1").get("hello").await.unwrap();
    assert_eq!(
        alpha
            .data
            .pointer("/spec/supportedConfigs/0/defaultConfig/name"),
        Some(&json!("hello-config")),
        "{alpha:?}"
    );
    let listed = cma("v1alpha1").list(&Default::default()).await.unwrap();
    assert!(listed.items.iter().any(|i| {
        i.data
            .pointer("/spec/supportedConfigs/0/defaultConfig/namespace")
            == Some(&json!("team"))
    }));
    let listed = cma("v1beta1").list(&Default::default()).await.unwrap();
    assert!(
        listed
            .items
            .iter()
            .any(|i| i.data.pointer("/spec/defaultConfigs/0/name") == Some(&json!("hello-config")))
    );
    let added = tokio::time::timeout(
        ocm_e2e::WAIT,
        watch
            .try_filter_map(|event| async move {
                Ok(match event {
                    kube::api::WatchEvent::Added(o)
                        if o.metadata.name.as_deref() == Some("hello") =>
                    {
                        Some(o)
                    }
                    _ => None,
                })
            })
            .boxed()
            .next(),
    )
    .await
    .unwrap()
    .unwrap()
    .unwrap();
    assert_eq!(
        added.types.as_ref().map(|t| t.api_version.as_str()),
        Some("addon.open-cluster-management.io/v1alpha1")
    );
    assert_eq!(
        added
            .data
            .pointer("/spec/supportedConfigs/0/defaultConfig/name"),
        Some(&json!("hello-config"))
    );

    mca("v1alpha1")
        .create(&PostParams::default(), &object(json!({
            "apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ManagedClusterAddOn",
            "metadata": {"name": "hello", "namespace": "c1"},
            "spec": {"installNamespace": "hello-agent"}})))
        .await
        .unwrap();
    let beta = mca("v1beta1").get("hello").await.unwrap();
    assert_eq!(
        beta.metadata
            .annotations
            .unwrap_or_default()
            .get(ocm_api::addon::names::annotations::V1ALPHA1_INSTALL_NAMESPACE),
        Some(&"hello-agent".to_owned())
    );
    assert!(beta.data.pointer("/spec/installNamespace").is_none());
}

/// Which cases must be refused, and with which code.
const EXPECTED: &[(&str, Option<u16>)] = &[
    (
        "bootstrap identity creates an accepted ManagedCluster",
        Some(403),
    ),
    (
        "bootstrap identity creates a ManagedCluster asking to join",
        None,
    ),
    ("hub admin creates an accepted ManagedCluster", None),
    ("agent changes hubAcceptsClient of its cluster", Some(403)),
    ("agent removes the hub's taints from its cluster", Some(403)),
    ("agent updates its client configs", None),
    (
        "user without managedclustersets/bind binds a set",
        Some(403),
    ),
    ("user with managedclustersets/bind binds the set", None),
    (
        "ManifestWork whose executor the requester may not execute-as",
        Some(400),
    ),
    (
        "ManifestWork whose executor the requester may execute-as",
        None,
    ),
    ("oversize ManifestWork", Some(400)),
    ("ManifestWork within the size limit", None),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_policies_hold_in_process_and_through_webhooks() {
    let dir = tempfile::tempdir().unwrap();
    let embedded = ocm_e2e::start_fast_hub(&dir.path().join("embedded"))
        .await
        .unwrap();
    // One token for both hubs, so that the messages naming its user compare equal.
    let token = ocm::bootstrap::BootstrapToken::generate().unwrap();
    let in_process = run_cases(&embedded.admin_kubeconfig, &token).await;
    addon_versions_agree(&embedded.admin_kubeconfig).await;
    embedded.stop().await;

    let real = ocm_e2e::process::ManagedApiserver::start(OCM, &dir.path().join("real"));
    let through_webhooks = run_cases(&real.kubeconfig, &token).await;
    addon_versions_agree(&real.kubeconfig).await;
    real.stop();

    assert_eq!(in_process.len(), EXPECTED.len());
    for (((case, embedded), (_, webhook)), (expected_case, expected)) in
        in_process.iter().zip(&through_webhooks).zip(EXPECTED)
    {
        assert_eq!(case, expected_case);
        assert_eq!(
            embedded.as_ref().map(|r| r.code),
            *expected,
            "{case} on the embedded hub: {embedded:?}"
        );
        assert_eq!(
            webhook.as_ref().map(|r| r.code),
            *expected,
            "{case} through webhooks: {webhook:?}"
        );
        if let (Some(embedded), Some(webhook)) = (embedded, webhook) {
            assert_eq!(embedded.reason, webhook.reason, "{case}");
            assert!(
                webhook.message.starts_with("admission webhook \"")
                    && webhook
                        .message
                        .ends_with(&format!("denied the request: {}", embedded.message)),
                "{case}: through webhooks {:?}, in process {:?}",
                webhook.message,
                embedded.message
            );
        }
    }
}

/// kube-apiserver authorizes against an acknowledged RBAC or token write within milliseconds;
/// the embedded server must do so for the very next request, or scripts that run `ocm init`
/// and `ocm join` back to back fail at random.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acknowledged_rbac_or_token_write_counts_for_the_next_request() {
    let dir = tempfile::tempdir().unwrap();
    let hub = ocm_e2e::start_fast_hub(dir.path()).await.unwrap();
    let admin = hub.admin_client();
    for round in 0..25 {
        let token = ocm::bootstrap::BootstrapToken::generate().unwrap();
        ocm::bootstrap::init_with_token(&admin, &token, None)
            .await
            .unwrap();
        let bootstrap = with_token(&hub.admin_kubeconfig, &token.to_string()).await;
        let csrs: Api<k8s_openapi::api::certificates::v1::CertificateSigningRequest> =
            Api::all(bootstrap);
        csrs.list(&Default::default())
            .await
            .unwrap_or_else(|e| panic!("round {round}: new token refused: {e}"));

        let user = format!("reader-{round}");
        let reader = as_user(&hub.admin_kubeconfig, &user, &["system:authenticated"]).await;
        let as_reader: Api<k8s_openapi::api::core::v1::ConfigMap> =
            Api::namespaced(reader, "default");
        apply(
            &admin,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": user, "namespace": "default"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]}),
        )
        .await;
        apply(
            &admin,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": user, "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": user},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}),
        )
        .await;
        as_reader
            .list(&Default::default())
            .await
            .unwrap_or_else(|e| panic!("round {round}: new binding not honoured: {e}"));
        let bindings: Api<k8s_openapi::api::rbac::v1::RoleBinding> =
            Api::namespaced(admin.clone(), "default");
        bindings.delete(&user, &Default::default()).await.unwrap();
        let refused = as_reader.list(&Default::default()).await;
        assert!(
            matches!(&refused, Err(kube::Error::Api(s)) if s.code == 403),
            "round {round}: deleted binding still honoured: {refused:?}"
        );
    }
    hub.stop().await;
}

/// `ocm hub webhook --install` alone (no hub controllers, as when the webhook server is its
/// own Deployment) registers the CRDs' conversion and both webhook configurations, and the
/// API server then defaults and refuses through it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_server_alone_defaults_refuses_and_converts() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let (apiserver, kubeconfig) = ocm_e2e::process::start_apiserver(OCM, home, &[]);
    let webhook = ocm_e2e::process::Process::spawn(
        OCM,
        home,
        &[
            "hub",
            "webhook",
            "--install",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--data-dir",
            home.join("webhook").to_str().unwrap(),
            "--webhook-listen",
            "127.0.0.1:0",
        ],
    );
    webhook.wait_line("ocm hub webhook serving at");
    let admin = ocm_runtime::kubeconfig::client_from_file(&kubeconfig)
        .await
        .unwrap();
    // Mutating: a cluster without a set goes into `default`.
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    let created = clusters
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "c1"}, "spec": {}})).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        created.metadata.labels.unwrap()["cluster.open-cluster-management.io/clusterset"],
        "default"
    );
    // Validating: accepting needs the accept right, which this user lacks.
    apply(
        &admin,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "cluster-creator"},
               "rules": [{"apiGroups": ["cluster.open-cluster-management.io"],
                          "resources": ["managedclusters"], "verbs": ["create", "get"]}]}),
    )
    .await;
    apply(
        &admin,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "cluster-creator"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "cluster-creator"},
               "subjects": [{"kind": "User", "name": "creator",
                             "apiGroup": "rbac.authorization.k8s.io"}]}),
    )
    .await;
    let creator = as_user(&kubeconfig, "creator", &["system:authenticated"]).await;
    let refused = outcome(
        Api::<ManagedCluster>::all(creator)
            .create(
                &PostParams::default(),
                &serde_json::from_value(
                    json!({"metadata": {"name": "c2"}, "spec": {"hubAcceptsClient": true}}),
                )
                .unwrap(),
            )
            .await,
    )
    .expect("accepting without the accept right is refused");
    assert_eq!(refused.code, 403, "{refused:?}");
    assert!(
        refused.message.starts_with("admission webhook \""),
        "{refused:?}"
    );
    // Conversion: both addon versions read the same objects (no registration controller
    // here to make the cluster namespace).
    apply(
        &admin,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c1"}}),
    )
    .await;
    addon_versions_agree(&kubeconfig).await;
    webhook.stop();
    apiserver.stop();
}

/// With the hub work gate `NilExecutorValidating`, a ManifestWork without an executor is
/// checked as if its executor were the work agent's default service account — on the embedded
/// hub (`EmbeddedHubOptions::work_gates`, `ocm hub --feature-gates`) and through `ocm hub
/// webhook --feature-gates` alike: 400 with upstream's message until the requester may
/// `execute-as` `system:serviceaccount::klusterlet-work-sa`. Without the gate, no check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nil_executor_validating_checks_works_without_an_executor() {
    /// Creates a work without executor as `dev`: before and after dev may execute-as the
    /// default executor.
    async fn cases(kubeconfig: &Path) -> (Outcome, Outcome) {
        let admin = ocm_runtime::kubeconfig::client_from_file(kubeconfig)
            .await
            .unwrap();
        apply(
            &admin,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "c1"}}),
        )
        .await;
        apply(
            &admin,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "dev-works", "namespace": "c1"},
            "rules": [{"apiGroups": ["work.open-cluster-management.io"],
                       "resources": ["manifestworks"], "verbs": ["create", "get"]}]}),
        )
        .await;
        apply(
            &admin,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "dev-works", "namespace": "c1"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "dev-works"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "dev"}]}),
        )
        .await;
        let dev = as_user(kubeconfig, "dev", &["system:authenticated"]).await;
        let works = api(
            &dev,
            "work.open-cluster-management.io",
            "v1",
            "ManifestWork",
            "manifestworks",
            Some("c1"),
        );
        let before = outcome(
            works
                .create(
                    &PostParams::default(),
                    &object(work("nil1", json!({}), "x")),
                )
                .await,
        );
        apply(&admin, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "default-executor", "namespace": "c1"},
            "rules": [{"apiGroups": ["work.open-cluster-management.io"], "resources": ["manifestworks"],
                       "resourceNames": ["system:serviceaccount::klusterlet-work-sa"],
                       "verbs": ["execute-as"]}]})).await;
        apply(&admin, json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "dev-default-executor", "namespace": "c1"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "default-executor"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "dev"}]})).await;
        let after = outcome(
            works
                .create(
                    &PostParams::default(),
                    &object(work("nil2", json!({}), "x")),
                )
                .await,
        );
        (before, after)
    }
    let message = "user dev cannot manipulate the Manifestwork with executor /klusterlet-work-sa in namespace c1";

    let dir = tempfile::tempdir().unwrap();
    let embedded = ocm::embedded::EmbeddedHub::start(ocm::embedded::EmbeddedHubOptions {
        listen: ([127, 0, 0, 1], 0).into(),
        hub: ocm_e2e::fast_hub_options(),
        work_gates: ocm_work::gates::HubWorkGates::parse(&["NilExecutorValidating=true"]).unwrap(),
        ..ocm::embedded::EmbeddedHubOptions::new(dir.path().join("embedded"))
    })
    .await
    .unwrap();
    let (before, after) = cases(&embedded.admin_kubeconfig).await;
    let refused = before.expect("refused without execute-as on the default executor");
    assert_eq!((refused.code, refused.message.as_str()), (400, message));
    assert_eq!(after, None);
    embedded.stop().await;

    let home = dir.path().join("real");
    std::fs::create_dir_all(&home).unwrap();
    let (apiserver, kubeconfig) = ocm_e2e::process::start_apiserver(OCM, &home, &[]);
    let webhook = ocm_e2e::process::Process::spawn(
        OCM,
        &home,
        &[
            "hub",
            "webhook",
            "--install",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--data-dir",
            home.join("webhook").to_str().unwrap(),
            "--webhook-listen",
            "127.0.0.1:0",
            "--feature-gates=NilExecutorValidating=true",
        ],
    );
    webhook.wait_line("ocm hub webhook serving at");
    let (before, after) = cases(&kubeconfig).await;
    let refused = before.expect("refused through the webhook");
    assert_eq!(refused.code, 400, "{refused:?}");
    assert!(
        refused
            .message
            .ends_with(&format!("denied the request: {message}")),
        "{refused:?}"
    );
    assert_eq!(after, None);
    webhook.stop();
    apiserver.stop();

    // Without the gate a work without executor needs nothing more.
    let plain = ocm_e2e::start_fast_hub(&dir.path().join("plain"))
        .await
        .unwrap();
    let (before, _) = cases(&plain.admin_kubeconfig).await;
    assert_eq!(before, None);
    plain.stop().await;
}
