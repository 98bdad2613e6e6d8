//! Schema tweaks private to the `work` group.

use schemars::{Schema, SchemaGenerator, json_schema};

/// Schema of a Go `int`: an integer without a format, as upstream declares it.
/// Use with `#[schemars(schema_with = "crate::work::schema::integer")]`.
pub(crate) fn integer(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "integer"})
}
