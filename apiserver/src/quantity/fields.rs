//! The Quantity fields of the built-in kinds (every `$ref` to
//! `io.k8s.apimachinery.pkg.api.resource.Quantity` in the schemas of the k8s-openapi types the
//! server decodes them into), and their rewriting into canonical form, as kube-apiserver's
//! typed decoding does. Custom resources are decoded unstructured by kube and never pass
//! through here.
//!
//! Where the fields are is read from `fields.txt`, a table checked in beside this file: the
//! test in [`from_schemas`] derives it from the types' schemas and fails (saying how to write
//! it again) when it differs, so the server runs no schema generation — code and memory it
//! would otherwise spend on its first write.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::Value;

use super::{QuantityError, canonical};
use crate::registry::{BuiltinKind, Source, builtin_resources};

#[cfg(test)]
mod from_schemas;

/// The checked-in table: `<Kind> <path>` per line, a path's steps separated by `.`: a field
/// name, `[]` for every item of an array, `*` for every value of a map.
const TABLE: &str = include_str!("fields.txt");

/// Where quantities sit in a value: only branches that lead to one are kept.
#[derive(Clone, Debug, PartialEq)]
enum Shape {
    /// The value is a Quantity.
    Quantity,
    /// An object with these fields.
    Object(Vec<(String, Shape)>),
    /// Every item of an array.
    Items(Box<Shape>),
    /// Every value of a map.
    Values(Box<Shape>),
}

/// The shape of each built-in kind that has Quantity fields.
static SHAPES: LazyLock<HashMap<BuiltinKind, Shape>> = LazyLock::new(|| {
    parse(TABLE).unwrap_or_else(|err| {
        // The test of `from_schemas` reads the same table, so this is a broken build.
        tracing::error!(%err, "the built-in kinds' Quantity table does not read");
        HashMap::new()
    })
});

/// A line of the table that does not read.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {problem}")]
struct TableError {
    line: usize,
    problem: String,
}

/// The table's shapes by kind.
fn parse(table: &str) -> Result<HashMap<BuiltinKind, Shape>, TableError> {
    let kinds: HashMap<String, BuiltinKind> = builtin_resources()
        .iter()
        .filter_map(|res| match res.source {
            Source::Builtin(kind) => Some((format!("{kind:?}"), kind)),
            _ => None,
        })
        .collect();
    let mut shapes: HashMap<BuiltinKind, Shape> = HashMap::new();
    for (n, line) in table.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let error = |problem: String| TableError {
            line: n + 1,
            problem,
        };
        let (kind, path) = line
            .split_once(' ')
            .ok_or_else(|| error("no path after the kind".into()))?;
        let kind = *kinds
            .get(kind)
            .ok_or_else(|| error(format!("no built-in kind {kind}")))?;
        let steps: Vec<&str> = path.split('.').collect();
        match shapes.remove(&kind) {
            Some(shape) => shapes.insert(kind, insert(shape, &steps).map_err(error)?),
            None => shapes.insert(kind, along(&steps)),
        };
    }
    Ok(shapes)
}

/// The shape holding one Quantity at the end of `steps`.
fn along(steps: &[&str]) -> Shape {
    match steps.split_first() {
        None => Shape::Quantity,
        Some((&"[]", rest)) => Shape::Items(Box::new(along(rest))),
        Some((&"*", rest)) => Shape::Values(Box::new(along(rest))),
        Some((field, rest)) => Shape::Object(vec![((*field).to_owned(), along(rest))]),
    }
}

/// `shape` with one more Quantity at the end of `steps`.
fn insert(shape: Shape, steps: &[&str]) -> Result<Shape, String> {
    Ok(match (shape, steps.split_first()) {
        // The same path twice.
        (Shape::Quantity, None) => Shape::Quantity,
        (Shape::Items(inner), Some((&"[]", rest))) => Shape::Items(Box::new(insert(*inner, rest)?)),
        (Shape::Values(inner), Some((&"*", rest))) => {
            Shape::Values(Box::new(insert(*inner, rest)?))
        }
        (Shape::Object(mut fields), Some((field, rest))) if !["[]", "*"].contains(field) => {
            match fields.iter().position(|(name, _)| name == field) {
                Some(at) => {
                    let (name, child) = fields.remove(at);
                    fields.insert(at, (name, insert(child, rest)?));
                }
                None => fields.push(((*field).to_owned(), along(rest))),
            }
            Shape::Object(fields)
        }
        (_, step) => {
            return Err(format!(
                "a path that is both a Quantity and something else at {}",
                step.map_or("its end", |(s, _)| *s)
            ));
        }
    })
}

/// The table's lines for `shapes`, sorted by kind and path.
#[cfg(test)]
fn render(shapes: &HashMap<BuiltinKind, Shape>) -> Vec<String> {
    fn paths(shape: &Shape, prefix: &str, out: &mut Vec<String>) {
        let join = |step: &str| {
            if prefix.is_empty() {
                step.to_owned()
            } else {
                format!("{prefix}.{step}")
            }
        };
        match shape {
            Shape::Quantity => out.push(prefix.to_owned()),
            Shape::Items(inner) => paths(inner, &join("[]"), out),
            Shape::Values(inner) => paths(inner, &join("*"), out),
            Shape::Object(fields) => {
                for (name, child) in fields {
                    paths(child, &join(name), out);
                }
            }
        }
    }
    let mut lines = Vec::new();
    for (kind, shape) in shapes {
        let mut found = Vec::new();
        paths(shape, "", &mut found);
        lines.extend(found.into_iter().map(|path| format!("{kind:?} {path}")));
    }
    lines.sort();
    lines
}

/// Rewrites every Quantity field of an object of `kind` in canonical form. A `null` map value
/// becomes `"0"` (Go decodes it as a zero Quantity); any other value that is not a string or a
/// number, or does not parse, is an error.
pub(crate) fn canonicalize(kind: BuiltinKind, obj: &mut Value) -> Result<(), QuantityError> {
    match SHAPES.get(&kind) {
        Some(shape) => apply(shape, obj),
        None => Ok(()),
    }
}

fn apply(shape: &Shape, value: &mut Value) -> Result<(), QuantityError> {
    match (shape, value) {
        (Shape::Quantity, value) => rewrite(value),
        (Shape::Object(fields), Value::Object(map)) => {
            for (field, shape) in fields {
                if let Some(child) = map.get_mut(field).filter(|c| !c.is_null()) {
                    apply(shape, child)?;
                }
            }
            Ok(())
        }
        (Shape::Items(shape), Value::Array(items)) => items
            .iter_mut()
            .filter(|item| !item.is_null())
            .try_for_each(|item| apply(shape, item)),
        (Shape::Values(shape), Value::Object(map)) => map.values_mut().try_for_each(|v| {
            if v.is_null() && **shape == Shape::Quantity {
                *v = Value::String("0".into());
                return Ok(());
            }
            apply(shape, v)
        }),
        // Values of another type are left to the typed decoding to refuse.
        _ => Ok(()),
    }
}

/// One Quantity value in canonical form.
fn rewrite(value: &mut Value) -> Result<(), QuantityError> {
    let text = match value {
        Value::String(s) => canonical(s)?,
        Value::Number(n) => canonical(&n.to_string())?,
        Value::Null => return Ok(()),
        _ => return Err(QuantityError::FormatWrong),
    };
    *value = Value::String(text);
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_table_that_does_not_read_says_which_line() {
        let err = parse("# c\nPod spec.overhead.*\nWidget spec.size\n").unwrap_err();
        assert_eq!(err.to_string(), "line 3: no built-in kind Widget");
        let err = parse("Pod spec.a\nPod spec.a.b\n").unwrap_err();
        assert_eq!(err.line, 2);
        let err = parse("Pod\n").unwrap_err();
        assert_eq!(err.to_string(), "line 1: no path after the kind");
        let shapes = parse("Pod spec.a.[]\nPod spec.b.*\nPod spec.a.[]\n").unwrap();
        assert_eq!(
            render(&shapes),
            ["Pod spec.a.[]", "Pod spec.b.*"].map(str::to_owned)
        );
    }

    #[test]
    fn pod_containers_resources_and_overhead_are_found() {
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {
                "containers": [{"name": "c", "image": "i",
                    "resources": {"requests": {"cpu": "0.5", "memory": "1024Mi"},
                                  "limits": {"cpu": 2, "memory": null}}}],
                "initContainers": [{"name": "i", "resources": {"limits": {"cpu": "1000m"}}}],
                "overhead": {"cpu": "0.1"},
                "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "1.5Gi"}}]
            }
        });
        assert_eq!(canonicalize(BuiltinKind::Pod, &mut pod), Ok(()));
        let spec = &pod["spec"];
        assert_eq!(
            spec["containers"][0]["resources"],
            json!({"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "0"}})
        );
        assert_eq!(spec["initContainers"][0]["resources"]["limits"]["cpu"], "1");
        assert_eq!(spec["overhead"]["cpu"], "100m");
        assert_eq!(spec["volumes"][0]["emptyDir"]["sizeLimit"], "1536Mi");
    }

    #[test]
    fn pod_templates_of_workloads_are_found() {
        let template = json!({"spec": {"containers": [{"name": "c",
            "resources": {"requests": {"memory": "2048Ki"}}}]}});
        for (kind, mut obj, pointer) in [
            (
                BuiltinKind::Deployment,
                json!({"spec": {"template": template}}),
                "/spec/template",
            ),
            (
                BuiltinKind::StatefulSet,
                json!({"spec": {"template": template}}),
                "/spec/template",
            ),
            (
                BuiltinKind::Job,
                json!({"spec": {"template": template}}),
                "/spec/template",
            ),
            (
                BuiltinKind::CronJob,
                json!({"spec": {"jobTemplate": {"spec": {"template": template}}}}),
                "/spec/jobTemplate/spec/template",
            ),
            (
                BuiltinKind::PodTemplate,
                json!({"template": template}),
                "/template",
            ),
        ] {
            assert_eq!(canonicalize(kind, &mut obj), Ok(()), "{kind:?}");
            let memory = format!("{pointer}/spec/containers/0/resources/requests/memory");
            assert_eq!(obj.pointer(&memory), Some(&json!("2Mi")), "{kind:?}");
        }
    }

    #[test]
    fn quotas_and_nodes_are_found() {
        let mut quota = json!({"spec": {"hard": {"cpu": "1000m", "pods": "10"}},
            "status": {"hard": {"cpu": "1000m"}, "used": {"cpu": "0.5"}}});
        assert_eq!(canonicalize(BuiltinKind::ResourceQuota, &mut quota), Ok(()));
        assert_eq!(
            quota,
            json!({"spec": {"hard": {"cpu": "1", "pods": "10"}},
                "status": {"hard": {"cpu": "1"}, "used": {"cpu": "500m"}}})
        );
        let mut node = json!({"status": {"capacity": {"memory": "1048576Ki"},
            "allocatable": {"cpu": "4000m"}}});
        assert_eq!(canonicalize(BuiltinKind::Node, &mut node), Ok(()));
        assert_eq!(
            node,
            json!({"status": {"capacity": {"memory": "1Gi"}, "allocatable": {"cpu": "4"}}})
        );
    }

    #[test]
    fn kinds_without_quantities_are_untouched() {
        let mut cm = json!({"data": {"cpu": "0.5"}});
        assert_eq!(canonicalize(BuiltinKind::ConfigMap, &mut cm), Ok(()));
        assert_eq!(cm, json!({"data": {"cpu": "0.5"}}));
        // A CRD's schema is not a Quantity, whatever its properties are called.
        let mut crd = json!({"spec": {"versions": [{"schema": {"openAPIV3Schema":
            {"properties": {"cpu": {"default": "0.5"}}}}}]}});
        let before = crd.clone();
        assert_eq!(
            canonicalize(BuiltinKind::CustomResourceDefinition, &mut crd),
            Ok(())
        );
        assert_eq!(crd, before);
    }

    #[test]
    fn malformed_quantities_are_errors() {
        for bad in [json!("abc"), json!(true), json!({"a": 1}), json!("1Qi")] {
            let mut pod = json!({"spec": {"containers": [{"name": "c",
                "resources": {"limits": {"cpu": bad}}}]}});
            assert_eq!(
                canonicalize(BuiltinKind::Pod, &mut pod),
                Err(QuantityError::FormatWrong)
            );
        }
    }

    #[test]
    fn numbers_are_read_as_their_text() {
        let mut pod: Value = serde_json::from_str(
            r#"{"spec": {"overhead": {"cpu": 0.5, "memory": 1024, "big": 1e3}}}"#,
        )
        .unwrap();
        assert_eq!(canonicalize(BuiltinKind::Pod, &mut pod), Ok(()));
        // An exponent goes through a float (kube would keep `1e3`).
        assert_eq!(
            pod["spec"]["overhead"],
            json!({"cpu": "500m", "memory": "1024", "big": "1k"})
        );
    }

    #[test]
    fn fields_of_another_type_are_left_for_the_typed_decoding() {
        let mut pod = json!({"spec": {"containers": "nope", "overhead": [1]}});
        let before = pod.clone();
        assert_eq!(canonicalize(BuiltinKind::Pod, &mut pod), Ok(()));
        assert_eq!(pod, before);
    }
}
