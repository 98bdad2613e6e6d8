//! Turning a CustomResourceDefinition object into the resource it serves.

use serde_json::{Value, json};

use crate::meta::strings;

use super::{
    NameKind, PrinterColumn, ResourceInfo, ScaleSpec, Source, StoredSchema, VersionInfo,
    compare_versions,
};

/// Why a CRD cannot be served.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CrdError {
    /// A required field is missing or malformed.
    #[error("{field}: {message}")]
    Invalid {
        /// Field path.
        field: String,
        /// What is wrong.
        message: String,
    },
}

fn invalid(field: &str, message: &str) -> CrdError {
    CrdError::Invalid {
        field: field.to_owned(),
        message: message.to_owned(),
    }
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The resource a CRD serves. Checks what serving needs (group, names, scope, versions with
/// exactly one storage version); full CRD validation happens at admission.
pub fn resource_from_crd(crd: &Value) -> Result<ResourceInfo, CrdError> {
    let name = str_at(crd, "/metadata/name");
    let group = str_at(crd, "/spec/group");
    let plural = str_at(crd, "/spec/names/plural");
    let kind = str_at(crd, "/spec/names/kind");
    if group.is_empty() {
        return Err(invalid("spec.group", "Required value"));
    }
    if plural.is_empty() {
        return Err(invalid("spec.names.plural", "Required value"));
    }
    if kind.is_empty() {
        return Err(invalid("spec.names.kind", "Required value"));
    }
    if name != format!("{plural}.{group}") {
        return Err(invalid(
            "metadata.name",
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let namespaced = match str_at(crd, "/spec/scope") {
        "Namespaced" => true,
        "Cluster" => false,
        _ => {
            return Err(invalid(
                "spec.scope",
                "Unsupported value: must be Cluster or Namespaced",
            ));
        }
    };
    let singular = match str_at(crd, "/spec/names/singular") {
        "" => kind.to_ascii_lowercase(),
        s => s.to_owned(),
    };
    let list_kind = match str_at(crd, "/spec/names/listKind") {
        "" => format!("{kind}List"),
        s => s.to_owned(),
    };
    let versions_json = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions_json.is_empty() {
        return Err(invalid(
            "spec.versions",
            "Invalid value: must have exactly one version marked as storage version",
        ));
    }
    let top_columns = crd.pointer("/spec/additionalPrinterColumns").cloned();
    let mut storage = Vec::new();
    let mut versions = Vec::new();
    for v in &versions_json {
        let vname = str_at(v, "/name");
        if vname.is_empty() {
            return Err(invalid("spec.versions[].name", "Required value"));
        }
        if v.get("storage").and_then(Value::as_bool) == Some(true) {
            storage.push(vname.to_owned());
        }
        if v.get("served").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let schema = v
            .pointer("/schema/openAPIV3Schema")
            .or_else(|| crd.pointer("/spec/validation/openAPIV3Schema"))
            .map(StoredSchema::new);
        let columns = v.get("additionalPrinterColumns").or(top_columns.as_ref());
        let printer_columns = columns
            .and_then(Value::as_array)
            .map(|cols| cols.iter().map(printer_column).collect())
            .unwrap_or_default();
        let selectable_fields = v
            .get("selectableFields")
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .filter_map(|x| x.get("jsonPath").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let subresources = v
            .get("subresources")
            .or_else(|| crd.pointer("/spec/subresources"));
        let status = subresources
            .and_then(|s| s.get("status"))
            .is_some_and(|s| !s.is_null());
        let scale = subresources
            .and_then(|s| s.get("scale"))
            .filter(|s| s.is_object())
            .map(|s| ScaleSpec {
                spec_replicas_path: str_at(s, "/specReplicasPath").to_owned(),
                status_replicas_path: str_at(s, "/statusReplicasPath").to_owned(),
                label_selector_path: s
                    .get("labelSelectorPath")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
        let deprecation_warning = if v.get("deprecated").and_then(Value::as_bool) == Some(true) {
            Some(match v.get("deprecationWarning").and_then(Value::as_str) {
                Some(w) => w.to_owned(),
                None => format!("{group}/{vname} {kind} is deprecated"),
            })
        } else {
            None
        };
        versions.push(VersionInfo {
            name: vname.to_owned(),
            schema,
            printer_columns,
            selectable_fields,
            status,
            scale,
            deprecation_warning,
            patch_types: Default::default(),
            structural: Default::default(),
        });
    }
    if storage.len() != 1 {
        return Err(invalid(
            "spec.versions",
            "Invalid value: must have exactly one version marked as storage version",
        ));
    }
    versions.sort_by(|a, b| compare_versions(&a.name, &b.name));
    let mut categories = strings(crd.pointer("/spec/names/categories"));
    categories.dedup();
    Ok(ResourceInfo {
        group: group.to_owned(),
        versions,
        storage_version: storage.remove(0),
        plural: plural.to_owned(),
        singular,
        kind: kind.to_owned(),
        list_kind,
        namespaced,
        short_names: strings(crd.pointer("/spec/names/shortNames")),
        categories,
        verbs: [
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "create",
            "update",
            "watch",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        extra_subresources: Vec::new(),
        source: Source::Crd(name.to_owned()),
        name_kind: NameKind::Subdomain,
        field_labels: Vec::new(),
        conversion_webhook: conversion_webhook(crd),
    })
}

/// The conversion webhook of a CRD whose `spec.conversion.strategy` is `Webhook`.
fn conversion_webhook(crd: &Value) -> Option<crate::client_config::ClientConfig> {
    if str_at(crd, "/spec/conversion/strategy") != "Webhook" {
        return None;
    }
    crd.pointer("/spec/conversion/webhook/clientConfig")
        .filter(|c| c.is_object())
        .map(crate::client_config::ClientConfig::from_value)
}

fn printer_column(col: &Value) -> PrinterColumn {
    PrinterColumn {
        name: str_at(col, "/name").to_owned(),
        type_: str_at(col, "/type").to_owned(),
        format: str_at(col, "/format").to_owned(),
        description: str_at(col, "/description").to_owned(),
        priority: col.get("priority").and_then(Value::as_i64).unwrap_or(0),
        json_path: col
            .get("jsonPath")
            .or_else(|| col.get("JSONPath"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
    }
}

/// The `status` a served CRD should have: accepted names plus `NamesAccepted` and
/// `Established` conditions (keeping transition times of unchanged conditions).
pub fn crd_conditions(crd: &Value, info: &ResourceInfo, now: &str) -> Value {
    let old_conditions = crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let keep_time = |ty: &str, status: &str| -> String {
        old_conditions
            .iter()
            .find(|c| {
                c.get("type").and_then(Value::as_str) == Some(ty)
                    && c.get("status").and_then(Value::as_str) == Some(status)
            })
            .and_then(|c| c.get("lastTransitionTime").and_then(Value::as_str))
            .unwrap_or(now)
            .to_owned()
    };
    let mut accepted = json!({
        "plural": info.plural,
        "singular": info.singular,
        "kind": info.kind,
        "listKind": info.list_kind,
    });
    if !info.short_names.is_empty() {
        accepted["shortNames"] = json!(info.short_names);
    }
    if !info.categories.is_empty() {
        accepted["categories"] = json!(info.categories);
    }
    let stored: Vec<Value> = {
        let mut s: Vec<String> = crd
            .pointer("/status/storedVersions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if !s.contains(&info.storage_version) {
            s.push(info.storage_version.clone());
        }
        s.into_iter().map(Value::String).collect()
    };
    let mut conditions = vec![
        json!({
            "type": "NamesAccepted",
            "status": "True",
            "lastTransitionTime": keep_time("NamesAccepted", "True"),
            "reason": "NoConflicts",
            "message": "no conflicts found",
        }),
        json!({
            "type": "Established",
            "status": "True",
            "lastTransitionTime": keep_time("Established", "True"),
            "reason": "InitialNamesAccepted",
            "message": "the initial names have been accepted",
        }),
    ];
    for c in old_conditions {
        let ty = c.get("type").and_then(Value::as_str).unwrap_or("");
        if ty != "NamesAccepted" && ty != "Established" {
            conditions.push(c);
        }
    }
    json!({
        "conditions": conditions,
        "acceptedNames": accepted,
        "storedVersions": stored,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A CRD of `widgets.example.com`: v1beta1 and v1 (stored, status, a printer column).
    pub(in crate::registry) fn widget_crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [
                    {"name": "v1beta1", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                     "schema": {"openAPIV3Schema": {"type": "object"}},
                     "additionalPrinterColumns": [{"name": "Color", "type": "string", "jsonPath": ".spec.color"}]}
                ]
            }
        })
    }

    #[test]
    fn crd_to_resource() {
        let info = resource_from_crd(&widget_crd()).unwrap();
        assert_eq!(info.storage_version, "v1");
        assert_eq!(info.preferred_version(), "v1");
        assert_eq!(info.singular, "widget");
        assert_eq!(info.list_kind, "WidgetList");
        assert!(info.has_status("v1"));
        assert!(!info.has_status("v1beta1"));
        assert_eq!(
            info.version("v1").unwrap().printer_columns[0].json_path,
            ".spec.color"
        );
        let status = crd_conditions(&widget_crd(), &info, "2024-01-01T00:00:00Z");
        assert_eq!(status["conditions"][1]["type"], "Established");
        assert_eq!(status["storedVersions"], json!(["v1"]));
    }

    #[test]
    fn crd_name_must_match() {
        let mut crd = widget_crd();
        crd["metadata"]["name"] = json!("gadgets.example.com");
        assert!(resource_from_crd(&crd).is_err());
    }
}
