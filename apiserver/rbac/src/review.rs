//! Access reviews (`authorization.k8s.io/v1`): SubjectAccessReview, LocalSubjectAccessReview,
//! SelfSubjectAccessReview and SelfSubjectRulesReview, from the request body to the response
//! body, as kube-apiserver's REST handlers compute them (`kubectl auth can-i`, `--list`).
//!
//! Each function validates the spec (422 Invalid / 400 BadRequest with kube's messages), fills
//! `status`, and returns the whole object. Nothing is stored.

use serde_json::{Map, Value, json};

use super::attributes::{Attributes, ResourceAttributes, Target};
use super::authorizer::aggregate_errors;
use super::policy::Policy;
use super::review_selectors::{review_selectors, selector_causes};
use super::rules::list;
use crate::Identity;
use ocm_apiserver_status::{ApiError, Cause};
use ocm_apiserver_validation::go_quote;

const GROUP: &str = "authorization.k8s.io";
const API_VERSION: &str = "authorization.k8s.io/v1";

fn str_field<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn present<'a>(spec: &'a Value, key: &str) -> Option<&'a Value> {
    spec.get(key).filter(|v| !v.is_null())
}

fn invalid(kind: &str, name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::invalid(&format!("{kind}.{GROUP}"), GROUP, kind, name, causes)
}

fn invalid_cause(field: &str, value: &str, detail: &str) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        format!("Invalid value: {value}: {detail}"),
        field,
    )
}

/// Go's `%#v` of the attributes struct kube echoes in some messages (approximate).
fn go_struct(type_name: &str, v: &Value) -> String {
    let fields: Vec<String> = v
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, val)| {
                    let mut key = k.clone();
                    if let Some(first) = key.get(0..1) {
                        key.replace_range(0..1, &first.to_uppercase());
                    }
                    let rendered = match val {
                        Value::String(s) => go_quote(s),
                        other => other.to_string(),
                    };
                    format!("{key}:{rendered}")
                })
                .collect()
        })
        .unwrap_or_default();
    format!("authorization.{type_name}{{{}}}", fields.join(", "))
}

/// The `spec` checks kube's `ValidateSubjectAccessReviewSpec` and
/// `ValidateSelfSubjectAccessReviewSpec` share: exactly one of the two attribute kinds.
fn attribute_causes(spec: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let res = present(spec, "resourceAttributes");
    let non = present(spec, "nonResourceAttributes");
    if let (Some(_), Some(n)) = (res, non) {
        causes.push(invalid_cause(
            "spec.nonResourceAttributes",
            &go_struct("NonResourceAttributes", n),
            "cannot be specified in combination with resourceAttributes",
        ));
    }
    if res.is_none() && non.is_none() {
        causes.push(invalid_cause(
            "spec.resourceAttributes",
            "\"null\"",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ));
    }
    causes
}

/// The selector checks of the spec's resource attributes, as Status causes.
fn spec_selector_causes(spec: &Value) -> Vec<Cause> {
    selector_causes(present(spec, "resourceAttributes"))
        .into_iter()
        .map(|c| Cause::new(&format!("{:?}", c.reason), c.message, c.field))
        .collect()
}

/// The attributes a review spec asks about, for `user` (kube's `ResourceAttributesFrom` /
/// `NonResourceAttributesFrom`).
fn attributes_from_spec(spec: &Value, user: Identity) -> Attributes {
    if let Some(r) = present(spec, "resourceAttributes") {
        Attributes {
            user,
            verb: str_field(r, "verb").to_owned(),
            target: Target::Resource(ResourceAttributes {
                namespace: str_field(r, "namespace").to_owned(),
                group: str_field(r, "group").to_owned(),
                resource: str_field(r, "resource").to_owned(),
                subresource: str_field(r, "subresource").to_owned(),
                name: str_field(r, "name").to_owned(),
                selectors: review_selectors(r),
            }),
        }
    } else {
        let n = present(spec, "nonResourceAttributes").unwrap_or(&Value::Null);
        Attributes::non_resource(user, str_field(n, "verb"), str_field(n, "path"))
    }
}

fn response(kind: &str, body: &Value, status: Value) -> Value {
    let mut metadata = body
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    metadata.entry("creationTimestamp").or_insert(Value::Null);
    json!({
        "kind": kind,
        "apiVersion": API_VERSION,
        "metadata": metadata,
        "spec": body.get("spec").cloned().unwrap_or_else(|| json!({})),
        "status": status,
    })
}

fn access_status(policy: &Policy, attrs: &Attributes) -> Value {
    let decision = policy.authorize(attrs);
    let mut status = Map::new();
    status.insert("allowed".into(), Value::Bool(decision.allowed));
    if !decision.reason.is_empty() {
        status.insert("reason".into(), Value::String(decision.reason));
    }
    Value::Object(status)
}

fn string_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `POST /apis/authorization.k8s.io/v1/subjectaccessreviews`: may `spec.user` (with
/// `spec.groups`) do what the spec describes? The groups are taken as given (no
/// `system:authenticated` is added), as kube does.
pub fn subject_access_review(policy: &Policy, body: &Value) -> Result<Value, ApiError> {
    let spec = body.get("spec").unwrap_or(&Value::Null);
    let mut causes = attribute_causes(spec);
    let user = str_field(spec, "user");
    let groups = string_list(spec.get("groups"));
    if user.is_empty() && groups.is_empty() {
        causes.push(invalid_cause(
            "spec.user",
            "\"\"",
            "at least one of user or group must be specified",
        ));
    }
    causes.extend(spec_selector_causes(spec));
    if !causes.is_empty() {
        return Err(invalid("SubjectAccessReview", "", causes));
    }
    let identity = Identity {
        user: user.to_owned(),
        groups,
        ..Default::default()
    };
    let attrs = attributes_from_spec(spec, identity);
    Ok(response(
        "SubjectAccessReview",
        body,
        access_status(policy, &attrs),
    ))
}

/// `POST /apis/authorization.k8s.io/v1/namespaces/{namespace}/localsubjectaccessreviews`: a
/// SubjectAccessReview restricted to `namespace` (`spec.resourceAttributes.namespace` must
/// equal it; non-resource attributes are refused).
pub fn local_subject_access_review(
    policy: &Policy,
    namespace: &str,
    body: &Value,
) -> Result<Value, ApiError> {
    let spec = body.get("spec").unwrap_or(&Value::Null);
    let name = body
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut causes = attribute_causes(spec);
    if let Some(n) = present(spec, "nonResourceAttributes") {
        causes.push(invalid_cause(
            "spec.nonResourceAttributes",
            &go_struct("NonResourceAttributes", n),
            "disallowed on this kind of request",
        ));
    }
    let user = str_field(spec, "user");
    let groups = string_list(spec.get("groups"));
    if user.is_empty() && groups.is_empty() {
        causes.push(invalid_cause(
            "spec.user",
            "\"\"",
            "at least one of user or group must be specified",
        ));
    }
    causes.extend(spec_selector_causes(spec));
    if !causes.is_empty() {
        return Err(invalid("LocalSubjectAccessReview", name, causes));
    }
    if namespace.is_empty() {
        return Err(ApiError::bad_request(
            "namespace is required on this type: ",
        ));
    }
    let attr_ns = spec
        .pointer("/resourceAttributes/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    if attr_ns != namespace {
        return Err(ApiError::bad_request(format!(
            "spec.resourceAttributes.namespace must match namespace: {namespace}"
        )));
    }
    let identity = Identity {
        user: user.to_owned(),
        groups,
        ..Default::default()
    };
    let attrs = attributes_from_spec(spec, identity);
    let mut out = response(
        "LocalSubjectAccessReview",
        body,
        access_status(policy, &attrs),
    );
    out["metadata"]["namespace"] = Value::from(namespace);
    Ok(out)
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`: may the requester do what
/// the spec describes? (`kubectl auth can-i`.)
pub fn self_subject_access_review(
    policy: &Policy,
    user: &Identity,
    body: &Value,
) -> Result<Value, ApiError> {
    let spec = body.get("spec").unwrap_or(&Value::Null);
    let mut causes = attribute_causes(spec);
    causes.extend(spec_selector_causes(spec));
    if !causes.is_empty() {
        return Err(invalid("SelfSubjectAccessReview", "", causes));
    }
    let attrs = attributes_from_spec(spec, user.clone());
    Ok(response(
        "SelfSubjectAccessReview",
        body,
        access_status(policy, &attrs),
    ))
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews`: the rules the requester holds
/// in `spec.namespace` (`kubectl auth can-i --list`). Resolution errors (bindings to missing
/// roles) go to `status.evaluationError`; `incomplete` is always false for RBAC.
pub fn self_subject_rules_review(
    policy: &Policy,
    user: &Identity,
    body: &Value,
) -> Result<Value, ApiError> {
    let namespace = body
        .pointer("/spec/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    if namespace.is_empty() {
        return Err(ApiError::bad_request("no namespace on request"));
    }
    let (rules, errors) = policy.rules_for(user, namespace);
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for r in &rules {
        if !list(&r.resources).is_empty() {
            let mut rule = Map::new();
            rule.insert("verbs".into(), json!(r.verbs));
            if !list(&r.api_groups).is_empty() {
                rule.insert("apiGroups".into(), json!(list(&r.api_groups)));
            }
            rule.insert("resources".into(), json!(list(&r.resources)));
            if !list(&r.resource_names).is_empty() {
                rule.insert("resourceNames".into(), json!(list(&r.resource_names)));
            }
            resource_rules.push(Value::Object(rule));
        }
        if !list(&r.non_resource_urls).is_empty() {
            non_resource_rules.push(json!({
                "verbs": r.verbs,
                "nonResourceURLs": list(&r.non_resource_urls),
            }));
        }
    }
    let mut status = Map::new();
    status.insert("resourceRules".into(), Value::Array(resource_rules));
    status.insert("nonResourceRules".into(), Value::Array(non_resource_rules));
    status.insert("incomplete".into(), Value::Bool(false));
    if !errors.is_empty() {
        status.insert(
            "evaluationError".into(),
            Value::String(aggregate_errors(&errors)),
        );
    }
    Ok(response(
        "SelfSubjectRulesReview",
        body,
        Value::Object(status),
    ))
}
