//! The authorizer's policy follows RBAC writes change by change, and still when the changes
//! fell out of the history window (then it is rebuilt from storage).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use ocm_apiserver::{ApiServer, ApiServerConfig, Identity};
use ocm_apiserver_storage::StoreConfig;
use serde_json::json;

fn role(verbs: &[&str]) -> Role {
    serde_json::from_value(json!({
        "metadata": {"name": "cm-reader", "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs}],
    }))
    .unwrap()
}

fn binding() -> RoleBinding {
    serde_json::from_value(json!({
        "metadata": {"name": "jane-reads", "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
        "subjects": [{"kind": "User", "name": "jane"}],
    }))
    .unwrap()
}

async fn may_list(jane: &Api<ConfigMap>) -> bool {
    match jane.list(&ListParams::default()).await {
        Ok(_) => true,
        Err(kube::Error::Api(status)) if status.code == 403 => false,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

#[tokio::test]
async fn policy_follows_writes_and_survives_compaction() {
    let config = ApiServerConfig {
        store: StoreConfig {
            history_window: 8,
            ..StoreConfig::default()
        },
        ..ApiServerConfig::default()
    };
    let server = ApiServer::start(config).await.unwrap();
    let admin = kube::Client::new(server.service(), "default");
    let jane = kube::Client::new(
        server.service_as(Identity {
            user: "jane".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }),
        "default",
    );
    let jane_cms: Api<ConfigMap> = Api::namespaced(jane, "default");
    let roles: Api<Role> = Api::namespaced(admin.clone(), "default");
    let bindings: Api<RoleBinding> = Api::namespaced(admin.clone(), "default");
    let admin_cms: Api<ConfigMap> = Api::namespaced(admin, "default");
    let pp = PostParams::default();

    assert!(!may_list(&jane_cms).await);
    // Within the window: applied as changes.
    roles.create(&pp, &role(&["list"])).await.unwrap();
    assert!(!may_list(&jane_cms).await, "role alone grants nothing");
    bindings.create(&pp, &binding()).await.unwrap();
    assert!(may_list(&jane_cms).await);
    let mut narrowed = roles.get("cm-reader").await.unwrap();
    narrowed.rules = role(&["get"]).rules;
    roles.replace("cm-reader", &pp, &narrowed).await.unwrap();
    assert!(!may_list(&jane_cms).await);
    let mut widened = roles.get("cm-reader").await.unwrap();
    widened.rules = role(&["get", "list"]).rules;
    roles.replace("cm-reader", &pp, &widened).await.unwrap();
    assert!(may_list(&jane_cms).await);

    // The deletion falls out of the 8-event window before jane asks again.
    bindings
        .delete("jane-reads", &DeleteParams::default())
        .await
        .unwrap();
    for i in 0..12 {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("filler-{i}")}})).unwrap();
        admin_cms.create(&pp, &cm).await.unwrap();
    }
    assert!(!may_list(&jane_cms).await);
    // And a rebuilt policy keeps following changes.
    bindings.create(&pp, &binding()).await.unwrap();
    assert!(may_list(&jane_cms).await);
    roles
        .delete("cm-reader", &DeleteParams::default())
        .await
        .unwrap();
    assert!(!may_list(&jane_cms).await);
}
