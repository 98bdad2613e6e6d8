//! What a write to a subresource keeps of the object the client sent (kube-apiserver's status,
//! approval and finalize strategies), before the common update rules run.
//!
//! - `status` of most kinds (custom resources included): only `status` (and the request's
//!   managedFields and resourceVersion); metadata changes are dropped.
//! - `status` of a Namespace: everything but `spec` (`namespaceStatusStrategy`), so labels and
//!   annotations in the request are applied.
//! - `status` of a CertificateSigningRequest: everything but `spec`, with the existing
//!   `Approved`/`Denied` conditions kept as they were and condition timestamps filled
//!   (`csrStatusStrategy`).
//! - `approval` of a CertificateSigningRequest: metadata and `status.conditions` (timestamps
//!   filled); `spec` and the rest of `status` stay (`csrApprovalStrategy`).
//! - `finalize` of a Namespace: everything but `status` (`namespaceFinalizeStrategy`).

use serde_json::{Value, json};

use super::{Ctx, copy_field};
use crate::meta;
use crate::registry::BuiltinKind;
use ocm_apiserver_status::ApiError;

/// The object to store for a write of `new` to subresource `sub` of `old`.
pub(crate) fn merge(ctx: &Ctx, sub: &str, old: &Value, new: Value) -> Result<Value, ApiError> {
    match (ctx.res.builtin(), sub) {
        (Some(BuiltinKind::Namespace), "status") => {
            let mut merged = new;
            copy_field(&mut merged, old, "spec");
            Ok(merged)
        }
        (Some(BuiltinKind::CertificateSigningRequest), "status") => {
            let mut merged = new;
            copy_field(&mut merged, old, "spec");
            for ty in ["Approved", "Denied"] {
                preserve_conditions(&mut merged, old, ty);
            }
            populate_condition_timestamps(&mut merged, old, &meta::now());
            Ok(merged)
        }
        (_, "status") => Ok(status_only(old, &new)),
        (Some(BuiltinKind::CertificateSigningRequest), "approval") => {
            let mut merged = new;
            populate_condition_timestamps(&mut merged, old, &meta::now());
            let conditions = merged.pointer("/status/conditions").cloned();
            copy_field(&mut merged, old, "spec");
            copy_field(&mut merged, old, "status");
            let status = merged
                .as_object_mut()
                .map(|m| m.entry("status").or_insert_with(|| json!({})));
            if let Some(Value::Object(status)) = status {
                match conditions {
                    Some(c) => {
                        status.insert("conditions".into(), c);
                    }
                    None => {
                        status.remove("conditions");
                    }
                }
            }
            Ok(merged)
        }
        (Some(BuiltinKind::Namespace), "finalize") => {
            let mut merged = new;
            copy_field(&mut merged, old, "status");
            let finalizers = merged
                .pointer("/spec/finalizers")
                .cloned()
                .filter(|f| f.as_array().is_some_and(|a| !a.is_empty()));
            merged["spec"] = match finalizers {
                Some(f) => json!({"finalizers": f}),
                None => json!({}),
            };
            Ok(merged)
        }
        _ => Err(ApiError::route_not_found()),
    }
}

/// `old` with the `status`, managedFields and resourceVersion of `new`.
fn status_only(old: &Value, new: &Value) -> Value {
    let mut merged = old.clone();
    copy_field(&mut merged, new, "status");
    if let Some(mf) = meta::metadata(new)
        .and_then(|m| m.get("managedFields"))
        .cloned()
    {
        meta::set_meta(&mut merged, "managedFields", Some(mf));
    }
    meta::set_meta(
        &mut merged,
        "resourceVersion",
        Some(json!(meta::meta_str(new, "resourceVersion"))),
    );
    merged
}

fn conditions(obj: &Value) -> &[Value] {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn of_type<'a>(conditions: &'a [Value], ty: &str) -> Vec<(usize, &'a Value)> {
    conditions
        .iter()
        .enumerate()
        .filter(|(_, c)| c.get("type").and_then(Value::as_str) == Some(ty))
        .collect()
}

/// kube's `preserveConditionInstances`: when `new` has as many conditions of type `ty` as `old`,
/// they get `old`'s values (added or removed ones are left for validation to refuse).
fn preserve_conditions(new: &mut Value, old: &Value, ty: &str) {
    let old_of_type: Vec<Value> = of_type(conditions(old), ty)
        .into_iter()
        .map(|(_, c)| c.clone())
        .collect();
    let new_indices: Vec<usize> = of_type(conditions(new), ty)
        .into_iter()
        .map(|(i, _)| i)
        .collect();
    if old_of_type.len() != new_indices.len() {
        return;
    }
    if let Some(list) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    {
        for (index, condition) in new_indices.into_iter().zip(old_of_type) {
            list[index] = condition;
        }
    }
}

fn unset(condition: &Value, field: &str) -> bool {
    condition
        .get(field)
        .is_none_or(|v| v.is_null() || v.as_str() == Some(""))
}

/// kube's `populateConditionTimestamps`: a condition without `lastUpdateTime` gets `now`; one
/// without `lastTransitionTime` gets that of an old condition of the same type and status, or
/// `now`.
fn populate_condition_timestamps(new: &mut Value, old: &Value, now: &str) {
    let old_conditions = conditions(old).to_vec();
    let Some(list) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for condition in list.iter_mut() {
        let Some(map) = condition.as_object_mut() else {
            continue;
        };
        let current = Value::Object(map.clone());
        if unset(&current, "lastUpdateTime") {
            map.insert("lastUpdateTime".into(), json!(now));
        }
        if unset(&current, "lastTransitionTime") {
            let inherited = old_conditions
                .iter()
                .find(|o| {
                    o.get("type") == current.get("type")
                        && o.get("status") == current.get("status")
                        && !unset(o, "lastTransitionTime")
                })
                .and_then(|o| o.get("lastTransitionTime").cloned());
            map.insert(
                "lastTransitionTime".into(),
                inherited.unwrap_or_else(|| json!(now)),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approved_and_denied_keep_their_old_values() {
        let old = json!({"status": {"conditions": [
            {"type": "Approved", "status": "True", "reason": "ByAdmin"},
        ]}});
        let mut new = json!({"status": {"conditions": [
            {"type": "Approved", "status": "True", "reason": "Changed"},
            {"type": "Failed", "status": "True"},
        ]}});
        preserve_conditions(&mut new, &old, "Approved");
        assert_eq!(new["status"]["conditions"][0]["reason"], "ByAdmin");
        // Added instances are left alone.
        let mut added = json!({"status": {"conditions": [
            {"type": "Denied", "status": "True", "reason": "New"},
        ]}});
        preserve_conditions(&mut added, &old, "Denied");
        assert_eq!(added["status"]["conditions"][0]["reason"], "New");
    }

    #[test]
    fn timestamps_are_filled() {
        let old = json!({"status": {"conditions": [
            {"type": "Approved", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"},
        ]}});
        let mut new = json!({"status": {"conditions": [
            {"type": "Approved", "status": "True"},
            {"type": "Failed", "status": "True", "lastUpdateTime": "2021-01-01T00:00:00Z"},
        ]}});
        populate_condition_timestamps(&mut new, &old, "2030-01-01T00:00:00Z");
        assert_eq!(
            new["status"]["conditions"],
            json!([
                {"type": "Approved", "status": "True",
                 "lastUpdateTime": "2030-01-01T00:00:00Z",
                 "lastTransitionTime": "2020-01-01T00:00:00Z"},
                {"type": "Failed", "status": "True",
                 "lastUpdateTime": "2021-01-01T00:00:00Z",
                 "lastTransitionTime": "2030-01-01T00:00:00Z"},
            ])
        );
    }
}
