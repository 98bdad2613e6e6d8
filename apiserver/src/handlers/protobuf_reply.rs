//! Protobuf replies: a reply the handlers built as JSON (object, list, Status, watch event
//! lines) re-encoded for a client whose `Accept` negotiated `application/vnd.kubernetes.protobuf`.
//!
//! An object the table cannot encode (a stored object of a shape the table does not allow —
//! kube would never hold one) is logged and answered as JSON when the `Accept` header admits
//! JSON, else as a 500 InternalError Status.

use bytes::Bytes;
use http::StatusCode;
use serde_json::Value;
use tokio::sync::mpsc;

use super::{Reply, ReplyBody};
use ocm_apiserver_protobuf::encode::EncodeError;
use ocm_apiserver_protobuf::{MEDIA_TYPE, WATCH_MEDIA_TYPE, encode_body, watch_frame};
use ocm_apiserver_status::ApiError;

/// How a protobuf reply is written.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProtobufReply {
    /// The reply is a watch stream (its body is JSON event lines).
    pub watch: bool,
    /// The `Accept` header also admits JSON.
    pub admits_json: bool,
}

/// An error Status in protobuf (Status always encodes; JSON should it not).
pub(crate) fn status_reply(err: &ApiError) -> Reply {
    let json = Reply::error(err);
    match encode_body(&err.to_status()) {
        Ok(body) => Reply {
            content_type: MEDIA_TYPE.into(),
            body: ReplyBody::Full(Bytes::from(body)),
            ..json
        },
        Err(encode_err) => {
            tracing::error!(%encode_err, "a Status does not encode as protobuf");
            json
        }
    }
}

impl ProtobufReply {
    /// Re-encodes a handler's (JSON) reply.
    pub fn reply(self, reply: Reply) -> Reply {
        match reply.body {
            ReplyBody::Stream(rx) => Reply {
                content_type: WATCH_MEDIA_TYPE.into(),
                body: ReplyBody::Stream(frames(rx)),
                ..reply
            },
            ReplyBody::Full(json) => {
                let Ok(value) = serde_json::from_slice::<Value>(&json) else {
                    // Not JSON (nothing a resource handler answers): left as it is.
                    return Reply {
                        body: ReplyBody::Full(json),
                        ..reply
                    };
                };
                if self.watch && reply.status == StatusCode::OK {
                    let (kind, object) = event_parts(&value);
                    let (body, _) = frame_or_error(kind, object);
                    return Reply {
                        content_type: WATCH_MEDIA_TYPE.into(),
                        body: ReplyBody::Full(Bytes::from(body)),
                        ..reply
                    };
                }
                match encode_body(&value) {
                    Ok(body) => Reply {
                        content_type: MEDIA_TYPE.into(),
                        body: ReplyBody::Full(Bytes::from(body)),
                        ..reply
                    },
                    Err(err) => {
                        let rest = Reply {
                            body: ReplyBody::Full(Bytes::new()),
                            ..reply
                        };
                        self.fallback(&err, json, rest)
                    }
                }
            }
        }
    }

    /// An object the table cannot encode: JSON if the client takes it, else a 500.
    fn fallback(self, err: &EncodeError, json: Bytes, reply: Reply) -> Reply {
        tracing::error!(%err, status = %reply.status, "a reply does not encode as protobuf");
        if self.admits_json {
            return Reply {
                content_type: "application/json".into(),
                body: ReplyBody::Full(json),
                ..reply
            };
        }
        let mut internal =
            ApiError::internal(format!("the object cannot be encoded as protobuf: {err}"));
        internal.warnings = reply.warnings;
        status_reply(&internal)
    }
}

/// The `type` and `object` of a JSON watch event.
fn event_parts(event: &Value) -> (&str, &Value) {
    (
        event.get("type").and_then(Value::as_str).unwrap_or(""),
        event.get("object").unwrap_or(&Value::Null),
    )
}

/// A protobuf watch frame and `true`, or (for an object that does not encode) an ERROR frame
/// with an InternalError Status and `false`.
fn frame_or_error(kind: &str, object: &Value) -> (Vec<u8>, bool) {
    match watch_frame(kind, object) {
        Ok(frame) => (frame, true),
        Err(err) => {
            tracing::error!(%err, kind, "a watch event does not encode as protobuf");
            let status =
                ApiError::internal(format!("the object cannot be encoded as protobuf: {err}"))
                    .to_status();
            (watch_frame("ERROR", &status).unwrap_or_default(), false)
        }
    }
}

/// Turns a stream of JSON event lines into a stream of protobuf frames; an event that does
/// not encode ends the stream after its ERROR frame.
fn frames(mut lines: mpsc::Receiver<Bytes>) -> mpsc::Receiver<Bytes> {
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    tokio::spawn(async move {
        while let Some(line) = lines.recv().await {
            let Ok(event) = serde_json::from_slice::<Value>(&line) else {
                tracing::error!("a watch event line is not JSON");
                return;
            };
            let (kind, object) = event_parts(&event);
            let (frame, encoded) = frame_or_error(kind, object);
            if tx.send(Bytes::from(frame)).await.is_err() || !encoded {
                return;
            }
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn full(reply: &Reply) -> &[u8] {
        match &reply.body {
            ReplyBody::Full(b) => b,
            ReplyBody::Stream(_) => panic!("a stream"),
        }
    }

    fn answer(watch: bool, admits_json: bool, value: &Value) -> Reply {
        let protobuf = ProtobufReply { watch, admits_json };
        protobuf.reply(Reply::json(StatusCode::OK, value))
    }

    #[test]
    fn objects_the_table_cannot_encode_fall_back() {
        // A shape the table does not allow (data must be a map).
        let bad = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": "x"});
        let reply = answer(false, true, &bad);
        assert_eq!(reply.content_type, "application/json");
        assert_eq!(serde_json::from_slice::<Value>(full(&reply)).unwrap(), bad);
        let reply = answer(false, false, &bad);
        assert_eq!(
            (reply.status.as_u16(), reply.content_type.as_str()),
            (500, MEDIA_TYPE)
        );
        let status = ocm_apiserver_protobuf::decode_body(full(&reply)).unwrap();
        assert_eq!(status["reason"], "InternalError");
    }

    #[test]
    fn a_whole_watch_body_is_one_frame() {
        let event = json!({"type": "ERROR", "object": ApiError::expired("too old").to_status()});
        let reply = answer(true, false, &event);
        assert_eq!(reply.content_type, WATCH_MEDIA_TYPE);
        let body = full(&reply);
        let len = u32::from_be_bytes([body[0], body[1], body[2], body[3]]) as usize;
        assert_eq!(len, body.len() - 4);
    }
}
