//! Patch algorithms: JSON patch, JSON merge patch, strategic merge patch, server-side apply,
//! and the managedFields bookkeeping of every write.
//!
//! Everything here is pure: `serde_json::Value` in, `Value` out, no I/O, no clock (the caller
//! passes the time). Errors are [`PatchError`]s, which know the Status kube-apiserver answers
//! with ([`PatchError::status_code`], [`PatchError::reason`], [`PatchError::message`],
//! [`PatchError::causes`]).
//!
//! How a PATCH request maps onto this module (by `Content-Type`):
//!
//! | Content-Type | call |
//! |---|---|
//! | `application/json-patch+json` | [`apply_json_patch`] then [`record_update`] |
//! | `application/merge-patch+json` | [`apply_merge_patch`] then [`record_update`] |
//! | `application/strategic-merge-patch+json` | 415 unless [`supports_strategic_merge_patch`], else [`apply_strategic_merge_patch`] then [`record_update`] |
//! | `application/apply-patch+yaml` | [`apply()`] (it writes managedFields itself) |
//!
//! Creates and updates (POST, PUT) call [`record_update`] too. The field types come from
//! [`ObjectType::builtin`] for built-in kinds and [`ObjectType::from_crd_schema`] for custom
//! resources (cache it per CRD version).

pub mod apply;
pub mod error;
pub mod json_patch;
pub mod managed_fields;
pub mod merge;
pub mod strategic;
pub mod typeinfo;

pub(crate) mod fieldpath;
pub(crate) mod typed;

pub use apply::{ApplyOptions, apply};
pub use error::{Conflict, PatchError, StatusCause};
pub use json_patch::apply_json_patch;
pub use managed_fields::{
    UpdateOptions, default_reset_fields, manager_or_user_agent, record_update,
};
pub use merge::apply_merge_patch;
pub use strategic::apply_strategic_merge_patch;
pub use typeinfo::{ObjectType, supports_strategic_merge_patch};
