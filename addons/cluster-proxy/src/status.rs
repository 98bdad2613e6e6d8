//! Kubernetes `Status` replies for what the proxy itself refuses or cannot do, so kubectl and
//! client libraries print a clear message instead of a bare HTTP error.

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::{BodyExt, Full};

/// The body type the proxy answers with: a buffered Status or a streamed upstream body.
pub type ProxyBody =
    http_body_util::combinators::UnsyncBoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

/// A buffered body.
pub fn full(bytes: impl Into<Bytes>) -> ProxyBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// The `reason` kube gives a status code.
fn reason(code: StatusCode) -> &'static str {
    match code.as_u16() {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        413 => "RequestEntityTooLarge",
        502 | 500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    }
}

/// The Status object for `code` and `message`.
pub fn status_json(code: StatusCode, message: &str) -> serde_json::Value {
    serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason(code),
        "code": code.as_u16(),
    })
}

/// A reply carrying the Status for `code` and `message`.
pub fn status(code: StatusCode, message: &str) -> Response<ProxyBody> {
    let body = serde_json::to_vec(&status_json(code, message)).unwrap_or_default();
    let mut response = Response::new(full(body));
    *response.status_mut() = code;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// A JSON reply with status 200.
pub fn json(value: &serde_json::Value) -> Response<ProxyBody> {
    let mut response = Response::new(full(serde_json::to_vec(value).unwrap_or_default()));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// Headers that describe one hop of a connection and must not be forwarded (RFC 9110 §7.6.1;
/// HTTP/2 forbids them outright).
pub fn strip_hop_headers(headers: &mut http::HeaderMap) {
    for name in [
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "proxy-authorization",
        "proxy-authenticate",
    ] {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_read_as_kube_statuses() {
        let s = status_json(StatusCode::SERVICE_UNAVAILABLE, "no tunnel");
        assert_eq!(s["reason"], "ServiceUnavailable");
        assert_eq!(s["code"], 503);
        assert_eq!(s["status"], "Failure");
        assert_eq!(
            status_json(StatusCode::FORBIDDEN, "x")["reason"],
            "Forbidden"
        );
    }

    #[test]
    fn hop_headers_are_dropped_and_others_kept() {
        let mut headers = http::HeaderMap::new();
        headers.insert("connection", http::HeaderValue::from_static("keep-alive"));
        headers.insert(
            "transfer-encoding",
            http::HeaderValue::from_static("chunked"),
        );
        headers.insert("accept", http::HeaderValue::from_static("application/json"));
        strip_hop_headers(&mut headers);
        assert_eq!(headers.len(), 1);
        assert!(headers.contains_key("accept"));
    }
}
