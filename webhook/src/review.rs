//! AdmissionReview v1 and ConversionReview v1 on the wire: parse a request into a
//! [`Review`], and build the response from a [`Verdict`] (a mutation becomes a JSON Patch from
//! the received object to the mutated one). Pure.

use base64::Engine;
use serde_json::{Value, json};

use crate::policy::{Denial, Operation, Review, Verdict};

/// Why a review body cannot be answered.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// Not JSON, or not the expected kind/version.
    #[error("malformed review: {0}")]
    Malformed(String),
}

/// A parsed AdmissionReview request: the review for the policy, plus what the response echoes.
#[derive(Clone, Debug)]
pub struct AdmissionRequest {
    /// `request.uid`, echoed in the response.
    pub uid: String,
    /// What the policy sees.
    pub review: Review,
    /// The requester as the API server reported it (`request.userInfo`), for access checks.
    pub user_info: Value,
    /// Whether the request is a dry run.
    pub dry_run: bool,
}

/// Parses an AdmissionReview v1 body.
pub fn parse_admission_review(body: &[u8]) -> Result<AdmissionRequest, ReviewError> {
    let review: Value =
        serde_json::from_slice(body).map_err(|e| ReviewError::Malformed(e.to_string()))?;
    if review.get("apiVersion").and_then(Value::as_str) != Some("admission.k8s.io/v1")
        || review.get("kind").and_then(Value::as_str) != Some("AdmissionReview")
    {
        return Err(ReviewError::Malformed(
            "expected apiVersion admission.k8s.io/v1, kind AdmissionReview".into(),
        ));
    }
    let request = review
        .get("request")
        .filter(|r| r.is_object())
        .ok_or_else(|| ReviewError::Malformed("request is missing".into()))?;
    let text = |p: &str| {
        request
            .pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let object = |field: &str| request.get(field).filter(|v| v.is_object()).cloned();
    let uid = text("/uid");
    if uid.is_empty() {
        return Err(ReviewError::Malformed("request.uid is empty".into()));
    }
    Ok(AdmissionRequest {
        uid,
        review: Review {
            operation: Operation::parse(&text("/operation")),
            group: text("/resource/group"),
            resource: text("/resource/resource"),
            subresource: text("/subResource"),
            namespace: text("/namespace"),
            name: text("/name"),
            object: object("object"),
            old_object: object("oldObject"),
            user: text("/userInfo/username"),
            groups: request
                .pointer("/userInfo/groups")
                .and_then(Value::as_array)
                .map(|groups| {
                    groups
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
        },
        user_info: request.get("userInfo").cloned().unwrap_or(json!({})),
        dry_run: request
            .get("dryRun")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// The Status a denial becomes, worded as the in-process path words it (kube's forbidden
/// message for 403, the plain message otherwise).
pub fn denial_status(denial: &Denial, review: &Review) -> Value {
    let message = match denial.code {
        403 => {
            let resource = denial.resource.as_deref().unwrap_or(&review.resource);
            let name = denial.name.as_deref().unwrap_or(&review.name);
            let qualified = if review.group.is_empty() {
                resource.to_owned()
            } else {
                format!("{resource}.{}", review.group)
            };
            if name.is_empty() {
                format!("{qualified} is forbidden: {}", denial.message)
            } else {
                format!("{qualified} \"{name}\" is forbidden: {}", denial.message)
            }
        }
        _ => denial.message.clone(),
    };
    json!({
        "metadata": {},
        "status": "Failure",
        "code": denial.code,
        "reason": denial.reason(),
        "message": message,
    })
}

/// The AdmissionReview response for `verdict`.
pub fn admission_response(request: &AdmissionRequest, verdict: &Verdict) -> Value {
    let response = match verdict {
        Verdict::Allow => json!({"uid": request.uid, "allowed": true}),
        Verdict::Mutate(mutated) => {
            let original = request.review.object.clone().unwrap_or(Value::Null);
            let patch = json_patch::diff(&original, mutated);
            let bytes = serde_json::to_vec(&patch).unwrap_or_else(|_| b"[]".to_vec());
            json!({
                "uid": request.uid,
                "allowed": true,
                "patchType": "JSONPatch",
                "patch": base64::engine::general_purpose::STANDARD.encode(bytes),
            })
        }
        Verdict::Deny(denial) => json!({
            "uid": request.uid,
            "allowed": false,
            "status": denial_status(denial, &request.review),
        }),
    };
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

/// Answers a ConversionReview v1 with `convert(object, desired_api_version)` applied to each
/// object; any failure fails the whole review, as kube expects.
pub fn conversion_response(
    body: &[u8],
    convert: &dyn Fn(Value, &str) -> Result<Value, String>,
) -> Result<Value, ReviewError> {
    let review: Value =
        serde_json::from_slice(body).map_err(|e| ReviewError::Malformed(e.to_string()))?;
    let api_version = review
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if review.get("kind").and_then(Value::as_str) != Some("ConversionReview")
        || !api_version.starts_with("apiextensions.k8s.io/")
    {
        return Err(ReviewError::Malformed(
            "expected kind ConversionReview of apiextensions.k8s.io".into(),
        ));
    }
    let uid = review
        .pointer("/request/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let desired = review
        .pointer("/request/desiredAPIVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let objects = review
        .pointer("/request/objects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let converted: Result<Vec<Value>, String> = objects
        .into_iter()
        .map(|object| convert(object, &desired))
        .collect();
    let response = match converted {
        Ok(objects) => json!({
            "uid": uid,
            "convertedObjects": objects,
            "result": {"metadata": {}, "status": "Success"},
        }),
        Err(message) => json!({
            "uid": uid,
            "convertedObjects": [],
            "result": {"metadata": {}, "status": "Failure", "message": message},
        }),
    };
    Ok(json!({"apiVersion": api_version, "kind": "ConversionReview", "response": response}))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn request(object: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": "u1", "operation": "CREATE",
                "kind": {"group": "cluster.open-cluster-management.io", "version": "v1", "kind": "ManagedCluster"},
                "resource": {"group": "cluster.open-cluster-management.io", "version": "v1", "resource": "managedclusters"},
                "name": "c1",
                "userInfo": {"username": "bob", "groups": ["g"]},
                "object": object,
                "dryRun": false,
            }
        }))
        .unwrap()
    }

    #[test]
    fn requests_parse_and_mutations_become_json_patches() {
        let object = json!({"metadata": {"name": "c1"}, "spec": {}});
        let parsed = parse_admission_review(&request(object.clone())).unwrap();
        assert_eq!(parsed.review.resource, "managedclusters");
        assert_eq!(parsed.review.user, "bob");
        assert_eq!(parsed.review.groups, ["g"]);
        assert_eq!(parsed.review.operation, Some(Operation::Create));
        let mut mutated = object.clone();
        mutated["metadata"]["labels"] = json!({"a": "b"});
        let response = admission_response(&parsed, &Verdict::Mutate(mutated.clone()));
        assert_eq!(response["response"]["uid"], "u1");
        assert_eq!(response["response"]["patchType"], "JSONPatch");
        let patch = base64::engine::general_purpose::STANDARD
            .decode(response["response"]["patch"].as_str().unwrap())
            .unwrap();
        let patch: json_patch::Patch = serde_json::from_slice(&patch).unwrap();
        let mut applied = object;
        json_patch::patch(&mut applied, &patch).unwrap();
        assert_eq!(applied, mutated);
    }

    #[test]
    fn denials_carry_kubes_wording() {
        let parsed = parse_admission_review(&request(json!({"metadata": {"name": "c1"}}))).unwrap();
        let denial = Denial {
            code: 403,
            message: "user \"bob\" cannot update the HubAcceptsClient field".into(),
            resource: Some("managedclusters/accept".into()),
            name: None,
        };
        let response = admission_response(&parsed, &Verdict::Deny(denial));
        assert_eq!(response["response"]["allowed"], false);
        assert_eq!(response["response"]["status"]["reason"], "Forbidden");
        assert_eq!(
            response["response"]["status"]["message"],
            "managedclusters/accept.cluster.open-cluster-management.io \"c1\" is forbidden: user \"bob\" cannot update the HubAcceptsClient field"
        );
    }

    #[test]
    fn garbage_is_refused() {
        assert!(parse_admission_review(b"{").is_err());
        assert!(parse_admission_review(br#"{"apiVersion":"v1","kind":"Pod"}"#).is_err());
    }

    #[test]
    fn conversion_reviews_convert_every_object_or_fail() {
        let body = serde_json::to_vec(&json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "x", "desiredAPIVersion": "g/v2", "objects": [{"apiVersion": "g/v1"}]}
        }))
        .unwrap();
        let ok = conversion_response(&body, &|mut o, v| {
            o["apiVersion"] = json!(v);
            Ok(o)
        })
        .unwrap();
        assert_eq!(ok["response"]["uid"], "x");
        assert_eq!(ok["response"]["convertedObjects"][0]["apiVersion"], "g/v2");
        let failed = conversion_response(&body, &|_, _| Err("no".into())).unwrap();
        assert_eq!(failed["response"]["result"]["status"], "Failure");
    }
}
