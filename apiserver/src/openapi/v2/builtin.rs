//! The OpenAPI v2 definitions of the built-in kinds: the schemas of the k8s-openapi types the
//! server decodes them into (the same types that drop unknown fields), named as kube-apiserver
//! names them (`io.k8s.api.core.v1.ConfigMap`), with `x-kubernetes-group-version-kind` and the
//! `x-kubernetes-patch-strategy` / `x-kubernetes-patch-merge-key` extensions of the server's
//! strategic-merge-patch tables (kubectl computes apply patches from them).

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use k8s_openapi::api::autoscaling::v1 as autoscaling;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_openapi::schemars::generate::SchemaSettings;
use k8s_openapi::schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

use crate::registry::{BuiltinKind, Source, TypeVisitor, builtin_resources};
use ocm_apiserver_patch::typeinfo::{ObjectType, Smp, TypeRef};

/// The `x-kubernetes-group-version-kind` extension of a definition: a list of one GVK.
pub(crate) fn gvk_extension(group: &str, version: &str, kind: &str) -> Value {
    json!([{"group": group, "version": version, "kind": kind}])
}

/// The definitions prefix of `$ref`s in a Swagger 2.0 document.
pub(crate) const DEFINITIONS: &str = "#/definitions/";

/// The definitions of the built-in kinds; each `$ref` in them is `#/definitions/<name>` of
/// this map. The schemas built-in kinds are type-checked against.
pub(crate) fn builtin_definitions() -> &'static Map<String, Value> {
    &definitions().definitions
}

/// The definition of a built-in kind in [`builtin_definitions`].
pub(crate) fn builtin_definition(kind: crate::registry::BuiltinKind) -> Option<&'static Value> {
    let builtins = definitions();
    builtins.definitions.get(builtins.names.get(&kind)?)
}

/// The definition of `ObjectMeta` in [`builtin_definitions`].
pub(crate) fn object_meta_definition() -> Option<&'static Value> {
    definitions().definitions.get(OBJECT_META)
}

/// `ObjectMeta`.
pub(super) const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
/// `ListMeta`.
pub(super) const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
/// `Status`, the answer of deletes.
pub(super) const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
/// `Patch`, the body of patches.
pub(super) const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
/// `DeleteOptions`, the body of deletes.
pub(super) const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
/// `autoscaling/v1` `Scale`, the `scale` subresource.
pub(super) const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";

/// The built-in part of the document; it never changes while the server runs.
pub(super) struct Definitions {
    /// Every definition by name, `$ref`s pointing into `#/definitions/`.
    pub definitions: Map<String, Value>,
    /// The definition name of each built-in kind.
    pub names: HashMap<BuiltinKind, String>,
}

static BUILTIN: LazyLock<Definitions> = LazyLock::new(build);

/// The built-in definitions (built on first use).
pub(super) fn definitions() -> &'static Definitions {
    &BUILTIN
}

/// The definition a schema refers to.
pub(crate) fn ref_name(schema: &Value) -> Option<String> {
    let target = schema.get("$ref")?.as_str()?;
    target.strip_prefix(DEFINITIONS).map(str::to_owned)
}

/// Adds a kind's type to the generator and returns its definition name.
pub(crate) struct DefinitionOf<'g>(pub(crate) &'g mut SchemaGenerator);

impl TypeVisitor for DefinitionOf<'_> {
    type Output = Option<String>;

    fn visit<K>(self) -> Self::Output
    where
        K: serde::de::DeserializeOwned + serde::Serialize + JsonSchema,
    {
        let schema: Schema = self.0.subschema_for::<K>();
        ref_name(schema.as_value())
    }
}

fn build() -> Definitions {
    let mut settings = SchemaSettings::draft07();
    // Keep `$ref` siblings (descriptions) as they are: kube-openapi reads them that way.
    settings.transforms.clear();
    let mut generator = settings.into_generator();
    let mut kinds = Vec::new();
    for res in builtin_resources() {
        let Source::Builtin(kind) = res.source else {
            continue;
        };
        if let Some(name) = kind.with_type(DefinitionOf(&mut generator)) {
            kinds.push((kind, name, res));
        }
    }
    generator.subschema_for::<meta::ObjectMeta>();
    generator.subschema_for::<meta::ListMeta>();
    generator.subschema_for::<meta::Status>();
    generator.subschema_for::<meta::DeleteOptions>();
    generator.subschema_for::<autoscaling::Scale>();
    generator.subschema_for::<meta::Patch>();
    let mut definitions = generator.take_definitions(false);
    let mut names = HashMap::new();
    let mut annotated = HashSet::new();
    for (kind, name, res) in kinds {
        if let Some(def) = definitions.get_mut(&name).and_then(Value::as_object_mut) {
            let version = res.preferred_version().to_owned();
            def.insert(
                "x-kubernetes-group-version-kind".into(),
                gvk_extension(&res.group, &version, &res.kind),
            );
            // k8s-openapi requires `metadata` because the Rust field is not optional; kube's
            // Go types do not.
            if let Some(required) = def.get_mut("required").and_then(Value::as_array_mut) {
                required.retain(|r| r != "metadata");
                if required.is_empty() {
                    def.remove("required");
                }
            }
        }
        if let Some(types) = ObjectType::builtin(&res.group, &res.kind) {
            annotate(&mut definitions, &name, types.root(), &mut annotated);
        }
        names.insert(kind, name);
    }
    Definitions { definitions, names }
}

/// Adds the strategic-merge-patch extensions to the properties of definition `name` (whose
/// type is `ty`) and of every definition reachable from it, each definition once.
fn annotate(
    definitions: &mut Map<String, Value>,
    name: &str,
    ty: TypeRef<'_>,
    seen: &mut HashSet<String>,
) {
    if !seen.insert(name.to_owned()) {
        return;
    }
    let Some(properties) = definitions
        .get_mut(name)
        .and_then(|d| d.get_mut("properties"))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let mut reachable = Vec::new();
    for (field, schema) in properties.iter_mut() {
        let (child, declared) = ty.field(field);
        if let Some(declared) = declared {
            add_patch_extensions(schema, &declared.smp);
        }
        if let Some(target) = ref_name(schema) {
            reachable.push((target, child));
        } else if let Some(target) = schema.get("items").and_then(ref_name) {
            reachable.push((target, child.items()));
        } else if let Some(target) = schema.get("additionalProperties").and_then(ref_name) {
            // A free-form map: any key that is not a declared field has the value type.
            reachable.push((target, child.field("").0));
        }
    }
    for (target, child) in reachable {
        annotate(definitions, &target, child, seen);
    }
}

/// `x-kubernetes-patch-strategy` (`merge`, `retainKeys`, `replace`, comma-separated) and
/// `x-kubernetes-patch-merge-key` of a field.
fn add_patch_extensions(schema: &mut Value, smp: &Smp) {
    let Some(schema) = schema.as_object_mut() else {
        return;
    };
    let strategies: Vec<&str> = [
        (smp.merge, "merge"),
        (smp.retain_keys, "retainKeys"),
        (smp.replace, "replace"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect();
    if !strategies.is_empty() {
        schema.insert(
            "x-kubernetes-patch-strategy".into(),
            json!(strategies.join(",")),
        );
    }
    if let Some(key) = &smp.merge_key {
        schema.insert("x-kubernetes-patch-merge-key".into(), json!(key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_named_like_kube() {
        let defs = definitions();
        assert_eq!(
            defs.names.get(&BuiltinKind::ConfigMap).map(String::as_str),
            Some("io.k8s.api.core.v1.ConfigMap")
        );
        assert_eq!(
            defs.names.get(&BuiltinKind::Deployment).map(String::as_str),
            Some("io.k8s.api.apps.v1.Deployment")
        );
        for name in [OBJECT_META, LIST_META, STATUS, PATCH, DELETE_OPTIONS, SCALE] {
            assert!(defs.definitions.contains_key(name), "{name}");
        }
    }

    #[test]
    fn every_reference_resolves() {
        fn refs(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Object(m) => {
                    if let Some(name) = ref_name(v) {
                        out.push(name);
                    }
                    m.values().for_each(|v| refs(v, out));
                }
                Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
                _ => {}
            }
        }
        let defs = definitions();
        let mut found = Vec::new();
        refs(&Value::Object(defs.definitions.clone()), &mut found);
        for name in found {
            assert!(defs.definitions.contains_key(&name), "{name}");
        }
    }

    #[test]
    fn patch_extensions_come_from_the_patch_tables() {
        let defs = definitions();
        let spec = &defs.definitions["io.k8s.api.core.v1.PodSpec"]["properties"];
        assert_eq!(spec["containers"]["x-kubernetes-patch-strategy"], "merge");
        assert_eq!(spec["containers"]["x-kubernetes-patch-merge-key"], "name");
        let deploy = &defs.definitions["io.k8s.api.apps.v1.DeploymentSpec"]["properties"];
        assert_eq!(
            deploy["strategy"]["x-kubernetes-patch-strategy"],
            "retainKeys"
        );
        let cm = &defs.definitions["io.k8s.api.core.v1.ConfigMap"];
        assert_eq!(
            cm["x-kubernetes-group-version-kind"],
            json!([{"group": "", "version": "v1", "kind": "ConfigMap"}])
        );
        assert!(cm.get("required").is_none());
    }
}
