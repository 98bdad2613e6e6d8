//! Glue to the patch algorithms: object types per resource version, managedFields recording,
//! and server-side apply.

use serde_json::Value;

use crate::registry::ResourceInfo;
use ocm_apiserver_patch::{ObjectType, PatchError};
use ocm_apiserver_status::{ApiError, Cause};

/// The field types of a resource version, for strategic merge patch and server-side apply.
pub(crate) fn object_type(res: &ResourceInfo, version: &str) -> ObjectType {
    if let Some(t) = ObjectType::builtin(&res.group, &res.kind) {
        return t;
    }
    match res.version(version) {
        Some(v) => match &v.schema {
            Some(schema) => v
                .patch_types
                .get_or_init(|| ObjectType::from_crd_schema(&schema.value()))
                .clone(),
            None => ObjectType::untyped(),
        },
        None => ObjectType::untyped(),
    }
}

/// The object an apply creates (with its managedFields entry).
pub(crate) fn apply_create(
    types: &ObjectType,
    applied: &Value,
    manager: &str,
    api_version: &str,
    reset_fields: &[&[&str]],
) -> Result<Value, ApiError> {
    let now = crate::meta::now();
    let opts = ocm_apiserver_patch::ApplyOptions {
        manager,
        api_version,
        force: false,
        subresource: None,
        reset_fields,
        now: &now,
    };
    ocm_apiserver_patch::apply(None, applied, types, &opts).map_err(patch_error)
}

/// The live object after applying `applied` for `manager`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn apply_update(
    types: &ObjectType,
    live: &Value,
    applied: &Value,
    manager: &str,
    api_version: &str,
    subresource: Option<&str>,
    force: bool,
    reset_fields: &[&[&str]],
) -> Result<Value, ApiError> {
    let now = crate::meta::now();
    let opts = ocm_apiserver_patch::ApplyOptions {
        manager,
        api_version,
        force,
        subresource,
        reset_fields,
        now: &now,
    };
    ocm_apiserver_patch::apply(Some(live), applied, types, &opts).map_err(patch_error)
}

/// Maps a patch algorithm failure to its Status.
pub(crate) fn patch_error(err: PatchError) -> ApiError {
    let mut api = ApiError::new(err.status_code(), err.reason(), err.message());
    let causes: Vec<Cause> = err
        .causes()
        .into_iter()
        .map(|c| Cause::new(&c.reason, c.message, c.field))
        .collect();
    if !causes.is_empty() {
        api = api.with_causes(causes);
    }
    api
}
