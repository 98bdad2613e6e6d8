//! OpenAPI v2 (`GET /openapi/v2`): the Swagger 2.0 document of every served kind, as
//! kube-apiserver publishes it.
//!
//! * [`builtin`]: the definitions of built-in kinds, from the k8s-openapi types the server
//!   decodes them into, with the strategic-merge-patch extensions of the server's patch tables;
//! * [`crd`]: custom resource schemas converted from their `openAPIV3Schema` the way
//!   kube-apiserver converts them for v2;
//! * [`paths`]: the operations of each resource ([`super::endpoints`]) in Swagger 2.0 form;
//! * [`proto`]: the protobuf encoding (gnostic `openapi.v2.Document`) client-go asks for;
//! * [`serve`]: content negotiation, `ETag` and `If-None-Match`.
//!
//! The document is built from the registry on each request, so creating, changing or deleting
//! a CRD republishes it at once.

pub(crate) mod builtin;

use builtin::DEFINITIONS;
mod crd;
mod paths;
pub(crate) mod proto;
pub(crate) mod serve;

use serde_json::{Map, Value, json};

use crate::registry::{ResourceInfo, Source};
use crate::state::Inner;

/// A `$ref` to definition `name`.
fn reference(name: &str) -> String {
    format!("{DEFINITIONS}{name}")
}

/// The Swagger 2.0 document of every resource served in `cluster`.
pub(crate) fn document(inner: &Inner, cluster: &str) -> Value {
    let builtins = builtin::definitions();
    let mut definitions = builtins.definitions.clone();
    let mut paths = Map::new();
    for res in inner.registry.all(cluster) {
        for version in &res.versions {
            let Some(name) = definition(&res, &version.name, builtins, &mut definitions) else {
                continue;
            };
            let list_name = list_definition(&res, &version.name, &name, &mut definitions);
            paths::add(&mut paths, &res, &version.name, &name, list_name.as_deref());
        }
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": crate::version::git_version()},
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {
            "BearerToken": {
                "description": "Bearer Token authentication",
                "type": "apiKey",
                "name": "authorization",
                "in": "header",
            },
        },
        "security": [{"BearerToken": []}],
    })
}

/// The definition name of a resource version, adding a custom resource's definition.
fn definition(
    res: &ResourceInfo,
    version: &str,
    builtins: &builtin::Definitions,
    definitions: &mut Map<String, Value>,
) -> Option<String> {
    match &res.source {
        Source::Builtin(kind) => builtins.names.get(kind).cloned(),
        Source::Crd(_) => {
            let name = super::schema_name(&res.group, version, &res.kind);
            let schema = res
                .version(version)
                .and_then(|v| v.schema.as_ref())
                .map(|s| s.value());
            definitions.insert(
                name.clone(),
                crd::definition(res, version, schema.as_deref()),
            );
            Some(name)
        }
    }
}

/// Adds the list kind's definition (`ConfigMapList`, `ManagedClusterList`) and returns its
/// name; `None` for resources that cannot be listed (reviews).
fn list_definition(
    res: &ResourceInfo,
    version: &str,
    item: &str,
    definitions: &mut Map<String, Value>,
) -> Option<String> {
    if !res.allows("list") {
        return None;
    }
    let name = match item.strip_suffix(&res.kind) {
        Some(prefix) => format!("{prefix}{}", res.list_kind),
        None => format!("{item}List"),
    };
    if definitions.contains_key(&name) {
        return Some(name);
    }
    let mut properties: Map<String, Value> = super::type_meta_properties().into_iter().collect();
    properties.insert(
        "items".into(),
        json!({
            "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", res.plural),
            "type": "array",
            "items": {"$ref": reference(item)},
        }),
    );
    properties.insert(
        "metadata".into(),
        json!({
            "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
            "$ref": reference(builtin::LIST_META),
        }),
    );
    let list = json!({
        "description": format!("{} is a list of {}", res.list_kind, res.kind),
        "type": "object",
        "required": ["items"],
        "properties": properties,
        "x-kubernetes-group-version-kind": builtin::gvk_extension(&res.group, version, &res.list_kind),
    });
    definitions.insert(name.clone(), list);
    Some(name)
}
