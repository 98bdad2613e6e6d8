//! The status the server keeps on a ValidatingAdmissionPolicy: `observedGeneration` and
//! `typeChecking`. kube-apiserver's type-checking controller writes both after each change of
//! the spec; here they are written with the change itself (the warnings come from
//! [`super::typecheck`]).

use serde_json::{Value, json};

/// Sets `status.observedGeneration` to the object's generation and `status.typeChecking` to
/// `warnings` (`{}` without any), keeping any conditions.
pub fn observe(obj: &mut Value, warnings: Vec<Value>) {
    let generation = obj
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let status = map.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    if let Some(status) = status.as_object_mut() {
        status.insert("observedGeneration".into(), json!(generation));
        let type_checking = if warnings.is_empty() {
            json!({})
        } else {
            json!({"expressionWarnings": warnings})
        };
        status.insert("typeChecking".into(), type_checking);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observes_the_generation() {
        let mut p = json!({"metadata": {"generation": 3}, "status": {"conditions": []}});
        observe(&mut p, Vec::new());
        assert_eq!(
            p["status"],
            json!({"conditions": [], "observedGeneration": 3, "typeChecking": {}})
        );
    }
}
