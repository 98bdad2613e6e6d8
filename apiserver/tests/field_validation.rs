//! `fieldValidation` over HTTPS: unknown and duplicate fields are reported with their full
//! paths, in kube-apiserver's words and order — `Strict` fails the request (400
//! `<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding error: …`, or 422
//! for patches), `Warn` (the default) answers with
//! `Warning: 299 - "…"` headers and stores the object without the unknown fields, `Ignore`
//! says nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::tls::TlsServer;
use http::Method;
use serde_json::{Value, json};

/// One answer: status code, `Warning` headers, body.
struct Answer {
    code: u16,
    warnings: Vec<String>,
    body: Value,
}

impl Answer {
    fn reason(&self) -> &str {
        self.body["reason"].as_str().unwrap_or("")
    }

    fn message(&self) -> &str {
        self.body["message"].as_str().unwrap_or("")
    }
}

async fn call(client: &kube::Client, method: Method, uri: &str, ct: &str, body: &str) -> Answer {
    let sent = Some((ct, body.as_bytes().to_vec()));
    let answer = common::send_accept(client, method.as_str(), uri, JSON, sent).await;
    let body =
        serde_json::from_slice(&answer.body).unwrap_or_else(|_| json!({"raw": answer.text()}));
    Answer {
        code: answer.code,
        warnings: answer.warnings,
        body,
    }
}

/// `299 - "<text>"` with the text escaped as in a quoted-string.
fn warning(text: &str) -> String {
    format!(
        "299 - \"{}\"",
        text.replace('\\', "\\\\").replace('"', "\\\"")
    )
}

/// The `Warning` headers of these texts.
fn warnings(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|t| warning(t)).collect()
}

/// `url` with `fieldValidation=<value>` added.
fn with_validation(url: &str, value: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}fieldValidation={value}")
}

/// A request under `fieldValidation=Strict` that must fail with `code` and `reason`.
async fn rejected(
    client: &kube::Client,
    method: Method,
    url: &str,
    ct: &str,
    body: &str,
    (code, reason): (u16, &str),
) -> Answer {
    let a = call(client, method, &with_validation(url, "Strict"), ct, body).await;
    assert_eq!((a.code, a.reason()), (code, reason), "{}", a.body);
    a
}

/// A create under `fieldValidation=Strict` that must fail with kube's 400 for a `kind` (of
/// version v1) whose body has these strict decoding `errors`.
async fn create_refused(
    client: &kube::Client,
    url: &str,
    ct: &str,
    body: &str,
    kind: &str,
    errors: &[&str],
) {
    let a = rejected(client, Method::POST, url, ct, body, BAD).await;
    assert_eq!(
        a.message(),
        format!(
            "{kind} in version \"v1\" cannot be handled as a {kind}: strict decoding error: {}",
            errors.join(", ")
        )
    );
}

/// A request under the default `fieldValidation` (Warn) that must succeed with `code` and
/// exactly these warnings.
async fn warned(
    client: &kube::Client,
    method: Method,
    url: &str,
    ct: &str,
    body: &str,
    code: u16,
    texts: &[&str],
) -> Answer {
    let a = call(client, method, url, ct, body).await;
    assert_eq!(a.code, code, "{}", a.body);
    assert_eq!(a.warnings, warnings(texts));
    a
}

const BAD: (u16, &str) = (400, "BadRequest");
const INVALID: (u16, &str) = (422, "Invalid");

const JSON: &str = "application/json";
const YAML: &str = "application/yaml";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// A Deployment body with a repeated `metadata.name`, unknown fields at the root metadata,
/// in `spec`, in the pod template's (embedded) metadata and in a container.
fn deployment_body(name: &str) -> String {
    format!(
        r#"{{"apiVersion":"apps/v1","kind":"Deployment",
  "metadata":{{"name":"{name}","name":"{name}","bogus":1}},
  "spec":{{"foo":1,"replicas":1,"selector":{{"matchLabels":{{"app":"a"}}}},
    "template":{{"metadata":{{"labels":{{"app":"a"}},"junk":true}},
      "spec":{{"containers":[{{"name":"c","image":"i","extra":1}}]}}}}}}}}"#
    )
}

const DEPLOYMENT_ERRORS: [&str; 5] = [
    "duplicate field \"metadata.name\"",
    "unknown field \"metadata.bogus\"",
    "unknown field \"spec.foo\"",
    "unknown field \"spec.template.metadata.junk\"",
    "unknown field \"spec.template.spec.containers[0].extra\"",
];

/// An unknown field of a built-in kind is reported whatever its value, `null` included (Go's
/// strict decoding looks the key up before it reads the value); a declared field set to
/// `null` is not unknown.
#[tokio::test]
async fn null_valued_unknown_fields_of_built_in_kinds_are_reported() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let body = r#"{"apiVersion":"apps/v1","kind":"Deployment",
  "metadata":{"name":"nulls","labels":null,"odd":null},
  "spec":{"bogus":null,"paused":null,"replicas":1,"selector":{"matchLabels":{"app":"a"}},
    "template":{"metadata":{"labels":{"app":"a"},"junk":null},
      "spec":{"containers":[{"name":"c","image":"i","args":null,"extra":null}]}}},
  "status":null}"#;
    let errors = [
        "unknown field \"metadata.odd\"",
        "unknown field \"spec.bogus\"",
        "unknown field \"spec.template.metadata.junk\"",
        "unknown field \"spec.template.spec.containers[0].extra\"",
    ];
    create_refused(&client, DEPLOYMENTS, JSON, body, "Deployment", &errors).await;
    let a = warned(&client, Method::POST, DEPLOYMENTS, JSON, body, 201, &errors).await;
    assert_eq!(a.body["spec"]["replicas"], 1);
    assert!(a.body["spec"].get("bogus").is_none());

    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"nulls"},
  "data":{"k":"v"},"immutable":null,"extra":null}"#;
    create_refused(
        &client,
        CONFIGMAPS,
        JSON,
        body,
        "ConfigMap",
        &["unknown field \"extra\""],
    )
    .await;
}

#[tokio::test]
async fn typed_create_and_update_report_unknown_and_duplicate_fields() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let prefix = "Deployment in version \"v1\" cannot be handled as a Deployment";

    // Strict: 400 BadRequest, every error in document order, nothing stored.
    let a = rejected(
        &client,
        Method::POST,
        DEPLOYMENTS,
        JSON,
        &deployment_body("d1"),
        BAD,
    )
    .await;
    assert_eq!(
        a.message(),
        format!(
            "{prefix}: strict decoding error: {}",
            DEPLOYMENT_ERRORS.join(", ")
        )
    );
    assert_eq!(a.body["code"], 400);
    let a = call(&client, Method::GET, &format!("{DEPLOYMENTS}/d1"), "", "").await;
    assert_eq!(a.code, 404);

    // Warn (the default): created, one warning per error, unknown fields dropped.
    let body = deployment_body("d1");
    let a = warned(
        &client,
        Method::POST,
        DEPLOYMENTS,
        JSON,
        &body,
        201,
        &DEPLOYMENT_ERRORS,
    )
    .await;
    assert!(a.body["metadata"].get("bogus").is_none());
    assert!(a.body["spec"].get("foo").is_none());
    let template = &a.body["spec"]["template"];
    assert!(template["metadata"].get("junk").is_none());
    assert!(template["spec"]["containers"][0].get("extra").is_none());
    assert_eq!(template["metadata"]["labels"]["app"], "a");

    // Ignore: no warnings.
    let url = with_validation(DEPLOYMENTS, "Ignore");
    warned(
        &client,
        Method::POST,
        &url,
        JSON,
        &deployment_body("d2"),
        201,
        &[],
    )
    .await;

    // PUT: the same reports.
    let current = call(&client, Method::GET, &format!("{DEPLOYMENTS}/d1"), "", "").await;
    let rv = current.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let put = format!(
        r#"{{"apiVersion":"apps/v1","kind":"Deployment",
  "metadata":{{"name":"d1","resourceVersion":"{rv}","labels":{{"x":"1","x":"2"}}}},
  "spec":{{"replicas":2,"replicas":3,"selector":{{"matchLabels":{{"app":"a"}}}},
    "template":{{"metadata":{{"labels":{{"app":"a"}},"bad":1}},
      "spec":{{"containers":[{{"name":"c","image":"i"}}]}}}}}},"status":{{"nope":1}}}}"#
    );
    let errors = [
        "duplicate field \"metadata.labels.x\"",
        "duplicate field \"spec.replicas\"",
        "unknown field \"spec.template.metadata.bad\"",
        "unknown field \"status.nope\"",
    ];
    let url = format!("{DEPLOYMENTS}/d1");
    let a = rejected(&client, Method::PUT, &url, JSON, &put, BAD).await;
    assert_eq!(
        a.message(),
        format!("{prefix}: strict decoding error: {}", errors.join(", "))
    );
    let a = warned(&client, Method::PUT, &url, JSON, &put, 200, &errors).await;
    // The later value of a repeated field wins.
    assert_eq!(a.body["metadata"]["labels"]["x"], "2");
    assert_eq!(a.body["spec"]["replicas"], 3);
}

#[tokio::test]
async fn yaml_bodies_report_repeated_keys_by_line() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y1\n  name: y1\n  zzz: 1\n  aaa: 2\ndata:\n  k: v\n  k: w\nspec: {}\n";
    let dup = "yaml: unmarshal errors:\n  line 5: key \"name\" already set in map\n  line 10: key \"k\" already set in map";
    // YAML is converted to JSON with sorted keys first, so the unknown fields come sorted.
    let unknown = [
        "unknown field \"metadata.aaa\"",
        "unknown field \"metadata.zzz\"",
        "unknown field \"spec\"",
    ];
    let a = rejected(&client, Method::POST, CONFIGMAPS, YAML, body, BAD).await;
    assert_eq!(
        a.message(),
        format!(
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: {dup}, {}",
            unknown.join(", ")
        )
    );
    // kube warns once per repeated key (the YAML report split into its lines).
    let expected = [
        "line 5: key \"name\" already set in map",
        "line 10: key \"k\" already set in map",
        unknown[0],
        unknown[1],
        unknown[2],
    ];
    let a = warned(
        &client,
        Method::POST,
        CONFIGMAPS,
        YAML,
        body,
        201,
        &expected,
    )
    .await;
    assert_eq!(a.body["data"], json!({"k": "w"}));
    // Ignore accepts repeated keys silently.
    let body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y2\ndata:\n  k: v\n  k: w\n";
    let url = with_validation(CONFIGMAPS, "Ignore");
    warned(&client, Method::POST, &url, YAML, body, 201, &[]).await;
}

/// A namespaced CRD of group `fv.example.com` with one version `v1` and this schema.
fn crd(plural: &str, kind: &str, schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.fv.example.com")},
        "spec": {
            "group": "fv.example.com",
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind,
                      "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": schema}}]
        }
    })
}

/// Gadgets: typed `spec` with a preserved subtree, an embedded resource and a list of
/// preserved embedded resources.
fn gadget_crd() -> Value {
    crd(
        "gadgets",
        "Gadget",
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "color": {"type": "string"},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "properties": {"spec": {"type": "object", "properties": {
                        "size": {"type": "integer"}}}}},
                "manifests": {"type": "array", "items": {"type": "object",
                    "x-kubernetes-embedded-resource": true,
                    "x-kubernetes-preserve-unknown-fields": true}}
            }}
        }}),
    )
}

/// Opens: everything preserved from the root.
fn open_crd() -> Value {
    crd(
        "opens",
        "Open",
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    )
}

const GADGETS: &str = "/apis/fv.example.com/v1/namespaces/default/gadgets";
const OPENS: &str = "/apis/fv.example.com/v1/namespaces/default/opens";

/// A server with the Gadget and Open CRDs installed, and its client.
async fn gadgets_and_opens() -> (TlsServer, kube::Client) {
    let server = TlsServer::start().await;
    let client = server.client().await;
    common::crd::install(&client, common::crd::crd_from_json(gadget_crd())).await;
    common::crd::install(&client, common::crd::crd_from_json(open_crd())).await;
    (server, client)
}

#[tokio::test]
async fn custom_resources_report_duplicates_then_unknown_fields() {
    let (_server, client) = gadgets_and_opens().await;

    let body = r#"{"apiVersion":"fv.example.com/v1","kind":"Gadget",
      "metadata":{"name":"g1","bogus":1},
      "spec":{"color":"red","color":"blue","zeta":1,"alpha":2,
        "free":{"anything":{"deep":1}},
        "template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","junk":1},"spec":{"size":1,"nope":2}},
        "manifests":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","wrong":1},"data":{"k":"v"}}]}}"#;
    // Duplicates, then unknown metadata fields, pruned fields (sorted), embedded metadata.
    let expected = [
        "duplicate field \"spec.color\"",
        "unknown field \"metadata.bogus\"",
        "unknown field \"spec.alpha\"",
        "unknown field \"spec.template.spec.nope\"",
        "unknown field \"spec.zeta\"",
        "unknown field \"spec.manifests[0].metadata.wrong\"",
        "unknown field \"spec.template.metadata.junk\"",
    ];
    create_refused(&client, GADGETS, JSON, body, "Gadget", &expected).await;
    let a = warned(&client, Method::POST, GADGETS, JSON, body, 201, &expected).await;
    let spec = &a.body["spec"];
    assert_eq!(spec["color"], "blue");
    assert_eq!(spec["free"], json!({"anything": {"deep": 1}}));
    assert_eq!(spec["template"]["metadata"], json!({"name": "p"}));
    assert_eq!(
        spec["manifests"][0],
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}})
    );

    // A CRD that preserves everything: only metadata and duplicates are reported.
    let body = r#"{"apiVersion":"fv.example.com/v1","kind":"Open",
      "metadata":{"name":"o1","bogus":1},"spec":{"x":1,"x":2,"anything":{"goes":true}}}"#;
    let expected = [
        "duplicate field \"spec.x\"",
        "unknown field \"metadata.bogus\"",
    ];
    create_refused(&client, OPENS, JSON, body, "Open", &expected).await;
    let a = warned(&client, Method::POST, OPENS, JSON, body, 201, &expected).await;
    assert_eq!(a.body["spec"], json!({"x": 2, "anything": {"goes": true}}));
}

#[tokio::test]
async fn custom_resource_yaml_bodies_report_repeated_keys_then_unknown_fields() {
    let (_server, client) = gadgets_and_opens().await;

    // As for typed objects, the YAML decoder's repeated keys come first; then the custom
    // resource's unknown metadata and pruned fields.
    let body = "apiVersion: fv.example.com/v1\nkind: Gadget\nmetadata:\n  name: gy\n  bogus: 1\nspec:\n  color: red\n  color: blue\n  zeta: 1\n";
    let dup = "yaml: unmarshal errors:\n  line 8: key \"color\" already set in map";
    let unknown = [
        "unknown field \"metadata.bogus\"",
        "unknown field \"spec.zeta\"",
    ];
    create_refused(
        &client,
        GADGETS,
        YAML,
        body,
        "Gadget",
        &[dup, unknown[0], unknown[1]],
    )
    .await;
    let expected = [
        "line 8: key \"color\" already set in map",
        unknown[0],
        unknown[1],
    ];
    let a = warned(&client, Method::POST, GADGETS, YAML, body, 201, &expected).await;
    assert_eq!(a.body["spec"], json!({"color": "blue"}));

    // Preserving everything, only the repeated key is reported.
    let body =
        "apiVersion: fv.example.com/v1\nkind: Open\nmetadata:\n  name: oy\nspec:\n  x: 1\n  x: 2\n";
    let dup = "yaml: unmarshal errors:\n  line 7: key \"x\" already set in map";
    create_refused(&client, OPENS, YAML, body, "Open", &[dup]).await;
    let line = "line 7: key \"x\" already set in map";
    let a = warned(&client, Method::POST, OPENS, YAML, body, 201, &[line]).await;
    assert_eq!(a.body["spec"], json!({"x": 2}));
}

/// `v` with every object's keys in sorted order (how Go writes a `map[string]interface{}`).
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Asserts kube's 422 for a patch that fails strict decoding: no kind, no name, one
/// `FieldValueInvalid` cause on `patch`, and the message ending in `detail`.
fn assert_patch_invalid(a: &Answer, detail: &str) {
    let message = a.message();
    assert!(
        message.starts_with(" \"\" is invalid: patch: Invalid value: \""),
        "{message}"
    );
    assert!(
        message.ends_with(&format!("\": strict decoding error: {detail}")),
        "{message}"
    );
    let cause = &a.body["details"]["causes"][0];
    assert_eq!(cause["reason"], "FieldValueInvalid");
    assert_eq!(cause["field"], "patch");
    assert!(a.body["details"].get("kind").is_none());
}

const MERGE: &str = "application/merge-patch+json";

#[tokio::test]
async fn patches_report_unknown_fields_of_the_patched_object() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p1"},"data":{"a":"1"}}"#;
    warned(&client, Method::POST, CONFIGMAPS, JSON, cm, 201, &[]).await;
    let url = format!("{CONFIGMAPS}/p1");

    // Merge patch: the patch's duplicates, then the patched object's unknown fields; under
    // Strict a 422 Invalid whose `patch` cause carries the patched object.
    let patch = r#"{"data":{"b":"2","b":"3"},"spec":{"x":1}}"#;
    let errors = ["duplicate field \"data.b\"", "unknown field \"spec\""];
    let a = rejected(&client, Method::PATCH, &url, MERGE, patch, INVALID).await;
    assert_patch_invalid(&a, &errors.join(", "));
    let a = warned(&client, Method::PATCH, &url, MERGE, patch, 200, &errors).await;
    assert_eq!(a.body["data"], json!({"a": "1", "b": "3"}));
    assert!(a.body.get("spec").is_none());

    // JSON patch: errors of the operations themselves come first, prefixed `json patch`.
    let jp = "application/json-patch+json";
    let ops = r#"[{"op":"add","path":"/metadata/bogus","value":1,"extra":true}]"#;
    let errors = [
        "json patch unknown field \"[0].extra\"",
        "unknown field \"metadata.bogus\"",
    ];
    let a = rejected(&client, Method::PATCH, &url, jp, ops, INVALID).await;
    assert_patch_invalid(&a, &errors.join(", "));
    warned(&client, Method::PATCH, &url, jp, ops, 200, &errors).await;

    // Strategic merge patch: the unknown fields sorted; the 422 shows the patch as a Go map.
    let smp = "application/strategic-merge-patch+json";
    let patch = r#"{"zz":1,"data":{"c":"1"},"aa":{"b":[1,"x"]},"aa":{"b":[2]}}"#;
    let errors = [
        "duplicate field \"aa\"",
        "unknown field \"aa\"",
        "unknown field \"zz\"",
    ];
    let a = rejected(&client, Method::PATCH, &url, smp, patch, INVALID).await;
    assert_eq!(
        a.message(),
        format!(
            " \"\" is invalid: patch: Invalid value: \"map[aa:map[b:[2]] data:map[c:1] zz:1]\": strict decoding error: {}",
            errors.join(", ")
        )
    );
    let a = warned(&client, Method::PATCH, &url, smp, patch, 200, &errors).await;
    assert_eq!(a.body["data"]["c"], "1");
}

#[tokio::test]
async fn custom_resource_merge_patch_reports_pruned_fields() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    common::crd::install(&client, common::crd::crd_from_json(gadget_crd())).await;
    let gadget = r#"{"apiVersion":"fv.example.com/v1","kind":"Gadget","metadata":{"name":"g"},"spec":{"color":"red"}}"#;
    warned(&client, Method::POST, GADGETS, JSON, gadget, 201, &[]).await;
    let url = format!("{GADGETS}/g");
    let patch = r#"{"metadata":{"odd":1},"spec":{"shape":"round","free":{"kept":1}}}"#;
    let errors = [
        "unknown field \"metadata.odd\"",
        "unknown field \"spec.shape\"",
    ];
    // kube shows the merged object as its patch library writes it from the unstructured
    // object: Go maps, every key sorted.
    let mut merged = call(&client, Method::GET, &url, "", "").await.body;
    merged["metadata"]["odd"] = json!(1);
    merged["spec"]["shape"] = json!("round");
    merged["spec"]["free"] = json!({"kept": 1});
    let a = rejected(&client, Method::PATCH, &url, MERGE, patch, INVALID).await;
    assert_patch_invalid(&a, &errors.join(", "));
    assert_eq!(
        a.message(),
        format!(
            " \"\" is invalid: patch: Invalid value: {:?}: strict decoding error: {}",
            serde_json::to_string(&sorted(&merged)).unwrap(),
            errors.join(", ")
        )
    );
    let a = warned(&client, Method::PATCH, &url, MERGE, patch, 200, &errors).await;
    assert_eq!(a.body["spec"], json!({"color": "red", "free": {"kept": 1}}));
}

#[tokio::test]
async fn server_side_apply_reports_repeated_keys() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let apply = "application/apply-patch+yaml";
    let url = format!("{CONFIGMAPS}/s1?fieldManager=t");
    let body =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s1\ndata:\n  a: \"1\"\n  a: \"2\"\n";
    let dup = "error converting YAML to JSON: yaml: unmarshal errors:\n  line 7: key \"a\" already set in map";
    let a = rejected(&client, Method::PATCH, &url, apply, body, BAD).await;
    assert_eq!(a.message(), format!("error strict decoding YAML: {dup}"));
    let a = call(&client, Method::GET, &format!("{CONFIGMAPS}/s1"), "", "").await;
    assert_eq!(a.code, 404);
    let line = "line 7: key \"a\" already set in map";
    let a = warned(&client, Method::PATCH, &url, apply, body, 201, &[line]).await;
    assert_eq!(a.body["data"], json!({"a": "2"}));
    // JSON under the apply content type is read as YAML: every line is line 1.
    let json_body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s1"},"data":{"a":"1","a":"3"}}"#;
    let a = rejected(&client, Method::PATCH, &url, apply, json_body, BAD).await;
    assert_eq!(
        a.message(),
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line 1: key \"a\" already set in map"
    );
}

#[tokio::test]
async fn kubectl_shows_the_strict_error_and_the_warnings() {
    if !common::kubectl::available() {
        return;
    }
    let server = TlsServer::start().await;
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k1\n  namespace: default\n  bogus: 1\ndata:\n  a: b\nspec:\n  x: 1\n";
    // kubectl sends fieldValidation=Strict when the server's OpenAPI declares the parameter.
    let (code, _, err) = common::kubectl::run(&server, &["create", "-f", "-"], Some(yaml)).await;
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "Error from server (BadRequest): error when creating \"STDIN\": ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"metadata.bogus\", unknown field \"spec\"\n"
    );
    let (code, out, err) = common::kubectl::run(
        &server,
        &["create", "--validate=warn", "-f", "-"],
        Some(yaml),
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "configmap/k1 created\n");
    assert_eq!(
        err,
        "Warning: unknown field \"metadata.bogus\"\nWarning: unknown field \"spec\"\n"
    );
}

#[tokio::test]
async fn warnings_come_with_a_failed_request_too() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    // Unknown field (a warning) and an invalid name (a 422): kube answers the 422 with the
    // warning it recorded while decoding.
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"},"spec":1}"#;
    let a = call(&client, Method::POST, CONFIGMAPS, JSON, body).await;
    assert_eq!((a.code, a.reason()), (422, "Invalid"), "{}", a.body);
    assert_eq!(a.warnings, warnings(&["unknown field \"spec\""]));
}

/// Server-side apply of a custom resource, as Kubernetes' e2e `FieldValidation` tests it: a
/// valid configuration is created; fields the schema does not declare (at the root, in
/// `metadata`, in an embedded resource's `metadata`) fail the field manager's typed
/// conversion — kube 1.35's 500 `failed to create typed patch object (…): .<path>: field not
/// declared in schema`, whatever `fieldValidation` says; a preserved subtree takes anything;
/// repeated keys are reported after the apply, by line.
#[tokio::test]
async fn custom_resource_apply_refuses_undeclared_fields() {
    let (_server, client) = gadgets_and_opens().await;
    let apply = "application/apply-patch+yaml";
    let url = |name: &str| format!("{GADGETS}/{name}?fieldManager=field_validation_mgr");
    let valid = "\napiVersion: fv.example.com/v1\nkind: Gadget\nmetadata:\n  name: mytest\nspec:\n  color: red\n  free:\n    anything: 1\n";
    let a = call(
        &client,
        Method::PATCH,
        &with_validation(&url("mytest"), "Strict"),
        apply,
        valid,
    )
    .await;
    assert_eq!(a.code, 201, "{}", a.body);

    let extra = "\napiVersion: fv.example.com/v1\nkind: Gadget\nmetadata:\n  name: extra\nunknownField: unknown\nspec:\n  color: red\n";
    for validation in ["Strict", "Warn", "Ignore"] {
        let a = call(
            &client,
            Method::PATCH,
            &with_validation(&url("extra"), validation),
            apply,
            extra,
        )
        .await;
        assert_eq!((a.code, a.reason()), (500, ""), "{validation}: {}", a.body);
        assert_eq!(
            a.message(),
            "failed to create typed patch object (default/extra; fv.example.com/v1, Kind=Gadget): .unknownField: field not declared in schema"
        );
    }
    let meta = "\napiVersion: fv.example.com/v1\nkind: Gadget\nmetadata:\n  name: meta\n  unknownMeta: unknown\nspec:\n  template:\n    apiVersion: foo/v1\n    kind: Sub\n    metadata:\n      name: subobject\n      unknownSubMeta: unknown\n";
    let a = call(
        &client,
        Method::PATCH,
        &with_validation(&url("meta"), "Strict"),
        apply,
        meta,
    )
    .await;
    assert_eq!(a.code, 500, "{}", a.body);
    assert!(
        a.message()
            .contains(".metadata.unknownMeta: field not declared in schema"),
        "{}",
        a.message()
    );
    assert!(a.message().starts_with(
        "failed to create typed patch object (default/meta; fv.example.com/v1, Kind=Gadget): errors:\n  "
    ));
    assert!(
        a.message()
            .contains(".spec.template.metadata.unknownSubMeta: field not declared in schema"),
        "{}",
        a.message()
    );
    let a = call(&client, Method::GET, &format!("{GADGETS}/meta"), "", "").await;
    assert_eq!(a.code, 404, "nothing was stored");

    // Repeated keys where unknown fields are preserved: kube's strict YAML report, by line.
    let dup = "\napiVersion: fv.example.com/v1\nkind: Open\nmetadata:\n  name: mytest\nspec:\n  unknown: uk1\n  foo: foo1\n  foo: foo2\n";
    let open = format!("{OPENS}/mytest?fieldManager=field_validation_mgr");
    let a = rejected(&client, Method::PATCH, &open, apply, dup, BAD).await;
    assert_eq!(
        a.message(),
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line 9: key \"foo\" already set in map"
    );
    let a = warned(
        &client,
        Method::PATCH,
        &open,
        apply,
        dup,
        201,
        &["line 9: key \"foo\" already set in map"],
    )
    .await;
    assert_eq!(a.body["spec"], json!({"unknown": "uk1", "foo": "foo2"}));
}
