//! The authorization attributes of an HTTP request, derived exactly as kube-apiserver's
//! `RequestInfoFactory` derives them: verb from the method (`get` on a collection is `list`, or
//! `watch` with `watch=true`; `delete` on a collection is `deletecollection`), the legacy
//! `/watch/` and `/proxy/` path verbs, the namespace from `/namespaces/{ns}/`, and
//! `/namespaces/{name}` itself addressing namespace `name` **in namespace `name`** (so a
//! RoleBinding can grant reading one's own namespace). A list or watch with
//! `fieldSelector=metadata.name=<n>` is authorized as naming `<n>`. A list, watch or
//! deletecollection carries its `fieldSelector` and `labelSelector` as selector attributes
//! (kube's `AuthorizeWithSelectors`).

use crate::auth::Identity;
use crate::request::Query;
use ocm_apiserver_rbac::{Attributes, ResourceAttributes, SelectorAttributes, Target};
use ocm_apiserver_selector::FieldSelector;

/// Go's `strconv.ParseBool` truthy values.
fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// kube's `path.IsValidPathSegmentName`.
fn valid_path_segment(name: &str) -> bool {
    name != "." && name != ".." && !name.contains('/') && !name.contains('%')
}

/// The attributes of a request by `user`: `method` is the HTTP method, `path` the URL path
/// (percent-decoded, without any `/clusters/{name}` prefix), `query` the raw query string.
pub fn request_attributes(
    user: Identity,
    method: &str,
    path: &str,
    query: Option<&str>,
) -> Attributes {
    let non_resource =
        |user: Identity| Attributes::non_resource(user, &method.to_lowercase(), path);
    let parts: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|p| !p.is_empty())
        .collect();
    if parts.len() < 3 || !matches!(parts[0], "api" | "apis") {
        return non_resource(user);
    }
    let (group, mut rest) = if parts[0] == "api" {
        ("", &parts[2..])
    } else {
        if parts.len() < 4 {
            return non_resource(user);
        }
        (parts[1], &parts[3..])
    };
    let mut verb = match rest.first().copied() {
        Some(special @ ("watch" | "proxy")) => {
            if rest.len() < 2 {
                // kube fails to build request info here; nothing can match such a request.
                return non_resource(user);
            }
            rest = &rest[1..];
            special.to_owned()
        }
        _ => match method {
            "POST" => "create",
            "GET" | "HEAD" => "get",
            "PUT" => "update",
            "PATCH" => "patch",
            "DELETE" => "delete",
            _ => "",
        }
        .to_owned(),
    };
    let mut namespace = String::new();
    if rest.first() == Some(&"namespaces") && rest.len() > 1 {
        namespace = rest[1].to_owned();
        if rest.len() > 2 && !matches!(rest[2], "status" | "finalize") {
            rest = &rest[2..];
        }
    }
    let mut attrs = ResourceAttributes {
        namespace,
        group: group.to_owned(),
        ..ResourceAttributes::default()
    };
    if let Some(r) = rest.first() {
        attrs.resource = (*r).to_owned();
    }
    if let Some(n) = rest.get(1) {
        attrs.name = (*n).to_owned();
    }
    if let Some(s) = rest.get(2)
        && verb != "proxy"
    {
        attrs.subresource = (*s).to_owned();
    }
    if attrs.name.is_empty() && verb == "get" {
        let q = Query::parse(query);
        let watch = q
            .get("watch")
            .is_some_and(|w| parse_bool(w).unwrap_or(true));
        verb = if watch { "watch" } else { "list" }.to_owned();
        if let Some(selector) = q.get("fieldSelector")
            && let Ok(fs) = FieldSelector::parse(selector)
            && let Some(name) = fs.exact_match("metadata.name")
            && valid_path_segment(name)
        {
            attrs.name = name.to_owned();
        }
    }
    if attrs.name.is_empty() && verb == "delete" {
        verb = "deletecollection".to_owned();
    }
    if matches!(verb.as_str(), "list" | "watch" | "deletecollection") {
        let q = Query::parse(query);
        attrs.selectors = SelectorAttributes::parse(
            q.get("fieldSelector").unwrap_or(""),
            q.get("labelSelector").unwrap_or(""),
        );
    }
    Attributes {
        user,
        verb,
        target: Target::Resource(attrs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Verb and target, the target's selectors left out (see `list_selectors`).
    fn attrs(method: &str, path: &str, query: Option<&str>) -> (String, Target) {
        let mut a = request_attributes(Identity::admin(), method, path, query);
        if let Target::Resource(r) = &mut a.target {
            r.selectors = SelectorAttributes::default();
        }
        (a.verb, a.target)
    }

    fn selectors(method: &str, path: &str, query: &str) -> SelectorAttributes {
        match request_attributes(Identity::admin(), method, path, Some(query)).target {
            Target::Resource(r) => r.selectors,
            Target::NonResource { .. } => panic!("not a resource request"),
        }
    }

    fn res(ns: &str, group: &str, resource: &str, sub: &str, name: &str) -> Target {
        Target::Resource(ResourceAttributes {
            namespace: ns.into(),
            group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            ..ResourceAttributes::default()
        })
    }

    #[test]
    fn verbs_and_targets() {
        let cases: Vec<(&str, &str, Option<&str>, &str, Target)> = vec![
            (
                "GET",
                "/api/v1/pods",
                None,
                "list",
                res("", "", "pods", "", ""),
            ),
            (
                "GET",
                "/api/v1/namespaces/ns/pods",
                Some("watch=true"),
                "watch",
                res("ns", "", "pods", "", ""),
            ),
            (
                "GET",
                "/api/v1/namespaces/ns/pods",
                Some("watch=false"),
                "list",
                res("ns", "", "pods", "", ""),
            ),
            (
                "GET",
                "/api/v1/namespaces/ns/pods",
                Some("watch=1&x=y"),
                "watch",
                res("ns", "", "pods", "", ""),
            ),
            (
                "GET",
                "/api/v1/namespaces/ns/pods/p",
                None,
                "get",
                res("ns", "", "pods", "", "p"),
            ),
            (
                "GET",
                "/api/v1/namespaces/ns/pods/p/log",
                None,
                "get",
                res("ns", "", "pods", "log", "p"),
            ),
            (
                "HEAD",
                "/api/v1/namespaces/ns/pods/p",
                None,
                "get",
                res("ns", "", "pods", "", "p"),
            ),
            (
                "POST",
                "/apis/apps/v1/namespaces/ns/deployments",
                None,
                "create",
                res("ns", "apps", "deployments", "", ""),
            ),
            (
                "PUT",
                "/apis/apps/v1/namespaces/ns/deployments/d/status",
                None,
                "update",
                res("ns", "apps", "deployments", "status", "d"),
            ),
            (
                "PATCH",
                "/apis/apps/v1/namespaces/ns/deployments/d/scale",
                None,
                "patch",
                res("ns", "apps", "deployments", "scale", "d"),
            ),
            (
                "DELETE",
                "/api/v1/namespaces/ns/secrets/s",
                None,
                "delete",
                res("ns", "", "secrets", "", "s"),
            ),
            (
                "DELETE",
                "/api/v1/namespaces/ns/secrets",
                None,
                "deletecollection",
                res("ns", "", "secrets", "", ""),
            ),
            (
                "GET",
                "/api/v1/namespaces",
                None,
                "list",
                res("", "", "namespaces", "", ""),
            ),
            (
                "GET",
                "/api/v1/namespaces/team",
                None,
                "get",
                res("team", "", "namespaces", "", "team"),
            ),
            (
                "PUT",
                "/api/v1/namespaces/team/finalize",
                None,
                "update",
                res("team", "", "namespaces", "finalize", "team"),
            ),
            (
                "PATCH",
                "/api/v1/namespaces/team/status",
                None,
                "patch",
                res("team", "", "namespaces", "status", "team"),
            ),
            (
                "DELETE",
                "/api/v1/namespaces/team",
                None,
                "delete",
                res("team", "", "namespaces", "", "team"),
            ),
            (
                "GET",
                "/api/v1/watch/namespaces/ns/pods",
                None,
                "watch",
                res("ns", "", "pods", "", ""),
            ),
            (
                "GET",
                "/api/v1/watch/namespaces/ns/pods/p",
                None,
                "watch",
                res("ns", "", "pods", "", "p"),
            ),
            (
                "GET",
                "/api/v1/proxy/namespaces/ns/pods/p/x/y",
                None,
                "proxy",
                res("ns", "", "pods", "", "p"),
            ),
            (
                "GET",
                "/api/v1/namespaces/ns/secrets",
                Some("fieldSelector=metadata.name%3Dmine"),
                "list",
                res("ns", "", "secrets", "", "mine"),
            ),
            (
                "GET",
                "/api/v1/namespaces/ns/secrets",
                Some("fieldSelector=metadata.name%3D%3Dmine&watch=true"),
                "watch",
                res("ns", "", "secrets", "", "mine"),
            ),
            (
                "GET",
                "/api/v1/namespaces/ns/secrets",
                Some("fieldSelector=metadata.name!%3Dmine"),
                "list",
                res("ns", "", "secrets", "", ""),
            ),
            (
                "GET",
                "/api/v1/namespaces/ns/secrets",
                Some("fieldSelector=metadata.name%3D.."),
                "list",
                res("ns", "", "secrets", "", ""),
            ),
            (
                "POST",
                "/api/v1/namespaces/ns/serviceaccounts/sa/token",
                None,
                "create",
                res("ns", "", "serviceaccounts", "token", "sa"),
            ),
            (
                "PUT",
                "/apis/certificates.k8s.io/v1/certificatesigningrequests/c/approval",
                None,
                "update",
                res(
                    "",
                    "certificates.k8s.io",
                    "certificatesigningrequests",
                    "approval",
                    "c",
                ),
            ),
            (
                "GET",
                "/apis/example.com/v1/widgets",
                None,
                "list",
                res("", "example.com", "widgets", "", ""),
            ),
        ];
        for (method, path, query, verb, target) in cases {
            let got = attrs(method, path, query);
            assert_eq!(got, (verb.to_owned(), target), "{method} {path} {query:?}");
        }
    }

    #[test]
    fn list_selectors() {
        let q = "fieldSelector=spec.nodeName%3Dn1&labelSelector=app%3Dweb";
        let both = SelectorAttributes::parse("spec.nodeName=n1", "app=web");
        for (method, path, query) in [
            ("GET", "/api/v1/namespaces/ns/pods", q.to_owned()),
            (
                "GET",
                "/api/v1/namespaces/ns/pods",
                format!("{q}&watch=true"),
            ),
            ("GET", "/api/v1/watch/namespaces/ns/pods", q.to_owned()),
            ("DELETE", "/api/v1/namespaces/ns/pods", q.to_owned()),
        ] {
            assert_eq!(selectors(method, path, &query), both, "{method} {path}");
        }
        // Other verbs carry none; an empty selector is none; a bad one is its parse error.
        let none = SelectorAttributes::default();
        assert_eq!(selectors("GET", "/api/v1/namespaces/ns/pods/p", q), none);
        assert_eq!(selectors("DELETE", "/api/v1/namespaces/ns/pods/p", q), none);
        assert_eq!(selectors("POST", "/api/v1/namespaces/ns/pods", q), none);
        assert_eq!(
            selectors("GET", "/api/v1/pods", "fieldSelector=&labelSelector="),
            none
        );
        let bad = selectors("GET", "/api/v1/pods", "labelSelector=a%20in");
        assert!(matches!(bad.label, Some(Err(_))), "{bad:?}");
        // A name taken from the field selector keeps the selector too.
        let named = selectors("GET", "/api/v1/pods", "fieldSelector=metadata.name%3Dp");
        assert_eq!(named, SelectorAttributes::parse("metadata.name=p", ""));
    }

    #[test]
    fn non_resource_paths() {
        for (method, path, verb) in [
            ("GET", "/version", "get"),
            ("GET", "/api", "get"),
            ("GET", "/api/v1", "get"),
            ("GET", "/apis", "get"),
            ("GET", "/apis/apps", "get"),
            ("GET", "/apis/apps/v1", "get"),
            ("POST", "/healthz", "post"),
            ("GET", "/openapi/v3/apis/apps/v1", "get"),
            ("GET", "/api/v1/watch", "get"),
            ("OPTIONS", "/foo", "options"),
        ] {
            let (v, target) = attrs(method, path, None);
            assert_eq!(v, verb, "{path}");
            assert_eq!(target, Target::NonResource { path: path.into() }, "{path}");
        }
    }
}
