//! `work.open-cluster-management.io`: typed round trips of every example, and the schema
//! defaults the reference names.

use crate::common;

use common::{assert_roundtrip, schema_at, schema_for, valid_examples_of_group};
use ocm_api::work::{v1, v1alpha1};
use serde_json::json;

const V1: &str = "work.open-cluster-management.io/v1";
const V1ALPHA1: &str = "work.open-cluster-management.io/v1alpha1";

#[test]
fn every_example_round_trips_through_its_type() {
    let examples = valid_examples_of_group(ocm_api::work::GROUP);
    assert!(!examples.is_empty());
    for ex in &examples {
        match (ex.api_version(), ex.kind()) {
            (V1, "ManifestWork") => assert_roundtrip::<v1::ManifestWork>(ex),
            (V1, "AppliedManifestWork") => assert_roundtrip::<v1::AppliedManifestWork>(ex),
            (V1ALPHA1, "ManifestWorkReplicaSet") => {
                assert_roundtrip::<v1alpha1::ManifestWorkReplicaSet>(ex)
            }
            (v, k) => panic!("{}: no typed round trip for {v} {k}", ex.origin),
        }
    }
}

#[test]
fn manifest_work_schema_defaults() {
    let s = schema_for(V1, "ManifestWork").unwrap();
    assert_eq!(
        schema_at(&s, "spec.deleteOption.propagationPolicy")["default"],
        json!("Foreground")
    );
    assert_eq!(
        schema_at(&s, "spec.deleteOption.propagationPolicy")["enum"],
        json!(["Foreground", "Orphan", "SelectivelyOrphan"])
    );
    let strategy = schema_at(&s, "spec.manifestConfigs.[].updateStrategy");
    assert_eq!(strategy["properties"]["type"]["default"], json!("Update"));
    assert_eq!(
        strategy["properties"]["type"]["enum"],
        json!(["Update", "CreateOnly", "ServerSideApply", "ReadOnly"])
    );
    assert_eq!(strategy["required"], json!(["type"]));
    let ssa = schema_at(
        &s,
        "spec.manifestConfigs.[].updateStrategy.serverSideApply.fieldManager",
    );
    assert_eq!(
        ssa["default"],
        json!(ocm_api::work::names::DEFAULT_FIELD_MANAGER)
    );
    assert_eq!(ssa["pattern"], json!("^work-agent"));
    assert_eq!(
        schema_at(
            &s,
            "spec.manifestConfigs.[].updateStrategy.serverSideApply.ignoreFields.[].condition"
        )["default"],
        json!("OnSpokePresent")
    );
    assert_eq!(
        schema_at(&s, "spec.manifestConfigs.[].feedbackScrapeType")["default"],
        json!("Poll")
    );
    assert_eq!(
        schema_at(&s, "spec.manifestConfigs.[].conditionRules")["x-kubernetes-list-map-keys"],
        json!(["condition"])
    );
    let jsonraw = schema_at(
        &s,
        "status.resourceStatus.manifests.[].statusFeedback.values.[].fieldValue.jsonRaw",
    );
    assert_eq!(
        jsonraw["maxLength"],
        json!(ocm_api::work::names::FEEDBACK_JSON_RAW_MAX_LENGTH)
    );
    // Embedded manifests keep every field.
    let manifest = schema_at(&s, "spec.workload.manifests.[]");
    assert_eq!(manifest["x-kubernetes-embedded-resource"], json!(true));
    assert_eq!(
        manifest["x-kubernetes-preserve-unknown-fields"],
        json!(true)
    );
}

#[test]
fn manifest_work_replica_set_schema_defaults() {
    let s = schema_for(V1ALPHA1, "ManifestWorkReplicaSet").unwrap();
    assert_eq!(
        schema_at(&s, "spec.cascadeDeletionPolicy")["default"],
        json!("Background")
    );
    assert_eq!(
        schema_at(&s, "spec.cascadeDeletionPolicy")["enum"],
        json!(["Background", "Foreground"])
    );
    assert_eq!(schema_at(&s, "spec.placementRefs")["minItems"], json!(1));
    assert_eq!(
        schema_at(&s, "spec.placementRefs.[].rolloutStrategy")["default"],
        json!({"type": "All", "all": {"progressDeadline": "None"}})
    );
    // The template is the ManifestWork spec, defaults included.
    assert_eq!(
        schema_at(
            &s,
            "spec.manifestWorkTemplate.deleteOption.propagationPolicy"
        )["default"],
        json!("Foreground")
    );
}

#[test]
fn crds_are_installed_where_the_kinds_live() {
    let hub: Vec<_> = ocm_api::work::hub_crds()
        .into_iter()
        .map(|c| (c.spec.names.kind, c.spec.scope))
        .collect();
    assert!(hub.contains(&("ManifestWork".into(), "Namespaced".into())));
    assert!(hub.contains(&("ManifestWorkReplicaSet".into(), "Namespaced".into())));
    let klusterlet: Vec<_> = ocm_api::work::klusterlet_crds()
        .into_iter()
        .map(|c| (c.spec.names.kind, c.spec.scope))
        .collect();
    assert_eq!(
        klusterlet,
        vec![("AppliedManifestWork".to_string(), "Cluster".to_string())]
    );
}

#[test]
fn well_known_status_names_by_kind() {
    use ocm_api::work::names::well_known_status as wks;
    let names = |g, v, k| -> Vec<&str> { wks::for_kind(g, v, k).iter().map(|(n, _)| *n).collect() };
    assert_eq!(
        names("apps", "v1", "Deployment"),
        ["ReadyReplicas", "Replicas", "AvailableReplicas"]
    );
    assert_eq!(names("", "v1", "Pod"), ["PodReady", "PodPhase"]);
    assert!(names("", "v1", "ConfigMap").is_empty());
}
