//! YAML responses over HTTPS: an `Accept` whose best match is `application/yaml` gets kube's
//! YAML (sigs.k8s.io/yaml's JSON→YAML: sorted keys, go-yaml v2 quoting and folding) for
//! reads, writes, Tables, `PartialObjectMetadata` and error Statuses, and a 406 for a watch.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use crate::common;
use crate::common::Answer;
use crate::common::kubectl;
use crate::common::send_json as send;
use crate::common::tls::TlsServer;

const YAML: &str = "application/yaml";
const JSON: &str = "application/json";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

impl Answer {
    /// The body read as YAML (or JSON, which YAML reads too).
    fn yaml_value(&self) -> Value {
        serde_saphyr::from_str(self.text())
            .unwrap_or_else(|err| panic!("not YAML: {err}\n{}", self.text()))
    }

    /// Asserts the code and that the body is YAML; the body read.
    fn yaml(&self, code: u16, what: &str) -> Value {
        assert_eq!(
            (self.code, self.content_type.as_str()),
            (code, YAML),
            "{what}: {}",
            self.text()
        );
        self.yaml_value()
    }
}

/// Data whose YAML needs each of go-yaml's styles.
fn tricky_data() -> Value {
    json!({
        "plain": "hello world",
        "empty": "",
        "on": "yes",
        "num": "12",
        "ports": "8080:80",
        "sexagesimal": "1:20",
        "when": "2026-11-26T22:53:18Z",
        "colon": "a: b",
        "quote": "'x'",
        "multi": "line one\nline two\n",
        "keep": "end\n\n",
        "strip": "no newline\nat end",
        "lead": "  indented\nblock",
        "tab": "a\tb",
        "unicode": "grüße",
        "emoji": "ok \u{1F600}",
        "long": vec!["word"; 40].join(" "),
        "long-quoted": format!("{}: tail", vec!["w"; 60].join(" ")),
    })
}

#[tokio::test]
async fn reads_and_writes_answer_yaml() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "y", "labels": {"b": "2", "a": "1"}},
                        "data": tricky_data()});
    // create
    let created = send(&client, "POST", CMS, YAML, Some(&object)).await;
    let created = created.yaml(201, "create");
    let item = format!("{CMS}/y");
    let json_body = send(&client, "GET", &item, JSON, None).await;
    let json_body: Value = serde_json::from_str(json_body.text()).unwrap();
    assert_eq!(created, json_body, "create");
    assert_eq!(created["data"], tricky_data());
    // get: sorted keys, kube's quoting.
    let got = send(&client, "GET", &item, YAML, None).await;
    assert_eq!(got.yaml(200, "get"), json_body);
    let top: Vec<&str> = got
        .text()
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with([' ', '-']))
        .collect();
    assert_eq!(
        top,
        ["apiVersion: v1", "data:", "kind: ConfigMap", "metadata:"]
    );
    let rv = json_body["metadata"]["resourceVersion"].as_str().unwrap();
    let ts = json_body["metadata"]["creationTimestamp"].as_str().unwrap();
    for line in [
        "data:\n  colon: 'a: b'\n",
        "  empty: \"\"\n",
        "  keep: |+\n    end\n\n",
        "  lead: |2-\n      indented\n    block\n",
        "  multi: |\n    line one\n    line two\n",
        "  num: \"12\"\n  \"on\": \"yes\"\n  plain: hello world\n  ports: 8080:80\n",
        "  quote: '''x'''\n  sexagesimal: \"1:20\"\n",
        "  strip: |-\n    no newline\n    at end\n  tab: \"a\\tb\"\n",
        "  emoji: \"ok \\U0001F600\"\n",
        "  unicode: grüße\n  when: \"2026-11-26T22:53:18Z\"\n",
        "  labels:\n    a: \"1\"\n    b: \"2\"\n",
        "  managedFields:\n  - apiVersion: v1\n",
        &format!("  creationTimestamp: \"{ts}\"\n"),
        &format!("  resourceVersion: \"{rv}\"\n"),
    ] {
        assert!(got.text().contains(line), "{line:?} in\n{}", got.text());
    }
    // Long strings fold after column 80.
    let long = got
        .text()
        .lines()
        .find(|l| l.starts_with("  long: "))
        .unwrap();
    assert!(long.len() <= 86, "{long}");
    // list: the items sequence sits under its key, not indented.
    let (json_list, list) = common::eventually(CMS, || async {
        let before = send(&client, "GET", CMS, JSON, None).await;
        let list = send(&client, "GET", CMS, YAML, None).await;
        let before: Value = serde_json::from_str(before.text()).unwrap();
        (list.yaml(200, "list") == before).then_some((before, list))
    })
    .await;
    assert_eq!(json_list["kind"], "ConfigMapList");
    assert!(
        list.text().contains("\nitems:\n- data:\n"),
        "{}",
        list.text()
    );
    // update, patch, delete
    let mut changed = json_body.clone();
    changed["data"]["plain"] = json!("changed");
    let updated = send(&client, "PUT", &item, YAML, Some(&changed)).await;
    assert_eq!(updated.yaml(200, "update")["data"]["plain"], "changed");
    let patched = common::send_accept(
        &client,
        "PATCH",
        &item,
        YAML,
        Some((
            "application/merge-patch+json",
            br#"{"data":{"plain":"patched"}}"#.to_vec(),
        )),
    )
    .await;
    let patched = patched.yaml(200, "patch");
    assert_eq!(patched["data"]["plain"], "patched");
    // delete: a ConfigMap that goes at once is answered with a Success Status.
    let deleted = send(&client, "DELETE", &item, YAML, None).await;
    let deleted = deleted.yaml(200, "delete");
    assert_eq!(
        (&deleted["kind"], &deleted["status"]),
        (&json!("Status"), &json!("Success"))
    );
}

#[tokio::test]
async fn errors_are_yaml_statuses() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let missing = send(&client, "GET", &format!("{CMS}/nope"), YAML, None).await;
    missing.yaml(404, "get");
    assert_eq!(
        missing.text(),
        "apiVersion: v1\ncode: 404\ndetails:\n  kind: configmaps\n  name: nope\nkind: Status\n\
         message: configmaps \"nope\" not found\nmetadata: {}\nreason: NotFound\nstatus: Failure\n"
    );
    // Before any handler (an unknown resource) and a 422 with causes.
    let unknown = send(
        &client,
        "GET",
        "/api/v1/namespaces/default/nothings",
        YAML,
        None,
    )
    .await;
    assert_eq!(unknown.yaml(404, "unknown")["reason"], "NotFound");
    let bad = json!({"metadata": {"name": "Not_Valid"}});
    let invalid = send(&client, "POST", CMS, YAML, Some(&bad)).await;
    let status = invalid.yaml(422, "invalid");
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["details"]["causes"][0]["field"], "metadata.name");
    // An object go-yaml cannot read back from Go's JSON (a raw DEL): kube's serializer fails
    // and answers a 500 Status without reason, in YAML.
    let odd = json!({"metadata": {"name": "odd"}, "data": {"k": "\u{7f}"}});
    assert_eq!(send(&client, "POST", CMS, JSON, Some(&odd)).await.code, 201);
    let failed = send(&client, "GET", &format!("{CMS}/odd"), YAML, None).await;
    let failure = failed.yaml(500, "odd");
    assert_eq!(
        (&failure["message"], failure.get("reason")),
        (&json!("yaml: control characters are not allowed"), None)
    );
    // The JSON of the same error is the same Status.
    let json_invalid = send(&client, "POST", CMS, JSON, Some(&bad)).await;
    assert_eq!(
        serde_json::from_str::<Value>(json_invalid.text()).unwrap(),
        status
    );
}

#[tokio::test]
async fn a_yaml_watch_is_refused_and_order_decides() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let watch = format!("{CMS}?watch=true");
    // kube's YAML serializer has no stream form; the first matching clause decides, so a
    // later JSON clause does not help. The 406 itself is YAML, its message folded.
    for accept in [YAML.to_owned(), format!("{YAML}, {JSON}")] {
        let refused = send(&client, "GET", &watch, &accept, None).await;
        let status = refused.yaml(406, &accept);
        assert_eq!(status["reason"], "NotAcceptable");
        assert_eq!(
            status["message"],
            "only the following media types are accepted: application/json;stream=watch, \
             application/vnd.kubernetes.protobuf;stream=watch"
        );
        assert!(
            refused.text().contains(
                "message: 'only the following media types are accepted: \
                 application/json;stream=watch,\n  application/vnd.kubernetes.protobuf;stream=watch'\n"
            ),
            "{}",
            refused.text()
        );
    }
    // JSON first, or YAML after JSON, reads JSON.
    let first = send(&client, "GET", CMS, &format!("{JSON}, {YAML}"), None).await;
    assert_eq!(first.content_type, JSON);
    let star = send(&client, "GET", CMS, "*/*", None).await;
    assert_eq!(star.content_type, JSON);
}

#[tokio::test]
async fn tables_and_metadata_come_in_yaml_with_plain_media_types() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let object = json!({"metadata": {"name": "t"}, "data": {"a": "1"}});
    assert_eq!(
        send(&client, "POST", CMS, JSON, Some(&object)).await.code,
        201
    );
    let as_kind = |media: &str, kind: &str| format!("{media};as={kind};g=meta.k8s.io;v=v1");
    // kube answers the transformed kinds with the bare media type.
    for (accept, kind) in [
        (as_kind(JSON, "Table"), "Table"),
        (
            as_kind(JSON, "PartialObjectMetadataList"),
            "PartialObjectMetadataList",
        ),
    ] {
        let answer = send(&client, "GET", CMS, &accept, None).await;
        assert_eq!((answer.code, answer.content_type.as_str()), (200, JSON));
        assert_eq!(answer.yaml_value()["kind"], kind);
    }
    for (uri, accept, kind) in [
        (CMS.to_owned(), as_kind(YAML, "Table"), "Table"),
        (format!("{CMS}/t"), as_kind(YAML, "Table"), "Table"),
        (
            CMS.to_owned(),
            as_kind(YAML, "PartialObjectMetadataList"),
            "PartialObjectMetadataList",
        ),
        (
            format!("{CMS}/t"),
            as_kind(YAML, "PartialObjectMetadata"),
            "PartialObjectMetadata",
        ),
    ] {
        let answer = send(&client, "GET", &uri, &accept, None).await;
        let value = answer.yaml(200, &accept);
        assert_eq!(value["kind"], kind, "{accept}");
        assert_eq!(value["apiVersion"], "meta.k8s.io/v1", "{accept}");
    }
    let table = send(
        &client,
        "GET",
        &format!("{CMS}/t"),
        &as_kind(YAML, "Table"),
        None,
    )
    .await;
    assert!(
        table.text().contains("columnDefinitions:\n- description: "),
        "{}",
        table.text()
    );
}

#[tokio::test]
async fn custom_resources_answer_yaml() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    common::crd::install_widget(&client).await;
    let widgets = "/apis/test.ocm.io/v1/namespaces/default/widgets";
    let widget = json!({"apiVersion": "test.ocm.io/v1", "kind": "Widget",
                        "metadata": {"name": "w"}, "spec": {"color": "on"}});
    let created = send(&client, "POST", widgets, YAML, Some(&widget)).await;
    assert_eq!(created.yaml(201, "create")["spec"]["color"], "on");
    let got = send(&client, "GET", &format!("{widgets}/w"), YAML, None).await;
    got.yaml(200, "get");
    assert!(
        got.text()
            .starts_with("apiVersion: test.ocm.io/v1\nkind: Widget\n"),
        "{}",
        got.text()
    );
    assert!(
        got.text().contains("\nspec:\n  color: \"on\"\n"),
        "{}",
        got.text()
    );
}

/// kubectl's `-o yaml` prints an object with the same sigs.k8s.io/yaml conversion kube's
/// YAML serializer uses: the server's YAML of an object is what kubectl prints for it, for a
/// ConfigMap and for a custom resource with content that exercises the whole emitter.
#[tokio::test]
async fn the_yaml_is_what_kubectl_prints() {
    if !kubectl::available() {
        return;
    }
    let server = TlsServer::start().await;
    let client = server.client().await;
    let object = json!({"metadata": {"name": "k", "annotations": {"note": vec!["n"; 50].join(" ")}},
                        "data": tricky_data()});
    assert_eq!(
        send(&client, "POST", CMS, JSON, Some(&object)).await.code,
        201
    );
    assert_kubectl_prints(&server, &client, &format!("{CMS}/k"), "configmap").await;
    // The same on a custom resource whose spec keeps whatever it is given.
    common::crd::install(
        &client,
        common::crd::crd_from_json(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.yaml.example.com"},
            "spec": {"group": "yaml.example.com", "scope": "Namespaced",
                "names": {"plural": "things", "singular": "thing", "kind": "Thing",
                          "listKind": "ThingList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}}]}
        })),
    )
    .await;
    let things = "/apis/yaml.example.com/v1/namespaces/default/things";
    let thing = json!({"apiVersion": "yaml.example.com/v1", "kind": "Thing",
                       "metadata": {"name": "t"}, "spec": tricky_spec()});
    let created = send(&client, "POST", things, JSON, Some(&thing)).await;
    assert_eq!(created.code, 201, "{}", created.text());
    assert_kubectl_prints(&server, &client, &format!("{things}/t"), "things").await;
}

/// Content that exercises the rest of go-yaml's emitter: key order, long and multi-line keys,
/// numbers, nested and empty collections, indicators and characters that force quoting.
fn tricky_spec() -> Value {
    let long_key = "k".repeat(130);
    json!({
        "a10": 1, "a2": 2, "a_": 3, "aB": 4, "Z": 5, "true": 6, "1": 7, "a02": 8, "a002": 9,
        &long_key: "long key",
        "multi\nline key": {"x": 1},
        "numbers": [0, -3, 1.5, 1.0, 0.000001, 1e-7, 1234567.5, 1e20, 1e21, 9007199254740993u64,
                    -9223372036854775808i64, 3.0e-5, 123456.0],
        "nested": [[1, [2, []]], [], {}, {"a": [], "b": {}}, [{"c": [{"d": null}]}]],
        "strings": ["- dash", "-dash", "? q", "?q", ": c", "a: b", "a:b", "a #b", "a#b", "#c",
                    "[x", "x]", "{y", "y}", "x,y", "*a", "&a", "!t", "|p", ">f", "%p", "@a",
                    "`b", "'s'", "\"d\"", "---", "--- x", "...", ".5", "1.", "+1", "0o17",
                    "0x1F", "1_000", "0b10", "1e3", "1:20", "12:60", "2026-2-3", "2026-02-30",
                    "2026-01-02 03:04:05", "2026-01-02t03:04:05.5+01:00", "Yes", "NO", "oN",
                    "Off", "~", "null", "Null", "nULL", ".inf", "-.Inf", ".NaN", "<<", "=",
                    " lead", "trail ", "in  side", "tab\tx", "cr\rx", "nel\u{85}x",
                    "ls\u{2028}x", "nbsp\u{a0}x", "\u{feff}bom", "bell\u{7}",
                    "é", "日本語", "emoji \u{1F600}", "back\\slash", "end\n", "two\n\nlines",
                    "\nlead break", "trail space \nx", "x\n y", "  both\nlines  ",
                    "a\n\n\n", "\n"],
        "folding": [
            vec!["word"; 30].join(" "),
            format!("'{}", vec!["q"; 50].join(" ")),
            format!("\t{}", vec!["w"; 60].join("  ")),
            format!("{}x", " ".repeat(90)),
            "z".repeat(120),
            format!("{}\n{}", vec!["l"; 60].join(" "), vec!["m"; 60].join(" ")),
        ],
    })
}

/// Asserts that the server's YAML of the object at `uri` is, byte for byte, what
/// `kubectl get <resource> <name> -o yaml --show-managed-fields` prints for it.
async fn assert_kubectl_prints(
    server: &TlsServer,
    client: &kube::Client,
    uri: &str,
    resource: &str,
) {
    let served = send(client, "GET", uri, YAML, None).await;
    served.yaml(200, uri);
    let name = uri.rsplit('/').next().unwrap();
    let args = ["get", resource, name, "-o", "yaml", "--show-managed-fields"];
    let (code, printed, err) = kubectl::run(server, &args, None).await;
    assert_eq!(code, 0, "{err}");
    let diff: Vec<String> = served
        .text()
        .lines()
        .zip(printed.lines())
        .filter(|(a, b)| a != b)
        .take(10)
        .map(|(a, b)| format!("served:  {a:?}\nkubectl: {b:?}"))
        .collect();
    assert!(diff.is_empty(), "{}", diff.join("\n"));
    assert_eq!(served.text(), printed);
}
