//! Pure functions that turn what the work agent observed on the managed cluster into
//! per-manifest conditions, status feedback and work-level conditions. No I/O.
//!
//! - Availability: an applied object that exists is `Available`.
//! - Feedback: `WellKnownStatus` (upstream's names for Deployment, DaemonSet, Job and Pod)
//!   and `JSONPaths` rules in Kubernetes' JSONPath dialect ([`jsonpath`]); integers, strings
//!   and booleans keep their type, objects and lists come back as `JsonRaw` (at most 1024
//!   bytes). Upstream hides `JsonRaw` behind the `RawFeedbackJsonString` gate (off); here it
//!   is always on.
//! - Condition rules: `WellKnownConditions` (completion of Jobs and Pods, under the rule's
//!   condition name, `Complete` by default) and `CEL` ([`cel`]), evaluated only when the
//!   object was read.

pub mod cel;
pub mod jsonpath;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use ocm_api::work::names::{
    FEEDBACK_JSON_RAW_MAX_LENGTH, conditions as types, manifest_reasons as reasons, work_reasons,
};
use ocm_api::work::v1::{
    ConditionRuleType, FeedbackType, FeedbackValue, FieldValue, ManifestCondition,
    ManifestConfigOption, ManifestResourceMeta, StatusFeedbackResult, ValueType,
};
use ocm_runtime::conditions::{condition, set_condition};
use serde_json::Value;

/// What the agent read from the managed cluster for one applied manifest.
#[derive(Clone, Copy, Debug)]
pub enum LiveObject<'a> {
    /// The object as the managed cluster's API server returned it.
    Found(&'a Value),
    /// The object does not exist.
    NotFound,
    /// Reading it failed; the text says why.
    FetchFailed(&'a str),
    /// The manifest's resource meta is incomplete (resource unknown), so it was not read.
    IncompleteMeta,
}

/// The status side of one manifest: what [`observe_manifest`] derived from the live object.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ManifestObservation {
    /// `Available`, `StatusFeedbackSynced` and condition-rule conditions, with
    /// `observedGeneration` set to the work's generation.
    pub conditions: Vec<Condition>,
    /// Status feedback values; `None` when the manifest has no feedback rules.
    pub feedback: Option<StatusFeedbackResult>,
}

fn matches(pattern: &str, value: &str) -> bool {
    pattern == "*" || pattern == value
}

/// The manifestConfig that applies to a resource (`*` in the identifier matches anything);
/// the first match in spec order wins.
pub fn manifest_config<'a>(
    configs: &'a [ManifestConfigOption],
    meta: &ManifestResourceMeta,
) -> Option<&'a ManifestConfigOption> {
    configs.iter().find(|c| {
        let id = &c.resource_identifier;
        matches(id.group.as_deref().unwrap_or(""), &meta.group)
            && matches(&id.resource, &meta.resource)
            && matches(&id.name, &meta.name)
            && matches(id.namespace.as_deref().unwrap_or(""), &meta.namespace)
    })
}

/// Feedback values a `WellKnownStatus` rule reports for `kind`: (name, JSONPath).
pub fn well_known_status(group: &str, kind: &str) -> &'static [(&'static str, &'static str)] {
    match (group, kind) {
        ("apps", "Deployment") => &[
            ("ReadyReplicas", ".status.readyReplicas"),
            ("Replicas", ".status.replicas"),
            ("AvailableReplicas", ".status.availableReplicas"),
        ],
        ("apps", "DaemonSet") => &[
            ("NumberReady", ".status.numberReady"),
            ("DesiredNumberScheduled", ".status.desiredNumberScheduled"),
            ("NumberAvailable", ".status.numberAvailable"),
        ],
        ("batch", "Job") => &[
            (
                "JobComplete",
                ".status.conditions[?(@.type==\"Complete\")].status",
            ),
            ("JobSucceeded", ".status.succeeded"),
        ],
        ("", "Pod") => &[
            (
                "PodReady",
                ".status.conditions[?(@.type==\"Ready\")].status",
            ),
            ("PodPhase", ".status.phase"),
        ],
        _ => &[],
    }
}

fn field_value(value: &Value) -> Result<FieldValue, String> {
    let mut out = FieldValue::default();
    match value {
        Value::Number(n) => match n.as_i64() {
            Some(i) => {
                out.type_ = ValueType::Integer;
                out.integer = Some(i);
            }
            None => return Err(format!("{n} is not an integer")),
        },
        Value::String(s) => {
            out.type_ = ValueType::String;
            out.string = Some(s.clone());
        }
        Value::Bool(b) => {
            out.type_ = ValueType::Boolean;
            out.boolean = Some(*b);
        }
        Value::Null => return Err("value is null".into()),
        other => {
            let raw = other.to_string();
            if raw.len() > FEEDBACK_JSON_RAW_MAX_LENGTH {
                return Err(format!(
                    "value is {} bytes of JSON, more than the {FEEDBACK_JSON_RAW_MAX_LENGTH} allowed",
                    raw.len()
                ));
            }
            out.type_ = ValueType::JsonRaw;
            out.json_raw = Some(raw);
        }
    }
    Ok(out)
}

/// Evaluates the feedback rules of `config` on `object`: the values, and the errors of rules
/// that could not be read.
fn feedback(
    object: &Value,
    meta: &ManifestResourceMeta,
    config: &ManifestConfigOption,
) -> (Vec<FeedbackValue>, Vec<String>) {
    let mut values = Vec::new();
    let mut errors = Vec::new();
    let mut read = |name: &str, path: &str| match jsonpath::evaluate(path, object) {
        Err(e) => errors.push(format!("{name}: {e}")),
        Ok(found) => match found.as_slice() {
            [] => {}
            [one] => match field_value(one) {
                Ok(field_value) => values.push(FeedbackValue {
                    name: name.to_owned(),
                    field_value,
                }),
                Err(e) => errors.push(format!("{name}: {e}")),
            },
            many => errors.push(format!(
                "{name}: path {path} selects {} values, want one",
                many.len()
            )),
        },
    };
    for rule in &config.feedback_rules {
        match rule.type_ {
            FeedbackType::WellKnownStatus => {
                for (name, path) in well_known_status(&meta.group, &meta.kind) {
                    read(name, path);
                }
            }
            FeedbackType::JsonPaths => {
                for p in &rule.json_paths {
                    if !p.version.is_empty() && p.version != meta.version {
                        continue;
                    }
                    read(&p.name, &p.path);
                }
            }
        }
    }
    (values, errors)
}

/// `Complete` of Jobs (a Complete or Failed condition True) and Pods (phase Succeeded or
/// Failed); `None` for kinds without a well-known rule.
/// `group/version, Kind=kind` as Go prints a GroupVersionKind.
fn gvk(meta: &ManifestResourceMeta) -> String {
    let gv = if meta.group.is_empty() {
        meta.version.clone()
    } else {
        format!("{}/{}", meta.group, meta.version)
    };
    format!("{gv}, Kind={}", meta.kind)
}

fn well_known_complete(meta: &ManifestResourceMeta, object: &Value) -> Option<(bool, String)> {
    match (meta.group.as_str(), meta.kind.as_str()) {
        ("batch", "Job") => {
            let done = object
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| {
                    cs.iter().any(|c| {
                        matches!(c["type"].as_str(), Some("Complete" | "Failed"))
                            && c["status"] == "True"
                    })
                });
            let message = if done {
                "Job is finished"
            } else {
                "Job is not finished"
            };
            Some((done, message.to_owned()))
        }
        ("", "Pod") => {
            let phase = object
                .pointer("/status/phase")
                .and_then(Value::as_str)
                .unwrap_or("");
            Some((
                matches!(phase, "Succeeded" | "Failed"),
                format!("Pod is in phase {phase}"),
            ))
        }
        _ => None,
    }
}

/// Derives availability, feedback and rule conditions of one manifest.
pub fn observe_manifest(
    live: LiveObject<'_>,
    meta: &ManifestResourceMeta,
    config: Option<&ManifestConfigOption>,
    generation: i64,
) -> ManifestObservation {
    let g = Some(generation);
    let mut out = ManifestObservation::default();
    let available = match live {
        LiveObject::Found(_) => condition(
            types::AVAILABLE,
            "True",
            reasons::RESOURCE_AVAILABLE,
            "Resource is available",
            g,
        ),
        LiveObject::NotFound => condition(
            types::AVAILABLE,
            "False",
            reasons::RESOURCE_NOT_AVAILABLE,
            "Resource is not available",
            g,
        ),
        LiveObject::FetchFailed(why) => condition(
            types::AVAILABLE,
            "Unknown",
            reasons::FETCHING_RESOURCE_FAILED,
            &format!("Failed to fetch resource with err: {why}"),
            g,
        ),
        LiveObject::IncompleteMeta => condition(
            types::AVAILABLE,
            "Unknown",
            reasons::INCOMPLETE_RESOURCE_META,
            "Resource meta is incomplete",
            g,
        ),
    };
    out.conditions.push(available);
    let Some(config) = config else {
        return out;
    };
    if !config.feedback_rules.is_empty() {
        let (values, errors) = match live {
            LiveObject::Found(object) => feedback(object, meta, config),
            _ => (Vec::new(), Vec::new()),
        };
        let synced = if !errors.is_empty() {
            condition(
                types::STATUS_FEEDBACK_SYNCED,
                "False",
                reasons::STATUS_FEEDBACK_SYNC_FAILED,
                &errors.join("; "),
                g,
            )
        } else if values.is_empty() {
            condition(
                types::STATUS_FEEDBACK_SYNCED,
                "False",
                reasons::NO_STATUS_FEEDBACK_SYNCED,
                "No status feedback value is synced",
                g,
            )
        } else {
            condition(
                types::STATUS_FEEDBACK_SYNCED,
                "True",
                reasons::STATUS_FEEDBACK_SYNCED,
                "",
                g,
            )
        };
        out.conditions.push(synced);
        out.feedback = Some(StatusFeedbackResult { values });
    }
    for rule in &config.condition_rules {
        let c = match (&rule.type_, live) {
            (ConditionRuleType::WellKnownConditions, LiveObject::Found(object)) => {
                let name = if rule.condition.is_empty() {
                    types::COMPLETE
                } else {
                    rule.condition.as_str()
                };
                match well_known_complete(meta, object) {
                    Some((done, message)) => condition(
                        name,
                        if done { "True" } else { "False" },
                        reasons::CONDITION_RULE_EVALUATED,
                        rule.message.as_deref().unwrap_or(&message),
                        g,
                    ),
                    None => condition(
                        name,
                        "Unknown",
                        reasons::CONDITION_RULE_INVALID,
                        &format!(
                            "cannot find the wellknown conditions for resource with gvk {}",
                            gvk(meta)
                        ),
                        g,
                    ),
                }
            }
            (ConditionRuleType::WellKnownConditions, _) => continue,
            (ConditionRuleType::Cel, LiveObject::Found(object)) => {
                let outcome = cel::evaluate_rule(
                    &rule.condition,
                    rule.cel_expressions.as_deref().unwrap_or_default(),
                    rule.message.as_deref(),
                    rule.message_expression.as_deref(),
                    object,
                );
                condition(
                    &rule.condition,
                    outcome.status,
                    outcome.reason,
                    &outcome.message,
                    g,
                )
            }
            (ConditionRuleType::Cel, _) => continue,
        };
        out.conditions.push(c);
    }
    out
}

/// Merges `new` into `existing` (lastTransitionTime kept where the status did not change;
/// stale condition-rule conditions pruned); true when anything changed.
pub fn merge_conditions(existing: &mut Vec<Condition>, new: &[Condition]) -> bool {
    let before = existing.len();
    existing.retain(|c| {
        !c.reason.starts_with(reasons::CONDITION_RULE_PREFIX)
            || new.iter().any(|n| n.type_ == c.type_)
    });
    let mut changed = existing.len() != before;
    for c in new {
        changed |= set_condition(existing, c.clone());
    }
    changed
}

fn status_of<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a str> {
    conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| c.status.as_str())
}

/// Work-level conditions (`Applied`, `Available`, and `Complete` when any manifest has a
/// `Complete` rule) from the manifests' conditions.
pub fn work_conditions(manifests: &[ManifestCondition], generation: i64) -> Vec<Condition> {
    let g = Some(generation);
    let total = manifests.len();
    let failed = manifests
        .iter()
        .filter(|m| status_of(&m.conditions, types::APPLIED) != Some("True"))
        .count();
    let applied = if failed == 0 {
        condition(
            types::APPLIED,
            "True",
            work_reasons::APPLIED_MANIFEST_WORK_COMPLETE,
            "Apply manifest work complete",
            g,
        )
    } else {
        condition(
            types::APPLIED,
            "False",
            work_reasons::APPLIED_MANIFEST_WORK_FAILED,
            &format!("Failed to apply manifest work: {failed} of {total} manifests failed"),
            g,
        )
    };
    let count = |s: &str| {
        manifests
            .iter()
            .filter(|m| status_of(&m.conditions, types::AVAILABLE).unwrap_or("Unknown") == s)
            .count()
    };
    let (not_available, unknown, available) = (count("False"), count("Unknown"), count("True"));
    let available = if not_available > 0 {
        condition(
            types::AVAILABLE,
            "False",
            work_reasons::RESOURCES_NOT_AVAILABLE,
            &format!("{not_available} of {total} resources are not available"),
            g,
        )
    } else if unknown > 0 {
        condition(
            types::AVAILABLE,
            "Unknown",
            work_reasons::RESOURCES_STATUS_UNKNOWN,
            &format!("{unknown} of {total} resources have unknown status"),
            g,
        )
    } else if available == 0 {
        condition(
            types::AVAILABLE,
            "Unknown",
            work_reasons::RESOURCES_STATUS_UNKNOWN,
            "cannot get any available resource ",
            g,
        )
    } else {
        condition(
            types::AVAILABLE,
            "True",
            work_reasons::RESOURCES_AVAILABLE,
            "All resources are available",
            g,
        )
    };
    let mut out = vec![applied, available];
    // Rule conditions: `Complete` when every manifest's is True, `Progressing` and `Degraded`
    // as soon as one manifest's is.
    for (type_, needs_all) in [
        (types::COMPLETE, true),
        (types::PROGRESSING, false),
        (types::DEGRADED, false),
    ] {
        let found: Vec<Option<&str>> = manifests
            .iter()
            .map(|m| status_of(&m.conditions, type_))
            .filter(Option::is_some)
            .collect();
        if found.is_empty() {
            continue;
        }
        let holds = if needs_all {
            found.iter().all(|s| *s == Some("True"))
        } else {
            found.contains(&Some("True"))
        };
        out.push(condition(
            type_,
            if holds { "True" } else { "False" },
            work_reasons::CONDITION_RULES_AGGREGATED,
            &format!("Aggregated from {} manifest conditions", found.len()),
            g,
        ));
    }
    out
}

#[cfg(test)]
mod tests;
