//! PersistentVolumeClaims, PersistentVolumes and StorageClasses: kube's defaults and
//! validation.

use serde_json::{Value, json};

use super::{array_at, default_field, str_at};
use crate::validation::{Cause, is_dns1123_subdomain, qualified_name_errors};

const ACCESS_MODES: [&str; 4] = [
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];
const VOLUME_MODES: [&str; 2] = ["Block", "Filesystem"];
const RECLAIM_POLICIES: [&str; 3] = ["Delete", "Recycle", "Retain"];
const CLASS_RECLAIM_POLICIES: [&str; 2] = ["Delete", "Retain"];
const BINDING_MODES: [&str; 2] = ["Immediate", "WaitForFirstConsumer"];

/// The volume sources of a PersistentVolume spec (exactly one is required).
const VOLUME_SOURCES: &[&str] = &[
    "awsElasticBlockStore",
    "azureDisk",
    "azureFile",
    "cephfs",
    "cinder",
    "csi",
    "fc",
    "flexVolume",
    "flocker",
    "gcePersistentDisk",
    "glusterfs",
    "hostPath",
    "iscsi",
    "local",
    "nfs",
    "photonPersistentDisk",
    "portworxVolume",
    "quobyte",
    "rbd",
    "scaleIO",
    "storageos",
    "vsphereVolume",
];

/// `SetDefaults_PersistentVolumeClaimSpec`: `volumeMode: Filesystem`.
pub(super) fn default_claim(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec") {
        default_field(spec, "volumeMode", json!("Filesystem"));
    }
}

/// `SetDefaults_PersistentVolume`: `persistentVolumeReclaimPolicy: Retain`,
/// `volumeMode: Filesystem`.
pub(super) fn default_volume(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec") {
        default_field(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
        default_field(spec, "volumeMode", json!("Filesystem"));
    }
}

/// `SetDefaults_StorageClass`: `reclaimPolicy: Delete`, `volumeBindingMode: Immediate`.
pub(super) fn default_class(obj: &mut Value) {
    default_field(obj, "reclaimPolicy", json!("Delete"));
    default_field(obj, "volumeBindingMode", json!("Immediate"));
}

/// The access modes of `modes` at `field`: known ones, ReadWriteOncePod alone.
fn validate_access_modes(modes: &[Value], field: &str, causes: &mut Vec<Cause>) {
    let (mut once_pod, mut others) = (false, false);
    for mode in modes {
        let mode = mode.as_str().unwrap_or("");
        if !ACCESS_MODES.contains(&mode) {
            causes.push(Cause::not_supported(field, mode, &ACCESS_MODES));
        }
        if mode == "ReadWriteOncePod" {
            once_pod = true;
        } else {
            others = true;
        }
    }
    if once_pod && others {
        causes.push(Cause::forbidden(
            field,
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
}

/// A storage class name (a DNS-1123 subdomain) at `field`.
fn validate_class_name(name: &str, field: &str, causes: &mut Vec<Cause>) {
    if !name.is_empty() && !is_dns1123_subdomain(name) {
        for msg in crate::validation::dns1123_subdomain_errors(name) {
            causes.push(Cause::invalid(field, name, &msg));
        }
    }
}

/// The storage class name and volume mode of a claim's or volume's spec.
fn validate_class_and_mode(spec: &Value, causes: &mut Vec<Cause>) {
    validate_class_name(
        str_at(spec, "/storageClassName"),
        "spec.storageClassName",
        causes,
    );
    let mode = str_at(spec, "/volumeMode");
    if !mode.is_empty() && !VOLUME_MODES.contains(&mode) {
        causes.push(Cause::not_supported("spec.volumeMode", mode, &VOLUME_MODES));
    }
}

/// A positive quantity at `field` (kube's `ValidatePositiveQuantityValue`).
fn validate_positive_quantity(value: &Value, field: &str, causes: &mut Vec<Cause>) {
    let text = value.as_str().unwrap_or("");
    let positive = crate::quantity::Quantity::parse(text)
        .map(|q| q.cmp_count(0) == std::cmp::Ordering::Greater)
        .unwrap_or(false);
    if !positive {
        causes.push(Cause::invalid(field, text, "must be greater than zero"));
    }
}

/// `ValidatePersistentVolumeClaim` (and its update rules).
pub(super) fn validate_claim(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    let modes = array_at(&spec, "/accessModes");
    if modes.is_empty() {
        causes.push(Cause::required(
            "spec.accessModes",
            "at least 1 access mode is required",
        ));
    }
    causes.extend(super::selector::validate_label_selector(
        spec.get("selector"),
        "spec.selector",
    ));
    validate_access_modes(modes, "spec.accessModes", &mut causes);
    match spec.pointer("/resources/requests/storage") {
        None => causes.push(Cause::required("spec.resources[storage]", "")),
        Some(q) => validate_positive_quantity(q, "spec.resources[storage]", &mut causes),
    }
    validate_class_and_mode(&spec, &mut causes);
    if let Some(old) = old {
        // What may change: the requests, the attributes class, and the volume the binder
        // fills in for a claim that had none.
        let unbound = str_at(old, "/spec/volumeName").is_empty();
        let fixed = |v: &Value| {
            let mut spec = v.get("spec").cloned().unwrap_or_else(|| json!({}));
            if let Some(m) = spec.as_object_mut() {
                m.remove("volumeAttributesClassName");
                if unbound {
                    m.remove("volumeName");
                }
                if let Some(r) = m.get_mut("resources").and_then(Value::as_object_mut) {
                    r.remove("requests");
                }
            }
            spec
        };
        if fixed(obj) != fixed(old) {
            causes.push(Cause::forbidden(
                "spec",
                "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
            ));
        }
    }
    causes
}

/// `ValidatePersistentVolume` (and its update rules).
pub(super) fn validate_volume(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    let modes = array_at(&spec, "/accessModes");
    if modes.is_empty() {
        causes.push(Cause::required("spec.accessModes", ""));
    }
    validate_access_modes(modes, "spec.accessModes", &mut causes);
    match spec.get("capacity").and_then(Value::as_object) {
        None => causes.push(Cause::required("spec.capacity", "")),
        Some(cap) if cap.is_empty() => causes.push(Cause::required("spec.capacity", "")),
        Some(cap) => {
            if !cap.contains_key("storage") || cap.len() > 1 {
                let shown = cap.keys().map(String::as_str).collect::<Vec<_>>().join(",");
                causes.push(Cause::not_supported("spec.capacity", shown, &["storage"]));
            }
            if let Some(q) = cap.get("storage") {
                validate_positive_quantity(q, "spec.capacity[storage]", &mut causes);
            }
        }
    }
    let sources = VOLUME_SOURCES
        .iter()
        .filter(|s| spec.get(**s).is_some_and(|v| !v.is_null()))
        .count();
    if sources == 0 {
        causes.push(Cause::required("spec", "must specify a volume type"));
    } else if let Some(second) = VOLUME_SOURCES
        .iter()
        .filter(|s| spec.get(**s).is_some_and(|v| !v.is_null()))
        .nth(1)
    {
        causes.push(Cause::forbidden(
            format!("spec.{second}"),
            "may not specify more than 1 volume type",
        ));
    }
    let policy = str_at(&spec, "/persistentVolumeReclaimPolicy");
    if !policy.is_empty() && !RECLAIM_POLICIES.contains(&policy) {
        causes.push(Cause::not_supported(
            "spec.persistentVolumeReclaimPolicy",
            policy,
            &RECLAIM_POLICIES,
        ));
    }
    validate_class_and_mode(&spec, &mut causes);
    if let Some(path) = spec.get("hostPath")
        && str_at(path, "/path").is_empty()
    {
        causes.push(Cause::required("spec.hostPath.path", ""));
    }
    if let Some(local) = spec.get("local") {
        if str_at(local, "/path").is_empty() {
            causes.push(Cause::required("spec.local.path", ""));
        }
        if spec.get("nodeAffinity").is_none() {
            causes.push(Cause::required(
                "spec.nodeAffinity",
                "Local volume requires node affinity",
            ));
        }
    }
    if let Some(csi) = spec.get("csi") {
        if str_at(csi, "/driver").is_empty() {
            causes.push(Cause::required("spec.csi.driver", ""));
        }
        if str_at(csi, "/volumeHandle").is_empty() {
            causes.push(Cause::required("spec.csi.volumeHandle", ""));
        }
    }
    if let Some(old) = old {
        let source = |v: &Value| {
            VOLUME_SOURCES
                .iter()
                .find_map(|s| v.pointer(&format!("/spec/{s}")).map(|x| (*s, x.clone())))
        };
        if source(obj) != source(old) {
            causes.push(Cause::forbidden(
                "spec.persistentvolumesource",
                "spec.persistentvolumesource is immutable after creation",
            ));
        }
        if old.pointer("/spec/volumeMode") != obj.pointer("/spec/volumeMode") {
            causes.push(Cause::invalid(
                "spec.volumeMode",
                str_at(obj, "/spec/volumeMode"),
                "field is immutable",
            ));
        }
    }
    causes
}

/// `ValidateStorageClass` (and its update rules).
pub(super) fn validate_class(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let provisioner = str_at(obj, "/provisioner");
    if provisioner.is_empty() {
        causes.push(Cause::required("provisioner", ""));
    } else {
        for msg in qualified_name_errors(&provisioner.to_ascii_lowercase()) {
            causes.push(Cause::invalid("provisioner", provisioner, &msg));
        }
    }
    let policy = str_at(obj, "/reclaimPolicy");
    if !policy.is_empty() && !CLASS_RECLAIM_POLICIES.contains(&policy) {
        causes.push(Cause::not_supported(
            "reclaimPolicy",
            policy,
            &CLASS_RECLAIM_POLICIES,
        ));
    }
    let mode = str_at(obj, "/volumeBindingMode");
    if !mode.is_empty() && !BINDING_MODES.contains(&mode) {
        causes.push(Cause::not_supported(
            "volumeBindingMode",
            mode,
            &BINDING_MODES,
        ));
    }
    if let Some(old) = old {
        for (field, text) in [
            ("parameters", "updates to parameters are forbidden."),
            ("provisioner", "updates to provisioner are forbidden."),
            ("reclaimPolicy", "updates to reclaimPolicy are forbidden."),
        ] {
            if obj.get(field) != old.get(field) {
                causes.push(Cause::forbidden(field, text));
            }
        }
        if obj.get("volumeBindingMode") != old.get("volumeBindingMode") {
            causes.push(Cause::invalid(
                "volumeBindingMode",
                mode,
                "field is immutable",
            ));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(causes: Vec<Cause>) -> Vec<String> {
        causes.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn claim_needs_access_modes_and_storage() {
        let pvc = json!({"spec": {}});
        assert_eq!(
            texts(validate_claim(&pvc, None)),
            [
                "spec.accessModes: Required value: at least 1 access mode is required",
                "spec.resources[storage]: Required value",
            ]
        );
    }

    #[test]
    fn claim_defaults_and_immutability() {
        let mut pvc = json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
        default_claim(&mut pvc);
        assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
        assert!(validate_claim(&pvc, None).is_empty());
        let mut bigger = pvc.clone();
        bigger["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        assert!(validate_claim(&bigger, Some(&pvc)).is_empty());
        let mut other = pvc.clone();
        other["spec"]["accessModes"] = json!(["ReadWriteMany"]);
        assert_eq!(validate_claim(&other, Some(&pvc)).len(), 1);
    }

    #[test]
    fn volume_needs_a_source() {
        let pv =
            json!({"spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}});
        assert_eq!(
            texts(validate_volume(&pv, None)),
            ["spec: Required value: must specify a volume type"]
        );
    }

    #[test]
    fn class_defaults_and_immutable_parameters() {
        let mut sc = json!({"provisioner": "example.com/disk", "parameters": {"a": "b"}});
        default_class(&mut sc);
        assert_eq!(sc["reclaimPolicy"], "Delete");
        assert_eq!(sc["volumeBindingMode"], "Immediate");
        assert!(validate_class(&sc, None).is_empty());
        let mut changed = sc.clone();
        changed["parameters"]["a"] = json!("c");
        assert_eq!(
            texts(validate_class(&changed, Some(&sc))),
            ["parameters: Forbidden: updates to parameters are forbidden."]
        );
        assert_eq!(
            texts(validate_class(&json!({}), None)),
            ["provisioner: Required value"]
        );
    }
}
