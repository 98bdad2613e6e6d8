//! `GET /openapi/v2`: the Swagger 2.0 document (JSON and gnostic protobuf), its ETag, its
//! republication when CRDs change, and real kubectl's client-side validation that reads it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::crd::{crd_from_json, install};
use common::tls::TlsServer;
use http::Request;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams};
use serde_json::{Value, json};

const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
const MANAGED_CLUSTER: &str = "io.open-cluster-management.cluster.v1.ManagedCluster";

/// A cluster-scoped CRD shaped like OCM's ManagedCluster.
fn managed_cluster_crd() -> CustomResourceDefinition {
    crd_from_json(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "managedclusters.cluster.open-cluster-management.io"},
        "spec": {
            "group": "cluster.open-cluster-management.io",
            "scope": "Cluster",
            "names": {"plural": "managedclusters", "singular": "managedcluster", "kind": "ManagedCluster", "listKind": "ManagedClusterList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "description": "ManagedCluster represents the desired state and current status of a managed cluster.",
                    "properties": {
                        "spec": {"type": "object", "properties": {
                            "hubAcceptsClient": {"type": "boolean"},
                            "leaseDurationSeconds": {"type": "integer", "format": "int32"},
                            "managedClusterClientConfigs": {"type": "array", "items": {"type": "object", "properties": {
                                "url": {"type": "string"},
                                "caBundle": {"type": "string", "format": "byte"},
                            }}},
                            "taints": {"type": "array", "nullable": true, "items": {"type": "object", "properties": {"key": {"type": "string"}}}},
                            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        }},
                        "status": {"type": "object", "properties": {"version": {"type": "object", "properties": {"kubernetes": {"type": "string"}}}}},
                    },
                }},
            }],
        },
    }))
}

/// A GET answer: status, headers and body.
struct Answer {
    code: u16,
    headers: http::HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map(|v| v.to_str().unwrap())
            .unwrap_or("")
    }
}

async fn get(client: &kube::Client, headers: &[(&str, &str)]) -> Answer {
    let mut req = Request::builder().method("GET").uri("/openapi/v2");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let (code, headers, body) =
        common::send_raw(client, req.body(kube::client::Body::empty()).unwrap()).await;
    Answer {
        code,
        headers,
        body,
    }
}

#[tokio::test]
async fn document_shape() {
    let (_server, client) = common::server().await;
    install(&client, managed_cluster_crd()).await;
    let answer = get(&client, &[("accept", "application/json")]).await;
    assert_eq!(answer.code, 200);
    assert_eq!(answer.header("content-type"), "application/json");
    assert_eq!(answer.header("vary"), "Accept");
    let doc = answer.json();
    assert_eq!(doc["swagger"], "2.0");
    let defs = &doc["definitions"];
    let cm = &defs["io.k8s.api.core.v1.ConfigMap"];
    assert_eq!(
        cm["x-kubernetes-group-version-kind"],
        json!([{"group": "", "version": "v1", "kind": "ConfigMap"}])
    );
    assert_eq!(cm["properties"]["data"]["type"], "object");
    assert_eq!(
        defs["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "version": "v1", "kind": "Deployment"}])
    );
    let mc = &defs[MANAGED_CLUSTER];
    assert_eq!(
        mc["x-kubernetes-group-version-kind"],
        json!([{"group": "cluster.open-cluster-management.io", "version": "v1", "kind": "ManagedCluster"}])
    );
    assert_eq!(
        mc["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    let spec = &mc["properties"]["spec"]["properties"];
    assert_eq!(spec["hubAcceptsClient"], json!({"type": "boolean"}));
    // v2 has no nullable: the nullable list accepts anything.
    assert_eq!(spec["taints"], json!({}));
    assert_eq!(
        spec["extra"],
        json!({"x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(
        defs["io.open-cluster-management.cluster.v1.ManagedClusterList"]["properties"]["items"]["items"]
            ["$ref"],
        format!("#/definitions/{MANAGED_CLUSTER}")
    );
    let cms = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps"];
    assert_eq!(cms["get"]["x-kubernetes-action"], "list");
    assert_eq!(
        cms["post"]["x-kubernetes-group-version-kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    let patch = &doc["paths"]["/apis/cluster.open-cluster-management.io/v1/managedclusters/{name}"]
        ["patch"];
    assert_eq!(patch["x-kubernetes-action"], "patch");
    assert_eq!(
        patch["consumes"],
        json!([
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml"
        ])
    );
    assert!(
        patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
    );
    assert!(
        doc["paths"]["/apis/cluster.open-cluster-management.io/v1/managedclusters/{name}/status"]
            ["put"]
            .is_object()
    );
}

#[tokio::test]
async fn protobuf_and_not_acceptable() {
    let (_server, client) = common::server().await;
    let json = get(&client, &[]).await;
    assert_eq!(json.header("content-type"), "application/json");
    let proto = get(&client, &[("accept", PROTOBUF)]).await;
    assert_eq!(proto.code, 200);
    assert_eq!(
        proto.header("content-type"),
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
    // Document.swagger (field 1) = "2.0" comes first.
    assert_eq!(&proto.body[..5], b"\x0a\x032.0");
    assert_eq!(proto.header("etag"), json.header("etag"));
    let refused = get(&client, &[("accept", "application/yaml")]).await;
    assert_eq!(refused.code, 406);
    assert!(refused.body.is_empty());
}

#[tokio::test]
async fn republished_when_crds_change() {
    let (_server, client) = common::server().await;
    let before = get(&client, &[]).await;
    let etag = before.header("etag").to_owned();
    assert!(etag.starts_with('"') && etag.len() == 130, "{etag}");
    assert!(before.json()["definitions"][MANAGED_CLUSTER].is_null());
    let unchanged = get(&client, &[("if-none-match", &etag)]).await;
    assert_eq!(unchanged.code, 304);
    assert!(unchanged.body.is_empty());
    assert_eq!(unchanged.header("etag"), etag);

    install(&client, managed_cluster_crd()).await;
    let after = get(&client, &[("if-none-match", &etag)]).await;
    assert_eq!(after.code, 200);
    assert_ne!(after.header("etag"), etag);
    assert!(after.json()["definitions"][MANAGED_CLUSTER].is_object());

    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.delete(
        "managedclusters.cluster.open-cluster-management.io",
        &DeleteParams::default(),
    )
    .await
    .unwrap();
    common::eventually("the definition to go", || async {
        get(&client, &[]).await.json()["definitions"][MANAGED_CLUSTER]
            .is_null()
            .then_some(())
    })
    .await;
    assert_eq!(get(&client, &[]).await.header("etag"), etag);
}

const LIST: &str = "apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: settings
    namespace: default
  data:
    a: b
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: web
    namespace: default
    labels: {app: web}
  spec:
    replicas: 2
    selector: {matchLabels: {app: web}}
    strategy:
      type: RollingUpdate
      rollingUpdate: {maxSurge: 25%, maxUnavailable: 1}
    template:
      metadata:
        labels: {app: web}
      spec:
        containers:
        - name: web
          image: nginx:1.27
          ports: [{containerPort: 80, protocol: TCP}]
          env: [{name: A, value: b}]
          resources:
            limits: {cpu: 100m, memory: 64Mi}
            requests: {cpu: 0.1, memory: 1000}
          readinessProbe:
            httpGet: {path: /, port: 80}
- apiVersion: cluster.open-cluster-management.io/v1
  kind: ManagedCluster
  metadata:
    name: cluster1
  spec:
    hubAcceptsClient: true
    managedClusterClientConfigs:
    - url: https://cluster1:6443
";

#[tokio::test]
async fn kubectl_creates_a_list_with_validation() {
    if !common::kubectl::available() {
        return;
    }
    let server = TlsServer::start().await;
    install(&server.client().await, managed_cluster_crd()).await;
    let (code, out, err) = common::kubectl::run(&server, &["create", "-f", "-"], Some(LIST)).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "configmap/settings created\ndeployment.apps/web created\nmanagedcluster.cluster.open-cluster-management.io/cluster1 created\n"
    );

    // Inside a List, kubectl validates each item against /openapi/v2 itself.
    let bad_list = LIST
        .replace("settings", "settings2")
        .replace("name: web\n", "name: web2\n")
        .replace("cluster1", "cluster2")
        .replace(
            "hubAcceptsClient: true",
            "hubAcceptsClient: true\n    bogus: 1",
        );
    let (code, _, err) =
        common::kubectl::run(&server, &["create", "-f", "-"], Some(&bad_list)).await;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("ValidationError(ManagedCluster.spec): unknown field \"bogus\" in io.open-cluster-management.cluster.v1.ManagedCluster.spec"),
        "{err}"
    );

    // A single object is validated by the server (fieldValidation=Strict).
    let bad = "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\nmetadata:\n  name: cluster3\nspec:\n  bogus: 1\n";
    let (code, _, err) = common::kubectl::run(
        &server,
        &["create", "--validate=strict", "-f", "-"],
        Some(bad),
    )
    .await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("unknown field \"spec.bogus\""), "{err}");

    let (code, out, err) =
        common::kubectl::run(&server, &["explain", "managedclusters.spec"], None).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("hubAcceptsClient"), "{out}");
}

#[tokio::test]
async fn kubectl_apply_keeps_merging_lists_by_key() {
    if !common::kubectl::available() {
        return;
    }
    let server = TlsServer::start().await;
    let pod = |containers: &str| {
        format!(
            "apiVersion: v1\nkind: PodTemplate\nmetadata:\n  name: t\n  namespace: default\ntemplate:\n  spec:\n    containers:\n{containers}"
        )
    };
    let both = "    - name: a\n      image: a\n    - name: b\n      image: b\n";
    let (code, _, err) =
        common::kubectl::run(&server, &["apply", "-f", "-"], Some(&pod(both))).await;
    assert_eq!(code, 0, "{err}");
    let one = "    - name: b\n      image: b2\n";
    let (code, _, err) =
        common::kubectl::run(&server, &["apply", "-f", "-"], Some(&pod(one))).await;
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = common::kubectl::run(
        &server,
        &[
            "get",
            "podtemplate",
            "t",
            "-o",
            "jsonpath={range .template.spec.containers[*]}{.name}={.image} {end}",
        ],
        None,
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "b=b2 ");
}

#[tokio::test]
async fn kubectl_apply_updates_a_custom_resource_by_merge_patch() {
    if !common::kubectl::available() {
        return;
    }
    let server = TlsServer::start().await;
    install(&server.client().await, managed_cluster_crd()).await;
    let cluster = |accepts: bool| {
        format!(
            "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\nmetadata:\n  name: c1\nspec:\n  hubAcceptsClient: {accepts}\n"
        )
    };
    let (code, _, err) =
        common::kubectl::run(&server, &["apply", "-f", "-"], Some(&cluster(false))).await;
    assert_eq!(code, 0, "{err}");
    // The second apply patches: kubectl picks the patch type from the PATCH operation's
    // media types in the OpenAPI v3 document, and a custom resource takes no strategic merge.
    let (code, _, err) =
        common::kubectl::run(&server, &["apply", "-f", "-"], Some(&cluster(true))).await;
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = common::kubectl::run(
        &server,
        &[
            "get",
            "managedcluster",
            "c1",
            "-o",
            "jsonpath={.spec.hubAcceptsClient}",
        ],
        None,
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "true");
}
