//! The debugger's HTTPS endpoint, guarded the way upstream's (a Kubernetes generic server
//! with delegated authentication and authorization) is:
//!
//! 1. the caller's bearer token is checked with a TokenReview (no or a bad token: 401);
//! 2. a SubjectAccessReview asks whether that user may `get` (GET) or `post` (POST) the
//!    non-resource URL of the request (no: 403);
//! 3. the debugger then asks whether the user may `create` placements in the placement's
//!    namespace (no: `{"error": "..."}`), reads the hub's objects and answers
//!    ([`super::debug`]).
//!
//! `/healthz` answers `ok` without authentication. The serving certificate is self-signed,
//! made at start (upstream's default without a serving certificate); clients skip its
//! verification (`curl -k`) or pin it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, ListParams, PostParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1alpha1::AddOnPlacementScore;
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_api::cluster::v1beta2::{ManagedClusterSet, ManagedClusterSetBinding};
use ocm_runtime::accept::accept_until;
use ocm_runtime::shutdown::Shutdown;
use serde::de::DeserializeOwned;

use super::{DEBUG_PATH, DebugResult, MAX_BODY_BYTES, debug, parse_body, parse_path};
use crate::scheduler::{Snapshot, SnapshotInput};

/// Errors starting the debug server.
#[derive(Debug, thiserror::Error)]
pub enum DebugServerError {
    /// The listen address cannot be bound.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The self-signed serving certificate could not be made.
    #[error("serving certificate: {0}")]
    Certificate(String),
}

/// A running debug server.
#[derive(Debug)]
pub struct DebugServer {
    /// Where it listens (useful with port 0).
    pub local_addr: SocketAddr,
}

/// Serves the debugger on `listen` until `shutdown`, reading the hub with `client` (which
/// needs to create TokenReviews and SubjectAccessReviews and to read placements, clusters,
/// cluster sets, bindings, scores and decisions).
#[inline(never)]
pub fn serve(
    client: kube::Client,
    listen: SocketAddr,
    shutdown: Shutdown,
) -> futures::future::BoxFuture<'static, Result<DebugServer, DebugServerError>> {
    Box::pin(serve_body(client, listen, shutdown))
}

async fn serve_body(
    client: kube::Client,
    listen: SocketAddr,
    shutdown: Shutdown,
) -> Result<DebugServer, DebugServerError> {
    let config = self_signed_config().map_err(DebugServerError::Certificate)?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|source| DebugServerError::Bind {
            addr: listen,
            source,
        })?;
    let local_addr = listener
        .local_addr()
        .map_err(|source| DebugServerError::Bind {
            addr: listen,
            source,
        })?;
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    tokio::spawn(accept_until(
        "placement debugger",
        listener,
        shutdown,
        move |stream, _| {
            let acceptor = acceptor.clone();
            let client = client.clone();
            async move {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let client = client.clone();
                    async move { Ok::<_, Infallible>(handle(&client, req).await) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
            }
        },
    ));
    tracing::info!(addr = %local_addr, "placement debugger serving {DEBUG_PATH}");
    Ok(DebugServer { local_addr })
}

/// A rustls configuration with a fresh self-signed certificate for localhost.
fn self_signed_config() -> Result<Arc<rustls::ServerConfig>, String> {
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .map_err(|e| e.to_string())?;
    let cert = certified.cert.der().clone();
    let key = rustls_pki_types::PrivateKeyDer::try_from(certified.signing_key.serialize_der())
        .map_err(|e| e.to_string())?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn reply(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type),
    );
    response
}

fn json(result: &DebugResult) -> Response<Full<Bytes>> {
    reply(
        StatusCode::OK,
        "application/json",
        serde_json::to_vec(result).unwrap_or_default(),
    )
}

/// The bearer token of a request, if it has one.
pub fn bearer_token(req: &Request<Incoming>) -> Option<String> {
    let value = req
        .headers()
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty())
        .then(|| token.trim().to_owned())
}

/// The SubjectAccessReview spec asking whether `user` may do what `attributes` say.
fn review_spec(user: &UserInfo) -> SubjectAccessReviewSpec {
    SubjectAccessReviewSpec {
        user: user.username.clone(),
        uid: user.uid.clone(),
        groups: user.groups.clone(),
        extra: user.extra.clone(),
        ..SubjectAccessReviewSpec::default()
    }
}

/// The non-resource access check of a request: verb `get`/`post` on its path.
pub fn non_resource_review(user: &UserInfo, method: &Method, path: &str) -> SubjectAccessReview {
    SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some(path.to_owned()),
                verb: Some(method.as_str().to_ascii_lowercase()),
            }),
            ..review_spec(user)
        },
        ..SubjectAccessReview::default()
    }
}

/// The check that `user` may create placements in `namespace`.
pub fn create_placement_review(user: &UserInfo, namespace: &str) -> SubjectAccessReview {
    SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: Some(namespace.to_owned()),
                verb: Some("create".to_owned()),
                group: Some(ocm_api::cluster::GROUP.to_owned()),
                version: Some("v1beta1".to_owned()),
                resource: Some("placements".to_owned()),
                ..ResourceAttributes::default()
            }),
            ..review_spec(user)
        },
        ..SubjectAccessReview::default()
    }
}

/// Who the token belongs to, or `None` when the API server does not accept it.
async fn authenticate(client: &kube::Client, token: &str) -> Result<Option<UserInfo>, String> {
    let review = TokenReview {
        spec: TokenReviewSpec {
            token: Some(token.to_owned()),
            ..TokenReviewSpec::default()
        },
        ..TokenReview::default()
    };
    let answer = Api::<TokenReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .map_err(|e| format!("failed to review the token: {e}"))?;
    Ok(answer
        .status
        .filter(|s| s.authenticated == Some(true))
        .and_then(|s| s.user))
}

/// Whether the review is allowed, and the reason given.
async fn allowed(
    client: &kube::Client,
    review: &SubjectAccessReview,
) -> Result<(bool, String), String> {
    let answer = Api::<SubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), review)
        .await
        .map_err(|e| format!("failed to check permissions: {e}"))?;
    let status = answer.status.unwrap_or_default();
    Ok((status.allowed, status.reason.unwrap_or_default()))
}

async fn handle(client: &kube::Client, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_owned();
    if path == "/healthz" || path == "/readyz" || path == "/livez" {
        return reply(StatusCode::OK, "text/plain", b"ok".to_vec());
    }
    if !path.starts_with(DEBUG_PATH) {
        return reply(
            StatusCode::NOT_FOUND,
            "text/plain",
            b"404 page not found".to_vec(),
        );
    }
    let method = req.method().clone();
    let user = match bearer_token(&req) {
        None => UserInfo {
            username: Some("system:anonymous".into()),
            groups: Some(vec!["system:unauthenticated".into()]),
            ..UserInfo::default()
        },
        Some(token) => match authenticate(client, &token).await {
            Ok(Some(user)) => user,
            Ok(None) => {
                return reply(
                    StatusCode::UNAUTHORIZED,
                    "text/plain",
                    b"Unauthorized".to_vec(),
                );
            }
            Err(err) => {
                tracing::warn!(error = %err, "placement debugger: token review");
                return reply(
                    StatusCode::UNAUTHORIZED,
                    "text/plain",
                    b"Unauthorized".to_vec(),
                );
            }
        },
    };
    match allowed(client, &non_resource_review(&user, &method, &path)).await {
        Ok((true, _)) => {}
        Ok((false, reason)) => {
            let message = format!("Forbidden: \"{path}\", Reason: {reason:?}");
            return reply(StatusCode::FORBIDDEN, "text/plain", message.into_bytes());
        }
        Err(err) => {
            tracing::warn!(error = %err, "placement debugger: access review");
            return reply(StatusCode::FORBIDDEN, "text/plain", err.into_bytes());
        }
    }
    let placement = if method == Method::POST {
        let body = match Limited::new(req.into_body(), MAX_BODY_BYTES + 1)
            .collect()
            .await
        {
            Ok(collected) => collected.to_bytes(),
            Err(_) => {
                return json(&DebugResult::error(format!(
                    "request body too large: exceeds maximum of {MAX_BODY_BYTES} bytes"
                )));
            }
        };
        match parse_body(&body) {
            Ok(p) => p,
            Err(err) => return json(&DebugResult::error(err)),
        }
    } else {
        let (namespace, name) = match parse_path(&path) {
            Ok(key) => key,
            Err(err) => return json(&DebugResult::error(err)),
        };
        let api = if namespace.is_empty() {
            Api::<Placement>::default_namespaced(client.clone())
        } else {
            Api::<Placement>::namespaced(client.clone(), &namespace)
        };
        match api.get_opt(&name).await {
            Ok(Some(p)) => p,
            Ok(None) => {
                return json(&DebugResult::error(format!(
                    "placement.cluster.open-cluster-management.io \"{name}\" not found"
                )));
            }
            Err(err) => return json(&DebugResult::error(err.to_string())),
        }
    };
    let namespace = placement.metadata.namespace.clone().unwrap_or_default();
    match allowed(client, &create_placement_review(&user, &namespace)).await {
        Ok((true, _)) => {}
        Ok((false, reason)) => {
            return json(&DebugResult::error(format!(
                "user does not have permission to create placements in namespace {namespace}: {reason}"
            )));
        }
        Err(err) => return json(&DebugResult::error(err)),
    }
    match snapshot(client).await {
        Ok(snapshot) => json(&debug(&placement, &snapshot)),
        Err(err) => json(&DebugResult::error(err.to_string())),
    }
}

/// Every object of kind `K` on the hub (cluster-scoped or in any namespace).
async fn all<K>(client: &kube::Client) -> Result<Vec<Arc<K>>, kube::Error>
where
    K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug,
    K::DynamicType: Default,
{
    Ok(Api::<K>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(Arc::new)
        .collect())
}

/// The hub's objects the scheduler reads, now.
async fn snapshot(client: &kube::Client) -> Result<Snapshot, kube::Error> {
    Ok(Snapshot::new(SnapshotInput {
        clusters: all::<ManagedCluster>(client).await?,
        cluster_sets: all::<ManagedClusterSet>(client).await?,
        bindings: all::<ManagedClusterSetBinding>(client).await?,
        scores: all::<AddOnPlacementScore>(client).await?,
        decisions: all::<PlacementDecision>(client).await?,
        now: jiff::Timestamp::now(),
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn reviews_ask_what_upstream_asks() {
        let user = UserInfo {
            username: Some("system:serviceaccount:ns:sa".into()),
            groups: Some(vec!["system:serviceaccounts".into()]),
            ..UserInfo::default()
        };
        let review = non_resource_review(&user, &Method::POST, "/debug/placements/");
        let attrs = review.spec.non_resource_attributes.unwrap();
        assert_eq!(attrs.verb.as_deref(), Some("post"));
        assert_eq!(attrs.path.as_deref(), Some("/debug/placements/"));
        assert_eq!(
            review.spec.user.as_deref(),
            Some("system:serviceaccount:ns:sa")
        );
        let review = create_placement_review(&user, "apps");
        let attrs = review.spec.resource_attributes.unwrap();
        assert_eq!(
            (
                attrs.verb.as_deref(),
                attrs.resource.as_deref(),
                attrs.namespace.as_deref()
            ),
            (Some("create"), Some("placements"), Some("apps"))
        );
        assert_eq!(
            attrs.group.as_deref(),
            Some("cluster.open-cluster-management.io")
        );
    }
}
