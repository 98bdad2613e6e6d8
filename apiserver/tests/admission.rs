//! Admission hooks: mutation and denial on create, update, patch, apply and delete; status
//! writes skipped; the authorizer callback sees the requester's RBAC.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use common::{cm, status_of};

use std::sync::{Arc, Mutex};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use ocm_apiserver::{AdmissionHook, AdmissionOperation, AdmissionResult, Identity};
use ocm_apiserver_rbac::ResourceAttributes;
use serde_json::{Value, json};

/// A toy policy on ConfigMaps: stamps label `admitted=<operation>`, refuses `data.bad`
/// (422), names starting with `forbidden-` (403), `data.garbage` (400), and deleting a
/// ConfigMap labelled `protected`.
fn toy_hook(seen: Arc<Mutex<Vec<(AdmissionOperation, String)>>>) -> AdmissionHook {
    Arc::new(move |req| {
        seen.lock()
            .unwrap()
            .push((req.operation, req.user.user.clone()));
        if req.operation == AdmissionOperation::Delete {
            let old = req.old_object.expect("delete has the old object");
            if old.pointer("/metadata/labels/protected").is_some() {
                return AdmissionResult::forbidden("protected objects cannot be deleted");
            }
            return AdmissionResult::Allow;
        }
        let obj = req.object.expect("object on create/update");
        if req.name.starts_with("forbidden-") {
            return AdmissionResult::forbidden("this name is reserved");
        }
        if obj.pointer("/data/bad").is_some() {
            return AdmissionResult::invalid("data.bad", "must not be set");
        }
        if obj.pointer("/data/garbage").is_some() {
            return AdmissionResult::bad_request("garbage in the request");
        }
        let mut obj = obj.clone();
        obj["metadata"]["labels"]["admitted"] = json!(req.operation.as_str().to_lowercase());
        AdmissionResult::Mutate(obj)
    })
}

#[tokio::test]
async fn hooks_mutate_creates_updates_patches_and_applies() {
    let (server, client) = common::server().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    server.register_admission("", "configmaps", toy_hook(seen.clone()));
    let api: Api<ConfigMap> = Api::namespaced(client, "default");

    let created = api
        .create(&PostParams::default(), &cm("a", json!({"k": "v"})))
        .await
        .unwrap();
    assert_eq!(created.metadata.labels.unwrap()["admitted"], "create");

    let mut changed = api.get("a").await.unwrap();
    changed.metadata.labels = None;
    changed.data = Some([("k".to_owned(), "w".to_owned())].into());
    let replaced = api
        .replace("a", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(replaced.metadata.labels.unwrap()["admitted"], "update");

    let patched = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"admitted": "client"}}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.metadata.labels.unwrap()["admitted"], "update");

    let applied = api
        .patch(
            "b",
            &PatchParams::apply("test"),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "b"}, "data": {"x": "y"}})),
        )
        .await
        .unwrap();
    assert_eq!(applied.metadata.labels.unwrap()["admitted"], "create");
    let stored = api.get("b").await.unwrap();
    assert_eq!(stored.metadata.labels.unwrap()["admitted"], "create");

    let ops: Vec<AdmissionOperation> = seen.lock().unwrap().iter().map(|(o, _)| *o).collect();
    assert_eq!(
        ops,
        [
            AdmissionOperation::Create,
            AdmissionOperation::Update,
            AdmissionOperation::Update,
            AdmissionOperation::Create
        ]
    );
    assert_eq!(seen.lock().unwrap()[0].1, "admin");
}

#[tokio::test]
async fn denials_become_kube_statuses_and_nothing_is_stored() {
    let (server, client) = common::server().await;
    server.register_admission("", "configmaps", toy_hook(Arc::default()));
    let api: Api<ConfigMap> = Api::namespaced(client, "default");

    let (code, reason, message) = status_of(
        api.create(&PostParams::default(), &cm("forbidden-x", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        message,
        "configmaps \"forbidden-x\" is forbidden: this name is reserved"
    );

    let (code, reason, message) = status_of(
        api.create(&PostParams::default(), &cm("c", json!({"bad": "1"})))
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert_eq!(
        message,
        "ConfigMap \"c\" is invalid: data.bad: must not be set"
    );

    let (code, reason, _) = status_of(
        api.create(&PostParams::default(), &cm("c", json!({"garbage": "1"})))
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (400, "BadRequest"));
    assert!(api.get_opt("c").await.unwrap().is_none());
    assert!(api.get_opt("forbidden-x").await.unwrap().is_none());

    // Updates are checked too, and a refused update leaves the object as it was.
    api.create(&PostParams::default(), &cm("c", json!({"k": "v"})))
        .await
        .unwrap();
    let (code, _, _) = status_of(
        api.patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"bad": "1"}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(code, 422);
    let data = api.get("c").await.unwrap().data.unwrap();
    assert!(!data.contains_key("bad"));

    // Dry runs are admitted the same way.
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let (code, _, _) = status_of(
        api.create(&dry, &cm("forbidden-y", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 403);
}

#[tokio::test]
async fn deletes_are_admitted_with_the_old_object() {
    let (server, client) = common::server().await;
    server.register_admission("", "configmaps", toy_hook(Arc::default()));
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut protected = cm("p", json!({}));
    protected.metadata.labels = Some([("protected".to_owned(), "yes".to_owned())].into());
    api.create(&PostParams::default(), &protected)
        .await
        .unwrap();
    let (code, _, _) = status_of(api.delete("p", &DeleteParams::default()).await.unwrap_err());
    assert_eq!(code, 403);
    assert!(api.get_opt("p").await.unwrap().is_some());
    api.create(&PostParams::default(), &cm("q", json!({})))
        .await
        .unwrap();
    api.delete("q", &DeleteParams::default()).await.unwrap();
    assert!(api.get_opt("q").await.unwrap().is_none());
}

#[tokio::test]
async fn status_writes_skip_main_resource_hooks_unless_registered() {
    let (server, client) = common::server().await;
    let main_calls = Arc::new(Mutex::new(0));
    let status_calls = Arc::new(Mutex::new(0));
    let counter = main_calls.clone();
    let hook: AdmissionHook = Arc::new(move |_req| {
        *counter.lock().unwrap() += 1;
        AdmissionResult::Allow
    });
    server.register_admission("apps", "deployments", hook);
    let api: Api<Deployment> = Api::namespaced(client, "default");
    let d = json!({"metadata": {"name": "web"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    api.create(&PostParams::default(), &serde_json::from_value(d).unwrap())
        .await
        .unwrap();
    assert_eq!(*main_calls.lock().unwrap(), 1);
    api.patch_status(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"replicas": 1}})),
    )
    .await
    .unwrap();
    assert_eq!(*main_calls.lock().unwrap(), 1, "status write skipped");

    let counter = status_calls.clone();
    let status_hook: AdmissionHook = Arc::new(move |req| {
        *counter.lock().unwrap() += 1;
        assert_eq!(req.subresource, Some("status"));
        AdmissionResult::forbidden("status is frozen")
    });
    server.register_subresource_admission("apps", "deployments", "status", status_hook);
    let (code, _, _) = status_of(
        api.patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 2}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(code, 403);
    assert_eq!(*status_calls.lock().unwrap(), 1);
    assert_eq!(*main_calls.lock().unwrap(), 1);
}

#[tokio::test]
async fn the_authorizer_answers_for_the_requester() {
    let (server, admin) = common::server().await;
    // The hook lets a ConfigMap be created only by users allowed to `create`
    // `widgets/approve` in group example.com.
    let hook: AdmissionHook = Arc::new(|req| {
        if req.operation != AdmissionOperation::Create {
            return AdmissionResult::Allow;
        }
        let allowed = req.is_allowed(
            "create",
            ResourceAttributes {
                group: "example.com".into(),
                resource: "widgets".into(),
                subresource: "approve".into(),
                name: req.name.to_owned(),
                ..ResourceAttributes::default()
            },
        );
        if allowed {
            AdmissionResult::Allow
        } else {
            AdmissionResult::forbidden(format!("user {} cannot approve widgets", req.user.user))
        }
    });
    server.register_admission("", "configmaps", hook);
    let rbac = |kind: &str, body: Value| {
        let admin = admin.clone();
        let kind = kind.to_owned();
        async move {
            let ar = kube::discovery::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
                "rbac.authorization.k8s.io",
                "v1",
                &kind,
            ));
            let api: Api<kube::api::DynamicObject> = Api::all_with(admin, &ar);
            api.create(
                &PostParams::default(),
                &serde_json::from_value(body).unwrap(),
            )
            .await
            .unwrap();
        }
    };
    rbac(
        "ClusterRole",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "cm-writer"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get"]}]}),
    )
    .await;
    rbac("ClusterRoleBinding", json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "cm-writer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cm-writer"},
        "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]}))
    .await;
    let alice = kube::Client::new(
        server.service_as(Identity {
            user: "alice".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }),
        "default",
    );
    let api: Api<ConfigMap> = Api::namespaced(alice, "default");
    let (code, _, message) = status_of(
        api.create(&PostParams::default(), &cm("w", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 403);
    assert!(
        message.contains("user alice cannot approve widgets"),
        "{message}"
    );

    rbac("ClusterRole", json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "widget-approver"},
        "rules": [{"apiGroups": ["example.com"], "resources": ["widgets/approve"], "verbs": ["create"]}]}))
    .await;
    rbac("ClusterRoleBinding", json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "widget-approver"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "widget-approver"},
        "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]}))
    .await;
    api.create(&PostParams::default(), &cm("w", json!({})))
        .await
        .unwrap();
    // The admin (system:masters) is always allowed.
    Api::<ConfigMap>::namespaced(admin, "default")
        .create(&PostParams::default(), &cm("x", json!({})))
        .await
        .unwrap();
}
