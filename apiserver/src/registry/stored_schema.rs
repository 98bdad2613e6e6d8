//! A custom resource version's `openAPIV3Schema`, kept as its compact JSON text rather than
//! as a parsed [`Value`]: every CRD a server serves holds one for as long as it is served, and
//! a parsed schema takes five to six times the memory of its text (the hub's OCM CRDs: 847 KiB
//! parsed against about 140 KiB of text, measured with a heap profiler). What reads it — the
//! structural schema and the patch types, each built once per version, the OpenAPI documents
//! and the admission policies' type checks — parses it when it needs it.

use std::sync::Arc;

use serde_json::Value;

/// The deepest nesting of arrays and objects kept as text: well below the JSON parser's
/// limit (128), so that the text always parses again.
const TEXT_DEPTH: usize = 100;

/// Whether `value` nests arrays and objects no more than `levels` deep (a scalar nests 0,
/// `{}` 1); stops descending past `levels`.
fn nests_within(value: &Value, levels: usize) -> bool {
    match value {
        Value::Array(items) => levels > 0 && items.iter().all(|v| nests_within(v, levels - 1)),
        Value::Object(map) => levels > 0 && map.values().all(|v| nests_within(v, levels - 1)),
        _ => true,
    }
}

/// One version's `openAPIV3Schema`, cheap to clone.
#[derive(Clone, Debug)]
pub struct StoredSchema(Repr);

#[derive(Clone, Debug)]
enum Repr {
    /// The schema's compact JSON text.
    Text(Arc<str>),
    /// A schema whose text would not parse again (nested deeper than the JSON parser's
    /// limit): kept as it is.
    Parsed(Arc<Value>),
}

impl StoredSchema {
    /// Keeps `schema`, as text when that text reads back as the same schema (when it nests
    /// no deeper than [`TEXT_DEPTH`]).
    pub fn new(schema: &Value) -> StoredSchema {
        if nests_within(schema, TEXT_DEPTH) {
            StoredSchema(Repr::Text(schema.to_string().into()))
        } else {
            StoredSchema(Repr::Parsed(Arc::new(schema.clone())))
        }
    }

    /// The schema as a JSON value (parsed from its text at each call).
    pub fn value(&self) -> Arc<Value> {
        match &self.0 {
            // `new` kept as text only what nests within the parser's limit, so this cannot
            // fall back.
            Repr::Text(text) => Arc::new(serde_json::from_str(text).unwrap_or(Value::Null)),
            Repr::Parsed(value) => value.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_schema_reads_back_as_it_was_given() {
        let schema = json!({
            "type": "object",
            "description": "ünïcode \"quoted\"",
            "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                           "n": {"type": "integer", "maximum": 1.5e300, "minimum": -3}},
            "required": ["spec"],
        });
        let stored = StoredSchema::new(&schema);
        assert!(matches!(stored.0, Repr::Text(_)));
        assert_eq!(*stored.value(), schema);
    }

    #[test]
    fn a_schema_too_deep_to_parse_again_is_kept_parsed() {
        let mut schema = json!({"type": "string"});
        for _ in 0..200 {
            schema = json!({"type": "object", "properties": {"a": schema}});
        }
        let stored = StoredSchema::new(&schema);
        assert!(matches!(stored.0, Repr::Parsed(_)));
        assert_eq!(*stored.value(), schema);
    }

    #[test]
    fn nesting_is_counted_by_containers() {
        assert!(nests_within(&json!("a"), 0));
        assert!(!nests_within(&json!({}), 0));
        assert!(nests_within(&json!({"a": [1, {"b": 2}]}), 3));
        assert!(!nests_within(&json!({"a": [1, {"b": 2}]}), 2));
        // The deepest kept as text parses again.
        let mut deepest = json!("leaf");
        for _ in 0..TEXT_DEPTH {
            deepest = json!([deepest]);
        }
        let stored = StoredSchema::new(&deepest);
        assert!(matches!(stored.0, Repr::Text(_)));
        assert_eq!(*stored.value(), deepest);
    }
}
