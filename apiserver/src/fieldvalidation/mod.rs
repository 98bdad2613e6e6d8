//! `fieldValidation`: how unknown and duplicate fields of a request are reported, worded and
//! ordered as kube-apiserver's strict decoding does it.
//!
//! * Create and update bodies: JSON objects are read with their repeated keys
//!   ([`json::Raw`]). Built-in kinds report unknown and duplicate fields interleaved in document
//!   order (`sigs.k8s.io/json` into Go structs); custom resources report every duplicate first,
//!   then the unknown fields pruning and metadata decoding found. YAML bodies report repeated
//!   keys as one `yaml: unmarshal errors:` entry, then the unknown fields in the order of the
//!   converted JSON (sorted keys).
//! * JSON patches and merge patches: the patch document's own strict errors (`json patch …`
//!   for JSON patches, duplicates for merge patches), then the unknown fields of the patched
//!   object; under `Strict` a 422 whose `patch` cause carries the patched object.
//! * Strategic merge patches: the patch's duplicates, then the patched object's unknown fields
//!   sorted; under `Strict` a 422 whose `patch` cause carries the patch as Go prints a map.
//! * Server-side apply: repeated keys of the applied configuration (`error converting YAML to
//!   JSON: yaml: unmarshal errors: …`), see [`apply_duplicates`].
//!
//! `Warn` turns each error into a `Warning: 299 - "…"` header, `Strict` fails the request,
//! `Ignore` drops the fields silently.

pub(crate) mod json;
pub(crate) mod yaml;

use std::fmt;

use serde_json::Value;

use ocm_apiserver_status::{ApiError, Cause};

/// `fieldValidation`: what to do with unknown or duplicate fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them with a `Warning` header (the default).
    Warn,
    /// Fail the request with 400.
    Strict,
}

/// One strict decoding error.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum StrictError {
    /// `unknown field "spec.x"`.
    Unknown(String),
    /// `duplicate field "metadata.name"`.
    Duplicate(String),
    /// Any other text (the YAML duplicate-key report, JSON patch operation errors).
    Other(String),
}

impl fmt::Display for StrictError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StrictError::Unknown(p) => write!(f, "unknown field \"{p}\""),
            StrictError::Duplicate(p) => write!(f, "duplicate field \"{p}\""),
            StrictError::Other(text) => f.write_str(text),
        }
    }
}

/// What a write request's body tells the strict decoding; set by the handlers before the
/// write pipeline decodes the object.
#[derive(Debug, Default)]
pub(crate) enum BodyCheck {
    /// Nothing known about the body (internal writes, protobuf bodies, `Ignore`).
    #[default]
    None,
    /// A JSON object body of a create or update, as written.
    Json(json::Raw),
    /// A YAML object body of a create or update, with its duplicate-key report.
    Yaml(Option<String>),
    /// A JSON patch or merge patch, with the strict errors of the patch document.
    Patch(Vec<StrictError>),
    /// A strategic merge patch: the patch (shown in a strict 422) and its strict errors.
    Strategic {
        /// The decoded patch.
        patch: Value,
        /// Duplicate fields of the patch document.
        errors: Vec<StrictError>,
    },
    /// A server-side apply configuration (its repeated keys are the apply handler's).
    Apply,
}

impl BodyCheck {
    /// Whether the body was a JSON, merge or strategic merge patch.
    pub(crate) fn is_patch(&self) -> bool {
        matches!(self, BodyCheck::Patch(_) | BodyCheck::Strategic { .. })
    }
}

/// Decodes a JSON object body of a create or update: the object a decoder keeps and, unless
/// validation is `Ignore`, the body as written. `typed` is true for built-in kinds (repeated
/// objects merge, as in Go structs).
pub(crate) fn decode_json_body(
    body: &[u8],
    typed: bool,
    validation: FieldValidation,
) -> Result<(Value, BodyCheck), serde_json::Error> {
    let raw = json::parse(body)?;
    let value = raw.to_value(typed);
    if validation == FieldValidation::Ignore || !raw.is_object() {
        return Ok((value, BodyCheck::None));
    }
    Ok((value, BodyCheck::Json(raw)))
}

/// Decodes a YAML object body of a create or update (a repeated key's later value wins) with
/// its duplicate-key report unless validation is `Ignore`.
pub(crate) fn decode_yaml_body(
    text: &str,
    validation: FieldValidation,
) -> Result<(Value, BodyCheck), serde_saphyr::Error> {
    let value = yaml::decode(text)?;
    if validation == FieldValidation::Ignore {
        return Ok((value, BodyCheck::None));
    }
    Ok((value, BodyCheck::Yaml(yaml::duplicate_keys(text))))
}

/// The strict errors of a JSON patch (`Some(ops)`) or merge patch document.
pub(crate) fn patch_errors(body: &[u8], json_patch: bool) -> Vec<StrictError> {
    let Ok(raw) = json::parse(body) else {
        return Vec::new();
    };
    if json_patch {
        json::json_patch_errors(&raw)
            .into_iter()
            .map(StrictError::Other)
            .collect()
    } else {
        json::duplicates(&raw)
    }
}

/// The repeated keys of a server-side apply configuration, worded as kube-apiserver's strict
/// YAML unmarshalling reports them (`error converting YAML to JSON: yaml: unmarshal errors:
/// …`), or `None`.
pub(crate) fn apply_duplicates(body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    yaml::duplicate_keys(text).map(|e| format!("error converting YAML to JSON: {e}"))
}

/// The warnings kube-apiserver makes of a strict decoding error under `Warn`: a YAML
/// duplicate-key report (`[error converting YAML to JSON: ]yaml: unmarshal errors:` and one
/// `line N: key "k" already set in map` per line) becomes one warning per repeated key; any
/// other error is one warning as it stands.
pub(crate) fn yaml_warnings(text: &str) -> Vec<String> {
    let report = text
        .strip_prefix("error converting YAML to JSON: ")
        .unwrap_or(text);
    match report.strip_prefix("yaml: unmarshal errors:\n") {
        Some(lines) => lines
            .split('\n')
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect(),
        None => vec![text.to_owned()],
    }
}

/// kube's answer to a server-side apply whose configuration has fields its kind does not
/// declare (`undeclared`: dotted paths), whatever `fieldValidation` says: the field manager's
/// typed conversion fails with a plain error, so a 500 of no reason,
/// `failed to create typed patch object (<ns>/<name>; <group>/<version>, Kind=<Kind>):
/// .<path>: field not declared in schema` (several as `errors:` and one indented line each).
pub(crate) fn apply_undeclared(
    namespace: &str,
    name: &str,
    api_version: &str,
    kind: &str,
    undeclared: &[String],
) -> ApiError {
    let gv = if api_version.contains('/') {
        api_version.to_owned()
    } else {
        format!("/{api_version}")
    };
    let errors: Vec<String> = undeclared
        .iter()
        .map(|p| format!(".{p}: field not declared in schema"))
        .collect();
    let errors = match errors.as_slice() {
        [one] => one.clone(),
        many => format!("errors:\n  {}", many.join("\n  ")),
    };
    ApiError::new(
        500,
        "",
        format!(
            "failed to create typed patch object ({namespace}/{name}; {gv}, Kind={kind}): {errors}"
        ),
    )
}

/// The object being decoded: its kind and request version, and whether it is a built-in kind
/// (decoded into Go structs) rather than a custom resource.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Subject<'a> {
    /// The kind, e.g. `Deployment`.
    pub kind: &'a str,
    /// The version of the request, e.g. `v1`.
    pub version: &'a str,
    /// Whether the kind is built in.
    pub typed: bool,
}

/// Reports the unknown fields decoding found (`unknown`: dotted paths, in the order the
/// decoding produced them) together with what the body check found, per `validation`:
/// warnings (returned) under `Warn`, an error under `Strict` — for a body kube's 400
/// `<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding error: …`, for a
/// patch its 422. `patched` is the patched object as JSON text (the value of a patch's 422).
pub(crate) fn report(
    validation: FieldValidation,
    check: &BodyCheck,
    unknown: Vec<String>,
    subject: Subject<'_>,
    patched: impl FnOnce() -> String,
) -> Result<Vec<String>, ApiError> {
    if validation == FieldValidation::Ignore {
        return Ok(Vec::new());
    }
    let errors = collect(check, unknown, subject.typed);
    if errors.is_empty() {
        return Ok(Vec::new());
    }
    if validation == FieldValidation::Warn {
        return Ok(errors
            .iter()
            .flat_map(|e| yaml_warnings(&e.to_string()))
            .collect());
    }
    let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
    let message = format!("strict decoding error: {}", texts.join(", "));
    Err(decode_error(check, subject, &message, patched))
}

/// kube's answer when the object written does not decode into its kind: for a create or
/// update the 400 `<Kind> in version "<v>" cannot be handled as a <Kind>: <message>`, for a
/// patch a 422 whose `patch` cause shows the patched object (`patched`, JSON text) or, for a
/// strategic merge patch, the patch.
pub(crate) fn decode_error(
    check: &BodyCheck,
    subject: Subject<'_>,
    message: &str,
    patched: impl FnOnce() -> String,
) -> ApiError {
    if !check.is_patch() {
        let Subject { kind, version, .. } = subject;
        return ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: {message}"
        ));
    }
    let shown = match check {
        BodyCheck::Strategic { patch, .. } => go_format(patch),
        _ => patched(),
    };
    patch_invalid(shown, message)
}

/// kube's 422 for a patch whose result fails strict decoding: an Invalid error of no kind and
/// no name with one `patch` cause.
fn patch_invalid(value: String, detail: &str) -> ApiError {
    let cause = crate::validation::Cause::invalid("patch", value, detail);
    let message = crate::validation::invalid_message("", "", std::slice::from_ref(&cause));
    let converted = Cause::new(
        &format!("{:?}", cause.reason),
        cause.message.clone(),
        cause.field.clone(),
    );
    let mut err = ApiError::invalid("", "", "", "", vec![converted]);
    err.message = message;
    err
}

fn collect(check: &BodyCheck, unknown: Vec<String>, typed: bool) -> Vec<StrictError> {
    let unknown_errors = |paths: Vec<String>| paths.into_iter().map(StrictError::Unknown);
    let mut errors: Vec<StrictError> = match check {
        BodyCheck::Json(raw) if typed => json::typed_errors(raw, &unknown),
        BodyCheck::Json(raw) => {
            let mut errors = json::duplicates(raw);
            errors.extend(unknown_errors(unknown));
            errors
        }
        BodyCheck::Yaml(dups) => {
            let mut errors: Vec<StrictError> =
                dups.iter().cloned().map(StrictError::Other).collect();
            let mut unknown = unknown;
            if typed {
                sort_walk_order(&mut unknown);
            }
            errors.extend(unknown_errors(unknown));
            errors
        }
        BodyCheck::Patch(found) => {
            let mut errors = found.clone();
            errors.extend(unknown_errors(unknown));
            errors
        }
        BodyCheck::Strategic { errors: found, .. } => {
            let mut sorted: Vec<StrictError> = unknown_errors(unknown).collect();
            sorted.sort_by_key(ToString::to_string);
            let mut errors = found.clone();
            errors.extend(sorted);
            errors
        }
        BodyCheck::None | BodyCheck::Apply => {
            let mut unknown = unknown;
            unknown.sort();
            unknown_errors(unknown).collect()
        }
    };
    let mut seen = std::collections::HashSet::new();
    errors.retain(|e| seen.insert(e.clone()));
    errors
}

/// One step of a dotted field path.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Key(String),
    Index(usize),
}

/// `spec.list[2].name` as steps.
fn steps(path: &str) -> Vec<Step> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (key, rest) = part.split_once('[').unwrap_or((part, ""));
        out.push(Step::Key(key.to_owned()));
        for index in rest.split('[') {
            if let Ok(i) = index.trim_end_matches(']').parse() {
                out.push(Step::Index(i));
            }
        }
    }
    out
}

/// Orders paths as a walk over objects with sorted keys meets them (Go encodes maps with
/// sorted keys, so that is the order of fields after kube's YAML-to-JSON conversion).
fn sort_walk_order(paths: &mut [String]) {
    paths.sort_by_cached_key(|p| steps(p));
}

/// A decoded JSON value as Go's `fmt` prints it with `%+v` (`map[a:1 b:[x y]]`).
pub(crate) fn go_format(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => crate::validation::go_float(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(go_format).collect();
            format!("[{}]", inner.join(" "))
        }
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let inner: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{k}:{}", go_format(v)))
                .collect();
            format!("map[{}]", inner.join(" "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_unknown_fields_follow_sorted_keys() {
        let mut paths = vec![
            "spec.b".to_owned(),
            "metadata.z".to_owned(),
            "spec.a-c".to_owned(),
            "spec.a.b".to_owned(),
            "spec.l[10].x".to_owned(),
            "spec.l[2].x".to_owned(),
        ];
        sort_walk_order(&mut paths);
        assert_eq!(
            paths,
            [
                "metadata.z",
                "spec.a.b",
                "spec.a-c",
                "spec.b",
                "spec.l[2].x",
                "spec.l[10].x"
            ]
        );
    }

    #[test]
    fn go_map_formatting() {
        let v = json!({"spec": {"foo": 1, "bar": [true, null, 1.5, "x"]}, "a": {}});
        assert_eq!(
            go_format(&v),
            "map[a:map[] spec:map[bar:[true <nil> 1.5 x] foo:1]]"
        );
    }

    #[test]
    fn strict_reports() {
        let raw = json::parse(br#"{"metadata":{"name":"a","name":"a"},"spec":{"foo":1}}"#).unwrap();
        let check = BodyCheck::Json(raw);
        let unknown = vec!["spec.foo".to_owned()];
        let subject = Subject {
            kind: "Deployment",
            version: "v1",
            typed: true,
        };
        let err = report(
            FieldValidation::Strict,
            &check,
            unknown.clone(),
            subject,
            String::new,
        )
        .unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: duplicate field \"metadata.name\", unknown field \"spec.foo\""
        );
        let warnings = report(
            FieldValidation::Warn,
            &check,
            unknown.clone(),
            subject,
            String::new,
        )
        .unwrap();
        assert_eq!(
            warnings,
            [
                "duplicate field \"metadata.name\"",
                "unknown field \"spec.foo\""
            ]
        );
        let patch = BodyCheck::Patch(Vec::new());
        let err = report(FieldValidation::Strict, &patch, unknown, subject, || {
            "{\"spec\":{\"foo\":1}}".to_owned()
        })
        .unwrap_err();
        assert_eq!(err.code, 422);
        assert_eq!(
            err.message,
            " \"\" is invalid: patch: Invalid value: \"{\\\"spec\\\":{\\\"foo\\\":1}}\": strict decoding error: unknown field \"spec.foo\""
        );
    }
}
