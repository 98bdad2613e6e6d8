//! Value validation against a schema with kube-openapi's semantics and messages, and the
//! conversion of its errors into Status causes (apiextensions' `kubeOpenAPIResultToFieldErrors`).
//!
//! Paths inside messages are kube-openapi paths (`spec.items[0].name`, additional properties as
//! `spec.labels.key`); the `in` of every message is `body`.

use serde_json::Value;

use super::formats;
use super::node::{Additional, Node};
use crate::validation::{BadValue, Cause, go_float, go_json, go_quote};

/// What kind of kube-openapi error this is; decides the cause type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Code {
    InvalidType,
    Required,
    TooLong(i64),
    Enum(Vec<Value>),
    TooMany {
        actual: i64,
        max: i64,
    },
    /// Any other `*errors.Validation`: becomes `FieldValueInvalid`.
    Other,
    /// Not an `*errors.Validation` (composition messages, range errors): reported at the
    /// validation root path with an empty value.
    Plain,
}

/// One kube-openapi validation error.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OpenApiError {
    pub(crate) code: Code,
    /// The kube-openapi path (`Name`), e.g. `spec.replicas` or `.spec` for required.
    pub(crate) name: String,
    pub(crate) value: Option<BadValue>,
    pub(crate) message: String,
}

impl OpenApiError {
    fn new(code: Code, name: &str, value: Option<BadValue>, message: String) -> Self {
        OpenApiError {
            code,
            name: name.to_string(),
            value,
            message,
        }
    }

    fn plain(message: String) -> Self {
        OpenApiError::new(Code::Plain, "", None, message)
    }
}

/// `kubeOpenAPIResultToFieldErrors`: `prefix` is the field path the validation ran at (`None`
/// for a whole object, printed as `<nil>` when a cause has no path of its own).
pub(crate) fn to_causes(errors: Vec<OpenApiError>, prefix: Option<&str>) -> Vec<Cause> {
    errors
        .into_iter()
        .map(|e| {
            let name = e.name.strip_prefix('.').unwrap_or(&e.name);
            let field = match (prefix, e.code == Code::Plain || name.is_empty()) {
                (Some(p), true) => p.to_string(),
                (None, true) => "<nil>".to_string(),
                (Some(p), false) if !p.is_empty() => format!("{p}.{name}"),
                (_, false) => name.to_string(),
            };
            let value = e.value.unwrap_or(BadValue::Str(String::new()));
            match e.code {
                Code::Required => Cause::required(field, ""),
                Code::Enum(values) => {
                    let shown: Vec<String> = values
                        .iter()
                        .map(|v| match v {
                            Value::String(s) => s.clone(),
                            other => go_json(other),
                        })
                        .collect();
                    Cause::not_supported(field, value, &shown)
                }
                Code::TooLong(max) => Cause::too_long(field, max),
                Code::TooMany { actual, max } => Cause::too_many(field, Some(actual), max),
                Code::InvalidType => Cause::type_invalid(field, value, &e.message),
                Code::Other => Cause::invalid(field, value, &e.message),
                Code::Plain => Cause::invalid(field, BadValue::Str(String::new()), &e.message),
            }
        })
        .collect()
}

/// Validate `data` against `node` at kube-openapi path `path`, appending errors to `out`.
///
/// `old` is the correlated value of the previous object on update (validation ratcheting:
/// errors inside a subtree that did not change are dropped).
pub(crate) fn validate_value(
    node: &Node,
    data: &Value,
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<OpenApiError>,
) {
    let start = out.len();
    if data.is_null() {
        type_check(node, data, path, out);
        enum_check(node, data, path, out);
    } else {
        type_check(node, data, path, out);
        schema_props(node, data, old, path, out);
        if let Value::String(s) = data {
            string_check(node, s, path, out);
            format_check(node, s, path, out);
        }
        if let Value::Number(_) = data {
            number_check(node, data, path, out);
        }
        if let Value::Array(a) = data {
            slice_check(node, a, old, path, out);
        }
        enum_check(node, data, path, out);
        if let Value::Object(_) = data {
            object_check(node, data, old, path, out);
        }
    }
    if out.len() > start && old.is_some_and(|o| o == data) {
        out.truncate(start);
    }
}

/// `(type, format)` kube-openapi infers for a decoded JSON value.
fn schema_info(data: &Value) -> (&'static str, &'static str) {
    match data {
        Value::Null => ("null", ""),
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(n) if n.is_i64() => ("integer", "int64"),
        Value::Number(_) => ("number", "float64"),
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
    }
}

/// go-openapi's `IsFloat64AJSONInteger` (swag v0.25, kube 1.35's): within ±(2^53-1), and its
/// nearest integer (halves away from zero), or within a relative 1e-9 of it.
pub(crate) fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0; // 2^53 - 1
    if !(-MAX..=MAX).contains(&f) {
        return false;
    }
    let rounded = f.round();
    if f == rounded {
        return true;
    }
    rounded != 0.0 && (f - rounded).abs() < 1e-9 * rounded.abs()
}

fn as_float(data: &Value) -> f64 {
    data.as_f64().unwrap_or(0.0)
}

fn type_error(path: &str, type_name: &str, found: &str) -> OpenApiError {
    OpenApiError::new(
        Code::InvalidType,
        path,
        Some(BadValue::Str(found.to_string())),
        format!(
            "{path} in body must be of type {type_name}: {}",
            go_quote(found)
        ),
    )
}

fn type_check(node: &Node, data: &Value, path: &str, out: &mut Vec<OpenApiError>) {
    if node.types.is_empty() && node.format.is_empty() {
        return;
    }
    if data.is_null() {
        if !node.types.is_empty() && !node.has_type("null") && !node.nullable {
            out.push(type_error(path, &node.types.join(","), "null"));
        }
        return;
    }
    let (sch_type, fmt) = schema_info(data);
    let is_float_int =
        sch_type == "number" && is_json_integer(as_float(data)) && node.has_type("integer");
    let is_int_float = sch_type == "integer" && node.has_type("number");
    let stringish = matches!(data, Value::String(_) | Value::Array(_));
    let type_matches = node.has_type(sch_type) || is_float_int || is_int_float;
    if !(stringish || node.format.is_empty() || type_matches || fmt == node.format) {
        out.push(type_error(path, &node.format, fmt));
        return;
    }
    let numeric = node.has_type("number") || node.has_type("integer");
    if stringish && !numeric && !node.format.is_empty() {
        return;
    }
    if !type_matches {
        out.push(type_error(path, &node.types.join(","), sch_type));
    }
}

/// Validate against every branch; whether it produced no errors.
fn branch(node: &Node, data: &Value, old: Option<&Value>, path: &str) -> Vec<OpenApiError> {
    let mut errs = Vec::new();
    validate_value(node, data, old, path, &mut errs);
    errs
}

fn schema_props(
    node: &Node,
    data: &Value,
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<OpenApiError>,
) {
    let quoted = go_quote(path);
    if !node.any_of.is_empty() {
        let mut best: Option<Vec<OpenApiError>> = None;
        let mut ok = false;
        for b in &node.any_of {
            let r = branch(b, data, old, path);
            if r.is_empty() {
                ok = true;
                best = None;
                break;
            }
            if best.as_ref().is_none_or(|bst| r.len() < bst.len()) {
                best = Some(r);
            }
        }
        if !ok {
            out.push(OpenApiError::plain(format!(
                "{quoted} must validate at least one schema (anyOf)"
            )));
        }
        if let Some(b) = best {
            out.extend(b);
        }
    }
    if !node.one_of.is_empty() {
        let mut best: Option<Vec<OpenApiError>> = None;
        let mut valid = 0usize;
        for b in &node.one_of {
            let r = branch(b, data, old, path);
            if r.is_empty() {
                valid += 1;
                best = None;
                continue;
            }
            if valid == 0 && best.as_ref().is_none_or(|bst| r.len() < bst.len()) {
                best = Some(r);
            }
        }
        if valid != 1 {
            let extra = if valid == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {valid} valid alternatives")
            };
            out.push(OpenApiError::plain(format!(
                "{quoted} must validate one and only one schema (oneOf). {extra}"
            )));
            if let Some(b) = best {
                out.extend(b);
            }
        }
    }
    if !node.all_of.is_empty() {
        let mut valid = 0usize;
        for b in &node.all_of {
            let r = branch(b, data, old, path);
            if r.is_empty() {
                valid += 1;
            }
            out.extend(r);
        }
        if valid != node.all_of.len() {
            let extra = if valid == 0 { ". None validated" } else { "" };
            out.push(OpenApiError::plain(format!(
                "{quoted} must validate all the schemas (allOf){extra}"
            )));
        }
    }
    if let Some(not) = &node.not
        && branch(not, data, old, path).is_empty()
    {
        out.push(OpenApiError::plain(format!(
            "{quoted} must not validate the schema (not)"
        )));
    }
}

fn string_check(node: &Node, s: &str, path: &str, out: &mut Vec<OpenApiError>) {
    let len = s.chars().count() as i64;
    if let Some(max) = node.max_length
        && len > max
    {
        out.push(OpenApiError::new(
            Code::TooLong(max),
            path,
            Some(BadValue::Str(s.to_string())),
            format!("{path} in body should be at most {max} chars long"),
        ));
        return;
    }
    if let Some(min) = node.min_length
        && len < min
    {
        out.push(OpenApiError::new(
            Code::Other,
            path,
            Some(BadValue::Str(s.to_string())),
            format!("{path} in body should be at least {min} chars long"),
        ));
        return;
    }
    if let Some(p) = &node.pattern {
        let shown = match &p.regex {
            Ok(re) if re.is_match(s) => return,
            Ok(_) => p.source.clone(),
            Err(e) => format!("{}, but pattern is invalid: {e}", p.source),
        };
        out.push(OpenApiError::new(
            Code::Other,
            path,
            Some(BadValue::Str(s.to_string())),
            format!("{path} in body should match '{shown}'"),
        ));
    }
}

fn format_check(node: &Node, s: &str, path: &str, out: &mut Vec<OpenApiError>) {
    if node.format.is_empty() || formats::validates(&node.format, s) {
        return;
    }
    out.push(OpenApiError::new(
        Code::InvalidType,
        path,
        Some(BadValue::Str(s.to_string())),
        format!(
            "{path} in body must be of type {}: {}",
            node.format,
            go_quote(s)
        ),
    ));
}

/// `IsValueValidAgainstRange` with the default format: only `integer` schemas check that the
/// number is an integer that fits in an int64.
fn range_error(
    v: f64,
    is_int: bool,
    type_name: &str,
    prefix: &str,
    path: &str,
) -> Option<OpenApiError> {
    if type_name != "integer" || is_int {
        return None;
    }
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if v == v.trunc() && (-LIMIT..LIMIT).contains(&v) {
        return None;
    }
    Some(OpenApiError::plain(format!(
        "{prefix} value must be of type integer (default format) in {path}"
    )))
}

fn number_check(node: &Node, data: &Value, path: &str, out: &mut Vec<OpenApiError>) {
    let type_name = match node.types.as_slice() {
        [t] if t == "integer" || t == "number" => t.as_str(),
        _ => "",
    };
    let int_data = data.as_i64();
    let f = as_float(data);
    let value = Some(BadValue::from(data));
    if let Some(e) = range_error(f, int_data.is_some(), type_name, "Checked", path) {
        out.push(e);
    }
    let mut multiple = Vec::new();
    let mut minimum = Vec::new();
    let mut maximum = Vec::new();
    if let Some(factor) = node.multiple_of {
        let bad_factor = range_error(factor, false, type_name, "MultipleOf", path);
        match (bad_factor, int_data) {
            (None, Some(i)) => {
                let fi = factor as i64;
                if fi <= 0 {
                    multiple.push(OpenApiError::new(
                        Code::Other,
                        path,
                        Some(BadValue::Int(fi)),
                        format!("factor MultipleOf declared for {path} must be positive: {fi}"),
                    ));
                } else if (i / fi) * fi != i {
                    multiple.push(OpenApiError::new(
                        Code::Other,
                        path,
                        value.clone(),
                        format!("{path} in body should be a multiple of {fi}"),
                    ));
                }
            }
            (bad, _) => {
                multiple.extend(bad);
                if factor <= 0.0 {
                    multiple.push(OpenApiError::new(
                        Code::Other,
                        path,
                        Some(BadValue::Float(factor)),
                        format!(
                            "factor MultipleOf declared for {path} must be positive: {}",
                            go_float(factor)
                        ),
                    ));
                } else {
                    let mult = if factor < 1.0 {
                        1.0 / factor * f
                    } else {
                        f / factor
                    };
                    if !is_json_integer(mult) {
                        multiple.push(OpenApiError::new(
                            Code::Other,
                            path,
                            value.clone(),
                            format!(
                                "{path} in body should be a multiple of {}",
                                go_float(factor)
                            ),
                        ));
                    }
                }
            }
        }
    }
    if let Some(max) = node.maximum {
        let excl = node.exclusive_maximum;
        let bad = range_error(max, false, type_name, "Maximum boundary", path);
        let (fails, shown) = match (&bad, int_data) {
            (None, Some(i)) => {
                let m = max as i64;
                ((!excl && i > m) || (excl && i >= m), m.to_string())
            }
            _ => ((!excl && f > max) || (excl && f >= max), go_float(max)),
        };
        maximum.extend(bad);
        if fails {
            let rel = if excl {
                "less than"
            } else {
                "less than or equal to"
            };
            maximum.push(OpenApiError::new(
                Code::Other,
                path,
                value.clone(),
                format!("{path} in body should be {rel} {shown}"),
            ));
        }
    }
    if let Some(min) = node.minimum {
        let excl = node.exclusive_minimum;
        let bad = range_error(min, false, type_name, "Minimum boundary", path);
        let (fails, shown) = match (&bad, int_data) {
            (None, Some(i)) => {
                let m = min as i64;
                ((!excl && i < m) || (excl && i <= m), m.to_string())
            }
            _ => ((!excl && f < min) || (excl && f <= min), go_float(min)),
        };
        minimum.extend(bad);
        if fails {
            let rel = if excl {
                "greater than"
            } else {
                "greater than or equal to"
            };
            minimum.push(OpenApiError::new(
                Code::Other,
                path,
                value.clone(),
                format!("{path} in body should be {rel} {shown}"),
            ));
        }
    }
    out.extend(multiple);
    out.extend(minimum);
    out.extend(maximum);
}

fn slice_check(
    node: &Node,
    items: &[Value],
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<OpenApiError>,
) {
    if let Some(item_schema) = &node.items {
        for (i, item) in items.iter().enumerate() {
            let old_item = node.correlate_item(item, old);
            validate_value(item_schema, item, old_item, &format!("{path}[{i}]"), out);
        }
    }
    let size = items.len() as i64;
    if let Some(min) = node.min_items
        && size < min
    {
        out.push(OpenApiError::new(
            Code::Other,
            path,
            Some(BadValue::Int(size)),
            format!("{path} in body should have at least {min} items"),
        ));
    }
    if let Some(max) = node.max_items
        && size > max
    {
        out.push(OpenApiError::new(
            Code::TooMany { actual: size, max },
            path,
            Some(BadValue::Int(size)),
            format!("{path} in body should have at most {max} items"),
        ));
    }
    if node.unique_items {
        let dup = items
            .iter()
            .enumerate()
            .any(|(i, a)| items[..i].iter().any(|b| b == a));
        if dup {
            out.push(OpenApiError::new(
                Code::Other,
                path,
                None,
                format!("{path} in body shouldn't contain duplicates"),
            ));
        }
    }
}

/// Equality as kube-openapi's enum check sees it: numbers compare by value.
fn enum_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| enum_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| enum_equal(v, w)))
        }
        (Value::Null, _) | (_, Value::Null) => false,
        _ => a == b,
    }
}

fn enum_check(node: &Node, data: &Value, path: &str, out: &mut Vec<OpenApiError>) {
    let Some(values) = &node.enum_values else {
        return;
    };
    if values.is_empty() || values.iter().any(|v| enum_equal(data, v)) {
        return;
    }
    let shown: Vec<String> = values.iter().map(go_json).collect();
    out.push(OpenApiError::new(
        Code::Enum(values.clone()),
        path,
        Some(BadValue::from(data)),
        format!("{path} in body should be one of [{}]", shown.join(" ")),
    ));
}

fn object_check(
    node: &Node,
    data: &Value,
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<OpenApiError>,
) {
    let Value::Object(map) = data else {
        return;
    };
    let old_map = old.and_then(Value::as_object);
    let n = map.len() as i64;
    if let Some(min) = node.min_properties
        && n < min
    {
        out.push(OpenApiError::new(
            Code::Other,
            path,
            Some(BadValue::Int(n)),
            format!("{path} in body should have at least {min} properties"),
        ));
    }
    if let Some(max) = node.max_properties
        && n > max
    {
        out.push(OpenApiError::new(
            Code::TooMany { actual: n, max },
            path,
            Some(BadValue::Int(n)),
            format!("{path} in body should have at most {max} properties"),
        ));
    }
    match &node.additional {
        Some(Additional::Bool(false)) => {
            for k in map.keys() {
                if node.property(k).is_none() {
                    out.push(OpenApiError::new(
                        Code::Other,
                        path,
                        Some(BadValue::Str(k.clone())),
                        format!("{path}.{k} in body is a forbidden property"),
                    ));
                }
            }
        }
        Some(Additional::Schema(ap)) => {
            for (k, v) in map {
                if node.property(k).is_none() {
                    let old_v = old_map.and_then(|m| m.get(k));
                    validate_value(ap, v, old_v, &format!("{path}.{k}"), out);
                }
            }
        }
        _ => {}
    }
    for (name, prop) in &node.properties {
        if let Some(v) = map.get(name) {
            let child = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            // kube does not ratchet apiVersion and kind at the root.
            let typemeta = path.is_empty() && (name == "kind" || name == "apiVersion");
            let old_v = if typemeta {
                None
            } else {
                old_map.and_then(|m| m.get(name))
            };
            validate_value(prop, v, old_v, &child, out);
        }
    }
    for k in &node.required {
        if !map.contains_key(k) {
            out.push(OpenApiError::new(
                Code::Required,
                &format!("{path}.{k}"),
                None,
                format!("{path}.{k} in body is required"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn causes(schema: Value, data: Value) -> Vec<String> {
        let mut issues = Vec::new();
        let node = Node::parse(&schema, "s", &mut issues);
        let mut errs = Vec::new();
        validate_value(&node, &data, None, "", &mut errs);
        to_causes(errs, None)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn spec(props: Value) -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props}}})
    }

    #[test]
    fn types() {
        let s = spec(
            json!({"replicas": {"type": "integer"}, "ratio": {"type": "number"},
            "name": {"type": "string"}, "on": {"type": "boolean"}, "list": {"type": "array", "items": {"type": "string"}},
            "ios": {"x-kubernetes-int-or-string": true}, "n": {"type": "string", "nullable": true}}),
        );
        let cases = [
            (
                json!({"replicas": "3"}),
                vec![
                    r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#,
                ],
            ),
            (json!({"replicas": 3}), vec![]),
            (json!({"replicas": 3.0}), vec![]),
            (
                json!({"replicas": 1.5}),
                vec![
                    r#"spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer: "number""#,
                    r#"<nil>: Invalid value: "": Checked value must be of type integer (default format) in spec.replicas"#,
                ],
            ),
            (json!({"ratio": 2}), vec![]),
            (
                json!({"name": 5}),
                vec![
                    r#"spec.name: Invalid value: "integer": spec.name in body must be of type string: "integer""#,
                ],
            ),
            (
                json!({"on": "true"}),
                vec![
                    r#"spec.on: Invalid value: "string": spec.on in body must be of type boolean: "string""#,
                ],
            ),
            (
                json!({"list": ["a", 1]}),
                vec![
                    r#"spec.list[1]: Invalid value: "integer": spec.list[1] in body must be of type string: "integer""#,
                ],
            ),
            (
                json!({"name": null}),
                vec![
                    r#"spec.name: Invalid value: "null": spec.name in body must be of type string: "null""#,
                ],
            ),
            (json!({"n": null}), vec![]),
            (json!({"ios": 5}), vec![]),
            (json!({"ios": "5%"}), vec![]),
            (
                json!({"ios": true}),
                vec![
                    r#"spec.ios: Invalid value: "boolean": spec.ios in body must be of type integer,string: "boolean""#,
                ],
            ),
        ];
        for (data, want) in cases {
            assert_eq!(
                causes(s.clone(), json!({"spec": data.clone()})),
                want,
                "{data}"
            );
        }
    }

    #[test]
    fn required_enum_and_strings() {
        let s = json!({"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object",
            "required": ["mode"], "properties": {
                "mode": {"type": "string", "enum": ["A", "B"]},
                "num": {"type": "integer", "enum": [1, 2]},
                "short": {"type": "string", "maxLength": 3},
                "long": {"type": "string", "minLength": 2},
                "pat": {"type": "string", "pattern": "^[a-z]+$"}}}}});
        assert_eq!(causes(s.clone(), json!({})), vec!["spec: Required value"]);
        assert_eq!(
            causes(s.clone(), json!({"spec": {}})),
            vec!["spec.mode: Required value"]
        );
        assert_eq!(
            causes(s.clone(), json!({"spec": {"mode": "x", "num": 3}})),
            vec![
                r#"spec.mode: Unsupported value: "x": supported values: "A", "B""#,
                r#"spec.num: Unsupported value: 3: supported values: "1", "2""#,
            ]
        );
        assert_eq!(
            causes(
                s.clone(),
                json!({"spec": {"mode": "A", "short": "abcd", "long": "a", "pat": "A1"}})
            ),
            vec![
                "spec.short: Too long: may not be more than 3 bytes",
                r#"spec.long: Invalid value: "a": spec.long in body should be at least 2 chars long"#,
                r#"spec.pat: Invalid value: "A1": spec.pat in body should match '^[a-z]+$'"#,
            ]
        );
        assert!(
            causes(
                s,
                json!({"spec": {"mode": "B", "num": 2.0, "short": "äöü", "pat": "ab"}})
            )
            .is_empty()
        );
    }

    #[test]
    fn numbers() {
        let s = spec(json!({
            "i": {"type": "integer", "minimum": 1, "maximum": 10},
            "x": {"type": "integer", "minimum": 0, "exclusiveMinimum": true, "maximum": 10, "exclusiveMaximum": true},
            "f": {"type": "number", "maximum": 1.5, "multipleOf": 0.5},
            "m": {"type": "integer", "multipleOf": 3}}));
        assert_eq!(
            causes(
                s.clone(),
                json!({"spec": {"i": 11, "x": 0, "f": 1.75, "m": 4}})
            ),
            vec![
                "spec.i: Invalid value: 11: spec.i in body should be less than or equal to 10",
                "spec.x: Invalid value: 0: spec.x in body should be greater than 0",
                "spec.f: Invalid value: 1.75: spec.f in body should be a multiple of 0.5",
                "spec.f: Invalid value: 1.75: spec.f in body should be less than or equal to 1.5",
                "spec.m: Invalid value: 4: spec.m in body should be a multiple of 3",
            ]
        );
        assert_eq!(
            causes(s.clone(), json!({"spec": {"i": 0, "x": 10}})),
            vec![
                "spec.i: Invalid value: 0: spec.i in body should be greater than or equal to 1",
                "spec.x: Invalid value: 10: spec.x in body should be less than 10",
            ]
        );
        assert!(causes(s, json!({"spec": {"i": 10, "x": 9, "f": 1.5, "m": 9}})).is_empty());
    }

    #[test]
    fn arrays_and_objects() {
        let s = spec(json!({
            "l": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "integer"}},
            "u": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
            "m": {"type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": {"type": "string"}},
            "closed": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}}));
        assert_eq!(
            causes(
                s.clone(),
                json!({"spec": {"l": [], "u": ["a", "a"], "m": {}, "closed": {"b": 1}}})
            ),
            vec![
                "spec.l: Invalid value: 0: spec.l in body should have at least 1 items",
                r#"spec.u: Invalid value: "": spec.u in body shouldn't contain duplicates"#,
                "spec.m: Invalid value: 0: spec.m in body should have at least 1 properties",
                r#"spec.closed: Invalid value: "b": spec.closed.b in body is a forbidden property"#,
            ]
        );
        assert_eq!(
            causes(
                s,
                json!({"spec": {"l": [1, 2, 3], "m": {"a": "x", "b": 2}}})
            ),
            vec![
                "spec.l: Too many: 3: must have at most 2 items",
                "spec.m: Too many: 2: must have at most 1 items",
                r#"spec.m.b: Invalid value: "integer": spec.m.b in body must be of type string: "integer""#,
            ]
        );
    }

    #[test]
    fn formats_are_enforced_only_when_supported() {
        let s = spec(json!({
            "t": {"type": "string", "format": "date-time"},
            "n": {"type": "integer", "format": "int32"},
            "b": {"type": "string", "format": "byte"}}));
        assert_eq!(
            causes(
                s.clone(),
                json!({"spec": {"t": "yesterday", "n": 99_999_999_999_i64, "b": "!!"}})
            ),
            vec![
                r#"spec.t: Invalid value: "yesterday": spec.t in body must be of type date-time: "yesterday""#,
                r#"spec.b: Invalid value: "!!": spec.b in body must be of type byte: "!!""#,
            ]
        );
        assert_eq!(
            causes(s, json!({"spec": {"t": 5}})),
            vec![
                r#"spec.t: Invalid value: "int64": spec.t in body must be of type date-time: "int64""#
            ]
        );
    }

    #[test]
    fn composition() {
        let s = spec(json!({
            "any": {"type": "string", "anyOf": [{"pattern": "^a"}, {"pattern": "^b"}]},
            "one": {"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 10}]},
            "all": {"type": "integer", "allOf": [{"minimum": 0}, {"maximum": 10}]},
            "not": {"type": "string", "not": {"enum": ["x"]}}}));
        assert!(
            causes(
                s.clone(),
                json!({"spec": {"any": "abc", "all": 5, "one": 20, "not": "y"}})
            )
            .is_empty()
        );
        assert_eq!(
            causes(
                s,
                json!({"spec": {"any": "c", "all": 20, "one": 5, "not": "x"}})
            ),
            vec![
                r#"<nil>: Invalid value: "": "spec.any" must validate at least one schema (anyOf)"#,
                r#"spec.any: Invalid value: "c": spec.any in body should match '^a'"#,
                r#"<nil>: Invalid value: "": "spec.one" must validate one and only one schema (oneOf). Found 2 valid alternatives"#,
                "spec.all: Invalid value: 20: spec.all in body should be less than or equal to 10",
                r#"<nil>: Invalid value: "": "spec.all" must validate all the schemas (allOf)"#,
                r#"<nil>: Invalid value: "": "spec.not" must not validate the schema (not)"#,
            ]
        );
    }

    #[test]
    fn ratcheting_drops_errors_of_unchanged_values() {
        let s = spec(
            json!({"a": {"type": "integer", "maximum": 1}, "b": {"type": "integer", "maximum": 1}}),
        );
        let mut issues = Vec::new();
        let node = Node::parse(&s, "s", &mut issues);
        let old = json!({"spec": {"a": 5, "b": 0}});
        let new = json!({"spec": {"a": 5, "b": 7}});
        let mut errs = Vec::new();
        validate_value(&node, &new, Some(&old), "", &mut errs);
        let c: Vec<String> = to_causes(errs, None)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            c,
            vec!["spec.b: Invalid value: 7: spec.b in body should be less than or equal to 1"]
        );
    }

    #[test]
    fn prefix_paths() {
        let mut issues = Vec::new();
        let node = Node::parse(
            &json!({"type": "object", "properties": {"x": {"type": "integer"}}}),
            "s",
            &mut issues,
        );
        let mut errs = Vec::new();
        validate_value(&node, &json!({"x": "a"}), None, "", &mut errs);
        let c = to_causes(errs, Some("status"));
        assert_eq!(c[0].field, "status.x");
        assert_eq!(
            c[0].message,
            r#"Invalid value: "string": x in body must be of type integer: "string""#
        );
    }

    #[test]
    fn json_integers() {
        assert!(is_json_integer(3.0));
        assert!(is_json_integer(-3.0));
        assert!(!is_json_integer(3.5));
        assert!(is_json_integer(1.0 / 0.1 * 0.3));
        assert!(!is_json_integer(1e300));
        assert!(!is_json_integer(f64::NAN));
        assert!(!is_json_integer(f64::INFINITY));
        // The bounds are ±(2^53-1).
        assert!(is_json_integer(9_007_199_254_740_991.0));
        assert!(!is_json_integer(9_007_199_254_740_992.0));
        assert!(!is_json_integer(-9_007_199_254_740_992.0));
        // Near an integer, relative to the nearest one (rounded half away from zero).
        assert!(is_json_integer(1_000_000_000.5));
        assert!(is_json_integer(-1_000_000_000.5));
        assert!(!is_json_integer(400_000_000.5));
        assert!(is_json_integer(400_000_000.4));
        assert!(!is_json_integer(0.4));
        assert!(!is_json_integer(1e-10));
        assert!(is_json_integer(-0.0));
    }
}
