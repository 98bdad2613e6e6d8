//! The registration admission policies wired into the embedded server's admission hooks
//! through a small adapter (the one the CLI needs), end to end through kube clients:
//! defaults, taint times, accept/join/bind permissions, and the taint controller's writes
//! passing the policy.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Resource, ResourceExt};
use ocm_api::cluster::names::labels::CLUSTER_SET;
use ocm_api::cluster::names::taints::UNREACHABLE;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta2::ManagedClusterSetBinding;
use ocm_apiserver::{
    AdmissionDenial, AdmissionHook, AdmissionOperation, AdmissionResult, ApiServer, Identity,
};
use ocm_apiserver_rbac::ResourceAttributes;
use ocm_registration::hub::admission::{
    AccessCheck, AdmissionInput, Operation, admit_managed_cluster,
    admit_managed_cluster_set_binding,
};
use ocm_registration::hub::{HubContext, HubOptions};
use ocm_runtime::metrics::ControllerMetrics;
use ocm_runtime::shutdown::Shutdown;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(15);
const GROUP: &str = "cluster.open-cluster-management.io";

type Policy = fn(
    &AdmissionInput<'_>,
) -> Result<Option<Value>, ocm_registration::hub::admission::AdmissionDenial>;

/// The adapter: an apiserver admission hook running a registration policy.
fn hook(policy: Policy) -> AdmissionHook {
    Arc::new(move |req| {
        let authorize = |check: &AccessCheck<'_>| {
            req.is_allowed(
                check.verb,
                ResourceAttributes {
                    group: check.group.to_owned(),
                    resource: check.resource.to_owned(),
                    subresource: check.subresource.to_owned(),
                    name: check.name.to_owned(),
                    ..ResourceAttributes::default()
                },
            )
        };
        let input = AdmissionInput {
            operation: match req.operation {
                AdmissionOperation::Create => Operation::Create,
                AdmissionOperation::Update => Operation::Update,
                AdmissionOperation::Delete => Operation::Delete,
            },
            object: req.object,
            old_object: req.old_object,
            user: &req.user.user,
            now: jiff::Timestamp::now(),
            default_cluster_set: true,
            cluster_namespace_terminating: false,
            authorize: &authorize,
        };
        match policy(&input) {
            Ok(None) => AdmissionResult::Allow,
            Ok(Some(object)) => AdmissionResult::Mutate(object),
            Err(denial) => AdmissionResult::Deny(AdmissionDenial {
                code: denial.code,
                message: denial.message,
                field: None,
                resource: denial.resource,
                name: denial.name,
            }),
        }
    })
}

struct Hub {
    server: ApiServer,
    client: kube::Client,
    ctx: Arc<HubContext>,
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.ctx.shutdown.cancel();
    }
}

async fn start_hub() -> Hub {
    let server = ApiServer::in_memory().await.unwrap();
    server.register_admission(GROUP, "managedclusters", hook(admit_managed_cluster));
    server.register_admission(
        GROUP,
        "managedclustersetbindings",
        hook(admit_managed_cluster_set_binding),
    );
    let client = kube::Client::new(server.service(), "default");
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in ocm_api::crds::hub() {
        crds.create(&PostParams::default(), &crd).await.unwrap();
    }
    for crd in ocm_api::crds::hub() {
        tokio::time::timeout(
            WAIT,
            await_condition(
                crds.clone(),
                &crd.name_any(),
                conditions::is_crd_established(),
            ),
        )
        .await
        .unwrap()
        .unwrap();
    }
    let ctx = Arc::new(HubContext {
        client: client.clone(),
        options: HubOptions {
            lease_grace_multiplier: 1,
            ..HubOptions::default()
        },
        metrics: ControllerMetrics::new("ocm"),
        shutdown: Shutdown::new(),
    });
    Hub {
        server,
        client,
        ctx,
    }
}

async fn wait_for<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    pred: impl Fn(&K) -> bool + Send + 'static,
) -> K
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let cond = move |o: Option<&K>| o.is_some_and(&pred);
    match tokio::time::timeout(WAIT, await_condition(api.clone(), name, cond)).await {
        Ok(Ok(Some(obj))) => obj,
        other => panic!("timed out waiting for {what}: {other:?}"),
    }
}

fn status_of(err: kube::Error) -> (u16, String) {
    match err {
        kube::Error::Api(s) => (s.code, s.message.clone()),
        other => panic!("expected an API error, got {other}"),
    }
}

fn cluster(body: Value) -> ManagedCluster {
    serde_json::from_value(body).unwrap()
}

async fn grant(client: &kube::Client, user: &str, rules: Value) {
    let roles: Api<ClusterRole> = Api::all(client.clone());
    roles
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": user}, "rules": rules})).unwrap(),
        )
        .await
        .unwrap();
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    bindings
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": user},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
                "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}]}))
            .unwrap(),
        )
        .await
        .unwrap();
}

fn client_as(server: &ApiServer, user: &str) -> kube::Client {
    kube::Client::new(
        server.service_as(Identity {
            user: user.into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }),
        "default",
    )
}

#[tokio::test]
async fn cluster_writes_get_defaults_and_taint_times() {
    let hub = start_hub().await;
    let clusters: Api<ManagedCluster> = Api::all(hub.client.clone());
    let created = clusters
        .create(
            &PostParams::default(),
            &cluster(json!({"metadata": {"name": "c1"}, "spec": {"hubAcceptsClient": false,
                "taints": [{"key": "example.com/maintenance", "effect": "NoSelect", "timeAdded": "2020-01-01T00:00:00Z"}]}})),
        )
        .await
        .unwrap();
    assert_eq!(
        created.labels().get(CLUSTER_SET).map(String::as_str),
        Some("default")
    );
    let stamped = created.spec.taints[0].time_added.clone().unwrap();
    assert_ne!(
        stamped.0,
        "2020-01-01T00:00:00Z".parse::<jiff::Timestamp>().unwrap()
    );

    // Adding a taint with a time is refused; without one it is stamped.
    let (code, message) = status_of(
        clusters
            .patch(
                "c1",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"taints": [
                    {"key": "example.com/maintenance", "effect": "NoSelect", "timeAdded": stamped},
                    {"key": "example.com/new", "effect": "NoSelect", "timeAdded": "2020-01-01T00:00:00Z"}]}})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 400);
    assert_eq!(
        message,
        "It is not allowed to set TimeAdded of Taint \"example.com/new\"."
    );
    let updated = clusters
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": [
                {"key": "example.com/maintenance", "effect": "NoSelect", "timeAdded": stamped},
                {"key": "example.com/new", "effect": "NoSelect"}]}})),
        )
        .await
        .unwrap();
    assert!(updated.spec.taints[1].time_added.is_some());

    // Bad names and plain-http URLs are refused.
    let (code, message) = status_of(
        clusters
            .create(
                &PostParams::default(),
                &cluster(
                    json!({"metadata": {"name": "c2"}, "spec": {"hubAcceptsClient": false,
                    "managedClusterClientConfigs": [{"url": "http://c2.example.com:6443"}]}}),
                ),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (code, message.as_str()),
        (
            400,
            "url \"http://c2.example.com:6443\" is invalid in client configs"
        )
    );
}

#[tokio::test]
async fn accepting_joining_and_binding_need_their_permissions() {
    let hub = start_hub().await;
    grant(
        &hub.client,
        "bob",
        json!([
            {"apiGroups": [GROUP], "resources": ["managedclusters", "managedclustersetbindings"],
             "verbs": ["get", "create", "update", "patch"]},
            {"apiGroups": [GROUP], "resources": ["managedclustersets/join"], "verbs": ["create"],
             "resourceNames": ["default"]},
        ]),
    )
    .await;
    let bob = client_as(&hub.server, "bob");
    let clusters: Api<ManagedCluster> = Api::all(bob.clone());
    let (code, message) = status_of(
        clusters
            .create(
                &PostParams::default(),
                &cluster(json!({"metadata": {"name": "c3"}, "spec": {"hubAcceptsClient": true}})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 403);
    assert_eq!(
        message,
        "managedclusters/accept.cluster.open-cluster-management.io \"c3\" is forbidden: user \"bob\" cannot update the HubAcceptsClient field"
    );
    clusters
        .create(
            &PostParams::default(),
            &cluster(json!({"metadata": {"name": "c3"}, "spec": {"hubAcceptsClient": false}})),
        )
        .await
        .unwrap();
    let (code, message) = status_of(
        clusters
            .patch(
                "c3",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {CLUSTER_SET: "prod"}}})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 403);
    assert!(
        message.contains("cannot add/remove a ManagedCluster to/from ManagedClusterSet \"prod\""),
        "{message}"
    );
    // The admin may do both.
    let admin: Api<ManagedCluster> = Api::all(hub.client.clone());
    admin
        .patch(
            "c3",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {CLUSTER_SET: "prod"}}, "spec": {"hubAcceptsClient": true}})),
        )
        .await
        .unwrap();

    let namespaces: Api<Namespace> = Api::all(hub.client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "apps"}})).unwrap(),
        )
        .await
        .unwrap();
    let bindings: Api<ManagedClusterSetBinding> = Api::namespaced(bob, "apps");
    let binding = |name: &str, set: &str| -> ManagedClusterSetBinding {
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"clusterSet": set}}))
            .unwrap()
    };
    let (code, message) = status_of(
        bindings
            .create(&PostParams::default(), &binding("a", "b"))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (code, message.as_str()),
        (
            400,
            "The ManagedClusterSetBinding must have the same name as the target ManagedClusterSet"
        )
    );
    let (code, message) = status_of(
        bindings
            .create(&PostParams::default(), &binding("prod", "prod"))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 403);
    assert_eq!(
        message,
        "managedclustersets/bind.cluster.open-cluster-management.io \"prod\" is forbidden: user \"bob\" is not allowed to bind cluster set \"prod\""
    );
    Api::<ManagedClusterSetBinding>::namespaced(hub.client.clone(), "apps")
        .create(&PostParams::default(), &binding("prod", "prod"))
        .await
        .unwrap();
}

#[tokio::test]
async fn the_taint_controller_passes_the_policy() {
    let hub = start_hub().await;
    tokio::spawn(ocm_registration::hub::run(hub.ctx.clone()));
    let clusters: Api<ManagedCluster> = Api::all(hub.client.clone());
    clusters
        .create(
            &PostParams::default(),
            &cluster(json!({"metadata": {"name": "c4"}, "spec": {"hubAcceptsClient": true, "leaseDurationSeconds": 1}})),
        )
        .await
        .unwrap();
    let tainted = wait_for(&clusters, "c4", "the unreachable taint", |c| {
        c.spec.taints.iter().any(|t| t.key == UNREACHABLE)
    })
    .await;
    assert!(tainted.spec.taints[0].time_added.is_some());
}
