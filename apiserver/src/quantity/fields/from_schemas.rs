//! The Quantity table derived from the k8s-openapi types' schemas (schemars), as the test
//! below checks the checked-in `fields.txt` against. Run with `OCM_WRITE_QUANTITY_TABLE=1`
//! to write the table again after a k8s-openapi upgrade or a new built-in kind.

use std::collections::HashMap;

use k8s_openapi::schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use super::{Shape, parse, render};
use crate::openapi::v2::builtin::{DefinitionOf, ref_name};
use crate::registry::{BuiltinKind, Source, builtin_resources};

/// The definition name of `resource.Quantity`.
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";

/// Every built-in kind's shape, from the schemas.
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

#[test]
#[allow(clippy::unwrap_used)]
fn the_checked_in_table_is_what_the_schemas_say() {
    let derived = render(&build());
    let checked_in = render(&parse(super::TABLE).unwrap());
    if derived != checked_in && std::env::var_os("OCM_WRITE_QUANTITY_TABLE").is_some() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/quantity/fields.txt");
        let mut text = String::from(
            "# Quantity fields of the built-in kinds: <Kind> <path>; `[]` every item, `*` every value.\n\
             # Derived from the k8s-openapi schemas by quantity::fields::from_schemas (run its test\n\
             # with OCM_WRITE_QUANTITY_TABLE=1 to write it again).\n",
        );
        for line in &derived {
            text.push_str(line);
            text.push('\n');
        }
        std::fs::write(&path, text).unwrap();
        return;
    }
    assert_eq!(
        checked_in, derived,
        "src/quantity/fields.txt is stale: run `OCM_WRITE_QUANTITY_TABLE=1 cargo test -p \
         ocm-apiserver --lib the_checked_in_table_is_what_the_schemas_say`"
    );
    assert!(
        derived
            .iter()
            .any(|l| l.starts_with("Pod spec.containers.[].resources"))
    );
}
