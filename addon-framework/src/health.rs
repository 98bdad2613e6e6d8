//! An addon's `Available` condition from its works, for every prober but Lease (which the
//! registration agent on the cluster judges) — a pure function of the works' status, with
//! upstream's reasons.

use ocm_api::addon::names::conditions::available::{
    NO_PROBE_RESULT, PROBE_AVAILABLE, PROBE_UNAVAILABLE, WORK_APPLIED, WORK_NOT_APPLIED,
    WORK_NOT_FOUND,
};
use serde_json::{Value, json};

use crate::agent::HealthProber;
use crate::works::identifier;

/// A condition's status, reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judgement {
    /// `True`, `False` or `Unknown`.
    pub status: &'static str,
    /// Upstream's reason.
    pub reason: &'static str,
    /// In words.
    pub message: String,
}

fn judgement(status: &'static str, reason: &'static str, message: impl Into<String>) -> Judgement {
    Judgement {
        status,
        reason,
        message: message.into(),
    }
}

/// The `manifestConfigs` entries that make the work agent report what `prober` needs for the
/// objects among `manifests` (none for Lease and None).
pub fn probe_configs(prober: &HealthProber, manifests: &[Value]) -> Vec<Value> {
    let kinds: &[&str] = match prober {
        HealthProber::Work { probes, .. } => return probes.clone(),
        HealthProber::DeploymentAvailability => &["Deployment"],
        HealthProber::WorkloadAvailability => &["Deployment", "DaemonSet"],
        HealthProber::Lease | HealthProber::None => return Vec::new(),
    };
    manifests
        .iter()
        .filter(|m| {
            m.get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| kinds.contains(&k))
        })
        .map(|m| {
            json!({
                "resourceIdentifier": identifier(m),
                "feedbackRules": [{"type": "WellKnownStatus"}],
            })
        })
        .collect()
}

/// Whether two `resourceIdentifier`s name the same object (an absent field is empty).
fn same_identifier(a: &Value, b: &Value) -> bool {
    let field = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_owned();
    ["group", "resource", "namespace", "name"]
        .iter()
        .all(|f| field(a, f) == field(b, f))
}

/// The `manifestConfigs` of an addon's works: the prober's (`probes`, from [`probe_configs`])
/// with the addon's own (`user`) merged in, as upstream's framework merges them — one entry
/// per object: the addon's feedback rules added to the prober's (a `WellKnownStatus` rule
/// once, JSON paths whose name is not there yet), its update strategy taking over; entries
/// for other objects appended.
pub fn merge_manifest_configs(probes: Vec<Value>, user: &[Value]) -> Vec<Value> {
    let mut out = probes;
    for config in user {
        let id = config.get("resourceIdentifier").unwrap_or(&Value::Null);
        let Some(existing) = out
            .iter_mut()
            .find(|c| same_identifier(c.get("resourceIdentifier").unwrap_or(&Value::Null), id))
        else {
            out.push(config.clone());
            continue;
        };
        for rule in config
            .get("feedbackRules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            merge_feedback_rule(existing, rule);
        }
        if let Some(strategy) = config.get("updateStrategy").filter(|s| !s.is_null()) {
            existing["updateStrategy"] = strategy.clone();
        }
    }
    out
}

/// Adds `rule` to `config`'s feedback rules unless they already say it.
fn merge_feedback_rule(config: &mut Value, rule: &Value) {
    if !config.get("feedbackRules").is_some_and(Value::is_array) {
        config["feedbackRules"] = json!([]);
    }
    let Some(rules) = config["feedbackRules"].as_array_mut() else {
        return;
    };
    match rule.get("type").and_then(Value::as_str) {
        Some("WellKnownStatus") => {
            if !rules.iter().any(|r| r["type"] == "WellKnownStatus") {
                rules.push(rule.clone());
            }
        }
        Some("JSONPaths") => {
            let known: Vec<Value> = rules
                .iter()
                .filter(|r| r["type"] == "JSONPaths")
                .flat_map(|r| r["jsonPaths"].as_array().cloned().unwrap_or_default())
                .map(|p| p["name"].clone())
                .collect();
            let new: Vec<Value> = rule["jsonPaths"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| !known.contains(&p["name"]))
                .cloned()
                .collect();
            if !new.is_empty() {
                rules.push(json!({"type": "JSONPaths", "jsonPaths": new}));
            }
        }
        _ => rules.push(rule.clone()),
    }
}

fn condition_true(work: &Value, type_: &str) -> bool {
    work.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(type_)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// Feedback values (name → value) the works report for the object `id`.
fn feedback<'a>(works: &'a [Value], id: &Value) -> Option<Vec<(&'a str, &'a Value)>> {
    let field = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_owned();
    works.iter().find_map(|work| {
        work.pointer("/status/resourceStatus/manifests")
            .and_then(Value::as_array)?
            .iter()
            .find(|m| {
                let meta = m.get("resourceMeta").unwrap_or(&Value::Null);
                ["group", "resource", "namespace", "name"]
                    .iter()
                    .all(|f| field(meta, f) == field(id, f))
            })
            .and_then(|m| m.pointer("/statusFeedback/values"))
            .and_then(Value::as_array)
            .filter(|values| !values.is_empty())
            .map(|values| {
                values
                    .iter()
                    .map(|v| {
                        (
                            v.get("name").and_then(Value::as_str).unwrap_or(""),
                            v.get("fieldValue").unwrap_or(&Value::Null),
                        )
                    })
                    .collect()
            })
    })
}

/// Judges availability from `works` (the addon's deploy works with their status, `None` when
/// they are not there yet). Lease probing is not judged here (returns `None`).
pub fn judge(prober: &HealthProber, works: Option<&[Value]>) -> Option<Judgement> {
    if *prober == HealthProber::Lease {
        return None;
    }
    let Some(works) = works.filter(|w| !w.is_empty()) else {
        return Some(judgement(
            "Unknown",
            WORK_NOT_FOUND,
            "Work for addon is not found",
        ));
    };
    if !works.iter().all(|w| condition_true(w, "Applied")) {
        return Some(judgement(
            "Unknown",
            WORK_NOT_APPLIED,
            "Work is not applied yet",
        ));
    }
    let manifests: Vec<Value> = works
        .iter()
        .filter_map(|w| {
            w.pointer("/spec/workload/manifests")
                .and_then(Value::as_array)
        })
        .flatten()
        .cloned()
        .collect();
    let probes = probe_configs(prober, &manifests);
    if probes.is_empty() {
        return Some(judgement(
            "True",
            WORK_APPLIED,
            "Addon manifests are applied successfully",
        ));
    }
    for probe in &probes {
        let id = probe.get("resourceIdentifier").unwrap_or(&Value::Null);
        let describe = || {
            format!(
                "{} {}/{}",
                id.get("resource").and_then(Value::as_str).unwrap_or(""),
                id.get("namespace").and_then(Value::as_str).unwrap_or(""),
                id.get("name").and_then(Value::as_str).unwrap_or("")
            )
        };
        let Some(values) = feedback(works, id) else {
            return Some(judgement(
                "Unknown",
                NO_PROBE_RESULT,
                format!("Probe results are not returned for {}", describe()),
            ));
        };
        if let HealthProber::Work {
            check: Some(check), ..
        } = prober
        {
            let owned: Vec<(String, Value)> = values
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).clone()))
                .collect();
            if let Err(err) = (check.0)(id, &owned) {
                return Some(judgement(
                    "False",
                    PROBE_UNAVAILABLE,
                    format!("Probe addon unavailable with err: {err}"),
                ));
            }
        }
        if matches!(
            prober,
            HealthProber::DeploymentAvailability | HealthProber::WorkloadAvailability
        ) {
            let number = |name: &str| {
                values
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(name))
                    .and_then(|(_, v)| v.get("integer"))
                    .and_then(Value::as_i64)
            };
            let available = number("availableReplicas")
                .or_else(|| number("numberAvailable"))
                .or_else(|| number("readyReplicas"))
                .unwrap_or(0);
            if available < 1 {
                return Some(judgement(
                    "False",
                    PROBE_UNAVAILABLE,
                    format!(
                        "Probe addon unavailable with err: no available replicas of {}",
                        describe()
                    ),
                ));
            }
        }
    }
    Some(judgement("True", PROBE_AVAILABLE, "Addon is available"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment_work(applied: bool, available: Option<i64>) -> Value {
        let mut work = json!({
            "spec": {"workload": {"manifests": [{"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "agent", "namespace": "ns"}}]}},
            "status": {"conditions": [{"type": "Applied", "status": if applied {"True"} else {"False"}}]},
        });
        if let Some(n) = available {
            work["status"]["resourceStatus"] = json!({"manifests": [{
                "resourceMeta": {"group": "apps", "resource": "deployments", "namespace": "ns", "name": "agent"},
                "statusFeedback": {"values": [
                    {"name": "AvailableReplicas", "fieldValue": {"type": "Integer", "integer": n}}]}}]});
        }
        work
    }

    #[test]
    fn deployment_availability_follows_the_work() {
        let p = HealthProber::DeploymentAvailability;
        assert_eq!(judge(&p, None).map(|j| j.reason), Some(WORK_NOT_FOUND));
        let w = [deployment_work(false, None)];
        assert_eq!(
            judge(&p, Some(&w)).map(|j| j.reason),
            Some(WORK_NOT_APPLIED)
        );
        let w = [deployment_work(true, None)];
        assert_eq!(judge(&p, Some(&w)).map(|j| j.reason), Some(NO_PROBE_RESULT));
        let w = [deployment_work(true, Some(0))];
        let j = judge(&p, Some(&w)).map(|j| (j.status, j.reason));
        assert_eq!(j, Some(("False", PROBE_UNAVAILABLE)));
        let w = [deployment_work(true, Some(1))];
        let j = judge(&p, Some(&w)).map(|j| (j.status, j.reason));
        assert_eq!(j, Some(("True", PROBE_AVAILABLE)));
        assert_eq!(judge(&HealthProber::Lease, Some(&w)), None);
        let j = judge(&HealthProber::None, Some(&w)).map(|j| j.reason);
        assert_eq!(j, Some(WORK_APPLIED));
    }

    #[test]
    fn a_work_probe_check_judges_the_feedback() {
        let probes = vec![json!({
            "resourceIdentifier": {"group": "apps", "resource": "deployments",
                                   "namespace": "ns", "name": "agent"},
            "feedbackRules": [{"type": "WellKnownStatus"}]})];
        let at_least = |wanted: i64| HealthProber::Work {
            probes: probes.clone(),
            check: Some(crate::agent::WorkHealthCheck::new(move |_, values| {
                let available = values
                    .iter()
                    .find(|(n, _)| n == "AvailableReplicas")
                    .and_then(|(_, v)| v["integer"].as_i64())
                    .unwrap_or(0);
                if available >= wanted {
                    Ok(())
                } else {
                    Err(format!("{available} of {wanted} replicas available"))
                }
            })),
        };
        let w = [deployment_work(true, Some(1))];
        let j = judge(&at_least(1), Some(&w)).map(|j| (j.status, j.reason));
        assert_eq!(j, Some(("True", PROBE_AVAILABLE)));
        let j = judge(&at_least(2), Some(&w)).unwrap();
        assert_eq!((j.status, j.reason), ("False", PROBE_UNAVAILABLE));
        assert!(
            j.message.contains("1 of 2 replicas available"),
            "{}",
            j.message
        );
        // Without a check, reported feedback is enough.
        let unchecked = HealthProber::Work {
            probes,
            check: None,
        };
        assert_eq!(judge(&unchecked, Some(&w)).map(|j| j.status), Some("True"));
    }

    #[test]
    fn the_addons_manifest_configs_merge_into_the_probers() {
        let id =
            json!({"group": "apps", "resource": "deployments", "namespace": "ns", "name": "a"});
        let probes =
            vec![json!({"resourceIdentifier": id, "feedbackRules": [{"type": "WellKnownStatus"}]})];
        let user = vec![
            json!({"resourceIdentifier": id,
                   "updateStrategy": {"type": "ServerSideApply"},
                   "feedbackRules": [{"type": "WellKnownStatus"},
                                     {"type": "JSONPaths", "jsonPaths": [{"name": "x", "path": ".status.x"}]}]}),
            json!({"resourceIdentifier": {"resource": "configmaps", "namespace": "ns", "name": "c"},
                   "updateStrategy": {"type": "Update"}}),
        ];
        let merged = merge_manifest_configs(probes, &user);
        assert_eq!(
            merged,
            vec![
                json!({"resourceIdentifier": id,
                       "feedbackRules": [{"type": "WellKnownStatus"},
                                         {"type": "JSONPaths", "jsonPaths": [{"name": "x", "path": ".status.x"}]}],
                       "updateStrategy": {"type": "ServerSideApply"}}),
                user[1].clone(),
            ]
        );
        // A path already there is not added twice.
        let again = merge_manifest_configs(merged.clone(), &user[..1]);
        assert_eq!(again, merged);
    }
}
