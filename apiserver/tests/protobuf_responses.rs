//! Protobuf responses over HTTPS: an `Accept` whose best match is
//! `application/vnd.kubernetes.protobuf` gets kube's protobuf for built-in kinds (objects,
//! lists, Status errors, length-prefixed watch events) and kube's 406 for custom resources
//! (whose metadata still comes in protobuf).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use http::Request;
use http_body_util::BodyExt;
use ocm_apiserver_protobuf::decode_body;
use ocm_apiserver_protobuf::wire::{WireValue, records};
use serde_json::{Value, json};

use crate::common;
use crate::common::Answer;
use crate::common::send_json as send;
use crate::common::tls::TlsServer;

const PB: &str = "application/vnd.kubernetes.protobuf";
const JSON: &str = "application/json";

impl Answer {
    /// The body as JSON, decoded from protobuf when it is protobuf.
    fn value(&self) -> Value {
        if self.content_type == PB {
            decode_body(&self.body).unwrap_or_else(|err| panic!("protobuf body: {err}"))
        } else {
            serde_json::from_slice(&self.body).unwrap()
        }
    }

    /// The object of a 201 answered in protobuf.
    fn created(&self, what: &str) -> Value {
        assert_eq!(
            self.code,
            201,
            "{what}: {}",
            String::from_utf8_lossy(&self.body)
        );
        assert_eq!(self.content_type, PB, "{what}");
        self.value()
    }
}

/// GETs `uri` as JSON and as protobuf until both are read at one resourceVersion (other
/// writers — the namespace controllers — may change the object between two reads).
async fn same_read(client: &kube::Client, uri: &str) -> (Value, Value) {
    common::eventually(uri, || async {
        let before = send(client, "GET", uri, JSON, None).await;
        let pb = send(client, "GET", uri, PB, None).await;
        let after = send(client, "GET", uri, JSON, None).await;
        assert_eq!((before.code, pb.code), (200, 200));
        assert_eq!(pb.content_type, PB);
        let (before, after) = (before.value(), after.value());
        (before == after).then(|| (before, pb.value()))
    })
    .await
}

/// Creates each object (its body in `body_media`, JSON or protobuf) with the answer in
/// protobuf; checks the answer against the object the server then holds, and that get and
/// list read the same in protobuf as in JSON.
async fn create_and_read_both_ways(
    client: &kube::Client,
    body_media: &str,
    objects: &[(&str, Value)],
) {
    for (collection, object) in objects {
        let body = if body_media == PB {
            ocm_apiserver_protobuf::encode_body(object).unwrap()
        } else {
            serde_json::to_vec(object).unwrap()
        };
        let created = common::send_accept(client, "POST", collection, PB, Some((body_media, body)))
            .await
            .created(collection);
        let item = format!(
            "{collection}/{}",
            object["metadata"]["name"].as_str().unwrap()
        );
        // get: the protobuf body decodes to exactly the JSON.
        let (mut json_body, pb_body) = same_read(client, &item).await;
        go_empty_status(&mut json_body, &pb_body);
        assert_eq!(pb_body, json_body, "get of {item}");
        if created["metadata"]["resourceVersion"] == json_body["metadata"]["resourceVersion"] {
            assert_eq!(created, json_body, "create of {item}");
        }
        // What the body said is what was stored (with the server's defaults).
        assert_eq!(created["spec"], json_body["spec"], "{item}");
        // list: the XList message, items and list metadata.
        let (mut json_list, pb_list) = same_read(client, &format!("{collection}?limit=500")).await;
        if let (Some(json_items), Some(pb_items)) = (
            json_list["items"].as_array_mut(),
            pb_list["items"].as_array(),
        ) {
            for (json_item, pb_item) in json_items.iter_mut().zip(pb_items) {
                go_empty_status(json_item, pb_item);
            }
        }
        assert_eq!(pb_list, json_list, "list of {collection}");
        assert!(pb_list["metadata"]["resourceVersion"].is_string());
    }
}

/// Go writes an empty status struct (kube's JSON has `"status": {}` too); this server's JSON
/// leaves it out.
fn go_empty_status(json: &mut Value, pb: &Value) {
    if json.get("status").is_none() && pb.get("status") == Some(&json!({})) {
        json["status"] = json!({});
    }
    // A nil list Go writes without omitempty (an autoscaler's `status.currentMetrics`) is
    // `null` in the protobuf's JSON; this server's JSON leaves it out (see Known gaps).
    if let (Some(Value::Object(js)), Some(Value::Object(ps))) =
        (json.get_mut("status"), pb.get("status"))
    {
        for (key, value) in ps {
            if value.is_null() && !js.contains_key(key) {
                js.insert(key.clone(), Value::Null);
            }
        }
    }
}

#[tokio::test]
async fn configmaps_secrets_and_namespaces_read_back_as_their_json() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let objects = [
        (
            "/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": "pbns", "labels": {"team": "a"}}}),
        ),
        (
            "/api/v1/namespaces/pbns/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "cm", "labels": {"b": "2", "a": "1"},
                                "annotations": {"note": "x"}},
                   "data": {"k": "v", "empty": ""}, "binaryData": {"bin": "AP8="},
                   "immutable": false}),
        ),
        (
            "/api/v1/namespaces/pbns/secrets",
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "s", "finalizers": ["example.com/keep"]},
                   "data": {"token": "c2VjcmV0"}, "stringData": {"plain": "text"},
                   "type": "Opaque"}),
        ),
    ];
    create_and_read_both_ways(&client, JSON, &objects).await;
    // update and patch answer protobuf too.
    let item = "/api/v1/namespaces/pbns/configmaps/cm";
    let mut current = send(&client, "GET", item, JSON, None).await.value();
    current["data"]["k"] = json!("v2");
    let updated = send(&client, "PUT", item, PB, Some(&current)).await;
    assert_eq!((updated.code, updated.content_type.as_str()), (200, PB));
    assert_eq!(updated.value()["data"]["k"], "v2");
    // The secret's stringData was folded into data, as kube does.
    let secret = send(
        &client,
        "GET",
        "/api/v1/namespaces/pbns/secrets/s",
        PB,
        None,
    )
    .await;
    assert_eq!(secret.value()["data"]["plain"], "dGV4dA==");
    // delete: the object (here still present, held by its finalizer).
    let deleted = send(
        &client,
        "DELETE",
        "/api/v1/namespaces/pbns/secrets/s",
        PB,
        None,
    )
    .await;
    assert_eq!((deleted.code, deleted.content_type.as_str()), (200, PB));
    let deleted = deleted.value();
    assert_eq!(deleted["kind"], "Secret");
    assert!(
        deleted["metadata"]["deletionTimestamp"].is_string(),
        "{deleted}"
    );
    // delete of an object that goes at once: a Success Status.
    let gone = send(&client, "DELETE", item, PB, None).await;
    assert_eq!((gone.code, gone.content_type.as_str()), (200, PB));
    let json_gone = {
        let again = json!({"metadata": {"name": "cm2"}});
        let c = send(
            &client,
            "POST",
            "/api/v1/namespaces/pbns/configmaps",
            JSON,
            Some(&again),
        )
        .await;
        assert_eq!(c.code, 201);
        send(
            &client,
            "DELETE",
            "/api/v1/namespaces/pbns/configmaps/cm2",
            JSON,
            None,
        )
        .await
    };
    let (pb_gone, json_gone) = (gone.value(), json_gone.value());
    assert_eq!(
        pb_gone["kind"], json_gone["kind"],
        "{pb_gone} / {json_gone}"
    );
}

#[tokio::test]
async fn errors_are_status_objects_in_protobuf() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let uri = "/api/v1/namespaces/default/configmaps/nope";
    let json_404 = send(&client, "GET", uri, JSON, None).await;
    let pb_404 = send(&client, "GET", uri, PB, None).await;
    assert_eq!((pb_404.code, pb_404.content_type.as_str()), (404, PB));
    assert!(pb_404.body.starts_with(b"k8s\0"));
    let status = pb_404.value();
    assert_eq!(status, json_404.value());
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["apiVersion"], "v1");
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["message"], "configmaps \"nope\" not found");
    assert_eq!(status["code"], 404);
    // An unknown resource is answered before any handler, in protobuf too.
    let unknown = "/api/v1/namespaces/default/nosuchthings";
    let json_unknown = send(&client, "GET", unknown, JSON, None).await;
    let pb_unknown = send(&client, "GET", unknown, PB, None).await;
    assert_eq!(
        (pb_unknown.code, pb_unknown.content_type.as_str()),
        (404, PB)
    );
    assert_eq!(pb_unknown.value(), json_unknown.value());
    // A 422 lists its causes the same way.
    let bad = json!({"metadata": {"name": "Not_Valid"}});
    let json_422 = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        JSON,
        Some(&bad),
    )
    .await;
    let pb_422 = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        PB,
        Some(&bad),
    )
    .await;
    assert_eq!((pb_422.code, pb_422.content_type.as_str()), (422, PB));
    assert_eq!(pb_422.value(), json_422.value());
}

#[tokio::test]
async fn accept_order_decides_and_tables_stay_json() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let uri = "/api/v1/namespaces/default/configmaps";
    let first = send(&client, "GET", uri, &format!("{PB}, {JSON}"), None).await;
    assert_eq!(first.content_type, PB);
    let second = send(&client, "GET", uri, &format!("{JSON}, {PB}"), None).await;
    assert_eq!(second.content_type, JSON);
    // A Table has no protobuf form: the clause is skipped, or 406 when it is the only one.
    let table_pb = format!("{PB};as=Table;g=meta.k8s.io;v=v1");
    let only = send(&client, "GET", uri, &table_pb, None).await;
    assert_eq!(only.code, 406);
    let then_json = send(&client, "GET", uri, &format!("{table_pb}, {JSON}"), None).await;
    assert_eq!(
        (then_json.code, then_json.content_type.as_str()),
        (200, JSON)
    );
    // PartialObjectMetadata has one.
    let meta = send(
        &client,
        "GET",
        uri,
        &format!("{PB};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"),
        None,
    )
    .await;
    assert_eq!((meta.code, meta.content_type.as_str()), (200, PB));
    assert_eq!(meta.value()["kind"], "PartialObjectMetadataList");
}

const WIDGETS: &str = "/apis/test.ocm.io/v1/namespaces/default/widgets";

/// A server with the Widget CRD and a Widget `w` (labelled `a: b`).
async fn widget_server() -> (TlsServer, kube::Client) {
    let server = TlsServer::start().await;
    let client = server.client().await;
    common::crd::install_widget(&client).await;
    let widget = json!({"apiVersion": "test.ocm.io/v1", "kind": "Widget",
                        "metadata": {"name": "w", "labels": {"a": "b"}},
                        "spec": {"color": "red"}});
    assert_eq!(
        send(&client, "POST", WIDGETS, JSON, Some(&widget))
            .await
            .code,
        201
    );
    (server, client)
}

#[tokio::test]
async fn custom_resources_answer_json_or_406_and_metadata_in_protobuf() {
    let (_server, client) = widget_server().await;
    // kube's CRD handler answers plain objects in JSON and YAML only: a protobuf-only
    // Accept is refused by negotiation (the 406 Status itself in protobuf, as kube's error
    // writer negotiates it without the endpoint's restrictions).
    for uri in [
        format!("{WIDGETS}/w"),
        WIDGETS.to_owned(),
        format!("{WIDGETS}?watch=true"),
    ] {
        let answer = send(&client, "GET", &uri, PB, None).await;
        assert_eq!(
            (answer.code, answer.content_type.as_str()),
            (406, PB),
            "{uri}"
        );
        let status = answer.value();
        assert_eq!(status["reason"], "NotAcceptable", "{uri}");
        assert_eq!(
            status["message"],
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
            "{uri}"
        );
    }
    // A later JSON clause is used; errors still follow the first clause.
    let both = format!("{PB}, {JSON}");
    let json = send(&client, "GET", &format!("{WIDGETS}/w"), &both, None).await;
    assert_eq!((json.code, json.content_type.as_str()), (200, JSON));
    assert_eq!(json.value()["spec"]["color"], "red");
    let missing = send(&client, "GET", &format!("{WIDGETS}/nope"), &both, None).await;
    assert_eq!((missing.code, missing.content_type.as_str()), (404, PB));
    assert_eq!(missing.value()["reason"], "NotFound");
    // Their metadata has a protobuf form.
    let meta = send(
        &client,
        "GET",
        &format!("{WIDGETS}/w"),
        &format!("{PB};as=PartialObjectMetadata;g=meta.k8s.io;v=v1"),
        None,
    )
    .await;
    assert_eq!((meta.code, meta.content_type.as_str()), (200, PB));
    let meta = meta.value();
    assert_eq!(meta["kind"], "PartialObjectMetadata");
    assert_eq!(meta["metadata"]["name"], "w");
}

/// client-go's metadata client (upstream's garbage collectors use it) lists and watches any
/// kind as `PartialObjectMetadata` in protobuf first.
#[tokio::test]
async fn the_metadata_client_lists_and_watches_custom_resources_in_protobuf() {
    let (_server, client) = widget_server().await;
    let accept = |kind: &str| {
        format!("{PB};as={kind};g=meta.k8s.io;v=v1,{JSON};as={kind};g=meta.k8s.io;v=v1,{JSON}")
    };
    let list = send(
        &client,
        "GET",
        WIDGETS,
        &accept("PartialObjectMetadataList"),
        None,
    )
    .await;
    assert_eq!((list.code, list.content_type.as_str()), (200, PB));
    let list = list.value();
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["items"][0]["metadata"]["labels"], json!({"a": "b"}));
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();

    let req = Request::builder()
        .uri(format!("{WIDGETS}?watch=true&resourceVersion={rv}"))
        .header("accept", accept("PartialObjectMetadata"))
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = client.send(req).await.unwrap();
    assert_eq!(
        resp.headers()["content-type"],
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let mut frames = Frames {
        body: resp.into_body(),
        buf: Vec::new(),
    };
    let deleted = send(&client, "DELETE", &format!("{WIDGETS}/w"), JSON, None).await;
    assert_eq!(deleted.code, 200);
    let (kind, object, _) = frames.next().await;
    assert_eq!(kind, "DELETED");
    assert_eq!(object["kind"], "PartialObjectMetadata");
    assert_eq!(object["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(object["metadata"]["name"], "w");
}

/// Reads length-prefixed frames off a streaming body.
struct Frames {
    body: kube::client::Body,
    buf: Vec<u8>,
}

impl Frames {
    /// The next WatchEvent as (type, object JSON, the object's raw protobuf body).
    async fn next(&mut self) -> (String, Value, Vec<u8>) {
        loop {
            if self.buf.len() >= 4 {
                let len = u32::from_be_bytes(self.buf[..4].try_into().unwrap()) as usize;
                if self.buf.len() >= 4 + len {
                    let event: Vec<u8> = self.buf.drain(..4 + len).skip(4).collect();
                    return parse_event(&event);
                }
            }
            let frame = tokio::time::timeout(Duration::from_secs(10), self.body.frame())
                .await
                .expect("a watch event within 10 s")
                .expect("the stream stays open")
                .unwrap();
            if let Ok(data) = frame.into_data() {
                self.buf.extend_from_slice(&data);
            }
        }
    }
}

/// WatchEvent{type = 1, object = 2: RawExtension{raw = 1}}; raw is `k8s\0` + Unknown.
fn parse_event(event: &[u8]) -> (String, Value, Vec<u8>) {
    let fields = records(event).unwrap();
    let text = |n: u32| {
        fields.iter().find_map(|(num, v)| match v {
            WireValue::Bytes(b) if *num == n => Some(b.to_vec()),
            _ => None,
        })
    };
    let kind = String::from_utf8(text(1).unwrap()).unwrap();
    let ext = text(2).unwrap();
    let raw = match records(&ext).unwrap().first() {
        Some((1, WireValue::Bytes(b))) => b.to_vec(),
        other => panic!("RawExtension without raw: {other:?}"),
    };
    assert!(
        raw.starts_with(b"k8s\0"),
        "the event object carries the magic"
    );
    (kind, decode_body(&raw).unwrap(), raw)
}

#[tokio::test]
async fn watch_streams_length_prefixed_protobuf_events() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let cms = "/api/v1/namespaces/default/configmaps";
    let uri = format!(
        "{cms}?watch=true&allowWatchBookmarks=true&sendInitialEvents=true\
         &resourceVersionMatch=NotOlderThan&fieldSelector=metadata.name%3Dw1"
    );
    let req = Request::builder()
        .uri(&uri)
        .header("accept", PB)
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = client.send(req).await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.headers()["content-type"],
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let mut frames = Frames {
        body: resp.into_body(),
        buf: Vec::new(),
    };
    // The initial events end with a bookmark carrying kube's annotation.
    let (kind, bookmark, _) = frames.next().await;
    assert_eq!(kind, "BOOKMARK");
    assert_eq!(bookmark["kind"], "ConfigMap");
    assert_eq!(
        bookmark["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert!(bookmark["metadata"]["resourceVersion"].is_string());

    let created = send(
        &client,
        "POST",
        cms,
        JSON,
        Some(&json!({"metadata": {"name": "w1"}, "data": {"a": "1"}})),
    )
    .await;
    assert_eq!(created.code, 201);
    let (kind, object, raw) = frames.next().await;
    assert_eq!(kind, "ADDED");
    assert_eq!(object, created.value());
    // The object is the same protobuf body a GET returns.
    let get = send(&client, "GET", &format!("{cms}/w1"), PB, None).await;
    assert_eq!(raw, get.body);

    let mut changed = object.clone();
    changed["data"]["a"] = json!("2");
    let updated = send(&client, "PUT", &format!("{cms}/w1"), JSON, Some(&changed)).await;
    assert_eq!(updated.code, 200);
    let (kind, object, _) = frames.next().await;
    assert_eq!(kind, "MODIFIED");
    assert_eq!(object, updated.value());

    let deleted = send(&client, "DELETE", &format!("{cms}/w1"), JSON, None).await;
    assert_eq!(deleted.code, 200);
    let (kind, object, _) = frames.next().await;
    assert_eq!(kind, "DELETED");
    assert_eq!(object["metadata"]["name"], "w1");
    assert_eq!(object["data"]["a"], "2");
}

#[tokio::test]
async fn watch_bookmarks_arrive_in_protobuf() {
    let server = TlsServer::start_with(ocm_apiserver::ApiServerConfig {
        bookmark_interval: Duration::from_millis(50),
        ..Default::default()
    })
    .await;
    let client = server.client().await;
    let req = Request::builder()
        .uri("/api/v1/namespaces/default/secrets?watch=true&allowWatchBookmarks=true")
        .header("accept", PB)
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = client.send(req).await.unwrap();
    let mut frames = Frames {
        body: resp.into_body(),
        buf: Vec::new(),
    };
    // Past any replayed events, a periodic bookmark comes.
    loop {
        let (kind, object, _) = frames.next().await;
        if kind == "BOOKMARK" {
            assert_eq!(object["kind"], "Secret");
            assert_eq!(object["apiVersion"], "v1");
            assert!(object["metadata"]["resourceVersion"].is_string());
            break;
        }
    }
}

#[tokio::test]
async fn flowcontrol_and_admission_policies_travel_as_protobuf() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let objects = [
        (
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
            json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
                   "metadata": {"name": "pb-fs"},
                   "spec": {"priorityLevelConfiguration": {"name": "pb-pl"},
                            "matchingPrecedence": 500,
                            "distinguisherMethod": {"type": "ByUser"},
                            "rules": [{"subjects": [{"kind": "Group",
                                                     "group": {"name": "system:authenticated"}}],
                                       "resourceRules": [{"verbs": ["get"], "apiGroups": [""],
                                                          "resources": ["configmaps"],
                                                          "namespaces": ["*"]}]}]}}),
        ),
        (
            "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
            json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1",
                   "kind": "PriorityLevelConfiguration", "metadata": {"name": "pb-pl"},
                   "spec": {"type": "Limited",
                            "limited": {"nominalConcurrencyShares": 10,
                                        "limitResponse": {"type": "Queue",
                                            "queuing": {"queues": 16, "handSize": 4,
                                                        "queueLengthLimit": 50}}}}}),
        ),
        (
            "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
            json!({"apiVersion": "admissionregistration.k8s.io/v1",
                   "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "pb-vap"},
                   "spec": {"failurePolicy": "Fail",
                            "matchConstraints": {"resourceRules": [{
                                "apiGroups": [""], "apiVersions": ["v1"],
                                "operations": ["CREATE"], "resources": ["configmaps"]}]},
                            "validations": [{"expression": "has(object.data)",
                                             "message": "data is required"}]}}),
        ),
    ];
    // The bodies are read from protobuf and the answers written in it.
    create_and_read_both_ways(&client, PB, &objects).await;
}

/// The kinds users ship with their applications read and write protobuf, as client-go's
/// typed clients send and ask for it.
#[tokio::test]
async fn application_kinds_travel_as_protobuf() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let ns = "/namespaces/default";
    let objects = [
        (
            format!("/api/v1{ns}/persistentvolumeclaims"),
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "pb"},
                   "spec": {"accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "1Gi"}}}}),
        ),
        (
            "/api/v1/persistentvolumes".to_string(),
            json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pb"},
                   "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                            "csi": {"driver": "disk.example.com", "volumeHandle": "v-1"}}}),
        ),
        (
            "/apis/storage.k8s.io/v1/storageclasses".to_string(),
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                   "metadata": {"name": "pb"}, "provisioner": "disk.example.com",
                   "allowVolumeExpansion": true}),
        ),
        (
            format!("/apis/policy/v1{ns}/poddisruptionbudgets"),
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                   "metadata": {"name": "pb"},
                   "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "pb"}}}}),
        ),
        (
            format!("/apis/networking.k8s.io/v1{ns}/ingresses"),
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                   "metadata": {"name": "pb"},
                   "spec": {"defaultBackend": {"service": {"name": "web",
                                                           "port": {"name": "http"}}}}}),
        ),
        (
            "/apis/networking.k8s.io/v1/ingressclasses".to_string(),
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                   "metadata": {"name": "pb"},
                   "spec": {"controller": "example.com/ingress",
                            "parameters": {"kind": "Params", "name": "p"}}}),
        ),
        (
            format!("/apis/networking.k8s.io/v1{ns}/networkpolicies"),
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                   "metadata": {"name": "pb"},
                   "spec": {"podSelector": {}, "ingress": [{"from": [{"ipBlock":
                            {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}]}]}}),
        ),
        (
            format!("/apis/autoscaling/v2{ns}/horizontalpodautoscalers"),
            json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                   "metadata": {"name": "pb"},
                   "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
                            "maxReplicas": 3,
                            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 30}}}}),
        ),
        (
            format!("/apis/resource.k8s.io/v1{ns}/resourceclaims"),
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                   "metadata": {"name": "pb"},
                   "spec": {"devices": {"requests": [{"name": "r",
                            "exactly": {"deviceClassName": "gpu"}}]}}}),
        ),
        (
            "/apis/resource.k8s.io/v1/deviceclasses".to_string(),
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                   "metadata": {"name": "pb"},
                   "spec": {"selectors": [{"cel": {"expression": "true"}}]}}),
        ),
    ];
    let objects: Vec<(&str, Value)> = objects
        .iter()
        .map(|(uri, obj)| (uri.as_str(), obj.clone()))
        .collect();
    create_and_read_both_ways(&client, PB, &objects).await;
    create_and_read_both_ways(&client, JSON, &[]).await;
}
