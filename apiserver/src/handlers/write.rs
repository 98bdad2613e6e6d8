//! create, update (PUT) and patch, plus the scale subresource and access reviews.

use http::StatusCode;
use serde_json::{Value, json};

use super::{Reply, ResourceRequest, decode_body, object_reply};
use crate::fieldvalidation::BodyCheck;
use crate::meta;
use crate::ops::{Ctx, FieldValidation, Managed, Target, patch_error};
use crate::registry::BuiltinKind;
use ocm_apiserver_status::{ApiError, Cause};

fn target(req: &ResourceRequest) -> Target {
    match &req.path.subresource {
        None => Target::Main,
        Some(s) => Target::Sub(s.clone()),
    }
}

fn with_warnings(mut reply: Reply, ctx: &Ctx) -> Reply {
    reply.warnings.extend(ctx.warnings.iter().cloned());
    reply
}

/// POST on a collection.
pub(crate) async fn create(req: &ResourceRequest, body: bytes::Bytes) -> Result<Reply, ApiError> {
    if req.path.name.is_some() {
        return Err(ApiError::method_not_allowed());
    }
    let (obj, check) = decode_body(req, &body)?;
    if let Some(kind) = req.res.builtin()
        && kind.is_virtual()
    {
        return access_review(req, kind, obj);
    }
    let mut ctx = req.ctx()?;
    ctx.body = check;
    let created = ctx
        .create(req.namespace(), obj, Managed::RecordUpdate)
        .await
        .map_err(|err| err.with_warnings(&ctx.warnings))?;
    Ok(with_warnings(
        object_reply(req, StatusCode::CREATED, &created)?,
        &ctx,
    ))
}

/// Access reviews are answered from the cluster's RBAC policy, never stored.
fn access_review(
    req: &ResourceRequest,
    kind: BuiltinKind,
    mut obj: Value,
) -> Result<Reply, ApiError> {
    let mut ctx = req.ctx()?;
    crate::ops::check_type_meta_pub(&mut ctx, &mut obj)?;
    let policy = req.inner.policy(&req.cluster);
    if kind == BuiltinKind::SelfSubjectReview {
        let user_info = user_info(&req.identity);
        let answered = json!({
            "kind": "SelfSubjectReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": review_metadata(&obj),
            "status": {"userInfo": user_info},
        });
        return Ok(Reply::json(StatusCode::CREATED, &answered));
    }
    if kind == BuiltinKind::TokenReview {
        return token_review(req, obj);
    }
    let answered = match kind {
        BuiltinKind::SelfSubjectRulesReview => {
            ocm_apiserver_rbac::self_subject_rules_review(&policy, &req.identity, &obj)?
        }
        BuiltinKind::SelfSubjectAccessReview => {
            ocm_apiserver_rbac::self_subject_access_review(&policy, &req.identity, &obj)?
        }
        BuiltinKind::LocalSubjectAccessReview => {
            ocm_apiserver_rbac::local_subject_access_review(&policy, req.namespace(), &obj)?
        }
        _ => ocm_apiserver_rbac::subject_access_review(&policy, &obj)?,
    };
    Ok(Reply::json(StatusCode::CREATED, &answered))
}

/// The metadata a review is answered with: the request's, with a null creationTimestamp (as
/// kube's never-stored reviews read).
fn review_metadata(obj: &Value) -> serde_json::Map<String, Value> {
    let mut metadata = obj
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    metadata.insert("creationTimestamp".into(), Value::Null);
    metadata
}

/// The `userInfo` of a review: name, and uid, groups and extra when known.
fn user_info(identity: &crate::auth::Identity) -> serde_json::Map<String, Value> {
    let mut user = serde_json::Map::new();
    user.insert("username".into(), json!(identity.user));
    if !identity.uid.is_empty() {
        user.insert("uid".into(), json!(identity.uid));
    }
    if !identity.groups.is_empty() {
        user.insert("groups".into(), json!(identity.groups));
    }
    if !identity.extra.is_empty() {
        user.insert("extra".into(), json!(identity.extra));
    }
    user
}

/// A TokenReview: who the token in `spec.token` authenticates as, by the same authenticators
/// as requests (service-account and bootstrap tokens); never stored.
fn token_review(req: &ResourceRequest, obj: Value) -> Result<Reply, ApiError> {
    let token = obj
        .pointer("/spec/token")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if token.is_empty() {
        return Err(ApiError::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    let status =
        match crate::authn::authenticate_token(&req.inner.credentials(), &req.cluster, token) {
            Ok(identity) => {
                let mut status = json!({"authenticated": true, "user": user_info(&identity)});
                if let Some(audiences) = obj
                    .pointer("/spec/audiences")
                    .filter(|a| a.as_array().is_some_and(|a| !a.is_empty()))
                {
                    status["audiences"] = audiences.clone();
                }
                status
            }
            Err(_) => json!({"user": {}, "error": "invalid bearer token"}),
        };
    let answered = json!({
        "kind": "TokenReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": review_metadata(&obj),
        "spec": obj.get("spec").cloned().unwrap_or_else(|| json!({})),
        "status": status,
    });
    Ok(Reply::json(StatusCode::CREATED, &answered))
}

/// PUT on an object or subresource.
pub(crate) async fn update(req: &ResourceRequest, body: bytes::Bytes) -> Result<Reply, ApiError> {
    let name = req.path.name.clone().unwrap_or_default();
    let (obj, check) = decode_body(req, &body)?;
    let mut ctx = req.ctx()?;
    if req.path.subresource.as_deref() == Some("scale") {
        return scale_write(req, &mut ctx, &name, &mut |_old_scale| Ok(obj.clone())).await;
    }
    ctx.body = check;
    let target = target(req);
    let mut mutate = |_: &mut Ctx, _: &Value| Ok(obj.clone());
    let updated = ctx
        .update(
            req.namespace(),
            &name,
            &target,
            Managed::RecordUpdate,
            true,
            &mut mutate,
        )
        .await
        .map_err(|err| err.with_warnings(&ctx.warnings))?;
    Ok(with_warnings(
        object_reply(req, StatusCode::OK, &updated.object)?,
        &ctx,
    ))
}

/// The patch content types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

fn patch_type(req: &ResourceRequest) -> Result<PatchType, ApiError> {
    let mime = req
        .content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let t = match mime.as_str() {
        "application/json-patch+json" => PatchType::Json,
        "application/merge-patch+json" => PatchType::Merge,
        "application/strategic-merge-patch+json" => PatchType::Strategic,
        "application/apply-patch+yaml" => PatchType::Apply,
        _ => return Err(unsupported_patch(req, &mime)),
    };
    if t == PatchType::Strategic
        && !ocm_apiserver_patch::supports_strategic_merge_patch(&req.res.group, &req.res.kind)
    {
        return Err(unsupported_patch(req, &mime));
    }
    Ok(t)
}

fn unsupported_patch(req: &ResourceRequest, mime: &str) -> ApiError {
    let mut accepted = vec![
        "application/json-patch+json",
        "application/merge-patch+json",
    ];
    if ocm_apiserver_patch::supports_strategic_merge_patch(&req.res.group, &req.res.kind) {
        accepted.push("application/strategic-merge-patch+json");
    }
    accepted.push("application/apply-patch+yaml");
    let _ = mime;
    ApiError::unsupported_media_type(format!(
        "the body of the request was in an unknown format - accepted media types include: {}",
        accepted.join(", ")
    ))
}

/// Parses an apply body: YAML or JSON (a repeated key's later value wins).
fn parse_apply_body(body: &[u8]) -> Result<Value, ApiError> {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return Ok(v);
    }
    let text = std::str::from_utf8(body)
        .map_err(|err| ApiError::bad_request(format!("error decoding YAML: {err}")))?;
    crate::fieldvalidation::yaml::decode(text)
        .map_err(|err| ApiError::bad_request(format!("error decoding YAML: {err}")))
}

/// What strict decoding checks of a JSON, merge or strategic merge patch document.
fn patch_check(
    kind: PatchType,
    validation: FieldValidation,
    body: &[u8],
    patch: &Value,
) -> BodyCheck {
    if validation == FieldValidation::Ignore {
        return BodyCheck::None;
    }
    match kind {
        PatchType::Json => BodyCheck::Patch(crate::fieldvalidation::patch_errors(body, true)),
        PatchType::Merge => BodyCheck::Patch(crate::fieldvalidation::patch_errors(body, false)),
        PatchType::Strategic => BodyCheck::Strategic {
            patch: patch.clone(),
            errors: crate::fieldvalidation::patch_errors(body, false),
        },
        PatchType::Apply => BodyCheck::None,
    }
}

/// The object types the patch algorithms need for this resource version.
pub(crate) fn object_type(req: &ResourceRequest) -> ocm_apiserver_patch::ObjectType {
    crate::ops::object_type(&req.res, &req.path.version)
}

fn apply_patch(
    kind: PatchType,
    types: &ocm_apiserver_patch::ObjectType,
    old: &Value,
    patch: &Value,
) -> Result<Value, ApiError> {
    match kind {
        PatchType::Json => ocm_apiserver_patch::apply_json_patch(old, patch).map_err(patch_error),
        PatchType::Merge => ocm_apiserver_patch::apply_merge_patch(old, patch).map_err(patch_error),
        PatchType::Strategic => {
            ocm_apiserver_patch::apply_strategic_merge_patch(old, patch, types).map_err(patch_error)
        }
        PatchType::Apply => Err(ApiError::internal("apply is handled separately")),
    }
}

/// PATCH on an object or subresource.
pub(crate) async fn patch(req: &ResourceRequest, body: bytes::Bytes) -> Result<Reply, ApiError> {
    let name = req.path.name.clone().unwrap_or_default();
    let kind = patch_type(req)?;
    let mut ctx = req.ctx()?;
    let force = req.query.get("force");
    if kind != PatchType::Apply && force.is_some() {
        return Err(ApiError::invalid(
            "PatchOptions.meta.k8s.io",
            "meta.k8s.io",
            "PatchOptions",
            "",
            vec![Cause::new(
                "FieldValueForbidden",
                "Forbidden: may not be specified for non-apply patch",
                "force",
            )],
        ));
    }
    let patch: Value = match kind {
        PatchType::Apply => parse_apply_body(&body)?,
        _ => serde_json::from_slice(&body)
            .map_err(|err| ApiError::bad_request(format!("error decoding patch: {err}")))?,
    };
    let types = object_type(req);
    if kind == PatchType::Apply {
        let duplicates = (ctx.field_validation != FieldValidation::Ignore)
            .then(|| crate::fieldvalidation::apply_duplicates(&body))
            .flatten();
        return super::apply::apply(req, &mut ctx, &name, patch, types, duplicates).await;
    }
    if req.path.subresource.as_deref() == Some("scale") {
        return scale_write(req, &mut ctx, &name, &mut |old_scale| {
            apply_patch(kind, &types, old_scale, &patch)
        })
        .await;
    }
    ctx.body = patch_check(kind, ctx.field_validation, &body, &patch);
    let target = target(req);
    let mut mutate = |_: &mut Ctx, old: &Value| apply_patch(kind, &types, old, &patch);
    let updated = ctx
        .update(
            req.namespace(),
            &name,
            &target,
            Managed::RecordUpdate,
            false,
            &mut mutate,
        )
        .await
        .map_err(|err| err.with_warnings(&ctx.warnings))?;
    Ok(with_warnings(
        object_reply(req, StatusCode::OK, &updated.object)?,
        &ctx,
    ))
}

fn path_get<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = obj;
    for part in path
        .trim_start_matches('.')
        .split('.')
        .filter(|p| !p.is_empty())
    {
        cur = cur.get(part)?;
    }
    Some(cur)
}

fn path_set(obj: &mut Value, path: &str, value: Value) {
    let parts: Vec<&str> = path
        .trim_start_matches('.')
        .split('.')
        .filter(|p| !p.is_empty())
        .collect();
    let mut cur = obj;
    for (i, part) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = json!({});
        }
        let Some(map) = cur.as_object_mut() else {
            return;
        };
        if i + 1 == parts.len() {
            map.insert((*part).to_owned(), value);
            return;
        }
        cur = map.entry((*part).to_owned()).or_insert_with(|| json!({}));
    }
}

/// The `autoscaling/v1` Scale of an object.
pub(crate) fn scale_of(req: &ResourceRequest, obj: &Value) -> Value {
    let spec = req
        .res
        .version(&req.path.version)
        .and_then(|v| v.scale.clone());
    let (spec_path, status_path, selector_path) = match &spec {
        Some(s) => (
            s.spec_replicas_path.clone(),
            s.status_replicas_path.clone(),
            s.label_selector_path.clone(),
        ),
        None => (".spec.replicas".into(), ".status.replicas".into(), None),
    };
    let mut meta = json!({
        "name": meta::meta_str(obj, "name"),
        "uid": meta::meta_str(obj, "uid"),
        "resourceVersion": meta::meta_str(obj, "resourceVersion"),
        "creationTimestamp": meta::meta_str(obj, "creationTimestamp"),
    });
    if req.res.namespaced {
        meta["namespace"] = json!(meta::meta_str(obj, "namespace"));
    }
    let replicas = path_get(obj, &spec_path)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let current = path_get(obj, &status_path)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut status = json!({"replicas": current});
    let selector = match req.res.builtin() {
        Some(_) => obj
            .pointer("/spec/selector")
            .and_then(|s| ocm_apiserver_selector::LabelSelector::from_structured(s).ok())
            .map(|s| s.to_string()),
        None => selector_path
            .and_then(|p| path_get(obj, &p))
            .and_then(Value::as_str)
            .map(str::to_owned),
    };
    if let Some(sel) = selector.filter(|s| !s.is_empty()) {
        status["selector"] = json!(sel);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": {"replicas": replicas},
        "status": status,
    })
}

async fn scale_write(
    req: &ResourceRequest,
    ctx: &mut Ctx,
    name: &str,
    compute: &mut (dyn FnMut(&Value) -> Result<Value, ApiError> + Send),
) -> Result<Reply, ApiError> {
    let spec_path = req
        .res
        .version(&req.path.version)
        .and_then(|v| v.scale.as_ref().map(|s| s.spec_replicas_path.clone()))
        .unwrap_or_else(|| ".spec.replicas".into());
    let mut mutate = |_: &mut Ctx, old: &Value| {
        let old_scale = scale_of(req, old);
        let new_scale = compute(&old_scale)?;
        let rv = meta::meta_str(&new_scale, "resourceVersion").to_owned();
        if !rv.is_empty() && rv != meta::meta_str(old, "resourceVersion") {
            return Err(ApiError::conflict(
                ocm_apiserver_status::Gr {
                    group: &req.res.group,
                    resource: &req.res.plural,
                },
                name,
            ));
        }
        let replicas = new_scale
            .pointer("/spec/replicas")
            .cloned()
            .unwrap_or(json!(0));
        let mut new = old.clone();
        path_set(&mut new, &spec_path, replicas);
        Ok(new)
    };
    let updated = ctx
        .update(
            req.namespace(),
            name,
            &Target::Main,
            Managed::RecordUpdate,
            false,
            &mut mutate,
        )
        .await
        .map_err(|err| err.with_warnings(&ctx.warnings))?;
    Ok(Reply::json(StatusCode::OK, &scale_of(req, &updated.object)))
}
