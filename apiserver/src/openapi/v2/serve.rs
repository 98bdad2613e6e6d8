//! `GET /openapi/v2` as kube-apiserver's OpenAPI handler answers it:
//!
//! * `Accept` clauses are tried by descending quality (more specific first on a tie); the
//!   first that matches `application/json`, `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`
//!   or `application/com.github.proto-openapi.spec.v2.v1.0+protobuf` (wildcards allowed) picks
//!   JSON or the gnostic protobuf encoding (`Content-Type` is the dotted protobuf name for
//!   both protobuf types); no `Accept` is `*/*`, so JSON; nothing matching is an empty 406;
//! * the `ETag` is the quoted upper-case hex SHA-512 of the JSON document, the same for both
//!   encodings (`Vary: Accept`); an `If-None-Match` naming it (or `*`) is answered 304 with
//!   no body.

use bytes::Bytes;
use http::header::{ETAG, HeaderValue, VARY};
use http::{HeaderMap, StatusCode};

use crate::reply::{Reply, ReplyBody};
use crate::state::Inner;

/// The protobuf media type kube-apiserver answers with.
pub(crate) const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
const JSON: &str = "application/json";

/// The encoding of the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Protobuf,
}

/// The media types served, in the order a wildcard picks them.
const SERVED: &[(&str, &str, Format)] = &[
    ("application", "json", Format::Json),
    (
        "application",
        "com.github.proto-openapi.spec.v2@v1.0+protobuf",
        Format::Protobuf,
    ),
    (
        "application",
        "com.github.proto-openapi.spec.v2.v1.0+protobuf",
        Format::Protobuf,
    ),
];

/// One `Accept` clause: type, subtype, quality.
struct Clause {
    kind: String,
    subtype: String,
    q: f64,
}

impl Clause {
    fn specificity(&self) -> u8 {
        u8::from(self.kind != "*") + u8::from(self.subtype != "*")
    }
}

fn clauses(accept: &str) -> Vec<Clause> {
    let mut out: Vec<Clause> = accept
        .split(',')
        .filter_map(|clause| {
            let mut parts = clause.split(';').map(str::trim);
            let (kind, subtype) = parts.next()?.split_once('/')?;
            let q = parts
                .filter_map(|p| p.split_once('='))
                .find(|(k, _)| k.trim() == "q")
                .and_then(|(_, v)| v.trim().parse::<f64>().ok())
                .unwrap_or(1.0);
            Some(Clause {
                kind: kind.trim().to_ascii_lowercase(),
                subtype: subtype.trim().to_ascii_lowercase(),
                q,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.q.total_cmp(&a.q)
            .then(b.specificity().cmp(&a.specificity()))
    });
    out
}

/// The format for an `Accept` header, or `None` (406).
fn negotiate(accept: Option<&str>) -> Option<Format> {
    let accept = accept
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .unwrap_or("*/*");
    clauses(accept).iter().find_map(|c| {
        SERVED
            .iter()
            .find(|(kind, subtype, _)| {
                (c.kind == *kind || c.kind == "*") && (c.subtype == *subtype || c.subtype == "*")
            })
            .map(|(_, _, format)| *format)
    })
}

/// Whether `If-None-Match` names `etag` (weak comparison) or is `*`.
fn none_match(if_none_match: &str, etag: &str) -> bool {
    if_none_match.split(',').map(str::trim).any(|candidate| {
        candidate == "*" || candidate.strip_prefix("W/").unwrap_or(candidate) == etag
    })
}

/// The quoted ETag of a JSON document: upper-case hex SHA-512.
fn etag(json: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA512, json);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02X}")).collect();
    format!("\"{hex}\"")
}

/// The answer to `GET /openapi/v2` in `cluster`.
pub(crate) fn serve(
    inner: &Inner,
    cluster: &str,
    accept: Option<&str>,
    if_none_match: Option<&str>,
) -> Reply {
    let mut headers = HeaderMap::new();
    headers.insert(VARY, HeaderValue::from_static("Accept"));
    let Some(format) = negotiate(accept) else {
        return reply(StatusCode::NOT_ACCEPTABLE, "", Vec::new(), headers);
    };
    let doc = super::document(inner, cluster);
    let json = ocm_apiserver_json::to_vec(&doc).unwrap_or_default();
    let tag = etag(&json);
    if let Ok(value) = HeaderValue::from_str(&tag) {
        headers.insert(ETAG, value);
    }
    if if_none_match.is_some_and(|inm| none_match(inm, &tag)) {
        return reply(StatusCode::NOT_MODIFIED, "", Vec::new(), headers);
    }
    let (content_type, body) = match format {
        Format::Json => (JSON, json),
        Format::Protobuf => (PROTOBUF, super::proto::document(&doc)),
    };
    reply(StatusCode::OK, content_type, body, headers)
}

/// A complete reply; an empty content type sends no `Content-Type` (as Go does for 304 and
/// kube's bare 406).
fn reply(status: StatusCode, content_type: &str, body: Vec<u8>, headers: HeaderMap) -> Reply {
    Reply {
        status,
        content_type: content_type.into(),
        body: ReplyBody::Full(Bytes::from(body)),
        warnings: Vec::new(),
        headers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation() {
        assert_eq!(negotiate(None), Some(Format::Json));
        assert_eq!(negotiate(Some("*/*")), Some(Format::Json));
        assert_eq!(
            negotiate(Some(
                "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
            )),
            Some(Format::Protobuf)
        );
        assert_eq!(
            negotiate(Some(
                "application/json;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
            )),
            Some(Format::Protobuf)
        );
        assert_eq!(negotiate(Some("application/yaml")), None);
        assert_eq!(negotiate(Some("text/*, application/*")), Some(Format::Json));
    }

    #[test]
    fn etags() {
        let tag = etag(b"{}");
        assert_eq!(tag.len(), 130);
        assert!(none_match(&tag, &tag));
        assert!(none_match(&format!("W/{tag}, \"x\""), &tag));
        assert!(none_match("*", &tag));
        assert!(!none_match("\"x\"", &tag));
    }
}
