//! Decoding hand-built protobuf messages; the encoder takes field numbers from the table.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::table::table;
use super::{MAGIC, ProtobufError, decode_body};

/// A tiny protobuf encoder for tests.
#[derive(Default, Clone)]
struct Enc(Vec<u8>);

fn varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// The number of the field `json` in `message` (short names resolved in well-known packages).
fn num(message: &str, json: &str) -> u32 {
    let msg = &table().messages[message];
    *msg.fields
        .iter()
        .find(|(_, f)| f.json == json)
        .unwrap_or_else(|| panic!("{message} has no field {json}"))
        .0
}

impl Enc {
    fn new() -> Self {
        Enc::default()
    }
    fn key(&mut self, n: u32, wt: u64) {
        varint(&mut self.0, (u64::from(n) << 3) | wt);
    }
    fn bytes(mut self, n: u32, b: &[u8]) -> Self {
        self.key(n, 2);
        varint(&mut self.0, b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }
    fn str(self, n: u32, s: &str) -> Self {
        self.bytes(n, s.as_bytes())
    }
    fn msg(self, n: u32, m: Enc) -> Self {
        self.bytes(n, &m.0)
    }
    fn int(mut self, n: u32, v: i64) -> Self {
        self.key(n, 0);
        varint(&mut self.0, v as u64);
        self
    }
    fn entry(self, n: u32, k: &str, v: &[u8]) -> Self {
        self.msg(n, Enc::new().str(1, k).bytes(2, v))
    }
    /// A field by its JSON name in `message`.
    fn s(self, message: &str, json: &str, v: &str) -> Self {
        self.str(num(message, json), v)
    }
    fn m(self, message: &str, json: &str, v: Enc) -> Self {
        self.msg(num(message, json), v)
    }
    fn i(self, message: &str, json: &str, v: i64) -> Self {
        self.int(num(message, json), v)
    }
}

const CORE: &str = "k8s.io.api.core.v1";
const APPS: &str = "k8s.io.api.apps.v1";
const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";

fn m(pkg: &str, name: &str) -> String {
    format!("{pkg}.{name}")
}

fn envelope(api_version: &str, kind: &str, raw: Enc) -> Vec<u8> {
    let tm = Enc::new().str(1, api_version).str(2, kind);
    let unknown = Enc::new().msg(1, tm).bytes(2, &raw.0);
    let mut body = MAGIC.to_vec();
    body.extend_from_slice(&unknown.0);
    body
}

fn objmeta(name: &str, namespace: &str) -> Enc {
    let om = m(META, "ObjectMeta");
    let mut e = Enc::new().s(&om, "name", name);
    if !namespace.is_empty() {
        e = e.s(&om, "namespace", namespace);
    }
    // The Go encoder always writes the non-pointer creationTimestamp, as an empty Time.
    e.m(&om, "creationTimestamp", Enc::new())
}

#[test]
fn namespace_decodes() {
    let ns = m(CORE, "Namespace");
    let raw = Enc::new()
        .m(&ns, "metadata", objmeta("team-a", ""))
        .m(&ns, "spec", Enc::new())
        .m(&ns, "status", Enc::new());
    let v = decode_body(&envelope("v1", "Namespace", raw)).unwrap();
    assert_eq!(
        v,
        json!({"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": "team-a", "creationTimestamp": null},
               "spec": {}, "status": {}})
    );
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys[..2], ["apiVersion", "kind"]);
}

#[test]
fn secret_bytes_are_base64_and_pointer_false_stays() {
    let s = m(CORE, "Secret");
    let data = num(&s, "data");
    let raw = Enc::new()
        .m(&s, "metadata", objmeta("s1", "team-a"))
        .entry(data, "k", b"v")
        .entry(data, "bin", &[0, 255])
        .s(&s, "type", "Opaque")
        .i(&s, "immutable", 0);
    let v = decode_body(&envelope("v1", "Secret", raw)).unwrap();
    assert_eq!(v["data"], json!({"k": "dg==", "bin": "AP8="}));
    assert_eq!(v["type"], "Opaque");
    assert_eq!(v["immutable"], json!(false));
    assert_eq!(v["metadata"]["namespace"], "team-a");
}

#[test]
fn configmap_with_labels_and_empty_omitempty_string() {
    let c = m(CORE, "ConfigMap");
    let om = m(META, "ObjectMeta");
    let meta = objmeta("cm1", "team-a")
        .msg(num(&om, "labels"), Enc::new().str(1, "app").str(2, "x"))
        .s(&om, "generateName", "");
    let raw = Enc::new()
        .m(&c, "metadata", meta)
        .msg(num(&c, "data"), Enc::new().str(1, "a").str(2, "b"));
    let v = decode_body(&envelope("v1", "ConfigMap", raw)).unwrap();
    assert_eq!(v["data"], json!({"a": "b"}));
    assert_eq!(v["metadata"]["labels"], json!({"app": "x"}));
    assert!(v["metadata"].get("generateName").is_none());
}

#[test]
fn deployment_with_template_quantities_and_int_or_string() {
    let d = m(APPS, "Deployment");
    let spec = m(APPS, "DeploymentSpec");
    let strategy = m(APPS, "DeploymentStrategy");
    let rolling = m(APPS, "RollingUpdateDeployment");
    let pts = m(CORE, "PodTemplateSpec");
    let pod = m(CORE, "PodSpec");
    let ctr = m(CORE, "Container");
    let rr = m(CORE, "ResourceRequirements");
    let ls = m(META, "LabelSelector");
    let limits = num(&rr, "limits");
    let q = |s: &str| Enc::new().str(1, s);
    let container = Enc::new()
        .s(&ctr, "name", "nginx")
        .s(&ctr, "image", "nginx")
        .m(
            &ctr,
            "resources",
            Enc::new()
                .msg(limits, Enc::new().str(1, "cpu").msg(2, q("500m")))
                .msg(limits, Enc::new().str(1, "memory").msg(2, q("1Gi"))),
        );
    let template = Enc::new()
        .m(
            &pts,
            "metadata",
            Enc::new().msg(
                num(&m(META, "ObjectMeta"), "labels"),
                Enc::new().str(1, "app").str(2, "web"),
            ),
        )
        .m(&pts, "spec", Enc::new().m(&pod, "containers", container));
    let surge = Enc::new().int(1, 1).str(3, "25%");
    let unavailable = Enc::new().int(1, 0).int(2, 0);
    let raw = Enc::new()
        .m(&d, "metadata", objmeta("web", "team-a"))
        .m(
            &d,
            "spec",
            Enc::new()
                .i(&spec, "replicas", 0)
                .m(
                    &spec,
                    "selector",
                    Enc::new().msg(
                        num(&ls, "matchLabels"),
                        Enc::new().str(1, "app").str(2, "web"),
                    ),
                )
                .m(&spec, "template", template)
                .m(
                    &spec,
                    "strategy",
                    Enc::new().s(&strategy, "type", "RollingUpdate").m(
                        &strategy,
                        "rollingUpdate",
                        Enc::new().m(&rolling, "maxSurge", surge).m(
                            &rolling,
                            "maxUnavailable",
                            unavailable,
                        ),
                    ),
                )
                .i(&spec, "minReadySeconds", 0),
        )
        .m(&d, "status", Enc::new());
    let v = decode_body(&envelope("apps/v1", "Deployment", raw)).unwrap();
    assert_eq!(
        v["spec"],
        json!({
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx",
                    "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}}]}
            },
            "strategy": {"type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}}
        })
    );
}

#[test]
fn self_subject_access_review_decodes() {
    let pkg = "k8s.io.api.authorization.v1";
    let r = m(pkg, "SelfSubjectAccessReview");
    let spec = m(pkg, "SelfSubjectAccessReviewSpec");
    let attrs = m(pkg, "ResourceAttributes");
    let raw = Enc::new()
        .m(
            &r,
            "metadata",
            Enc::new().m(&m(META, "ObjectMeta"), "creationTimestamp", Enc::new()),
        )
        .m(
            &r,
            "spec",
            Enc::new().m(
                &spec,
                "resourceAttributes",
                Enc::new()
                    .s(&attrs, "namespace", "default")
                    .s(&attrs, "verb", "list")
                    .s(&attrs, "group", "")
                    .s(&attrs, "resource", "pods"),
            ),
        )
        .m(
            &r,
            "status",
            Enc::new().i(&m(pkg, "SubjectAccessReviewStatus"), "allowed", 0),
        );
    let v = decode_body(&envelope(
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        raw,
    ))
    .unwrap();
    assert_eq!(
        v,
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
               "metadata": {"creationTimestamp": null},
               "spec": {"resourceAttributes": {"namespace": "default", "verb": "list", "resource": "pods"}},
               "status": {"allowed": false}})
    );
}

#[test]
fn csr_with_conditions_and_certificate_bytes() {
    let pkg = "k8s.io.api.certificates.v1";
    let csr = m(pkg, "CertificateSigningRequest");
    let spec = m(pkg, "CertificateSigningRequestSpec");
    let status = m(pkg, "CertificateSigningRequestStatus");
    let cond = m(pkg, "CertificateSigningRequestCondition");
    let usages = num(&spec, "usages");
    let time = Enc::new().int(1, 1_700_000_000).int(2, 123_456_789);
    let extra = num(&spec, "extra");
    let raw = Enc::new()
        .m(&csr, "metadata", objmeta("agent", ""))
        .m(
            &csr,
            "spec",
            Enc::new()
                .bytes(num(&spec, "request"), b"-----BEGIN")
                .s(&spec, "signerName", "kubernetes.io/kube-apiserver-client")
                .i(&spec, "expirationSeconds", 3600)
                .str(usages, "digital signature")
                .str(usages, "client auth")
                .msg(
                    extra,
                    Enc::new()
                        .str(1, "scopes")
                        .msg(2, Enc::new().str(1, "a").str(1, "b")),
                ),
        )
        .m(
            &csr,
            "status",
            Enc::new()
                .m(
                    &status,
                    "conditions",
                    Enc::new()
                        .s(&cond, "type", "Approved")
                        .s(&cond, "status", "True")
                        .s(&cond, "reason", "KubectlApprove")
                        .m(&cond, "lastUpdateTime", time.clone())
                        .m(&cond, "lastTransitionTime", Enc::new()),
                )
                .bytes(num(&status, "certificate"), b"cert"),
        );
    let v = decode_body(&envelope(
        "certificates.k8s.io/v1",
        "CertificateSigningRequest",
        raw,
    ))
    .unwrap();
    assert_eq!(v["spec"]["request"], "LS0tLS1CRUdJTg==");
    assert_eq!(v["spec"]["expirationSeconds"], 3600);
    assert_eq!(
        v["spec"]["usages"],
        json!(["digital signature", "client auth"])
    );
    assert_eq!(v["spec"]["extra"], json!({"scopes": ["a", "b"]}));
    assert_eq!(
        v["status"]["conditions"],
        json!([{"type": "Approved", "status": "True", "reason": "KubectlApprove",
                "lastUpdateTime": "2023-11-14T22:13:20Z", "lastTransitionTime": null}])
    );
    assert_eq!(v["status"]["certificate"], "Y2VydA==");
}

#[test]
fn micro_time_has_six_digits_and_durations_match_go() {
    let ev = m("k8s.io.api.events.v1", "Event");
    let raw = Enc::new().m(&ev, "metadata", objmeta("e", "default")).m(
        &ev,
        "eventTime",
        Enc::new().int(1, 1_700_000_000).int(2, 123_456_789),
    );
    let v = decode_body(&envelope("events.k8s.io/v1", "Event", raw)).unwrap();
    assert_eq!(v["eventTime"], "2023-11-14T22:13:20.123456Z");
    assert_eq!(super::decode::go_duration(3_600_000_000_000), "1h0m0s");
    assert_eq!(super::decode::go_duration(1_500_000_000), "1.5s");
    assert_eq!(super::decode::go_duration(2_000_000), "2ms");
}

#[test]
fn packed_and_unpacked_repeated_ints_decode() {
    // PodSecurityContext.supplementalGroups is a repeated int64.
    let psc = m(CORE, "PodSecurityContext");
    let n = num(&psc, "supplementalGroups");
    let mut packed = Vec::new();
    varint(&mut packed, 1000);
    varint(&mut packed, 2000);
    let body = Enc::new().bytes(n, &packed).int(n, 3000);
    let v = super::decode::message(&psc, &body.0).unwrap();
    assert_eq!(v["supplementalGroups"], json!([1000, 2000, 3000]));
}

#[test]
fn raw_extension_is_embedded_json() {
    let pkg = "k8s.io.api.apps.v1";
    let cr = m(pkg, "ControllerRevision");
    let raw = Enc::new()
        .m(&cr, "metadata", objmeta("r", "default"))
        .m(&cr, "data", Enc::new().str(1, r#"{"spec":{"a":1}}"#))
        .i(&cr, "revision", 7);
    let v = super::decode::message(&cr, &raw.0).unwrap();
    assert_eq!(v["data"], json!({"spec": {"a": 1}}));
    assert_eq!(v["revision"], 7);
}

#[test]
fn delete_options_decode_from_any_version() {
    let d = m(META, "DeleteOptions");
    let raw = Enc::new()
        .s(&d, "propagationPolicy", "Foreground")
        .i(&d, "gracePeriodSeconds", 0);
    let v = decode_body(&envelope("v1", "DeleteOptions", raw)).unwrap();
    assert_eq!(v["propagationPolicy"], "Foreground");
    assert_eq!(v["gracePeriodSeconds"], 0);
}

#[test]
fn errors_are_reported() {
    assert_eq!(decode_body(b"{}"), Err(ProtobufError::MissingMagic));
    let unknown = decode_body(&envelope("example.com/v1", "Widget", Enc::new()));
    assert!(matches!(unknown, Err(ProtobufError::UnknownKind { .. })));
    let mut truncated = envelope("v1", "Secret", Enc::new().str(1, "x"));
    truncated.pop();
    assert!(matches!(
        decode_body(&truncated),
        Err(ProtobufError::Malformed(_))
    ));
    // A string where a message is expected is still a wire-level message; a varint is not.
    let s = m(CORE, "Secret");
    let wrong = Enc::new().int(num(&s, "metadata"), 5);
    assert!(matches!(
        decode_body(&envelope("v1", "Secret", wrong)),
        Err(ProtobufError::Malformed(_))
    ));
    // Nesting past the limit fails cleanly.
    let jsp = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";
    let not = num(jsp, "not");
    let mut deep = Enc::new();
    for _ in 0..200 {
        deep = Enc::new().msg(not, deep);
    }
    assert_eq!(
        super::decode::message(jsp, &deep.0),
        Err(ProtobufError::TooDeep(super::decode::MAX_DEPTH))
    );
}

proptest! {
    #[test]
    fn random_bytes_behind_the_magic_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let mut body = MAGIC.to_vec();
        body.extend_from_slice(&bytes);
        let _ = decode_body(&body);
    }

    #[test]
    fn random_object_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        for (v, k) in [("v1", "Pod"), ("apps/v1", "Deployment"), ("certificates.k8s.io/v1", "CertificateSigningRequest"), ("apiextensions.k8s.io/v1", "CustomResourceDefinition")] {
            let mut body = MAGIC.to_vec();
            let tm = Enc::new().str(1, v).str(2, k);
            body.extend_from_slice(&Enc::new().msg(1, tm).bytes(2, &bytes).0);
            let r: Result<Value, _> = decode_body(&body);
            if let Ok(obj) = r {
                prop_assert_eq!(obj["kind"].as_str(), Some(k));
            }
        }
    }
}

/// A message with every field set to a non-zero value (nesting cut at `depth`).
fn synth(message: &str, depth: usize) -> Enc {
    let (pkg, short) = message.rsplit_once('.').unwrap();
    match (pkg, short) {
        (META, "Time") | (META, "MicroTime") => {
            return Enc::new().int(1, 1_700_000_000).int(2, 123_000_000);
        }
        (META, "Duration") => return Enc::new().int(1, 90_000_000_000),
        (META, "FieldsV1") | ("k8s.io.apimachinery.pkg.runtime", "RawExtension") => {
            return Enc::new().str(1, r#"{"a":1}"#);
        }
        ("k8s.io.apimachinery.pkg.api.resource", "Quantity") => return Enc::new().str(1, "1Gi"),
        ("k8s.io.apimachinery.pkg.util.intstr", "IntOrString") => {
            return Enc::new().int(1, 0).int(2, 7);
        }
        (_, "JSON") => return Enc::new().str(1, "true"),
        (_, "JSONSchemaPropsOrBool") => return Enc::new().int(1, 1),
        (_, "JSONSchemaPropsOrArray" | "JSONSchemaPropsOrStringArray") => {
            return Enc::new().msg(
                1,
                Enc::new().str(num(&format!("{pkg}.JSONSchemaProps"), "type"), "object"),
            );
        }
        _ => {}
    }
    let msg = &table().messages[message];
    let mut fields: Vec<_> = msg.fields.iter().collect();
    fields.sort_by_key(|(n, _)| **n);
    let mut e = Enc::new();
    for (n, f) in fields {
        let value = |ty: &str| -> Option<Vec<u8>> {
            if ty.contains('.') {
                (depth > 0).then(|| synth(ty, depth - 1).0)
            } else {
                None
            }
        };
        let scalar = |mut e: Enc, n: u32, ty: &str| match ty {
            "double" => {
                e.key(n, 1);
                e.0.extend_from_slice(&2.5f64.to_le_bytes());
                e
            }
            "string" => e.str(n, "x"),
            "bytes" => e.bytes(n, b"xy"),
            _ => e.int(n, 1),
        };
        match f.label {
            Label::Map => {
                let mut entry = Enc::new().str(1, "k");
                match value(&f.value_ty) {
                    Some(v) => entry = entry.bytes(2, &v),
                    None if f.value_ty.contains('.') => continue,
                    None => entry = scalar(entry, 2, &f.value_ty),
                }
                e = e.msg(*n, entry);
            }
            _ => match value(&f.ty) {
                Some(v) => e = e.bytes(*n, &v),
                None if f.ty.contains('.') => {}
                None => e = scalar(e, *n, &f.ty),
            },
        }
    }
    e
}

use super::table::Label;

/// Decodes `value` into the k8s-openapi type `K` and encodes it again, as the server
/// normalizes built-in objects: unknown fields disappear.
fn roundtrip<K: serde::de::DeserializeOwned + serde::Serialize>(value: Value) -> Value {
    let typed: K = serde_json::from_value(value).unwrap();
    serde_json::to_value(&typed).unwrap()
}

/// Every field name and value shape the table produces is one k8s-openapi's typed objects keep:
/// decoding a fully populated message and normalizing it through the typed structs loses
/// nothing.
#[test]
fn fully_populated_builtin_kinds_survive_typed_normalization() {
    use k8s_openapi::api::{
        admissionregistration::v1 as admission, apps::v1 as apps, authorization::v1 as authz,
        batch::v1 as batch, certificates::v1 as certs, coordination::v1 as coordination,
        core::v1 as core, events::v1 as events, flowcontrol::v1 as flowcontrol, rbac::v1 as rbac,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
    type Normalize = fn(Value) -> Value;
    let kinds: &[(&str, &str, Normalize)] = &[
        ("v1", "Namespace", roundtrip::<core::Namespace>),
        ("v1", "Secret", roundtrip::<core::Secret>),
        ("v1", "ConfigMap", roundtrip::<core::ConfigMap>),
        ("v1", "ServiceAccount", roundtrip::<core::ServiceAccount>),
        ("v1", "Event", roundtrip::<core::Event>),
        ("v1", "Node", roundtrip::<core::Node>),
        ("v1", "Pod", roundtrip::<core::Pod>),
        ("v1", "Service", roundtrip::<core::Service>),
        ("v1", "PodTemplate", roundtrip::<core::PodTemplate>),
        ("apps/v1", "Deployment", roundtrip::<apps::Deployment>),
        ("apps/v1", "ReplicaSet", roundtrip::<apps::ReplicaSet>),
        ("apps/v1", "StatefulSet", roundtrip::<apps::StatefulSet>),
        ("apps/v1", "DaemonSet", roundtrip::<apps::DaemonSet>),
        ("batch/v1", "Job", roundtrip::<batch::Job>),
        ("batch/v1", "CronJob", roundtrip::<batch::CronJob>),
        (
            "coordination.k8s.io/v1",
            "Lease",
            roundtrip::<coordination::Lease>,
        ),
        ("events.k8s.io/v1", "Event", roundtrip::<events::Event>),
        (
            "certificates.k8s.io/v1",
            "CertificateSigningRequest",
            roundtrip::<certs::CertificateSigningRequest>,
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "Role",
            roundtrip::<rbac::Role>,
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            roundtrip::<rbac::RoleBinding>,
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            roundtrip::<rbac::ClusterRole>,
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "ClusterRoleBinding",
            roundtrip::<rbac::ClusterRoleBinding>,
        ),
        (
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            roundtrip::<apiext::CustomResourceDefinition>,
        ),
        (
            "authorization.k8s.io/v1",
            "SelfSubjectAccessReview",
            roundtrip::<authz::SelfSubjectAccessReview>,
        ),
        (
            "authorization.k8s.io/v1",
            "SubjectAccessReview",
            roundtrip::<authz::SubjectAccessReview>,
        ),
        (
            "authorization.k8s.io/v1",
            "LocalSubjectAccessReview",
            roundtrip::<authz::LocalSubjectAccessReview>,
        ),
        (
            "authorization.k8s.io/v1",
            "SelfSubjectRulesReview",
            roundtrip::<authz::SelfSubjectRulesReview>,
        ),
        (
            "flowcontrol.apiserver.k8s.io/v1",
            "FlowSchema",
            roundtrip::<flowcontrol::FlowSchema>,
        ),
        (
            "flowcontrol.apiserver.k8s.io/v1",
            "PriorityLevelConfiguration",
            roundtrip::<flowcontrol::PriorityLevelConfiguration>,
        ),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            roundtrip::<admission::ValidatingWebhookConfiguration>,
        ),
        (
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration",
            roundtrip::<admission::MutatingWebhookConfiguration>,
        ),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicy",
            roundtrip::<admission::ValidatingAdmissionPolicy>,
        ),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicyBinding",
            roundtrip::<admission::ValidatingAdmissionPolicyBinding>,
        ),
    ];
    for &(api_version, name, normalize) in kinds {
        let message = super::table::message_for(api_version, name).unwrap();
        let decoded = decode_body(&envelope(api_version, name, synth(message, 7))).unwrap();
        let normalized = normalize(decoded.clone());
        let mut diffs = Vec::new();
        diff("", &decoded, &normalized, &mut diffs);
        assert!(
            diffs.is_empty(),
            "{api_version} {name}: typed normalization changed the decoded object: {diffs:#?}"
        );
    }
}

fn diff(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) => diff(&format!("{path}.{k}"), v, w, out),
                    None => out.push(format!("{path}.{k} dropped")),
                }
            }
            // Keys the typed structs add are required fields of messages the synthesis cut
            // off at its depth limit: not a table error.
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                diff(&format!("{path}[{i}]"), v, w, out);
            }
        }
        _ if a != b => out.push(format!("{path}: {a} became {b}")),
        _ => {}
    }
}

#[test]
fn token_request_decodes() {
    let pkg = "k8s.io.api.authentication.v1";
    let tr = m(pkg, "TokenRequest");
    let spec = m(pkg, "TokenRequestSpec");
    let bound = m(pkg, "BoundObjectReference");
    let audiences = num(&spec, "audiences");
    let raw = Enc::new()
        .m(&tr, "metadata", objmeta("", ""))
        .m(
            &tr,
            "spec",
            Enc::new()
                .str(audiences, "https://kubernetes.default.svc")
                .i(&spec, "expirationSeconds", 3600)
                .m(
                    &spec,
                    "boundObjectRef",
                    Enc::new()
                        .s(&bound, "kind", "Pod")
                        .s(&bound, "apiVersion", "v1")
                        .s(&bound, "name", "p")
                        .s(&bound, "uid", "1234"),
                ),
        )
        .m(&tr, "status", Enc::new());
    let v = decode_body(&envelope("authentication.k8s.io/v1", "TokenRequest", raw)).unwrap();
    assert_eq!(
        v["spec"],
        json!({"audiences": ["https://kubernetes.default.svc"], "expirationSeconds": 3600,
               "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "1234"}})
    );
}

/// decode(encode(x)) == x: every top-level kind of the table, fully populated (as the decoder
/// reads it), comes back from the encoder with every value it had.
#[test]
fn encoding_round_trips_every_top_level_kind() {
    let t = table();
    let mut checked = 0;
    for (api_version, pkg) in &t.packages {
        for (name, msg) in &t.messages {
            let Some(kind) = name.strip_prefix(&format!("{pkg}.")) else {
                continue;
            };
            let top_level = msg.fields.values().any(|f| {
                f.json == "metadata"
                    && (f.ty.ends_with(".ObjectMeta") || f.ty.ends_with(".ListMeta"))
            });
            if !top_level || kind.contains('.') {
                continue;
            }
            let body = envelope(api_version, kind, synth(name, 7));
            let decoded = decode_body(&body).unwrap();
            let encoded = super::encode_body(&decoded)
                .unwrap_or_else(|err| panic!("{api_version} {kind}: {err}"));
            let again = decode_body(&encoded).unwrap();
            let mut diffs = Vec::new();
            diff("", &decoded, &again, &mut diffs);
            // The synthesis cuts nesting off, where Go (and the encoder) write the zero value
            // of a non-pointer struct: `again` may gain those, and is then a fixed point.
            let third = decode_body(&super::encode_body(&again).unwrap()).unwrap();
            diff("", &again, &third, &mut diffs);
            diff("", &third, &again, &mut diffs);
            assert!(diffs.is_empty(), "{api_version} {kind}: {diffs:#?}");
            checked += 1;
        }
    }
    assert!(checked > 80, "only {checked} kinds checked");
}

#[test]
fn encoded_objects_read_back_as_the_json_they_came_from() {
    let objects = [
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "c", "namespace": "default", "uid": "u1",
                            "resourceVersion": "12", "creationTimestamp": "2024-01-02T03:04:05Z",
                            "labels": {"b": "2", "a": "1"},
                            "managedFields": [{"manager": "m", "operation": "Update",
                                               "apiVersion": "v1", "time": "2024-01-02T03:04:05Z",
                                               "fieldsType": "FieldsV1",
                                               "fieldsV1": {"f:data": {"f:a": {}}}}]},
               "data": {"a": "b", "empty": ""}, "binaryData": {"bin": "AP8="}}),
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "s", "namespace": "default",
                            "creationTimestamp": "2024-01-02T03:04:05Z"},
               "data": {"k": "dg=="}, "type": "Opaque", "immutable": false}),
        json!({"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": "n", "creationTimestamp": "2024-01-02T03:04:05Z",
                            "deletionTimestamp": "2024-01-02T03:04:05Z",
                            "deletionGracePeriodSeconds": 0, "finalizers": ["x"]},
               "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
        json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
               "message": "configmaps \"x\" not found", "reason": "NotFound",
               "details": {"name": "x", "kind": "configmaps"}, "code": 404}),
        json!({"apiVersion": "v1", "kind": "ConfigMapList",
               "metadata": {"resourceVersion": "7", "continue": "abc", "remainingItemCount": 3},
               "items": [{"metadata": {"name": "a"}, "data": {"x": "y"}}]}),
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": "l"},
               "spec": {"holderIdentity": "h", "leaseDurationSeconds": 40,
                        "renewTime": "2024-01-02T03:04:05.123456Z", "leaseTransitions": 0}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
               "spec": {"replicas": 2, "selector": {"matchLabels": {"a": "b"}},
                        "strategy": {"type": "RollingUpdate",
                                     "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                        "template": {"metadata": {"labels": {"a": "b"}},
                                     "spec": {"containers": [{"name": "c", "image": "i",
                                        "resources": {"limits": {"cpu": "500m"}}}]}}}}),
    ];
    let mut diffs = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        let encoded = super::encode_body(object).unwrap();
        let decoded = decode_body(&encoded).unwrap();
        let kind = object["kind"].as_str().unwrap();
        diff(kind, object, &decoded, &mut diffs);
        // ConfigMap, Secret and Namespace come back exactly; the others gain the zero values
        // Go writes (e.g. a template's `creationTimestamp: null`).
        if i < 3 {
            diff(kind, &decoded, object, &mut diffs);
        }
    }
    assert!(diffs.is_empty(), "{diffs:#?}");
}

#[test]
fn watch_frames_are_length_prefixed_watch_events() {
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    let frame = super::watch_frame("ADDED", &object).unwrap();
    let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
    assert_eq!(len, frame.len() - 4);
    // WatchEvent{type = 1, object = 2 (a RawExtension holding the whole protobuf body,
    // magic included)}.
    let records = super::wire::records(&frame[4..]).unwrap();
    assert_eq!(records[0], (1, super::wire::WireValue::Bytes(b"ADDED")));
    let super::wire::WireValue::Bytes(raw_ext) = records[1].1 else {
        panic!("object is not bytes");
    };
    let inner = super::wire::records(raw_ext).unwrap();
    let super::wire::WireValue::Bytes(raw) = inner[0].1 else {
        panic!("raw is not bytes");
    };
    assert!(raw.starts_with(MAGIC));
    assert_eq!(decode_body(raw).unwrap()["metadata"]["name"], json!("c"));
}
