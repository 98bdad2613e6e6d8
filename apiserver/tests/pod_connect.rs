//! The pods' connect subresources (`exec`, `attach`, `portforward`): what is refused before
//! the kubelet is reached — a missing pod, one without a node or without a kubelet, one that
//! ran to its end, a request that asks for no upgrade — each a Status naming the problem, and
//! a WebSocket `GET` of `exec` needing `create` as well as `get`. (The upgrade itself, to a
//! real kubelet endpoint, runs end to end in `test/tests/cluster_proxy_exec.rs`.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use ocm_apiserver::Identity;
use serde_json::json;

use crate::common;

const EXEC: &str = "/api/v1/namespaces/default/pods/{}/exec?command=true&stdout=true";

/// A WebSocket exec request for `pod`, as kubectl sends it; (code, message).
async fn exec(client: &Client, pod: &str, upgrade: bool) -> (u16, String) {
    let mut request = http::Request::get(EXEC.replace("{}", pod));
    if upgrade {
        request = request
            .header("connection", "Upgrade")
            .header("upgrade", "websocket")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
            .header("sec-websocket-protocol", "v5.channel.k8s.io");
    }
    let request = request.body(kube::client::Body::from(Vec::new())).unwrap();
    let (code, _, body) = common::send_raw(client, request).await;
    let status: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    (
        code,
        status["message"].as_str().unwrap_or_default().to_owned(),
    )
}

async fn create<K>(client: &Client, value: serde_json::Value) -> K
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let object: K = serde_json::from_value(value).unwrap();
    Api::<K>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &object)
        .await
        .unwrap()
}

#[tokio::test]
async fn connect_requests_are_refused_clearly_before_the_kubelet() {
    let (server, admin) = common::server().await;
    let pod = |name: &str, node: Option<&str>| {
        json!({"metadata": {"name": name},
               "spec": {"nodeName": node, "containers": [{"name": "main", "image": "x"}]}})
    };
    let (code, message) = exec(&admin, "nope", true).await;
    assert_eq!((code, message.as_str()), (404, "pods \"nope\" not found"));

    create::<k8s_openapi::api::core::v1::Pod>(&admin, pod("unbound", None)).await;
    let (code, message) = exec(&admin, "unbound", true).await;
    assert_eq!(
        (code, message.as_str()),
        (400, "pod unbound does not have a host assigned")
    );

    create::<k8s_openapi::api::core::v1::Pod>(&admin, pod("bound", Some("n1"))).await;
    let (code, message) = exec(&admin, "bound", true).await;
    assert_eq!(code, 400);
    assert!(
        message.contains("no kubelet serves node \"n1\""),
        "{message}"
    );

    // A node whose kubelet listens somewhere: the phase and the upgrade are checked first.
    common::node_with_kubelet(&admin, "n1", 9).await;
    let (code, message) = exec(&admin, "bound", false).await;
    assert_eq!((code, message.as_str()), (400, "Upgrade request required"));
    Api::<k8s_openapi::api::core::v1::Pod>::namespaced(admin.clone(), "default")
        .patch_status(
            "bound",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Succeeded"}})),
        )
        .await
        .unwrap();
    let (code, message) = exec(&admin, "bound", true).await;
    assert_eq!(
        (code, message.as_str()),
        (
            400,
            "cannot exec into a container in a completed pod; current phase is Succeeded"
        )
    );

    // `get` on pods/exec is not enough for a WebSocket: `create` is checked too.
    create::<k8s_openapi::api::rbac::v1::Role>(
        &admin,
        json!({"metadata": {"name": "exec-get"},
               "rules": [{"apiGroups": [""], "resources": ["pods", "pods/exec"], "verbs": ["get"]}]}),
    )
    .await;
    create::<k8s_openapi::api::rbac::v1::RoleBinding>(
        &admin,
        json!({"metadata": {"name": "bob-exec-get"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "exec-get"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]}),
    )
    .await;
    let bob = Client::new(
        server.service_as(Identity {
            user: "bob".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }),
        "default",
    );
    let (code, message) = exec(&bob, "bound", true).await;
    assert_eq!(code, 403);
    assert!(
        message.contains("User \"bob\" cannot create resource \"pods/exec\""),
        "{message}"
    );
}
