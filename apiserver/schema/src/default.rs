//! Structural defaulting (apiextensions' `structuraldefaulting.Default`).

use serde_json::Value;

use super::node::Node;

fn non_nullable_null(x: &Value, s: Option<&Node>) -> bool {
    x.is_null() && s.is_some_and(|n| !n.nullable)
}

/// Apply `default`s inside `x`: a missing property (or a `null` one whose schema is not
/// nullable) gets its schema's default; defaults are applied inside present objects and list
/// items only, never creating a parent; applied defaults are defaulted in turn.
pub(crate) fn apply(x: &mut Value, s: Option<&Node>) {
    let Some(n) = s else {
        return;
    };
    match x {
        Value::Object(m) => {
            for (k, prop) in &n.properties {
                let Some(d) = &prop.default else {
                    continue;
                };
                let missing = m.get(k).is_none_or(|v| non_nullable_null(v, Some(prop)));
                if missing {
                    m.insert(k.clone(), d.clone());
                }
            }
            for (k, v) in m.iter_mut() {
                if let Some(p) = n.property(k) {
                    apply(v, Some(p));
                } else if let Some(ap) = n.additional_schema() {
                    if non_nullable_null(v, ap) {
                        *v = ap.and_then(|a| a.default.clone()).unwrap_or(Value::Null);
                    }
                    apply(v, ap);
                }
            }
        }
        Value::Array(a) => {
            let items = n.items.as_deref();
            for v in a.iter_mut() {
                if non_nullable_null(v, items) {
                    *v = items.and_then(|i| i.default.clone()).unwrap_or(Value::Null);
                }
                apply(v, items);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(v: Value) -> Node {
        Node::parse(&v, "s", &mut Vec::new())
    }

    #[test]
    fn defaults_inside_present_objects_only() {
        let s = node(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "replicas": {"type": "integer", "default": 1},
                "mode": {"type": "string", "default": "Auto"},
                "keep": {"type": "string", "nullable": true, "default": "x"},
                "nested": {"type": "object", "properties": {"deep": {"type": "string", "default": "d"}}},
                "withDefault": {"type": "object", "default": {}, "properties": {"inner": {"type": "integer", "default": 7}}},
                "list": {"type": "array", "items": {"type": "object", "properties": {"p": {"type": "integer", "default": 80}}}},
                "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"w": {"type": "integer", "default": 3}}}}
            }}}}),
        );
        let mut obj =
            json!({"spec": {"mode": null, "keep": null, "list": [{}, {"p": 1}], "map": {"a": {}}}});
        apply(&mut obj, Some(&s));
        assert_eq!(
            obj,
            json!({"spec": {
            "mode": "Auto", "keep": null, "list": [{"p": 80}, {"p": 1}], "map": {"a": {"w": 3}},
            "replicas": 1, "withDefault": {"inner": 7}}})
        );

        let mut empty = json!({});
        apply(&mut empty, Some(&s));
        assert_eq!(empty, json!({}));
    }

    #[test]
    fn null_items_take_the_item_default() {
        let s = node(json!({"type": "array", "items": {"type": "string", "default": "x"}}));
        let mut v = json!(["a", null]);
        apply(&mut v, Some(&s));
        assert_eq!(v, json!(["a", "x"]));
    }
}
