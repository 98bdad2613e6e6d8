//! Decoding of `application/vnd.kubernetes.protobuf` request bodies into the JSON form
//! kube-apiserver would have decoded from a JSON body.
//!
//! The body is the 4-byte magic `k8s\0` followed by a `runtime.Unknown` envelope whose
//! `typeMeta` names the kind and whose `raw` is the object's protobuf encoding. The field
//! layout comes from [`table`] (generated from the Kubernetes `generated.proto` files and Go
//! json tags by `tools/gen_proto_types.py` beside this crate); [`wire`] reads the protobuf wire format and
//! [`decode`] turns messages into JSON values. Responses go the other way: [`encode`] turns
//! the JSON the server holds into the same messages ([`encode_body`], [`watch_frame`]).

pub mod decode;
pub mod encode;
pub mod table;
pub mod wire;

use serde_json::{Map, Value};

/// The media type of Kubernetes protobuf bodies.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The prefix of every Kubernetes protobuf body.
pub const MAGIC: &[u8] = b"k8s\0";

/// Why a protobuf body could not be decoded (a 400 BadRequest).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProtobufError {
    /// The body does not start with `k8s\0`.
    #[error(
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    )]
    MissingMagic,
    /// The wire format is broken (truncated varint, bad length, unknown wire type...).
    #[error("malformed protobuf: {0}")]
    Malformed(String),
    /// The envelope names a kind this server cannot decode from protobuf.
    #[error("no kind \"{kind}\" is registered for version \"{api_version}\"")]
    UnknownKind {
        /// The envelope's apiVersion.
        api_version: String,
        /// The envelope's kind.
        kind: String,
    },
    /// The envelope uses a content encoding (compression) that is not supported.
    #[error("unsupported protobuf content encoding {0:?}")]
    ContentEncoding(String),
    /// Messages nest deeper than the decoder allows.
    #[error("malformed protobuf: message nesting exceeds {0} levels")]
    TooDeep(usize),
}

/// Whether a Content-Type header names the Kubernetes protobuf media type.
pub fn is_protobuf(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .eq_ignore_ascii_case(MEDIA_TYPE)
}

/// The Content-Type of a protobuf watch stream.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// Encodes a whole object (JSON with `apiVersion` and `kind`) as a protobuf body: the magic
/// followed by a `runtime.Unknown` naming the kind, as kube's protobuf serializer writes it.
pub fn encode_body(object: &Value) -> Result<Vec<u8>, encode::EncodeError> {
    let text = |k: &str| object.get(k).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    let message = table::message_for(api_version, kind).ok_or_else(|| {
        encode::EncodeError::UnknownMessage(format!("{api_version}, Kind={kind}"))
    })?;
    let raw = encode::message(message, object)?;
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&encode::unknown(api_version, kind, &raw));
    Ok(out)
}

/// One protobuf watch frame: a 4-byte big-endian length, then a `meta.k8s.io/v1` WatchEvent
/// (no magic, no envelope) whose `object.raw` is the object's whole protobuf body.
pub fn watch_frame(event_type: &str, object: &Value) -> Result<Vec<u8>, encode::EncodeError> {
    let body = encode_body(object)?;
    let mut raw_extension = Vec::with_capacity(body.len() + 8);
    encode::put_bytes(&mut raw_extension, 1, &body);
    let mut event = Vec::with_capacity(raw_extension.len() + event_type.len() + 8);
    encode::put_bytes(&mut event, 1, event_type.as_bytes());
    encode::put_bytes(&mut event, 2, &raw_extension);
    let len = u32::try_from(event.len()).map_err(|_| {
        encode::EncodeError::UnknownMessage("a watch event larger than 4 GiB".into())
    })?;
    let mut frame = Vec::with_capacity(event.len() + 4);
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&event);
    Ok(frame)
}

/// Decodes a whole protobuf request body (magic + `runtime.Unknown`) into a JSON object
/// with `apiVersion` and `kind` first.
pub fn decode_body(body: &[u8]) -> Result<Value, ProtobufError> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or(ProtobufError::MissingMagic)?;
    let envelope = decode::unknown(rest)?;
    if !envelope.content_encoding.is_empty() {
        return Err(ProtobufError::ContentEncoding(envelope.content_encoding));
    }
    let message = table::message_for(&envelope.api_version, &envelope.kind).ok_or_else(|| {
        ProtobufError::UnknownKind {
            api_version: envelope.api_version.clone(),
            kind: envelope.kind.clone(),
        }
    })?;
    let object = decode::message(message, &envelope.raw)?;
    let mut out = Map::new();
    if !envelope.api_version.is_empty() {
        out.insert("apiVersion".into(), Value::String(envelope.api_version));
    }
    if !envelope.kind.is_empty() {
        out.insert("kind".into(), Value::String(envelope.kind));
    }
    if let Value::Object(fields) = object {
        for (k, v) in fields {
            if k != "apiVersion" && k != "kind" {
                out.insert(k, v);
            }
        }
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests;
