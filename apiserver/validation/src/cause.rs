//! The `details.causes` entries of a Status, formatted like apimachinery's `field.Error`.

use std::fmt::{self, Write as _};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `reason` of a Status cause (`metav1.CauseType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CauseType {
    /// A referenced value was not found.
    FieldValueNotFound,
    /// A required value is missing.
    FieldValueRequired,
    /// A value that must be unique is duplicated.
    FieldValueDuplicate,
    /// A value is invalid.
    FieldValueInvalid,
    /// A value is not one of the supported values.
    FieldValueNotSupported,
    /// A value is not allowed here.
    FieldValueForbidden,
    /// A value is too long.
    FieldValueTooLong,
    /// A list or map has too many items.
    FieldValueTooMany,
    /// The server failed while validating.
    InternalError,
    /// A value has the wrong type.
    FieldValueTypeInvalid,
    /// Server-side apply: another field manager owns the field.
    FieldManagerConflict,
}

impl CauseType {
    /// The human text apimachinery prints for this cause type ("Invalid value", ...).
    pub fn text(self) -> &'static str {
        match self {
            CauseType::FieldValueNotFound => "Not found",
            CauseType::FieldValueRequired => "Required value",
            CauseType::FieldValueDuplicate => "Duplicate value",
            CauseType::FieldValueInvalid | CauseType::FieldValueTypeInvalid => "Invalid value",
            CauseType::FieldValueNotSupported => "Unsupported value",
            CauseType::FieldValueForbidden => "Forbidden",
            CauseType::FieldValueTooLong => "Too long",
            CauseType::FieldValueTooMany => "Too many",
            CauseType::InternalError => "Internal error",
            CauseType::FieldManagerConflict => "Conflict",
        }
    }
}

/// The offending value of a field error, printed the way Go's `field.Error` prints it.
#[derive(Debug, Clone, PartialEq)]
pub enum BadValue {
    /// A string, printed quoted (`"x"`).
    Str(String),
    /// An integer, printed bare.
    Int(i64),
    /// A float, printed like Go's `%v`.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// No value (Go's `nil`), printed as `null` (its JSON).
    Null,
    /// A compound value, printed as compact JSON (the way Go's `encoding/json` prints it).
    Json(Value),
    /// A string slice, printed as its JSON (`["a","b"]`), as kube 1.35's field errors print
    /// a value that is not a string or a number.
    StringList(Vec<String>),
    /// A value already printed the way kube-apiserver prints it (Go's `%#v` of a struct).
    Printed(String),
    /// No value is printed.
    Omit,
}

impl BadValue {
    /// The printed form, or `None` when the value is omitted.
    pub fn render(&self) -> Option<String> {
        match self {
            BadValue::Str(s) => Some(go_quote(s)),
            BadValue::Int(i) => Some(i.to_string()),
            BadValue::Float(f) => Some(go_float(*f)),
            BadValue::Bool(b) => Some(b.to_string()),
            BadValue::Null => Some("null".to_string()),
            BadValue::Json(v) => Some(go_json(v)),
            BadValue::StringList(items) => Some(go_json(&Value::Array(
                items.iter().map(|s| Value::String(s.clone())).collect(),
            ))),
            BadValue::Printed(s) => Some(s.clone()),
            BadValue::Omit => None,
        }
    }
}

impl From<&Value> for BadValue {
    fn from(v: &Value) -> Self {
        match v {
            Value::Null => BadValue::Null,
            Value::Bool(b) => BadValue::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => BadValue::Int(i),
                None => BadValue::Float(n.as_f64().unwrap_or(0.0)),
            },
            Value::String(s) => BadValue::Str(s.clone()),
            Value::Array(_) | Value::Object(_) => BadValue::Json(v.clone()),
        }
    }
}

impl From<&str> for BadValue {
    fn from(s: &str) -> Self {
        BadValue::Str(s.to_string())
    }
}

impl From<String> for BadValue {
    fn from(s: String) -> Self {
        BadValue::Str(s)
    }
}

impl From<&String> for BadValue {
    fn from(s: &String) -> Self {
        BadValue::Str(s.clone())
    }
}

impl From<i64> for BadValue {
    fn from(i: i64) -> Self {
        BadValue::Int(i)
    }
}

impl From<bool> for BadValue {
    fn from(b: bool) -> Self {
        BadValue::Bool(b)
    }
}

/// One entry of a Status's `details.causes`: `{reason, message, field}`.
///
/// `message` is what apimachinery calls the error *body* (`Invalid value: "x": detail`); the
/// whole error as printed in the Status message is `field: message` (see [`fmt::Display`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cause {
    /// Machine-readable cause type.
    pub reason: CauseType,
    /// Human-readable description, without the field path.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The field path, e.g. `metadata.name` or `spec.containers[0].image`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

impl Cause {
    fn with_value(
        reason: CauseType,
        field: impl Into<String>,
        value: BadValue,
        detail: &str,
    ) -> Cause {
        let mut message = reason.text().to_string();
        if let Some(v) = value.render() {
            message.push_str(": ");
            message.push_str(&v);
        }
        if !detail.is_empty() {
            message.push_str(": ");
            message.push_str(detail);
        }
        Cause {
            reason,
            message,
            field: field.into(),
        }
    }

    fn without_value(reason: CauseType, field: impl Into<String>, detail: &str) -> Cause {
        Cause::with_value(reason, field, BadValue::Omit, detail)
    }

    /// `Invalid value: <value>: <detail>` (`field.Invalid`).
    pub fn invalid(field: impl Into<String>, value: impl Into<BadValue>, detail: &str) -> Cause {
        Cause::with_value(CauseType::FieldValueInvalid, field, value.into(), detail)
    }

    /// `Invalid value: <value>: <detail>` with reason `FieldValueTypeInvalid`.
    pub fn type_invalid(
        field: impl Into<String>,
        value: impl Into<BadValue>,
        detail: &str,
    ) -> Cause {
        Cause::with_value(
            CauseType::FieldValueTypeInvalid,
            field,
            value.into(),
            detail,
        )
    }

    /// `Required value[: <detail>]` (`field.Required`).
    pub fn required(field: impl Into<String>, detail: &str) -> Cause {
        Cause::without_value(CauseType::FieldValueRequired, field, detail)
    }

    /// `Forbidden: <detail>` (`field.Forbidden`).
    pub fn forbidden(field: impl Into<String>, detail: &str) -> Cause {
        Cause::without_value(CauseType::FieldValueForbidden, field, detail)
    }

    /// `Unsupported value: <value>: supported values: "a", "b"` (`field.NotSupported`).
    pub fn not_supported<S: AsRef<str>>(
        field: impl Into<String>,
        value: impl Into<BadValue>,
        supported: &[S],
    ) -> Cause {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s.as_ref())).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Cause::with_value(
            CauseType::FieldValueNotSupported,
            field,
            value.into(),
            &detail,
        )
    }

    /// `Too long: may not be more than <max> bytes` (`field.TooLong`).
    pub fn too_long(field: impl Into<String>, max: i64) -> Cause {
        let detail = if max >= 0 {
            format!("may not be more than {max} bytes")
        } else {
            "value is too long".to_string()
        };
        Cause::without_value(CauseType::FieldValueTooLong, field, &detail)
    }

    /// `Too many: <actual>: must have at most <max> items` (`field.TooMany`).
    pub fn too_many(field: impl Into<String>, actual: Option<i64>, max: i64) -> Cause {
        let detail = if max >= 0 {
            format!("must have at most {max} items")
        } else {
            "has too many items".to_string()
        };
        let value = actual
            .filter(|a| *a >= 0)
            .map_or(BadValue::Omit, BadValue::Int);
        Cause::with_value(CauseType::FieldValueTooMany, field, value, &detail)
    }

    /// `Duplicate value: <value>` (`field.Duplicate`).
    pub fn duplicate(field: impl Into<String>, value: impl Into<BadValue>) -> Cause {
        Cause::with_value(CauseType::FieldValueDuplicate, field, value.into(), "")
    }

    /// `Not found: <value>` (`field.NotFound`).
    pub fn not_found(field: impl Into<String>, value: impl Into<BadValue>) -> Cause {
        Cause::with_value(CauseType::FieldValueNotFound, field, value.into(), "")
    }

    /// `Internal error: <detail>` (`field.InternalError`).
    pub fn internal(field: impl Into<String>, detail: &str) -> Cause {
        Cause::without_value(CauseType::InternalError, field, detail)
    }

    /// The same cause with `prefix.` put in front of its field path.
    pub fn prefixed(mut self, prefix: &str) -> Cause {
        if !prefix.is_empty() {
            self.field = if self.field.is_empty() || self.field == "<nil>" {
                prefix.to_string()
            } else if self.field.starts_with('[') {
                format!("{prefix}{}", self.field)
            } else {
                format!("{prefix}.{}", self.field)
            };
        }
        self
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// The message of a 422 Invalid Status, as `errors.NewInvalid` builds it:
/// `Widget.example.com "w1" is invalid: [spec.a: Invalid value: ..., spec.b: Required value]`.
///
/// `qualified_kind` is `Kind` for the core group and `Kind.group` otherwise.
pub fn invalid_message(qualified_kind: &str, name: &str, causes: &[Cause]) -> String {
    let mut out = format!("{qualified_kind} {} is invalid", go_quote(name));
    let mut seen: Vec<String> = Vec::new();
    for c in causes {
        let s = c.to_string();
        if !seen.contains(&s) {
            seen.push(s);
        }
    }
    match seen.len() {
        0 => {}
        1 => {
            out.push_str(": ");
            out.push_str(&seen[0]);
        }
        _ => {
            out.push_str(": [");
            out.push_str(&seen.join(", "));
            out.push(']');
        }
    }
    out
}

/// A string quoted like Go's `strconv.Quote` (`%q`).
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if is_go_printable(c) => out.push(c),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// Approximates Go's `unicode.IsPrint`: graphic characters and the ASCII space.
pub fn is_go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    // Format characters, private use, surrogates and unassigned code points are not printable
    // in Go; we cover the common format characters.
    !matches!(c as u32, 0xad | 0x600..=0x605 | 0x200b..=0x200f | 0x2028..=0x202e | 0x2060..=0x206f | 0xfeff | 0xfff9..=0xfffb | 0xe000..=0xf8ff)
}

/// A float printed like Go's `%v` (`strconv.FormatFloat(f, 'g', -1, 64)` with the exponent
/// threshold of 6 digits for the shortest representation): `1.5`, `100`, `1e+06`, `1e-05`.
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "-1.2345e-7".
    let sci = format!("{f:e}");
    let (mantissa, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if !(-4..6).contains(&exp) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let _ = write!(out, "{:02}", exp.abs());
    } else if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let int_len = (exp + 1) as usize;
        if digits.len() <= int_len {
            out.push_str(&digits);
            for _ in digits.len()..int_len {
                out.push('0');
            }
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
    }
    out
}

/// A JSON value encoded the way Go's `json.Marshal` encodes an `interface{}`: object keys
/// sorted, `<`, `>` and `&` escaped, floats without a trailing `.0`.
pub fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_go_json(v, &mut out);
    out
}

fn write_go_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if n.is_f64() {
                out.push_str(&go_json_float(n.as_f64().unwrap_or(0.0)));
            } else {
                out.push_str(&n.to_string());
            }
        }
        Value::String(s) => write_go_json_string(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(item, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json_string(k, out);
                out.push(':');
                if let Some(item) = m.get(*k) {
                    write_go_json(item, out);
                }
            }
            out.push('}');
        }
    }
}

fn write_go_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Go's JSON float encoding (`null` for what JSON cannot hold).
fn go_json_float(f: f64) -> String {
    if !f.is_finite() {
        return "null".to_string();
    }
    ocm_apiserver_json::go_float64(f)
}

/// `base.name` (or `name` at the root), like `field.Path.Child`.
pub fn child(base: &str, name: &str) -> String {
    if base.is_empty() {
        name.to_string()
    } else {
        format!("{base}.{name}")
    }
}

/// `base[i]`, like `field.Path.Index`.
pub fn index(base: &str, i: usize) -> String {
    format!("{base}[{i}]")
}

/// `base[key]`, like `field.Path.Key`.
pub fn key(base: &str, k: &str) -> String {
    format!("{base}[{k}]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_quote_matches_strconv_quote() {
        let cases = [
            ("abc", r#""abc""#),
            ("a\"b", r#""a\"b""#),
            ("a\\b", r#""a\\b""#),
            ("a\nb\tc", r#""a\nb\tc""#),
            ("\u{1}", r#""\x01""#),
            ("\u{7f}", r#""\x7f""#),
            ("héllo", r#""héllo""#),
            ("\u{200b}", r#""\u200b""#),
            ("", r#""""#),
        ];
        for (input, want) in cases {
            assert_eq!(go_quote(input), want, "input {input:?}");
        }
    }

    #[test]
    fn go_float_matches_percent_v() {
        let cases = [
            (1.5, "1.5"),
            (100.0, "100"),
            (123456.0, "123456"),
            (1_000_000.0, "1e+06"),
            (1_234_567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.25, "-2.25"),
            (0.0, "0"),
            (1e21, "1e+21"),
            (0.1, "0.1"),
        ];
        for (input, want) in cases {
            assert_eq!(go_float(input), want, "input {input}");
        }
    }

    #[test]
    fn cause_bodies_match_field_error_bodies() {
        let cases = [
            (
                Cause::invalid("metadata.name", "A", "bad"),
                "metadata.name: Invalid value: \"A\": bad",
            ),
            (
                Cause::required("metadata.name", "name or generateName is required"),
                "metadata.name: Required value: name or generateName is required",
            ),
            (Cause::required("spec", ""), "spec: Required value"),
            (
                Cause::forbidden("metadata.namespace", "not allowed on this type"),
                "metadata.namespace: Forbidden: not allowed on this type",
            ),
            (
                Cause::not_supported("spec.mode", "x", &["A", "B"]),
                "spec.mode: Unsupported value: \"x\": supported values: \"A\", \"B\"",
            ),
            (
                Cause::too_long("metadata.annotations", 262144),
                "metadata.annotations: Too long: may not be more than 262144 bytes",
            ),
            (
                Cause::too_many("spec.items", Some(4), 3),
                "spec.items: Too many: 4: must have at most 3 items",
            ),
            (
                Cause::duplicate("spec.items[1]", &json!({"name": "a"})),
                "spec.items[1]: Duplicate value: {\"name\":\"a\"}",
            ),
            (
                Cause::invalid(
                    "metadata.generation",
                    -1_i64,
                    "must be greater than or equal to 0",
                ),
                "metadata.generation: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                Cause::invalid("x", &Value::Null, "d"),
                "x: Invalid value: null: d",
            ),
        ];
        for (cause, want) in cases {
            assert_eq!(cause.to_string(), want);
        }
    }

    #[test]
    fn go_json_matches_encoding_json() {
        let v = json!({"b": 1.0, "a": [1, 2.5, "x<y"], "c": null, "d": 1e-7, "e": 1e21});
        assert_eq!(
            go_json(&v),
            r#"{"a":[1,2.5,"x\u003cy"],"b":1,"c":null,"d":1e-7,"e":1e+21}"#
        );
        assert_eq!(
            BadValue::StringList(vec!["a".into(), "b".into()])
                .render()
                .unwrap(),
            r#"["a","b"]"#
        );
    }

    #[test]
    fn cause_serializes_to_status_cause_wire_shape() {
        let c = Cause::required("spec.x", "");
        assert_eq!(
            serde_json::to_value(&c).unwrap(),
            json!({"reason": "FieldValueRequired", "message": "Required value", "field": "spec.x"})
        );
        let back: Cause = serde_json::from_value(json!({"reason": "FieldValueInvalid"})).unwrap();
        assert_eq!(back.reason, CauseType::FieldValueInvalid);
        assert_eq!(back.field, "");
    }

    #[test]
    fn invalid_message_aggregates_like_apimachinery() {
        let a = Cause::required("spec.a", "");
        let b = Cause::invalid("spec.b", 5_i64, "too big");
        assert_eq!(
            invalid_message("Widget.example.com", "w1", &[]),
            "Widget.example.com \"w1\" is invalid"
        );
        assert_eq!(
            invalid_message("ConfigMap", "c", std::slice::from_ref(&a)),
            "ConfigMap \"c\" is invalid: spec.a: Required value"
        );
        assert_eq!(
            invalid_message("ConfigMap", "c", &[a.clone(), b, a]),
            "ConfigMap \"c\" is invalid: [spec.a: Required value, spec.b: Invalid value: 5: too big]"
        );
    }

    #[test]
    fn prefixed_joins_paths() {
        assert_eq!(
            Cause::required("a.b", "").prefixed("status").field,
            "status.a.b"
        );
        assert_eq!(
            Cause::required("[0]", "").prefixed("items").field,
            "items[0]"
        );
        assert_eq!(
            Cause::required("<nil>", "").prefixed("status").field,
            "status"
        );
        assert_eq!(Cause::required("a", "").prefixed("").field, "a");
    }
}
