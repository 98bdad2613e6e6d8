//! JSON values as CEL values.

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::cel;
use serde_json::Value;

/// JSON as CEL sees it: integers as `int` (or `uint` past `i64`), objects as maps.
pub fn to_cel(value: &Value) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => cel::Value::Int(i),
            (None, Some(u)) => cel::Value::UInt(u),
            _ => cel::Value::Float(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(map) => cel_map(
            map.iter()
                .map(|(k, v)| (k.clone(), to_cel(v)))
                .collect::<Vec<_>>(),
        ),
    }
}

/// A CEL map of string keys.
pub fn cel_map(entries: Vec<(String, cel::Value)>) -> cel::Value {
    let map: HashMap<cel::objects::Key, cel::Value> = entries
        .into_iter()
        .map(|(k, v)| (cel::objects::Key::String(Arc::new(k)), v))
        .collect();
    cel::Value::Map(cel::objects::Map { map: Arc::new(map) })
}
