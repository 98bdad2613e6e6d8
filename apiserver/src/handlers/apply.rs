//! Server-side apply (`application/apply-patch+yaml`).

use http::StatusCode;
use serde_json::Value;

use super::{Reply, ResourceRequest, object_reply};
use crate::meta;
use crate::ops::{Ctx, FieldValidation, Managed, Target};
use ocm_apiserver_status::{ApiError, Cause};

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
/// object with field ownership. `duplicates` is the repeated-key report of the configuration
/// ([`crate::fieldvalidation::apply_duplicates`]): under `fieldValidation=Strict` it fails an
/// apply that would otherwise succeed, under `Warn` it becomes a warning.
pub(crate) async fn apply(
    req: &ResourceRequest,
    ctx: &mut Ctx,
    name: &str,
    applied: Value,
    types: ocm_apiserver_patch::ObjectType,
    duplicates: Option<String>,
) -> Result<Reply, ApiError> {
    if req.query.non_empty("fieldManager").is_none() {
        return Err(manager_required());
    }
    ctx.body = crate::fieldvalidation::BodyCheck::Apply;
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
        let reset =
            ocm_apiserver_patch::default_reset_fields(None, req.res.has_status(&req.path.version));
        let created = crate::ops::apply_create(&types, &applied, &manager, &api_version, reset)?;
        strict_duplicates(ctx.field_validation, duplicates.as_deref())?;
        match ctx
            .create(req.namespace(), created, Managed::Computed)
            .await
        {
            Ok(obj) => {
                let mut reply = object_reply(req, StatusCode::CREATED, &obj)?;
                reply.warnings.extend(ctx.warnings.iter().cloned());
                reply
                    .warnings
                    .extend(warn_duplicates(ctx.field_validation, duplicates));
                return Ok(reply);
            }
            Err(err) if err.reason == "AlreadyExists" => {}
            Err(err) => return Err(err.with_warnings(&ctx.warnings)),
        }
    }
    let manager = ctx.manager.clone();
    let reset = ocm_apiserver_patch::default_reset_fields(
        subresource.as_deref(),
        req.res.has_status(&req.path.version),
    );
    let validation = ctx.field_validation;
    let mut mutate = |_: &mut Ctx, old: &Value| {
        let merged = crate::ops::apply_update(
            &types,
            old,
            &applied,
            &manager,
            &api_version,
            subresource.as_deref(),
            force,
            reset,
        )?;
        strict_duplicates(validation, duplicates.as_deref())?;
        Ok(merged)
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
        .await
        .map_err(|err| err.with_warnings(&ctx.warnings))?;
    let mut reply = object_reply(req, StatusCode::OK, &updated.object)?;
    reply.warnings.extend(ctx.warnings.iter().cloned());
    reply
        .warnings
        .extend(warn_duplicates(ctx.field_validation, duplicates));
    Ok(reply)
}

/// Under `fieldValidation=Strict`, kube's 400 for an applied configuration with repeated keys.
fn strict_duplicates(
    validation: FieldValidation,
    duplicates: Option<&str>,
) -> Result<(), ApiError> {
    match duplicates {
        Some(dup) if validation == FieldValidation::Strict => Err(ApiError::bad_request(format!(
            "error strict decoding YAML: {dup}"
        ))),
        _ => Ok(()),
    }
}

/// Under `fieldValidation=Warn`, the repeated-key report as warnings, one per repeated key.
fn warn_duplicates(validation: FieldValidation, duplicates: Option<String>) -> Vec<String> {
    duplicates
        .filter(|_| validation == FieldValidation::Warn)
        .map(|d| crate::fieldvalidation::yaml_warnings(&d))
        .unwrap_or_default()
}
