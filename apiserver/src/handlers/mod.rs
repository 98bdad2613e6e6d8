//! REST handlers of resource requests: routing a parsed path to get, list, watch, create,
//! update, patch and delete, and shaping replies (JSON, Table, PartialObjectMetadata), encoded
//! as JSON, YAML or protobuf.

mod apply;
mod connect;
mod delete;
mod list_items;
mod pods;
mod protobuf_reply;
mod read;
mod token;
mod watch;
mod write;
mod yaml_reply;

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::Value;

use crate::auth::Identity;
use crate::fieldvalidation::BodyCheck;
use crate::ops::{Ctx, FieldValidation};
use crate::registry::ResourceInfo;
use crate::request::{Query, ResourcePath};
use crate::state::Inner;
use ocm_apiserver_status::ApiError;

pub(crate) use crate::reply::{Reply, ReplyBody};

/// How a response should be shaped, from the `Accept` header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Output {
    /// Plain objects and lists.
    Json,
    /// `meta.k8s.io/v1` Table.
    Table,
    /// `PartialObjectMetadata` / `PartialObjectMetadataList`.
    PartialMeta,
}

/// The encoding a response is written in, from the `Accept` header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// `application/json`.
    Json,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
    /// `application/yaml` (no watch: kube's YAML serializer has no stream form).
    Yaml,
}

/// What an endpoint can answer besides plain JSON (kube's endpoint restrictions).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Answerable {
    /// `as=Table` (JSON or YAML: a Table has no protobuf form).
    pub tables: bool,
    /// `as=PartialObjectMetadata` / `PartialObjectMetadataList`, in JSON or protobuf.
    pub partial_metadata: bool,
    /// Plain objects in protobuf (built-in kinds of the protobuf table; custom resources
    /// have none).
    pub protobuf: bool,
}

impl Answerable {
    /// What an error Status can be written as: plain JSON, YAML or protobuf, no
    /// transformation (kube's default endpoint restrictions of its negotiated error writer).
    pub const ERRORS: Answerable = Answerable {
        tables: false,
        partial_metadata: false,
        protobuf: true,
    };
}

/// Picks the output format and encoding from an `Accept` header: the first clause (in
/// kube's order, see [`accept_clauses`]) the server can answer wins, as in kube, or 406. A Table is refused for resources that have none
/// (the create-only reviews), for a watch-list and in protobuf; plain protobuf for kinds
/// without a protobuf form. YAML is answered for everything but a watch (see
/// [`ResourceRequest::watch_encoding_error`]).
pub(crate) fn negotiate_media(
    accept: Option<&str>,
    answerable: Answerable,
) -> Result<(Output, Encoding), ApiError> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok((Output::Json, Encoding::Json));
    };
    for clause in accept_clauses(accept) {
        let param = |k: &str| clause.param(k);
        let mime = format!("{}/{}", clause.kind, clause.subtype);
        let encoding = match mime.as_str() {
            "application/json" | "*/*" | "application/*" => Encoding::Json,
            ocm_apiserver_protobuf::MEDIA_TYPE => Encoding::Protobuf,
            "application/yaml" => Encoding::Yaml,
            _ => continue,
        };
        match (param("as"), param("g"), param("v")) {
            (None, _, _) if encoding != Encoding::Protobuf || answerable.protobuf => {
                return Ok((Output::Json, encoding));
            }
            (Some("Table"), Some("meta.k8s.io"), Some("v1" | "v1beta1"))
                if answerable.tables && encoding != Encoding::Protobuf =>
            {
                return Ok((Output::Table, encoding));
            }
            (
                Some("PartialObjectMetadata" | "PartialObjectMetadataList"),
                Some("meta.k8s.io"),
                Some("v1" | "v1beta1"),
            ) if answerable.partial_metadata => {
                return Ok((Output::PartialMeta, encoding));
            }
            _ => continue,
        }
    }
    Err(ApiError::not_acceptable(
        "application/json, application/yaml, application/vnd.kubernetes.protobuf",
    ))
}

/// Whether an `Accept` header admits plain JSON (what a reply falls back to when an object
/// cannot be encoded as protobuf).
fn admits_json(accept: Option<&str>) -> bool {
    let json_only = Answerable {
        tables: true,
        partial_metadata: true,
        protobuf: false,
    };
    negotiate_media(accept, json_only).is_ok_and(|(_, encoding)| encoding == Encoding::Json)
}

/// Answers a plain document (discovery) in the encoding `Accept` negotiates under kube's
/// default endpoint restrictions — JSON, YAML or protobuf; a Table or
/// PartialObjectMetadata clause is accepted and answers the document as it is, as kube's
/// negotiated writer does — or 406.
pub(crate) fn negotiated_document(accept: Option<&str>, reply: Reply) -> Result<Reply, ApiError> {
    let all = Answerable {
        tables: true,
        partial_metadata: true,
        protobuf: true,
    };
    let (_, encoding) = negotiate_media(accept, all)?;
    Ok(encoded(encoding, admits_json(accept), reply))
}

/// A JSON reply re-encoded (not a watch).
pub(crate) fn encoded(encoding: Encoding, admits_json: bool, reply: Reply) -> Reply {
    match encoding {
        Encoding::Json => reply,
        Encoding::Yaml => yaml_reply::reply(reply),
        Encoding::Protobuf => protobuf_reply::ProtobufReply {
            watch: false,
            admits_json,
        }
        .reply(reply),
    }
}

/// One clause of an `Accept` header, as kube's goautoneg parses it.
#[derive(Debug)]
pub(crate) struct AcceptClause {
    /// The type (`application`, `*`).
    pub kind: String,
    /// The subtype (`json`, `*`).
    pub subtype: String,
    q: f32,
    /// The parameters other than `q`.
    pub params: Vec<(String, String)>,
}

impl AcceptClause {
    /// The value of parameter `key`.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The clauses of an `Accept` header in the order kube tries them: goautoneg's sort, by `q`
/// (highest first) and then concrete types before wildcards (Go's `sort.Sort`, an insertion
/// sort for up to 12 clauses, keeps equal clauses in their order). A clause that is not
/// `type/subtype` (or `*`) is dropped; types compare as written (kube does not fold case).
pub(crate) fn accept_clauses(accept: &str) -> Vec<AcceptClause> {
    let mut clauses: Vec<AcceptClause> = Vec::new();
    for part in accept.split(',') {
        let mut pieces = part.trim_matches(' ').split(';');
        let range: Vec<&str> = pieces.next().unwrap_or("").split('/').collect();
        let (kind, subtype) = match range.as_slice() {
            [kind] if kind.trim_matches(' ') == "*" => ("*", "*"),
            [kind, subtype] => (kind.trim_matches(' '), subtype.trim_matches(' ')),
            _ => continue,
        };
        let mut clause = AcceptClause {
            kind: kind.to_owned(),
            subtype: subtype.to_owned(),
            q: 1.0,
            params: Vec::new(),
        };
        for param in pieces {
            let Some((key, value)) = param.split_once('=') else {
                continue;
            };
            match key.trim_matches(' ') {
                // Go's ParseFloat: an unreadable q is 0.
                "q" => clause.q = value.parse().unwrap_or(0.0),
                key => clause
                    .params
                    .push((key.to_owned(), value.trim_matches(' ').to_owned())),
            }
        }
        clauses.push(clause);
    }
    let before = |a: &AcceptClause, b: &AcceptClause| {
        a.q > b.q || (a.kind != "*" && b.kind == "*") || (a.subtype != "*" && b.subtype == "*")
    };
    for i in 1..clauses.len() {
        let mut j = i;
        while j > 0 && before(&clauses[j], &clauses[j - 1]) {
            clauses.swap(j, j - 1);
            j -= 1;
        }
    }
    clauses
}

/// The encoding of an error Status for an `Accept` header: that of its first plain JSON,
/// YAML or protobuf clause, else JSON.
pub(crate) fn error_encoding(accept: Option<&str>) -> Encoding {
    negotiate_media(accept, Answerable::ERRORS).map_or(Encoding::Json, |(_, e)| e)
}

/// An error answered before a resource handler ran (authentication, authorization, an
/// unknown resource, too many requests): a Status in the encoding `Accept` negotiates, as
/// kube's negotiated error writer answers.
pub(crate) fn error_reply(accept: Option<&str>, err: &ApiError) -> Reply {
    status_reply(error_encoding(accept), err)
}

/// An error Status in the given encoding.
fn status_reply(encoding: Encoding, err: &ApiError) -> Reply {
    match encoding {
        Encoding::Protobuf => protobuf_reply::status_reply(err),
        Encoding::Yaml => yaml_reply::reply(Reply::error(err)),
        Encoding::Json => Reply::error(err),
    }
}

/// Everything a resource handler needs about the request.
pub(crate) struct ResourceRequest {
    pub inner: Arc<Inner>,
    pub cluster: String,
    pub path: ResourcePath,
    pub res: Arc<ResourceInfo>,
    pub query: Query,
    pub identity: Identity,
    pub user_agent: String,
    pub accept: Option<String>,
    pub content_type: String,
    pub method: Method,
}

impl ResourceRequest {
    /// The output format the `Accept` header asks for, as this request may be answered: no
    /// Table for resources that have none (the create-only reviews) and none for a watch-list
    /// (`watch` with `sendInitialEvents=true`), as in kube.
    pub fn output(&self) -> Result<Output, ApiError> {
        self.negotiated().map(|(output, _)| output)
    }

    /// The output format and the encoding. Plain protobuf is offered for built-in kinds the
    /// protobuf table describes (custom resources have none: kube's CRD handler restricts
    /// plain answers to JSON and YAML); `PartialObjectMetadata` is protobuf for every kind.
    pub fn negotiated(&self) -> Result<(Output, Encoding), ApiError> {
        let watch_list = self.query.flag("watch") && self.query.flag("sendInitialEvents");
        // Only a protobuf clause reads `protobuf`: the table (half a MiB once loaded) is
        // consulted, and loaded, only when the client asks for protobuf at all.
        let asks_protobuf = self.accept.as_deref().is_some_and(|a| {
            a.as_bytes()
                .windows(b"protobuf".len())
                .any(|w| w.eq_ignore_ascii_case(b"protobuf"))
        });
        let protobuf = asks_protobuf
            && self.res.builtin().is_some()
            && ocm_apiserver_protobuf::table::message_for(
                &self.res.api_version(&self.path.version),
                &self.res.kind,
            )
            .is_some();
        let answerable = Answerable {
            tables: self.res.has_table() && !watch_list,
            partial_metadata: true,
            protobuf,
        };
        negotiate_media(self.accept.as_deref(), answerable)
    }

    /// The 406 a watch answers when `Accept` negotiated YAML: kube's YAML serializer has no
    /// stream form, and its watch handler refuses it after negotiating (later clauses are not
    /// tried), naming the stream types it has.
    pub fn watch_encoding_error(&self) -> Result<(), ApiError> {
        match self.negotiated() {
            Ok((_, Encoding::Yaml)) => Err(ApiError::not_acceptable(
                "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch",
            )),
            _ => Ok(()),
        }
    }

    /// Whether the `Accept` header also admits JSON (what a reply falls back to when an
    /// object cannot be encoded as protobuf).
    pub fn admits_json(&self) -> bool {
        admits_json(self.accept.as_deref())
    }

    pub fn namespace(&self) -> &str {
        self.path.namespace.as_deref().unwrap_or("")
    }

    /// A pipeline context with the request's write options.
    pub fn ctx(&self) -> Result<Ctx, ApiError> {
        let mut ctx = Ctx::new(
            self.inner.clone(),
            &self.cluster,
            self.res.clone(),
            &self.path.version,
        );
        ctx.identity = self.identity.clone();
        match self.query.get("dryRun") {
            None | Some("") => {}
            Some("All") => ctx.dry_run = true,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "Invalid dry run value: {other}; supported values: All"
                )));
            }
        }
        ctx.field_validation = self.field_validation()?;
        ctx.manager = match self.query.non_empty("fieldManager") {
            Some(m) => m.to_owned(),
            None => default_manager(&self.user_agent),
        };
        Ok(ctx)
    }

    /// The `fieldValidation` parameter (`Warn` when absent).
    pub fn field_validation(&self) -> Result<FieldValidation, ApiError> {
        match self.query.get("fieldValidation") {
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation parameter unsupported: {other}. Supported values: Ignore, Warn, Strict"
            ))),
        }
    }

    fn verb(&self) -> &'static str {
        let has_name = self.path.name.is_some();
        match self.method {
            Method::GET | Method::HEAD => {
                if self.query.flag("watch") {
                    "watch"
                } else if has_name {
                    "get"
                } else {
                    "list"
                }
            }
            Method::POST => "create",
            Method::PUT => "update",
            Method::PATCH => "patch",
            Method::DELETE => {
                if has_name {
                    "delete"
                } else {
                    "deletecollection"
                }
            }
            _ => "unknown",
        }
    }
}

/// The manager name derived from a User-Agent: the part before the first `/`.
fn default_manager(user_agent: &str) -> String {
    let m = user_agent.split('/').next().unwrap_or("").trim();
    if m.is_empty() {
        "unknown".into()
    } else {
        m.chars().take(128).collect()
    }
}

/// Whether a subresource of pods is a connect one (`exec`, `attach`, `portforward`), served
/// by [`connect`] rather than [`handle`].
pub(crate) fn is_connect(sub: Option<&str>) -> bool {
    connect::is_connect(sub)
}

/// See [`connect::create_also`].
pub(crate) fn connect_create_also(
    attrs: &ocm_apiserver_rbac::Attributes,
) -> Option<ocm_apiserver_rbac::Attributes> {
    connect::create_also(attrs)
}

/// Serves a pod's connect subresource (see [`connect`](mod@connect)).
pub(crate) async fn connect(
    req: ResourceRequest,
    parts: http::request::Parts,
) -> Result<Reply, ApiError> {
    connect::serve(req, parts).await
}

/// Serves one resource request, encoded as the `Accept` header negotiated: answers in
/// protobuf or YAML when the output negotiated it, errors when their own negotiation did
/// (kube negotiates the two separately).
pub(crate) async fn handle(req: ResourceRequest, body: Bytes) -> Result<Reply, ApiError> {
    let errors = error_encoding(req.accept.as_deref());
    let encoding = req.negotiated().ok().map(|(_, encoding)| encoding);
    let protobuf = (encoding == Some(Encoding::Protobuf)).then(|| protobuf_reply::ProtobufReply {
        watch: req.verb() == "watch",
        admits_json: req.admits_json(),
    });
    match handle_json(req, body).await {
        Ok(reply) => Ok(match (protobuf, encoding) {
            (Some(protobuf), _) => protobuf.reply(reply),
            (None, Some(Encoding::Yaml)) => yaml_reply::reply(reply),
            _ => reply,
        }),
        Err(err) if errors == Encoding::Json => Err(err),
        Err(err) => Ok(status_reply(errors, &err)),
    }
}

/// Serves one resource request, answering JSON (or Table JSON).
async fn handle_json(req: ResourceRequest, body: Bytes) -> Result<Reply, ApiError> {
    let verb = req.verb();
    let sub = req.path.subresource.clone();
    // Scope checks.
    if req.path.namespace.is_some() && !req.res.namespaced {
        return Err(ApiError::route_not_found());
    }
    if req.res.namespaced && req.path.namespace.is_none() && !matches!(verb, "list" | "watch") {
        return Err(ApiError::route_not_found());
    }
    if matches!(verb, "update" | "patch") && req.path.name.is_none() {
        return Err(ApiError::method_not_allowed());
    }
    if let Some(sub) = &sub {
        let subs = req.res.subresources(&req.path.version);
        if !subs.iter().any(|s| s == sub) {
            return Err(ApiError::route_not_found());
        }
        if sub == "token" && verb == "create" {
            return token::create(&req, &body);
        }
        if req.res.builtin() == Some(crate::registry::BuiltinKind::Pod) {
            match (sub.as_str(), verb) {
                ("binding", "create") => return pods::bind(&req, &body).await,
                ("log", "get") => return pods::log(&req).await,
                ("binding" | "log", _) => return Err(ApiError::method_not_allowed()),
                _ => {}
            }
        }
        let allowed = match sub.as_str() {
            "finalize" => matches!(verb, "update"),
            _ => matches!(verb, "get" | "update" | "patch"),
        };
        if !allowed {
            return Err(ApiError::method_not_allowed());
        }
    } else if !req.res.allows(verb) {
        return Err(ApiError::method_not_allowed());
    }
    // kube negotiates the response format before it reads the body or options.
    req.output()?;
    if let Some(version) = req.res.version(&req.path.version)
        && let Some(warning) = &version.deprecation_warning
    {
        let mut reply = dispatch(&req, verb, body).await?;
        reply.warnings.push(warning.clone());
        return Ok(reply);
    }
    dispatch(&req, verb, body).await
}

async fn dispatch(req: &ResourceRequest, verb: &str, body: Bytes) -> Result<Reply, ApiError> {
    match verb {
        "get" => read::get(req),
        "list" => read::list(req),
        "watch" => watch::watch(req),
        "create" => write::create(req, body).await,
        "update" => write::update(req, body).await,
        "patch" => write::patch(req, body).await,
        "delete" => delete::delete(req, body).await,
        "deletecollection" => delete::delete_collection(req, body).await,
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// Parses a request body (JSON, YAML or protobuf) into an object.
pub(crate) fn decode_json(req: &ResourceRequest, body: &[u8]) -> Result<Value, ApiError> {
    decode_body(req, body).map(|(value, _)| value)
}

/// Parses a create or update body into an object, with what strict decoding needs to know
/// about the body as written (repeated keys, key order).
pub(crate) fn decode_body(
    req: &ResourceRequest,
    body: &[u8],
) -> Result<(Value, BodyCheck), ApiError> {
    let validation = req.field_validation().unwrap_or(FieldValidation::Warn);
    let mime = req
        .content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if mime == "application/yaml" {
        let text = std::str::from_utf8(body)
            .map_err(|err| ApiError::bad_request(format!("error decoding YAML: {err}")))?;
        let (value, check) = crate::fieldvalidation::decode_yaml_body(text, validation)
            .map_err(|err| ApiError::bad_request(format!("error decoding YAML: {err}")))?;
        if !value.is_object() {
            return Err(ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {})",
                req.res.kind
            )));
        }
        return Ok((value, check));
    }
    if mime == ocm_apiserver_protobuf::MEDIA_TYPE && req.res.builtin().is_some() {
        return ocm_apiserver_protobuf::decode_body(body)
            .map(|value| (value, BodyCheck::None))
            .map_err(|err| ApiError::bad_request(err.to_string()));
    }
    if !mime.is_empty() && mime != "application/json" && mime != "*/*" {
        return Err(ApiError::unsupported_media_type(
            if req.res.builtin().is_some() {
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
            } else {
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
            },
        ));
    }
    let typed = req.res.builtin().is_some();
    let (value, check) = crate::fieldvalidation::decode_json_body(body, typed, validation)
        .map_err(|err| {
            ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: {}",
                req.res.kind, err
            ))
        })?;
    if !value.is_object() {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
            req.res.kind,
            json_type(&value)
        )));
    }
    Ok((value, check))
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Shapes a single object per the `Accept` header.
pub(crate) fn object_reply(
    req: &ResourceRequest,
    status: StatusCode,
    obj: &Value,
) -> Result<Reply, ApiError> {
    match req.output()? {
        Output::Json => Ok(Reply::json(status, obj)),
        Output::PartialMeta => Ok(Reply::json(status, &crate::meta::partial_metadata(obj))),
        Output::Table => {
            let rv = crate::meta::meta_str(obj, "resourceVersion").to_owned();
            let table = crate::table::table(
                &req.res,
                &req.path.version,
                std::slice::from_ref(obj),
                &rv,
                "",
                true,
            );
            // kube names the plain media type: the `as`, `g` and `v` parameters of the
            // request are not repeated.
            Ok(Reply::json(status, &table))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Answerable = Answerable {
        tables: true,
        partial_metadata: true,
        protobuf: true,
    };

    fn encoding(accept: &str) -> Option<Encoding> {
        negotiate_media(Some(accept), ALL).ok().map(|(_, e)| e)
    }

    #[test]
    fn clauses_are_tried_by_q_then_wildcards_last() {
        assert_eq!(
            encoding("application/yaml, application/json"),
            Some(Encoding::Yaml)
        );
        assert_eq!(
            encoding("application/yaml;q=0.5, application/json"),
            Some(Encoding::Json)
        );
        assert_eq!(
            encoding("*/*, application/vnd.kubernetes.protobuf"),
            Some(Encoding::Protobuf)
        );
        assert_eq!(
            encoding("application/*, application/yaml"),
            Some(Encoding::Yaml)
        );
        // An unreadable q is 0; equal clauses keep their order.
        assert_eq!(
            encoding("application/yaml;q=x, application/json;q=0.1"),
            Some(Encoding::Json)
        );
        assert_eq!(
            encoding("application/json;q=0.5, application/yaml;q=0.5"),
            Some(Encoding::Json)
        );
        // kube compares types as written, and drops what is not type/subtype.
        assert_eq!(encoding("Application/JSON"), None);
        assert_eq!(encoding("json, application/yaml"), Some(Encoding::Yaml));
        assert_eq!(encoding("*"), Some(Encoding::Json));
        let kinds: Vec<String> = accept_clauses("a/b;q=0.2;x = y, */*, c/*;q=0.9")
            .into_iter()
            .map(|c| format!("{}/{} {:?}", c.kind, c.subtype, c.params))
            .collect();
        // goautoneg's comparison puts a concrete type before a wildcard whatever their q,
        // so the later c/* (q 0.9) passes */* (q 1) in Go's insertion sort.
        assert_eq!(kinds, ["c/* []", "*/* []", "a/b [(\"x\", \"y\")]"]);
    }
}
