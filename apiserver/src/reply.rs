//! What a handler answers: status, content type, body (whole or streamed), warnings and
//! headers. The REST handlers, discovery, the OpenAPI documents and the health endpoints all
//! answer with it; `http` turns it into an HTTP response.

use bytes::Bytes;
use http::StatusCode;
use ocm_apiserver_status::ApiError;
use serde_json::Value;
use tokio::sync::mpsc;

/// A reply body: complete, or streamed (watch).
pub(crate) enum ReplyBody {
    /// The whole body.
    Full(Bytes),
    /// Chunks sent as they come.
    Stream(mpsc::Receiver<Bytes>),
}

/// What a handler answers.
pub(crate) struct Reply {
    pub status: StatusCode,
    pub content_type: String,
    pub body: ReplyBody,
    pub warnings: Vec<String>,
    /// Further response headers (e.g. `ETag`, `Vary`).
    pub headers: http::HeaderMap,
}

impl Reply {
    pub fn json(status: StatusCode, value: &Value) -> Reply {
        Reply::bytes(
            status,
            Bytes::from(ocm_apiserver_json::to_vec(value).unwrap_or_default()),
        )
    }

    pub fn bytes(status: StatusCode, body: Bytes) -> Reply {
        Reply {
            status,
            content_type: "application/json".into(),
            body: ReplyBody::Full(body),
            warnings: Vec::new(),
            headers: http::HeaderMap::new(),
        }
    }

    pub fn error(err: &ApiError) -> Reply {
        let status = StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut reply = Reply::json(status, &err.to_status());
        reply.warnings.clone_from(&err.warnings);
        reply
    }
}
