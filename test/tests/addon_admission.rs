//! ManagedClusterAddOn admission: an addon agent's own credentials (a client certificate for
//! the subject the addon framework registers, issued by the hub's signer) write its own
//! status, and get a clear 403 for another addon's object, another cluster's object, its
//! spec and the framework's conditions — even when its author granted it broad write rights;
//! it cannot read another addon's objects. The registration agent of a cluster writes its
//! addons' conditions but not their other status fields; the hub admin writes anything.
//!
//! The same steps, with real kubectl, run against an `ocm hub` process (the policy as an
//! in-process hook) and against an `ocm apiserver` managed by `ocm hub --kubeconfig` (the
//! policy reached only through the admission webhook that hub registered); each must end the
//! same way on both.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, Patch, PatchParams, PostParams};
use ocm_addon_framework::registration::{
    agent_role_in_cluster_namespace, default_groups, default_user, own_addon_rules,
};
use ocm_e2e::process::{HubProcess, ManagedApiserver};
use ocm_runtime::kubeconfig::{KubeconfigAuth, KubeconfigSpec};
use serde_json::{Value, json};

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");

/// How many of the kubectl steps are alpha's (the registration agent's follow them).
const ALPHA_STEPS: usize = 11;

/// The v1alpha1 resource, whose spec still has `installNamespace`.
const V1ALPHA1: &str = "managedclusteraddons.v1alpha1.addon.open-cluster-management.io";

/// How a kubectl command ended: `None` when it succeeded, else (reason, message) from
/// kubectl's `Error from server (<Reason>): <message>`.
type Outcome = Option<(String, String)>;

/// Runs kubectl with `kubeconfig` (and `stdin`, if any).
async fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Outcome {
    let (ok, _, stderr) = ocm_e2e::kubectl(kubeconfig, args, stdin).await.unwrap();
    if ok {
        return None;
    }
    let parsed = stderr
        .lines()
        .find_map(|line| line.strip_prefix("Error from server ("))
        .and_then(|rest| rest.split_once("): "))
        .map(|(reason, message)| (reason.to_owned(), message.to_owned()));
    Some(
        parsed
            .unwrap_or_else(|| panic!("kubectl {args:?} failed without a server error: {stderr}")),
    )
}

/// `kubectl patch` arguments: ManagedClusterAddOn `ns/name` (`resource`, to pick a version),
/// its status when `status`, with a `type` (`json` or `merge`) patch.
fn patch(
    resource: &str,
    ns: &str,
    name: &str,
    status: bool,
    type_: &str,
    body: &str,
) -> Vec<String> {
    let mut args = vec!["patch", resource, name, "-n", ns];
    if status {
        args.push("--subresource=status");
    }
    args.iter()
        .map(|a| (*a).to_owned())
        .chain([format!("--type={type_}"), "-p".to_owned(), body.to_owned()])
        .collect()
}

/// A kubeconfig for the hub behind `admin_kubeconfig` presenting a client certificate for
/// `user` in `groups`, issued by the hub's `kubernetes.io/kube-apiserver-client` signer — the
/// credential the registration agent obtains for an addon (CSR, approval, signing).
async fn identity_kubeconfig(
    admin: &kube::Client,
    admin_kubeconfig: &Path,
    name: &str,
    user: &str,
    groups: &[String],
) -> PathBuf {
    use base64::Engine;
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::default();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, user);
    for (i, group) in groups.iter().enumerate() {
        // One value per attribute type in rcgen: further O values under the same OID.
        let ty = if i == 0 {
            rcgen::DnType::OrganizationName
        } else {
            rcgen::DnType::CustomDnType(vec![2, 5, 4, 10])
        };
        params.distinguished_name.push(ty, group.as_str());
    }
    let request = params.serialize_request(&key).unwrap().pem().unwrap();
    let csrs: Api<CertificateSigningRequest> = Api::all(admin.clone());
    csrs.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"request": base64::engine::general_purpose::STANDARD.encode(request),
                     "signerName": "kubernetes.io/kube-apiserver-client",
                     "expirationSeconds": 3600, "usages": ["client auth"]}}))
        .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(
        kubectl(admin_kubeconfig, &["certificate", "approve", name], None).await,
        None
    );
    let signed = ocm_e2e::wait_for(&csrs, name, "signed", |csr| {
        csr.status.as_ref().is_some_and(|s| s.certificate.is_some())
    })
    .await
    .unwrap();
    let cert = signed.status.unwrap().certificate.unwrap().0;
    let text = std::fs::read_to_string(admin_kubeconfig).unwrap();
    let server =
        ocm_runtime::kubeconfig::current_server(&ocm_runtime::kubeconfig::parse(&text).unwrap())
            .unwrap();
    let yaml = ocm_runtime::kubeconfig::render(&KubeconfigSpec {
        server,
        auth: KubeconfigAuth::ClientCertData {
            cert_pem: String::from_utf8(cert).unwrap(),
            key_pem: key.serialize_pem(),
        },
        context: name.into(),
        user: name.into(),
        namespace: None,
    });
    let path = admin_kubeconfig.with_file_name(format!("{name}.kubeconfig"));
    std::fs::write(&path, yaml).unwrap();
    path
}

async fn apply_json(client: &kube::Client, value: Value) {
    let gvk = value["apiVersion"].as_str().unwrap().to_owned();
    let (group, version) = gvk.split_once('/').unwrap_or(("", &gvk));
    let kind = value["kind"].as_str().unwrap();
    let plural = match kind {
        "Role" => "roles",
        "RoleBinding" => "rolebindings",
        "ClusterRole" => "clusterroles",
        "ClusterRoleBinding" => "clusterrolebindings",
        other => panic!("no plural for {other}"),
    };
    let resource = kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk(group, version, kind),
        plural,
    );
    let name = value["metadata"]["name"].as_str().unwrap();
    let api: Api<kube::api::DynamicObject> = match value["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    api.patch(
        name,
        &PatchParams::apply("addon-admission-test").force(),
        &Patch::Apply(&value),
    )
    .await
    .unwrap_or_else(|e| panic!("applying {kind} {name}: {e}"));
}

fn condition(type_: &str, status: &str) -> Value {
    json!({"type": type_, "status": status, "reason": "Test", "message": "set by the test",
           "lastTransitionTime": "2026-01-01T00:00:00Z"})
}

/// What the hub admin sets up: clusters c1 and c2 accepted (then [`ADDONS`]): addons alpha and beta on c1 and
/// alpha on c2, each with a secret in the cluster namespace; alpha's agent on c1 bound (as
/// the framework's helpers bind) to read its own addon and secret and write its own status —
/// and, as a careless addon author might, to write every ManagedClusterAddOn on the hub.
const SETUP: &str = r#"
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: c1}
spec: {hubAcceptsClient: true}
---
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: c2}
spec: {hubAcceptsClient: true}
"#;

/// The addons and secrets, applied once the hub has made the cluster namespaces.
const ADDONS: &str = r#"
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ManagedClusterAddOn
metadata: {name: alpha, namespace: c1}
spec: {installNamespace: open-cluster-management-agent-addon}
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ManagedClusterAddOn
metadata: {name: beta, namespace: c1}
spec: {installNamespace: open-cluster-management-agent-addon}
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ManagedClusterAddOn
metadata: {name: alpha, namespace: c2}
spec: {installNamespace: open-cluster-management-agent-addon}
---
apiVersion: v1
kind: Secret
metadata: {name: alpha-config, namespace: c1}
stringData: {token: alpha}
---
apiVersion: v1
kind: Secret
metadata: {name: beta-config, namespace: c1}
stringData: {token: beta}
"#;

/// Runs every step against the hub behind `kubeconfig`; returns (step, outcome) in order.
async fn run_steps(kubeconfig: &Path) -> Vec<(&'static str, Outcome)> {
    let admin = ocm_runtime::kubeconfig::client_from_file(kubeconfig)
        .await
        .unwrap();
    assert_eq!(
        kubectl(kubeconfig, &["apply", "-f", "-"], Some(SETUP)).await,
        None
    );
    // The cluster namespaces and the registration RBAC the hub makes on acceptance.
    for cluster in ["c1", "c2"] {
        ocm_e2e::wait_for(
            &Api::<RoleBinding>::namespaced(admin.clone(), cluster),
            &format!("open-cluster-management:managedcluster:{cluster}:registration"),
            "the registration agent's binding",
            |_| true,
        )
        .await
        .unwrap();
    }
    assert_eq!(
        kubectl(kubeconfig, &["apply", "-f", "-"], Some(ADDONS)).await,
        None
    );
    let mut rules = own_addon_rules("alpha");
    rules.as_array_mut().unwrap().push(json!(
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["alpha-config"],
         "verbs": ["get"]}));
    for object in agent_role_in_cluster_namespace("c1", "alpha", rules) {
        apply_json(&admin, object).await;
    }
    apply_json(
        &admin,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "careless-addon-writer"},
               "rules": [{"apiGroups": ["addon.open-cluster-management.io"],
                          "resources": ["managedclusteraddons"],
                          "verbs": ["update", "patch", "delete"]},
                         {"apiGroups": ["addon.open-cluster-management.io"],
                          "resources": ["managedclusteraddons/status"],
                          "verbs": ["get", "update", "patch"]}]}),
    )
    .await;
    apply_json(
        &admin,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "careless-addon-writer"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "careless-addon-writer"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                             "name": "system:open-cluster-management:addon:alpha"}]}),
    )
    .await;
    // The framework's condition on alpha, as the hub would set it.
    let framework_condition =
        json!({"status": {"conditions": [condition("Available", "True")]}}).to_string();
    for (ns, name) in [("c1", "alpha"), ("c1", "beta"), ("c2", "alpha")] {
        assert_eq!(
            kubectl(
                kubeconfig,
                &[
                    "patch",
                    "managedclusteraddon",
                    name,
                    "-n",
                    ns,
                    "--subresource=status",
                    "--type=merge",
                    "-p",
                    &framework_condition
                ],
                None,
            )
            .await,
            None
        );
    }

    let alpha = identity_kubeconfig(
        &admin,
        kubeconfig,
        "addon-c1-alpha",
        &default_user("c1", "alpha", "alpha"),
        &default_groups("c1", "alpha"),
    )
    .await;
    let agent = identity_kubeconfig(
        &admin,
        kubeconfig,
        "agent-c1",
        "system:open-cluster-management:c1:agent1",
        &[
            "system:open-cluster-management:c1".to_owned(),
            "system:open-cluster-management:managed-clusters".to_owned(),
        ],
    )
    .await;

    let resource = kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk(
            "addon.open-cluster-management.io",
            "v1alpha1",
            "ManagedClusterAddOn",
        ),
        "managedclusteraddons",
    );
    let add = |type_: &str| {
        json!([{"op": "add", "path": "/status/conditions/-", "value": condition(type_, "True")}])
            .to_string()
    };
    let alpha_synced = add("AlphaSynced");
    let rotated = add("ClusterCertificateRotated");
    let checked = add("AdminChecked");
    let forged = json!({"status": {"conditions": [condition("Forged", "True")]}}).to_string();
    const MCA: &str = "managedclusteraddon";
    let args = |list: &[&str]| list.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
    let respec = r#"{"spec":{"installNamespace":"elsewhere"}}"#;
    let unavailable = r#"[{"op":"replace","path":"/status/conditions/0/status","value":"False"}]"#;
    let steps: Vec<(&'static str, &Path, Vec<String>)> = vec![
        (
            "addon agent adds a condition to its own status",
            &alpha,
            patch(MCA, "c1", "alpha", true, "json", &alpha_synced),
        ),
        (
            "addon agent reads its own ManagedClusterAddOn",
            &alpha,
            args(&["get", MCA, "alpha", "-n", "c1", "-o", "name"]),
        ),
        (
            "addon agent reads its own secret",
            &alpha,
            args(&["get", "secret", "alpha-config", "-n", "c1", "-o", "name"]),
        ),
        (
            "addon agent writes another addon's status",
            &alpha,
            patch(MCA, "c1", "beta", true, "merge", &forged),
        ),
        (
            "addon agent writes its addon's status on another cluster",
            &alpha,
            patch(MCA, "c2", "alpha", true, "merge", &forged),
        ),
        (
            "addon agent changes its own spec",
            &alpha,
            patch(V1ALPHA1, "c1", "alpha", false, "merge", respec),
        ),
        (
            "addon agent forges the framework's Available condition",
            &alpha,
            patch(MCA, "c1", "alpha", true, "json", unavailable),
        ),
        (
            "addon agent deletes another addon",
            &alpha,
            args(&["delete", MCA, "beta", "-n", "c1"]),
        ),
        (
            "addon agent reads another addon's ManagedClusterAddOn",
            &alpha,
            args(&["get", MCA, "beta", "-n", "c1"]),
        ),
        (
            "addon agent reads another addon's secret",
            &alpha,
            args(&["get", "secret", "beta-config", "-n", "c1"]),
        ),
        (
            "addon agent lists the secrets of its cluster namespace",
            &alpha,
            args(&["get", "secrets", "-n", "c1"]),
        ),
        (
            "hub admin writes another addon's status",
            kubeconfig,
            patch(MCA, "c1", "beta", true, "json", &checked),
        ),
        (
            "hub admin changes an addon's spec",
            kubeconfig,
            patch(V1ALPHA1, "c1", "beta", false, "merge", respec),
        ),
    ];
    let mut results = Vec::new();
    let mut kubectl_steps = steps.into_iter();
    for (step, who, args) in kubectl_steps.by_ref().take(ALPHA_STEPS) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        results.push((step, kubectl(who, &args, None).await));
    }
    // The registration agent writes with its client (as the agent process does: a patch of
    // the status subresource, which its Role allows without `get`).
    let agent = ocm_runtime::kubeconfig::client_from_file(&agent)
        .await
        .unwrap();
    let agent_mcas: Api<kube::api::DynamicObject> = Api::namespaced_with(agent, "c1", &resource);
    for (step, patch) in [
        (
            "registration agent sets a condition of an addon on its cluster",
            Patch::Json::<Value>(serde_json::from_str(&rotated).unwrap()),
        ),
        (
            "registration agent moves an addon's install namespace",
            Patch::Merge(json!({"status": {"namespace": "elsewhere"}})),
        ),
    ] {
        let result = match agent_mcas
            .patch_status("beta", &PatchParams::default(), &patch)
            .await
        {
            Ok(_) => None,
            Err(kube::Error::Api(status)) => Some((status.reason.clone(), status.message.clone())),
            Err(other) => panic!("{step}: {other}"),
        };
        results.push((step, result));
    }
    for (step, who, args) in kubectl_steps {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        results.push((step, kubectl(who, &args, None).await));
    }

    for (step, outcome) in &results {
        eprintln!("{step}: {outcome:?}");
    }
    // Nothing refused was half-applied.
    let read = async |ns: &str, name: &str| -> Value {
        let api: Api<kube::api::DynamicObject> = Api::namespaced_with(admin.clone(), ns, &resource);
        serde_json::to_value(api.get(name).await.unwrap()).unwrap()
    };
    let types = |mca: &Value| -> Vec<String> {
        mca.pointer("/status/conditions")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|c| c["type"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let alpha_c1 = read("c1", "alpha").await;
    assert_eq!(
        alpha_c1["spec"]["installNamespace"],
        "open-cluster-management-agent-addon"
    );
    assert_eq!(alpha_c1["status"]["conditions"][0]["status"], "True");
    assert_eq!(types(&alpha_c1), ["Available", "AlphaSynced"]);
    let beta = read("c1", "beta").await;
    assert_eq!(
        beta.pointer("/status/namespace"),
        None,
        "the registration agent's refused write left no trace"
    );
    assert_eq!(
        types(&beta),
        ["Available", "ClusterCertificateRotated", "AdminChecked"]
    );
    assert_eq!(types(&read("c2", "alpha").await), ["Available"]);
    results
}

/// Each step's expected kubectl result: `None` (success) or the reason.
const EXPECTED: &[(&str, Option<&str>)] = &[
    ("addon agent adds a condition to its own status", None),
    ("addon agent reads its own ManagedClusterAddOn", None),
    ("addon agent reads its own secret", None),
    (
        "addon agent writes another addon's status",
        Some("Forbidden"),
    ),
    (
        "addon agent writes its addon's status on another cluster",
        Some("Forbidden"),
    ),
    ("addon agent changes its own spec", Some("Forbidden")),
    (
        "addon agent forges the framework's Available condition",
        Some("Forbidden"),
    ),
    ("addon agent deletes another addon", Some("Forbidden")),
    (
        "addon agent reads another addon's ManagedClusterAddOn",
        Some("Forbidden"),
    ),
    (
        "addon agent reads another addon's secret",
        Some("Forbidden"),
    ),
    (
        "addon agent lists the secrets of its cluster namespace",
        Some("Forbidden"),
    ),
    (
        "registration agent sets a condition of an addon on its cluster",
        None,
    ),
    (
        "registration agent moves an addon's install namespace",
        Some("Forbidden"),
    ),
    ("hub admin writes another addon's status", None),
    ("hub admin changes an addon's spec", None),
];

/// The words each admission refusal must contain (the problem, named).
fn admission_words(step: &str) -> Option<&'static str> {
    Some(match step {
        "addon agent writes another addon's status" => "belongs to another addon",
        "addon agent writes its addon's status on another cluster" => "belongs to another cluster",
        "addon agent changes its own spec" => "only the addon manager and hub admins may",
        "addon agent forges the framework's Available condition" => "condition Available",
        "addon agent deletes another addon" => "belongs to another addon",
        "registration agent moves an addon's install namespace" => "status.namespace",
        _ => return None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn addon_credentials_keep_to_their_own_addon_in_process_and_through_webhooks() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let embedded = HubProcess::start(OCM, home, &home.join("embedded"), "127.0.0.1:0");
    let in_process = run_steps(&embedded.kubeconfig).await;
    embedded.process.stop();

    let real = ManagedApiserver::start(OCM, &home.join("real"));
    let through_webhooks = run_steps(&real.kubeconfig).await;
    real.stop();

    assert_eq!(in_process.len(), EXPECTED.len());
    for (((step, embedded), (_, webhook)), (expected_step, expected)) in
        in_process.iter().zip(&through_webhooks).zip(EXPECTED)
    {
        assert_eq!(step, expected_step);
        for (path, outcome) in [
            ("on the embedded hub", embedded),
            ("through webhooks", webhook),
        ] {
            assert_eq!(
                outcome.as_ref().map(|(reason, _)| reason.as_str()),
                *expected,
                "{step} {path}: {outcome:?}"
            );
        }
        let Some(words) = admission_words(step) else {
            // RBAC refusals are the server's own, the same on both.
            assert_eq!(embedded, webhook, "{step}");
            continue;
        };
        let (embedded, webhook) = (embedded.as_ref().unwrap(), webhook.as_ref().unwrap());
        assert!(embedded.1.contains(words), "{step}: {}", embedded.1);
        assert!(
            webhook.1.starts_with("admission webhook \"")
                && webhook
                    .1
                    .ends_with(&format!("denied the request: {}", embedded.1)),
            "{step}: through webhooks {:?}, in process {:?}",
            webhook.1,
            embedded.1
        );
    }
}
