//! The protobuf encoding of a Swagger 2.0 document as the `openapi.v2.Document` message of
//! gnostic (`openapiv2/OpenAPIv2.proto`), which client-go's `OpenAPISchema()` asks for and
//! kubectl's client-side validation and apply read.
//!
//! Only what kube-apiserver's documents use is encoded: the document's info, paths,
//! definitions and security; operations with their parameters and responses; schemas with
//! their validations. Vendor extensions (`x-…`) and free values (`default`, `enum`,
//! `example`) become `Any` messages whose `yaml` is the value's JSON text, which YAML readers
//! accept. As in proto3, zero scalars are left out.

use serde_json::{Map, Value};

/// How a JSON member is encoded.
#[derive(Debug, Clone, Copy)]
enum Scalar {
    /// `string`.
    Str,
    /// `repeated string` from an array of strings.
    Strs,
    /// `bool`.
    Bool,
    /// `double`.
    Double,
    /// `int64`.
    Int,
    /// `Any` (the value as YAML).
    Any,
}

use Scalar::{Any, Bool, Double, Int, Str, Strs};

/// The validations schemas and parameters both carry in one run of fields, in field order.
const VALIDATIONS: [(Scalar, &str); 10] = [
    (Double, "maximum"),
    (Bool, "exclusiveMaximum"),
    (Double, "minimum"),
    (Bool, "exclusiveMinimum"),
    (Int, "maxLength"),
    (Int, "minLength"),
    (Str, "pattern"),
    (Int, "maxItems"),
    (Int, "minItems"),
    (Bool, "uniqueItems"),
];

/// A protobuf message being written.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            // Truncation keeps the low seven bits, the point of the mask.
            self.0.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u32, wire_type: u64) {
        self.varint((u64::from(field) << 3) | wire_type);
    }

    fn bytes(&mut self, field: u32, data: &[u8]) {
        self.key(field, 2);
        self.varint(data.len() as u64);
        self.0.extend_from_slice(data);
    }

    /// A string field; empty strings are the default and left out.
    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    fn message(&mut self, field: u32, m: Msg) {
        self.bytes(field, &m.0);
    }

    /// Member `key` of `obj`, if present, as field `field` encoded as `kind`; zero scalars
    /// and empty strings are left out, as proto3 does.
    fn member(&mut self, field: u32, kind: Scalar, obj: &Map<String, Value>, key: &str) {
        let Some(v) = obj.get(key) else {
            return;
        };
        match kind {
            Scalar::Str => self.string(field, v.as_str().unwrap_or("")),
            Scalar::Strs => {
                for s in v.as_array().into_iter().flatten().filter_map(Value::as_str) {
                    self.bytes(field, s.as_bytes());
                }
            }
            Scalar::Bool => {
                if v.as_bool() == Some(true) {
                    self.key(field, 0);
                    self.varint(1);
                }
            }
            Scalar::Double => {
                if let Some(d) = v.as_f64().filter(|d| *d != 0.0) {
                    self.key(field, 1);
                    self.0.extend_from_slice(&d.to_le_bytes());
                }
            }
            Scalar::Int => {
                if let Some(i) = v.as_i64().filter(|i| *i != 0) {
                    self.key(field, 0);
                    // Two's complement, as protobuf encodes negative int64 values.
                    self.varint(i as u64);
                }
            }
            Scalar::Any => self.message(field, any(v)),
        }
    }

    /// The members of `obj` named in a field table: (field number, encoding, JSON key).
    fn members(&mut self, obj: &Map<String, Value>, table: &[(u32, Scalar, &str)]) {
        for &(field, kind, key) in table {
            self.member(field, kind, obj, key);
        }
    }

    /// The validations kept in one run of fields by both schemas and parameters: `maximum`
    /// at `first`, then `exclusiveMaximum`, `minimum`, `exclusiveMinimum`, `maxLength`,
    /// `minLength`, `pattern`, `maxItems`, `minItems` and `uniqueItems`.
    fn validations(&mut self, first: u32, obj: &Map<String, Value>) {
        for (field, &(kind, key)) in (first..).zip(VALIDATIONS.iter()) {
            self.member(field, kind, obj, key);
        }
    }

    /// The vendor extensions of `obj` as repeated `NamedAny`.
    fn extensions(&mut self, field: u32, obj: &Map<String, Value>) {
        for (name, value) in obj.iter().filter(|(k, _)| k.starts_with("x-")) {
            self.message(field, named(name, any(value)));
        }
    }
}

/// `Any { yaml }`.
fn any(v: &Value) -> Msg {
    let mut m = Msg::default();
    m.string(2, &format!("{v}\n"));
    m
}

/// A `Named…` message: `{ name = 1, value = 2 }`.
fn named(name: &str, value: Msg) -> Msg {
    let mut m = Msg::default();
    m.string(1, name);
    m.message(2, value);
    m
}

fn empty() -> Map<String, Value> {
    Map::new()
}

/// The elements of the array `obj[key]` (none if it is absent or not an array).
fn elements<'a>(obj: &'a Map<String, Value>, key: &str) -> impl Iterator<Item = &'a Value> {
    obj.get(key).and_then(Value::as_array).into_iter().flatten()
}

fn object(v: &Value) -> &Map<String, Value> {
    static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(empty);
    v.as_object().unwrap_or(&EMPTY)
}

/// The `openapi.v2.Document` encoding of a Swagger 2.0 JSON document.
pub(crate) fn document(doc: &Value) -> Vec<u8> {
    let d = object(doc);
    let mut m = Msg::default();
    m.member(1, Str, d, "swagger");
    if let Some(info) = d.get("info") {
        m.message(2, self::info(object(info)));
    }
    m.members(
        d,
        &[
            (3, Str, "host"),
            (4, Str, "basePath"),
            (5, Strs, "schemes"),
            (6, Strs, "consumes"),
            (7, Strs, "produces"),
        ],
    );
    if let Some(paths) = d.get("paths") {
        m.message(8, self::paths(object(paths)));
    }
    if let Some(defs) = d.get("definitions") {
        let mut defs_msg = Msg::default();
        for (name, s) in object(defs) {
            defs_msg.message(1, named(name, schema(s)));
        }
        m.message(9, defs_msg);
    }
    for requirement in elements(d, "security") {
        m.message(12, security_requirement(object(requirement)));
    }
    if let Some(defs) = d.get("securityDefinitions") {
        let mut defs_msg = Msg::default();
        for (name, def) in object(defs) {
            defs_msg.message(1, named(name, security_definition(object(def))));
        }
        m.message(13, defs_msg);
    }
    m.extensions(16, d);
    m.0
}

fn info(i: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    m.members(
        i,
        &[
            (1, Str, "title"),
            (2, Str, "version"),
            (3, Str, "description"),
        ],
    );
    m.extensions(7, i);
    m
}

fn security_requirement(r: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    for (name, scopes) in r {
        let mut array = Msg::default();
        for scope in scopes.as_array().into_iter().flatten() {
            array.string(1, scope.as_str().unwrap_or(""));
        }
        m.message(1, named(name, array));
    }
    m
}

/// `SecurityDefinitionsItem`: basic authentication (1) or an API key (2).
fn security_definition(d: &Map<String, Value>) -> Msg {
    let mut inner = Msg::default();
    let mut item = Msg::default();
    if d.get("type").and_then(Value::as_str) == Some("basic") {
        inner.members(d, &[(1, Str, "type"), (2, Str, "description")]);
        inner.extensions(3, d);
        item.message(1, inner);
    } else {
        inner.members(
            d,
            &[
                (1, Str, "type"),
                (2, Str, "name"),
                (3, Str, "in"),
                (4, Str, "description"),
            ],
        );
        inner.extensions(5, d);
        item.message(2, inner);
    }
    item
}

fn paths(p: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    m.extensions(1, p);
    for (path, item) in p.iter().filter(|(k, _)| !k.starts_with("x-")) {
        m.message(2, named(path, path_item(object(item))));
    }
    m
}

fn path_item(p: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    m.member(1, Str, p, "$ref");
    for (field, method) in [
        (2, "get"),
        (3, "put"),
        (4, "post"),
        (5, "delete"),
        (6, "options"),
        (7, "head"),
        (8, "patch"),
    ] {
        if let Some(op) = p.get(method) {
            m.message(field, operation(object(op)));
        }
    }
    for param in elements(p, "parameters") {
        m.message(9, parameters_item(object(param)));
    }
    m.extensions(10, p);
    m
}

fn operation(o: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    m.members(
        o,
        &[
            (1, Strs, "tags"),
            (2, Str, "summary"),
            (3, Str, "description"),
            (5, Str, "operationId"),
            (6, Strs, "produces"),
            (7, Strs, "consumes"),
        ],
    );
    for param in elements(o, "parameters") {
        m.message(8, parameters_item(object(param)));
    }
    if let Some(responses) = o.get("responses") {
        m.message(9, self::responses(object(responses)));
    }
    m.members(o, &[(10, Strs, "schemes"), (11, Bool, "deprecated")]);
    m.extensions(13, o);
    m
}

/// `JsonReference { _ref = 1, description = 2 }`.
fn json_reference(r: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    m.members(r, &[(1, Str, "$ref"), (2, Str, "description")]);
    m
}

/// `ParametersItem`: a parameter (1) or a reference (2).
fn parameters_item(p: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    if p.contains_key("$ref") {
        m.message(2, json_reference(p));
        return m;
    }
    let mut parameter = Msg::default();
    if p.get("in").and_then(Value::as_str) == Some("body") {
        let mut b = Msg::default();
        b.members(
            p,
            &[
                (1, Str, "description"),
                (2, Str, "name"),
                (3, Str, "in"),
                (4, Bool, "required"),
            ],
        );
        if let Some(s) = p.get("schema") {
            b.message(5, schema(s));
        }
        b.extensions(6, p);
        parameter.message(1, b);
    } else {
        parameter.message(2, non_body_parameter(p));
    }
    m.message(1, parameter);
    m
}

/// `NonBodyParameter`: header (1), formData (2), query (3) or path (4). Query and formData
/// carry `allowEmptyValue` (5), which shifts their later fields by one.
fn non_body_parameter(p: &Map<String, Value>) -> Msg {
    let (which, shift) = match p.get("in").and_then(Value::as_str) {
        Some("header") => (1, 0),
        Some("formData") => (2, 1),
        Some("path") => (4, 0),
        _ => (3, 1),
    };
    let mut s = Msg::default();
    s.members(
        p,
        &[
            (1, Bool, "required"),
            (2, Str, "in"),
            (3, Str, "description"),
            (4, Str, "name"),
        ],
    );
    if shift == 1 {
        s.member(5, Bool, p, "allowEmptyValue");
    }
    s.members(
        p,
        &[
            (5 + shift, Str, "type"),
            (6 + shift, Str, "format"),
            (8 + shift, Str, "collectionFormat"),
            (9 + shift, Any, "default"),
        ],
    );
    s.validations(10 + shift, p);
    for v in elements(p, "enum") {
        s.message(20 + shift, any(v));
    }
    s.member(21 + shift, Double, p, "multipleOf");
    s.extensions(22 + shift, p);
    let mut m = Msg::default();
    m.message(which, s);
    m
}

fn responses(r: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    for (code, response) in r.iter().filter(|(k, _)| !k.starts_with("x-")) {
        let response = object(response);
        let mut value = Msg::default();
        if response.contains_key("$ref") {
            value.message(2, json_reference(response));
        } else {
            let mut resp = Msg::default();
            resp.member(1, Str, response, "description");
            if let Some(s) = response.get("schema") {
                let mut item = Msg::default();
                item.message(1, schema(s));
                resp.message(2, item);
            }
            resp.extensions(5, response);
            value.message(1, resp);
        }
        m.message(1, named(code, value));
    }
    m.extensions(2, r);
    m
}

/// `Schema`.
fn schema(v: &Value) -> Msg {
    let s = object(v);
    let mut m = Msg::default();
    m.members(
        s,
        &[
            (1, Str, "$ref"),
            (2, Str, "format"),
            (3, Str, "title"),
            (4, Str, "description"),
            (5, Any, "default"),
            (6, Double, "multipleOf"),
        ],
    );
    m.validations(7, s);
    m.members(
        s,
        &[
            (17, Int, "maxProperties"),
            (18, Int, "minProperties"),
            (19, Strs, "required"),
        ],
    );
    for e in elements(s, "enum") {
        m.message(20, any(e));
    }
    match s.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            // A oneof member is present even when false.
            let mut item = Msg::default();
            item.key(2, 0);
            item.varint(u64::from(*b));
            m.message(21, item);
        }
        Some(sub @ Value::Object(_)) => {
            let mut item = Msg::default();
            item.message(1, schema(sub));
            m.message(21, item);
        }
        _ => {}
    }
    match s.get("type") {
        Some(Value::String(t)) => {
            let mut item = Msg::default();
            item.string(1, t);
            m.message(22, item);
        }
        Some(Value::Array(_)) => {
            let mut item = Msg::default();
            item.member(1, Strs, s, "type");
            m.message(22, item);
        }
        _ => {}
    }
    match s.get("items") {
        Some(sub @ Value::Object(_)) => {
            let mut item = Msg::default();
            item.message(1, schema(sub));
            m.message(23, item);
        }
        Some(Value::Array(subs)) => {
            let mut item = Msg::default();
            for sub in subs {
                item.message(1, schema(sub));
            }
            m.message(23, item);
        }
        _ => {}
    }
    for sub in elements(s, "allOf") {
        m.message(24, schema(sub));
    }
    if let Some(props) = s.get("properties") {
        let mut p = Msg::default();
        for (name, sub) in object(props) {
            p.message(1, named(name, schema(sub)));
        }
        m.message(25, p);
    }
    m.members(
        s,
        &[
            (26, Str, "discriminator"),
            (27, Bool, "readOnly"),
            (30, Any, "example"),
        ],
    );
    m.extensions(31, s);
    m
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use ocm_apiserver_protobuf::wire::{WireValue, records};

    fn fields(buf: &[u8]) -> Vec<(u32, WireValue<'_>)> {
        records(buf).unwrap()
    }

    fn bytes<'a>(recs: &[(u32, WireValue<'a>)], field: u32) -> Vec<&'a [u8]> {
        recs.iter()
            .filter_map(|(f, v)| match v {
                WireValue::Bytes(b) if *f == field => Some(*b),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn document_layout() {
        let doc = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.35.0"},
            "paths": {"/api/v1/configmaps": {"get": {"operationId": "list", "parameters": [
                {"name": "fieldValidation", "in": "query", "type": "string", "uniqueItems": true}
            ], "x-kubernetes-action": "list"}}},
            "definitions": {"io.k8s.api.core.v1.ConfigMap": {
                "type": "object",
                "properties": {"data": {"type": "object", "additionalProperties": {"type": "string"}}},
                "x-kubernetes-group-version-kind": [{"group": "", "kind": "ConfigMap", "version": "v1"}],
            }},
        });
        let buf = document(&doc);
        let top = fields(&buf);
        assert_eq!(bytes(&top, 1), vec![b"2.0".as_slice()]);
        // definitions → NamedSchema → name, Schema { type, properties, vendor_extension }
        let defs = fields(bytes(&top, 9)[0]);
        let named = fields(bytes(&defs, 1)[0]);
        assert_eq!(
            bytes(&named, 1),
            vec![b"io.k8s.api.core.v1.ConfigMap".as_slice()]
        );
        let schema = fields(bytes(&named, 2)[0]);
        let type_item = fields(bytes(&schema, 22)[0]);
        assert_eq!(bytes(&type_item, 1), vec![b"object".as_slice()]);
        let ext = fields(bytes(&schema, 31)[0]);
        assert_eq!(
            bytes(&ext, 1),
            vec![b"x-kubernetes-group-version-kind".as_slice()]
        );
        let any = fields(bytes(&ext, 2)[0]);
        assert_eq!(
            bytes(&any, 2),
            vec![b"[{\"group\":\"\",\"kind\":\"ConfigMap\",\"version\":\"v1\"}]\n".as_slice()]
        );
        // paths → NamedPathItem → PathItem.get → Operation.parameters → query sub-schema name
        let paths = fields(bytes(&top, 8)[0]);
        let item = fields(bytes(&fields(bytes(&paths, 2)[0]), 2)[0]);
        let op = fields(bytes(&item, 2)[0]);
        let param = fields(bytes(&fields(bytes(&op, 8)[0]), 1)[0]);
        let query = fields(bytes(&fields(bytes(&param, 2)[0]), 3)[0]);
        assert_eq!(bytes(&query, 4), vec![b"fieldValidation".as_slice()]);
        assert_eq!(bytes(&query, 6), vec![b"string".as_slice()]);
        assert!(query.contains(&(20, WireValue::Varint(1))));
    }

    #[test]
    fn varints() {
        let mut m = Msg::default();
        m.varint(300);
        assert_eq!(m.0, vec![0xac, 0x02]);
    }
}
