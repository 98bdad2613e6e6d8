use super::*;
use serde_json::json;

fn meta(group: &str, kind: &str, resource: &str, name: &str, ns: &str) -> ManifestResourceMeta {
    ManifestResourceMeta {
        ordinal: 0,
        group: group.into(),
        version: "v1".into(),
        kind: kind.into(),
        resource: resource.into(),
        name: name.into(),
        namespace: ns.into(),
    }
}

fn config(value: serde_json::Value) -> ManifestConfigOption {
    serde_json::from_value(value).unwrap()
}

fn find<'a>(conditions: &'a [Condition], t: &str) -> &'a Condition {
    conditions.iter().find(|c| c.type_ == t).unwrap()
}

#[test]
fn manifest_config_matches_exactly_or_by_wildcard_first_wins() {
    let configs = vec![
        config(
            json!({"resourceIdentifier": {"group": "apps", "resource": "deployments",
            "name": "web", "namespace": "shop"}, "feedbackRules": []}),
        ),
        config(json!({"resourceIdentifier": {"group": "*", "resource": "*",
            "name": "*", "namespace": "*"}, "feedbackRules": [{"type": "WellKnownStatus"}]})),
    ];
    let web = meta("apps", "Deployment", "deployments", "web", "shop");
    assert!(
        manifest_config(&configs, &web)
            .unwrap()
            .feedback_rules
            .is_empty()
    );
    let other = meta("", "ConfigMap", "configmaps", "x", "y");
    assert_eq!(
        manifest_config(&configs, &other)
            .unwrap()
            .feedback_rules
            .len(),
        1
    );
    assert!(manifest_config(&configs[..1], &other).is_none());
}

#[test]
fn well_known_and_json_path_feedback_keep_their_types() {
    let deploy = json!({"spec": {"replicas": 3, "paused": false, "selector": {"matchLabels": {"a": "b"}}},
        "status": {"readyReplicas": 2, "replicas": 3, "availableReplicas": 2,
                   "conditions": [{"type": "Available", "status": "True"}]}});
    let m = meta("apps", "Deployment", "deployments", "web", "shop");
    let c = config(
        json!({"resourceIdentifier": {"resource": "deployments", "name": "web"},
        "feedbackRules": [{"type": "WellKnownStatus"}, {"type": "JSONPaths", "jsonPaths": [
            {"name": "paused", "path": ".spec.paused"},
            {"name": "available", "path": ".status.conditions[?(@.type==\"Available\")].status"},
            {"name": "selector", "path": ".spec.selector"},
            {"name": "missing", "path": ".status.nothing"}]}]}),
    );
    let o = observe_manifest(LiveObject::Found(&deploy), &m, Some(&c), 4);
    let values = o.feedback.unwrap().values;
    let get = |n: &str| {
        values
            .iter()
            .find(|v| v.name == n)
            .map(|v| serde_json::to_value(&v.field_value).unwrap())
    };
    assert_eq!(
        get("ReadyReplicas").unwrap(),
        json!({"type": "Integer", "integer": 2})
    );
    assert_eq!(
        get("Replicas").unwrap(),
        json!({"type": "Integer", "integer": 3})
    );
    assert_eq!(
        get("paused").unwrap(),
        json!({"type": "Boolean", "boolean": false})
    );
    assert_eq!(
        get("available").unwrap(),
        json!({"type": "String", "string": "True"})
    );
    assert_eq!(
        get("selector").unwrap(),
        json!({"type": "JsonRaw", "jsonRaw": "{\"matchLabels\":{\"a\":\"b\"}}"})
    );
    assert!(get("missing").is_none(), "unresolved paths are skipped");
    let synced = find(&o.conditions, "StatusFeedbackSynced");
    assert_eq!(
        (synced.status.as_str(), synced.observed_generation),
        ("True", Some(4))
    );
    assert_eq!(find(&o.conditions, "Available").reason, "ResourceAvailable");
}

#[test]
fn oversized_raw_feedback_is_not_synced() {
    let big: Vec<String> = (0..200).map(|i| format!("value-{i}")).collect();
    let object = json!({"data": {"list": big}});
    let m = meta("", "ConfigMap", "configmaps", "x", "y");
    let c = config(
        json!({"resourceIdentifier": {"resource": "configmaps", "name": "x"},
        "feedbackRules": [{"type": "JSONPaths", "jsonPaths": [{"name": "list", "path": ".data.list"}]}]}),
    );
    let o = observe_manifest(LiveObject::Found(&object), &m, Some(&c), 1);
    let synced = find(&o.conditions, "StatusFeedbackSynced");
    assert_eq!(synced.reason, "StatusFeedbackSyncFailed");
    assert!(synced.message.contains("1024"), "{}", synced.message);
}

#[test]
fn availability_follows_what_was_read() {
    let m = meta("", "ConfigMap", "configmaps", "x", "y");
    let status = |live| find(&observe_manifest(live, &m, None, 1).conditions, "Available").clone();
    assert_eq!(status(LiveObject::NotFound).reason, "ResourceNotAvailable");
    assert_eq!(status(LiveObject::FetchFailed("boom")).status, "Unknown");
    assert_eq!(
        status(LiveObject::IncompleteMeta).reason,
        "IncompleteResourceMeta"
    );
}

#[test]
fn job_complete_rule_and_work_aggregation() {
    let job =
        json!({"status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}});
    let m = meta("batch", "Job", "jobs", "once", "ns");
    let c = config(
        json!({"resourceIdentifier": {"group": "batch", "resource": "jobs", "name": "once", "namespace": "ns"},
        "conditionRules": [{"condition": "Complete", "type": "WellKnownConditions"}]}),
    );
    let o = observe_manifest(LiveObject::Found(&job), &m, Some(&c), 2);
    assert_eq!(find(&o.conditions, "Complete").status, "True");
    let mut applied = o.conditions.clone();
    applied.push(condition(
        "Applied",
        "True",
        "AppliedManifestComplete",
        "",
        Some(2),
    ));
    let manifests = vec![ManifestCondition {
        resource_meta: m,
        status_feedback: None,
        conditions: applied,
    }];
    let work = work_conditions(&manifests, 2);
    assert_eq!(find(&work, "Applied").status, "True");
    assert_eq!(find(&work, "Available").reason, "ResourcesAvailable");
    assert_eq!(find(&work, "Complete").status, "True");
}

#[test]
fn work_conditions_count_failures() {
    let m = meta("", "ConfigMap", "configmaps", "x", "y");
    let ok = ManifestCondition {
        resource_meta: m.clone(),
        status_feedback: None,
        conditions: vec![
            condition("Applied", "True", "AppliedManifestComplete", "", Some(1)),
            condition("Available", "True", "ResourceAvailable", "", Some(1)),
        ],
    };
    let bad = ManifestCondition {
        resource_meta: m,
        status_feedback: None,
        conditions: vec![
            condition("Applied", "False", "AppliedManifestFailed", "nope", Some(1)),
            condition("Available", "False", "ResourceNotAvailable", "", Some(1)),
        ],
    };
    let work = work_conditions(&[ok, bad], 1);
    assert_eq!(
        find(&work, "Applied").message,
        "Failed to apply manifest work: 1 of 2 manifests failed"
    );
    assert_eq!(
        find(&work, "Available").message,
        "1 of 2 resources are not available"
    );
    assert!(work.iter().all(|c| c.type_ != "Complete"));
}

#[test]
fn merge_keeps_transition_times_and_prunes_stale_rule_conditions() {
    let mut existing = vec![
        condition("Available", "True", "ResourceAvailable", "", Some(1)),
        condition("Healthy", "True", "ConditionRuleEvaluated", "", Some(1)),
    ];
    existing[0].last_transition_time = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        "2020-01-01T00:00:00Z".parse().unwrap(),
    );
    let changed = merge_conditions(
        &mut existing,
        &[condition(
            "Available",
            "True",
            "ResourceAvailable",
            "",
            Some(1),
        )],
    );
    assert!(changed, "the rule condition was pruned");
    assert_eq!(existing.len(), 1);
    assert_eq!(
        existing[0].last_transition_time.0.to_string(),
        "2020-01-01T00:00:00Z"
    );
    assert!(!merge_conditions(
        &mut existing,
        &[condition(
            "Available",
            "True",
            "ResourceAvailable",
            "",
            Some(1)
        )]
    ));
}

#[test]
fn cel_rules_set_manifest_conditions_and_progressing_aggregates_with_or() {
    let deployment = json!({"spec": {"replicas": 3}, "status": {"readyReplicas": 2}});
    let m = meta("apps", "Deployment", "deployments", "web", "ns");
    let rules = |expression: &str| {
        config(json!({
            "resourceIdentifier": {"group": "apps", "resource": "deployments", "name": "web", "namespace": "ns"},
            "conditionRules": [{"condition": "Progressing", "type": "CEL",
                                "celExpressions": [expression],
                                "messageExpression": "result ? 'rolling' : 'settled'"}]}))
    };
    let rolling = rules("object.status.readyReplicas < object.spec.replicas");
    let settled = rules("object.status.readyReplicas >= object.spec.replicas");
    let a = observe_manifest(LiveObject::Found(&deployment), &m, Some(&rolling), 4);
    let b = observe_manifest(LiveObject::Found(&deployment), &m, Some(&settled), 4);
    let pa = find(&a.conditions, "Progressing");
    assert_eq!(
        (pa.status.as_str(), pa.reason.as_str(), pa.message.as_str()),
        ("True", "ConditionRuleEvaluated", "rolling")
    );
    assert_eq!(find(&b.conditions, "Progressing").status, "False");
    // A rule is not evaluated for an object that could not be read.
    let unread = observe_manifest(LiveObject::NotFound, &m, Some(&rolling), 4);
    assert!(unread.conditions.iter().all(|c| c.type_ != "Progressing"));

    let manifest = |conditions: Vec<Condition>| ManifestCondition {
        resource_meta: m.clone(),
        status_feedback: None,
        conditions,
    };
    let work = work_conditions(&[manifest(a.conditions), manifest(b.conditions.clone())], 4);
    let p = find(&work, "Progressing");
    assert_eq!(
        (p.status.as_str(), p.reason.as_str()),
        ("True", "ConditionRulesAggregated")
    );
    let work = work_conditions(&[manifest(b.conditions)], 4);
    assert_eq!(find(&work, "Progressing").status, "False");
}
