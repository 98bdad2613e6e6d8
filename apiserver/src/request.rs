//! Request routing: the URL path (with an optional `/clusters/{name}` prefix) and the query.

mod duration;

use std::collections::HashMap;

pub use duration::parse_go_duration;

/// What a URL path addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// `/api`.
    CoreRoot,
    /// `/apis`.
    GroupsRoot,
    /// `/apis/{group}`.
    Group(String),
    /// `/api/v1` or `/apis/{group}/{version}`.
    GroupVersion(String, String),
    /// A resource, collection or subresource.
    Resource(ResourcePath),
    /// `/version`.
    Version,
    /// `/healthz`, `/livez`, `/readyz`, or one of their checks (`/readyz/etcd`).
    Health(Endpoint, Option<String>),
    /// `/metrics`.
    Metrics,
    /// `/openapi/v2`.
    OpenApiV2,
    /// `/openapi/v3`.
    OpenApiV3Root,
    /// `/openapi/v3/{api/v1 | apis/g/v}`.
    OpenApiV3(String),
    /// Anything else.
    Unknown,
}

/// A resource path: `/api/v1/[namespaces/{ns}/]{resource}[/{name}[/{subresource}]]` or the
/// same under `/apis/{group}/{version}`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ResourcePath {
    /// API group; empty for core.
    pub group: String,
    /// Version.
    pub version: String,
    /// Namespace from the path.
    pub namespace: Option<String>,
    /// Plural resource.
    pub resource: String,
    /// Object name.
    pub name: Option<String>,
    /// Subresource.
    pub subresource: Option<String>,
}

/// Splits a `/clusters/{name}` prefix off a path: (cluster, rest). No prefix → `None`.
pub fn split_cluster(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix("/clusters/")?;
    match rest.find('/') {
        Some(i) => Some((&rest[..i], &rest[i..])),
        None => Some((rest, "/")),
    }
}

/// Parses a path (already without cluster prefix).
pub fn parse_route(path: &str) -> Route {
    let trimmed = path.trim_end_matches('/');
    let parts: Vec<String> = trimmed
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    if let [first, rest @ ..] = parts.as_slice()
        && let Some(endpoint) = Endpoint::from_segment(first)
    {
        return Route::Health(endpoint, (!rest.is_empty()).then(|| rest.join("/")));
    }
    match parts.as_slice() {
        ["api"] => Route::CoreRoot,
        ["apis"] => Route::GroupsRoot,
        ["apis", g] => Route::Group((*g).to_owned()),
        ["api", v] => Route::GroupVersion(String::new(), (*v).to_owned()),
        ["apis", g, v] => Route::GroupVersion((*g).to_owned(), (*v).to_owned()),
        ["api", v, rest @ ..] => resource_route("", v, rest),
        ["apis", g, v, rest @ ..] => resource_route(g, v, rest),
        ["version"] => Route::Version,
        ["metrics"] => Route::Metrics,
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiV3Root,
        ["openapi", "v3", rest @ ..] => Route::OpenApiV3(rest.join("/")),
        _ => Route::Unknown,
    }
}

fn resource_route(group: &str, version: &str, rest: &[&str]) -> Route {
    let mut parts = rest;
    let mut namespace = None;
    if parts.first() == Some(&"namespaces") && parts.len() > 1 {
        namespace = Some(parts[1].to_owned());
        if parts.len() > 2 && parts[2] != "status" && parts[2] != "finalize" {
            parts = &parts[2..];
        } else {
            // The namespace object itself (or its subresource).
            namespace = None;
        }
    }
    let (resource, name, sub) = match parts {
        [r] => (*r, None, None),
        [r, n] => (*r, Some((*n).to_owned()), None),
        [r, n, s] => (*r, Some((*n).to_owned()), Some((*s).to_owned())),
        _ => return Route::Unknown,
    };
    Route::Resource(ResourcePath {
        group: group.to_owned(),
        version: version.to_owned(),
        namespace,
        resource: resource.to_owned(),
        name,
        subresource: sub,
    })
}

/// Decodes `%XX` escapes (and `+` as space when `plus` is set).
fn decode(s: &str, plus: bool) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' if plus => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Decodes a path segment.
pub fn percent_decode(s: &str) -> String {
    decode(s, false)
}

/// The parsed query string: the first value of each parameter.
#[derive(Clone, Debug, Default)]
pub struct Query {
    params: HashMap<String, String>,
}

impl Query {
    /// Parses `a=b&c=d`.
    pub fn parse(query: Option<&str>) -> Self {
        let mut params = HashMap::new();
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            params
                .entry(decode(k, true))
                .or_insert_with(|| decode(v, true));
        }
        Query { params }
    }

    /// A parameter's value.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.params.get(key).map(String::as_str)
    }

    /// A parameter, treating empty as absent.
    pub fn non_empty(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }

    /// A boolean parameter (`true`/`1`).
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1" | "True" | "TRUE"))
    }
}

/// Every value of a repeatable query parameter (`exclude=a&exclude=b`), decoded, in order.
pub fn query_values(query: Option<&str>, key: &str) -> Vec<String> {
    query
        .unwrap_or("")
        .split('&')
        .filter_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k, true) == key).then(|| decode(v, true))
        })
        .collect()
}

/// kube-apiserver's request-deadline check (`WithRequestDeadline`, which runs before
/// authentication): the message of the 400 answer when the `timeout` parameter is not a Go
/// duration. Long-running requests (watch, proxy, exec...) are not checked; the caller tells
/// them apart.
pub fn invalid_timeout(query: &Query) -> Option<String> {
    let value = query.non_empty("timeout")?;
    parse_go_duration(value)
        .err()
        .map(|err| format!("invalid timeout specified in the request URL - {err}"))
}

/// The three health endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// `/healthz` (deprecated in kube in favour of the other two, still served).
    Healthz,
    /// `/livez`: whether the process should be restarted.
    Livez,
    /// `/readyz`: whether the server should get traffic.
    Readyz,
}

impl Endpoint {
    /// The endpoint of a path's first segment.
    pub fn from_segment(segment: &str) -> Option<Endpoint> {
        match segment {
            "healthz" => Some(Endpoint::Healthz),
            "livez" => Some(Endpoint::Livez),
            "readyz" => Some(Endpoint::Readyz),
            _ => None,
        }
    }

    /// The path segment, also the word of `<name> check passed`.
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::Healthz => "healthz",
            Endpoint::Livez => "livez",
            Endpoint::Readyz => "readyz",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(
        group: &str,
        ns: Option<&str>,
        resource: &str,
        name: Option<&str>,
        sub: Option<&str>,
    ) -> Route {
        Route::Resource(ResourcePath {
            group: group.into(),
            version: "v1".into(),
            namespace: ns.map(Into::into),
            resource: resource.into(),
            name: name.map(Into::into),
            subresource: sub.map(Into::into),
        })
    }

    #[test]
    fn routes() {
        assert_eq!(parse_route("/api"), Route::CoreRoot);
        assert_eq!(parse_route("/apis/"), Route::GroupsRoot);
        assert_eq!(
            parse_route("/api/v1"),
            Route::GroupVersion("".into(), "v1".into())
        );
        assert_eq!(
            parse_route("/api/v1/namespaces"),
            res("", None, "namespaces", None, None)
        );
        assert_eq!(
            parse_route("/api/v1/namespaces/a"),
            res("", None, "namespaces", Some("a"), None)
        );
        assert_eq!(
            parse_route("/api/v1/namespaces/a/finalize"),
            res("", None, "namespaces", Some("a"), Some("finalize"))
        );
        assert_eq!(
            parse_route("/api/v1/namespaces/a/configmaps"),
            res("", Some("a"), "configmaps", None, None)
        );
        assert_eq!(
            parse_route("/apis/g/v1/namespaces/a/widgets/w/status"),
            res("g", Some("a"), "widgets", Some("w"), Some("status"))
        );
        assert_eq!(
            parse_route("/apis/g/v1/widgets"),
            res("g", None, "widgets", None, None)
        );
        assert_eq!(
            parse_route("/openapi/v3/apis/g/v1"),
            Route::OpenApiV3("apis/g/v1".into())
        );
        assert_eq!(parse_route("/apis/g/v1/a/b/c/d"), Route::Unknown);
        assert_eq!(
            split_cluster("/clusters/c1/api/v1"),
            Some(("c1", "/api/v1"))
        );
    }

    #[test]
    fn query() {
        let q = Query::parse(Some("labelSelector=a%3Db%2Cc+in+(x)&watch=true&x"));
        assert_eq!(q.get("labelSelector"), Some("a=b,c in (x)"));
        assert!(q.flag("watch"));
        assert_eq!(q.get("x"), Some(""));
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn timeout() {
        let q = |s: &str| Query::parse(Some(s));
        assert_eq!(invalid_timeout(&q("timeout=10s")), None);
        assert_eq!(invalid_timeout(&q("timeout=")), None);
        assert_eq!(
            invalid_timeout(&q("timeout=foo")).as_deref(),
            Some(r#"invalid timeout specified in the request URL - time: invalid duration "foo""#)
        );
        assert_eq!(
            invalid_timeout(&q("timeout=5")).as_deref(),
            Some(
                r#"invalid timeout specified in the request URL - time: missing unit in duration "5""#
            )
        );
    }
}
