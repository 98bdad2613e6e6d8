//! The HTTPS webhook server: `POST /mutate` and `POST /validate` answer AdmissionReview v1
//! with the mutating and validating phase of [`crate::policy`], `POST /convert` answers
//! ConversionReview v1 for the addon kinds, `GET /healthz` says it is up.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::access::{ServerAccess, decide};
use crate::certs::ServingCerts;
use crate::policy::{Facts, Phase, namespace_to_check};
use crate::review::{admission_response, conversion_response, parse_admission_review};

/// Largest review body accepted (a ManifestWork may carry 500 KiB of manifests, and an update
/// sends it twice).
const MAX_BODY: usize = 8 * 1024 * 1024;

/// Path of the mutating phase.
pub const MUTATE_PATH: &str = "/mutate";
/// Path of the validating phase.
pub const VALIDATE_PATH: &str = "/validate";
/// Path of the conversion webhook.
pub const CONVERT_PATH: &str = "/convert";

/// What the server needs.
#[derive(Clone, Debug)]
pub struct WebhookOptions {
    /// Address to listen on (port 0 picks one).
    pub listen: SocketAddr,
    /// Whether clusters without a set label go into `default`.
    pub default_cluster_set: bool,
    /// The hub's work feature gates (`NilExecutorValidating` changes the ManifestWork check).
    pub work_gates: ocm_work::gates::HubWorkGates,
}

/// A running webhook server.
#[derive(Debug)]
pub struct RunningWebhook {
    /// The address it listens on.
    pub local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningWebhook {
    /// Stops accepting connections.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// Why the server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Binding the address.
    #[error("listening on {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// The TLS configuration.
    #[error(transparent)]
    Certs(#[from] crate::certs::CertError),
}

struct State {
    access: ServerAccess,
    options: WebhookOptions,
}

/// Starts serving on `options.listen` with `certs`, asking `access` for access checks.
/// Certificates are checked for rotation every ten minutes while it runs.
#[inline(never)]
pub fn serve(
    options: WebhookOptions,
    certs: ServingCerts,
    access: ServerAccess,
) -> futures::future::BoxFuture<'static, Result<RunningWebhook, ServeError>> {
    Box::pin(serve_body(options, certs, access))
}

async fn serve_body(
    options: WebhookOptions,
    certs: ServingCerts,
    access: ServerAccess,
) -> Result<RunningWebhook, ServeError> {
    let listener = TcpListener::bind(options.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: options.listen,
            source,
        })?;
    let local_addr = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: options.listen,
        source,
    })?;
    let acceptor = tokio_rustls::TlsAcceptor::from(certs.server_config()?);
    let state = Arc::new(State { access, options });
    let (stop, mut stopped) = watch::channel(false);
    let task = tokio::spawn(async move {
        let mut rotation = tokio::time::interval(Duration::from_secs(600));
        loop {
            let accepted = tokio::select! {
                _ = stopped.changed() => break,
                _ = rotation.tick() => {
                    match certs.rotate_if_due() {
                        Ok(true) => tracing::info!("webhook serving certificate rotated"),
                        Ok(false) => {}
                        Err(err) => tracing::warn!(%err, "rotating the webhook serving certificate"),
                    }
                    continue;
                }
                accepted = listener.accept() => accepted,
            };
            let stream = match accepted {
                Ok((stream, _)) => stream,
                Err(err) => {
                    // Out of file descriptors, mostly: wait for some to close rather than
                    // spin on a core retrying.
                    tracing::warn!(%err, "webhook: accepting a connection failed");
                    tokio::select! {
                        _ = stopped.changed() => break,
                        () = tokio::time::sleep(Duration::from_millis(100)) => continue,
                    }
                }
            };
            let acceptor = acceptor.clone();
            let state = state.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let state = state.clone();
                    async move { Ok::<_, Infallible>(handle(&state, req).await) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
            });
        }
    });
    Ok(RunningWebhook {
        local_addr,
        stop,
        task,
    })
}

fn reply(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

fn json_reply(value: &Value) -> Response<Full<Bytes>> {
    reply(
        StatusCode::OK,
        serde_json::to_vec(value).unwrap_or_default(),
    )
}

async fn handle(state: &State, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_owned();
    if req.method() == Method::GET && (path == "/healthz" || path == "/readyz") {
        return reply(StatusCode::OK, "ok");
    }
    if req.method() != Method::POST {
        return reply(StatusCode::METHOD_NOT_ALLOWED, "");
    }
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) => return reply(StatusCode::BAD_REQUEST, err.to_string()),
    };
    match path.as_str() {
        MUTATE_PATH => admission(state, Phase::Mutating, &body).await,
        VALIDATE_PATH => admission(state, Phase::Validating, &body).await,
        CONVERT_PATH => match conversion_response(&body, &|object, api_version| {
            ocm_api::addon::conversion::convert(object, api_version).map_err(|e| e.to_string())
        }) {
            Ok(response) => json_reply(&response),
            Err(err) => reply(StatusCode::BAD_REQUEST, err.to_string()),
        },
        _ => reply(StatusCode::NOT_FOUND, ""),
    }
}

async fn admission(state: &State, phase: Phase, body: &[u8]) -> Response<Full<Bytes>> {
    let request = match parse_admission_review(body) {
        Ok(request) => request,
        Err(err) => return reply(StatusCode::BAD_REQUEST, err.to_string()),
    };
    let terminating = match namespace_to_check(&request.review) {
        Some(namespace) => match state.access.namespace_terminating(namespace).await {
            Ok(terminating) => terminating,
            Err(err) => return reply(StatusCode::INTERNAL_SERVER_ERROR, err.to_string()),
        },
        None => false,
    };
    let facts = Facts {
        now: jiff::Timestamp::now(),
        default_cluster_set: state.options.default_cluster_set,
        cluster_namespace_terminating: terminating,
        nil_executor_validating: state.options.work_gates.nil_executor_validating,
    };
    match decide(
        &state.access,
        &request.user_info,
        &request.review,
        &facts,
        phase,
    )
    .await
    {
        Ok(verdict) => json_reply(&admission_response(&request, &verdict)),
        Err(err) => {
            tracing::warn!(%err, "admission review failed");
            reply(StatusCode::INTERNAL_SERVER_ERROR, err.to_string())
        }
    }
}
