//! The selector API the way the list/watch handlers use it: parse the query parameters,
//! check field labels for the resource, filter objects.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ocm_apiserver_selector::{FieldSelector, FieldSet, LabelSelector};
use serde_json::{Value, json};

fn pods() -> Vec<Value> {
    vec![
        json!({"metadata": {"name": "web-1", "namespace": "a", "labels": {"app": "web", "tier": "front"}},
               "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}),
        json!({"metadata": {"name": "web-2", "namespace": "b", "labels": {"app": "web"}},
               "spec": {"nodeName": "n2"}, "status": {"phase": "Pending"}}),
        json!({"metadata": {"name": "db-1", "namespace": "a", "labels": {"app": "db", "version": "12"}},
               "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}),
        json!({"metadata": {"name": "bare", "namespace": "a"}, "spec": {}}),
    ]
}

/// What a list handler does with `labelSelector=` and `fieldSelector=`.
fn list(label: &str, field: &str) -> Result<Vec<String>, String> {
    let labels = LabelSelector::parse(label).map_err(|e| e.message)?;
    let set = FieldSet::for_builtin("", "pods");
    let fields = set
        .check(&FieldSelector::parse(field).map_err(|e| e.message)?)
        .map_err(|e| e.message)?;
    Ok(pods()
        .iter()
        .filter(|p| labels.matches_value(p) && fields.matches(p, &set))
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect())
}

#[test]
fn label_and_field_selectors_filter_lists() {
    let cases: &[(&str, &str, &[&str])] = &[
        ("", "", &["web-1", "web-2", "db-1", "bare"]),
        ("app=web", "", &["web-1", "web-2"]),
        ("app!=web", "", &["db-1", "bare"]),
        ("app in (web,db),tier", "", &["web-1"]),
        ("!app", "", &["bare"]),
        ("app notin (web)", "", &["db-1", "bare"]),
        ("version>10", "", &["db-1"]),
        ("", "metadata.namespace=a", &["web-1", "db-1", "bare"]),
        ("app=web", "spec.nodeName=n1", &["web-1"]),
        ("", "status.phase!=Running", &["web-2", "bare"]),
        ("", "metadata.name=db-1", &["db-1"]),
        ("", "spec.host=n2", &["web-2"]),
    ];
    for (label, field, want) in cases {
        assert_eq!(
            list(label, field).unwrap(),
            *want,
            "labelSelector={label} fieldSelector={field}"
        );
    }
}

#[test]
fn bad_selectors_are_bad_requests_with_kube_messages() {
    assert_eq!(
        list("app in web", "").unwrap_err(),
        "unable to parse requirement: found 'web' expected: '('"
    );
    assert_eq!(
        list("", "status.hostIP=1.2.3.4").unwrap_err(),
        "field label not supported: status.hostIP"
    );
    assert_eq!(
        list("", "nonsense").unwrap_err(),
        "invalid selector: 'nonsense'; can't understand 'nonsense'"
    );
}

#[test]
fn selector_watch_transitions() {
    // A selector watch emits ADDED when an object starts matching and DELETED when it stops:
    // the handler compares old and new with the same selector.
    let sel = LabelSelector::parse("app=web").unwrap();
    let old = json!({"metadata": {"labels": {"app": "db"}}});
    let new = json!({"metadata": {"labels": {"app": "web"}}});
    assert!(!sel.matches_value(&old) && sel.matches_value(&new));
}
