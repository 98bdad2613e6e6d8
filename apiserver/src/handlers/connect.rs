//! The Pod connect subresources — `exec`, `attach` and `portforward` — as kube-apiserver
//! serves them: the upgrade request (WebSocket, or SPDY) is checked (pod, container, phase)
//! and passed on to the kubelet of the pod's node (`/exec/<ns>/<pod>/<container>`,
//! `/attach/…`, `/portForward/<ns>/<pod>`, the query as sent); once the kubelet switches
//! protocols the answer goes back to the client and the bytes are copied both ways. What the
//! kubelet refuses comes back as a Status with its code and message.
//!
//! Authorization is kube-apiserver's: the verb of the request (`get` for a WebSocket's GET,
//! `create` for SPDY's POST), and a WebSocket's GET needs `create` too
//! ([`create_also`]).

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use http_body_util::{BodyExt as _, Empty};
use hyper_util::rt::TokioIo;
use ocm_apiserver_rbac::{Attributes, Target};
use ocm_apiserver_status::ApiError;
use serde_json::Value;

use super::pods::{PodKubelet, pod_kubelet};
use super::{Reply, ResourceRequest};

/// The connect subresources of pods.
pub(crate) const SUBRESOURCES: [&str; 3] = ["attach", "exec", "portforward"];

/// Largest refusal body read from the kubelet.
const MAX_REFUSAL: usize = 64 * 1024;

/// Whether `sub` is a connect subresource of pods.
pub(crate) fn is_connect(sub: Option<&str>) -> bool {
    sub.is_some_and(|s| SUBRESOURCES.contains(&s))
}

/// The further authorization a connect request needs: a `get` (a WebSocket upgrade) of a
/// pod's connect subresource also needs `create` on it, as kube-apiserver checks
/// (`AuthorizePodWebsocketUpgradeCreatePermission`), so that a WebSocket is no way around a
/// role granting only `get`.
pub(crate) fn create_also(attrs: &Attributes) -> Option<Attributes> {
    match &attrs.target {
        Target::Resource(r)
            if attrs.verb == "get"
                && r.group.is_empty()
                && r.resource == "pods"
                && is_connect(Some(&r.subresource)) =>
        {
            let mut create = attrs.clone();
            create.verb = "create".into();
            Some(create)
        }
        _ => None,
    }
}

/// The kubelet path serving `sub` for the pod.
fn kubelet_path(sub: &str, target: &PodKubelet) -> String {
    let PodKubelet {
        namespace,
        name,
        container,
        ..
    } = target;
    match sub {
        "portforward" => format!("/portForward/{namespace}/{name}"),
        other => format!("/{other}/{namespace}/{name}/{container}"),
    }
}

/// Refuses what kube-apiserver refuses before reaching the kubelet: a pod that ran to its
/// end.
fn check_phase(sub: &str, pod: &Value) -> Result<(), ApiError> {
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if matches!(phase, "Succeeded" | "Failed") {
        let what = match sub {
            "exec" => "exec into",
            "attach" => "attach to",
            _ => "forward ports of",
        };
        return Err(ApiError::bad_request(format!(
            "cannot {what} a container in a completed pod; current phase is {phase}"
        )));
    }
    Ok(())
}

/// Headers passed on to the kubelet: the request's, less its credentials.
fn kubelet_headers(headers: &HeaderMap) -> HeaderMap {
    let mut out = headers.clone();
    out.remove(http::header::AUTHORIZATION);
    let impersonation: Vec<_> = out
        .keys()
        .filter(|k| k.as_str().starts_with("impersonate-"))
        .cloned()
        .collect();
    for key in impersonation {
        out.remove(key);
    }
    out
}

/// Serves a connect request (authorized already).
pub(crate) async fn serve(
    req: ResourceRequest,
    parts: http::request::Parts,
) -> Result<Reply, ApiError> {
    let sub = req.path.subresource.clone().unwrap_or_default();
    if req.path.name.is_none() {
        return Err(ApiError::route_not_found());
    }
    if parts.method != Method::GET && parts.method != Method::POST {
        return Err(ApiError::method_not_allowed());
    }
    // Port-forward addresses the pod's ports, not one container.
    let target = pod_kubelet(&req, sub != "portforward")?;
    check_phase(&sub, &target.pod)?;
    if !parts.headers.contains_key(http::header::UPGRADE) {
        return Err(ApiError::bad_request("Upgrade request required"));
    }
    let mut path = kubelet_path(&sub, &target);
    if let Some(query) = parts.uri.query() {
        path.push('?');
        path.push_str(query);
    }
    let fail = |e: &dyn std::fmt::Display| {
        ApiError::new(
            500,
            "InternalError",
            format!("error dialing the kubelet at {}: {e}", target.address),
        )
    };
    let tcp = tokio::net::TcpStream::connect(&target.address)
        .await
        .map_err(|e| fail(&e))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .map_err(|e| fail(&e))?;
    tokio::spawn(async move {
        let _ = conn.with_upgrades().await;
    });
    let mut request = http::Request::builder()
        .method(parts.method.clone())
        .uri(&path)
        .body(Empty::<Bytes>::new())
        .map_err(ApiError::internal)?;
    *request.headers_mut() = kubelet_headers(&parts.headers);
    request.headers_mut().insert(
        http::header::HOST,
        http::HeaderValue::from_str(&target.address).map_err(ApiError::internal)?,
    );
    let mut response = sender.send_request(request).await.map_err(|e| fail(&e))?;
    let status = response.status();
    if status != StatusCode::SWITCHING_PROTOCOLS {
        let body = http_body_util::Limited::new(response.into_body(), MAX_REFUSAL)
            .collect()
            .await
            .map(|b| String::from_utf8_lossy(&b.to_bytes()).trim().to_owned())
            .unwrap_or_default();
        let reason = match status.as_u16() {
            404 => "NotFound",
            500.. => "InternalError",
            _ => "BadRequest",
        };
        return Err(ApiError::new(status.as_u16(), reason, body));
    }
    let to_kubelet = hyper::upgrade::on(&mut response);
    let from_client = hyper::upgrade::on(http::Request::from_parts(parts, ()));
    tokio::spawn(async move {
        let (kubelet, client) = match tokio::try_join!(to_kubelet, from_client) {
            Ok(pair) => pair,
            Err(err) => {
                tracing::debug!(%err, "connect upgrade failed");
                return;
            }
        };
        let _ =
            tokio::io::copy_bidirectional(&mut TokioIo::new(client), &mut TokioIo::new(kubelet))
                .await;
    });
    let mut reply = Reply::bytes(StatusCode::SWITCHING_PROTOCOLS, Bytes::new());
    reply.content_type = String::new();
    reply.headers = response.headers().clone();
    Ok(reply)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use ocm_apiserver_rbac::{Identity, ResourceAttributes};

    fn attrs(verb: &str, resource: &str, sub: &str) -> Attributes {
        Attributes {
            user: Identity::default(),
            verb: verb.into(),
            target: Target::Resource(ResourceAttributes {
                resource: resource.into(),
                subresource: sub.into(),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn a_websocket_get_of_exec_needs_create_too() {
        assert_eq!(
            create_also(&attrs("get", "pods", "exec")).unwrap().verb,
            "create"
        );
        assert!(create_also(&attrs("create", "pods", "exec")).is_none());
        assert!(create_also(&attrs("get", "pods", "log")).is_none());
        assert!(create_also(&attrs("get", "services", "exec")).is_none());
    }

    #[test]
    fn a_completed_pod_is_refused_before_the_kubelet() {
        let done = serde_json::json!({"status": {"phase": "Succeeded"}});
        let err = check_phase("exec", &done).unwrap_err();
        assert!(
            err.to_string()
                .contains("cannot exec into a container in a completed pod"),
            "{err}"
        );
        assert!(check_phase("exec", &serde_json::json!({"status": {"phase": "Running"}})).is_ok());
    }
}
