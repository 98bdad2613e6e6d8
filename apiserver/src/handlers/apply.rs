//! Server-side apply (`application/apply-patch+yaml`).

use http::StatusCode;
use serde_json::Value;

use super::{Reply, ResourceRequest, object_reply};
use crate::error::{ApiError, Cause};
use crate::meta;
use crate::ops::{Ctx, Managed, Target};

fn manager_required() -> ApiError {
    ApiError::invalid(
        "PatchOptions.meta.k8s.io",
        "meta.k8s.io",
        "PatchOptions",
        "",
        vec![Cause::new(
            "FieldValueRequired",
            "Required value: is required for apply patch",
            "fieldManager",
        )],
    )
}

/// Applies a configuration: creates the object when missing, else merges it into the live
/// object with field ownership.
pub(crate) async fn apply(
    req: &ResourceRequest,
    ctx: &mut Ctx,
    name: &str,
    applied: Value,
    types: crate::patch::ObjectType,
) -> Result<Reply, ApiError> {
    if req.query.non_empty("fieldManager").is_none() {
        return Err(manager_required());
    }
    let force = match req.query.get("force") {
        None | Some("") | Some("false") => false,
        Some("true") => true,
        Some(other) => return Err(ApiError::bad_request(format!("invalid force: {other}"))),
    };
    if !applied.is_object() {
        return Err(ApiError::bad_request(
            "error decoding YAML: the applied configuration is not an object",
        ));
    }
    let mut applied = applied;
    let body_name = meta::meta_str(&applied, "name").to_owned();
    if body_name.is_empty() {
        // kube-apiserver takes the name from the URL (status applies often omit metadata).
        meta::set_meta(&mut applied, "name", Some(serde_json::json!(name)));
    } else if body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let target = match &req.path.subresource {
        None => Target::Main,
        Some(s) => Target::Sub(s.clone()),
    };
    let subresource = req.path.subresource.clone();
    let api_version = req.res.api_version(&req.path.version);
    let exists = req
        .inner
        .store
        .get(&ctx.key(req.namespace(), name))
        .is_some();
    if !exists && target == Target::Main {
        let manager = ctx.manager.clone();
        let reset = crate::patch::default_reset_fields(None, req.res.has_status(&req.path.version));
        let created = crate::ops::apply_create(&types, &applied, &manager, &api_version, reset)?;
        match ctx
            .create(req.namespace(), created, Managed::Computed)
            .await
        {
            Ok(obj) => {
                let mut reply = object_reply(req, StatusCode::CREATED, &obj)?;
                reply.warnings.extend(ctx.warnings.iter().cloned());
                return Ok(reply);
            }
            Err(err) if err.reason == "AlreadyExists" => {}
            Err(err) => return Err(err),
        }
    }
    let manager = ctx.manager.clone();
    let reset = crate::patch::default_reset_fields(
        subresource.as_deref(),
        req.res.has_status(&req.path.version),
    );
    let mut mutate = |_: &mut Ctx, old: &Value| {
        crate::ops::apply_update(
            &types,
            old,
            &applied,
            &manager,
            &api_version,
            subresource.as_deref(),
            force,
            reset,
        )
    };
    let updated = ctx
        .update(
            req.namespace(),
            name,
            &target,
            Managed::Computed,
            false,
            &mut mutate,
        )
        .await?;
    let mut reply = object_reply(req, StatusCode::OK, &updated.object)?;
    reply.warnings.extend(ctx.warnings.iter().cloned());
    Ok(reply)
}
