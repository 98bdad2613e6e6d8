//! PriorityClasses (`scheduling.k8s.io/v1`): kube's defaults, validation, and the two system
//! classes every cluster has.

use serde_json::{Value, json};

use crate::validation::Cause;

/// The prefix of the names kube keeps for its own classes.
const SYSTEM_PREFIX: &str = "system-";
/// The highest value a user's PriorityClass may have.
const HIGHEST_USER_PRIORITY: i64 = 1_000_000_000;
const PREEMPTION_POLICIES: [&str; 2] = ["Never", "PreemptLowerPriority"];

/// kube's system PriorityClasses: name, value, description.
const SYSTEM_CLASSES: [(&str, i64, &str); 2] = [
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// The system PriorityClasses kube-apiserver creates in every cluster
/// (`scheduling/bootstrap-system-priority-classes`).
pub(crate) fn system_priority_classes() -> Vec<Value> {
    SYSTEM_CLASSES
        .iter()
        .map(|(name, value, description)| {
            json!({
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
                "description": description,
                "preemptionPolicy": "PreemptLowerPriority",
            })
        })
        .collect()
}

/// The names of kube's system PriorityClasses.
pub(crate) fn system_priority_class_names() -> impl Iterator<Item = &'static str> {
    SYSTEM_CLASSES.iter().map(|(name, _, _)| *name)
}

/// `SetDefaults_PriorityClass`: `preemptionPolicy: PreemptLowerPriority`.
pub(super) fn default_priority_class(obj: &mut Value) {
    super::default_field(obj, "preemptionPolicy", json!("PreemptLowerPriority"));
}

/// `ValidatePriorityClass` (and its update rules).
pub(super) fn validate_priority_class(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let name = crate::meta::meta_str(obj, "name");
    let value = obj.get("value").and_then(Value::as_i64).unwrap_or(0);
    let global_default = obj
        .get("globalDefault")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if name.starts_with(SYSTEM_PREFIX) {
        let known = SYSTEM_CLASSES.iter().find(|(n, _, _)| *n == name);
        let problem = match known {
            None => Some(format!("{name} is not a known system priority class")),
            Some((_, expected, _)) if value != *expected => {
                Some(format!("value of {name} PriorityClass must be {expected}"))
            }
            Some(_) if global_default => Some(format!(
                "globalDefault of {name} PriorityClass must be false"
            )),
            Some(_) => None,
        };
        if let Some(problem) = problem {
            causes.push(Cause::forbidden(
                "metadata.name",
                &format!(
                    "priority class names with '{SYSTEM_PREFIX}' prefix are reserved for system use only. error: {problem}"
                ),
            ));
        }
    } else if value > HIGHEST_USER_PRIORITY {
        causes.push(Cause::forbidden(
            "value",
            &format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"),
        ));
    }
    let policy = super::str_at(obj, "/preemptionPolicy");
    if !policy.is_empty() && !PREEMPTION_POLICIES.contains(&policy) {
        causes.push(Cause::not_supported(
            "preemptionPolicy",
            policy,
            &PREEMPTION_POLICIES,
        ));
    }
    if let Some(old) = old {
        if old.get("value") != obj.get("value") {
            causes.push(Cause::forbidden(
                "value",
                "may not be changed in an update.",
            ));
        }
        if old.get("preemptionPolicy") != obj.get("preemptionPolicy") {
            causes.push(Cause::invalid(
                "preemptionPolicy",
                policy,
                "field is immutable",
            ));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(obj: Value, old: Option<Value>) -> Vec<String> {
        validate_priority_class(&obj, old.as_ref())
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn system_names_and_values() {
        for class in system_priority_classes() {
            assert!(texts(class, None).is_empty());
        }
        assert_eq!(
            texts(
                json!({"metadata": {"name": "system-mine"}, "value": 1}),
                None
            ),
            [
                "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"
            ]
        );
        assert_eq!(
            texts(
                json!({"metadata": {"name": "huge"}, "value": 2_000_000_000i64}),
                None
            ),
            ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]
        );
        let old = json!({"metadata": {"name": "a"}, "value": 1, "preemptionPolicy": "Never"});
        let new = json!({"metadata": {"name": "a"}, "value": 2, "preemptionPolicy": "Never"});
        assert_eq!(
            texts(new, Some(old)),
            ["value: Forbidden: may not be changed in an update."]
        );
    }
}
