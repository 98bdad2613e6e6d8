//! `/metrics`: the request counter kube-apiserver exposes (`apiserver_request_total`, same name
//! and labels), in Prometheus text format. It is how a fleet's relists are counted: every list
//! an agent makes after a hub restart shows as a `LIST`.

use std::sync::Mutex;

use http::StatusCode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use crate::auth::Identity;
use crate::rbac::Target;

/// The labels of `apiserver_request_total`, as kube-apiserver names them.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    verb: String,
    dry_run: String,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    scope: String,
    component: String,
    code: String,
}

/// The server's metrics registry.
pub(crate) struct Metrics {
    registry: Mutex<Registry>,
    requests: Family<RequestLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
            requests.clone(),
        );
        Metrics {
            registry: Mutex::new(registry),
            requests,
        }
    }
}

/// What one request was, for the counter.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct RequestKind {
    /// kube's metric verb: `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `APPLY`, `DELETE`,
    /// `DELETECOLLECTION`, or the HTTP method of a non-resource request.
    pub verb: String,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    /// `cluster`, `namespace`, `resource` (one named object), or empty for non-resource paths.
    scope: String,
    dry_run: bool,
}

impl RequestKind {
    /// Classifies a request from its method, path (without a `/clusters/{name}` prefix), query
    /// and content type.
    pub(crate) fn of(method: &str, path: &str, query: Option<&str>, content_type: &str) -> Self {
        let attrs = crate::rbac::request_attributes(Identity::system(), method, path, query);
        let Target::Resource(target) = attrs.target else {
            return RequestKind {
                verb: method.to_owned(),
                ..RequestKind::default()
            };
        };
        let verb = match attrs.verb.as_str() {
            "create" => "POST".to_owned(),
            "update" => "PUT".to_owned(),
            "patch" if content_type.starts_with("application/apply-patch") => "APPLY".to_owned(),
            other => other.to_uppercase(),
        };
        let version = match path.trim_start_matches('/').split('/').collect::<Vec<_>>()[..] {
            ["api", version, ..] => version.to_owned(),
            ["apis", _, version, ..] => version.to_owned(),
            _ => String::new(),
        };
        let scope = if !target.name.is_empty() {
            "resource"
        } else if !target.namespace.is_empty() {
            "namespace"
        } else {
            "cluster"
        };
        let dry_run = query.is_some_and(|q| {
            q.split('&')
                .any(|pair| pair.starts_with("dryRun=") && pair != "dryRun=")
        });
        RequestKind {
            verb,
            group: target.group,
            version,
            resource: target.resource,
            subresource: target.subresource,
            scope: scope.to_owned(),
            dry_run,
        }
    }
}

impl Metrics {
    /// Counts one answered request.
    pub(crate) fn count(&self, kind: RequestKind, status: StatusCode) {
        let labels = RequestLabels {
            verb: kind.verb,
            dry_run: if kind.dry_run { "All" } else { "" }.to_owned(),
            group: kind.group,
            version: kind.version,
            resource: kind.resource,
            subresource: kind.subresource,
            scope: kind.scope,
            component: "apiserver".to_owned(),
            code: status.as_u16().to_string(),
        };
        self.requests.get_or_create(&labels).inc();
    }

    /// The `/metrics` document.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        let registry = self
            .registry
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if prometheus_client::encoding::text::encode(&mut out, &registry).is_err() {
            out.clear();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verb(method: &str, path: &str, query: Option<&str>, content_type: &str) -> String {
        RequestKind::of(method, path, query, content_type).verb
    }

    #[test]
    fn verbs_are_kubes_metric_verbs() {
        assert_eq!(verb("GET", "/api/v1/namespaces/a/pods", None, ""), "LIST");
        assert_eq!(
            verb(
                "GET",
                "/api/v1/pods",
                Some("watch=true&resourceVersion=5"),
                ""
            ),
            "WATCH"
        );
        assert_eq!(verb("GET", "/api/v1/namespaces/a/pods/p", None, ""), "GET");
        assert_eq!(verb("POST", "/api/v1/namespaces/a/pods", None, ""), "POST");
        assert_eq!(verb("PUT", "/api/v1/namespaces/a/pods/p", None, ""), "PUT");
        assert_eq!(
            verb(
                "PATCH",
                "/api/v1/namespaces/a/pods/p",
                None,
                "application/merge-patch+json"
            ),
            "PATCH"
        );
        assert_eq!(
            verb(
                "PATCH",
                "/api/v1/namespaces/a/pods/p",
                None,
                "application/apply-patch+yaml"
            ),
            "APPLY"
        );
        assert_eq!(
            verb("DELETE", "/api/v1/namespaces/a/pods", None, ""),
            "DELETECOLLECTION"
        );
        assert_eq!(verb("GET", "/healthz", None, ""), "GET");
    }

    #[test]
    fn labels_name_the_resource_and_scope() {
        let kind = RequestKind::of(
            "GET",
            "/apis/work.open-cluster-management.io/v1/namespaces/c1/manifestworks/w/status",
            Some("dryRun=All"),
            "",
        );
        assert_eq!(kind.group, "work.open-cluster-management.io");
        assert_eq!(kind.version, "v1");
        assert_eq!(kind.resource, "manifestworks");
        assert_eq!(kind.subresource, "status");
        assert_eq!(kind.scope, "resource");
        assert!(kind.dry_run);
        assert_eq!(
            RequestKind::of("GET", "/api/v1/nodes", None, "").scope,
            "cluster"
        );
    }

    #[test]
    fn the_document_has_kubes_metric_name() {
        let metrics = Metrics::default();
        metrics.count(
            RequestKind::of("GET", "/api/v1/namespaces/a/configmaps", None, ""),
            StatusCode::OK,
        );
        let text = metrics.render();
        assert!(
            text.lines()
                .any(|l| l.starts_with("apiserver_request_total{")
                    && l.contains("verb=\"LIST\"")
                    && l.contains("resource=\"configmaps\"")
                    && l.contains("code=\"200\"")
                    && l.ends_with(" 1")),
            "{text}"
        );
    }
}
