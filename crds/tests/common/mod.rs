//! Helpers shared by the ocm-api integration tests: loading example objects, typed round
//! trips, and validating objects against the generated CRD schemas with a JSON-schema
//! validator.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Map, Value};

/// Folder holding the example objects.
pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/examples")
}

/// One example object with the file it came from.
#[derive(Debug, Clone)]
pub struct Example {
    /// File and document index, for messages.
    pub origin: String,
    /// The object.
    pub value: Value,
}

impl Example {
    /// `apiVersion` of the object.
    pub fn api_version(&self) -> &str {
        self.value["apiVersion"].as_str().unwrap_or_default()
    }

    /// `kind` of the object.
    pub fn kind(&self) -> &str {
        self.value["kind"].as_str().unwrap_or_default()
    }

    /// API group part of `apiVersion`.
    pub fn group(&self) -> &str {
        self.api_version()
            .rsplit_once('/')
            .map(|(g, _)| g)
            .unwrap_or("")
    }
}

/// Every YAML document in every `*.yaml` file under `examples/<sub>` (sorted by file name).
pub fn load(sub: &str) -> Vec<Example> {
    let dir = examples_dir().join(sub);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
            .unwrap_or_else(|e| panic!("parsing {}: {e}", file.display()));
        for (i, value) in docs.into_iter().enumerate() {
            if value.is_null() {
                continue;
            }
            out.push(Example {
                origin: format!("{}#{}", file.file_name().unwrap().to_string_lossy(), i),
                value,
            });
        }
    }
    out
}

/// Valid examples of one API group.
pub fn valid_examples_of_group(group: &str) -> Vec<Example> {
    load("valid")
        .into_iter()
        .filter(|e| e.group() == group)
        .collect()
}

/// Deserializes the example into `K`, serializes it back and asserts that the JSON value is
/// unchanged: no dropped fields, no invented ones.
pub fn assert_roundtrip<K: DeserializeOwned + Serialize>(example: &Example) {
    let typed: K = serde_json::from_value(example.value.clone())
        .unwrap_or_else(|e| panic!("{}: does not deserialize: {e}", example.origin));
    let back = serde_json::to_value(&typed).unwrap();
    if back != example.value {
        let mut diffs = Vec::new();
        diff("", &example.value, &back, &mut diffs);
        panic!(
            "{}: round trip changed the object:\n{}",
            example.origin,
            diffs.join("\n")
        );
    }
}

fn diff(path: &str, want: &Value, got: &Value, out: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                match b.get(k) {
                    Some(w) => diff(&format!("{path}.{k}"), v, w, out),
                    None => out.push(format!("  dropped {path}.{k}")),
                }
            }
            for k in b.keys().filter(|k| !a.contains_key(*k)) {
                out.push(format!("  invented {path}.{k} = {}", b[k]));
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                diff(&format!("{path}[{i}]"), v, w, out);
            }
        }
        _ if want != got => out.push(format!("  changed {path}: {want} -> {got}")),
        _ => {}
    }
}

/// Every CRD ocm-rs generates (hub and klusterlet), generated once per test binary.
pub fn all_crds() -> &'static [CustomResourceDefinition] {
    static CRDS: std::sync::OnceLock<Vec<CustomResourceDefinition>> = std::sync::OnceLock::new();
    CRDS.get_or_init(|| {
        let mut crds = ocm_api::crds::hub();
        crds.extend(ocm_api::crds::klusterlet());
        crds
    })
}

/// The CRD serving `apiVersion`/`kind`, with the version's openAPIV3Schema as JSON.
pub fn schema_for(api_version: &str, kind: &str) -> Option<Value> {
    let (group, version) = api_version.rsplit_once('/')?;
    all_crds().iter().find_map(|crd| {
        if crd.spec.group != group || crd.spec.names.kind != kind {
            return None;
        }
        let v = crd.spec.versions.iter().find(|v| v.name == version)?;
        let schema = v.schema.as_ref()?.open_api_v3_schema.as_ref()?;
        Some(serde_json::to_value(schema).unwrap())
    })
}

/// Turns a Kubernetes structural schema into a JSON Schema the validator understands, made
/// strict: objects without `x-kubernetes-preserve-unknown-fields` reject unknown fields (the
/// API server would silently prune them, which would hide a misspelt field in an example).
pub fn to_json_schema(k8s: &Value) -> Value {
    let Value::Object(map) = k8s else {
        return k8s.clone();
    };
    let mut out = Map::new();
    let nullable = map
        .get("nullable")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let preserve = map
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    for (k, v) in map {
        match k.as_str() {
            "properties" => {
                let props = v
                    .as_object()
                    .map(|p| {
                        p.iter()
                            .map(|(n, s)| (n.clone(), to_json_schema(s)))
                            .collect()
                    })
                    .unwrap_or_default();
                out.insert(k.clone(), Value::Object(props));
            }
            "items" | "additionalProperties" if v.is_object() => {
                out.insert(k.clone(), to_json_schema(v));
            }
            "allOf" | "anyOf" | "oneOf" => {
                let list = v
                    .as_array()
                    .map(|l| l.iter().map(to_json_schema).collect())
                    .unwrap_or_default();
                out.insert(k.clone(), Value::Array(list));
            }
            "not" => {
                out.insert(k.clone(), to_json_schema(v));
            }
            "nullable" | "format" => {}
            k if k.starts_with("x-kubernetes-") => {}
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    let is_object = out.get("type").and_then(Value::as_str) == Some("object");
    if is_object
        && !preserve
        && out.contains_key("properties")
        && !out.contains_key("additionalProperties")
    {
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    if let (true, Some(Value::String(t))) = (nullable, out.get("type").cloned()) {
        out.insert("type".into(), serde_json::json!([t, "null"]));
    }
    Value::Object(out)
}

/// Validates an object against its CRD's schema. `Err` lists every violation.
pub fn validate(example: &Example) -> Result<(), Vec<String>> {
    let schema = schema_for(example.api_version(), example.kind()).ok_or_else(|| {
        vec![format!(
            "no CRD serves {} {}",
            example.api_version(),
            example.kind()
        )]
    })?;
    let json_schema = to_json_schema(&schema);
    let validator = jsonschema::draft7::new(&json_schema)
        .unwrap_or_else(|e| panic!("schema of {} is not valid JSON schema: {e}", example.kind()));
    let errors: Vec<String> = validator
        .iter_errors(&example.value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Follows a dotted path of `properties` in a schema, e.g. `spec.leaseDurationSeconds`;
/// `[]` steps into `items`.
pub fn schema_at<'a>(schema: &'a Value, path: &str) -> &'a Value {
    let mut cur = schema;
    for step in path.split('.') {
        if step == "[]" {
            cur = &cur["items"];
        } else {
            cur = &cur["properties"][step];
        }
        assert!(!cur.is_null(), "schema has no {path} (stopped at {step})");
    }
    cur
}
