//! APIServices (`apiregistration.k8s.io/v1`): kube's defaults, validation and create-time
//! status; the local APIService kube registers for a served group-version; and the
//! `Available` condition kube's availability controllers write.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use base64::Engine;
use serde_json::{Value, json};

use super::str_at;
use crate::registry::builtin_resources;
use crate::registry::priority::{CRD_PRIORITY, builtin_priority};
use crate::validation::{
    BadValue, Cause, dns1035_label_errors, dns1123_subdomain_errors, go_quote,
};

/// The label kube's autoregister controller puts on the APIServices it keeps: `onstart` for
/// built-in group-versions (written once at start), `true` for custom resources' (kept in
/// step with their CRDs).
pub(crate) const AUTOMANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";
/// The condition type of an APIService's availability.
const AVAILABLE: &str = "Available";

/// The name of the APIService of a group-version (`v1.` for the core group).
pub(crate) fn apiservice_name(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

/// The local APIService kube-apiserver registers for a served group-version (`builtin` when
/// it is one of kube's own, else a custom resource group), or `None` for a built-in
/// group-version kube registers none for.
pub(crate) fn local_apiservice(group: &str, version: &str, builtin: bool) -> Option<Value> {
    let ((group_priority, version_priority), managed) = if builtin {
        (builtin_priority(group, version)?, "onstart")
    } else {
        (CRD_PRIORITY, "true")
    };
    Some(json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {
            "name": apiservice_name(group, version),
            "labels": {AUTOMANAGED: managed},
        },
        "spec": {
            "group": group,
            "version": version,
            "groupPriorityMinimum": group_priority,
            "versionPriority": version_priority,
        },
    }))
}

/// The local APIServices of the built-in group-versions, by name (the same for every
/// cluster; computed once, not on every health check).
static BUILTIN_LOCAL: LazyLock<BTreeMap<String, Value>> = LazyLock::new(|| {
    let mut out = BTreeMap::new();
    for res in builtin_resources() {
        for v in &res.versions {
            if let Some(obj) = local_apiservice(&res.group, &v.name, true) {
                out.insert(apiservice_name(&res.group, &v.name), obj);
            }
        }
    }
    out
});

/// The local APIServices a cluster serving the built-in resources and the custom resources
/// of `crds` (its stored CRDs) should have, by name: one per built-in group-version kube
/// registers, and one per version an established CRD serves.
pub(crate) fn desired_local(crds: &[Value]) -> BTreeMap<String, Value> {
    let mut out = BUILTIN_LOCAL.clone();
    for crd in crds {
        let established = crate::meta::condition_true(crd, "Established");
        if crate::meta::is_deleting(crd) || !established {
            continue;
        }
        let group = str_at(crd, "/spec/group");
        for v in super::array_at(crd, "/spec/versions") {
            let served = v.get("served").and_then(Value::as_bool).unwrap_or(false);
            let name = str_at(v, "/name");
            if served && let Some(obj) = local_apiservice(group, name, false) {
                out.entry(apiservice_name(group, name)).or_insert(obj);
            }
        }
    }
    out
}

/// The names of the local APIServices (see [`desired_local`]) missing from `apiservices` or
/// not available there, sorted: what kube's `autoregister-completion` check waits for.
pub(crate) fn missing_local(crds: &[Value], apiservices: &[Value]) -> Vec<String> {
    desired_local(crds)
        .into_keys()
        .filter(|name| {
            !apiservices
                .iter()
                .any(|a| crate::meta::meta_str(a, "name") == name && is_available(a))
        })
        .collect()
}

/// Whether an APIService is local (served by this server, no `spec.service`).
pub(crate) fn is_local(obj: &Value) -> bool {
    obj.pointer("/spec/service").is_none_or(Value::is_null)
}

/// `spec.service.port` defaults to 443.
pub(super) fn default_apiservice(obj: &mut Value) {
    if let Some(service) = obj.pointer_mut("/spec/service").filter(|s| s.is_object()) {
        super::default_field(service, "port", json!(443));
    }
}

/// The status a new APIService starts with: a local one is available at once.
pub(super) fn status_on_create(obj: &Value) -> Value {
    if is_local(obj) {
        let (status, reason, message) = local_availability();
        json!({"conditions": [condition(status, reason, &message)]})
    } else {
        json!({})
    }
}

/// An `Available` condition.
fn condition(status: &str, reason: &str, message: &str) -> Value {
    json!({
        "type": AVAILABLE,
        "status": status,
        "lastTransitionTime": crate::meta::now(),
        "reason": reason,
        "message": message,
    })
}

fn local_availability() -> (&'static str, &'static str, String) {
    (
        "True",
        "Local",
        "Local APIServices are always available".into(),
    )
}

/// The `Available` condition's status, reason and message for an APIService, given the
/// Service it names (if it exists), as kube's availability controllers decide them. This
/// server proxies to no aggregated API server, and serves no EndpointSlices, so a
/// service-backed APIService is never available: its Service is missing, does not listen on
/// the port, or has no endpoints.
pub(crate) fn availability(
    apiservice: &Value,
    service: Option<&Value>,
) -> (&'static str, &'static str, String) {
    if is_local(apiservice) {
        return local_availability();
    }
    let name = str_at(apiservice, "/spec/service/name");
    let namespace = go_quote(str_at(apiservice, "/spec/service/namespace"));
    let Some(service) = service else {
        return (
            "False",
            "ServiceNotFound",
            format!("service/{name} in {namespace} is not present"),
        );
    };
    let port = apiservice
        .pointer("/spec/service/port")
        .and_then(Value::as_i64)
        .unwrap_or(443);
    let cluster_ip = matches!(str_at(service, "/spec/type"), "" | "ClusterIP");
    let listens = super::array_at(service, "/spec/ports")
        .iter()
        .any(|p| p.get("port").and_then(Value::as_i64) == Some(port));
    if cluster_ip && !listens {
        return (
            "False",
            "ServicePortError",
            format!("service/{name} in {namespace} is not listening on port {port}"),
        );
    }
    (
        "False",
        "EndpointsNotFound",
        format!("cannot find endpointslices for service/{name} in {namespace}"),
    )
}

/// The APIService's conditions with `Available` set as given; `None` when it already says so.
pub(crate) fn with_availability(
    apiservice: &Value,
    (status, reason, message): (&str, &str, String),
) -> Option<Vec<Value>> {
    let conditions = super::array_at(apiservice, "/status/conditions").to_vec();
    let current = conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(AVAILABLE));
    if let Some(current) = current
        && str_at(current, "/status") == status
        && str_at(current, "/reason") == reason
        && str_at(current, "/message") == message
    {
        return None;
    }
    let mut next = condition(status, reason, &message);
    // The transition time moves only when the status does.
    if let Some(current) = current
        && str_at(current, "/status") == status
        && let Some(time) = current.get("lastTransitionTime")
    {
        next["lastTransitionTime"] = time.clone();
    }
    let mut out: Vec<Value> = conditions
        .into_iter()
        .filter(|c| c.get("type").and_then(Value::as_str) != Some(AVAILABLE))
        .collect();
    out.push(next);
    Some(out)
}

/// Whether the APIService is `Available=True`.
pub(crate) fn is_available(apiservice: &Value) -> bool {
    super::array_at(apiservice, "/status/conditions")
        .iter()
        .any(|c| {
            c.get("type").and_then(Value::as_str) == Some(AVAILABLE)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
}

/// `ValidateAPIService` (the same on update) and its status rules.
pub(super) fn validate_apiservice(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let name = crate::meta::meta_str(obj, "name");
    let group = str_at(obj, "/spec/group");
    let version = str_at(obj, "/spec/version");
    let required = apiservice_name(group, version);
    if crate::validation::is_path_segment_name(name) && name != required {
        causes.push(Cause::invalid(
            "metadata.name",
            name,
            &format!(
                "must be `spec.version+\".\"+spec.group`: {}",
                go_quote(&required)
            ),
        ));
    }
    if group.is_empty() {
        if version != "v1" {
            causes.push(Cause::required(
                "spec.group",
                "only v1 may have an empty group and it better be legacy kube",
            ));
        }
    } else {
        for msg in dns1123_subdomain_errors(group) {
            causes.push(Cause::invalid("spec.group", group, &msg));
        }
    }
    for msg in dns1035_label_errors(version) {
        causes.push(Cause::invalid("spec.version", version, &msg));
    }
    let group_priority = obj
        .pointer("/spec/groupPriorityMinimum")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if !(1..=20000).contains(&group_priority) {
        causes.push(Cause::invalid(
            "spec.groupPriorityMinimum",
            group_priority,
            "must be positive and less than 20000",
        ));
    }
    let version_priority = obj
        .pointer("/spec/versionPriority")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if !(1..=1000).contains(&version_priority) {
        causes.push(Cause::invalid(
            "spec.versionPriority",
            version_priority,
            "must be positive and less than 1000",
        ));
    }
    let ca_bytes = base64::engine::general_purpose::STANDARD
        .decode(str_at(obj, "/spec/caBundle"))
        .map(|b| b.len())
        .unwrap_or(0);
    let insecure = obj
        .pointer("/spec/insecureSkipTLSVerify")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if is_local(obj) {
        if ca_bytes > 0 {
            causes.push(Cause::invalid(
                "spec.caBundle",
                format!("{ca_bytes} bytes"),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            causes.push(Cause::invalid(
                "spec.insecureSkipTLSVerify",
                true,
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
    } else {
        if str_at(obj, "/spec/service/namespace").is_empty() {
            causes.push(Cause::required("spec.service.namespace", ""));
        }
        if str_at(obj, "/spec/service/name").is_empty() {
            causes.push(Cause::required("spec.service.name", ""));
        }
        if let Some(port) = obj.pointer("/spec/service/port").and_then(Value::as_i64)
            && !(1..=65535).contains(&port)
        {
            causes.push(Cause::invalid(
                "spec.service.port",
                port,
                "port is not valid: must be between 1 and 65535, inclusive",
            ));
        }
        if insecure && ca_bytes > 0 {
            causes.push(Cause::invalid(
                "spec.insecureSkipTLSVerify",
                true,
                "may not be true if caBundle is present",
            ));
        }
    }
    for (i, c) in super::array_at(obj, "/status/conditions")
        .iter()
        .enumerate()
    {
        let status = str_at(c, "/status");
        if !matches!(status, "True" | "False" | "Unknown") {
            causes.push(Cause::not_supported(
                format!("status.conditions[{i}].status"),
                BadValue::Str(status.into()),
                &["True", "False", "Unknown"],
            ));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(obj: Value) -> Vec<String> {
        validate_apiservice(&obj)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn local_apiservices_carry_kubes_priorities() {
        let apps = local_apiservice("apps", "v1", true).unwrap();
        assert_eq!(apps["metadata"]["name"], "v1.apps");
        assert_eq!(apps["spec"]["groupPriorityMinimum"], 17800);
        assert_eq!(apps["metadata"]["labels"][AUTOMANAGED], "onstart");
        let core = local_apiservice("", "v1", true).unwrap();
        assert_eq!(core["metadata"]["name"], "v1.");
        let crd = local_apiservice("example.com", "v1", false).unwrap();
        assert_eq!(crd["spec"]["versionPriority"], 100);
        assert_eq!(crd["metadata"]["labels"][AUTOMANAGED], "true");
        assert!(local_apiservice("apiregistration.k8s.io", "v1", true).is_none());
        assert!(texts(apps).is_empty());
    }

    #[test]
    fn validation_texts() {
        let bad = json!({"metadata": {"name": "v1.wrong"}, "spec": {
            "group": "example.com", "version": "v1", "groupPriorityMinimum": 0,
            "versionPriority": 1001, "service": {"namespace": "", "name": "api", "port": 70000}}});
        assert_eq!(
            texts(bad),
            [
                "metadata.name: Invalid value: \"v1.wrong\": must be `spec.version+\".\"+spec.group`: \"v1.example.com\"",
                "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
                "spec.service.namespace: Required value",
                "spec.service.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive",
            ]
        );
    }

    #[test]
    fn remote_availability_follows_the_service() {
        let api = json!({"spec": {"group": "metrics.k8s.io", "version": "v1beta1",
            "service": {"namespace": "kube-system", "name": "metrics", "port": 443}}});
        assert_eq!(
            availability(&api, None),
            (
                "False",
                "ServiceNotFound",
                "service/metrics in \"kube-system\" is not present".into()
            )
        );
        let svc = json!({"spec": {"ports": [{"port": 8443}]}});
        assert_eq!(availability(&api, Some(&svc)).1, "ServicePortError");
        let svc = json!({"spec": {"ports": [{"port": 443}]}});
        assert_eq!(
            availability(&api, Some(&svc)),
            (
                "False",
                "EndpointsNotFound",
                "cannot find endpointslices for service/metrics in \"kube-system\"".into()
            )
        );
        let set = with_availability(&api, availability(&api, None)).unwrap();
        let api = json!({"spec": api["spec"], "status": {"conditions": set}});
        assert!(with_availability(&api, availability(&api, None)).is_none());
        assert!(!is_available(&api));
    }
}
