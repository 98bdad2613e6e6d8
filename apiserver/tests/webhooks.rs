//! Admission and conversion webhooks through real HTTPS: a test webhook server (its own thread
//! and runtime, a CA and serving certificate from `TlsMaterial`) whose answers depend on the
//! URL path, and a kube client on the in-process server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use common::{create_cm, status_of};

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use futures::{StreamExt as _, TryStreamExt as _};
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
    WatchEvent, WatchParams,
};
use ocm_apiserver::tls::TlsMaterial;
use serde_json::{Value, json};
use tower::ServiceExt as _;

/// A test webhook server on 127.0.0.1 with its own CA.
struct HookServer {
    base: String,
    ca_bundle: String,
    seen: Arc<Mutex<Vec<(String, Value)>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    _dir: tempfile::TempDir,
}

impl Drop for HookServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl HookServer {
    fn start() -> HookServer {
        let dir = tempfile::tempdir().unwrap();
        let tls = TlsMaterial::load_or_create(&dir.path().join("pki"), &[]).unwrap();
        let config = tls.server_config().unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let recorded = seen.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let acceptor = tokio_rustls::TlsAcceptor::from(config);
                loop {
                    tokio::select! {
                        _ = &mut stopped => break,
                        accepted = listener.accept() => {
                            let Ok((tcp, _)) = accepted else { continue };
                            let acceptor = acceptor.clone();
                            let seen = recorded.clone();
                            tokio::spawn(async move {
                                let Ok(stream) = acceptor.accept(tcp).await else { return };
                                let service = hyper::service::service_fn(move |req| {
                                    handle(req, seen.clone())
                                });
                                let _ = hyper_util::server::conn::auto::Builder::new(
                                    TokioExecutor::new(),
                                )
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                            });
                        }
                    }
                }
            });
        });
        HookServer {
            base: format!("https://127.0.0.1:{port}"),
            ca_bundle: base64::engine::general_purpose::STANDARD.encode(tls.ca_cert.as_bytes()),
            seen,
            stop: Some(stop),
            _dir: dir,
        }
    }

    fn client_config(&self, path: &str) -> Value {
        json!({"url": format!("{}{path}", self.base), "caBundle": self.ca_bundle})
    }

    /// Reviews received on `path`.
    fn seen(&self, path: &str) -> Vec<Value> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, v)| v.clone())
            .collect()
    }
}

fn admission(uid: &Value, response: Value) -> Value {
    let mut response = response;
    response["uid"] = uid.clone();
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

fn patch_response(uid: &Value, patch: Value) -> Value {
    let patch = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
    admission(
        uid,
        json!({"allowed": true, "patchType": "JSONPatch", "patch": patch}),
    )
}

/// `v1alpha1` has `spec.colour`, `v1beta1` has `spec.color`.
fn convert_gizmo(mut obj: Value, desired: &str) -> Value {
    let (from, to) = if desired.ends_with("/v1beta1") {
        ("colour", "color")
    } else {
        ("color", "colour")
    };
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
        && let Some(v) = spec.remove(from)
    {
        spec.insert(to.into(), v);
    }
    obj["apiVersion"] = json!(desired);
    obj
}

async fn handle(
    req: hyper::Request<hyper::body::Incoming>,
    seen: Arc<Mutex<Vec<(String, Value)>>>,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or("").to_owned();
    let body = req.into_body().collect().await.unwrap().to_bytes();
    let mut review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    review["query"] = json!(query);
    seen.lock().unwrap().push((path.clone(), review.clone()));
    let uid = review["request"]["uid"].clone();
    let object = review["request"]["object"].clone();
    let answer = match path.as_str() {
        "/allow" => admission(&uid, json!({"allowed": true})),
        "/deny" => admission(
            &uid,
            json!({"allowed": false, "status": {"code": 400, "reason": "BadRequest", "message": "no red things here"}}),
        ),
        "/deny-bare" => admission(&uid, json!({"allowed": false})),
        "/warn" => admission(
            &uid,
            json!({"allowed": true, "warnings": ["be careful", "really"]}),
        ),
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            admission(&uid, json!({"allowed": true}))
        }
        "/garbage" => {
            return Ok(hyper::Response::new(Full::new(Bytes::from_static(
                b"this is not a review",
            ))));
        }
        "/wrong-uid" => admission(&json!("someone-else"), json!({"allowed": true})),
        "/patch" => {
            let patch = if object.pointer("/metadata/labels").is_some() {
                json!([{"op": "add", "path": "/metadata/labels/patched", "value": "yes"}])
            } else {
                json!([{"op": "add", "path": "/metadata/labels", "value": {"patched": "yes"}}])
            };
            patch_response(&uid, patch)
        }
        // Counts its calls in an annotation (reinvoked when a later webhook changes things).
        "/count" => {
            let n: u64 = object
                .pointer("/metadata/annotations/count")
                .and_then(Value::as_str)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            let patch = if object.pointer("/metadata/annotations").is_some() {
                json!([{"op": "add", "path": "/metadata/annotations/count", "value": (n + 1).to_string()}])
            } else {
                json!([{"op": "add", "path": "/metadata/annotations", "value": {"count": "1"}}])
            };
            patch_response(&uid, patch)
        }
        // Only valid on a v1alpha1 Gizmo (`spec.colour`).
        "/paint" => patch_response(
            &uid,
            json!([{"op": "replace", "path": "/spec/colour", "value": "green"}]),
        ),
        "/convert" => {
            let request = &review["request"];
            let desired = request["desiredAPIVersion"].as_str().unwrap_or("");
            let converted: Vec<Value> = request["objects"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(|o| convert_gizmo(o, desired))
                .collect();
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                "response": {"uid": request["uid"], "convertedObjects": converted, "result": {"status": "Success"}}})
        }
        _ => {
            let mut r = hyper::Response::new(Full::new(Bytes::from_static(b"not found")));
            *r.status_mut() = hyper::StatusCode::NOT_FOUND;
            return Ok(r);
        }
    };
    let mut response = hyper::Response::new(Full::new(Bytes::from(answer.to_string())));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

/// A URL nothing listens on.
fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("https://127.0.0.1:{port}")
}

fn configmap_rules() -> Value {
    json!([{"operations": ["CREATE", "UPDATE", "DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}])
}

fn webhook(name: &str, client_config: Value, extra: Value) -> Value {
    let mut h = json!({
        "name": name,
        "clientConfig": client_config,
        "rules": configmap_rules(),
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        h[k] = v;
    }
    h
}

async fn validating(client: &kube::Client, name: &str, hooks: Vec<Value>) {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let config =
        serde_json::from_value(json!({"metadata": {"name": name}, "webhooks": hooks})).unwrap();
    api.create(&PostParams::default(), &config).await.unwrap();
}

async fn mutating(client: &kube::Client, name: &str, hooks: Vec<Value>) {
    let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let config =
        serde_json::from_value(json!({"metadata": {"name": name}, "webhooks": hooks})).unwrap();
    api.create(&PostParams::default(), &config).await.unwrap();
}

fn cm(name: &str, labels: Value) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": labels}, "data": {"a": "b"}}),
    )
    .unwrap()
}

#[tokio::test]
async fn configurations_are_served_defaulted_and_in_discovery() {
    let (_server, client) = common::server().await;
    let hooks = HookServer::start();
    mutating(
        &client,
        "m",
        vec![webhook(
            "m.example.com",
            hooks.client_config("/allow"),
            json!({}),
        )],
    )
    .await;
    let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let got = serde_json::to_value(api.get("m").await.unwrap()).unwrap();
    let h = &got["webhooks"][0];
    assert_eq!(h["failurePolicy"], "Fail");
    assert_eq!(h["matchPolicy"], "Equivalent");
    assert_eq!(h["namespaceSelector"], json!({}));
    assert_eq!(h["objectSelector"], json!({}));
    assert_eq!(h["timeoutSeconds"], 10);
    assert_eq!(h["reinvocationPolicy"], "Never");
    assert_eq!(h["rules"][0]["scope"], "*");
    let discovery = kube::discovery::Discovery::new(client.clone())
        .run()
        .await
        .unwrap();
    let group = discovery
        .get("admissionregistration.k8s.io")
        .expect("group in discovery");
    let names: Vec<String> = group
        .recommended_resources()
        .into_iter()
        .map(|(r, _)| r.plural)
        .collect();
    assert!(
        names.contains(&"validatingwebhookconfigurations".to_owned()),
        "{names:?}"
    );
    assert!(
        names.contains(&"mutatingwebhookconfigurations".to_owned()),
        "{names:?}"
    );
}

#[tokio::test]
async fn invalid_configurations_are_refused_with_422() {
    let (_server, client) = common::server().await;
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let bad = serde_json::from_value(json!({"metadata": {"name": "bad"}, "webhooks": [
        {"name": "short.name", "clientConfig": {"url": "http://127.0.0.1/x"}, "rules": configmap_rules(),
         "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 31},
        {"name": "a.example.com", "clientConfig": {"url": "https://127.0.0.1/x", "service": {"name": "s", "namespace": "n"}},
         "rules": configmap_rules(), "admissionReviewVersions": ["v1beta1"]},
        {"name": "a.example.com", "clientConfig": {"url": "https://127.0.0.1/x"}, "rules": configmap_rules(),
         "sideEffects": "Some", "admissionReviewVersions": ["v1"]},
        {"name": "b.example.com", "clientConfig": {"url": "https://127.0.0.1/x"}, "rules": configmap_rules(),
         "sideEffects": "None", "admissionReviewVersions": ["v1"],
         "matchConditions": [
             {"name": "declared", "expression": "object.metadata.name != '' && request.userInfo.username != ''"},
             {"name": "params", "expression": "params.x == 1"},
             {"name": "ns", "expression": "namespaceObject.metadata.name == 'a'"},
         ]},
    ]}))
    .unwrap();
    let (code, reason, message) =
        status_of(api.create(&PostParams::default(), &bad).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert!(
        message.starts_with(
            "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"bad\" is invalid: ["
        ),
        "{message}"
    );
    for part in [
        "webhooks[0].name: Invalid value: \"short.name\": should be a domain with at least three segments separated by dots",
        "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
        "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme",
        "webhooks[1].sideEffects: Required value: must specify one of None, NoneOnDryRun",
        "webhooks[1].admissionReviewVersions: Invalid value: [\"v1beta1\"]: must include at least one of v1",
        "webhooks[1].clientConfig: Required value: exactly one of url or service is required",
        "webhooks[2].name: Duplicate value: \"a.example.com\"",
        "webhooks[2].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
        // A webhook's match conditions see object, oldObject, request and authorizer only.
        "webhooks[3].matchConditions[1].expression: Invalid value: \"params.x == 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'params'",
        "webhooks[3].matchConditions[2].expression: Invalid value: \"namespaceObject.metadata.name == 'a'\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'namespaceObject'",
    ] {
        assert!(message.contains(part), "missing {part} in {message}");
    }
    assert!(
        !message.contains("matchConditions[0]"),
        "declared variables are fine: {message}"
    );
    assert!(api.get_opt("bad").await.unwrap().is_none());
}

#[tokio::test]
async fn failure_policy_fail_refuses_and_ignore_continues() {
    let (_server, client) = common::server().await;
    let hooks = HookServer::start();
    let down = closed_port_url();
    let cases = [
        (
            "down.example.com",
            json!({"url": format!("{down}/allow"), "caBundle": hooks.ca_bundle}),
            10,
        ),
        ("slow.example.com", hooks.client_config("/slow"), 1),
        ("garbage.example.com", hooks.client_config("/garbage"), 10),
        (
            "wronguid.example.com",
            hooks.client_config("/wrong-uid"),
            10,
        ),
        (
            "service.example.com",
            json!({"service": {"name": "s", "namespace": "default"}}),
            10,
        ),
    ];
    for (i, (name, config, timeout)) in cases.iter().enumerate() {
        let cfg = format!("fail-{i}");
        validating(
            &client,
            &cfg,
            vec![webhook(
                name,
                config.clone(),
                json!({"timeoutSeconds": timeout}),
            )],
        )
        .await;
        let (code, reason, message) = status_of(
            create_cm(&client, "default", &cm(&format!("c{i}"), json!({})))
                .await
                .unwrap_err(),
        );
        assert_eq!((code, reason.as_str()), (500, "InternalError"), "{message}");
        let prefix = format!("Internal error occurred: failed calling webhook \"{name}\": ");
        assert!(message.starts_with(&prefix), "{message}");
        let rest = &message[prefix.len()..];
        match *name {
            "down.example.com" => assert!(
                rest.starts_with(&format!(
                    "failed to call webhook: Post \"{down}/allow?timeout=10s\": "
                )),
                "{rest}"
            ),
            "slow.example.com" => assert_eq!(
                rest,
                format!(
                    "failed to call webhook: Post \"{}/slow?timeout=1s\": context deadline exceeded",
                    hooks.base
                )
            ),
            "garbage.example.com" => {
                assert!(rest.starts_with("failed to call webhook: "), "{rest}")
            }
            "wronguid.example.com" => assert!(
                rest.starts_with("received invalid webhook response: expected response.uid=\""),
                "{rest}"
            ),
            _ => assert_eq!(
                rest,
                "failed to call webhook: service \"default/s\" has no endpoints this server can reach"
            ),
        }
        // The same webhook with failurePolicy Ignore lets the request through.
        let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
        api.delete(&cfg, &DeleteParams::default()).await.unwrap();
        validating(
            &client,
            &format!("ignore-{i}"),
            vec![webhook(
                name,
                config.clone(),
                json!({"timeoutSeconds": timeout, "failurePolicy": "Ignore"}),
            )],
        )
        .await;
        create_cm(&client, "default", &cm(&format!("c{i}"), json!({})))
            .await
            .unwrap();
        api.delete(&format!("ignore-{i}"), &DeleteParams::default())
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn denials_pass_the_webhook_status_through() {
    let (_server, client) = common::server().await;
    let hooks = HookServer::start();
    validating(
        &client,
        "deny",
        vec![webhook(
            "deny.example.com",
            hooks.client_config("/deny"),
            json!({"objectSelector": {"matchLabels": {"deny": "status"}}}),
        )],
    )
    .await;
    validating(
        &client,
        "deny-bare",
        vec![webhook(
            "bare.example.com",
            hooks.client_config("/deny-bare"),
            json!({"objectSelector": {"matchLabels": {"deny": "bare"}}}),
        )],
    )
    .await;
    let err = create_cm(&client, "default", &cm("a", json!({"deny": "status"})))
        .await
        .unwrap_err();
    assert_eq!(
        status_of(err),
        (
            400,
            "BadRequest".to_owned(),
            "admission webhook \"deny.example.com\" denied the request: no red things here"
                .to_owned()
        )
    );
    let err = create_cm(&client, "default", &cm("b", json!({"deny": "bare"})))
        .await
        .unwrap_err();
    assert_eq!(
        status_of(err),
        (
            403,
            String::new(),
            "admission webhook \"bare.example.com\" denied the request without explanation"
                .to_owned()
        )
    );
    // Nothing was stored; unlabelled objects pass.
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    assert!(api.get_opt("a").await.unwrap().is_none());
    create_cm(&client, "default", &cm("c", json!({})))
        .await
        .unwrap();
    // Deletes are reviewed with the old object.
    let mut labelled = cm("d", json!({}));
    create_cm(&client, "default", &labelled).await.unwrap();
    labelled.metadata.labels = Some([("deny".to_owned(), "bare".to_owned())].into());
    let err = api
        .replace("d", &PostParams::default(), &{
            let mut x = labelled.clone();
            x.metadata.resource_version = None;
            x
        })
        .await
        .unwrap_err();
    assert_eq!(status_of(err).0, 403);
    let seen = hooks.seen("/deny-bare");
    let last = seen.last().unwrap();
    assert_eq!(last["request"]["operation"], "UPDATE");
    assert_eq!(last["request"]["oldObject"]["metadata"]["name"], "d");
    assert_eq!(last["request"]["options"]["kind"], "UpdateOptions");
    assert_eq!(
        last["request"]["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        last["request"]["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(last["request"]["namespace"], "default");
    assert_eq!(last["request"]["userInfo"]["username"], "admin");
    assert_eq!(last["query"], "timeout=10s");
}

#[tokio::test]
async fn selectors_include_and_exclude() {
    let (_server, client) = common::server().await;
    let hooks = HookServer::start();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for (name, labels) in [("team-a", json!({"team": "a"})), ("plain", json!({}))] {
        let ns =
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap();
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
    }
    validating(
        &client,
        "ns",
        vec![webhook(
            "ns.example.com",
            hooks.client_config("/deny"),
            json!({"namespaceSelector": {"matchLabels": {"team": "a"}}}),
        )],
    )
    .await;
    validating(
        &client,
        "obj",
        vec![webhook(
            "obj.example.com",
            hooks.client_config("/deny-bare"),
            json!({"objectSelector": {"matchExpressions": [{"key": "guard", "operator": "In", "values": ["on"]}]}}),
        )],
    )
    .await;
    let err = create_cm(&client, "team-a", &cm("x", json!({})))
        .await
        .unwrap_err();
    assert_eq!(status_of(err).0, 400);
    create_cm(&client, "plain", &cm("x", json!({})))
        .await
        .unwrap();
    let err = create_cm(&client, "plain", &cm("y", json!({"guard": "on"})))
        .await
        .unwrap_err();
    assert_eq!(status_of(err).0, 403);
    create_cm(&client, "plain", &cm("z", json!({"guard": "off"})))
        .await
        .unwrap();
    assert_eq!(hooks.seen("/deny").len(), 1);
    assert_eq!(hooks.seen("/deny-bare").len(), 1);
}

#[tokio::test]
async fn mutating_patches_are_stored_and_ifneeded_webhooks_are_reinvoked() {
    let (_server, client) = common::server().await;
    let hooks = HookServer::start();
    // "a-count" runs first (configuration name order) and is reinvoked after "b-patch"
    // changes the object.
    mutating(
        &client,
        "a-count",
        vec![webhook(
            "count.example.com",
            hooks.client_config("/count"),
            json!({"reinvocationPolicy": "IfNeeded"}),
        )],
    )
    .await;
    mutating(
        &client,
        "b-patch",
        vec![webhook(
            "patch.example.com",
            hooks.client_config("/patch"),
            json!({}),
        )],
    )
    .await;
    let created = create_cm(&client, "default", &cm("m", json!({})))
        .await
        .unwrap();
    let labels = created.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("patched").map(String::as_str), Some("yes"));
    let annotations = created.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(annotations.get("count").map(String::as_str), Some("2"));
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let got = api.get("m").await.unwrap();
    assert_eq!(got.metadata.labels, created.metadata.labels);
    assert_eq!(got.metadata.annotations, created.metadata.annotations);
    assert_eq!(hooks.seen("/count").len(), 2);
    assert_eq!(hooks.seen("/patch").len(), 1);
    // When only the IfNeeded webhook itself changed the object, it is not called again.
    let created = create_cm(&client, "default", &cm("m2", json!({"patched": "yes"})))
        .await
        .unwrap();
    let annotations = created.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(annotations.get("count").map(String::as_str), Some("1"));
    assert_eq!(hooks.seen("/count").len(), 3);
    // A validating webhook may not patch.
    validating(
        &client,
        "v-patch",
        vec![webhook(
            "vpatch.example.com",
            hooks.client_config("/patch"),
            json!({}),
        )],
    )
    .await;
    let (code, _, message) = status_of(
        create_cm(&client, "default", &cm("n", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 500);
    assert_eq!(
        message,
        "Internal error occurred: failed calling webhook \"vpatch.example.com\": received invalid webhook response: validating webhooks may not return patches"
    );
}

#[tokio::test]
async fn dry_run_requests_reach_side_effect_free_webhooks_with_dry_run_set() {
    let (_server, client) = common::server().await;
    let hooks = HookServer::start();
    validating(
        &client,
        "dry",
        vec![
            webhook("none.example.com", hooks.client_config("/allow"), json!({})),
            webhook(
                "noneondryrun.example.com",
                hooks.client_config("/allow"),
                json!({"sideEffects": "NoneOnDryRun"}),
            ),
        ],
    )
    .await;
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    api.create(
        &PostParams {
            dry_run: true,
            ..Default::default()
        },
        &cm("dry", json!({})),
    )
    .await
    .unwrap();
    assert!(api.get_opt("dry").await.unwrap().is_none());
    let seen = hooks.seen("/allow");
    assert_eq!(seen.len(), 2);
    for review in &seen {
        assert_eq!(review["request"]["dryRun"], true);
        assert_eq!(
            review["request"]["options"],
            json!({"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions", "dryRun": ["All"]})
        );
    }
    // Webhooks with side effects cannot be configured in v1.
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let some = serde_json::from_value(json!({"metadata": {"name": "some"}, "webhooks": [
        webhook("some.example.com", hooks.client_config("/allow"), json!({"sideEffects": "Unknown"}))]}))
    .unwrap();
    let (code, _, message) = status_of(
        configs
            .create(&PostParams::default(), &some)
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422, "{message}");
}

#[tokio::test]
async fn warnings_reach_the_client() {
    let (server, client) = common::server().await;
    let hooks = HookServer::start();
    mutating(
        &client,
        "warn",
        vec![webhook(
            "warn.example.com",
            hooks.client_config("/warn"),
            json!({}),
        )],
    )
    .await;
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w"}});
    let req = http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let resp = server.service().oneshot(req).await.unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let warnings: Vec<String> = resp
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    assert_eq!(warnings, ["299 - \"be careful\"", "299 - \"really\""]);
}

#[tokio::test]
async fn match_conditions_skip_the_call() {
    let (_server, client) = common::server().await;
    let hooks = HookServer::start();
    validating(
        &client,
        "cond",
        vec![webhook(
            "cond.example.com",
            hooks.client_config("/deny-bare"),
            json!({"matchConditions": [
                {"name": "not-exempt", "expression": "object.metadata.name != 'exempt'"},
                {"name": "admins-too", "expression": "request.userInfo.username != ''"},
            ]}),
        )],
    )
    .await;
    create_cm(&client, "default", &cm("exempt", json!({})))
        .await
        .unwrap();
    assert!(hooks.seen("/deny-bare").is_empty());
    let err = create_cm(&client, "default", &cm("other", json!({})))
        .await
        .unwrap_err();
    assert_eq!(status_of(err).0, 403);
    assert_eq!(hooks.seen("/deny-bare").len(), 1);
    // An expression that cannot be evaluated fails the request under failurePolicy Fail.
    validating(
        &client,
        "cond-error",
        vec![webhook(
            "conderror.example.com",
            hooks.client_config("/allow"),
            json!({"matchConditions": [{"name": "broken", "expression": "object.nothing.here == 1"}]}),
        )],
    )
    .await;
    let (code, _, message) = status_of(
        create_cm(&client, "default", &cm("exempt2", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 500);
    assert!(
        message.starts_with("Internal error occurred: failed calling webhook \"conderror.example.com\": failed to evaluate match condition"),
        "{message}"
    );
}

#[tokio::test]
async fn subresource_rules_see_status_writes() {
    let (_server, client) = common::server().await;
    common::crd::install_widget(&client).await;
    let hooks = HookServer::start();
    validating(
        &client,
        "status",
        vec![webhook(
            "status.example.com",
            hooks.client_config("/deny-bare"),
            json!({"rules": [{"operations": ["UPDATE"], "apiGroups": ["test.ocm.io"], "apiVersions": ["v1"], "resources": ["widgets/status"]}]}),
        )],
    )
    .await;
    let api: Api<common::crd::Widget> = Api::default_namespaced(client.clone());
    let mut w = common::crd::Widget::new(
        "w",
        common::crd::WidgetSpec {
            color: "red".into(),
            size: None,
        },
    );
    let created = api.create(&PostParams::default(), &w).await.unwrap();
    w.metadata.resource_version = created.metadata.resource_version.clone();
    w.spec.color = "blue".into();
    let updated = api.replace("w", &PostParams::default(), &w).await.unwrap();
    assert!(hooks.seen("/deny-bare").is_empty());
    let mut with_status = updated.clone();
    with_status.status = Some(common::crd::WidgetStatus {
        observed_generation: 2,
        ready: true,
    });
    let err = api
        .replace_status("w", &PostParams::default(), &with_status)
        .await
        .unwrap_err();
    assert_eq!(status_of(err).0, 403);
    let seen = hooks.seen("/deny-bare");
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0]["request"]["subResource"], "status");
    assert_eq!(seen[0]["request"]["requestSubResource"], "status");
}

#[tokio::test]
async fn configurations_are_per_logical_cluster() {
    let (server, client) = common::server().await;
    server.ensure_cluster("c1").await.unwrap();
    let c1 = kube::Client::new(server.service_for_cluster("c1"), "default");
    let hooks = HookServer::start();
    validating(
        &c1,
        "deny",
        vec![webhook(
            "deny.example.com",
            hooks.client_config("/deny-bare"),
            json!({}),
        )],
    )
    .await;
    let err = create_cm(&c1, "default", &cm("a", json!({})))
        .await
        .unwrap_err();
    assert_eq!(status_of(err).0, 403);
    create_cm(&client, "default", &cm("a", json!({})))
        .await
        .unwrap();
    // A delete of the configuration takes effect on the next request.
    let api: Api<ValidatingWebhookConfiguration> = Api::all(c1.clone());
    api.delete("deny", &DeleteParams::default()).await.unwrap();
    create_cm(&c1, "default", &cm("a", json!({})))
        .await
        .unwrap();
}

fn gizmo_crd(group: &str, client_config: Value) -> Value {
    let schema = |field: &str| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {field: {"type": "string"}}}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gizmos.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"},
            "versions": [
                {"name": "v1alpha1", "served": true, "storage": true, "schema": schema("colour")},
                {"name": "v1beta1", "served": true, "storage": false, "schema": schema("color")},
            ],
            "conversion": {"strategy": "Webhook", "webhook": {"clientConfig": client_config, "conversionReviewVersions": ["v1"]}},
        }
    })
}

fn gizmos(client: &kube::Client, group: &str, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, version, "Gizmo");
    Api::default_namespaced_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&gvk, "gizmos"),
    )
}

fn gizmo(group: &str, name: &str, color: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1beta1"), "kind": "Gizmo",
        "metadata": {"name": name}, "spec": {"color": color}}))
    .unwrap()
}

#[tokio::test]
async fn crd_conversion_webhooks_convert_on_write_and_read() {
    let (server, client) = common::server().await;
    let hooks = HookServer::start();
    let group = "conv.example.com";
    common::crd::install(
        &client,
        common::crd::crd_from_json(gizmo_crd(group, hooks.client_config("/convert"))),
    )
    .await;
    let beta = gizmos(&client, group, "v1beta1");
    let alpha = gizmos(&client, group, "v1alpha1");
    let created = beta
        .create(&PostParams::default(), &gizmo(group, "g1", "red"))
        .await
        .unwrap();
    assert_eq!(created.data["spec"], json!({"color": "red"}));
    // Stored in v1alpha1, with the field renamed by the webhook.
    let key = ocm_apiserver_storage::ObjectKey::new(
        ocm_apiserver_storage::Bucket::new("", &format!("{group}/gizmos")),
        "default",
        "g1",
    );
    let stored: Value = serde_json::from_slice(&server.store().get(&key).unwrap().value).unwrap();
    assert_eq!(stored["apiVersion"], format!("{group}/v1alpha1"));
    assert_eq!(stored["spec"], json!({"colour": "red"}));
    let a = alpha.get("g1").await.unwrap();
    assert_eq!(a.data["spec"], json!({"colour": "red"}));
    let b = beta.get("g1").await.unwrap();
    assert_eq!(b.data["spec"], json!({"color": "red"}));
    assert_eq!(a.metadata.uid, b.metadata.uid);
    assert_eq!(a.metadata.resource_version, b.metadata.resource_version);
    let listed: Vec<Value> = beta
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|o| o.data["spec"].clone())
        .collect();
    assert_eq!(listed, [json!({"color": "red"})]);
    let listed: Vec<Value> = alpha
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|o| o.data["spec"].clone())
        .collect();
    assert_eq!(listed, [json!({"colour": "red"})]);
    // Watch through v1alpha1 sees an object written through v1beta1 in v1alpha1.
    let rv = a.metadata.resource_version.clone().unwrap();
    let mut events = alpha
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .unwrap()
        .boxed();
    beta.create(&PostParams::default(), &gizmo(group, "g2", "blue"))
        .await
        .unwrap();
    let event = tokio::time::timeout(Duration::from_secs(10), events.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    match event {
        WatchEvent::Added(o) => {
            assert_eq!(o.metadata.name.as_deref(), Some("g2"));
            assert_eq!(o.data["spec"], json!({"colour": "blue"}));
            assert_eq!(o.types.unwrap().api_version, format!("{group}/v1alpha1"));
        }
        other => panic!("unexpected event {other:?}"),
    }
    // A list is converted in one review.
    let before = hooks.seen("/convert").len();
    let listed = beta.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 2);
    assert_eq!(listed.items[1].data["spec"], json!({"color": "blue"}));
    let reviews = hooks.seen("/convert");
    assert_eq!(reviews.len(), before + 1);
    assert_eq!(
        reviews[before]["request"]["objects"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    assert!(!reviews.is_empty());
    assert_eq!(reviews[0]["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(reviews[0]["kind"], "ConversionReview");
    assert_eq!(
        reviews[0]["request"]["desiredAPIVersion"],
        format!("{group}/v1alpha1")
    );
}

/// A watch that began before its CRD had a conversion webhook never presents an object the
/// webhook did not convert: it ends (as kube-apiserver ends watches when a CRD's storage is
/// replaced), and the watch the client starts again presents the object converted.
#[tokio::test]
async fn a_watch_never_presents_unconverted_objects_after_a_conversion_webhook_is_added() {
    let (_server, client) = common::server().await;
    let hooks = HookServer::start();
    let group = "later.example.com";
    let mut crd = gizmo_crd(group, hooks.client_config("/convert"));
    crd["spec"]["conversion"] = json!({"strategy": "None"});
    common::crd::install(&client, common::crd::crd_from_json(crd)).await;
    let beta = gizmos(&client, group, "v1beta1");
    let alpha = gizmos(&client, group, "v1alpha1");
    let mut events = beta
        .watch(&WatchParams::default().timeout(20), "0")
        .await
        .unwrap()
        .boxed();
    // The webhook is configured now, and the server serves the resource with it.
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    crds.patch(
        &format!("gizmos.{group}"),
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"spec": {"conversion": {
            "strategy": "Webhook",
            "webhook": {"clientConfig": hooks.client_config("/convert"),
                        "conversionReviewVersions": ["v1"]}}}})),
    )
    .await
    .unwrap();
    let probe: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1alpha1"), "kind": "Gizmo",
        "metadata": {"name": "probe"}, "spec": {"colour": "grey"}}))
    .unwrap();
    alpha.create(&PostParams::default(), &probe).await.unwrap();
    common::eventually("reads converted by the webhook", || {
        let beta = beta.clone();
        async move {
            let got = beta.get("probe").await.ok()?;
            (got.data["spec"] == json!({"color": "grey"})).then_some(())
        }
    })
    .await;
    // An object written in v1alpha1 reaches the older v1beta1 watch converted.
    let mut written: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1alpha1"), "kind": "Gizmo",
        "metadata": {"name": "g1"}, "spec": {"colour": "red"}}))
    .unwrap();
    written = alpha
        .create(&PostParams::default(), &written)
        .await
        .unwrap();
    let converted = |o: &DynamicObject| {
        o.data["spec"] == json!({"color": "red"})
            && o.types.as_ref().map(|t| t.api_version.as_str())
                == Some(format!("{group}/v1beta1").as_str())
    };
    // The earlier watch either presents it converted or has ended.
    while let Some(event) = tokio::time::timeout(Duration::from_secs(10), events.try_next())
        .await
        .unwrap()
        .unwrap()
    {
        if let WatchEvent::Added(o) = event
            && o.metadata.name == written.metadata.name
        {
            assert!(converted(&o), "{o:?}");
            return;
        }
    }
    let mut again = beta
        .watch(&WatchParams::default().timeout(20), "0")
        .await
        .unwrap()
        .boxed();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), again.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let WatchEvent::Added(o) = event
            && o.metadata.name == written.metadata.name
        {
            assert!(converted(&o), "{o:?}");
            return;
        }
    }
}

#[tokio::test]
async fn crd_conversion_webhook_down_is_a_500() {
    let (_server, client) = common::server().await;
    let hooks = HookServer::start();
    let group = "down.example.com";
    let down = closed_port_url();
    common::crd::install(
        &client,
        common::crd::crd_from_json(gizmo_crd(
            group,
            json!({"url": format!("{down}/convert"), "caBundle": hooks.ca_bundle}),
        )),
    )
    .await;
    let beta = gizmos(&client, group, "v1beta1");
    let (code, reason, message) = status_of(
        beta.create(&PostParams::default(), &gizmo(group, "g1", "red"))
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (500, "InternalError"));
    let prefix = format!(
        "Internal error occurred: conversion webhook for {group}/v1beta1, Kind=Gizmo failed: Post \"{down}/convert?timeout=30s\": "
    );
    assert!(message.starts_with(&prefix), "{message}");
}

#[tokio::test]
async fn crd_conversion_configuration_is_validated() {
    let (_server, client) = common::server().await;
    let mut crd = gizmo_crd(
        "bad.example.com",
        json!({"url": "http://127.0.0.1/convert"}),
    );
    crd["spec"]["conversion"]["webhook"]["conversionReviewVersions"] = json!(["v1beta1"]);
    let api: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    let (code, _, message) = status_of(
        api.create(&PostParams::default(), &common::crd::crd_from_json(crd))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    for part in [
        "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme",
        "spec.conversion.conversionReviewVersions: Invalid value: [\"v1beta1\"]: must include at least one of v1",
    ] {
        assert!(message.contains(part), "missing {part} in {message}");
    }
    let mut crd = gizmo_crd(
        "none.example.com",
        json!({"url": "https://127.0.0.1/convert"}),
    );
    crd["spec"]["conversion"]["strategy"] = json!("None");
    let (code, _, message) = status_of(
        api.create(&PostParams::default(), &common::crd::crd_from_json(crd))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert!(
        message.contains("spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook"),
        "{message}"
    );
}

#[tokio::test]
async fn equivalent_match_policy_converts_the_request_to_the_rules_version() {
    let (server, client) = common::server().await;
    let hooks = HookServer::start();
    let group = "equiv.example.com";
    common::crd::install(
        &client,
        common::crd::crd_from_json(gizmo_crd(group, hooks.client_config("/convert"))),
    )
    .await;
    let alpha_rules = json!([{"operations": ["CREATE"], "apiGroups": [group],
        "apiVersions": ["v1alpha1"], "resources": ["gizmos"]}]);
    // Default matchPolicy (Equivalent): a v1beta1 create reaches the webhook in v1alpha1.
    mutating(
        &client,
        "paint",
        vec![webhook(
            "paint.example.com",
            hooks.client_config("/paint"),
            json!({"rules": alpha_rules}),
        )],
    )
    .await;
    // matchPolicy Exact: v1beta1 requests do not reach it.
    validating(
        &client,
        "exact",
        vec![webhook(
            "exact.example.com",
            hooks.client_config("/allow"),
            json!({"rules": alpha_rules, "matchPolicy": "Exact"}),
        )],
    )
    .await;
    let beta = gizmos(&client, group, "v1beta1");
    let created = beta
        .create(&PostParams::default(), &gizmo(group, "g1", "red"))
        .await
        .unwrap();
    assert_eq!(created.data["spec"], json!({"color": "green"}));
    let reviews = hooks.seen("/paint");
    assert_eq!(reviews.len(), 1);
    let request = &reviews[0]["request"];
    assert_eq!(
        request["kind"],
        json!({"group": group, "version": "v1alpha1", "kind": "Gizmo"})
    );
    assert_eq!(
        request["resource"],
        json!({"group": group, "version": "v1alpha1", "resource": "gizmos"})
    );
    assert_eq!(
        request["requestKind"],
        json!({"group": group, "version": "v1beta1", "kind": "Gizmo"})
    );
    assert_eq!(
        request["requestResource"],
        json!({"group": group, "version": "v1beta1", "resource": "gizmos"})
    );
    assert_eq!(request["object"]["apiVersion"], format!("{group}/v1alpha1"));
    assert_eq!(request["object"]["spec"], json!({"colour": "red"}));
    assert!(hooks.seen("/allow").is_empty());
    let key = ocm_apiserver_storage::ObjectKey::new(
        ocm_apiserver_storage::Bucket::new("", &format!("{group}/gizmos")),
        "default",
        "g1",
    );
    let stored: Value = serde_json::from_slice(&server.store().get(&key).unwrap().value).unwrap();
    assert_eq!(stored["spec"], json!({"colour": "green"}));
    // A v1alpha1 create matches both exactly: no conversion, requestKind = kind.
    let alpha = gizmos(&client, group, "v1alpha1");
    let mut g2 = gizmo(group, "g2", "");
    g2.types.as_mut().unwrap().api_version = format!("{group}/v1alpha1");
    g2.data["spec"] = json!({"colour": "red"});
    alpha.create(&PostParams::default(), &g2).await.unwrap();
    let reviews = hooks.seen("/paint");
    assert_eq!(reviews.len(), 2);
    assert_eq!(reviews[1]["request"]["requestKind"]["version"], "v1alpha1");
    assert_eq!(hooks.seen("/allow").len(), 1);
}

#[tokio::test]
async fn match_conditions_can_ask_the_authorizer() {
    let (_server, client) = common::server().await;
    let hooks = HookServer::start();
    // Called only for requesters who may read /healthz (the admin may) and when the
    // service account default/nobody (bound to nothing) may not create ConfigMaps.
    validating(
        &client,
        "authz",
        vec![webhook(
            "authz.example.com",
            hooks.client_config("/deny"),
            json!({"matchConditions": [
                {"name": "reads-healthz", "expression": "authorizer.path('/healthz').check('get').allowed()"},
                {"name": "nobody-cannot", "expression":
                    "!authorizer.serviceAccount('default', 'nobody').group('').resource('configmaps').namespace('default').check('create').allowed()"},
                {"name": "may-delete-it", "expression": "authorizer.requestResource.check('delete').allowed()"},
            ]}),
        )],
    )
    .await;
    let (code, _, message) = status_of(
        create_cm(&client, "default", &cm("a", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 400, "{message}");
    assert_eq!(
        message,
        "admission webhook \"authz.example.com\" denied the request: no red things here"
    );
    assert_eq!(hooks.seen("/deny").len(), 1);
}
