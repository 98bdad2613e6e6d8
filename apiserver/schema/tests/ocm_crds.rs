//! The generated OCM CRDs as a corpus: every schema is accepted as kube-apiserver would accept
//! it, every valid example object passes decoding, defaulting and validation without a cause,
//! and every invalid example is rejected. Files are read from `crds/` on disk (the
//! schema crate must not depend on ocm-api).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use ocm_apiserver_schema::StructuralSchema;
use ocm_apiserver_validation::{NameRule, validate_object_meta};
use serde_json::Value;

fn crds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crds")
}

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(yaml_files(&p));
        } else if p.extension().is_some_and(|x| x == "yaml") {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn docs(file: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(file).unwrap();
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
        .unwrap_or_else(|e| panic!("parsing {}: {e}", file.display()));
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

struct Version {
    group: String,
    kind: String,
    version: String,
    namespaced: bool,
    schema: StructuralSchema,
}

/// Every CRD version in the manifests, checked like a CRD create.
fn load_crds() -> (Vec<Version>, Vec<String>) {
    let files = yaml_files(&crds_dir().join("manifests"));
    assert!(!files.is_empty(), "no CRD manifests under crds/manifests");
    let mut versions = Vec::new();
    let mut failures = Vec::new();
    for file in files {
        for crd in docs(&file) {
            if crd["kind"] != "CustomResourceDefinition" {
                continue;
            }
            let spec = &crd["spec"];
            let group = spec["group"].as_str().unwrap_or_default().to_string();
            let kind = spec["names"]["kind"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let namespaced = spec["scope"] == "Namespaced";
            for (i, v) in spec["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                let schema = &v["schema"]["openAPIV3Schema"];
                let status = !v["subresources"]["status"].is_null();
                let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
                let schema = match StructuralSchema::new_in_crd(schema, &path, status) {
                    Ok(s) => {
                        let selectable: Vec<&str> = v["selectableFields"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|f| f["jsonPath"].as_str())
                            .collect();
                        let field = format!("spec.versions[{i}].selectableFields");
                        for c in s.validate_selectable_fields(&selectable, &field) {
                            failures.push(format!("{}: {c}", file.display()));
                        }
                        s
                    }
                    Err(e) => {
                        let name = file.file_name().unwrap().to_string_lossy().to_string();
                        failures.push(format!("{name} {}: {e}", v["name"]));
                        // Still check the examples against it.
                        StructuralSchema::from_accepted(schema)
                    }
                };
                versions.push(Version {
                    group: group.clone(),
                    kind: kind.clone(),
                    version: v["name"].as_str().unwrap_or_default().to_string(),
                    namespaced,
                    schema,
                });
            }
        }
    }
    (versions, failures)
}

fn find<'a>(versions: &'a [Version], obj: &Value) -> Option<&'a Version> {
    let (group, version) = obj["apiVersion"].as_str()?.rsplit_once('/')?;
    let kind = obj["kind"].as_str()?;
    versions
        .iter()
        .find(|v| v.group == group && v.version == version && v.kind == kind)
}

/// Everything kube-apiserver would object to when creating `obj` with fieldValidation=Strict.
fn problems(v: &Version, obj: &Value) -> Vec<String> {
    let mut obj = obj.clone();
    let mut out = Vec::new();
    match v.schema.prune(&mut obj) {
        Err(e) => return vec![format!("decode: {e}")],
        Ok(unknown) => out.extend(unknown.into_iter().map(|u| format!("unknown field {u}"))),
    }
    v.schema.apply_defaults(&mut obj);
    if v.namespaced && obj["metadata"]["namespace"].is_null() {
        obj["metadata"]["namespace"] = Value::String("default".into());
    }
    out.extend(
        validate_object_meta(&obj, NameRule::DnsSubdomain, v.namespaced)
            .iter()
            .map(ToString::to_string),
    );
    out.extend(v.schema.validate(&obj).iter().map(ToString::to_string));
    out
}

fn examples(sub: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for f in yaml_files(&crds_dir().join("tests/examples").join(sub)) {
        for (i, d) in docs(&f).into_iter().enumerate() {
            out.push((
                format!("{}#{i}", f.file_name().unwrap().to_string_lossy()),
                d,
            ));
        }
    }
    out
}

#[test]
fn every_ocm_crd_schema_is_accepted() {
    let (versions, failures) = load_crds();
    assert!(
        failures.is_empty(),
        "schemas rejected:\n{}",
        failures.join("\n")
    );
    assert!(!versions.is_empty());
}

#[test]
fn valid_examples_have_no_causes() {
    let (versions, _) = load_crds();
    let valid = examples("valid");
    assert!(!valid.is_empty(), "no valid examples");
    let mut failures = Vec::new();
    for (origin, obj) in &valid {
        let Some(v) = find(&versions, obj) else {
            failures.push(format!(
                "{origin}: no CRD for {} {}",
                obj["apiVersion"], obj["kind"]
            ));
            continue;
        };
        let p = problems(v, obj);
        if !p.is_empty() {
            failures.push(format!("{origin}: {}", p.join("; ")));
        }
    }
    assert!(
        failures.is_empty(),
        "valid examples rejected:\n{}",
        failures.join("\n")
    );
}

#[test]
fn invalid_examples_are_rejected() {
    let (versions, _) = load_crds();
    let invalid = examples("invalid");
    assert!(!invalid.is_empty(), "no invalid examples");
    let mut accepted = Vec::new();
    for (origin, obj) in &invalid {
        let Some(v) = find(&versions, obj) else {
            continue;
        };
        if problems(v, obj).is_empty() {
            accepted.push(origin.clone());
        }
    }
    assert!(
        accepted.is_empty(),
        "invalid examples accepted: {accepted:?}"
    );
}
