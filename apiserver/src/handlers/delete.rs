//! delete and deletecollection.

use http::StatusCode;
use serde_json::{Value, json};

use super::read::{Filter, collect_page};
use super::{Reply, ResourceRequest, object_reply};
use crate::meta;
use crate::ops::{DeleteOptions, Deleted, Propagation};
use ocm_apiserver_status::{ApiError, Cause};

fn invalid_options(field: &str, message: String) -> ApiError {
    ApiError::invalid(
        "DeleteOptions.meta.k8s.io",
        "meta.k8s.io",
        "DeleteOptions",
        "",
        vec![Cause::new("FieldValueNotSupported", message, field)],
    )
}

/// DeleteOptions from the body and the query.
fn options(req: &ResourceRequest, body: &[u8]) -> Result<(DeleteOptions, bool), ApiError> {
    let mut opts = DeleteOptions::default();
    let mut dry_run = false;
    let trimmed: &[u8] = {
        let s = std::str::from_utf8(body).unwrap_or("").trim();
        s.as_bytes()
    };
    let body: Value = if !body.is_empty() && ocm_apiserver_protobuf::is_protobuf(&req.content_type)
    {
        ocm_apiserver_protobuf::decode_body(body)
            .map_err(|err| ApiError::bad_request(format!("error decoding DeleteOptions: {err}")))?
    } else if trimmed.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(trimmed)
            .map_err(|err| ApiError::bad_request(format!("error decoding DeleteOptions: {err}")))?
    };
    let policy = body
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| req.query.non_empty("propagationPolicy").map(str::to_owned));
    let orphan = body
        .get("orphanDependents")
        .and_then(Value::as_bool)
        .or_else(|| req.query.non_empty("orphanDependents").map(|v| v == "true"));
    opts.propagation = match policy.as_deref() {
        None => match orphan {
            Some(true) => Some(Propagation::Orphan),
            Some(false) => Some(Propagation::Background),
            None => None,
        },
        Some("Foreground") => Some(Propagation::Foreground),
        Some("Background") => Some(Propagation::Background),
        Some("Orphan") => Some(Propagation::Orphan),
        Some(other) => {
            return Err(invalid_options(
                "propagationPolicy",
                format!(
                    "Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
                ),
            ));
        }
    };
    if policy.is_some() && orphan.is_some() {
        return Err(invalid_options(
            "propagationPolicy",
            "Invalid value: \"\": orphanDependents and deletionPropagation cannot be both set"
                .into(),
        ));
    }
    if let Some(pre) = body.get("preconditions") {
        opts.uid = pre.get("uid").and_then(Value::as_str).map(str::to_owned);
        opts.resource_version = pre
            .get("resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_owned);
    }
    let body_dry: Vec<String> = crate::meta::strings(body.get("dryRun"));
    for d in body_dry {
        if d != "All" {
            return Err(ApiError::bad_request(format!(
                "Invalid dry run value: {d}; supported values: All"
            )));
        }
        dry_run = true;
    }
    Ok((opts, dry_run))
}

/// Success status of a delete.
fn success(req: &ResourceRequest, obj: &Value) -> Value {
    let mut details = json!({"name": meta::meta_str(obj, "name"), "kind": req.res.plural, "uid": meta::meta_str(obj, "uid")});
    if !req.res.group.is_empty() {
        details["group"] = json!(req.res.group);
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}

/// DELETE of one object.
pub(crate) async fn delete(req: &ResourceRequest, body: bytes::Bytes) -> Result<Reply, ApiError> {
    let name = req.path.name.clone().unwrap_or_default();
    let (opts, dry) = options(req, &body)?;
    let mut ctx = req.ctx()?;
    ctx.dry_run |= dry;
    let accepted = opts.propagation.is_some()
        && matches!(req.query.non_empty("orphanDependents"), Some("false"));
    match ctx.delete(req.namespace(), &name, &opts).await? {
        Deleted::Gone(obj) => {
            if req.res.is_custom()
                || req.res.builtin() == Some(crate::registry::BuiltinKind::Namespace)
            {
                object_reply(req, StatusCode::OK, &obj)
            } else {
                Ok(Reply::json(StatusCode::OK, &success(req, &obj)))
            }
        }
        Deleted::Pending(obj) => {
            let status = if accepted {
                StatusCode::ACCEPTED
            } else {
                StatusCode::OK
            };
            object_reply(req, status, &obj)
        }
    }
}

/// DELETE of a collection (with selectors).
pub(crate) async fn delete_collection(
    req: &ResourceRequest,
    body: bytes::Bytes,
) -> Result<Reply, ApiError> {
    let (opts, dry) = options(req, &body)?;
    let filter = Filter::from_request(req)?;
    let page = collect_page(req, &filter)?;
    let mut ctx = req.ctx()?;
    ctx.dry_run |= dry;
    let mut items = Vec::new();
    for (object, parsed) in page.items {
        let value = match parsed {
            Some(v) => v,
            None => ctx.parse(&object)?,
        };
        let ns = meta::meta_str(&value, "namespace").to_owned();
        let name = meta::meta_str(&value, "name").to_owned();
        match ctx.delete(&ns, &name, &opts).await {
            Ok(Deleted::Gone(obj)) | Ok(Deleted::Pending(obj)) => items.push(obj),
            Err(err) if err.code == 404 => {}
            Err(err) => return Err(err),
        }
    }
    Ok(Reply::json(
        StatusCode::OK,
        &json!({
            "kind": req.res.list_kind,
            "apiVersion": req.res.api_version(&req.path.version),
            "metadata": {"resourceVersion": ctx.revision().to_string()},
            "items": super::list_items::list_items(&req.res, items),
        }),
    ))
}
