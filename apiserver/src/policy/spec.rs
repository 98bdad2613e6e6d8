//! `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicy and
//! ValidatingAdmissionPolicyBinding: kube's v1 defaults and the parsed form the admission run
//! uses ([`Policy`], [`Binding`]). Pure functions.

use serde_json::{Map, Value, json};

use crate::admission_cel::{CompiledExpression, compile};
pub(crate) use crate::meta::{str_of, strings};
use crate::webhook::{FailurePolicy, Rule};
use ocm_apiserver_selector::LabelSelector;

/// Sets `key` in `map` when it is absent or `null`.
fn default_key(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_owned(), value);
    }
}

/// kube's v1 defaults of a `matchResources` / `matchConstraints` object: selectors `{}`,
/// matchPolicy `Equivalent`, rule scope `*`.
fn default_match_resources(value: &mut Value) {
    let Some(map) = value.as_object_mut() else {
        return;
    };
    default_key(map, "namespaceSelector", json!({}));
    default_key(map, "objectSelector", json!({}));
    default_key(map, "matchPolicy", json!("Equivalent"));
    for key in ["resourceRules", "excludeResourceRules"] {
        for rule in map
            .get_mut(key)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            default_key(rule, "scope", json!("*"));
        }
    }
}

/// Applies kube's v1 defaults to a ValidatingAdmissionPolicy: `failurePolicy: Fail` and the
/// `matchConstraints` defaults.
pub fn apply_policy_defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    default_key(spec, "failurePolicy", json!("Fail"));
    if let Some(constraints) = spec.get_mut("matchConstraints") {
        default_match_resources(constraints);
    }
}

/// Applies kube's v1 defaults to a ValidatingAdmissionPolicyBinding: the `matchResources`
/// defaults and `paramRef.parameterNotFoundAction: Deny`.
pub fn apply_binding_defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(resources) = spec.get_mut("matchResources") {
        default_match_resources(resources);
    }
    if let Some(param_ref) = spec.get_mut("paramRef").and_then(Value::as_object_mut) {
        default_key(param_ref, "parameterNotFoundAction", json!("Deny"));
    }
}

/// A `NamedRuleWithOperations`: a rule, optionally limited to some object names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedRule {
    /// Operations, groups, versions, resources and scope.
    pub rule: Rule,
    /// `resourceNames`: when not empty, only requests for these names match.
    pub resource_names: Vec<String>,
}

/// `matchConstraints` of a policy or `matchResources` of a binding.
#[derive(Clone, Debug)]
pub struct MatchResources {
    /// `resourceRules` (empty: every request).
    pub rules: Vec<NamedRule>,
    /// `excludeResourceRules`.
    pub exclude: Vec<NamedRule>,
    /// `namespaceSelector`.
    pub namespace_selector: LabelSelector,
    /// `objectSelector`.
    pub object_selector: LabelSelector,
    /// `matchPolicy: Equivalent` (the default): rules also cover the request through the
    /// other groups and versions serving the same objects.
    pub match_equivalent: bool,
}

fn named_rules(v: Option<&Value>) -> Vec<NamedRule> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| NamedRule {
            rule: Rule::from_value(r),
            resource_names: strings(r.get("resourceNames")),
        })
        .collect()
}

impl MatchResources {
    /// Reads a defaulted `matchResources` object; a selector that does not parse selects
    /// nothing.
    pub fn from_value(v: &Value) -> MatchResources {
        let selector = |key: &str| {
            LabelSelector::from_structured(v.get(key).unwrap_or(&json!({})))
                .unwrap_or_else(|_| LabelSelector::nothing())
        };
        MatchResources {
            rules: named_rules(v.get("resourceRules")),
            exclude: named_rules(v.get("excludeResourceRules")),
            namespace_selector: selector("namespaceSelector"),
            object_selector: selector("objectSelector"),
            match_equivalent: v.get("matchPolicy").and_then(Value::as_str) != Some("Exact"),
        }
    }
}

/// `paramKind` of a policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamKind {
    /// `apiVersion` (`group/version`, or `version` for the core group).
    pub api_version: String,
    /// `kind`.
    pub kind: String,
}

impl ParamKind {
    /// The `spec.paramKind` of a policy object, if set.
    pub fn of_policy(obj: &Value) -> Option<ParamKind> {
        obj.pointer("/spec/paramKind")
            .filter(|p| p.is_object())
            .map(|p| ParamKind {
                api_version: str_of(p, "apiVersion").to_owned(),
                kind: str_of(p, "kind").to_owned(),
            })
    }

    /// The API group of `api_version`.
    pub fn group(&self) -> &str {
        self.api_version
            .split_once('/')
            .map(|(g, _)| g)
            .unwrap_or("")
    }

    /// The version of `api_version`.
    pub fn version(&self) -> &str {
        self.api_version
            .split_once('/')
            .map(|(_, v)| v)
            .unwrap_or(&self.api_version)
    }
}

/// One `validations` entry, compiled.
#[derive(Debug)]
pub struct Validation {
    /// The expression (as written).
    pub expression: String,
    /// Its program (`None` when it does not compile: an evaluation error).
    pub program: CompiledExpression,
    /// `message`.
    pub message: String,
    /// `messageExpression`, compiled, if given.
    pub message_expression: Option<CompiledExpression>,
    /// `reason` (empty: `Invalid`).
    pub reason: String,
}

/// A named expression (`matchConditions` entry or `variables` entry), compiled.
#[derive(Debug)]
pub struct Named {
    /// Its name.
    pub name: String,
    /// The expression (as written).
    pub expression: String,
    /// Its program.
    pub program: CompiledExpression,
}

/// A stored ValidatingAdmissionPolicy, defaulted and compiled.
#[derive(Debug)]
pub struct Policy {
    /// `metadata.name`.
    pub name: String,
    /// `failurePolicy`.
    pub failure_policy: FailurePolicy,
    /// `paramKind`.
    pub param_kind: Option<ParamKind>,
    /// `matchConstraints` (`None` never matches).
    pub match_constraints: Option<MatchResources>,
    /// `matchConditions`.
    pub match_conditions: Vec<Named>,
    /// `variables`, in order.
    pub variables: Vec<Named>,
    /// `validations`.
    pub validations: Vec<Validation>,
    /// `auditAnnotations`, as (key, `valueExpression`).
    pub audit_annotations: Vec<Named>,
}

fn named(v: Option<&Value>) -> Vec<Named> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let expression = str_of(c, "expression").to_owned();
            Named {
                name: str_of(c, "name").to_owned(),
                program: compile(&expression),
                expression,
            }
        })
        .collect()
}

impl Policy {
    /// Parses and compiles a stored policy.
    pub fn parse(obj: &Value) -> Policy {
        let mut obj = obj.clone();
        apply_policy_defaults(&mut obj);
        let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
        let validations = spec
            .get("validations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|v| {
                let expression = str_of(v, "expression").to_owned();
                let message_expression = Some(str_of(v, "messageExpression").trim())
                    .filter(|m| !m.is_empty())
                    .map(compile);
                Validation {
                    program: compile(&expression),
                    expression,
                    message: str_of(v, "message").trim().to_owned(),
                    message_expression,
                    reason: str_of(v, "reason").to_owned(),
                }
            })
            .collect();
        Policy {
            name: crate::meta::meta_str(&obj, "name").to_owned(),
            failure_policy: if str_of(&spec, "failurePolicy") == "Ignore" {
                FailurePolicy::Ignore
            } else {
                FailurePolicy::Fail
            },
            param_kind: ParamKind::of_policy(&obj),
            match_constraints: spec
                .get("matchConstraints")
                .filter(|m| m.is_object())
                .map(MatchResources::from_value),
            match_conditions: named(spec.get("matchConditions")),
            variables: named(spec.get("variables")),
            validations,
            audit_annotations: spec
                .get("auditAnnotations")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|a| {
                    let expression = str_of(a, "valueExpression").trim().to_owned();
                    Named {
                        name: str_of(a, "key").to_owned(),
                        program: compile(&expression),
                        expression,
                    }
                })
                .collect(),
        }
    }
}

/// `paramRef` of a binding.
#[derive(Clone, Debug)]
pub struct ParamRef {
    /// `name` (empty when a selector is used).
    pub name: String,
    /// `namespace` (empty: the request's namespace for namespaced params).
    pub namespace: String,
    /// `selector`, when given.
    pub selector: Option<LabelSelector>,
    /// `parameterNotFoundAction: Deny`.
    pub deny_when_missing: bool,
}

/// `validationActions` of a binding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Actions {
    /// `Deny`: a failed validation refuses the request.
    pub deny: bool,
    /// `Warn`: a failed validation becomes a `Warning` header.
    pub warn: bool,
    /// `Audit`: recorded in the audit log (this server has none).
    pub audit: bool,
}

/// A stored ValidatingAdmissionPolicyBinding, defaulted.
#[derive(Clone, Debug)]
pub struct Binding {
    /// `metadata.name`.
    pub name: String,
    /// `policyName`.
    pub policy_name: String,
    /// `paramRef`.
    pub param_ref: Option<ParamRef>,
    /// `matchResources` (`None`: everything the policy matches).
    pub match_resources: Option<MatchResources>,
    /// `validationActions`.
    pub actions: Actions,
}

impl Binding {
    /// Parses a stored binding.
    pub fn parse(obj: &Value) -> Binding {
        let mut obj = obj.clone();
        apply_binding_defaults(&mut obj);
        let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
        let actions = strings(spec.get("validationActions"));
        let has = |a: &str| actions.iter().any(|x| x == a);
        Binding {
            name: crate::meta::meta_str(&obj, "name").to_owned(),
            policy_name: str_of(&spec, "policyName").to_owned(),
            param_ref: spec
                .get("paramRef")
                .filter(|p| p.is_object())
                .map(|p| ParamRef {
                    name: str_of(p, "name").to_owned(),
                    namespace: str_of(p, "namespace").to_owned(),
                    selector: p.get("selector").filter(|s| !s.is_null()).map(|s| {
                        LabelSelector::from_structured(s)
                            .unwrap_or_else(|_| LabelSelector::nothing())
                    }),
                    deny_when_missing: str_of(p, "parameterNotFoundAction") != "Allow",
                }),
            match_resources: spec
                .get("matchResources")
                .filter(|m| m.is_object())
                .map(MatchResources::from_value),
            actions: Actions {
                deny: has("Deny"),
                warn: has("Warn"),
                audit: has("Audit"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_kube_v1_defaults() {
        let mut p =
            json!({"spec": {"matchConstraints": {"resourceRules": [{"operations": ["CREATE"]}]}}});
        apply_policy_defaults(&mut p);
        assert_eq!(p["spec"]["failurePolicy"], "Fail");
        let mc = &p["spec"]["matchConstraints"];
        assert_eq!(mc["matchPolicy"], "Equivalent");
        assert_eq!(mc["namespaceSelector"], json!({}));
        assert_eq!(mc["objectSelector"], json!({}));
        assert_eq!(mc["resourceRules"][0]["scope"], "*");
        let mut b = json!({"spec": {"paramRef": {"name": "x"}, "matchResources": {}}});
        apply_binding_defaults(&mut b);
        assert_eq!(b["spec"]["paramRef"]["parameterNotFoundAction"], "Deny");
        assert_eq!(b["spec"]["matchResources"]["matchPolicy"], "Equivalent");
        let mut bare = json!({"spec": {"policyName": "p"}});
        apply_binding_defaults(&mut bare);
        assert_eq!(bare, json!({"spec": {"policyName": "p"}}));
    }

    #[test]
    fn parse_reads_policy_and_binding() {
        let p = Policy::parse(&json!({
            "metadata": {"name": "p"},
            "spec": {
                "failurePolicy": "Ignore",
                "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "resourceNames": ["a"]}]},
                "validations": [{"expression": "true", "message": " no ", "reason": "Forbidden"}],
            }
        }));
        assert_eq!(p.failure_policy, FailurePolicy::Ignore);
        let pk = p.param_kind.as_ref().map(|k| (k.group(), k.version()));
        assert_eq!(pk, Some(("", "v1")));
        let mc = p
            .match_constraints
            .as_ref()
            .map(|m| m.rules[0].resource_names.clone());
        assert_eq!(mc, Some(vec!["a".to_owned()]));
        assert_eq!(p.validations[0].message, "no");
        let b = Binding::parse(&json!({
            "metadata": {"name": "b"},
            "spec": {"policyName": "p", "validationActions": ["Warn", "Audit"], "paramRef": {"name": "x", "parameterNotFoundAction": "Allow"}}
        }));
        assert_eq!(
            b.actions,
            Actions {
                deny: false,
                warn: true,
                audit: true
            }
        );
        assert!(
            b.param_ref
                .is_some_and(|r| !r.deny_when_missing && r.name == "x")
        );
    }
}
