//! `/metrics`: the request counter kube-apiserver exposes (`apiserver_request_total`, same name
//! and labels), in Prometheus text format — it is how a fleet's relists are counted: every list
//! an agent makes after a hub restart shows as a `LIST` — and API Priority and Fairness's
//! `apiserver_flowcontrol_dispatched_requests_total`,
//! `apiserver_flowcontrol_current_executing_requests` (by priority level and FlowSchema) and
//! `apiserver_flowcontrol_nominal_limit_seats` (by priority level), for the default cluster.

use std::sync::Mutex;

use http::StatusCode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use ocm_apiserver_rbac::{Attributes, Target};

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

/// The labels of the APF request metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FlowLabels {
    priority_level: String,
    flow_schema: String,
}

/// The label of the APF priority level metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LevelLabels {
    priority_level: String,
}

/// The server's metrics registry.
pub(crate) struct Metrics {
    registry: Mutex<Registry>,
    requests: Family<RequestLabels, Counter>,
    dispatched: Family<FlowLabels, Counter>,
    executing: Family<FlowLabels, Gauge>,
    nominal: Family<LevelLabels, Gauge>,
}

/// A request executing in its priority level; counted out when dropped.
pub(crate) struct Executing {
    gauge: Gauge,
}

impl Drop for Executing {
    fn drop(&mut self) {
        self.gauge.dec();
    }
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
        let dispatched = Family::<FlowLabels, Counter>::default();
        registry.register(
            "apiserver_flowcontrol_dispatched_requests",
            "Number of requests executed by API Priority and Fairness subsystem",
            dispatched.clone(),
        );
        let executing = Family::<FlowLabels, Gauge>::default();
        registry.register(
            "apiserver_flowcontrol_current_executing_requests",
            "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem",
            executing.clone(),
        );
        let nominal = Family::<LevelLabels, Gauge>::default();
        registry.register(
            "apiserver_flowcontrol_nominal_limit_seats",
            "Nominal number of execution seats configured for each priority level",
            nominal.clone(),
        );
        Metrics {
            registry: Mutex::new(registry),
            requests,
            dispatched,
            executing,
            nominal,
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
    #[cfg(test)]
    pub(crate) fn classify(
        method: &str,
        path: &str,
        query: Option<&str>,
        content_type: &str,
    ) -> Self {
        let attrs = crate::request_info::request_attributes(
            crate::auth::Identity::system(),
            method,
            path,
            query,
        );
        RequestKind::of(&attrs, path, query, content_type)
    }

    /// Classifies a request from the attributes read from its path, the path itself (without a
    /// `/clusters/{name}` prefix), query and content type.
    pub(crate) fn of(
        attrs: &Attributes,
        path: &str,
        query: Option<&str>,
        content_type: &str,
    ) -> Self {
        let Target::Resource(target) = &attrs.target else {
            return RequestKind {
                verb: attrs.verb.to_uppercase(),
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
            group: target.group.clone(),
            version,
            resource: target.resource.clone(),
            subresource: target.subresource.clone(),
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

    /// Counts a request dispatched to priority level `level` through FlowSchema `schema`; it
    /// is executing until the returned guard is dropped.
    pub(crate) fn dispatch(&self, level: &str, schema: &str) -> Executing {
        let labels = FlowLabels {
            priority_level: level.to_owned(),
            flow_schema: schema.to_owned(),
        };
        self.dispatched.get_or_create(&labels).inc();
        let gauge = self.executing.get_or_create(&labels).clone();
        gauge.inc();
        Executing { gauge }
    }

    /// Sets every priority level's nominal concurrency limit (levels not given are dropped).
    pub(crate) fn set_nominal_limits(&self, limits: &[(String, i64)]) {
        self.nominal.clear();
        for (level, seats) in limits {
            let labels = LevelLabels {
                priority_level: level.clone(),
            };
            self.nominal.get_or_create(&labels).set(*seats);
        }
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

/// One `apiserver_request_total` sample read back from a `/metrics` document.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestCount {
    /// The sample's labels, by name (`verb`, `resource`, `scope`, `code`, …).
    pub labels: std::collections::BTreeMap<String, String>,
    /// How many requests had those labels.
    pub value: u64,
}

impl RequestCount {
    /// The value of one label, empty when the sample lacks it.
    pub fn label(&self, name: &str) -> &str {
        self.labels.get(name).map(String::as_str).unwrap_or("")
    }
}

/// Reads every `apiserver_request_total` sample of a Prometheus text document (ours or
/// kube-apiserver's); other metrics and malformed lines are skipped.
pub fn request_counts(text: &str) -> Vec<RequestCount> {
    text.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("apiserver_request_total{")?;
            let (labels, value) = rest.rsplit_once('}')?;
            let value = value.split_whitespace().next()?.parse::<f64>().ok()?;
            Some(RequestCount {
                labels: parse_labels(labels),
                value: value as u64,
            })
        })
        .collect()
}

/// Sums the samples of a `/metrics` document that `keep` accepts.
pub fn sum_requests(text: &str, keep: impl Fn(&RequestCount) -> bool) -> u64 {
    request_counts(text)
        .iter()
        .filter(|c| keep(c))
        .map(|c| c.value)
        .sum()
}

/// `name="value",…` with the text format's escapes (`\\`, `\"`, `\n`).
fn parse_labels(text: &str) -> std::collections::BTreeMap<String, String> {
    let mut labels = std::collections::BTreeMap::new();
    let mut rest = text;
    while let Some((name, after)) = rest.split_once("=\"") {
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, other)) => value.push(other),
                    None => {}
                },
                '"' => {
                    end = i + 1;
                    break;
                }
                other => value.push(other),
            }
        }
        labels.insert(name.trim_start_matches(',').trim().to_owned(), value);
        rest = &after[end..];
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verb(method: &str, path: &str, query: Option<&str>, content_type: &str) -> String {
        RequestKind::classify(method, path, query, content_type).verb
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
        let kind = RequestKind::classify(
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
            RequestKind::classify("GET", "/api/v1/nodes", None, "").scope,
            "cluster"
        );
    }

    #[test]
    fn the_document_has_kubes_metric_name() {
        let metrics = Metrics::default();
        metrics.count(
            RequestKind::classify("GET", "/api/v1/namespaces/a/configmaps", None, ""),
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
    #[test]
    fn samples_read_back_with_their_labels() {
        let metrics = Metrics::default();
        let list = || RequestKind::classify("GET", "/api/v1/namespaces/a/configmaps", None, "");
        metrics.count(list(), StatusCode::OK);
        metrics.count(list(), StatusCode::OK);
        metrics.count(
            RequestKind::classify("GET", "/api/v1/namespaces/a/configmaps/x", None, ""),
            StatusCode::NOT_FOUND,
        );
        let counts = request_counts(&metrics.render());
        assert_eq!(counts.len(), 2, "{counts:?}");
        let listed = sum_requests(&metrics.render(), |c| {
            c.label("verb") == "LIST" && c.label("scope") == "namespace"
        });
        assert_eq!(listed, 2);
        let missing = sum_requests(&metrics.render(), |c| c.label("code") == "404");
        assert_eq!(missing, 1);
    }

    #[test]
    fn label_values_keep_escaped_quotes_and_commas() {
        let text = "# TYPE apiserver_request_total counter\n\
                    apiserver_request_total{verb=\"GET\",resource=\"a\\\"b,c\",code=\"200\"} 7\n\
                    apiserver_request_total{broken 3\n\
                    other_total{verb=\"GET\"} 9\n";
        let counts = request_counts(text);
        assert_eq!(counts.len(), 1, "{counts:?}");
        assert_eq!(counts[0].label("resource"), "a\"b,c");
        assert_eq!(counts[0].label("code"), "200");
        assert_eq!(counts[0].label("absent"), "");
        assert_eq!(counts[0].value, 7);
    }
}
