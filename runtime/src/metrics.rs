//! Reconcile metrics every controller reports, and the HTTP endpoint that serves them with
//! the health probes: `/metrics` (OpenMetrics text), `/healthz` and `/livez` (the process
//! runs), `/readyz` (the process is ready, e.g. joined or leading).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::sync::watch;

use crate::shutdown::Shutdown;

/// Labels naming a controller.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

/// Labels naming a controller and the kind of error it hit.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    controller: String,
    error: String,
}

/// Reconcile counters, error counters and queue depths per controller, plus the registry
/// other metrics of the process are added to. Cheap to clone.
#[derive(Clone)]
pub struct ControllerMetrics {
    registry: Arc<Mutex<Registry>>,
    reconciles: Family<ControllerLabels, Counter>,
    failures: Family<ErrorLabels, Counter>,
    queue_depth: Family<ControllerLabels, Gauge>,
}

impl std::fmt::Debug for ControllerMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ControllerMetrics")
    }
}

impl Default for ControllerMetrics {
    fn default() -> Self {
        ControllerMetrics::new("ocm")
    }
}

impl ControllerMetrics {
    /// A registry whose metric names start with `prefix_`.
    pub fn new(prefix: &str) -> ControllerMetrics {
        let mut registry = Registry::with_prefix(prefix);
        let reconciles = Family::<ControllerLabels, Counter>::default();
        let failures = Family::<ErrorLabels, Counter>::default();
        let queue_depth = Family::<ControllerLabels, Gauge>::default();
        registry.register(
            "reconciles",
            "Reconciles run, by controller",
            reconciles.clone(),
        );
        registry.register(
            "reconcile_errors",
            "Reconciles that failed, by controller and error kind",
            failures.clone(),
        );
        registry.register(
            "queue_depth",
            "Objects waiting to be reconciled, by controller",
            queue_depth.clone(),
        );
        ControllerMetrics {
            registry: Arc::new(Mutex::new(registry)),
            reconciles,
            failures,
            queue_depth,
        }
    }

    /// Counts one reconcile of `controller`.
    pub fn reconciled(&self, controller: &str) {
        self.reconciles
            .get_or_create(&ControllerLabels {
                controller: controller.to_owned(),
            })
            .inc();
    }

    /// Counts one failed reconcile of `controller` with an error of kind `error`.
    pub fn failed(&self, controller: &str, error: &str) {
        self.failures
            .get_or_create(&ErrorLabels {
                controller: controller.to_owned(),
                error: error.to_owned(),
            })
            .inc();
    }

    /// Sets how many objects wait to be reconciled by `controller`.
    pub fn set_queue_depth(&self, controller: &str, depth: i64) {
        self.queue_depth
            .get_or_create(&ControllerLabels {
                controller: controller.to_owned(),
            })
            .set(depth);
    }

    /// Runs `f` with the registry, to register more metrics.
    pub fn with_registry<R>(&self, f: impl FnOnce(&mut Registry) -> R) -> R {
        let mut registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut registry)
    }

    /// The registry (shared), to register more metrics.
    pub fn registry(&self) -> Arc<Mutex<Registry>> {
        self.registry.clone()
    }

    /// Every metric in OpenMetrics text format.
    pub fn encode(&self) -> String {
        let registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &registry).is_err() {
            out.clear();
        }
        out
    }
}

/// A running health/metrics endpoint.
#[derive(Debug)]
pub struct HealthServer {
    /// The address it listens on (useful with port 0).
    pub local_addr: SocketAddr,
}

/// Serves `/metrics`, `/healthz`, `/livez` and `/readyz` (200 while `ready` is true, else
/// 503) on `addr` until `shutdown` is cancelled.
pub async fn serve_health(
    addr: SocketAddr,
    metrics: ControllerMetrics,
    ready: watch::Receiver<bool>,
    shutdown: Shutdown,
) -> std::io::Result<HealthServer> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local_addr = listener.local_addr()?;
    tokio::spawn(crate::accept::accept_until(
        "health",
        listener,
        shutdown,
        move |stream, _| {
            let metrics = metrics.clone();
            let ready = ready.clone();
            async move {
                let service =
                    hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                        let response = respond(req.uri().path(), &metrics, *ready.borrow());
                        async move { Ok::<_, std::convert::Infallible>(response) }
                    });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            }
        },
    ));
    Ok(HealthServer { local_addr })
}

fn respond(path: &str, metrics: &ControllerMetrics, ready: bool) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match path {
        "/metrics" => (
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics.encode(),
        ),
        "/healthz" | "/livez" => (StatusCode::OK, "text/plain", "ok".to_owned()),
        "/readyz" if ready => (StatusCode::OK, "text/plain", "ok".to_owned()),
        "/readyz" => (
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            "not ready".to_owned(),
        ),
        _ => (StatusCode::NOT_FOUND, "text/plain", "not found".to_owned()),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(value) = http::HeaderValue::from_str(content_type) {
        response
            .headers_mut()
            .insert(http::header::CONTENT_TYPE, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_appear_in_the_text_output() {
        let metrics = ControllerMetrics::new("ocm_test");
        metrics.reconciled("managedcluster");
        metrics.reconciled("managedcluster");
        metrics.failed("managedcluster", "conflict");
        metrics.set_queue_depth("managedcluster", 3);
        let text = metrics.encode();
        assert!(
            text.contains("ocm_test_reconciles_total{controller=\"managedcluster\"} 2"),
            "{text}"
        );
        assert!(text.contains("error=\"conflict\""), "{text}");
        assert!(
            text.contains("ocm_test_queue_depth{controller=\"managedcluster\"} 3"),
            "{text}"
        );
    }

    #[test]
    fn readyz_follows_readiness() {
        let metrics = ControllerMetrics::default();
        assert_eq!(respond("/readyz", &metrics, false).status(), 503);
        assert_eq!(respond("/readyz", &metrics, true).status(), 200);
        assert_eq!(respond("/livez", &metrics, false).status(), 200);
        assert_eq!(respond("/nope", &metrics, true).status(), 404);
    }
}
