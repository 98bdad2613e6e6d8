//! The TaintToleration filter: effects, matching, tolerationSeconds and requeue times.

use ocm_api::cluster::v1::TaintEffect::{self, NoSelect, NoSelectIfNew, PreferNoSelect};
use ocm_placement::scheduler::{FilterReason, TaintRejection};
use serde_json::{Value, json};

use crate::common::*;

/// One tainted cluster `t` (plus an untainted `u`), with `t` optionally already decided.
fn world(effect: TaintEffect, added_ago: Option<i64>, t_in_decisions: bool) -> World {
    let w = World::new(vec![
        cluster("t")
            .taint("key", "value", effect, added_ago)
            .build(),
        cluster("u").build(),
    ]);
    if t_in_decisions {
        w.decisions(vec![decision(NS, "p", 1, &["t"])])
    } else {
        w
    }
}

#[test]
fn effects_and_matching() {
    let cases: Vec<(&str, TaintEffect, bool, Value, bool)> = vec![
        ("NoSelect, no toleration", NoSelect, false, json!([]), false),
        (
            "NoSelect, already selected",
            NoSelect,
            true,
            json!([]),
            false,
        ),
        (
            "PreferNoSelect is always tolerated",
            PreferNoSelect,
            false,
            json!([]),
            true,
        ),
        (
            "NoSelectIfNew, new cluster",
            NoSelectIfNew,
            false,
            json!([]),
            false,
        ),
        (
            "NoSelectIfNew, already selected",
            NoSelectIfNew,
            true,
            json!([]),
            true,
        ),
        (
            "NoSelectIfNew, new cluster, tolerated",
            NoSelectIfNew,
            false,
            json!([{"key": "key", "operator": "Exists"}]),
            true,
        ),
        (
            "Equal, same value",
            NoSelect,
            false,
            json!([{"key": "key", "value": "value"}]),
            true,
        ),
        (
            "Equal (explicit), same value",
            NoSelect,
            false,
            json!([{"key": "key", "operator": "Equal", "value": "value"}]),
            true,
        ),
        (
            "Equal, other value",
            NoSelect,
            false,
            json!([{"key": "key", "value": "other"}]),
            false,
        ),
        (
            "Exists, any value",
            NoSelect,
            false,
            json!([{"key": "key", "operator": "Exists"}]),
            true,
        ),
        (
            "other key",
            NoSelect,
            false,
            json!([{"key": "other", "operator": "Exists"}]),
            false,
        ),
        (
            "empty key with Exists matches every taint",
            NoSelect,
            false,
            json!([{"operator": "Exists"}]),
            true,
        ),
        (
            "same effect",
            NoSelect,
            false,
            json!([{"key": "key", "operator": "Exists", "effect": "NoSelect"}]),
            true,
        ),
        (
            "other effect",
            NoSelect,
            false,
            json!([{"key": "key", "operator": "Exists", "effect": "NoSelectIfNew"}]),
            false,
        ),
        (
            "unknown operator matches nothing",
            NoSelect,
            false,
            json!([{"key": "key", "operator": "Like", "value": "value"}]),
            false,
        ),
        (
            "second toleration matches",
            NoSelect,
            false,
            json!([{"key": "other", "operator": "Exists"}, {"key": "key", "value": "value"}]),
            true,
        ),
    ];
    for (name, effect, decided, tolerations, want) in cases {
        let result = world(effect, None, decided)
            .schedule(&placement("p", json!({ "tolerations": tolerations })));
        assert_eq!(misconfigured(&result).0, "False", "{name}");
        let chosen = selected_sorted(&result).contains(&"t".to_string());
        assert_eq!(chosen, want, "{name}");
        assert!(
            selected_sorted(&result).contains(&"u".to_string()),
            "{name}"
        );
        if !want {
            assert!(
                matches!(
                    &result.filtered[..],
                    [f] if f.name.as_ref() == "t"
                        && matches!(&f.reason, FilterReason::TaintNotTolerated { taint, .. } if taint.key == "key")
                ),
                "{name}: {:?}",
                result.filtered
            );
        }
    }
}

#[test]
fn every_taint_must_be_tolerated() {
    let world = World::new(vec![
        cluster("t")
            .taint("a", "", NoSelect, None)
            .taint("b", "", NoSelect, None)
            .build(),
    ]);
    let one = world.schedule(&placement(
        "p",
        json!({"tolerations": [{"key": "a", "operator": "Exists"}]}),
    ));
    assert!(one.selected.is_empty());
    let both = world.schedule(&placement(
        "p",
        json!({"tolerations": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]}),
    ));
    assert_eq!(selected(&both), strings(&["t"]));
}

#[test]
fn toleration_seconds() {
    let toleration = |secs: i64| json!({"tolerations": [{"key": "key", "operator": "Exists", "tolerationSeconds": secs}]});
    // (case, taint added seconds ago, tolerationSeconds, tolerated, requeue_at, expired_at)
    let cases: Vec<(
        &str,
        Option<i64>,
        i64,
        bool,
        Option<i64>,
        Option<Option<i64>>,
    )> = vec![
        ("within the window", Some(50), 100, true, Some(50), None),
        ("just added", Some(0), 100, true, Some(100), None),
        (
            "exactly at expiry",
            Some(100),
            100,
            false,
            None,
            Some(Some(0)),
        ),
        ("expired", Some(150), 100, false, None, Some(Some(-50))),
        (
            "no timeAdded counts as expired",
            None,
            100,
            false,
            None,
            Some(None),
        ),
        ("zero seconds", Some(0), 0, false, None, Some(Some(0))),
        (
            "absurdly long never expires",
            Some(10),
            i64::MAX,
            true,
            None,
            None,
        ),
    ];
    for (name, added, secs, tolerated, requeue, expired) in cases {
        let result = world(NoSelect, added, false).schedule(&placement("p", toleration(secs)));
        assert_eq!(
            selected_sorted(&result).contains(&"t".to_string()),
            tolerated,
            "{name}"
        );
        assert_eq!(result.requeue_at, requeue.map(at), "{name}");
        if let Some(expired) = expired {
            let want = TaintRejection::TolerationExpired {
                at: expired.map(at),
            };
            assert!(
                matches!(&result.filtered[0].reason, FilterReason::TaintNotTolerated { rejection, .. } if *rejection == want),
                "{name}: {:?}",
                result.filtered
            );
        }
    }
}

#[test]
fn requeue_is_the_earliest_expiry() {
    let world = World::new(vec![
        cluster("a")
            .taint("x", "", NoSelect, Some(10))
            .taint("y", "", NoSelect, Some(10))
            .build(),
        cluster("b").taint("x", "", NoSelect, Some(80)).build(),
    ]);
    let result = world.schedule(&placement(
        "p",
        json!({"tolerations": [
            {"key": "x", "operator": "Exists", "tolerationSeconds": 100},
            {"key": "y", "operator": "Exists", "tolerationSeconds": 300}
        ]}),
    ));
    assert_eq!(selected_sorted(&result), strings(&["a", "b"]));
    // a relies on x until now+90 and y until now+290; b on x until now+20.
    assert_eq!(result.requeue_at, Some(at(20)));
}

#[test]
fn invalid_tolerations_are_misconfigured() {
    let cases = [
        (
            json!([{"operator": "Equal", "value": "v"}]),
            "TaintToleration:If the key is empty, operator must be Exists.",
        ),
        (
            json!([{}]),
            "TaintToleration:If the key is empty, operator must be Exists.",
        ),
        (
            json!([{"key": "k", "operator": "Exists", "value": "v"}]),
            "TaintToleration:If the operator is Exists, the value should be empty.",
        ),
    ];
    for (tolerations, want) in cases {
        let result = world(NoSelect, None, false)
            .schedule(&placement("p", json!({ "tolerations": tolerations })));
        assert_eq!(
            misconfigured(&result),
            ("True".into(), "Misconfigured".into(), want.into())
        );
        assert!(result.selected.is_empty());
        assert_eq!(satisfied(&result).1, "NoManagedClusterMatched");
    }
    // Upstream validates only when some cluster passed the predicates.
    let result = world(NoSelect, None, false).schedule(&placement(
        "p",
        json!({
            "tolerations": [{"operator": "Equal"}],
            "predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"nope": "x"}}}}]
        }),
    ));
    assert_eq!(misconfigured(&result).0, "False");
    assert_eq!(satisfied(&result).1, "NoManagedClusterMatched");
}
