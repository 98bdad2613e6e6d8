//! The checks the hub runs on every ManifestWork write (upstream runs them in its work
//! webhook): at least one manifest, at most [`MANIFEST_SIZE_LIMIT`] bytes of manifests, each
//! manifest a named object without `generateName`, no two manifests for the same object, and
//! a well-formed executor. Messages are upstream's.

use std::collections::HashSet;

use ocm_api::work::names::MANIFEST_SIZE_LIMIT;
use serde_json::Value;

/// Why a ManifestWork is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

/// Checks the `spec` of a ManifestWork (the whole object as JSON) with the default size
/// limit.
pub fn validate_manifest_work(work: &Value) -> Result<(), Invalid> {
    validate_manifests_with_limit(work, MANIFEST_SIZE_LIMIT)?;
    validate_executor(work)
}

/// Checks the manifests of `work` against `limit` bytes.
pub fn validate_manifests_with_limit(work: &Value, limit: usize) -> Result<(), Invalid> {
    let manifests = work
        .pointer("/spec/workload/manifests")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if manifests.is_empty() {
        return Err(Invalid("manifests should not be empty".into()));
    }
    let size: usize = manifests.iter().map(|m| m.to_string().len()).sum();
    if size > limit {
        return Err(Invalid(format!(
            "the size of manifests is {size} bytes which exceeds the {limit} limit"
        )));
    }
    let mut seen = HashSet::new();
    for (i, manifest) in manifests.iter().enumerate() {
        let text = |p: &str| manifest.pointer(p).and_then(Value::as_str).unwrap_or("");
        if !manifest.is_object() {
            return Err(Invalid(format!(
                "failed to extract metadata from manifest at index {i}: not an object"
            )));
        }
        if text("/apiVersion").is_empty() || text("/kind").is_empty() {
            return Err(Invalid(format!(
                "manifest at index {i}: Object 'Kind' and 'apiVersion' are missing"
            )));
        }
        if text("/metadata/name").is_empty() {
            return Err(Invalid("name must be set in manifest".into()));
        }
        if !text("/metadata/generateName").is_empty() {
            return Err(Invalid("generateName must not be set in manifest".into()));
        }
        let (api_version, kind) = (text("/apiVersion"), text("/kind"));
        let (namespace, name) = (text("/metadata/namespace"), text("/metadata/name"));
        let group = api_version.split_once('/').map(|(g, _)| g).unwrap_or("");
        if !seen.insert((
            group.to_owned(),
            kind.to_owned(),
            namespace.to_owned(),
            name.to_owned(),
        )) {
            return Err(Invalid(format!(
                "duplicate manifest for resource {namespace}/{name} with resource type {api_version}, Kind={kind}"
            )));
        }
    }
    Ok(())
}

/// `spec.executor` names a service account when its type is ServiceAccount.
fn validate_executor(work: &Value) -> Result<(), Invalid> {
    let Some(executor) = work.pointer("/spec/executor").filter(|e| !e.is_null()) else {
        return Ok(());
    };
    if executor
        .pointer("/subject/serviceAccount")
        .is_none_or(Value::is_null)
    {
        return Err(Invalid("executor service account can not be nil".into()));
    }
    Ok(())
}

/// The executor's `execute-as` name (`system:serviceaccount:<ns>:<name>`), when the work
/// has one; the hub checks the requester may `execute-as` it when the executor changes.
pub fn executor_subject(work: &Value) -> Option<String> {
    let sa = work.pointer("/spec/executor/subject/serviceAccount")?;
    Some(format!(
        "system:serviceaccount:{}:{}",
        sa.get("namespace").and_then(Value::as_str).unwrap_or(""),
        sa.get("name").and_then(Value::as_str).unwrap_or("")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn work(manifests: Value) -> Value {
        json!({"spec": {"workload": {"manifests": manifests}}})
    }

    fn cm(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}})
    }

    #[test]
    fn valid_work_passes() {
        assert_eq!(
            validate_manifest_work(&work(json!([cm("a"), cm("b")]))),
            Ok(())
        );
    }

    #[test]
    fn empty_oversize_duplicate_and_unnamed_are_refused() {
        let err = |w: Value| validate_manifest_work(&w).unwrap_err().0;
        assert_eq!(err(work(json!([]))), "manifests should not be empty");
        assert_eq!(err(json!({"spec": {}})), "manifests should not be empty");
        let big = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "big", "namespace": "ns"}, "data": {"x": "y".repeat(600_000)}});
        assert!(err(work(json!([big]))).starts_with("the size of manifests is 600"),);
        assert_eq!(
            err(work(json!([cm("a"), cm("a")]))),
            "duplicate manifest for resource ns/a with resource type v1, Kind=ConfigMap"
        );
        assert_eq!(
            err(work(
                json!([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}])
            )),
            "name must be set in manifest"
        );
        assert_eq!(
            err(work(json!([{"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a", "generateName": "a-"}}]))),
            "generateName must not be set in manifest"
        );
        assert!(err(work(json!([{"metadata": {"name": "a"}}]))).contains("'Kind'"));
        let mut with_executor = work(json!([cm("a")]));
        with_executor["spec"]["executor"] = json!({"subject": {"type": "ServiceAccount"}});
        assert_eq!(
            err(with_executor),
            "executor service account can not be nil"
        );
    }

    #[test]
    fn limit_is_configurable_and_executor_subject_is_named() {
        assert!(validate_manifests_with_limit(&work(json!([cm("a")])), 10).is_err());
        let mut w = work(json!([cm("a")]));
        w["spec"]["executor"] = json!({"subject": {"type": "ServiceAccount",
            "serviceAccount": {"namespace": "ns", "name": "deployer"}}});
        assert_eq!(
            executor_subject(&w).as_deref(),
            Some("system:serviceaccount:ns:deployer")
        );
    }
}
