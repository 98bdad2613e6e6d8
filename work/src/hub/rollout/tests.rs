use super::*;
use ocm_api::cluster::v1alpha1::{
    MandatoryDecisionGroups, RolloutAll, RolloutConfig, RolloutProgressive,
    RolloutProgressivePerGroup,
};

fn now() -> Timestamp {
    "2026-01-01T12:00:00Z".parse().unwrap()
}

fn ago(seconds: i64) -> Option<Timestamp> {
    Some(now() - jiff::SignedDuration::from_secs(seconds))
}

fn groups(spec: &[(&str, i32, &[&str])]) -> ClusterGroups {
    let mut g = ClusterGroups::default();
    for (name, index, clusters) in spec {
        g.insert(
            GroupKey {
                name: (*name).to_owned(),
                index: *index,
            },
            clusters.iter().copied(),
        );
    }
    g
}

fn names(list: &[ClusterRolloutStatus]) -> Vec<&str> {
    list.iter().map(|s| s.cluster.as_str()).collect()
}

fn progressive(max_concurrency: Option<IntOrString>, config: RolloutConfig) -> RolloutStrategy {
    RolloutStrategy {
        type_: Some(RolloutType::Progressive),
        progressive: Some(RolloutProgressive {
            rollout_config: config,
            mandatory_decision_groups: MandatoryDecisionGroups::default(),
            max_concurrency,
        }),
        ..Default::default()
    }
}

#[test]
fn all_rolls_out_every_cluster_and_reports_removed_ones() {
    let g = groups(&[("", 0, &["c1", "c2", "c3"])]);
    let existing = vec![
        ClusterRolloutStatus::new("c1", RolloutStatus::Succeeded, ago(10)),
        ClusterRolloutStatus::new("gone", RolloutStatus::Succeeded, ago(10)),
    ];
    let r = plan_rollout(&RolloutStrategy::default(), &g, &existing, now()).unwrap();
    assert_eq!(names(&r.to_rollout), ["c2", "c3"]);
    assert_eq!(names(&r.removed), ["gone"]);
    assert!(!r.max_failure_breach);
    assert_eq!(r.recheck_after, None);
}

#[test]
fn all_times_out_past_the_deadline() {
    let g = groups(&[("", 0, &["c1", "c2"])]);
    let strategy = RolloutStrategy {
        type_: Some(RolloutType::All),
        all: Some(RolloutAll {
            rollout_config: RolloutConfig {
                progress_deadline: Some("60s".into()),
                ..Default::default()
            },
        }),
        ..Default::default()
    };
    let existing = vec![
        ClusterRolloutStatus::new("c1", RolloutStatus::Progressing, ago(120)),
        ClusterRolloutStatus::new("c2", RolloutStatus::Progressing, ago(30)),
    ];
    let r = plan_rollout(&strategy, &g, &existing, now()).unwrap();
    assert_eq!(names(&r.timed_out), ["c1"]);
    assert_eq!(names(&r.to_rollout), ["c2"]);
    assert_eq!(r.recheck_after, Some(Duration::from_secs(30)));
}

#[test]
fn progressive_holds_at_max_concurrency_until_clusters_succeed() {
    let g = groups(&[("", 0, &["c1", "c2", "c3", "c4", "c5"])]);
    let s = progressive(Some(IntOrString::Int(2)), RolloutConfig::default());
    let r = plan_rollout(&s, &g, &[], now()).unwrap();
    assert_eq!(names(&r.to_rollout), ["c1", "c2"]);

    let existing = vec![
        ClusterRolloutStatus::new("c1", RolloutStatus::Progressing, ago(5)),
        ClusterRolloutStatus::new("c2", RolloutStatus::Progressing, ago(5)),
    ];
    let r = plan_rollout(&s, &g, &existing, now()).unwrap();
    assert_eq!(
        names(&r.to_rollout),
        ["c1", "c2"],
        "nothing new while two are in flight"
    );

    let existing = vec![
        ClusterRolloutStatus::new("c1", RolloutStatus::Succeeded, ago(5)),
        ClusterRolloutStatus::new("c2", RolloutStatus::Progressing, ago(5)),
    ];
    let r = plan_rollout(&s, &g, &existing, now()).unwrap();
    assert_eq!(names(&r.to_rollout), ["c2", "c3"]);
}

#[test]
fn progressive_percentage_rounds_up_and_soak_time_counts_as_in_flight() {
    let g = groups(&[("", 0, &["c1", "c2", "c3", "c4", "c5"])]);
    let s = progressive(
        Some(IntOrString::String("30%".into())),
        RolloutConfig {
            min_success_time: Some("1m".into()),
            ..Default::default()
        },
    );
    // 30% of 5 = 1.5 → 2.
    let existing = vec![ClusterRolloutStatus::new(
        "c1",
        RolloutStatus::Succeeded,
        ago(20),
    )];
    let r = plan_rollout(&s, &g, &existing, now()).unwrap();
    assert_eq!(names(&r.to_rollout), ["c1", "c2"]);
    assert_eq!(r.recheck_after, Some(Duration::from_secs(40)));
    let existing = vec![ClusterRolloutStatus::new(
        "c1",
        RolloutStatus::Succeeded,
        ago(90),
    )];
    let r = plan_rollout(&s, &g, &existing, now()).unwrap();
    assert_eq!(names(&r.to_rollout), ["c2", "c3"]);
}

#[test]
fn progressive_stops_starting_clusters_after_max_failures() {
    let g = groups(&[("", 0, &["c1", "c2", "c3", "c4"])]);
    let s = progressive(
        Some(IntOrString::Int(4)),
        RolloutConfig {
            max_failures: Some(IntOrString::Int(1)),
            ..Default::default()
        },
    );
    let existing = vec![
        ClusterRolloutStatus::new("c1", RolloutStatus::Failed, ago(5)),
        ClusterRolloutStatus::new("c2", RolloutStatus::Failed, ago(5)),
    ];
    let r = plan_rollout(&s, &g, &existing, now()).unwrap();
    assert!(r.max_failure_breach);
    assert_eq!(names(&r.to_rollout), ["c1", "c2"]);
}

#[test]
fn progressive_runs_mandatory_groups_first() {
    let g = groups(&[("canary", 0, &["z1"]), ("", 1, &["a1", "a2"])]);
    let mut s = progressive(Some(IntOrString::Int(1)), RolloutConfig::default());
    if let Some(p) = s.progressive.as_mut() {
        p.mandatory_decision_groups.mandatory_decision_groups = vec![MandatoryDecisionGroup {
            group_name: "canary".into(),
            group_index: None,
        }];
    }
    let r = plan_rollout(&s, &g, &[], now()).unwrap();
    assert_eq!(names(&r.to_rollout), ["z1"]);
    let existing = vec![ClusterRolloutStatus::new(
        "z1",
        RolloutStatus::Succeeded,
        ago(1),
    )];
    let r = plan_rollout(&s, &g, &existing, now()).unwrap();
    assert_eq!(names(&r.to_rollout), ["a1"]);
}

#[test]
fn progressive_per_group_waits_for_the_whole_group() {
    let g = groups(&[("", 0, &["c1", "c2"]), ("", 1, &["c3", "c4"])]);
    let s = RolloutStrategy {
        type_: Some(RolloutType::ProgressivePerGroup),
        progressive_per_group: Some(RolloutProgressivePerGroup::default()),
        ..Default::default()
    };
    let r = plan_rollout(&s, &g, &[], now()).unwrap();
    assert_eq!(names(&r.to_rollout), ["c1", "c2"]);
    let existing = vec![
        ClusterRolloutStatus::new("c1", RolloutStatus::Succeeded, ago(1)),
        ClusterRolloutStatus::new("c2", RolloutStatus::Progressing, ago(1)),
    ];
    let r = plan_rollout(&s, &g, &existing, now()).unwrap();
    assert_eq!(names(&r.to_rollout), ["c2"]);
    let existing = vec![
        ClusterRolloutStatus::new("c1", RolloutStatus::Succeeded, ago(1)),
        ClusterRolloutStatus::new("c2", RolloutStatus::Succeeded, ago(1)),
    ];
    let r = plan_rollout(&s, &g, &existing, now()).unwrap();
    assert_eq!(names(&r.to_rollout), ["c3", "c4"]);
}

#[test]
fn progressive_per_group_moves_on_within_its_failure_budget() {
    let g = groups(&[("", 0, &["c1", "c2"]), ("", 1, &["c3"])]);
    let s = RolloutStrategy {
        type_: Some(RolloutType::ProgressivePerGroup),
        progressive_per_group: Some(RolloutProgressivePerGroup {
            rollout_config: RolloutConfig {
                max_failures: Some(IntOrString::Int(1)),
                progress_deadline: Some("10s".into()),
                ..Default::default()
            },
            ..Default::default()
        }),
        ..Default::default()
    };
    let existing = vec![
        ClusterRolloutStatus::new("c1", RolloutStatus::Succeeded, ago(100)),
        ClusterRolloutStatus::new("c2", RolloutStatus::Progressing, ago(100)),
    ];
    let r = plan_rollout(&s, &g, &existing, now()).unwrap();
    assert_eq!(names(&r.timed_out), ["c2"]);
    assert_eq!(names(&r.to_rollout), ["c3"]);
    assert!(!r.max_failure_breach);
}

#[test]
fn invalid_settings_are_errors() {
    let g = groups(&[("", 0, &["c1"])]);
    let bad_deadline = RolloutStrategy {
        type_: Some(RolloutType::All),
        all: Some(RolloutAll {
            rollout_config: RolloutConfig {
                progress_deadline: Some("5x".into()),
                ..Default::default()
            },
        }),
        ..Default::default()
    };
    assert!(matches!(
        plan_rollout(&bad_deadline, &g, &[], now()),
        Err(RolloutError::InvalidDeadline(_))
    ));
    let bad_threshold = progressive(Some(IntOrString::String("ten".into())), Default::default());
    assert!(matches!(
        plan_rollout(&bad_threshold, &g, &[], now()),
        Err(RolloutError::InvalidThreshold { .. })
    ));
}

#[test]
fn go_durations() {
    assert_eq!(parse_go_duration("1h30m"), Some(Duration::from_secs(5400)));
    assert_eq!(parse_go_duration("1.5s"), Some(Duration::from_millis(1500)));
    assert_eq!(parse_go_duration("300ms"), Some(Duration::from_millis(300)));
    assert_eq!(parse_go_duration("0"), Some(Duration::ZERO));
    assert_eq!(parse_go_duration("5"), None);
    assert_eq!(parse_go_duration(""), None);
    assert_eq!(parse_go_duration("m"), None);
}
