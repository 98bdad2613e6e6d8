//! Sizes from an `openAPIV3Schema` node, as kube-apiserver declares a structural schema to
//! CEL: `maxLength` (times 4: kube counts bytes, a character may take four), `maxItems`,
//! `maxProperties`, the longest `enum` value; without them, what fits in a request
//! (3 MiB less the serialized size of the smallest element).

use serde_json::Value;

use super::{Kind, MAX_REQUEST_BYTES, Seg, Size, Sizes};

/// Sizes of the variables of a CRD rule: `self` and `oldSelf` are the rule's schema node.
pub struct SchemaSizes<'a> {
    schema: &'a Value,
    /// Whether `self` is a resource root (then `apiVersion`, `kind` and `metadata.name` are
    /// fields even when the schema does not declare them).
    root: bool,
}

impl<'a> SchemaSizes<'a> {
    /// The sizes a rule on `schema` sees (`root`: the top of a custom resource).
    pub fn for_rule(schema: &'a Value, root: bool) -> SchemaSizes<'a> {
        SchemaSizes { schema, root }
    }
}

/// An unbounded string: everything in a request but its quotes.
const UNBOUNDED_STRING: u64 = MAX_REQUEST_BYTES - 2;

fn int_of(schema: &Value, key: &str) -> Option<u64> {
    schema
        .get(key)
        .and_then(Value::as_i64)
        .map(|n| u64::try_from(n).unwrap_or(0))
}

fn type_of(schema: &Value) -> &str {
    schema.get("type").and_then(Value::as_str).unwrap_or("")
}

fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// The schema of a map's values (`additionalProperties` as a schema).
fn map_values(schema: &Value) -> Option<&Value> {
    schema.get("additionalProperties").filter(|a| a.is_object())
}

/// The fewest bytes a value of `schema` takes in JSON (kube's `MinSerializedSize`).
fn min_serialized_size(schema: &Value) -> u64 {
    if flag(schema, "x-kubernetes-int-or-string") {
        return 1;
    }
    match type_of(schema) {
        "string" => match schema.get("format").and_then(Value::as_str) {
            Some("duration") => 3,
            Some("date") => 12,
            Some("date-time") => 21,
            _ => 2,
        },
        "boolean" => 4,
        "integer" | "number" => 1,
        "object" if map_values(schema).is_none() => {
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let props = schema.get("properties").and_then(Value::as_object);
            let mut size = 2u64;
            for name in required {
                if let Some(p) = props.and_then(|p| p.get(name))
                    && p.get("default").is_none()
                {
                    size = size
                        .saturating_add(name.len() as u64)
                        .saturating_add(min_serialized_size(p))
                        .saturating_add(4);
                }
            }
            size
        }
        _ => 2,
    }
}

/// The size of a value of `schema`, as kube's `DeclType.MaxElements`.
fn decl_size(schema: &Value) -> Size {
    let max_length = int_of(schema, "maxLength");
    if flag(schema, "x-kubernetes-int-or-string") {
        let max = max_length.map_or(UNBOUNDED_STRING, |n| n.saturating_mul(4));
        return Size::new(Kind::Unknown, max);
    }
    match type_of(schema) {
        "string" => {
            let format = schema.get("format").and_then(Value::as_str).unwrap_or("");
            let max = match format {
                "byte" => max_length.unwrap_or(UNBOUNDED_STRING),
                // Durations and timestamps compare in about two units, as kube sizes them.
                "date" => return Size::new(Kind::Scalar, 12),
                "duration" | "date-time" => return Size::new(Kind::Scalar, 20),
                _ => match (max_length, schema.get("enum").and_then(Value::as_array)) {
                    (Some(n), _) => n.saturating_mul(4),
                    (None, Some(values)) if !values.is_empty() => values
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|s| s.len() as u64)
                        .max()
                        .unwrap_or(0),
                    _ => UNBOUNDED_STRING,
                },
            };
            Size::new(Kind::Text, max)
        }
        "array" => {
            let max = int_of(schema, "maxItems").unwrap_or_else(|| {
                let min = schema.get("items").map_or(1, min_serialized_size);
                (MAX_REQUEST_BYTES - 2) / (min + 1)
            });
            Size::new(Kind::List, max)
        }
        "object" => match map_values(schema) {
            Some(values) => {
                let max = int_of(schema, "maxProperties")
                    .unwrap_or_else(|| (MAX_REQUEST_BYTES - 2) / (min_serialized_size(values) + 6));
                Size::new(Kind::Map, max)
            }
            None => {
                // Like scalars, objects have no declared size.
                Size::new(Kind::Map, 0)
            }
        },
        // kube declares no size for scalars (`MaxElements` 0), which makes comparing them free.
        "integer" | "number" | "boolean" => Size::new(Kind::Scalar, 0),
        _ => Size::new(Kind::Unknown, UNBOUNDED_STRING),
    }
}

/// How many times a rule on a node can run per object when a list or map above it is
/// unbounded: as many as the node's smallest serialization fits in a request (kube's
/// `maxCardinality`).
pub fn unbounded_cardinality(schema: &Value) -> u64 {
    MAX_REQUEST_BYTES / (min_serialized_size(schema) + 1)
}

/// How many children of `schema` a rule below it can see per value of it: `maxItems`,
/// `maxProperties` of a map, 1 for an object's property; `None` when unbounded (kube's
/// `extractMaxElements`).
pub fn cardinality_factor(schema: &Value) -> Option<u64> {
    match type_of(schema) {
        "array" => int_of(schema, "maxItems"),
        "object" if schema.get("additionalProperties").is_some() => int_of(schema, "maxProperties"),
        _ => Some(1),
    }
}

/// An unbounded string schema (`apiVersion`, `kind`, `metadata.name` of a resource root).
fn any_string() -> &'static Value {
    static STRING: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    STRING.get_or_init(|| serde_json::json!({"type": "string"}))
}

fn root_metadata() -> &'static Value {
    static META: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    META.get_or_init(|| {
        serde_json::json!({"type": "object", "properties": {
            "name": {"type": "string"}, "generateName": {"type": "string"}}})
    })
}

impl Sizes for SchemaSizes<'_> {
    fn lookup(&self, path: &[Seg]) -> Option<Size> {
        let (first, rest) = path.split_first()?;
        match first {
            Seg::Field(v) if v == "self" || v == "oldSelf" => {}
            _ => return None,
        }
        let mut node = self.schema;
        let mut at_root = self.root;
        // Past a map entry selected by name (`self.labels.app`) kube knows only the type:
        // scalars have size 1, anything else is unbounded.
        let mut by_type = false;
        for seg in rest {
            let resource = at_root || flag(node, "x-kubernetes-embedded-resource");
            at_root = false;
            node = match seg {
                Seg::Field(name) => {
                    let declared = node.get("properties").and_then(|p| p.get(name.as_str()));
                    match (declared, name.as_str()) {
                        (Some(p), _) => p,
                        (None, "apiVersion" | "kind") if resource => any_string(),
                        (None, "metadata") if resource => root_metadata(),
                        (None, _) => {
                            by_type = true;
                            map_values(node)?
                        }
                    }
                }
                Seg::Elem => node.get("items").or_else(|| map_values(node))?,
                // kube declares map keys as plain strings without a size.
                Seg::Key => return Some(Size::new(Kind::Text, 0)),
            };
        }
        let size = decl_size(node);
        Some(match (by_type, size.kind) {
            (false, _) => size,
            (true, Kind::Scalar) => Size::SCALAR,
            (true, kind) => Size::new(kind, u64::MAX),
        })
    }

    fn unknown(&self) -> u64 {
        u64::MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path(fields: &[&str]) -> Vec<Seg> {
        fields
            .iter()
            .map(|f| match *f {
                "[]" => Seg::Elem,
                f => Seg::Field(f.to_owned()),
            })
            .collect()
    }

    #[test]
    fn sizes_follow_kubes_declarations() {
        let s = json!({"type": "object", "required": ["n"], "properties": {
            "n": {"type": "integer"},
            "name": {"type": "string", "maxLength": 10},
            "tags": {"type": "array", "items": {"type": "string"}},
            "few": {"type": "array", "maxItems": 3, "items": {"type": "boolean"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "mode": {"type": "string", "enum": ["on", "off"]}}});
        let sizes = SchemaSizes::for_rule(&s, true);
        let at = |p: &[&str]| sizes.lookup(&path(p));
        assert_eq!(at(&["self", "n"]), Some(Size::new(Kind::Scalar, 0)));
        assert_eq!(at(&["self", "name"]), Some(Size::new(Kind::Text, 40)));
        assert_eq!(
            at(&["self", "tags"]),
            Some(Size::new(Kind::List, (MAX_REQUEST_BYTES - 2) / 3))
        );
        assert_eq!(
            at(&["self", "tags", "[]"]),
            Some(Size::new(Kind::Text, UNBOUNDED_STRING))
        );
        assert_eq!(at(&["self", "few"]), Some(Size::new(Kind::List, 3)));
        assert_eq!(
            at(&["self", "labels"]),
            Some(Size::new(Kind::Map, (MAX_REQUEST_BYTES - 2) / 8))
        );
        assert_eq!(at(&["self", "mode"]), Some(Size::new(Kind::Text, 3)));
        assert_eq!(
            at(&["self", "metadata", "name"]),
            Some(Size::new(Kind::Text, UNBOUNDED_STRING))
        );
        assert_eq!(at(&["params"]), None);
        // {"n":0}: 2 + 1 + 1 + 4.
        assert_eq!(unbounded_cardinality(&s), MAX_REQUEST_BYTES / 9);
        assert_eq!(cardinality_factor(&s), Some(1));
        assert_eq!(cardinality_factor(&s["properties"]["tags"]), None);
        assert_eq!(cardinality_factor(&s["properties"]["few"]), Some(3));
        assert_eq!(cardinality_factor(&s["properties"]["labels"]), None);
    }
}
