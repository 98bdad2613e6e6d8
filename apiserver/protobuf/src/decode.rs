//! Protobuf messages → JSON values, driven by the [`super::table`].

use base64::Engine as _;
use serde_json::{Map, Number, Value, json};

use super::ProtobufError;
use super::table::{Field, Label, table};
use super::wire::{WireValue, read_varint, records};

/// The deepest message nesting accepted.
pub const MAX_DEPTH: usize = 64;

const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";
const APIEXT: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1";

/// The decoded `runtime.Unknown` envelope.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Envelope {
    /// `typeMeta.apiVersion`.
    pub api_version: String,
    /// `typeMeta.kind`.
    pub kind: String,
    /// The object's protobuf encoding.
    pub raw: Vec<u8>,
    /// `contentEncoding` (empty: none).
    pub content_encoding: String,
}

fn malformed(msg: String) -> ProtobufError {
    ProtobufError::Malformed(msg)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Decodes a `runtime.Unknown` message.
pub fn unknown(buf: &[u8]) -> Result<Envelope, ProtobufError> {
    let mut env = Envelope::default();
    for (num, value) in records(buf)? {
        match (num, value) {
            (1, WireValue::Bytes(tm)) => {
                for (n, v) in records(tm)? {
                    match (n, v) {
                        (1, WireValue::Bytes(b)) => env.api_version = text(b),
                        (2, WireValue::Bytes(b)) => env.kind = text(b),
                        _ => {}
                    }
                }
            }
            (2, WireValue::Bytes(b)) => env.raw = b.to_vec(),
            (3, WireValue::Bytes(b)) => env.content_encoding = text(b),
            (4, WireValue::Bytes(_)) => {}
            (1..=4, _) => {
                return Err(malformed(format!(
                    "runtime.Unknown field {num} has the wrong wire type"
                )));
            }
            _ => {}
        }
    }
    Ok(env)
}

/// Decodes the message `name` (a full proto name from the table) into JSON.
pub fn message(name: &str, buf: &[u8]) -> Result<Value, ProtobufError> {
    decode_message(name, buf, 0)
}

fn decode_message(name: &str, buf: &[u8], depth: usize) -> Result<Value, ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep(MAX_DEPTH));
    }
    if let Some(v) = special(name, buf, depth)? {
        return Ok(v);
    }
    let Some(msg) = table().messages.get(name) else {
        return Err(malformed(format!("no layout for message {name}")));
    };
    // Gather every record per field: repeated values in order, message fields merged.
    let mut singles: Vec<(u32, &Field, Vec<WireValue<'_>>)> = Vec::new();
    let mut out = Map::new();
    for (num, value) in records(buf)? {
        let Some(field) = msg.fields.get(&num) else {
            continue; // unknown fields are skipped, as the Go decoder does
        };
        match singles.iter_mut().find(|(n, _, _)| *n == num) {
            Some((_, _, vals)) => vals.push(value),
            None => singles.push((num, field, vec![value])),
        }
    }
    if msg.slice {
        let items = match singles.into_iter().next() {
            Some((_, field, vals)) => repeated(field, &vals, depth)?,
            None => Vec::new(),
        };
        return Ok(Value::Array(items));
    }
    singles.sort_by_key(|(n, _, _)| *n);
    for (_, field, vals) in singles {
        let value = match field.label {
            Label::Repeated => Some(Value::Array(repeated(field, &vals, depth)?)),
            Label::Map => Some(Value::Object(map(field, &vals, depth)?)),
            Label::Single => single(field, &vals, depth)?,
        };
        let Some(value) = value else { continue };
        if field.json.is_empty() {
            if let Value::Object(inner) = value {
                out.extend(inner);
            }
            continue;
        }
        out.insert(field.json.clone(), value);
    }
    Ok(Value::Object(out))
}

fn is_message(ty: &str) -> bool {
    ty.contains('.')
}

/// A singular field: the last scalar wins, message occurrences merge. `None` when the JSON
/// encoding would omit it.
fn single(
    field: &Field,
    vals: &[WireValue<'_>],
    depth: usize,
) -> Result<Option<Value>, ProtobufError> {
    if is_message(&field.ty) {
        let mut merged = Vec::new();
        for v in vals {
            match v {
                WireValue::Bytes(b) => merged.extend_from_slice(b),
                _ => return Err(wrong_type(field)),
            }
        }
        return decode_message(&field.ty, &merged, depth + 1).map(Some);
    }
    let Some(last) = vals.last() else {
        return Ok(None);
    };
    let value = scalar(&field.ty, *last, field)?;
    if field.omitempty && !field.pointer && is_zero(&value) {
        return Ok(None);
    }
    Ok(Some(value))
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

fn wrong_type(field: &Field) -> ProtobufError {
    malformed(format!(
        "field {:?} ({}) has the wrong wire type",
        field.json, field.ty
    ))
}

fn repeated(
    field: &Field,
    vals: &[WireValue<'_>],
    depth: usize,
) -> Result<Vec<Value>, ProtobufError> {
    let mut out = Vec::new();
    for v in vals {
        if is_message(&field.ty) {
            match v {
                WireValue::Bytes(b) => out.push(decode_message(&field.ty, b, depth + 1)?),
                _ => return Err(wrong_type(field)),
            }
            continue;
        }
        match (v, field.ty.as_str()) {
            (WireValue::Bytes(_), "string" | "bytes") => out.push(scalar(&field.ty, *v, field)?),
            (WireValue::Bytes(packed), _) => out.extend(unpack(&field.ty, packed, field)?),
            _ => out.push(scalar(&field.ty, *v, field)?),
        }
    }
    Ok(out)
}

/// The elements of a packed repeated scalar.
fn unpack(ty: &str, mut buf: &[u8], field: &Field) -> Result<Vec<Value>, ProtobufError> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let v = match ty {
            "fixed64" | "sfixed64" | "double" => {
                let (head, rest) = buf
                    .split_first_chunk::<8>()
                    .ok_or_else(|| malformed("truncated packed fixed64".into()))?;
                buf = rest;
                WireValue::Fixed64(u64::from_le_bytes(*head))
            }
            "fixed32" | "sfixed32" | "float" => {
                let (head, rest) = buf
                    .split_first_chunk::<4>()
                    .ok_or_else(|| malformed("truncated packed fixed32".into()))?;
                buf = rest;
                WireValue::Fixed32(u32::from_le_bytes(*head))
            }
            _ => {
                let (v, n) = read_varint(buf)?;
                buf = &buf[n..];
                WireValue::Varint(v)
            }
        };
        out.push(scalar(ty, v, field)?);
    }
    Ok(out)
}

fn map(
    field: &Field,
    vals: &[WireValue<'_>],
    depth: usize,
) -> Result<Map<String, Value>, ProtobufError> {
    let mut out = Map::new();
    for v in vals {
        let WireValue::Bytes(entry) = v else {
            return Err(wrong_type(field));
        };
        let mut key = String::new();
        let mut value: Option<Value> = None;
        for (num, ev) in records(entry)? {
            match num {
                1 => {
                    key = match scalar(&field.ty, ev, field)? {
                        Value::String(s) => s,
                        other => other.to_string(),
                    }
                }
                2 => {
                    value = Some(if is_message(&field.value_ty) {
                        match ev {
                            WireValue::Bytes(b) => decode_message(&field.value_ty, b, depth + 1)?,
                            _ => return Err(wrong_type(field)),
                        }
                    } else {
                        scalar(&field.value_ty, ev, field)?
                    });
                }
                _ => {}
            }
        }
        let value = match value {
            Some(v) => v,
            None if is_message(&field.value_ty) => decode_message(&field.value_ty, &[], depth + 1)?,
            None => zero_scalar(&field.value_ty),
        };
        out.insert(key, value);
    }
    Ok(out)
}

fn zero_scalar(ty: &str) -> Value {
    match ty {
        "string" | "bytes" => json!(""),
        "bool" => json!(false),
        _ => json!(0),
    }
}

fn scalar(ty: &str, v: WireValue<'_>, field: &Field) -> Result<Value, ProtobufError> {
    let value = match (ty, v) {
        ("string", WireValue::Bytes(b)) => Value::String(text(b)),
        ("bytes", WireValue::Bytes(b)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        ("bool", WireValue::Varint(x)) => Value::Bool(x != 0),
        ("int32", WireValue::Varint(x)) => json!(x as i64 as i32),
        ("int64", WireValue::Varint(x)) => json!(x as i64),
        ("uint32", WireValue::Varint(x)) => json!(x as u32),
        ("uint64", WireValue::Varint(x)) => json!(x),
        ("sint32", WireValue::Varint(x)) => json!(zigzag(x) as i32),
        ("sint64", WireValue::Varint(x)) => json!(zigzag(x)),
        ("fixed64", WireValue::Fixed64(x)) => json!(x),
        ("sfixed64", WireValue::Fixed64(x)) => json!(x as i64),
        ("fixed32", WireValue::Fixed32(x)) => json!(x),
        ("sfixed32", WireValue::Fixed32(x)) => json!(x as i32),
        ("double", WireValue::Fixed64(x)) => float(f64::from_bits(x)),
        ("float", WireValue::Fixed32(x)) => float(f64::from(f32::from_bits(x))),
        _ => return Err(wrong_type(field)),
    };
    Ok(value)
}

fn zigzag(x: u64) -> i64 {
    ((x >> 1) as i64) ^ -((x & 1) as i64)
}

fn float(f: f64) -> Value {
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

fn last_bytes<'a>(recs: &[(u32, WireValue<'a>)], num: u32) -> Option<&'a [u8]> {
    recs.iter().rev().find_map(|(n, v)| match v {
        WireValue::Bytes(b) if *n == num => Some(*b),
        _ => None,
    })
}

fn last_varint(recs: &[(u32, WireValue<'_>)], num: u32) -> u64 {
    recs.iter()
        .rev()
        .find_map(|(n, v)| match v {
            WireValue::Varint(x) if *n == num => Some(*x),
            _ => None,
        })
        .unwrap_or(0)
}

fn embedded_json(raw: Option<&[u8]>, what: &str) -> Result<Value, ProtobufError> {
    match raw {
        None | Some([]) => Ok(Value::Null),
        Some(b) => serde_json::from_slice(b)
            .map_err(|err| malformed(format!("{what} does not hold JSON: {err}"))),
    }
}

/// Messages with their own JSON form (Time, Quantity, IntOrString, RawExtension, ...).
fn special(name: &str, buf: &[u8], depth: usize) -> Result<Option<Value>, ProtobufError> {
    let Some((pkg, short)) = name.rsplit_once('.') else {
        return Ok(None);
    };
    let recs = || records(buf);
    let value = match (pkg, short) {
        (META, "Time") | (META, "MicroTime") => {
            let r = recs()?;
            let seconds = last_varint(&r, 1) as i64;
            let nanos = last_varint(&r, 2) as i64 as i32;
            time(seconds, nanos, short == "MicroTime")?
        }
        (META, "Duration") => json!(go_duration(last_varint(&recs()?, 1) as i64)),
        (META, "FieldsV1") => embedded_json(last_bytes(&recs()?, 1), "fieldsV1")?,
        ("k8s.io.apimachinery.pkg.api.resource", "Quantity") => {
            json!(last_bytes(&recs()?, 1).map(text).unwrap_or_default())
        }
        ("k8s.io.apimachinery.pkg.util.intstr", "IntOrString") => {
            let r = recs()?;
            if last_varint(&r, 1) == 1 {
                json!(last_bytes(&r, 3).map(text).unwrap_or_default())
            } else {
                json!(last_varint(&r, 2) as i64 as i32)
            }
        }
        ("k8s.io.apimachinery.pkg.runtime", "RawExtension") | (APIEXT, "JSON") => {
            embedded_json(last_bytes(&recs()?, 1), "raw extension")?
        }
        (APIEXT, "JSONSchemaPropsOrBool") => {
            let r = recs()?;
            match last_bytes(&r, 2) {
                Some(schema) => {
                    decode_message(&format!("{APIEXT}.JSONSchemaProps"), schema, depth + 1)?
                }
                None => json!(last_varint(&r, 1) != 0),
            }
        }
        (APIEXT, "JSONSchemaPropsOrArray") => {
            let r = recs()?;
            let props = format!("{APIEXT}.JSONSchemaProps");
            let items: Vec<&[u8]> = r
                .iter()
                .filter_map(|(n, v)| match v {
                    WireValue::Bytes(b) if *n == 2 => Some(*b),
                    _ => None,
                })
                .collect();
            if items.is_empty() {
                match last_bytes(&r, 1) {
                    Some(schema) => decode_message(&props, schema, depth + 1)?,
                    None => Value::Null,
                }
            } else {
                let mut arr = Vec::new();
                for item in items {
                    arr.push(decode_message(&props, item, depth + 1)?);
                }
                Value::Array(arr)
            }
        }
        (APIEXT, "JSONSchemaPropsOrStringArray") => {
            let r = recs()?;
            let strings: Vec<Value> = r
                .iter()
                .filter_map(|(n, v)| match v {
                    WireValue::Bytes(b) if *n == 2 => Some(Value::String(text(b))),
                    _ => None,
                })
                .collect();
            if strings.is_empty() {
                match last_bytes(&r, 1) {
                    Some(schema) => {
                        decode_message(&format!("{APIEXT}.JSONSchemaProps"), schema, depth + 1)?
                    }
                    None => Value::Null,
                }
            } else {
                Value::Array(strings)
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(value))
}

/// RFC 3339 in UTC: whole seconds for Time, six fractional digits for MicroTime; the zero
/// time is `null`.
fn time(seconds: i64, nanos: i32, micro: bool) -> Result<Value, ProtobufError> {
    if seconds == 0 && nanos == 0 {
        return Ok(Value::Null);
    }
    let ts = jiff::Timestamp::new(seconds, if micro { nanos } else { 0 })
        .map_err(|err| malformed(format!("timestamp out of range: {err}")))?;
    let fmt = if micro {
        "%Y-%m-%dT%H:%M:%S.%6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    jiff::fmt::strtime::format(fmt, ts)
        .map(Value::String)
        .map_err(|err| malformed(format!("timestamp out of range: {err}")))
}

/// Go's `time.Duration.String()` of a nanosecond count.
pub fn go_duration(ns: i64) -> String {
    if ns == 0 {
        return "0s".into();
    }
    let neg = ns < 0;
    let u = ns.unsigned_abs();
    let sign = if neg { "-" } else { "" };
    let frac = |value: u64, unit: u64| -> String {
        let whole = value / unit;
        let rest = value % unit;
        if rest == 0 {
            return whole.to_string();
        }
        let width = unit.ilog10() as usize;
        let digits = format!("{rest:0width$}");
        format!("{whole}.{}", digits.trim_end_matches('0'))
    };
    if u < 1_000 {
        return format!("{sign}{u}ns");
    }
    if u < 1_000_000 {
        return format!("{sign}{}µs", frac(u, 1_000));
    }
    if u < 1_000_000_000 {
        return format!("{sign}{}ms", frac(u, 1_000_000));
    }
    let secs_ns = u % 60_000_000_000;
    let total_min = u / 60_000_000_000;
    let (h, m) = (total_min / 60, total_min % 60);
    let s = frac(secs_ns, 1_000_000_000);
    if h > 0 {
        format!("{sign}{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{sign}{m}m{s}s")
    } else {
        format!("{sign}{s}s")
    }
}
