//! `apiregistration.k8s.io/v1` APIServices as kube-apiserver 1.35 serves them: a local
//! APIService per served group-version (built-in ones labelled `automanaged: onstart`, custom
//! resource groups' `automanaged: true`, added and removed with their CRDs), `Available`
//! conditions — `Local` for local ones, and kube's reasons for a Service-backed one this
//! server cannot reach — kube's validation texts, `kubectl get` columns, and discovery
//! listing groups in kube's priority order.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIGroupList;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

use crate::common::tls::TlsServer;
use crate::common::{self, crd, kubectl, status_of};

/// The `Available` condition's (status, reason, message).
fn available(a: &APIService) -> (String, String, String) {
    a.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Available"))
        .map(|c| {
            (
                c.status.clone(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
        .unwrap_or_default()
}

async fn wait_available(api: &Api<APIService>, name: &str, want: (&str, &str, &str)) {
    common::eventually(&format!("{name} {want:?}"), || async {
        let a = api.get_opt(name).await.unwrap()?;
        let (s, r, m) = available(&a);
        (s == want.0 && r == want.1 && m == want.2).then_some(())
    })
    .await;
}

#[tokio::test]
async fn local_apiservices_follow_the_served_group_versions() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let api: Api<APIService> = Api::all(client.clone());
    let list = api.list(&Default::default()).await.unwrap().items;
    let names: Vec<String> = list
        .iter()
        .map(|a| a.metadata.name.clone().unwrap())
        .collect();
    for name in [
        "v1.",
        "v1.apps",
        "v2.autoscaling",
        "v1.batch",
        "v1.networking.k8s.io",
        "v1.resource.k8s.io",
        "v1.apiextensions.k8s.io",
        "v1.flowcontrol.apiserver.k8s.io",
    ] {
        assert!(names.contains(&name.to_owned()), "{name} in {names:?}");
    }
    assert!(!names.contains(&"v1.apiregistration.k8s.io".to_owned()));
    let apps = api.get("v1.apps").await.unwrap();
    assert_eq!(
        available(&apps),
        (
            "True".into(),
            "Local".into(),
            "Local APIServices are always available".into()
        )
    );
    let spec = apps.spec.unwrap();
    assert_eq!(
        (spec.group_priority_minimum, spec.version_priority),
        (17800, 15)
    );
    assert!(spec.service.is_none());
    assert_eq!(
        apps.metadata.labels.unwrap()["kube-aggregator.kubernetes.io/automanaged"],
        "onstart"
    );

    // A CRD's group-version gets one while it is served.
    crd::install_widget(&client).await;
    let widgets = common::eventually("v1.test.ocm.io", || async {
        api.get_opt("v1.test.ocm.io").await.unwrap()
    })
    .await;
    let spec = widgets.spec.clone().unwrap();
    assert_eq!(
        (spec.group_priority_minimum, spec.version_priority),
        (1000, 100)
    );
    assert_eq!(
        widgets.metadata.labels.clone().unwrap()["kube-aggregator.kubernetes.io/automanaged"],
        "true"
    );
    wait_available(
        &api,
        "v1.test.ocm.io",
        ("True", "Local", "Local APIServices are always available"),
    )
    .await;
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    crds.delete("widgets.test.ocm.io", &DeleteParams::default())
        .await
        .unwrap();
    common::eventually("v1.test.ocm.io removed", || async {
        api.get_opt("v1.test.ocm.io")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;

    // A new logical cluster has them as soon as anyone looks.
    let other: Api<APIService> = Api::all(
        server
            .client_for(&format!("{}/clusters/c1", server.url))
            .await,
    );
    let there = other.get("v1.apps").await.unwrap();
    assert_eq!(available(&there).1, "Local");
}

#[tokio::test]
async fn a_service_backed_apiservice_says_why_it_is_unavailable() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let api: Api<APIService> = Api::all(client.clone());
    let metrics: APIService = serde_json::from_value(json!({
        "metadata": {"name": "v1beta1.metrics.k8s.io"},
        "spec": {"group": "metrics.k8s.io", "version": "v1beta1",
                 "groupPriorityMinimum": 100, "versionPriority": 100,
                 "insecureSkipTLSVerify": true,
                 "service": {"namespace": "kube-system", "name": "metrics-server"}}}))
    .unwrap();
    let created = api.create(&PostParams::default(), &metrics).await.unwrap();
    assert_eq!(created.spec.unwrap().service.unwrap().port, Some(443));
    let name = "v1beta1.metrics.k8s.io";
    wait_available(
        &api,
        name,
        (
            "False",
            "ServiceNotFound",
            "service/metrics-server in \"kube-system\" is not present",
        ),
    )
    .await;
    let services: Api<Service> = Api::namespaced(client.clone(), "kube-system");
    let svc = |port: i32| -> Service {
        serde_json::from_value(json!({"metadata": {"name": "metrics-server"},
            "spec": {"ports": [{"port": port, "targetPort": 4443}]}}))
        .unwrap()
    };
    services
        .create(&PostParams::default(), &svc(8443))
        .await
        .unwrap();
    wait_available(
        &api,
        name,
        (
            "False",
            "ServicePortError",
            "service/metrics-server in \"kube-system\" is not listening on port 443",
        ),
    )
    .await;
    services
        .delete("metrics-server", &DeleteParams::default())
        .await
        .unwrap();
    services
        .create(&PostParams::default(), &svc(443))
        .await
        .unwrap();
    wait_available(
        &api,
        name,
        (
            "False",
            "EndpointsNotFound",
            "cannot find endpointslices for service/metrics-server in \"kube-system\"",
        ),
    )
    .await;

    // kube's validation texts.
    let bad: APIService = serde_json::from_value(json!({
        "metadata": {"name": "v1.wrong.example.com"},
        "spec": {"group": "example.com", "version": "v1", "groupPriorityMinimum": 0,
                 "versionPriority": 100, "caBundle": "AAEC"}}))
    .unwrap();
    let (code, reason, message) =
        status_of(api.create(&PostParams::default(), &bad).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert_eq!(
        message,
        "APIService.apiregistration.k8s.io \"v1.wrong.example.com\" is invalid: [metadata.name: Invalid value: \"v1.wrong.example.com\": must be `spec.version+\".\"+spec.group`: \"v1.example.com\", spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000, spec.caBundle: Invalid value: \"3 bytes\": local APIServices may not have a caBundle]"
    );

    if kubectl::available() {
        let (code, out, err) = kubectl::run(&server, &["get", "apiservices"], None).await;
        assert_eq!(code, 0, "{err}");
        let rows = kubectl::rows(&out);
        assert_eq!(rows[0], ["NAME", "SERVICE", "AVAILABLE", "AGE"]);
        let row = |name: &str| rows.iter().find(|r| r[0] == name).cloned().unwrap();
        assert_eq!(row("v1.apps")[1..3], ["Local", "True"]);
        assert_eq!(
            row(name)[1..4],
            ["kube-system/metrics-server", "False", "(EndpointsNotFound)"]
        );
    }
}

/// Legacy discovery lists the aggregator's group first, then the groups by their
/// APIServices' priority (custom resource groups last), as kube does.
#[tokio::test]
async fn discovery_lists_groups_in_kubes_order() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    crd::install_widget(&client).await;
    let text = client
        .request_text(http::Request::get("/apis").body(Vec::new()).unwrap())
        .await
        .unwrap();
    let groups: APIGroupList = serde_json::from_str(&text).unwrap();
    let names: Vec<&str> = groups.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "apiregistration.k8s.io",
            "apps",
            "events.k8s.io",
            "authentication.k8s.io",
            "authorization.k8s.io",
            "autoscaling",
            "batch",
            "certificates.k8s.io",
            "networking.k8s.io",
            "policy",
            "rbac.authorization.k8s.io",
            "storage.k8s.io",
            "admissionregistration.k8s.io",
            "apiextensions.k8s.io",
            "scheduling.k8s.io",
            "coordination.k8s.io",
            "resource.k8s.io",
            "flowcontrol.apiserver.k8s.io",
            "test.ocm.io",
        ]
    );
    let v: Value = serde_json::from_str(
        &client
            .request_text(
                http::Request::get("/apis/apiregistration.k8s.io/v1")
                    .body(Vec::new())
                    .unwrap(),
            )
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(v["resources"][0]["name"], "apiservices");
    assert_eq!(v["resources"][1]["name"], "apiservices/status");
}
