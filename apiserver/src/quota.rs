//! ResourceQuota object counts, as kube's quota admission and resourcequota controller count
//! them: which `spec.hard` key counts which resource, how many such objects a namespace
//! holds, and whether one more would exceed a quota (the check every create passes).

use std::cmp::Ordering;

use serde_json::Value;

use crate::quantity::Quantity;
use crate::state::Inner;
use ocm_apiserver_storage::{Bucket, StoredObject};

pub(crate) const QUOTA_RESOURCE: &str = "/resourcequotas";
pub(crate) const PODS: &str = "/pods";
/// Legacy quota keys that count objects of a core resource.
const LEGACY_COUNTS: [&str; 7] = [
    "configmaps",
    "secrets",
    "services",
    "pods",
    "resourcequotas",
    "replicationcontrollers",
    "persistentvolumeclaims",
];

/// The storage resource (`group/plural`) a quota key counts, if it is an object count.
pub(crate) fn counted_resource(key: &str) -> Option<String> {
    if LEGACY_COUNTS.contains(&key) {
        return Some(format!("/{key}"));
    }
    let resource = key.strip_prefix("count/")?;
    if resource.is_empty() {
        return None;
    }
    Some(match resource.split_once('.') {
        Some((plural, group)) if !plural.is_empty() && !group.is_empty() => {
            format!("{group}/{plural}")
        }
        Some(_) => return None,
        None => format!("/{resource}"),
    })
}

/// Whether a pod still counts against a quota (kube leaves out finished pods).
pub(crate) fn pod_counts(pod: &Value) -> bool {
    !matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    )
}

pub(crate) fn count_objects(inner: &Inner, cluster: &str, namespace: &str, resource: &str) -> u64 {
    let (_, items) = inner
        .store
        .list(&Bucket::new(cluster, resource), Some(namespace), None);
    count_listed(resource, &items)
}

/// How many of `items` (listed objects of `resource`) a quota counts: every one, but for pods
/// only those not finished.
pub(crate) fn count_listed(resource: &str, items: &[(String, String, StoredObject)]) -> u64 {
    if resource == PODS {
        return items
            .iter()
            .filter(|(_, _, o)| {
                serde_json::from_slice::<Value>(&o.value).is_ok_and(|pod| pod_counts(&pod))
            })
            .count() as u64;
    }
    items.len() as u64
}

/// A quota's hard limit, a quantity.
pub(crate) fn hard_limit(limit: &Value) -> Option<Quantity> {
    match limit {
        Value::String(text) => Quantity::parse(text.trim()).ok(),
        Value::Number(n) => Quantity::parse(&n.to_string()).ok(),
        _ => None,
    }
}

/// Why creating one more object of `resource` in `namespace` would exceed a quota there, as
/// kube's quota admission words it (`exceeded quota: <quota>, requested: <key>=1, used:
/// <key>=<n>, limited: <key>=<hard>`); `None` when every quota still has room.
pub(crate) fn exceeded(
    inner: &Inner,
    cluster: &str,
    namespace: &str,
    resource: &str,
    obj: &Value,
) -> Option<String> {
    if resource == PODS && !pod_counts(obj) {
        return None;
    }
    let (_, quotas) =
        inner
            .store
            .list(&Bucket::new(cluster, QUOTA_RESOURCE), Some(namespace), None);
    let mut used = None;
    for (_, name, stored) in quotas {
        let Ok(quota) = serde_json::from_slice::<Value>(&stored.value) else {
            continue;
        };
        let Some(hard) = quota.pointer("/spec/hard").and_then(Value::as_object) else {
            continue;
        };
        let mut over: Vec<(&String, Quantity)> = hard
            .iter()
            .filter(|(key, _)| counted_resource(key).as_deref() == Some(resource))
            .filter_map(|(key, limit)| Some((key, hard_limit(limit)?)))
            .collect();
        if over.is_empty() {
            continue;
        }
        let now = *used.get_or_insert_with(|| count_objects(inner, cluster, namespace, resource));
        if over
            .iter()
            .all(|(_, limit)| limit.cmp_count(now + 1) != Ordering::Less)
        {
            continue;
        }
        over.sort_by(|a, b| a.0.cmp(b.0));
        // kube prints each list as `key=quantity`, sorted by key.
        let list = |value: &dyn Fn(&Quantity) -> String| {
            over.iter()
                .map(|(key, limit)| format!("{key}={}", value(limit)))
                .collect::<Vec<_>>()
                .join(",")
        };
        return Some(format!(
            "exceeded quota: {name}, requested: {}, used: {}, limited: {}",
            list(&|_| Quantity::from_count(1).to_string()),
            list(&|_| Quantity::from_count(now).to_string()),
            list(&Quantity::to_string),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn count_keys_name_their_storage_resource() {
        assert_eq!(
            counted_resource("configmaps").as_deref(),
            Some("/configmaps")
        );
        assert_eq!(
            counted_resource("count/secrets").as_deref(),
            Some("/secrets")
        );
        assert_eq!(
            counted_resource("count/deployments.apps").as_deref(),
            Some("apps/deployments")
        );
        assert_eq!(
            counted_resource("count/widgets.example.com").as_deref(),
            Some("example.com/widgets")
        );
        assert_eq!(counted_resource("requests.cpu"), None);
        assert_eq!(counted_resource("count/"), None);
        assert_eq!(counted_resource("count/.apps"), None);
    }

    #[test]
    fn hard_limits_are_quantities() {
        let limit = |v: Value| hard_limit(&v).map(|q| q.to_string());
        assert_eq!(limit(json!("1k")).as_deref(), Some("1k"));
        assert_eq!(limit(json!(5)).as_deref(), Some("5"));
        assert_eq!(limit(json!("bogus")), None);
        assert_eq!(
            hard_limit(&json!("1k")).map(|q| q.cmp_count(1000)),
            Some(Ordering::Equal)
        );
    }

    #[test]
    fn finished_pods_do_not_count() {
        assert!(pod_counts(&json!({"status": {"phase": "Running"}})));
        assert!(pod_counts(&json!({})));
        assert!(!pod_counts(&json!({"status": {"phase": "Succeeded"}})));
        assert!(!pod_counts(&json!({"status": {"phase": "Failed"}})));
    }
}
