//! The generated field table (`types.json`): proto messages, their fields' numbers, JSON
//! names, types and omitempty/pointer flags, and the proto package of each apiVersion.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;

const TABLE: &str = include_str!("types.json");

/// How a field repeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Label {
    /// A single value.
    Single,
    /// A repeated value (a JSON array).
    Repeated,
    /// A `map<K, V>` (a JSON object).
    Map,
}

/// One field of a message.
#[derive(Clone, Debug)]
pub struct Field {
    /// The JSON name; empty for an inlined embedded struct.
    pub json: String,
    /// Single, repeated or map.
    pub label: Label,
    /// The proto scalar type or the full message name (the key type for maps).
    pub ty: String,
    /// The map value type.
    pub value_ty: String,
    /// The Go field is a pointer: a present zero value stays.
    pub pointer: bool,
    /// The JSON tag has omitempty: a zero value of a non-pointer scalar is dropped.
    pub omitempty: bool,
}

/// One message.
#[derive(Clone, Debug, Default)]
pub struct Message {
    /// Fields by number.
    pub fields: HashMap<u32, Field>,
    /// The Go type is a `[]string` alias encoded as `{repeated string items = 1}`.
    pub slice: bool,
}

/// The whole table.
#[derive(Debug, Default)]
pub struct Table {
    /// apiVersion → proto package.
    pub packages: HashMap<String, String>,
    /// Full message name → message.
    pub messages: HashMap<String, Message>,
}

#[derive(Deserialize)]
struct RawMessage {
    fields: Vec<(u32, String, String, String, String, String)>,
    #[serde(default)]
    slice: bool,
}

#[derive(Deserialize)]
struct RawTable {
    packages: HashMap<String, String>,
    messages: HashMap<String, RawMessage>,
}

fn load() -> Table {
    let raw: RawTable = match serde_json::from_str(TABLE) {
        Ok(raw) => raw,
        Err(err) => {
            tracing::error!(%err, "the protobuf type table does not parse");
            return Table::default();
        }
    };
    let messages = raw
        .messages
        .into_iter()
        .map(|(name, m)| {
            let fields = m
                .fields
                .into_iter()
                .map(|(num, json, label, ty, value_ty, flags)| {
                    let label = match label.as_str() {
                        "r" => Label::Repeated,
                        "m" => Label::Map,
                        _ => Label::Single,
                    };
                    let field = Field {
                        json,
                        label,
                        ty,
                        value_ty,
                        pointer: flags.contains('p'),
                        omitempty: flags.contains('e'),
                    };
                    (num, field)
                })
                .collect();
            (
                name,
                Message {
                    fields,
                    slice: m.slice,
                },
            )
        })
        .collect();
    Table {
        packages: raw.packages,
        messages,
    }
}

/// The table, parsed once.
pub fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(load)
}

/// The full message name of `kind` in `api_version` (DeleteOptions and Status of any version
/// fall back to `meta.k8s.io/v1`: errors are `v1` Status objects).
pub fn message_for(api_version: &str, kind: &str) -> Option<&'static str> {
    let t = table();
    let lookup = |version: &str| {
        let pkg = t.packages.get(version)?;
        let name = format!("{pkg}.{kind}");
        t.messages.get_key_value(&name).map(|(k, _)| k.as_str())
    };
    lookup(api_version).or_else(|| {
        // meta.k8s.io/v1 kinds kube also writes under `v1` or with no version (discovery).
        if matches!(
            kind,
            "DeleteOptions"
                | "Status"
                | "APIVersions"
                | "APIGroupList"
                | "APIGroup"
                | "APIResourceList"
        ) {
            lookup("meta.k8s.io/v1")
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_loads_with_core_kinds() {
        assert_eq!(
            message_for("v1", "Secret"),
            Some("k8s.io.api.core.v1.Secret")
        );
        assert_eq!(
            message_for("apps/v1", "Deployment"),
            Some("k8s.io.api.apps.v1.Deployment")
        );
        assert_eq!(
            message_for("v1", "DeleteOptions"),
            Some("k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions")
        );
        assert_eq!(message_for("example.com/v1", "Widget"), None);
        let secret = &table().messages["k8s.io.api.core.v1.Secret"];
        assert_eq!(secret.fields[&2].label, Label::Map);
        assert_eq!(secret.fields[&2].value_ty, "bytes");
        assert!(secret.fields[&5].pointer);
    }
}
