//! Objects every cluster has, kept by the server as kube's control plane keeps them: the
//! `default` ServiceAccount and the `kube-root-ca.crt` ConfigMap in every active namespace,
//! `default/kubernetes`, and `kube-system/extension-apiserver-authentication`; made again when
//! deleted, put right when changed, and left alone in a terminating namespace.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

use common::kubectl;
use common::tls::TlsServer;

const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

fn ca_of(server: &TlsServer) -> String {
    std::fs::read_to_string(server.dir.path().join("pki/ca.crt")).unwrap()
}

async fn create_namespace(client: &kube::Client, name: &str) {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

/// Waits for `name` in `api` and returns it.
async fn eventually_get<K>(api: &Api<K>, name: &str) -> K
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    common::eventually(&format!("{name} to exist"), || async {
        api.get_opt(name).await.unwrap()
    })
    .await
}

#[tokio::test]
async fn every_namespace_has_a_default_service_account_and_the_root_ca() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let ca = ca_of(&server);

    // The system namespaces have them as soon as the server is up.
    for ns in ocm_apiserver::SYSTEM_NAMESPACES {
        let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
        assert!(sas.get_opt("default").await.unwrap().is_some(), "{ns}");
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        let root = cms.get("kube-root-ca.crt").await.unwrap();
        assert_eq!(
            serde_json::to_value(root.data).unwrap(),
            json!({"ca.crt": ca}),
            "{ns}"
        );
        assert_eq!(
            root.metadata.annotations.unwrap()["kubernetes.io/description"],
            DESCRIPTION
        );
        let managers: Vec<String> = root
            .metadata
            .managed_fields
            .unwrap()
            .into_iter()
            .filter_map(|m| m.manager)
            .collect();
        assert_eq!(managers, ["kube-controller-manager"]);
    }

    // A new namespace gets them.
    create_namespace(&client, "fresh").await;
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), "fresh");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "fresh");
    let sa = eventually_get(&sas, "default").await;
    let root = eventually_get(&cms, "kube-root-ca.crt").await;
    assert_eq!(sa.secrets, None);
    assert_eq!(root.data.unwrap()["ca.crt"], ca);

    // Deleted, they come back.
    sas.delete("default", &DeleteParams::default())
        .await
        .unwrap();
    cms.delete("kube-root-ca.crt", &DeleteParams::default())
        .await
        .unwrap();
    let old_uid = sa.metadata.uid.unwrap();
    common::eventually("a new default ServiceAccount", || async {
        sas.get_opt("default")
            .await
            .unwrap()
            .filter(|s| s.metadata.uid.as_deref() != Some(old_uid.as_str()))
    })
    .await;
    eventually_get(&cms, "kube-root-ca.crt").await;

    // Changed, the root CA is put back; other metadata stays.
    cms.patch(
        "kube-root-ca.crt",
        &PatchParams::default(),
        &Patch::Merge(json!({
            "metadata": {"labels": {"team": "a"}, "annotations": {"kubernetes.io/description": null}},
            "data": {"ca.crt": "not a CA", "extra": "x"},
        })),
    )
    .await
    .unwrap();
    let fixed = common::eventually("kube-root-ca.crt put right", || async {
        let cm = cms.get("kube-root-ca.crt").await.unwrap();
        let described = cm
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key("kubernetes.io/description"));
        (described
            && cm
                .data
                .as_ref()
                .is_some_and(|d| d.len() == 1 && d["ca.crt"] == ca))
        .then_some(cm)
    })
    .await;
    assert_eq!(fixed.metadata.labels.unwrap()["team"], "a");

    if kubectl::available() {
        let (code, out, err) = kubectl::run(
            &server,
            &[
                "get",
                "serviceaccounts,configmaps",
                "-n",
                "fresh",
                "-o",
                "name",
            ],
            None,
        )
        .await;
        assert_eq!(code, 0, "{err}");
        assert_eq!(out, "serviceaccount/default\nconfigmap/kube-root-ca.crt\n");
        let (code, out, _) = kubectl::run(
            &server,
            &[
                "get",
                "configmap",
                "kube-root-ca.crt",
                "-n",
                "fresh",
                "-o",
                "jsonpath={.data.ca\\.crt}",
            ],
            None,
        )
        .await;
        assert_eq!((code, out), (0, ca.clone()));
    }

    // A logical cluster has them from its first request on.
    let c1 = server
        .client_for(&format!("{}/clusters/c1", server.url))
        .await;
    let sa = Api::<ServiceAccount>::namespaced(c1.clone(), "kube-public")
        .get_opt("default")
        .await
        .unwrap();
    assert!(sa.is_some());
    let root = Api::<ConfigMap>::namespaced(c1, "default")
        .get("kube-root-ca.crt")
        .await
        .unwrap();
    assert_eq!(root.data.unwrap()["ca.crt"], ca);
}

#[tokio::test]
async fn a_terminating_namespace_is_emptied_and_not_filled_again() {
    let (_server, client) = common::server().await;
    create_namespace(&client, "doomed").await;
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), "doomed");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "doomed");
    eventually_get(&sas, "default").await;
    eventually_get(&cms, "kube-root-ca.crt").await;
    // Something that keeps the namespace terminating for a while.
    let held: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
    )
    .unwrap();
    cms.create(&PostParams::default(), &held).await.unwrap();

    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    // The namespace controller removes the published objects with everything else.
    let emptied_at = common::eventually("the namespace emptied but for `held`", || async {
        let sa_list = sas.list(&Default::default()).await.unwrap();
        let cm_names: Vec<String> = cms
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect();
        (sa_list.items.is_empty() && cm_names == ["held"])
            .then_some(sa_list.metadata.resource_version.unwrap())
    })
    .await;

    // The namespace goes once `held` lets go.
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    common::eventually("the namespace gone", || async {
        namespaces
            .get_opt("doomed")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;

    // Made again under the same name, the namespace gets a new ServiceAccount; it is the first
    // one made since the namespace was emptied, so none was made while it terminated.
    let mut events = sas
        .watch(&WatchParams::default(), &emptied_at)
        .await
        .unwrap()
        .boxed();
    create_namespace(&client, "doomed").await;
    let recreated = eventually_get(&sas, "default").await;
    let first = tokio::time::timeout(std::time::Duration::from_secs(10), events.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    match first {
        WatchEvent::Added(sa) => assert_eq!(sa.metadata.uid, recreated.metadata.uid),
        other => panic!("unexpected first event {other:?}"),
    }
}

#[tokio::test]
async fn the_kubernetes_service_and_the_authentication_config_map() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let port = i32::from(server.serving.local_addr.port());
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let expected_ports =
        json!([{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]);
    let target_port_is_ours = || async {
        services
            .get_opt("kubernetes")
            .await
            .unwrap()
            .filter(|s| serde_json::to_value(&s.spec).unwrap()["ports"] == expected_ports)
    };
    let svc = common::eventually(
        "default/kubernetes on the serving port",
        target_port_is_ours,
    )
    .await;
    let spec = serde_json::to_value(&svc.spec).unwrap();
    assert_eq!(spec["type"], "ClusterIP");
    assert_eq!(spec["clusterIP"], "10.96.0.1");
    assert_eq!(spec["clusterIPs"], json!(["10.96.0.1"]));
    assert_eq!(spec["sessionAffinity"], "None");
    assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
    assert_eq!(spec.get("selector"), None);
    assert_eq!(
        serde_json::to_value(&svc.metadata.labels).unwrap(),
        json!({"component": "apiserver", "provider": "kubernetes"})
    );

    // Changed ports and type are put back; deleted, it comes back.
    services
        .patch(
            "kubernetes",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"type": "NodePort", "ports": [
                {"name": "https", "port": 443, "protocol": "TCP", "targetPort": 1}]}})),
        )
        .await
        .unwrap();
    let fixed = common::eventually("default/kubernetes put right", || async {
        target_port_is_ours()
            .await
            .filter(|s| s.spec.as_ref().unwrap().type_.as_deref() == Some("ClusterIP"))
    })
    .await;
    services
        .delete("kubernetes", &DeleteParams::default())
        .await
        .unwrap();
    common::eventually("default/kubernetes made again", || async {
        target_port_is_ours()
            .await
            .filter(|s| s.metadata.uid != fixed.metadata.uid)
    })
    .await;

    // The client CA, for extension API servers and webhooks that authenticate clients.
    let ca = ca_of(&server);
    let system: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-system");
    let auth = system
        .get("extension-apiserver-authentication")
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&auth.data).unwrap(),
        json!({"client-ca-file": ca})
    );
    system
        .delete(
            "extension-apiserver-authentication",
            &DeleteParams::default(),
        )
        .await
        .unwrap();
    let back = eventually_get(&system, "extension-apiserver-authentication").await;
    assert_eq!(back.data.unwrap()["client-ca-file"], ca);

    // Bound to kube's `extension-apiserver-authentication-reader` Role, a component reads it
    // (and nothing else in kube-system).
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "webhook-auth-reader", "namespace": "kube-system"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "extension-apiserver-authentication-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "webhook"}],
    }))
    .unwrap();
    Api::<RoleBinding>::namespaced(client.clone(), "kube-system")
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    let webhook = kube::Client::new(
        server.server.service_as(ocm_apiserver::Identity {
            user: "webhook".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }),
        "default",
    );
    let as_webhook: Api<ConfigMap> = Api::namespaced(webhook, "kube-system");
    let read = as_webhook
        .get("extension-apiserver-authentication")
        .await
        .unwrap();
    assert_eq!(read.data.unwrap()["client-ca-file"], ca);
    match as_webhook.get("kube-root-ca.crt").await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 403),
        other => panic!("expected 403, got {other:?}"),
    }

    if kubectl::available() {
        let (code, out, err) = kubectl::run(&server, &["get", "service", "kubernetes"], None).await;
        assert_eq!(code, 0, "{err}");
        let rows = kubectl::rows(&out);
        assert_eq!(
            rows[0],
            [
                "NAME",
                "TYPE",
                "CLUSTER-IP",
                "EXTERNAL-IP",
                "PORT(S)",
                "AGE"
            ]
        );
        assert_eq!(
            rows[1][..5],
            ["kubernetes", "ClusterIP", "10.96.0.1", "<none>", "443/TCP"]
        );
        let (code, out, _) = kubectl::run(
            &server,
            &[
                "get",
                "configmap",
                "-n",
                "kube-system",
                "extension-apiserver-authentication",
                "-o",
                "jsonpath={.data.client-ca-file}",
            ],
            None,
        )
        .await;
        assert_eq!((code, out), (0, ca));
    }
}
