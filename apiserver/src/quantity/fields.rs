//! The Quantity fields of the built-in kinds, found in the schemas of the k8s-openapi types the
//! server decodes them into (every `$ref` to `io.k8s.apimachinery.pkg.api.resource.Quantity`),
//! and their rewriting into canonical form, as kube-apiserver's typed decoding does. Custom
//! resources are decoded unstructured by kube and never pass through here.

use std::collections::HashMap;
use std::sync::LazyLock;

use k8s_openapi::schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use super::{QuantityError, canonical};
use crate::openapi::v2::builtin::{DefinitionOf, ref_name};
use crate::registry::{BuiltinKind, Source, builtin_resources};

/// The definition name of `resource.Quantity`.
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";

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
static SHAPES: LazyLock<HashMap<BuiltinKind, Shape>> = LazyLock::new(build);

fn build() -> HashMap<BuiltinKind, Shape> {
    let mut settings = SchemaSettings::draft07();
    settings.transforms.clear();
    let mut generator = settings.into_generator();
    let mut roots = Vec::new();
    for res in builtin_resources() {
        if let Source::Builtin(kind) = res.source
            && let Some(name) = kind.with_type(DefinitionOf(&mut generator))
        {
            roots.push((kind, name));
        }
    }
    let definitions = generator.take_definitions(false);
    let mut walker = Walker {
        definitions: &definitions,
        done: HashMap::new(),
        visiting: Vec::new(),
    };
    roots
        .into_iter()
        .filter_map(|(kind, name)| Some((kind, walker.definition(&name)?)))
        .collect()
}

/// Computes shapes over the definitions, each definition once.
struct Walker<'d> {
    definitions: &'d Map<String, Value>,
    done: HashMap<String, Option<Shape>>,
    /// Definitions being walked (a recursive type has no Quantity through its recursion).
    visiting: Vec<String>,
}

impl Walker<'_> {
    fn definition(&mut self, name: &str) -> Option<Shape> {
        if name == QUANTITY {
            return Some(Shape::Quantity);
        }
        if let Some(done) = self.done.get(name) {
            return done.clone();
        }
        if self.visiting.iter().any(|v| v == name) {
            return None;
        }
        let schema = self.definitions.get(name)?;
        self.visiting.push(name.to_owned());
        let shape = self.schema(schema);
        self.visiting.pop();
        self.done.insert(name.to_owned(), shape.clone());
        shape
    }

    fn schema(&mut self, schema: &Value) -> Option<Shape> {
        if let Some(name) = ref_name(schema) {
            return self.definition(&name);
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            if let Some(parts) = schema.get(key).and_then(Value::as_array) {
                return parts.iter().find_map(|part| self.schema(part));
            }
        }
        if let Some(items) = schema.get("items") {
            return Some(Shape::Items(Box::new(self.schema(items)?)));
        }
        if let Some(values) = schema.get("additionalProperties").filter(|v| v.is_object()) {
            return Some(Shape::Values(Box::new(self.schema(values)?)));
        }
        let properties = schema.get("properties")?.as_object()?;
        let fields: Vec<(String, Shape)> = properties
            .iter()
            .filter_map(|(field, schema)| Some((field.clone(), self.schema(schema)?)))
            .collect();
        (!fields.is_empty()).then_some(Shape::Object(fields))
    }
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
