//! Structural schemas of custom resources: the CRD-create checks, and validation, defaulting
//! and pruning of custom resources as kube-apiserver does them.
//!
//! A [`StructuralSchema`] is built from one CRD version's `openAPIV3Schema`. For a custom
//! resource write kube-apiserver runs, in this order:
//!
//! 1. decoding: [`StructuralSchema::prune`] — drops unknown fields (their paths become
//!    `Warning: unknown field "spec.x"` headers, or a 400 under `fieldValidation=Strict`; the
//!    request's `fieldValidation` handling words and orders them), drops non-nullable `null`s,
//!    coerces `metadata`;
//! 2. defaulting: [`StructuralSchema::apply_defaults`] (also done when reading from storage);
//! 3. the server-set fields (uid, generation, ...) and `ValidateObjectMeta`
//!    ([`crate::validation::validate_object_meta`]), then [`StructuralSchema::validate`] (or
//!    [`StructuralSchema::validate_update`] / [`StructuralSchema::validate_status_update`]).
//!
//! Everything here is pure. Beside the schemas, the crate holds what CEL needs in the server:
//! [`cel_cost`] (cost estimates and runtime budgets, shared with the admission policies and
//! webhook match conditions), [`cel_source`] (error texts that point into an expression) and
//! [`to_cel`] (a JSON value as a CEL value).

mod cel;
mod cel_budget;
mod cel_check;
mod cel_runtime;
mod cel_sites;
mod cel_types;
mod crd;
mod default;
mod formats;
mod listtype;
mod node;
mod prune;
mod structure;
mod validate;
mod wide_ints;

pub mod cel_cost;
mod cel_locate;
mod cel_optional;
pub mod cel_source;
mod cel_value;

/// The kind-independent validation this crate builds on.
use ocm_apiserver_validation as validation;

use std::collections::HashSet;

use serde_json::Value;

pub use cel_check::{
    CEL_RESERVED, Env as CelEnv, Variable as CelVariable, check as check_cel, unique_type_name,
};
pub use cel_value::{cel_map, to_cel};
pub use listtype::{ListType, MapType, SchemaNode};
pub use wide_ints::widen_out_of_range_integers;

use crate::validation::{Cause, coerce_object_meta};
use node::Node;

/// A CRD schema that kube-apiserver would reject.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SchemaError {
    /// The schema does not even decode (a keyword has the wrong JSON type): 400 BadRequest.
    #[error("{message}")]
    Decode {
        /// Go's decoding error text.
        message: String,
    },
    /// The schema decodes but is not allowed (not structural, forbidden constructs, bad
    /// defaults...): 422 Invalid on the CRD, with these causes.
    #[error("invalid schema: {}", causes.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    Invalid {
        /// The field causes, with paths below the schema's path.
        causes: Vec<Cause>,
    },
}

/// A custom resource that cannot be decoded (kube-apiserver answers 400 BadRequest with
/// [`DecodeError::message`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DecodeError {
    /// The message, worded like kube-apiserver's.
    pub message: String,
}

/// One CRD version's structural schema, with its compiled `x-kubernetes-validations` rules.
#[derive(Debug, Clone)]
pub struct StructuralSchema {
    root: Node,
    cel: cel::CelRules,
}

impl StructuralSchema {
    /// Check and build a schema the way kube-apiserver does when a CRD is created, with field
    /// paths under `openAPIV3Schema` and no status subresource. See
    /// [`StructuralSchema::new_in_crd`].
    pub fn new(schema: &Value) -> Result<Self, SchemaError> {
        StructuralSchema::new_in_crd(schema, "openAPIV3Schema", false)
    }

    /// Check and build a schema the way kube-apiserver does when a CRD is created or updated.
    /// `path` is the schema's field path in the CRD, e.g.
    /// `spec.versions[0].schema.openAPIV3Schema`; `status_subresource` whether that version
    /// enables `/status` (which restricts the keywords allowed at the root).
    pub fn new_in_crd(
        schema: &Value,
        path: &str,
        status_subresource: bool,
    ) -> Result<Self, SchemaError> {
        StructuralSchema::new_in_crd_update(schema, path, status_subresource, &HashSet::new())
    }

    /// [`StructuralSchema::new_in_crd`] for an update of a CRD whose stored version has the
    /// CEL expressions `preexisting` (rules and message expressions): as kube-apiserver, those
    /// are not refused again for selecting undeclared properties, so a CRD accepted before can
    /// still be written (its status included).
    pub fn new_in_crd_update(
        schema: &Value,
        path: &str,
        status_subresource: bool,
        preexisting: &HashSet<String>,
    ) -> Result<Self, SchemaError> {
        let mut issues = Vec::new();
        let root = Node::parse(schema, path, &mut issues);
        if let Some(i) = issues.first() {
            return Err(SchemaError::Decode {
                message: format!(
                    "json: cannot unmarshal {} into Go struct field JSONSchemaProps.{} of type {}",
                    i.found, i.path, i.go_type
                ),
            });
        }
        let causes = crd::check(schema, &root, path, status_subresource);
        if !causes.is_empty() {
            return Err(SchemaError::Invalid { causes });
        }
        let cel = cel::CelRules::compile(schema, &root);
        let causes = cel.compile_errors(schema, path, preexisting);
        if !causes.is_empty() {
            return Err(SchemaError::Invalid { causes });
        }
        Ok(StructuralSchema { root, cel })
    }

    /// Build a schema without any checks (for CRDs that were accepted before, e.g. when the
    /// server restarts). Never fails; keywords of the wrong JSON type are ignored.
    pub fn from_accepted(schema: &Value) -> Self {
        let root = Node::parse(schema, "openAPIV3Schema", &mut Vec::new());
        let cel = cel::CelRules::compile(schema, &root);
        StructuralSchema { root, cel }
    }

    /// Validate a custom resource (create): schema validation with kube-openapi's messages
    /// (`spec.replicas: Invalid value: "string": spec.replicas in body must be of type
    /// integer: "string"`), then embedded resources' metadata, then duplicate entries of
    /// `set`/`map` lists, then the `x-kubernetes-validations` CEL rules (skipped with one
    /// cause when an earlier cause is of a blocking type, as kube-apiserver does). Does not
    /// check the object's own `metadata` (use [`crate::validation::validate_object_meta`]
    /// first, as kube-apiserver does, and [`StructuralSchema::validate_after`] to report both
    /// together) nor `apiVersion`/`kind`.
    pub fn validate(&self, obj: &Value) -> Vec<Cause> {
        self.checked(obj, None, false, false).0
    }

    /// Validate an update with kube-apiserver's validation ratcheting: schema errors inside
    /// values that did not change from `old` are ignored, and list duplicates are only
    /// reported when `old` had none.
    pub fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        self.checked(new, Some(old), false, false).0
    }

    /// Validate a write to the `/status` subresource: only `status` is validated, against the
    /// `status` property's schema (kube's messages then name paths relative to `status`, e.g.
    /// `status.count: Invalid value: "string": count in body must be of type integer`), with
    /// ratcheting against `old`.
    pub fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        self.checked(new, Some(old), true, false).0
    }

    /// [`StructuralSchema::validate`], [`StructuralSchema::validate_update`] (with `old`) or
    /// [`StructuralSchema::validate_status_update`] (with `old` and `status_only`) after the
    /// `earlier` causes of the same request (the object's own metadata): a blocking one among
    /// them skips the CEL rules too, as kube-apiserver decides over all of a request's errors.
    pub fn validate_after(
        &self,
        obj: &Value,
        old: Option<&Value>,
        status_only: bool,
        earlier: &[Cause],
    ) -> Vec<Cause> {
        self.checked(obj, old, status_only, cel::is_blocking(earlier))
            .0
    }

    /// [`StructuralSchema::validate_after`], with the warnings kube-apiserver answers for the
    /// CEL rule failures ratcheting lets through (the failure's text).
    pub fn validate_after_with_warnings(
        &self,
        obj: &Value,
        old: Option<&Value>,
        status_only: bool,
        earlier: &[Cause],
    ) -> (Vec<Cause>, Vec<String>) {
        self.checked(obj, old, status_only, cel::is_blocking(earlier))
    }

    fn checked(
        &self,
        new: &Value,
        old: Option<&Value>,
        status_only: bool,
        earlier_blocking: bool,
    ) -> (Vec<Cause>, Vec<String>) {
        let mut causes = Vec::new();
        match old {
            Some(old) if status_only => {
                if let (Some(status), Some(schema)) =
                    (new.get("status"), self.root.property("status"))
                {
                    let mut errs = Vec::new();
                    validate::validate_value(schema, status, old.get("status"), "", &mut errs);
                    causes = validate::to_causes(errs, Some("status"));
                }
                let mut new_lists = Vec::new();
                structure::validate_list_sets_and_maps(new, Some(&self.root), "", &mut new_lists);
                if !new_lists.is_empty() {
                    let mut old_lists = Vec::new();
                    structure::validate_list_sets_and_maps(
                        old,
                        Some(&self.root),
                        "",
                        &mut old_lists,
                    );
                    if old_lists.is_empty() {
                        causes.extend(new_lists);
                    }
                }
            }
            Some(old) => {
                let mut errs = Vec::new();
                validate::validate_value(&self.root, new, Some(old), "", &mut errs);
                causes = validate::to_causes(errs, None);
                structure::validate_embedded(new, Some(&self.root), "", &mut causes);
                let mut old_lists = Vec::new();
                structure::validate_list_sets_and_maps(old, Some(&self.root), "", &mut old_lists);
                if old_lists.is_empty() {
                    structure::validate_list_sets_and_maps(new, Some(&self.root), "", &mut causes);
                }
            }
            None => {
                let mut errs = Vec::new();
                validate::validate_value(&self.root, new, None, "", &mut errs);
                causes = validate::to_causes(errs, None);
                structure::validate_embedded(new, Some(&self.root), "", &mut causes);
                structure::validate_list_sets_and_maps(new, Some(&self.root), "", &mut causes);
            }
        }
        let blocking = earlier_blocking || cel::is_blocking(&causes);
        let (more, warnings) = self
            .cel
            .validate_with_warnings(&self.root, new, old, blocking);
        causes.extend(more);
        (causes, warnings)
    }

    /// Apply the schema's `default`s (kube's structural defaulting): missing fields, and
    /// `null`s where the schema is not nullable, get their default inside objects and lists
    /// that are present; parents are never created.
    pub fn apply_defaults(&self, obj: &mut Value) {
        default::apply(obj, Some(&self.root));
    }

    /// What kube-apiserver's decoder does to a custom resource before defaulting:
    ///
    /// * `metadata` is decoded like `ObjectMeta` (unknown fields dropped, empty fields
    ///   dropped; a field of the wrong type is a [`DecodeError`]);
    /// * unknown fields are pruned, except below `x-kubernetes-preserve-unknown-fields` and
    ///   the `apiVersion`/`kind`/`metadata` of the object and of embedded resources;
    /// * `null`s of fields that are neither nullable nor defaulted are dropped;
    /// * embedded resources' `apiVersion`/`kind` must be strings and their `metadata` is
    ///   decoded like the object's.
    ///
    /// Returns the paths of the unknown fields (`metadata.foo`, `spec.bar`, `spec.list[0].x`),
    /// for `Warning: unknown field "…"` headers or, under `fieldValidation=Strict`, a 400
    /// `strict decoding error`.
    pub fn prune(&self, obj: &mut Value) -> Result<Vec<String>, DecodeError> {
        let mut unknown = coerce_object_meta(obj, "").map_err(|e| DecodeError { message: e.0 })?;
        let mut pruned = Vec::new();
        prune::prune(obj, Some(&self.root), true, "", &mut pruned);
        pruned.sort();
        unknown.extend(pruned);
        prune::prune_nulls(obj, Some(&self.root));
        let mut coerced = Vec::new();
        if let Value::Object(m) = obj {
            for (k, v) in m.iter_mut() {
                if k == "metadata" {
                    continue;
                }
                let sub = if let Some(p) = self.root.property(k) {
                    Some(p)
                } else {
                    self.root.additional_schema().flatten()
                };
                prune::coerce_embedded(v, sub, k, k, &mut coerced).map_err(|c| DecodeError {
                    message: c.to_string(),
                })?;
            }
        }
        coerced.sort();
        unknown.extend(coerced);
        Ok(unknown)
    }

    /// Check a CRD version's `selectableFields` against this schema (kube's
    /// `ValidateCustomResourceSelectableFields`): each `jsonPath` must be a simple path such as
    /// `.spec.color` to a string, boolean or integer field outside `metadata`, no duplicates,
    /// at most 8. `path` is the list's field path, e.g. `spec.versions[0].selectableFields`.
    pub fn validate_selectable_fields(&self, json_paths: &[&str], path: &str) -> Vec<Cause> {
        crd::selectable_fields(&self.root, json_paths, path)
    }

    /// The root node, for walking the schema (server-side apply).
    pub fn root(&self) -> SchemaNode<'_> {
        SchemaNode::new(&self.root)
    }

    /// The node at `path`: object field names from the root, stepping into list items
    /// implicitly (`["spec", "containers", "ports"]`).
    pub fn node_at(&self, path: &[&str]) -> Option<SchemaNode<'_>> {
        listtype::node_at(&self.root, path)
    }

    /// The list type of the list at `path` (see [`StructuralSchema::node_at`]): `None` when
    /// the path is not a list in the schema; lists without `x-kubernetes-list-type` are
    /// [`ListType::Atomic`].
    pub fn list_type_at(&self, path: &[&str]) -> Option<ListType> {
        self.node_at(path)
            .filter(|n| n.items().is_some() || n.type_name() == "array")
            .map(|n| n.list_type())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assert_send_sync<T: Send + Sync + 'static>() {}

    #[test]
    fn schemas_can_be_shared_across_threads() {
        assert_send_sync::<StructuralSchema>();
    }

    #[test]
    fn full_pipeline_on_a_custom_resource() {
        let schema = StructuralSchema::new(&json!({"type": "object", "properties": {
            "metadata": {"type": "object"},
            "spec": {"type": "object", "required": ["size"], "properties": {
                "size": {"type": "integer", "default": 1, "minimum": 1},
                "name": {"type": "string"}},
                "x-kubernetes-validations": [{"rule": "self.size < 100", "message": "too big"}]}}}))
        .unwrap();
        let mut obj = json!({"apiVersion": "g/v1", "kind": "W", "metadata": {"name": "w", "junk": 1},
            "spec": {"name": null, "extra": true}});
        let unknown = schema.prune(&mut obj).unwrap();
        assert_eq!(unknown, vec!["metadata.junk", "spec.extra"]);
        schema.apply_defaults(&mut obj);
        assert_eq!(obj["spec"], json!({"size": 1}));
        assert!(schema.validate(&obj).is_empty());

        obj["spec"]["size"] = json!(500);
        let causes: Vec<String> = schema
            .validate(&obj)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(causes, vec!["spec: Invalid value: too big"]);

        obj["spec"]["size"] = json!("big");
        let causes: Vec<String> = schema
            .validate(&obj)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            causes,
            vec![
                "spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\"",
                "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ]
        );
    }

    #[test]
    fn decode_errors() {
        let err = StructuralSchema::new(&json!({"type": 5})).unwrap_err();
        assert_eq!(
            err,
            SchemaError::Decode {
                message: "json: cannot unmarshal number into Go struct field JSONSchemaProps.openAPIV3Schema.type of type string".into()
            }
        );
        let schema = StructuralSchema::from_accepted(&json!({"type": "object"}));
        let mut obj = json!({"metadata": {"labels": []}});
        assert_eq!(
            schema.prune(&mut obj).unwrap_err().message,
            "json: cannot unmarshal array into Go struct field ObjectMeta.labels of type map[string]string"
        );
    }

    #[test]
    fn status_updates_validate_status_only() {
        let schema = StructuralSchema::new(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"a": {"type": "integer"}}},
            "status": {"type": "object", "properties": {"count": {"type": "integer"}}}}}))
        .unwrap();
        let old = json!({"spec": {"a": "bad"}, "status": {"count": 1}});
        let new = json!({"spec": {"a": "bad"}, "status": {"count": "x"}});
        let causes: Vec<String> = schema
            .validate_status_update(&new, &old)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            causes,
            vec![
                "status.count: Invalid value: \"string\": count in body must be of type integer: \"string\""
            ]
        );
    }

    #[test]
    fn list_types_for_server_side_apply() {
        let schema = StructuralSchema::from_accepted(
            &json!({"type": "object", "properties": {"spec": {
            "type": "object", "properties": {
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                          "x-kubernetes-list-map-keys": ["port", "protocol"],
                          "items": {"type": "object", "properties": {"port": {"type": "integer"}, "protocol": {"type": "string"}}}},
                "args": {"type": "array", "items": {"type": "string"}}}}}}),
        );
        assert_eq!(
            schema.list_type_at(&["spec", "ports"]),
            Some(ListType::Map(vec!["port".into(), "protocol".into()]))
        );
        assert_eq!(
            schema.list_type_at(&["spec", "args"]),
            Some(ListType::Atomic)
        );
        assert_eq!(schema.list_type_at(&["spec"]), None);
        assert_eq!(
            schema.root().field("spec").map(|n| n.map_type()),
            Some(MapType::Granular)
        );
    }
}
