//! YAML replies: a reply the handlers built as JSON (object, list, Table,
//! `PartialObjectMetadata`, Status) re-encoded for a client whose `Accept` negotiated
//! `application/yaml`, as kube's YAML serializer writes it (sigs.k8s.io/yaml's JSON→YAML).

use bytes::Bytes;
use serde_json::Value;

use super::{Reply, ReplyBody};

/// The media type of YAML replies.
pub(crate) const MEDIA_TYPE: &str = "application/yaml";

/// Re-encodes a handler's (JSON) reply; a streamed or non-JSON body is left as it is (a watch
/// never negotiates YAML).
pub(crate) fn reply(reply: Reply) -> Reply {
    let ReplyBody::Full(json) = &reply.body else {
        return reply;
    };
    let Ok(value) = serde_json::from_slice::<Value>(json) else {
        return reply;
    };
    Reply {
        content_type: MEDIA_TYPE.into(),
        body: ReplyBody::Full(Bytes::from(crate::yaml_out::to_yaml(&value))),
        ..reply
    }
}

#[cfg(test)]
mod tests {
    use http::StatusCode;
    use serde_json::json;

    use super::*;
    use crate::error::ApiError;

    fn text(reply: &Reply) -> &str {
        match &reply.body {
            ReplyBody::Full(b) => std::str::from_utf8(b).unwrap(),
            ReplyBody::Stream(_) => panic!("a stream"),
        }
    }

    #[test]
    fn json_replies_become_yaml_with_status_and_warnings_kept() {
        let mut json_reply = Reply::json(StatusCode::CREATED, &json!({"kind": "X", "a": [1]}));
        json_reply.warnings.push("w".into());
        let reply = reply(json_reply);
        assert_eq!(
            (reply.status, reply.content_type.as_str(), text(&reply)),
            (StatusCode::CREATED, MEDIA_TYPE, "a:\n- 1\nkind: X\n")
        );
        assert_eq!(reply.warnings, ["w"]);
        let status = reply_of_error();
        assert_eq!(status.status, StatusCode::NOT_FOUND);
        assert!(
            text(&status).contains("reason: NotFound\n"),
            "{}",
            text(&status)
        );
    }

    fn reply_of_error() -> Reply {
        super::super::error_reply(Some("application/yaml"), &ApiError::route_not_found())
    }
}
