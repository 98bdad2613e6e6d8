//! Swagger 2.0 path items: the operations of [`super::super::endpoints`] with their
//! parameters, request and response schemas, `x-kubernetes-action` and
//! `x-kubernetes-group-version-kind` (kubectl looks up the `fieldValidation` parameter and the
//! patch media types of a kind's PATCH operation).

use serde_json::{Map, Value, json};

use super::builtin::{DELETE_OPTIONS, PATCH, SCALE, STATUS};
use super::reference;
use crate::openapi::endpoints::{Endpoint, endpoints};
use crate::registry::ResourceInfo;
use ocm_apiserver_patch::typeinfo::supports_strategic_merge_patch;

/// Query parameters by action: name, type, description.
const LIST_PARAMS: &[(&str, &str, &str)] = &[
    (
        "allowWatchBookmarks",
        "boolean",
        "allowWatchBookmarks requests watch events with type \"BOOKMARK\".",
    ),
    (
        "continue",
        "string",
        "The continue option should be set when retrieving more results from the server.",
    ),
    (
        "fieldSelector",
        "string",
        "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
    ),
    (
        "labelSelector",
        "string",
        "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
    ),
    (
        "limit",
        "integer",
        "limit is a maximum number of responses to return for a list call.",
    ),
    (
        "resourceVersion",
        "string",
        "resourceVersion sets a constraint on what resource versions a request may be served from.",
    ),
    (
        "resourceVersionMatch",
        "string",
        "resourceVersionMatch determines how resourceVersion is applied to list calls.",
    ),
    (
        "sendInitialEvents",
        "boolean",
        "`sendInitialEvents=true` may be set together with `watch=true`.",
    ),
    (
        "timeoutSeconds",
        "integer",
        "Timeout for the list/watch call.",
    ),
    (
        "watch",
        "boolean",
        "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.",
    ),
];
const WRITE_PARAMS: &[(&str, &str, &str)] = &[
    (
        "dryRun",
        "string",
        "When present, indicates that modifications should not be persisted.",
    ),
    (
        "fieldManager",
        "string",
        "fieldManager is a name associated with the actor or entity that is making these changes.",
    ),
    (
        "fieldValidation",
        "string",
        "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: Ignore, Warn, Strict.",
    ),
];
const FORCE_PARAM: (&str, &str, &str) = (
    "force",
    "boolean",
    "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people.",
);
const DELETE_PARAMS: &[(&str, &str, &str)] = &[
    (
        "dryRun",
        "string",
        "When present, indicates that modifications should not be persisted.",
    ),
    (
        "gracePeriodSeconds",
        "integer",
        "The duration in seconds before the object should be deleted.",
    ),
    (
        "orphanDependents",
        "boolean",
        "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7.",
    ),
    (
        "propagationPolicy",
        "string",
        "Whether and how garbage collection will be performed. Acceptable values are: 'Orphan', 'Foreground' and 'Background'.",
    ),
];

fn query(&(name, ty, description): &(&str, &str, &str)) -> Value {
    json!({"uniqueItems": true, "type": ty, "description": description, "name": name, "in": "query"})
}

fn body(schema: &str, required: bool) -> Value {
    json!({"name": "body", "in": "body", "required": required, "schema": {"$ref": reference(schema)}})
}

/// The parameters every operation of a path shares: `name`, `namespace`, `pretty`.
fn path_parameters(path: &str, kind: &str) -> Value {
    let mut params = Vec::new();
    if path.contains("{name}") {
        params.push(json!({"uniqueItems": true, "type": "string", "description": format!("name of the {kind}"), "name": "name", "in": "path", "required": true}));
    }
    if path.contains("{namespace}") {
        params.push(json!({"uniqueItems": true, "type": "string", "description": "object name and auth scope, such as for teams and projects", "name": "namespace", "in": "path", "required": true}));
    }
    params.push(query(&(
        "pretty",
        "string",
        "If 'true', then the output is pretty printed.",
    )));
    Value::Array(params)
}

/// `apps` → `Apps`, `rbac.authorization.k8s.io` → `RbacAuthorization`, `` → `Core`,
/// `cluster.open-cluster-management.io` → `ClusterOpenClusterManagementIo`.
fn group_id(group: &str) -> String {
    if group.is_empty() {
        return "Core".into();
    }
    let group = group.strip_suffix(".k8s.io").unwrap_or(group);
    group.split(['.', '-']).map(capitalized).collect()
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// Adds the path items of `res` at `version`; `item` and `list` are its definition names.
pub(super) fn add(
    paths: &mut Map<String, Value>,
    res: &ResourceInfo,
    version: &str,
    item: &str,
    list: Option<&str>,
) {
    for ep in endpoints(res, version) {
        let entry = paths
            .entry(ep.path.clone())
            .or_insert_with(|| json!({"parameters": path_parameters(&ep.path, &res.kind)}));
        if let Some(entry) = entry.as_object_mut() {
            entry.insert(ep.method.into(), operation(res, version, &ep, item, list));
        }
    }
}

/// The media types a PATCH accepts: strategic merge patch only for built-in kinds.
fn patch_types(res: &ResourceInfo) -> Vec<&'static str> {
    let mut types = vec![
        "application/json-patch+json",
        "application/merge-patch+json",
    ];
    if supports_strategic_merge_patch(&res.group, &res.kind) {
        types.push("application/strategic-merge-patch+json");
    }
    types.push("application/apply-patch+yaml");
    types
}

fn operation(
    res: &ResourceInfo,
    version: &str,
    ep: &Endpoint,
    item: &str,
    list: Option<&str>,
) -> Value {
    let sub = ep.subresource.as_deref().unwrap_or("");
    let object = if sub == "scale" { SCALE } else { item };
    let mut params: Vec<Value> = Vec::new();
    let response = match ep.action {
        "list" => {
            params.extend(LIST_PARAMS.iter().map(query));
            list.unwrap_or(item)
        }
        "post" | "put" => {
            params.push(body(object, true));
            params.extend(WRITE_PARAMS.iter().map(query));
            object
        }
        "patch" => {
            params.push(body(PATCH, true));
            params.extend(WRITE_PARAMS.iter().chain([&FORCE_PARAM]).map(query));
            object
        }
        "delete" => {
            params.push(body(DELETE_OPTIONS, false));
            params.extend(DELETE_PARAMS.iter().map(query));
            STATUS
        }
        _ => object,
    };
    let consumes = if ep.action == "patch" {
        patch_types(res)
    } else {
        vec!["*/*"]
    };
    let namespaced = if res.namespaced { "Namespaced" } else { "" };
    let op_id = format!(
        "{}{}{}{namespaced}{}{}",
        ep.verb,
        group_id(&res.group),
        capitalized(version),
        res.kind,
        capitalized(sub),
    );
    let tag = format!(
        "{}_{version}",
        if res.group.is_empty() {
            "core".to_owned()
        } else {
            let id = group_id(&res.group);
            let mut chars = id.chars();
            chars
                .next()
                .map(|c| c.to_lowercase().chain(chars).collect())
                .unwrap_or_default()
        }
    );
    let mut responses = json!({
        "200": {"description": "OK", "schema": {"$ref": reference(response)}},
        "401": {"description": "Unauthorized"},
    });
    if ep.action == "post" {
        responses["201"] =
            json!({"description": "Created", "schema": {"$ref": reference(response)}});
        responses["202"] =
            json!({"description": "Accepted", "schema": {"$ref": reference(response)}});
    }
    json!({
        "description": format!("{} {}{}", ep.verb, if sub.is_empty() { "the specified " } else { "" }, res.kind),
        "consumes": consumes,
        "produces": ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"],
        "schemes": ["https"],
        "tags": [tag],
        "operationId": op_id,
        "parameters": params,
        "responses": responses,
        "x-kubernetes-action": ep.action,
        "x-kubernetes-group-version-kind": {"group": res.group, "version": version, "kind": res.kind},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_ids() {
        assert_eq!(group_id(""), "Core");
        assert_eq!(group_id("rbac.authorization.k8s.io"), "RbacAuthorization");
        assert_eq!(
            group_id("cluster.open-cluster-management.io"),
            "ClusterOpenClusterManagementIo"
        );
    }
}
