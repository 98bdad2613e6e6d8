//! JSON values → protobuf messages, driven by the [`super::table`], writing what Go's
//! generated marshalers write: fields in number order; non-pointer scalars and embedded
//! structs always (their zero value when the JSON omits them); pointers, `[]byte`, repeated
//! fields and maps only when set; map entries sorted by key; repeated scalars unpacked.

use base64::Engine as _;
use serde_json::{Map, Value};

use super::table::{Field, Label, table};

/// The deepest message nesting encoded.
pub const MAX_DEPTH: usize = 64;

const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";
const APIEXT: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1";
const SCHEMA_PROPS: &str =
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";

/// Why an object could not be encoded as protobuf.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EncodeError {
    /// The table has no layout for this message.
    #[error("no protobuf layout for message {0}")]
    UnknownMessage(String),
    /// A JSON value does not have the shape its field needs.
    #[error("field {field:?} of {message}: {problem}")]
    WrongShape {
        /// The message holding the field.
        message: String,
        /// The field's JSON name.
        field: String,
        /// What is wrong with the value.
        problem: String,
    },
    /// The object nests deeper than [`MAX_DEPTH`].
    #[error("object nesting exceeds {0} levels")]
    TooDeep(usize),
}

/// Appends a varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_key(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire_type));
}

/// Appends a length-delimited field.
pub fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_key(out, number, 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn put_int(out: &mut Vec<u8>, number: u32, v: u64) {
    put_key(out, number, 0);
    put_varint(out, v);
}

/// Encodes `value` as the message `name` (a full proto name from the table).
pub fn message(name: &str, value: &Value) -> Result<Vec<u8>, EncodeError> {
    let mut out = Vec::new();
    encode_message(name, value, 0, &mut out)?;
    Ok(out)
}

/// Where a value is written: the message and field (for errors) and the nesting depth.
struct At<'a> {
    message: &'a str,
    field: &'a str,
    depth: usize,
}

impl At<'_> {
    fn err(&self, problem: impl Into<String>) -> EncodeError {
        EncodeError::WrongShape {
            message: self.message.to_owned(),
            field: self.field.to_owned(),
            problem: problem.into(),
        }
    }
}

fn encode_message(
    name: &str,
    value: &Value,
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    if depth > MAX_DEPTH {
        return Err(EncodeError::TooDeep(MAX_DEPTH));
    }
    if special(name, value, depth, out)? {
        return Ok(());
    }
    let msg = table()
        .messages
        .get(name)
        .ok_or_else(|| EncodeError::UnknownMessage(name.to_owned()))?;
    if msg.slice {
        // A `[]string` alias: `repeated string items = 1`.
        let at = At {
            message: name,
            field: "items",
            depth,
        };
        for item in as_array(value, &at)? {
            put_bytes(out, 1, as_str(item, &at)?.as_bytes());
        }
        return Ok(());
    }
    let empty = Map::new();
    let object = match value {
        Value::Object(o) => o,
        Value::Null => &empty,
        other => {
            return Err(EncodeError::WrongShape {
                message: name.to_owned(),
                field: String::new(),
                problem: format!("expected an object, found {}", kind_of(other)),
            });
        }
    };
    let mut fields: Vec<(&u32, &Field)> = msg.fields.iter().collect();
    fields.sort_by_key(|(n, _)| **n);
    for (number, field) in fields {
        let at = At {
            message: name,
            field: &field.json,
            depth,
        };
        if field.json.is_empty() {
            // An inlined embedded struct reads the same JSON object.
            let mut inner = Vec::new();
            encode_message(&field.ty, value, depth + 1, &mut inner)?;
            put_bytes(out, *number, &inner);
            continue;
        }
        let v = object.get(&field.json).filter(|v| !v.is_null());
        match field.label {
            Label::Repeated => {
                let Some(v) = v else { continue };
                for item in as_array(v, &at)? {
                    if item.is_null() && !is_message(&field.ty) {
                        continue;
                    }
                    put_value(*number, &field.ty, item, &at, out)?;
                }
            }
            Label::Map => {
                let Some(v) = v else { continue };
                for entry in map_entries(field, v, &at)? {
                    put_bytes(out, *number, &entry);
                }
            }
            Label::Single => match v {
                Some(v) => put_value(*number, &field.ty, v, &at, out)?,
                // Go writes non-pointer fields even when zero; pointers and nil `[]byte` not.
                None if field.pointer || field.ty == "bytes" => {}
                None => put_value(*number, &field.ty, &Value::Null, &at, out)?,
            },
        }
    }
    Ok(())
}

fn is_message(ty: &str) -> bool {
    ty.contains('.')
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn as_array<'v>(v: &'v Value, at: &At<'_>) -> Result<&'v Vec<Value>, EncodeError> {
    v.as_array()
        .ok_or_else(|| at.err(format!("expected an array, found {}", kind_of(v))))
}

fn as_str<'v>(v: &'v Value, at: &At<'_>) -> Result<&'v str, EncodeError> {
    v.as_str()
        .ok_or_else(|| at.err(format!("expected a string, found {}", kind_of(v))))
}

/// Writes one value of type `ty` as field `number` (`null` writes the zero value).
fn put_value(
    number: u32,
    ty: &str,
    v: &Value,
    at: &At<'_>,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    if is_message(ty) {
        let mut inner = Vec::new();
        encode_message(ty, v, at.depth + 1, &mut inner)?;
        put_bytes(out, number, &inner);
        return Ok(());
    }
    match ty {
        "string" => {
            let s = if v.is_null() { "" } else { as_str(v, at)? };
            put_bytes(out, number, s.as_bytes());
        }
        "bytes" => {
            let s = if v.is_null() { "" } else { as_str(v, at)? };
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|err| at.err(format!("invalid base64: {err}")))?;
            put_bytes(out, number, &bytes);
        }
        "bool" => {
            let b = match v {
                Value::Null => false,
                Value::Bool(b) => *b,
                other => {
                    return Err(at.err(format!("expected a boolean, found {}", kind_of(other))));
                }
            };
            put_int(out, number, u64::from(b));
        }
        "double" | "float" => {
            let f = if v.is_null() {
                0.0
            } else {
                v.as_f64()
                    .ok_or_else(|| at.err(format!("expected a number, found {}", kind_of(v))))?
            };
            if ty == "double" {
                put_key(out, number, 1);
                out.extend_from_slice(&f.to_le_bytes());
            } else {
                put_key(out, number, 5);
                out.extend_from_slice(&(f as f32).to_le_bytes());
            }
        }
        "int32" | "int64" | "uint32" | "uint64" | "sint32" | "sint64" | "fixed32" | "fixed64"
        | "sfixed32" | "sfixed64" => {
            let n = if v.is_null() { 0 } else { integer(v, at)? };
            put_integer(number, ty, n, out);
        }
        other => return Err(at.err(format!("unsupported scalar type {other}"))),
    }
    Ok(())
}

/// A JSON number as a 64-bit two's-complement integer (unsigned values above `i64::MAX`
/// keep their bits).
fn integer(v: &Value, at: &At<'_>) -> Result<u64, EncodeError> {
    if let Some(i) = v.as_i64() {
        return Ok(i as u64);
    }
    if let Some(u) = v.as_u64() {
        return Ok(u);
    }
    match v.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(f as i64 as u64),
        _ => Err(at.err(format!("expected an integer, found {v}"))),
    }
}

fn put_integer(number: u32, ty: &str, n: u64, out: &mut Vec<u8>) {
    match ty {
        "sint32" | "sint64" => {
            let i = n as i64;
            put_int(out, number, ((i << 1) ^ (i >> 63)) as u64);
        }
        "fixed64" | "sfixed64" => {
            put_key(out, number, 1);
            out.extend_from_slice(&n.to_le_bytes());
        }
        "fixed32" | "sfixed32" => {
            put_key(out, number, 5);
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
        "uint32" => put_int(out, number, u64::from(n as u32)),
        // int32 is sign-extended to 64 bits, as Go's `uint64(int32)` does.
        "int32" => put_int(out, number, i64::from(n as i32) as u64),
        _ => put_int(out, number, n),
    }
}

/// A map field's entry messages `{key = 1, value = 2}`, in sorted key order.
fn map_entries(field: &Field, v: &Value, at: &At<'_>) -> Result<Vec<Vec<u8>>, EncodeError> {
    let object = v
        .as_object()
        .ok_or_else(|| at.err(format!("expected an object, found {}", kind_of(v))))?;
    let mut pairs: Vec<(&String, &Value)> = object.iter().collect();
    pairs.sort_by_key(|(key, _)| *key);
    let mut entries = Vec::with_capacity(pairs.len());
    for (key, value) in pairs {
        let mut entry = Vec::new();
        let key_value = match field.ty.as_str() {
            "string" => Value::String(key.clone()),
            _ => key
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| at.err(format!("map key {key:?} is not an integer")))?,
        };
        put_value(1, &field.ty, &key_value, at, &mut entry)?;
        // A nil `[]byte` value is left out of its entry, as Go does.
        if !(value.is_null() && field.value_ty == "bytes") {
            put_value(2, &field.value_ty, value, at, &mut entry)?;
        }
        entries.push(entry);
    }
    Ok(entries)
}

/// Messages with their own JSON form; `false` when `name` is an ordinary message.
fn special(name: &str, v: &Value, depth: usize, out: &mut Vec<u8>) -> Result<bool, EncodeError> {
    let Some((pkg, short)) = name.rsplit_once('.') else {
        return Ok(false);
    };
    let at = At {
        message: name,
        field: "",
        depth,
    };
    match (pkg, short) {
        (META, "Time") | (META, "MicroTime") => {
            if let Some((seconds, nanos)) = timestamp(v, short == "MicroTime", &at)? {
                put_int(out, 1, seconds as u64);
                put_int(out, 2, i64::from(nanos) as u64);
            }
        }
        (META, "Duration") => {
            let ns = match v {
                Value::Null => 0,
                other => parse_go_duration(as_str(other, &at)?)
                    .ok_or_else(|| at.err(format!("invalid duration {other}")))?,
            };
            put_int(out, 1, ns as u64);
        }
        (META, "FieldsV1")
        | ("k8s.io.apimachinery.pkg.runtime", "RawExtension")
        | (APIEXT, "JSON") => {
            if !v.is_null() {
                let raw = ocm_apiserver_json::to_vec(v).map_err(|err| at.err(err.to_string()))?;
                put_bytes(out, 1, &raw);
            }
        }
        ("k8s.io.apimachinery.pkg.api.resource", "Quantity") => {
            let text = match v {
                Value::Null => "0".to_owned(),
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                other => {
                    return Err(at.err(format!("expected a quantity, found {}", kind_of(other))));
                }
            };
            put_bytes(out, 1, text.as_bytes());
        }
        ("k8s.io.apimachinery.pkg.util.intstr", "IntOrString") => {
            let (kind, int, text) = match v {
                Value::Null => (0, 0, ""),
                Value::String(s) => (1, 0, s.as_str()),
                other => (0, integer(other, &at)?, ""),
            };
            put_int(out, 1, kind);
            put_int(out, 2, i64::from(int as i32) as u64);
            put_bytes(out, 3, text.as_bytes());
        }
        (APIEXT, "JSONSchemaPropsOrBool") => match v {
            Value::Bool(b) => put_int(out, 1, u64::from(*b)),
            Value::Null => put_int(out, 1, 0),
            schema => {
                put_int(out, 1, 1);
                put_value(2, SCHEMA_PROPS, schema, &at, out)?;
            }
        },
        (APIEXT, "JSONSchemaPropsOrArray" | "JSONSchemaPropsOrStringArray") => match v {
            Value::Null => {}
            Value::Array(items) => {
                let ty = if short == "JSONSchemaPropsOrArray" {
                    SCHEMA_PROPS
                } else {
                    "string"
                };
                for item in items {
                    put_value(2, ty, item, &at, out)?;
                }
            }
            schema => put_value(1, SCHEMA_PROPS, schema, &at, out)?,
        },
        _ => return Ok(false),
    }
    Ok(true)
}

/// A JSON timestamp as (seconds, nanos); `None` for the zero time (`null`). `Time` keeps
/// whole seconds (Go's `ProtoTime` drops the nanoseconds), `MicroTime` microseconds.
fn timestamp(v: &Value, micro: bool, at: &At<'_>) -> Result<Option<(i64, i32)>, EncodeError> {
    let text = match v {
        Value::Null => return Ok(None),
        other => as_str(other, at)?,
    };
    if text.is_empty() {
        return Ok(None);
    }
    let ts: jiff::Timestamp = text
        .parse()
        .map_err(|err| at.err(format!("invalid timestamp {text:?}: {err}")))?;
    let nanos = if micro {
        ts.subsec_nanosecond() / 1_000 * 1_000
    } else {
        0
    };
    Ok(Some((ts.as_second(), nanos)))
}

/// Parses Go's `time.ParseDuration` syntax into nanoseconds.
pub fn parse_go_duration(text: &str) -> Option<i64> {
    let (neg, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += number * scale;
    }
    if total > i64::MAX as f64 {
        return None;
    }
    let ns = total.round() as i64;
    Some(if neg { -ns } else { ns })
}

/// `runtime.Unknown{typeMeta{apiVersion, kind}, raw, contentEncoding: "", contentType: ""}`,
/// as kube's protobuf serializer wraps every object.
pub fn unknown(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::new();
    put_bytes(&mut type_meta, 1, api_version.as_bytes());
    put_bytes(&mut type_meta, 2, kind.as_bytes());
    let mut out = Vec::with_capacity(raw.len() + type_meta.len() + 16);
    put_bytes(&mut out, 1, &type_meta);
    put_bytes(&mut out, 2, raw);
    put_bytes(&mut out, 3, b"");
    put_bytes(&mut out, 4, b"");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn varints_match_the_wire_format() {
        let mut out = Vec::new();
        put_varint(&mut out, 150);
        assert_eq!(out, [0x96, 0x01]);
        out.clear();
        put_varint(&mut out, (-1i64) as u64);
        assert_eq!(out.len(), 10);
    }

    #[test]
    fn durations_parse_as_go_does() {
        assert_eq!(parse_go_duration("0s"), Some(0));
        assert_eq!(parse_go_duration("1h2m3.5s"), Some(3_723_500_000_000));
        assert_eq!(parse_go_duration("-1.5µs"), Some(-1_500));
        assert_eq!(parse_go_duration("90s"), Some(90_000_000_000));
        assert_eq!(parse_go_duration("1x"), None);
        assert_eq!(parse_go_duration(""), None);
    }

    #[test]
    fn non_pointer_scalars_are_written_when_zero_and_pointers_are_not() {
        // ObjectReference: every field a non-pointer string.
        let bytes = message("k8s.io.api.core.v1.ObjectReference", &json!({})).unwrap();
        assert_eq!(
            bytes,
            [
                0x0a, 0, 0x12, 0, 0x1a, 0, 0x22, 0, 0x2a, 0, 0x32, 0, 0x3a, 0
            ]
        );
        // Secret: data absent, type always, immutable (a pointer) only when set.
        let bytes = message("k8s.io.api.core.v1.Secret", &json!({"immutable": false})).unwrap();
        assert!(bytes.ends_with(&[0x1a, 0, 0x28, 0]), "{bytes:?}");
        let bytes = message("k8s.io.api.core.v1.Secret", &json!({})).unwrap();
        assert!(bytes.ends_with(&[0x1a, 0]), "{bytes:?}");
    }

    #[test]
    fn maps_are_sorted_and_times_keep_whole_seconds() {
        let bytes = message(
            "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            &json!({"labels": {"b": "2", "a": "1"}, "creationTimestamp": "2023-11-14T22:13:20Z"}),
        )
        .unwrap();
        let a = bytes.windows(3).position(|w| w == [0x0a, 1, b'a']);
        let b = bytes.windows(3).position(|w| w == [0x0a, 1, b'b']);
        assert!(a < b, "{bytes:?}");
        // creationTimestamp (8): seconds 1700000000, nanos 0.
        let mut time = vec![0x08];
        put_varint(&mut time, 1_700_000_000);
        time.extend_from_slice(&[0x10, 0]);
        let mut field = vec![0x42, time.len() as u8];
        field.extend_from_slice(&time);
        assert!(bytes.windows(field.len()).any(|w| w == field.as_slice()));
    }

    #[test]
    fn wrong_shapes_are_errors_not_panics() {
        let err = message("k8s.io.api.core.v1.ConfigMap", &json!({"data": "x"})).unwrap_err();
        assert!(matches!(err, EncodeError::WrongShape { .. }), "{err}");
        let err = message("k8s.io.api.core.v1.Nope", &json!({})).unwrap_err();
        assert_eq!(
            err,
            EncodeError::UnknownMessage("k8s.io.api.core.v1.Nope".into())
        );
    }

    #[test]
    fn the_envelope_names_the_kind() {
        let env = unknown("v1", "Status", b"x");
        let decoded = super::super::decode::unknown(&env).unwrap();
        assert_eq!(decoded.api_version, "v1");
        assert_eq!(decoded.kind, "Status");
        assert_eq!(decoded.raw, b"x");
        assert!(env.ends_with(&[0x1a, 0, 0x22, 0]));
    }
}
