//! The parsed form of an `openAPIV3Schema` (a `JSONSchemaProps` tree).

use std::collections::HashMap;

use regex::Regex;
use serde_json::{Map, Value};

use super::formats::supported_format;

/// `additionalProperties`: a boolean or a schema.
#[derive(Debug, Clone)]
pub(crate) enum Additional {
    Bool(bool),
    Schema(Box<Node>),
}

/// A compiled `pattern` (or the compile error kube would report).
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    pub(crate) source: String,
    pub(crate) regex: Result<Regex, String>,
}

/// One schema node. Only the parts kube-apiserver acts on are kept.
#[derive(Debug, Clone, Default)]
pub(crate) struct Node {
    /// `type`, or `["integer","string"]` for `x-kubernetes-int-or-string`.
    pub(crate) types: Vec<String>,
    /// The declared `type` string (empty when absent).
    pub(crate) type_name: String,
    pub(crate) nullable: bool,
    /// `format` after kube strips the formats it does not validate.
    pub(crate) format: String,
    pub(crate) enum_values: Option<Vec<Value>>,
    pub(crate) maximum: Option<f64>,
    pub(crate) exclusive_maximum: bool,
    pub(crate) minimum: Option<f64>,
    pub(crate) exclusive_minimum: bool,
    pub(crate) multiple_of: Option<f64>,
    pub(crate) max_length: Option<i64>,
    pub(crate) min_length: Option<i64>,
    pub(crate) pattern: Option<Pattern>,
    pub(crate) max_items: Option<i64>,
    pub(crate) min_items: Option<i64>,
    pub(crate) unique_items: bool,
    pub(crate) max_properties: Option<i64>,
    pub(crate) min_properties: Option<i64>,
    pub(crate) required: Vec<String>,
    pub(crate) properties: Vec<(String, Node)>,
    prop_index: HashMap<String, usize>,
    pub(crate) additional: Option<Additional>,
    pub(crate) items: Option<Box<Node>>,
    pub(crate) all_of: Vec<Node>,
    pub(crate) any_of: Vec<Node>,
    pub(crate) one_of: Vec<Node>,
    pub(crate) not: Option<Box<Node>>,
    pub(crate) default: Option<Value>,
    pub(crate) preserve_unknown: bool,
    pub(crate) embedded: bool,
    pub(crate) int_or_string: bool,
    pub(crate) list_type: Option<String>,
    pub(crate) list_map_keys: Vec<String>,
    pub(crate) map_type: Option<String>,
    /// The raw `x-kubernetes-validations` rules.
    pub(crate) x_validations: Vec<Value>,
    pub(crate) title: String,
    pub(crate) description: String,
    /// `Some(t)` when the schema object is exactly `{"type": t}`.
    pub(crate) only_type: Option<String>,
}

/// A JSON type mismatch while reading the schema (kube-apiserver fails to decode the CRD).
#[derive(Debug, Clone)]
pub(crate) struct DecodeIssue {
    pub(crate) path: String,
    pub(crate) found: &'static str,
    pub(crate) go_type: &'static str,
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

struct Reader<'a> {
    obj: &'a Map<String, Value>,
    path: &'a str,
    issues: &'a mut Vec<DecodeIssue>,
}

impl Reader<'_> {
    fn issue(&mut self, key: &str, v: &Value, go_type: &'static str) {
        self.issues.push(DecodeIssue {
            path: format!("{}.{key}", self.path),
            found: json_kind(v),
            go_type,
        });
    }

    fn string(&mut self, key: &str) -> String {
        match self.obj.get(key) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                self.issue(key, other, "string");
                String::new()
            }
        }
    }

    fn boolean(&mut self, key: &str) -> bool {
        match self.obj.get(key) {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                self.issue(key, other, "bool");
                false
            }
        }
    }

    fn float(&mut self, key: &str) -> Option<f64> {
        match self.obj.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => n.as_f64(),
            Some(other) => {
                self.issue(key, other, "float64");
                None
            }
        }
    }

    fn int(&mut self, key: &str) -> Option<i64> {
        match self.obj.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.is_i64() => n.as_i64(),
            Some(other) => {
                self.issue(key, other, "int64");
                None
            }
        }
    }

    fn strings(&mut self, key: &str) -> Vec<String> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => {
                let mut out = Vec::new();
                for item in a {
                    match item {
                        Value::String(s) => out.push(s.clone()),
                        other => {
                            let other = other.clone();
                            self.issue(key, &other, "string");
                        }
                    }
                }
                out
            }
            Some(other) => {
                let other = other.clone();
                self.issue(key, &other, "[]string");
                Vec::new()
            }
        }
    }

    fn node(&mut self, key: &str) -> Option<Node> {
        match self.obj.get(key) {
            None | Some(Value::Null) => None,
            Some(v @ Value::Object(_)) => {
                let path = format!("{}.{key}", self.path);
                Some(Node::parse(v, &path, self.issues))
            }
            Some(other) => {
                let other = other.clone();
                self.issue(key, &other, "v1.JSONSchemaProps");
                None
            }
        }
    }

    fn node_list(&mut self, key: &str) -> Vec<Node> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| {
                    let path = format!("{}.{key}", self.path);
                    Node::parse(v, &path, self.issues)
                })
                .collect(),
            Some(other) => {
                let other = other.clone();
                self.issue(key, &other, "[]v1.JSONSchemaProps");
                Vec::new()
            }
        }
    }

    fn node_map(&mut self, key: &str) -> Vec<(String, Node)> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| {
                    let path = format!("{}.{key}", self.path);
                    (k.clone(), Node::parse(v, &path, self.issues))
                })
                .collect(),
            Some(other) => {
                let other = other.clone();
                self.issue(key, &other, "map[string]v1.JSONSchemaProps");
                Vec::new()
            }
        }
    }
}

impl Node {
    /// The item of `old` (a list's old value) that `item` of this list corresponds to: the one
    /// with the same map keys in a `x-kubernetes-list-type: map` list; items of atomic and set
    /// lists correspond to none (kube cannot correlate them).
    pub(crate) fn correlate_item<'a>(
        &self,
        item: &Value,
        old: Option<&'a Value>,
    ) -> Option<&'a Value> {
        if self.list_type.as_deref() != Some("map") || self.list_map_keys.is_empty() {
            return None;
        }
        let old_items = old?.as_array()?;
        let key_of = |v: &Value| -> Option<Vec<Value>> {
            let m = v.as_object()?;
            Some(
                self.list_map_keys
                    .iter()
                    .map(|k| m.get(k).cloned().unwrap_or(Value::Null))
                    .collect(),
            )
        };
        let want = key_of(item)?;
        old_items.iter().find(|o| key_of(o).as_ref() == Some(&want))
    }

    /// Read a schema object; JSON type mismatches are recorded in `issues` and the offending
    /// keyword ignored. A non-object schema reads as the empty schema.
    pub(crate) fn parse(v: &Value, path: &str, issues: &mut Vec<DecodeIssue>) -> Node {
        let Some(obj) = v.as_object() else {
            if !v.is_null() {
                issues.push(DecodeIssue {
                    path: path.to_string(),
                    found: json_kind(v),
                    go_type: "v1.JSONSchemaProps",
                });
            }
            return Node::default();
        };
        let mut r = Reader { obj, path, issues };
        let type_name = r.string("type");
        let int_or_string = r.boolean("x-kubernetes-int-or-string");
        let types = if int_or_string {
            vec!["integer".to_string(), "string".to_string()]
        } else if type_name.is_empty() {
            Vec::new()
        } else {
            vec![type_name.clone()]
        };
        let raw_format = r.string("format");
        let format = if supported_format(&raw_format) {
            raw_format
        } else {
            String::new()
        };
        let pattern_src = r.string("pattern");
        let pattern = (!pattern_src.is_empty()).then(|| Pattern {
            regex: Regex::new(&pattern_src).map_err(|e| regex_error_text(&e)),
            source: pattern_src,
        });
        let enum_values = match obj.get("enum") {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => {
                let other = other.clone();
                r.issue("enum", &other, "[]v1.JSON");
                None
            }
        };
        let items = match obj.get("items") {
            None | Some(Value::Null) => None,
            Some(v @ Value::Object(_)) => {
                Some(Box::new(Node::parse(v, &format!("{path}.items"), r.issues)))
            }
            // An array of schemas is rejected by the structural checks; keep nothing here.
            Some(Value::Array(_)) => None,
            Some(other) => {
                let other = other.clone();
                r.issue("items", &other, "v1.JSONSchemaPropsOrArray");
                None
            }
        };
        let additional = match obj.get("additionalProperties") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(Additional::Bool(*b)),
            Some(v @ Value::Object(_)) => Some(Additional::Schema(Box::new(Node::parse(
                v,
                &format!("{path}.additionalProperties"),
                r.issues,
            )))),
            Some(other) => {
                let other = other.clone();
                r.issue("additionalProperties", &other, "v1.JSONSchemaPropsOrBool");
                None
            }
        };
        let x_validations = match obj.get("x-kubernetes-validations") {
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        };
        let only_type = (obj.len() == 1)
            .then(|| obj.get("type").and_then(Value::as_str).map(str::to_string))
            .flatten();
        let title = r.string("title");
        let description = r.string("description");
        let properties = r.node_map("properties");
        let prop_index = properties
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (k.clone(), i))
            .collect();
        let map_type = Some(r.string("x-kubernetes-map-type")).filter(|s| !s.is_empty());
        let list_type = Some(r.string("x-kubernetes-list-type")).filter(|s| !s.is_empty());
        Node {
            types,
            type_name,
            nullable: r.boolean("nullable"),
            format,
            enum_values,
            maximum: r.float("maximum"),
            exclusive_maximum: r.boolean("exclusiveMaximum"),
            minimum: r.float("minimum"),
            exclusive_minimum: r.boolean("exclusiveMinimum"),
            multiple_of: r.float("multipleOf"),
            max_length: r.int("maxLength"),
            min_length: r.int("minLength"),
            pattern,
            max_items: r.int("maxItems"),
            min_items: r.int("minItems"),
            unique_items: r.boolean("uniqueItems"),
            max_properties: r.int("maxProperties"),
            min_properties: r.int("minProperties"),
            required: r.strings("required"),
            properties,
            prop_index,
            additional,
            items,
            all_of: r.node_list("allOf"),
            any_of: r.node_list("anyOf"),
            one_of: r.node_list("oneOf"),
            not: r.node("not").map(Box::new),
            default: obj.get("default").filter(|v| !v.is_null()).cloned(),
            preserve_unknown: r.boolean("x-kubernetes-preserve-unknown-fields"),
            embedded: r.boolean("x-kubernetes-embedded-resource"),
            int_or_string,
            list_type,
            list_map_keys: r.strings("x-kubernetes-list-map-keys"),
            map_type,
            x_validations,
            title,
            description,
            only_type,
        }
    }

    /// The schema of a named property.
    pub(crate) fn property(&self, name: &str) -> Option<&Node> {
        self.prop_index.get(name).map(|&i| &self.properties[i].1)
    }

    /// The schema of a field that is not a declared property: the `additionalProperties`
    /// schema; `Some(None)` when `additionalProperties` is a boolean (kube treats the value as
    /// having no schema).
    pub(crate) fn additional_schema(&self) -> Option<Option<&Node>> {
        match &self.additional {
            None => None,
            Some(Additional::Bool(_)) => Some(None),
            Some(Additional::Schema(s)) => Some(Some(s)),
        }
    }

    /// The structural schema of a field: its property, else the `additionalProperties` schema.
    pub(crate) fn field_schema(&self, name: &str) -> Option<&Node> {
        self.property(name)
            .or_else(|| self.additional_schema().flatten())
    }

    /// Whether the type list contains `t`.
    pub(crate) fn has_type(&self, t: &str) -> bool {
        self.types.iter().any(|x| x == t)
    }
}

/// Go's regexp compile error text, approximately (`error parsing regexp: ...`).
fn regex_error_text(e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text
        .lines()
        .rev()
        .find(|l| l.starts_with("error: "))
        .map(|l| l.trim_start_matches("error: ").to_string())
        .unwrap_or(text.clone());
    format!("error parsing regexp: {last}")
}
