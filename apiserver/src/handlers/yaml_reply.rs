//! YAML replies: a reply the handlers built as JSON (object, list, Table,
//! `PartialObjectMetadata`, Status) re-encoded for a client whose `Accept` negotiated
//! `application/yaml`, as kube's YAML serializer writes it (sigs.k8s.io/yaml's JSON→YAML).

use bytes::Bytes;
use http::StatusCode;
use serde_json::Value;

use super::{Reply, ReplyBody};
use ocm_apiserver_status::ApiError;

/// The media type of YAML replies.
pub(crate) const MEDIA_TYPE: &str = "application/yaml";

/// Re-encodes a handler's (JSON) reply; a streamed or non-JSON body is left as it is (a watch
/// never negotiates YAML). An object with no YAML form is answered as kube's serializer
/// answers its encoding error: a Status with code 500 (unless the reply already was an
/// error), no reason and the error as message, in YAML.
pub(crate) fn reply(reply: Reply) -> Reply {
    let ReplyBody::Full(json) = &reply.body else {
        return reply;
    };
    let Ok(value) = serde_json::from_slice::<Value>(json) else {
        return reply;
    };
    let (status, body) = match crate::yaml_out::to_yaml(&value) {
        Ok(text) => (reply.status, text),
        Err(err) => {
            tracing::error!(%err, "a reply does not encode as YAML");
            let failure = ApiError::new(500, "", err.to_string()).to_status();
            let status = if reply.status.is_client_error() || reply.status.is_server_error() {
                reply.status
            } else {
                StatusCode::INTERNAL_SERVER_ERROR
            };
            // A Status always encodes (its message names no offending character).
            (
                status,
                crate::yaml_out::to_yaml(&failure).unwrap_or_default(),
            )
        }
    };
    Reply {
        status,
        content_type: MEDIA_TYPE.into(),
        body: ReplyBody::Full(Bytes::from(body)),
        ..reply
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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

    #[test]
    fn objects_without_a_yaml_form_are_a_500_status() {
        let bad = Reply::json(
            StatusCode::OK,
            &json!({"kind": "ConfigMap", "data": {"k": "\u{7f}"}}),
        );
        let answer = reply(bad);
        assert_eq!(
            (answer.status, text(&answer)),
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "apiVersion: v1\ncode: 500\nkind: Status\nmessage: 'yaml: control characters are not allowed'\nmetadata: {}\nstatus: Failure\n"
            )
        );
        let not_found = Reply::json(StatusCode::NOT_FOUND, &json!({"message": "\u{7f}"}));
        assert_eq!(reply(not_found).status, StatusCode::NOT_FOUND);
    }

    fn reply_of_error() -> Reply {
        super::super::error_reply(Some("application/yaml"), &ApiError::route_not_found())
    }
}
