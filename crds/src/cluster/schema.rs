//! Schema helpers private to the cluster group.

use schemars::{Schema, SchemaGenerator, json_schema};

/// Pattern of a count or percentage of clusters (`3`, `25%`, `100%`).
pub(crate) const COUNT_OR_PERCENT_PATTERN: &str = r"^((100|[0-9]{1,2})%|[0-9]+)$";

/// Schema of an int-or-string holding a count or a percentage of clusters, e.g.
/// `maxFailures`, `maxConcurrency`, `clustersPerDecisionGroup`. Add a default with
/// `extend("default" = ..)`.
pub(crate) fn count_or_percent(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": COUNT_OR_PERCENT_PATTERN,
        "x-kubernetes-int-or-string": true
    })
}

/// Schema of a placement's `clustersPerDecisionGroup`: a positive count or a percentage from
/// 1% to 100%, default `100%`.
pub(crate) fn clusters_per_decision_group(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "default": "100%",
        "pattern": r"^((100|[1-9][0-9]{0,1})%|[1-9][0-9]*)$",
        "x-kubernetes-int-or-string": true
    })
}
