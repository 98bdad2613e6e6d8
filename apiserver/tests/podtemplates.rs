//! PodTemplates (core/v1, namespaced): served like the other built-ins, listed in discovery,
//! with kube's generation rule (bumped when `template` changes) and `kubectl get` columns.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use k8s_openapi::api::core::v1::PodTemplate;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use common::kubectl;
use common::tls::TlsServer;

fn template(name: &str) -> PodTemplate {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kind": "template"}},
        "template": {
            "metadata": {"labels": {"app": "web", "tier": "front"}},
            "spec": {"containers": [
                {"name": "web", "image": "nginx:1.27"},
                {"name": "sidecar", "image": "busybox"},
            ]},
        },
    }))
    .unwrap()
}

#[tokio::test]
async fn pod_templates_are_served() {
    let server = TlsServer::start().await;
    let client = server.client().await;

    let resources = client.list_core_api_resources("v1").await.unwrap();
    let listed = resources
        .resources
        .iter()
        .find(|r| r.name == "podtemplates")
        .expect("podtemplates in discovery");
    assert_eq!(listed.kind, "PodTemplate");
    assert!(listed.namespaced);
    assert_eq!(
        listed.verbs,
        [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch"
        ]
    );

    let api: Api<PodTemplate> = Api::namespaced(client.clone(), "default");
    let created = api
        .create(&PostParams::default(), &template("web"))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    let containers = &created
        .template
        .as_ref()
        .unwrap()
        .spec
        .as_ref()
        .unwrap()
        .containers;
    assert_eq!(containers[1].image.as_deref(), Some("busybox"));

    // Metadata changes keep the generation; template changes bump it.
    let labeled = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"extra": "1"}}})),
        )
        .await
        .unwrap();
    assert_eq!(labeled.metadata.generation, Some(1));
    let changed = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(json!({"template": {"spec": {"containers": [
                {"name": "web", "image": "nginx:1.28"}]}}})),
        )
        .await
        .unwrap();
    assert_eq!(changed.metadata.generation, Some(2));
    let spec = changed.template.unwrap().spec.unwrap();
    assert_eq!(
        spec.containers.len(),
        2,
        "strategic merge by container name"
    );
    assert_eq!(spec.containers[0].image.as_deref(), Some("nginx:1.28"));

    let all = api.list(&Default::default()).await.unwrap();
    assert_eq!(all.items.len(), 1);

    if kubectl::available() {
        let (code, out, err) = kubectl::run(&server, &["api-resources"], None).await;
        assert_eq!(code, 0, "{err}");
        assert!(
            kubectl::rows(&out).contains(&vec![
                "podtemplates".to_owned(),
                "v1".into(),
                "true".into(),
                "PodTemplate".into()
            ]),
            "{out}"
        );
        let (code, out, err) = kubectl::run(&server, &["get", "podtemplates"], None).await;
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            out.lines().collect::<Vec<_>>()[0]
                .split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect::<Vec<_>>(),
            ["NAME", "CONTAINERS", "IMAGES", "POD LABELS"]
        );
        assert_eq!(
            kubectl::rows(&out)[1],
            [
                "web",
                "web,sidecar",
                "nginx:1.28,busybox",
                "app=web,tier=front"
            ]
        );
    }

    api.delete("web", &DeleteParams::default()).await.unwrap();
    assert!(api.get_opt("web").await.unwrap().is_none());
}
