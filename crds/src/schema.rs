//! Schema helpers shared by the API types: embedded objects and schema attributes that
//! Kubernetes understands but schemars does not generate by itself.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

/// A complete Kubernetes object embedded in an OCM object, kept exactly as written: every
/// field, known or not, survives a round trip. Used for ManifestWork manifests.
///
/// Its schema is an object with `x-kubernetes-embedded-resource` and
/// `x-kubernetes-preserve-unknown-fields`, so the API server checks `apiVersion`, `kind` and
/// `metadata` but prunes nothing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EmbeddedObject(pub serde_json::Value);

impl JsonSchema for EmbeddedObject {
    fn schema_name() -> Cow<'static, str> {
        "EmbeddedObject".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true,
        })
    }
}

/// Any JSON object whose fields the API server must keep as they are (no pruning), without
/// the embedded-resource checks of [`EmbeddedObject`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PreservedObject(pub serde_json::Value);

impl JsonSchema for PreservedObject {
    fn schema_name() -> Cow<'static, str> {
        "PreservedObject".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
        })
    }
}

/// Schema of a `conditions` list: `metav1.Condition` items with the validation kube-apiserver
/// applies to them (status enum, reason and type patterns, required fields), as a list-map
/// keyed by `type`. Use with `#[schemars(schema_with = "crate::schema::conditions")]`.
pub fn conditions(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "type": "object",
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
            "properties": {
                "lastTransitionTime": {"type": "string", "format": "date-time"},
                "message": {"type": "string", "maxLength": 32768},
                "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
                "reason": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 1024,
                    "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
                },
                "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                "type": {
                    "type": "string",
                    "maxLength": 316,
                    "pattern": QUALIFIED_NAME_PATTERN
                }
            }
        }
    })
}

/// Pattern of a Kubernetes qualified name (optional DNS-subdomain prefix, then a name), as
/// used for condition types, taint keys and label keys.
pub const QUALIFIED_NAME_PATTERN: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";

/// Pattern of a resource quantity (`100m`, `2Gi`, `1e3`).
pub const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// Schema of a map from resource name to quantity (`capacity`, `allocatable`). Use with
/// `#[schemars(schema_with = "crate::schema::resource_list")]`.
pub fn resource_list(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "additionalProperties": {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": true
        }
    })
}

/// Schema of a byte string (base64 on the wire), e.g. a CA bundle. Use with
/// `#[schemars(schema_with = "crate::schema::bytes")]`.
pub fn bytes(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "format": "byte"})
}

/// Schema of an optional timestamp that may be `null` on the wire. Use with
/// `#[schemars(schema_with = "crate::schema::nullable_time")]`.
pub fn nullable_time(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "format": "date-time", "nullable": true})
}

/// Drops the `default` schemars derives from `#[serde(default)]`, for fields Go always
/// serializes (no `omitempty`) but whose upstream CRD declares no default: the zero value is
/// accepted when reading, yet the API server must not fill it in.
/// Use with `#[schemars(transform = crate::schema::no_default)]`.
pub fn no_default(schema: &mut Schema) {
    schema.remove("default");
}
