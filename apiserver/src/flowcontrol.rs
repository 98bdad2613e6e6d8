//! API Priority and Fairness configuration as kube-apiserver 1.35 keeps it: the bootstrap
//! FlowSchemas and PriorityLevelConfigurations (mandatory and suggested), kube's v1 defaults
//! for both kinds, and the spec comparison the bootstrap maintenance uses.
//!
//! The objects are pure data (`flowcontrol.apiserver.k8s.io/v1` JSON); the controller that
//! keeps them in every logical cluster is `controllers::flowcontrol`, and their validation is
//! in `crate::validation`.

use serde_json::{Map, Value, json};

/// The API group of FlowSchemas and PriorityLevelConfigurations.
pub const GROUP: &str = "flowcontrol.apiserver.k8s.io";
/// The annotation that says whether the server keeps a bootstrap object's spec up to date.
pub const AUTO_UPDATE_ANNOTATION: &str = "apf.kubernetes.io/autoupdate-spec";
/// The condition type a FlowSchema reports about its priority level reference.
pub const DANGLING: &str = "Dangling";

/// Which of the two kinds an object is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `FlowSchema`.
    FlowSchema,
    /// `PriorityLevelConfiguration`.
    PriorityLevel,
}

impl Kind {
    /// The plural resource name.
    pub fn plural(self) -> &'static str {
        match self {
            Kind::FlowSchema => "flowschemas",
            Kind::PriorityLevel => "prioritylevelconfigurations",
        }
    }

    /// The kind name.
    pub fn kind(self) -> &'static str {
        match self {
            Kind::FlowSchema => "FlowSchema",
            Kind::PriorityLevel => "PriorityLevelConfiguration",
        }
    }

    /// The storage resource (`group/plural`).
    pub fn storage_resource(self) -> String {
        format!("{GROUP}/{}", self.plural())
    }
}

/// Whether a bootstrap object is mandatory (always kept as kube defines it) or suggested (kept
/// while its autoupdate annotation allows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// `exempt` and `catch-all`.
    Mandatory,
    /// The rest of kube's initial configuration.
    Suggested,
}

/// One bootstrap object: its kind, class and full v1 JSON.
#[derive(Clone, Debug)]
pub struct Bootstrap {
    /// FlowSchema or PriorityLevelConfiguration.
    pub kind: Kind,
    /// Mandatory or suggested.
    pub class: Class,
    /// The object as the server creates it.
    pub object: Value,
}

impl Bootstrap {
    /// The object's name.
    pub fn name(&self) -> &str {
        self.object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The object's spec.
    pub fn spec(&self) -> &Value {
        self.object.get("spec").unwrap_or(&Value::Null)
    }
}

fn object(kind: Kind, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": kind.kind(),
        "metadata": {"name": name, "annotations": {AUTO_UPDATE_ANNOTATION: "true"}},
        "spec": spec,
    })
}

fn limited(shares: i64, lendable: i64, queuing: Option<(i64, i64, i64)>) -> Value {
    let response = match queuing {
        Some((queues, hand_size, limit)) => json!({"type": "Queue", "queuing": {
            "queues": queues, "handSize": hand_size, "queueLengthLimit": limit}}),
        None => json!({"type": "Reject"}),
    };
    json!({"type": "Limited", "limited": {
        "nominalConcurrencyShares": shares,
        "lendablePercent": lendable,
        "limitResponse": response,
    }})
}

fn groups(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| json!({"kind": "Group", "group": {"name": n}}))
        .collect()
}

fn users(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| json!({"kind": "User", "user": {"name": n}}))
        .collect()
}

fn kube_system_service_accounts() -> Vec<Value> {
    vec![json!({"kind": "ServiceAccount",
                "serviceAccount": {"namespace": "kube-system", "name": "*"}})]
}

fn resource_rule(verbs: &[&str], groups: &[&str], resources: &[&str], cluster: bool) -> Value {
    let mut rule = json!({"verbs": verbs, "apiGroups": groups, "resources": resources});
    if cluster {
        rule["clusterScope"] = json!(true);
    }
    rule["namespaces"] = json!(["*"]);
    rule
}

fn everything() -> (Value, Value) {
    (
        json!([resource_rule(&["*"], &["*"], &["*"], true)]),
        json!([{"verbs": ["*"], "nonResourceURLs": ["*"]}]),
    )
}

fn flow_schema(
    name: &str,
    level: &str,
    precedence: i64,
    distinguisher: Option<&str>,
    rules: Vec<Value>,
) -> Value {
    let mut spec = json!({
        "priorityLevelConfiguration": {"name": level},
        "matchingPrecedence": precedence,
    });
    if let Some(d) = distinguisher {
        spec["distinguisherMethod"] = json!({"type": d});
    }
    spec["rules"] = Value::Array(rules);
    object(Kind::FlowSchema, name, spec)
}

/// A rule matching `subjects` on every resource and non-resource request.
fn all_for(subjects: Vec<Value>) -> Value {
    let (resource_rules, non_resource_rules) = everything();
    json!({"subjects": subjects, "resourceRules": resource_rules,
           "nonResourceRules": non_resource_rules})
}

/// kube-apiserver 1.35's bootstrap configuration, mandatory objects first, priority levels
/// before the FlowSchemas that reference them. Built once per process: every logical cluster's
/// bootstrap pass and every FlowSchema or priority level write (the mandatory specs are checked
/// against it) reads it.
pub fn bootstrap() -> &'static [Bootstrap] {
    static BOOTSTRAP: std::sync::LazyLock<Vec<Bootstrap>> =
        std::sync::LazyLock::new(build_bootstrap);
    &BOOTSTRAP
}

fn build_bootstrap() -> Vec<Bootstrap> {
    use Class::{Mandatory, Suggested};
    use Kind::{FlowSchema as Fs, PriorityLevel as Pl};
    let authenticated = ["system:unauthenticated", "system:authenticated"];
    let items: Vec<(Kind, Class, Value)> = vec![
        (
            Pl,
            Mandatory,
            object(
                Pl,
                "exempt",
                json!({"type": "Exempt",
                       "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}),
            ),
        ),
        (Pl, Mandatory, object(Pl, "catch-all", limited(5, 0, None))),
        (
            Fs,
            Mandatory,
            flow_schema(
                "exempt",
                "exempt",
                1,
                None,
                vec![all_for(groups(&["system:masters"]))],
            ),
        ),
        (
            Fs,
            Mandatory,
            flow_schema(
                "catch-all",
                "catch-all",
                10000,
                Some("ByUser"),
                vec![all_for(groups(&authenticated))],
            ),
        ),
        (
            Pl,
            Suggested,
            object(Pl, "system", limited(30, 33, Some((64, 6, 50)))),
        ),
        (
            Pl,
            Suggested,
            object(Pl, "node-high", limited(40, 25, Some((64, 6, 50)))),
        ),
        (
            Pl,
            Suggested,
            object(Pl, "leader-election", limited(10, 0, Some((16, 4, 50)))),
        ),
        (
            Pl,
            Suggested,
            object(Pl, "workload-high", limited(40, 50, Some((128, 6, 50)))),
        ),
        (
            Pl,
            Suggested,
            object(Pl, "workload-low", limited(100, 90, Some((128, 6, 50)))),
        ),
        (
            Pl,
            Suggested,
            object(Pl, "global-default", limited(20, 50, Some((128, 6, 50)))),
        ),
        (
            Fs,
            Suggested,
            flow_schema(
                "system-nodes",
                "system",
                500,
                Some("ByUser"),
                vec![all_for(groups(&["system:nodes"]))],
            ),
        ),
        (
            Fs,
            Suggested,
            flow_schema(
                "system-node-high",
                "node-high",
                400,
                Some("ByUser"),
                vec![json!({
                    "subjects": groups(&["system:nodes"]),
                    "resourceRules": [
                        resource_rule(&["*"], &[""], &["nodes", "nodes/status"], true),
                        resource_rule(&["*"], &["coordination.k8s.io"], &["leases"], false),
                    ],
                })],
            ),
        ),
        (
            Fs,
            Suggested,
            flow_schema(
                "probes",
                "exempt",
                2,
                None,
                vec![json!({
                    "subjects": groups(&authenticated),
                    "nonResourceRules": [{"verbs": ["get"],
                                          "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}],
                })],
            ),
        ),
        (
            Fs,
            Suggested,
            flow_schema(
                "system-leader-election",
                "leader-election",
                100,
                Some("ByUser"),
                vec![json!({
                    "subjects": users(&["system:kube-controller-manager", "system:kube-scheduler"])
                        .into_iter()
                        .chain(kube_system_service_accounts())
                        .collect::<Vec<_>>(),
                    "resourceRules": [resource_rule(
                        &["get", "create", "update"], &["coordination.k8s.io"], &["leases"], false)],
                })],
            ),
        ),
        (
            Fs,
            Suggested,
            flow_schema(
                "kube-controller-manager",
                "workload-high",
                800,
                Some("ByNamespace"),
                vec![all_for(users(&["system:kube-controller-manager"]))],
            ),
        ),
        (
            Fs,
            Suggested,
            flow_schema(
                "kube-scheduler",
                "workload-high",
                800,
                Some("ByNamespace"),
                vec![all_for(users(&["system:kube-scheduler"]))],
            ),
        ),
        (
            Fs,
            Suggested,
            flow_schema(
                "kube-system-service-accounts",
                "workload-high",
                900,
                Some("ByNamespace"),
                vec![all_for(kube_system_service_accounts())],
            ),
        ),
        (
            Fs,
            Suggested,
            flow_schema(
                "service-accounts",
                "workload-low",
                9000,
                Some("ByUser"),
                vec![all_for(groups(&["system:serviceaccounts"]))],
            ),
        ),
        (
            Fs,
            Suggested,
            flow_schema(
                "global-default",
                "global-default",
                9900,
                Some("ByUser"),
                vec![all_for(groups(&authenticated))],
            ),
        ),
    ];
    items
        .into_iter()
        .map(|(kind, class, object)| Bootstrap {
            kind,
            class,
            object,
        })
        .collect()
}

/// The spec of the mandatory object `name` of `kind`, if there is one.
pub fn mandatory_spec(kind: Kind, name: &str) -> Option<Value> {
    bootstrap()
        .iter()
        .find(|b| b.kind == kind && b.class == Class::Mandatory && b.name() == name)
        .map(|b| b.spec().clone())
}

fn default_key(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_owned(), value);
    }
}

fn default_zero(map: &mut Map<String, Value>, key: &str, value: i64) {
    if map
        .get(key)
        .is_none_or(|v| v.is_null() || v.as_i64() == Some(0))
    {
        map.insert(key.to_owned(), json!(value));
    }
}

/// Applies kube's v1 defaults to a FlowSchema (`matchingPrecedence` 1000) or a
/// PriorityLevelConfiguration (`nominalConcurrencyShares` 30 for limited levels and 0 for the
/// exempt one, `lendablePercent` 0, queuing 64 queues of hand size 8 and length 50).
pub fn apply_defaults(kind: Kind, obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    match kind {
        Kind::FlowSchema => default_zero(spec, "matchingPrecedence", 1000),
        Kind::PriorityLevel => {
            if let Some(limited) = spec.get_mut("limited").and_then(Value::as_object_mut) {
                default_key(limited, "nominalConcurrencyShares", json!(30));
                default_key(limited, "lendablePercent", json!(0));
                if let Some(queuing) = limited
                    .get_mut("limitResponse")
                    .and_then(|r| r.get_mut("queuing"))
                    .and_then(Value::as_object_mut)
                {
                    default_zero(queuing, "handSize", 8);
                    default_zero(queuing, "queues", 64);
                    default_zero(queuing, "queueLengthLimit", 50);
                }
            }
            if let Some(exempt) = spec.get_mut("exempt").and_then(Value::as_object_mut) {
                default_key(exempt, "nominalConcurrencyShares", json!(0));
                default_key(exempt, "lendablePercent", json!(0));
            }
        }
    }
}

/// `value` without what Go's semantic equality does not tell apart from a zero value: nulls,
/// `false`, empty strings, lists and objects.
fn trimmed(value: &Value) -> Option<Value> {
    match value {
        Value::Null | Value::Bool(false) => None,
        Value::String(s) if s.is_empty() => None,
        Value::Array(items) if items.is_empty() => None,
        Value::Array(items) => Some(Value::Array(
            items
                .iter()
                .map(|i| trimmed(i).unwrap_or(Value::Null))
                .collect(),
        )),
        Value::Object(map) => {
            let out: Map<String, Value> = map
                .iter()
                .filter_map(|(k, v)| trimmed(v).map(|v| (k.clone(), v)))
                .collect();
            (!out.is_empty()).then_some(Value::Object(out))
        }
        other => Some(other.clone()),
    }
}

/// Whether two specs of `kind` are the same once defaulted (kube's semantic equality).
pub fn spec_equal(kind: Kind, a: &Value, b: &Value) -> bool {
    let defaulted = |spec: &Value| {
        let mut obj = json!({"spec": spec.clone()});
        apply_defaults(kind, &mut obj);
        trimmed(&obj["spec"])
    };
    defaulted(a) == defaulted(b)
}

/// Whether the stored `current` spec matches the bootstrap object's, as kube's ensurer decides
/// it: the `exempt` priority level's `spec.exempt` may differ (administrators may tune it).
pub fn spec_equalish(boot: &Bootstrap, current: &Value) -> bool {
    let mut expected = boot.spec().clone();
    if boot.kind == Kind::PriorityLevel && boot.name() == "exempt" {
        match current.get("exempt") {
            Some(exempt) if !exempt.is_null() => expected["exempt"] = exempt.clone(),
            _ => return false,
        }
    }
    spec_equal(boot.kind, &expected, current)
}

/// The `Dangling` condition kube's APF controller gives a FlowSchema whose priority level
/// `level` does (`found`) or does not exist: `(status, reason, message)`.
pub fn dangling(found: bool, level: &str) -> (&'static str, &'static str, String) {
    if found {
        (
            "False",
            "Found",
            format!(
                "This FlowSchema references the PriorityLevelConfiguration object named {} and it exists",
                ocm_apiserver_validation::go_quote(level)
            ),
        )
    } else {
        (
            "True",
            "NotFound",
            format!(
                "This FlowSchema references the PriorityLevelConfiguration object named {} but there is no such object",
                ocm_apiserver_validation::go_quote(level)
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_names_are_kubes() {
        let names = |kind, class| -> Vec<String> {
            bootstrap()
                .iter()
                .filter(|b| b.kind == kind && b.class == class)
                .map(|b| b.name().to_owned())
                .collect()
        };
        assert_eq!(
            names(Kind::PriorityLevel, Class::Mandatory),
            ["exempt", "catch-all"]
        );
        assert_eq!(
            names(Kind::FlowSchema, Class::Mandatory),
            ["exempt", "catch-all"]
        );
        assert_eq!(names(Kind::PriorityLevel, Class::Suggested).len(), 6);
        assert_eq!(names(Kind::FlowSchema, Class::Suggested).len(), 9);
    }

    #[test]
    fn defaults_make_specs_equal() {
        let bare = json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue",
            "queuing": {}}}});
        let full = json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 30,
            "lendablePercent": 0, "limitResponse": {"type": "Queue",
            "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}}});
        assert!(spec_equal(Kind::PriorityLevel, &bare, &full));
        let other = json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 31,
            "limitResponse": {"type": "Queue", "queuing": {}}}});
        assert!(!spec_equal(Kind::PriorityLevel, &other, &full));
        let fs = json!({"priorityLevelConfiguration": {"name": "x"}, "rules": []});
        let fs_full = json!({"priorityLevelConfiguration": {"name": "x"},
                             "matchingPrecedence": 1000});
        assert!(spec_equal(Kind::FlowSchema, &fs, &fs_full));
    }

    #[test]
    fn exempt_level_may_tune_its_exempt_field() {
        let boot = bootstrap()
            .iter()
            .find(|b| b.kind == Kind::PriorityLevel && b.name() == "exempt")
            .unwrap();
        let tuned = json!({"type": "Exempt",
                           "exempt": {"nominalConcurrencyShares": 10, "lendablePercent": 5}});
        assert!(spec_equalish(boot, &tuned));
        assert!(!spec_equalish(boot, &json!({"type": "Exempt"})));
        let catch_all = bootstrap()
            .iter()
            .find(|b| b.kind == Kind::PriorityLevel && b.name() == "catch-all")
            .unwrap();
        assert!(!spec_equalish(catch_all, &limited(6, 0, None)));
        assert!(spec_equalish(catch_all, &limited(5, 0, None)));
    }

    #[test]
    fn dangling_messages() {
        assert_eq!(
            dangling(false, "x").2,
            "This FlowSchema references the PriorityLevelConfiguration object named \"x\" but there is no such object"
        );
        assert_eq!(dangling(true, "x").0, "False");
    }
}
