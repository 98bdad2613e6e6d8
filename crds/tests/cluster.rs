//! `cluster.open-cluster-management.io`: typed round trips of every example, and the schema
//! defaults the reference names.

use crate::common;

use common::{assert_roundtrip, schema_at, schema_for, valid_examples_of_group};
use ocm_api::cluster::{v1, v1alpha1, v1beta1, v1beta2};
use serde_json::{Value, json};

#[test]
fn every_example_round_trips_through_its_type() {
    let examples = valid_examples_of_group(ocm_api::cluster::GROUP);
    assert!(!examples.is_empty());
    for ex in &examples {
        match (ex.api_version(), ex.kind()) {
            ("cluster.open-cluster-management.io/v1", "ManagedCluster") => {
                assert_roundtrip::<v1::ManagedCluster>(ex)
            }
            ("cluster.open-cluster-management.io/v1beta2", "ManagedClusterSet") => {
                assert_roundtrip::<v1beta2::ManagedClusterSet>(ex)
            }
            ("cluster.open-cluster-management.io/v1beta2", "ManagedClusterSetBinding") => {
                assert_roundtrip::<v1beta2::ManagedClusterSetBinding>(ex)
            }
            ("cluster.open-cluster-management.io/v1alpha1", "ClusterClaim") => {
                assert_roundtrip::<v1alpha1::ClusterClaim>(ex)
            }
            ("cluster.open-cluster-management.io/v1alpha1", "AddOnPlacementScore") => {
                assert_roundtrip::<v1alpha1::AddOnPlacementScore>(ex)
            }
            ("cluster.open-cluster-management.io/v1beta1", "Placement") => {
                assert_roundtrip::<v1beta1::Placement>(ex)
            }
            ("cluster.open-cluster-management.io/v1beta1", "PlacementDecision") => {
                assert_roundtrip::<v1beta1::PlacementDecision>(ex)
            }
            (v, k) => panic!("{}: no typed round trip for {v} {k}", ex.origin),
        }
    }
}

#[test]
fn managed_cluster_schema_defaults() {
    let s = schema_for("cluster.open-cluster-management.io/v1", "ManagedCluster").unwrap();
    assert_eq!(
        schema_at(&s, "spec.leaseDurationSeconds")["default"],
        json!(60)
    );
    assert_eq!(
        schema_at(&s, "spec.taints.[].effect")["enum"],
        json!(["NoSelect", "PreferNoSelect", "NoSelectIfNew"])
    );
}

#[test]
fn managed_cluster_set_schema_defaults() {
    let s = schema_for(
        "cluster.open-cluster-management.io/v1beta2",
        "ManagedClusterSet",
    )
    .unwrap();
    assert_eq!(
        schema_at(&s, "spec")["default"],
        json!({"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}})
    );
    assert_eq!(
        schema_at(&s, "spec.clusterSelector")["default"],
        json!({"selectorType": "ExclusiveClusterSetLabel"})
    );
    let selector_type = schema_at(&s, "spec.clusterSelector.selectorType");
    assert_eq!(selector_type["default"], json!("ExclusiveClusterSetLabel"));
    assert_eq!(
        selector_type["enum"],
        json!(["ExclusiveClusterSetLabel", "LabelSelector"])
    );
    let namespaces = schema_at(&s, "spec.managedNamespaces");
    assert_eq!(namespaces["x-kubernetes-list-type"], json!("map"));
    assert_eq!(namespaces["x-kubernetes-list-map-keys"], json!(["name"]));
}

#[test]
fn placement_schema_defaults() {
    let s = schema_for("cluster.open-cluster-management.io/v1beta1", "Placement").unwrap();
    assert_eq!(
        schema_at(&s, "spec.prioritizerPolicy.mode")["default"],
        json!("Additive")
    );
    let config = "spec.prioritizerPolicy.configurations.[]";
    let weight = schema_at(&s, &format!("{config}.weight"));
    assert_eq!(weight["default"], json!(1));
    assert_eq!(weight["minimum"].as_f64(), Some(-10.0));
    assert_eq!(weight["maximum"].as_f64(), Some(10.0));
    assert_eq!(
        schema_at(&s, &format!("{config}.scoreCoordinate.type"))["default"],
        json!("BuiltIn")
    );
    let per_group = schema_at(
        &s,
        "spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup",
    );
    assert_eq!(per_group["default"], json!("100%"));
    assert_eq!(
        per_group["pattern"],
        json!("^((100|[1-9][0-9]{0,1})%|[1-9][0-9]*)$")
    );
    assert_eq!(per_group["x-kubernetes-int-or-string"], json!(true));
    let spread = "spec.spreadPolicy.spreadConstraints";
    assert_eq!(schema_at(&s, spread)["maxItems"], json!(8));
    assert_eq!(
        schema_at(&s, &format!("{spread}.[].maxSkew"))["default"],
        json!(1)
    );
    assert_eq!(
        schema_at(&s, &format!("{spread}.[].whenUnsatisfiable"))["default"],
        json!("ScheduleAnyway")
    );
    assert_eq!(
        schema_at(&s, "spec.tolerations.[].operator")["default"],
        json!("Equal")
    );
    assert_eq!(
        schema_at(&s, "spec.sortBy")["default"],
        json!("ClusterName")
    );
    assert_eq!(schema_at(&s, "spec.scoreRateLimit")["default"], json!("1m"));
    assert_eq!(
        schema_at(&s, "status.decisionGroups.[].clusterCount")["default"],
        json!(0)
    );
    assert!(
        schema_at(&s, "status.numberOfSelectedClusters")
            .get("default")
            .is_none(),
        "upstream declares no default for numberOfSelectedClusters"
    );
}

#[test]
fn status_only_kinds_have_no_spec() {
    let s = schema_for(
        "cluster.open-cluster-management.io/v1beta1",
        "PlacementDecision",
    )
    .unwrap();
    assert!(s["properties"].get("spec").is_none());
    let s = schema_for(
        "cluster.open-cluster-management.io/v1alpha1",
        "AddOnPlacementScore",
    )
    .unwrap();
    assert!(s["properties"].get("spec").is_none());
    let score = v1alpha1::AddOnPlacementScore::new("s", v1alpha1::AddOnPlacementScoreSpec {});
    let json = serde_json::to_value(&score).unwrap();
    assert!(json.get("spec").is_none(), "serialized a spec: {json}");
    assert_eq!(
        schema_at(&s, "status.scores")["x-kubernetes-list-map-keys"],
        json!(["name"])
    );
}

#[test]
fn cluster_claim_is_installed_on_the_managed_cluster_only() {
    let name = "clusterclaims.cluster.open-cluster-management.io";
    let has = |crds: Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>| {
        crds.iter().any(|c| c.metadata.name.as_deref() == Some(name))
    };
    assert!(has(ocm_api::crds::klusterlet()));
    assert!(!has(ocm_api::crds::hub()));
}

/// The RolloutStrategy schema as it appears inside a CRD (the settings and transforms
/// kube-derive uses).
fn rollout_schema() -> Value {
    let generator = schemars::generate::SchemaSettings::openapi3()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .with_transform(schemars::transform::AddNullable::default())
        .with_transform(kube::core::schema::StructuralSchemaRewriter)
        .with_transform(kube::core::schema::OptionalEnum)
        .with_transform(kube::core::schema::OptionalIntOrString)
        .into_generator();
    generator
        .into_root_schema_for::<v1alpha1::RolloutStrategy>()
        .to_value()
}

#[test]
fn rollout_strategy_schema_defaults() {
    let s = rollout_schema();
    assert_eq!(schema_at(&s, "type")["default"], json!("All"));
    assert_eq!(
        schema_at(&s, "type")["enum"],
        json!(["All", "Progressive", "ProgressivePerGroup"])
    );
    for strategy in ["all", "progressive", "progressivePerGroup"] {
        let deadline = schema_at(&s, &format!("{strategy}.progressDeadline"));
        assert_eq!(deadline["default"], json!("None"));
        assert_eq!(deadline["pattern"], json!("^(([0-9])+[h|m|s])|None$"));
        assert_eq!(
            schema_at(&s, &format!("{strategy}.minSuccessTime"))["default"],
            json!("0")
        );
        let max_failures = schema_at(&s, &format!("{strategy}.maxFailures"));
        assert_eq!(max_failures["default"], json!(0));
        assert_eq!(
            max_failures["pattern"],
            json!("^((100|[0-9]{1,2})%|[0-9]+)$")
        );
    }
    assert!(
        schema_at(&s, "progressive.maxConcurrency")
            .get("default")
            .is_none()
    );
    assert!(
        schema_at(
            &s,
            "progressivePerGroup.mandatoryDecisionGroups.[].groupIndex"
        )
        .get("type")
        .is_some()
    );
    assert!(
        s["properties"]["all"]["properties"]
            .get("mandatoryDecisionGroups")
            .is_none()
    );
    assert!(
        s["properties"]["progressivePerGroup"]["properties"]
            .get("maxConcurrency")
            .is_none()
    );
}

#[test]
fn rollout_strategy_round_trips() {
    let cases = [
        json!({}),
        json!({"type": "All", "all": {"progressDeadline": "None"}}),
        json!({"type": "All", "all": {"minSuccessTime": "0s", "progressDeadline": "10m", "maxFailures": 0}}),
        json!({
            "type": "Progressive",
            "progressive": {
                "minSuccessTime": "5m",
                "progressDeadline": "1h",
                "maxFailures": "10%",
                "mandatoryDecisionGroups": [{"groupName": "canary"}, {"groupIndex": 1}, {"groupIndex": 0}],
                "maxConcurrency": 2
            }
        }),
        json!({
            "type": "ProgressivePerGroup",
            "progressivePerGroup": {
                "maxFailures": 1,
                "mandatoryDecisionGroups": [{"groupName": "canary", "groupIndex": 0}]
            }
        }),
    ];
    for case in cases {
        let typed: v1alpha1::RolloutStrategy = serde_json::from_value(case.clone()).unwrap();
        assert_eq!(serde_json::to_value(&typed).unwrap(), case);
    }
    let typed: v1alpha1::RolloutStrategy = serde_json::from_value(json!({
        "type": "Progressive",
        "progressive": {"maxConcurrency": "50%", "mandatoryDecisionGroups": [{"groupName": "a"}]}
    }))
    .unwrap();
    let progressive = typed.progressive.unwrap();
    assert_eq!(
        progressive.max_concurrency,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String("50%".into()))
    );
    assert_eq!(
        progressive
            .mandatory_decision_groups
            .mandatory_decision_groups[0]
            .group_name,
        "a"
    );
    assert_eq!(typed.type_, Some(v1alpha1::RolloutType::Progressive));
}

#[test]
fn well_known_names() {
    use ocm_api::cluster::names;
    assert_eq!(
        names::labels::CLUSTER_SET,
        "cluster.open-cluster-management.io/clusterset"
    );
    assert_eq!(names::claims::RESERVED.len(), 5);
    assert_eq!(names::MAX_CLUSTER_DECISIONS, 100);
    assert_eq!(
        names::conditions::placement_misconfigured::SUCCEED_CONFIGURED,
        "Succeedconfigured"
    );
}
