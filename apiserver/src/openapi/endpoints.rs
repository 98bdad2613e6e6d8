//! The operations the server serves for one resource version, shared by the OpenAPI v2 and v3
//! documents: which paths exist and which methods each path answers.

use crate::registry::ResourceInfo;

/// One HTTP operation on a resource path.
pub(super) struct Endpoint {
    /// The path, with `{namespace}` and `{name}` placeholders.
    pub path: String,
    /// `get`, `put`, `post`, `patch` or `delete`.
    pub method: &'static str,
    /// The `x-kubernetes-action`: `get`, `list`, `post`, `put`, `patch` or `delete`.
    pub action: &'static str,
    /// The verb of the operation id: `read`, `list`, `create`, `replace`, `patch`, `delete`.
    pub verb: &'static str,
    /// The subresource (`status`, `scale`, …), if any.
    pub subresource: Option<String>,
}

impl Endpoint {
    /// Whether the request carries a body (create, replace, patch).
    pub fn with_body(&self) -> bool {
        matches!(self.method, "put" | "post" | "patch")
    }
}

/// The URL prefix of a group-version: `/api/v1` or `/apis/{group}/{version}`.
pub(super) fn prefix(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// Every operation of `res` at `version`: the collection (list, create), the object (read,
/// replace, patch, delete) and its subresources (read, replace, patch). Create-only resources
/// (reviews) have just the create operation.
pub(super) fn endpoints(res: &ResourceInfo, version: &str) -> Vec<Endpoint> {
    let prefix = prefix(&res.group, version);
    let collection = if res.namespaced {
        format!("{prefix}/namespaces/{{namespace}}/{}", res.plural)
    } else {
        format!("{prefix}/{}", res.plural)
    };
    let item = format!("{collection}/{{name}}");
    let op = |path: &str, method, action, verb, subresource: Option<&String>| Endpoint {
        path: path.to_owned(),
        method,
        action,
        verb,
        subresource: subresource.cloned(),
    };
    if res.allows("create") && !res.allows("get") {
        return vec![op(&collection, "post", "post", "create", None)];
    }
    let mut out = vec![
        op(&collection, "get", "list", "list", None),
        op(&collection, "post", "post", "create", None),
        op(&item, "get", "get", "read", None),
        op(&item, "put", "put", "replace", None),
        op(&item, "patch", "patch", "patch", None),
        op(&item, "delete", "delete", "delete", None),
    ];
    for sub in res.subresources(version) {
        let path = format!("{item}/{sub}");
        out.push(op(&path, "get", "get", "read", Some(&sub)));
        out.push(op(&path, "put", "put", "replace", Some(&sub)));
        out.push(op(&path, "patch", "patch", "patch", Some(&sub)));
    }
    out
}
