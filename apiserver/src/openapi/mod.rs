//! OpenAPI v3 for kubectl: an index of every served group-version and one document per
//! group-version with the operations kubectl inspects (`x-kubernetes-group-version-kind`, the
//! `fieldValidation`/`dryRun` parameters) and the schemas of custom resources for `explain`;
//! and the OpenAPI v2 (Swagger 2.0) document of `v2`, built from the same resources.

mod endpoints;
pub(crate) mod v2;

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::registry::ResourceInfo;
use crate::state::Inner;
use ocm_apiserver_status::ApiError;
use v2::builtin::gvk_extension;

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn served_group_versions(inner: &Inner, cluster: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for res in inner.registry.all(cluster) {
        for v in &res.versions {
            let gv = (res.group.clone(), v.name.clone());
            if !out.contains(&gv) {
                out.push(gv);
            }
        }
    }
    out
}

/// `GET /openapi/v3`.
pub(crate) fn root(inner: &Inner, cluster: &str) -> Value {
    let mut paths = Map::new();
    for (g, v) in served_group_versions(inner, cluster) {
        let path = gv_path(&g, &v);
        let doc = build(inner, cluster, &g, &v);
        let hash = format!("{:016X}", ocm_apiserver_json::digest(&doc));
        paths.insert(
            path.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={hash}")}),
        );
    }
    json!({"paths": paths})
}

/// `GET /openapi/v3/{api/v1 | apis/g/v}`.
pub(crate) fn document(inner: &Inner, cluster: &str, gv: &str) -> Result<Value, ApiError> {
    let parts: Vec<&str> = gv.split('/').collect();
    let (group, version) = match parts.as_slice() {
        ["api", v] => ("", *v),
        ["apis", g, v] => (*g, *v),
        _ => return Err(ApiError::route_not_found()),
    };
    if !inner.registry.serves_group_version(cluster, group, version) {
        return Err(ApiError::route_not_found());
    }
    Ok(build(inner, cluster, group, version))
}

/// The components name of a kind: the group reversed, then version and kind.
fn schema_name(group: &str, version: &str, kind: &str) -> String {
    if group.is_empty() {
        return format!("io.k8s.api.core.{version}.{kind}");
    }
    let mut parts: Vec<&str> = group.split('.').collect();
    parts.reverse();
    format!("{}.{version}.{kind}", parts.join("."))
}

fn query_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": "string", "uniqueItems": true}})
}

fn operation(
    res: &ResourceInfo,
    version: &str,
    action: &str,
    op_id: &str,
    with_body: bool,
    schema_ref: &str,
) -> Value {
    let mut params = vec![query_param(
        "dryRun",
        "When present, indicates that modifications should not be persisted.",
    )];
    if matches!(action, "put" | "post" | "patch") {
        params.push(query_param("fieldManager", "fieldManager is a name associated with the actor or entity that is making these changes."));
        params.push(query_param("fieldValidation", "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields."));
    }
    if action == "patch" {
        params.push(json!({"name": "force", "in": "query", "schema": {"type": "boolean", "uniqueItems": true}}));
    }
    let content = json!({"application/json": {"schema": {"$ref": schema_ref}}});
    let mut op = json!({
        "operationId": op_id,
        "parameters": params,
        "responses": {"200": {"description": "OK", "content": content}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": res.group, "version": version, "kind": res.kind},
    });
    if with_body {
        let body_content = if action == "patch" {
            // Strategic merge patch only where the server takes it (built-in kinds): kubectl
            // reads this list to choose the patch of a client-side `apply`, and a custom
            // resource answers it with 415, as kube-apiserver's does.
            let mut types = json!({
                "application/apply-patch+yaml": {"schema": {"type": "object"}},
                "application/json-patch+json": {"schema": {"type": "object"}},
                "application/merge-patch+json": {"schema": {"type": "object"}},
            });
            if ocm_apiserver_patch::supports_strategic_merge_patch(&res.group, &res.kind) {
                types["application/strategic-merge-patch+json"] =
                    json!({"schema": {"type": "object"}});
            }
            types
        } else {
            json!({"*/*": {"schema": {"$ref": schema_ref}}})
        };
        op["requestBody"] = json!({"content": body_content, "required": true});
    }
    op
}

fn object_meta_schema() -> Value {
    json!({
        "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
        "type": "object",
        "properties": {
            "name": {"description": "Name must be unique within a namespace.", "type": "string"},
            "namespace": {"description": "Namespace defines the space within which each name must be unique.", "type": "string"},
            "labels": {"description": "Map of string keys and values that can be used to organize and categorize objects.", "type": "object", "additionalProperties": {"type": "string", "default": ""}},
            "annotations": {"description": "Annotations is an unstructured key value map stored with a resource.", "type": "object", "additionalProperties": {"type": "string", "default": ""}},
            "generateName": {"description": "GenerateName is an optional prefix, used by the server, to generate a unique name.", "type": "string"},
            "uid": {"description": "UID is the unique in time and space value for this object.", "type": "string"},
            "resourceVersion": {"description": "An opaque value that represents the internal version of this object.", "type": "string"},
            "generation": {"description": "A sequence number representing a specific generation of the desired state.", "type": "integer", "format": "int64"},
            "creationTimestamp": {"description": "CreationTimestamp is a timestamp representing the server time when this object was created.", "type": "string", "format": "date-time"},
            "deletionTimestamp": {"description": "DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted.", "type": "string", "format": "date-time"},
            "finalizers": {"description": "Must be empty before the object is deleted from the registry.", "type": "array", "items": {"type": "string", "default": ""}, "x-kubernetes-list-type": "set"},
            "ownerReferences": {"description": "List of objects depended by this object.", "type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"]},
            "managedFields": {"description": "ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow.", "type": "array", "items": {"type": "object"}},
        },
    })
}

const API_VERSION_DESCRIPTION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DESCRIPTION: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const METADATA_DESCRIPTION: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// The `apiVersion` and `kind` properties every kind declares.
fn type_meta_properties() -> [(String, Value); 2] {
    [
        (
            "apiVersion".into(),
            json!({"description": API_VERSION_DESCRIPTION, "type": "string"}),
        ),
        (
            "kind".into(),
            json!({"description": KIND_DESCRIPTION, "type": "string"}),
        ),
    ]
}

/// A custom resource schema as kube-apiserver publishes it: with apiVersion, kind, metadata
/// (`metadata` is the property schema pointing at ObjectMeta) and the GVK extension.
fn kube_native(res: &ResourceInfo, version: &str, schema: &Value, metadata: Value) -> Value {
    let mut s = schema.clone();
    if let Some(map) = s.as_object_mut() {
        map.entry("type").or_insert_with(|| json!("object"));
        let props = map.entry("properties").or_insert_with(|| json!({}));
        if let Some(props) = props.as_object_mut() {
            props.extend(type_meta_properties());
            props.insert("metadata".into(), metadata);
        }
        map.insert(
            "x-kubernetes-group-version-kind".into(),
            gvk_extension(&res.group, version, &res.kind),
        );
    }
    s
}

/// [`kube_native`] for OpenAPI v3: metadata as `allOf` of the ObjectMeta reference.
fn published_schema(res: &ResourceInfo, version: &str, schema: &Value, meta_name: &str) -> Value {
    let metadata = json!({"description": METADATA_DESCRIPTION, "allOf": [{"$ref": format!("#/components/schemas/{meta_name}")}]});
    kube_native(res, version, schema, metadata)
}

fn build(inner: &Inner, cluster: &str, group: &str, version: &str) -> Value {
    let meta_name = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
    let mut paths = Map::new();
    let mut schemas = Map::new();
    schemas.insert(meta_name.into(), object_meta_schema());
    let resources: Vec<Arc<ResourceInfo>> = inner
        .registry
        .all(cluster)
        .into_iter()
        .filter(|r| r.group == group && r.version(version).is_some())
        .collect();
    for res in &resources {
        let name = schema_name(group, version, &res.kind);
        let schema_ref = format!("#/components/schemas/{name}");
        // Built-in kinds publish no schema here: for apply patches kubectl then falls back to
        // the v2 definitions (which carry the strategic-merge-patch extensions); `explain`
        // finds them only with `--output=plaintext-openapiv2`.
        let published = res
            .version(version)
            .and_then(|v| v.schema.as_ref())
            .map(|s| s.value())
            .map(|s| published_schema(res, version, &s, meta_name));
        let schema_ref = match published {
            Some(schema) => {
                schemas.insert(name.clone(), schema);
                schema_ref
            }
            None => {
                schemas
                    .entry("io.k8s.apimachinery.pkg.runtime.RawExtension")
                    .or_insert_with(
                        || json!({"description": "An object of any kind.", "type": "object"}),
                    );
                "#/components/schemas/io.k8s.apimachinery.pkg.runtime.RawExtension".to_owned()
            }
        };
        let id = format!("{}{}", res.kind, version);
        for ep in endpoints::endpoints(res, version) {
            let op_id = format!("{}{id}{}", ep.verb, ep.subresource.as_deref().unwrap_or(""));
            let op = operation(res, version, ep.action, &op_id, ep.with_body(), &schema_ref);
            let entry = paths.entry(ep.path).or_insert_with(|| json!({}));
            entry[ep.method] = op;
        }
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": crate::version::git_version()},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names() {
        assert_eq!(
            schema_name("stable.example.com", "v1", "CronTab"),
            "com.example.stable.v1.CronTab"
        );
        assert_eq!(
            schema_name("", "v1", "ConfigMap"),
            "io.k8s.api.core.v1.ConfigMap"
        );
    }
}
