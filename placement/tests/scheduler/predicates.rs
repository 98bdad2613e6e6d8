//! The Predicate filter: label selectors, claim selectors, CEL, and their misconfigurations.

use serde_json::{Value, json};

use crate::common::*;

/// `prod-us` (env=prod, region claim us, cpu 4), `prod-eu` (env=prod, tier=gold, region eu,
/// cpu 2), `dev-us` (env=dev, region us, meta claim JSON), `bare` (nothing).
fn fleet() -> World {
    World::new(vec![
        cluster("prod-us")
            .label("env", "prod")
            .claim("region.open-cluster-management.io", "us")
            .cpu("4")
            .build(),
        cluster("prod-eu")
            .label("env", "prod")
            .label("tier", "gold")
            .claim("region.open-cluster-management.io", "eu")
            .cpu("2")
            .build(),
        cluster("dev-us")
            .label("env", "dev")
            .claim("region.open-cluster-management.io", "us")
            .claim("meta", r#"{"tier": "gold", "nodes": 3}"#)
            .build(),
        cluster("bare").build(),
    ])
    .scores(vec![
        score("prod-us", "usage", &[("cpu", 80), ("mem", 10)], None),
        score("prod-eu", "usage", &[("cpu", 20)], None),
    ])
}

fn run(predicates: Value) -> Vec<String> {
    let result = fleet().schedule(&placement("p", json!({ "predicates": predicates })));
    assert_eq!(
        misconfigured(&result).0,
        "False",
        "unexpected misconfiguration: {:?}",
        result.misconfiguration
    );
    selected_sorted(&result)
}

fn labels(selector: Value) -> Value {
    json!([{"requiredClusterSelector": {"labelSelector": selector}}])
}

fn claims(expressions: Value) -> Value {
    json!([{"requiredClusterSelector": {"claimSelector": {"matchExpressions": expressions}}}])
}

fn cel(expressions: &[&str]) -> Value {
    json!([{"requiredClusterSelector": {"celSelector": {"celExpressions": expressions}}}])
}

#[test]
fn label_selector() {
    let cases = [
        (
            "no predicates",
            json!([]),
            vec!["bare", "dev-us", "prod-eu", "prod-us"],
        ),
        (
            "empty selector",
            labels(json!({})),
            vec!["bare", "dev-us", "prod-eu", "prod-us"],
        ),
        (
            "matchLabels",
            labels(json!({"matchLabels": {"env": "prod"}})),
            vec!["prod-eu", "prod-us"],
        ),
        (
            "two matchLabels are ANDed",
            labels(json!({"matchLabels": {"env": "prod", "tier": "gold"}})),
            vec!["prod-eu"],
        ),
        (
            "In",
            labels(
                json!({"matchExpressions": [{"key": "env", "operator": "In", "values": ["dev", "qa"]}]}),
            ),
            vec!["dev-us"],
        ),
        (
            "NotIn matches clusters without the label",
            labels(
                json!({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}),
            ),
            vec!["bare", "dev-us"],
        ),
        (
            "Exists",
            labels(json!({"matchExpressions": [{"key": "tier", "operator": "Exists"}]})),
            vec!["prod-eu"],
        ),
        (
            "DoesNotExist",
            labels(json!({"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]})),
            vec!["bare"],
        ),
        (
            "matchLabels and matchExpressions are ANDed",
            labels(json!({
                "matchLabels": {"env": "prod"},
                "matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]
            })),
            vec!["prod-us"],
        ),
        (
            "predicates are ORed",
            json!([
                {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "dev"}}}},
                {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"tier": "gold"}}}}
            ]),
            vec!["dev-us", "prod-eu"],
        ),
        (
            "a predicate without selector matches everything",
            json!([{}]),
            vec!["bare", "dev-us", "prod-eu", "prod-us"],
        ),
        (
            "label AND claim within one predicate",
            json!([{"requiredClusterSelector": {
                "labelSelector": {"matchLabels": {"env": "prod"}},
                "claimSelector": {"matchExpressions": [
                    {"key": "region.open-cluster-management.io", "operator": "In", "values": ["us"]}
                ]}
            }}]),
            vec!["prod-us"],
        ),
    ];
    for (name, predicates, want) in cases {
        assert_eq!(run(predicates), strings(&want), "{name}");
    }
}

#[test]
fn claim_selector() {
    let region = "region.open-cluster-management.io";
    let cases = [
        (
            "In",
            claims(json!([{"key": region, "operator": "In", "values": ["us"]}])),
            vec!["dev-us", "prod-us"],
        ),
        (
            "NotIn",
            claims(json!([{"key": region, "operator": "NotIn", "values": ["us"]}])),
            vec!["bare", "prod-eu"],
        ),
        (
            "Exists",
            claims(json!([{"key": region, "operator": "Exists"}])),
            vec!["dev-us", "prod-eu", "prod-us"],
        ),
        (
            "DoesNotExist",
            claims(json!([{"key": region, "operator": "DoesNotExist"}])),
            vec!["bare"],
        ),
        (
            "ANDed",
            claims(json!([
                {"key": region, "operator": "Exists"},
                {"key": "meta", "operator": "Exists"}
            ])),
            vec!["dev-us"],
        ),
        (
            "labels are not claims",
            claims(json!([{"key": "env", "operator": "Exists"}])),
            vec![],
        ),
    ];
    for (name, predicates, want) in cases {
        assert_eq!(run(predicates), strings(&want), "{name}");
    }
}

#[test]
fn cel_selector() {
    let cases: Vec<(&str, Vec<&str>, Vec<&str>)> = vec![
        (
            "label",
            vec![r#"managedCluster.metadata.labels["env"] == "prod""#],
            vec!["prod-eu", "prod-us"],
        ),
        (
            "has() on a label",
            vec!["has(managedCluster.metadata.labels.tier)"],
            vec!["prod-eu"],
        ),
        (
            "claims with exists()",
            vec![
                r#"managedCluster.status.clusterClaims.exists(c, c.name == "region.open-cluster-management.io" && c.value == "us")"#,
            ],
            vec!["dev-us", "prod-us"],
        ),
        (
            "expressions are ANDed",
            vec![
                r#"managedCluster.metadata.labels["env"] == "prod""#,
                r#"managedCluster.metadata.name.startsWith("prod-e")"#,
            ],
            vec!["prod-eu"],
        ),
        (
            "scores()",
            vec![r#"managedCluster.scores("usage").exists(s, s.name == "cpu" && s.value > 50)"#],
            vec!["prod-us"],
        ),
        (
            "scores() of a missing object is an error: no match",
            vec![r#"managedCluster.scores("nope").size() == 0"#],
            vec![],
        ),
        (
            "kube-cel quantity",
            vec![
                r#"has(managedCluster.status.allocatable) && quantity(managedCluster.status.allocatable.cpu).isGreaterThan(quantity("3"))"#,
            ],
            vec!["prod-us"],
        ),
        (
            "kube-cel strings and lists",
            vec![
                r#"managedCluster.metadata.name.split("-").size() == 2 && ["us"].all(r, managedCluster.metadata.name.endsWith(r))"#,
            ],
            vec!["dev-us", "prod-us"],
        ),
        (
            "parseJSON",
            vec![
                r#"managedCluster.status.clusterClaims.exists(c, c.name == "meta" && c.value.parseJSON().tier == "gold" && c.value.parseJSON().nodes == 3.0)"#,
            ],
            vec!["dev-us"],
        ),
        (
            "an evaluation error is no match",
            vec![r#"managedCluster.metadata.labels["missing"] == "x""#],
            vec![],
        ),
        (
            "a non-bool result is no match",
            vec!["managedCluster.metadata.name"],
            vec![],
        ),
    ];
    for (name, expressions, want) in cases {
        assert_eq!(run(cel(&expressions)), strings(&want), "{name}");
    }
}

#[test]
fn invalid_predicates_are_misconfigured() {
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "unknown operator",
            labels(
                json!({"matchExpressions": [{"key": "env", "operator": "Within", "values": ["a"]}]}),
            ),
            "Predicate:\"Within\" is not a valid label selector operator",
        ),
        (
            "In without values",
            labels(json!({"matchExpressions": [{"key": "env", "operator": "In"}]})),
            "Predicate:values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            "Exists with values",
            claims(json!([{"key": "region", "operator": "Exists", "values": ["us"]}])),
            "Predicate:values: Invalid value: []string{\"us\"}: values set must be empty for exists and does not exist",
        ),
        (
            "invalid label value",
            labels(json!({"matchLabels": {"env": "not valid"}})),
            "Predicate:values[0]: Invalid value: \"not valid\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
        (
            "second predicate invalid",
            json!([
                {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}},
                {"requiredClusterSelector": {"labelSelector": {"matchExpressions": [{"key": "/x", "operator": "Exists"}]}}}
            ]),
            "Predicate:key: Invalid value: \"/x\": prefix part must be non-empty",
        ),
        (
            "CEL syntax error",
            cel(&["managedCluster.metadata.name =="]),
            "Predicate:compilation failed: ERROR: <input>:1:",
        ),
        (
            "CEL undeclared variable",
            cel(&[r#"cluster.metadata.name == "a""#]),
            "Predicate:compilation failed: ERROR: <input>: undeclared reference to 'cluster' (in container '')",
        ),
        (
            "CEL unknown function",
            cel(&["managedCluster.metadata.name.shout()"]),
            "Predicate:compilation failed: ERROR: <input>: undeclared reference to 'shout' (in container '')",
        ),
        (
            "CEL comprehension variable out of scope",
            cel(&[r#"[1].exists(x, x == 1) && x == 1"#]),
            "Predicate:compilation failed: ERROR: <input>: undeclared reference to 'x' (in container '')",
        ),
    ];
    for (name, predicates, want) in cases {
        let result = fleet().schedule(&placement("p", json!({ "predicates": predicates })));
        let (status, reason, message) = misconfigured(&result);
        assert_eq!(
            (status.as_str(), reason.as_str()),
            ("True", "Misconfigured"),
            "{name}"
        );
        assert!(message.starts_with(want), "{name}: {message}");
        assert!(result.selected.is_empty(), "{name}");
        assert_eq!(satisfied(&result).1, "NoManagedClusterMatched", "{name}");
        assert_eq!(
            decision_clusters(&result),
            vec![("p-decision-1".to_string(), vec![])],
            "{name}: one empty decision"
        );
    }
}

#[test]
fn namespaced_kube_cel_functions_are_known() {
    let expressions = [
        "sets.contains([1, 2], [1])",
        "math.greatest(1, 2) == 2",
        r#"base64.encode(b"a") == "YQ==""#,
        r#"optional.of(1).hasValue()"#,
        r#"managedCluster.?metadata.?labels.?env.orValue("none") != "dev""#,
    ];
    for e in expressions {
        let result = fleet().schedule(&placement("p", json!({ "predicates": cel(&[e]) })));
        assert_eq!(
            misconfigured(&result).0,
            "False",
            "{e}: {:?}",
            result.misconfiguration
        );
    }
}

#[test]
fn invalid_predicates_are_not_reported_without_candidates() {
    let world = fleet().bindings(vec![]);
    let result = world.schedule(&placement(
        "p",
        json!({ "predicates": cel(&["nonsense ==="]) }),
    ));
    assert_eq!(misconfigured(&result).0, "False");
    assert_eq!(satisfied(&result).1, "NoManagedClusterSetBindings");
}
