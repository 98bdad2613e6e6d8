//! ResourceQuota usage, as kube's quota admission and resourcequota controller measure it:
//! which `spec.hard` key measures what (object counts, the storage PersistentVolumeClaims
//! request — in all and per StorageClass — and the devices ResourceClaims ask for per
//! DeviceClass), how much a namespace uses, and whether one more object would exceed a quota
//! (the check every create passes).

use std::cmp::Ordering;

use serde_json::Value;

use crate::quantity::Quantity;
use crate::state::Inner;
use ocm_apiserver_storage::{Bucket, StoredObject};

pub(crate) const QUOTA_RESOURCE: &str = "/resourcequotas";
pub(crate) const PODS: &str = "/pods";
const CLAIMS: &str = "/persistentvolumeclaims";
const RESOURCE_CLAIMS: &str = "resource.k8s.io/resourceclaims";
const STORAGE_CLASS_KEY: &str = ".storageclass.storage.k8s.io/";
const DEVICE_CLASS_KEY: &str = ".deviceclass.resource.k8s.io/devices";
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

/// What one `spec.hard` key of a quota measures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Usage {
    /// How many objects of a storage resource (`group/plural`) the namespace holds.
    Objects(String),
    /// The storage PersistentVolumeClaims request (`requests.storage`), of one class or all.
    ClaimStorage(Option<String>),
    /// How many PersistentVolumeClaims of one class the namespace holds.
    ClassClaims(String),
    /// The devices ResourceClaims ask for from one DeviceClass.
    Devices(String),
}

impl Usage {
    /// What `key` measures, if the server measures it (compute resources are not).
    pub(crate) fn of_key(key: &str) -> Option<Usage> {
        if key == "requests.storage" {
            return Some(Usage::ClaimStorage(None));
        }
        if let Some(class) = key.strip_suffix(DEVICE_CLASS_KEY).filter(|c| !c.is_empty()) {
            return Some(Usage::Devices(class.to_string()));
        }
        if let Some((class, what)) = key
            .split_once(STORAGE_CLASS_KEY)
            .filter(|(c, _)| !c.is_empty())
        {
            return match what {
                "requests.storage" => Some(Usage::ClaimStorage(Some(class.to_string()))),
                "persistentvolumeclaims" => Some(Usage::ClassClaims(class.to_string())),
                _ => None,
            };
        }
        counted_resource(key).map(Usage::Objects)
    }

    /// The storage resource whose objects this usage adds up.
    pub(crate) fn resource(&self) -> &str {
        match self {
            Usage::Objects(resource) => resource,
            Usage::ClaimStorage(_) | Usage::ClassClaims(_) => CLAIMS,
            Usage::Devices(_) => RESOURCE_CLAIMS,
        }
    }

    /// What one object of [`Self::resource`] adds to this usage.
    pub(crate) fn of_object(&self, obj: &Value) -> Quantity {
        match self {
            Usage::Objects(resource) => {
                Quantity::from_count(u64::from(resource != PODS || pod_counts(obj)))
            }
            Usage::ClaimStorage(class) => {
                if class.as_deref().is_some_and(|c| c != claim_class(obj)) {
                    return Quantity::from_count(0);
                }
                obj.pointer("/spec/resources/requests/storage")
                    .and_then(hard_limit)
                    .unwrap_or_else(|| Quantity::from_count(0))
            }
            Usage::ClassClaims(class) => Quantity::from_count(u64::from(claim_class(obj) == class)),
            Usage::Devices(class) => Quantity::from_count(
                crate::kinds::devices_per_class(obj)
                    .into_iter()
                    .filter(|(c, _)| c == class)
                    .map(|(_, n)| n)
                    .sum(),
            ),
        }
    }

    /// The sum of [`Self::of_object`] over listed objects.
    pub(crate) fn total(&self, items: &[(String, String, StoredObject)]) -> Quantity {
        items
            .iter()
            .filter_map(|(_, _, o)| serde_json::from_slice::<Value>(&o.value).ok())
            .fold(Quantity::from_count(0), |sum, obj| {
                sum.plus(&self.of_object(&obj))
            })
    }
}

/// The StorageClass a claim belongs to: the beta annotation, else `spec.storageClassName`.
fn claim_class(obj: &Value) -> &str {
    obj.pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
        .or_else(|| obj.pointer("/spec/storageClassName"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

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

/// A quota's hard limit, a quantity.
pub(crate) fn hard_limit(limit: &Value) -> Option<Quantity> {
    match limit {
        Value::String(text) => Quantity::parse(text.trim()).ok(),
        Value::Number(n) => Quantity::parse(&n.to_string()).ok(),
        _ => None,
    }
}

/// A key over its limit: the key, what the object requests, what is used, the limit.
type Over<'a> = (&'a String, Quantity, Quantity, Quantity);

/// Why creating `obj` (an object of `resource`) in `namespace` would exceed a quota there, as
/// kube's quota admission words it (`exceeded quota: <quota>, requested: <key>=<q>, used:
/// <key>=<q>, limited: <key>=<q>`, listing the keys over their limit, sorted); `None` when
/// every quota still has room.
pub(crate) fn exceeded(
    inner: &Inner,
    cluster: &str,
    namespace: &str,
    resource: &str,
    obj: &Value,
) -> Option<String> {
    let (_, quotas) =
        inner
            .store
            .list(&Bucket::new(cluster, QUOTA_RESOURCE), Some(namespace), None);
    let mut listed: Option<Vec<(String, String, StoredObject)>> = None;
    for (_, name, stored) in quotas {
        let Ok(quota) = serde_json::from_slice::<Value>(&stored.value) else {
            continue;
        };
        let Some(hard) = quota.pointer("/spec/hard").and_then(Value::as_object) else {
            continue;
        };
        let mut over: Vec<Over<'_>> = Vec::new();
        for (key, limit) in hard {
            let Some(usage) = Usage::of_key(key).filter(|u| u.resource() == resource) else {
                continue;
            };
            let Some(limit) = hard_limit(limit) else {
                continue;
            };
            let requested = usage.of_object(obj);
            if requested.is_zero() {
                continue;
            }
            let items = listed.get_or_insert_with(|| {
                inner
                    .store
                    .list(&Bucket::new(cluster, resource), Some(namespace), None)
                    .1
            });
            let used = usage.total(items);
            if used.plus(&requested).cmp_value(&limit) == Ordering::Greater {
                over.push((key, requested, used, limit));
            }
        }
        if over.is_empty() {
            continue;
        }
        over.sort_by(|a, b| a.0.cmp(b.0));
        let list = |pick: &dyn Fn(&Over<'_>) -> String| {
            over.iter()
                .map(|entry| format!("{}={}", entry.0, pick(entry)))
                .collect::<Vec<_>>()
                .join(",")
        };
        return Some(format!(
            "exceeded quota: {name}, requested: {}, used: {}, limited: {}",
            list(&|e| e.1.to_string()),
            list(&|e| e.2.to_string()),
            list(&|e| e.3.to_string()),
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
    fn storage_and_device_keys() {
        assert_eq!(
            Usage::of_key("requests.storage"),
            Some(Usage::ClaimStorage(None))
        );
        assert_eq!(
            Usage::of_key("gold.storageclass.storage.k8s.io/requests.storage"),
            Some(Usage::ClaimStorage(Some("gold".into())))
        );
        assert_eq!(
            Usage::of_key("gold.storageclass.storage.k8s.io/persistentvolumeclaims"),
            Some(Usage::ClassClaims("gold".into()))
        );
        assert_eq!(
            Usage::of_key("gpu.deviceclass.resource.k8s.io/devices"),
            Some(Usage::Devices("gpu".into()))
        );
        assert_eq!(
            Usage::of_key("count/resourceclaims.resource.k8s.io"),
            Some(Usage::Objects("resource.k8s.io/resourceclaims".into()))
        );
        let claim = json!({"spec": {"storageClassName": "gold", "resources": {"requests": {"storage": "2Gi"}}}});
        let gold = Usage::ClaimStorage(Some("gold".into()));
        assert_eq!(gold.of_object(&claim).to_string(), "2Gi");
        assert!(
            Usage::ClaimStorage(Some("slow".into()))
                .of_object(&claim)
                .is_zero()
        );
        assert_eq!(
            Usage::ClassClaims("gold".into())
                .of_object(&claim)
                .to_string(),
            "1"
        );
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
