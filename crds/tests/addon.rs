//! `addon.open-cluster-management.io`: typed round trips of every example, the schema
//! defaults and CRD shape the reference names, and version conversion of the examples.

use crate::common;

use common::{Example, assert_roundtrip, schema_at, schema_for, valid_examples_of_group, validate};
use ocm_api::addon::conversion::{V1ALPHA1, V1BETA1, convert};
use ocm_api::addon::{v1alpha1, v1beta1};
use serde_json::{Value, json};

#[test]
fn every_example_round_trips_through_its_type() {
    let examples = valid_examples_of_group(ocm_api::addon::GROUP);
    assert!(!examples.is_empty());
    for ex in &examples {
        match (ex.api_version(), ex.kind()) {
            (V1ALPHA1, "ClusterManagementAddOn") => {
                assert_roundtrip::<v1alpha1::ClusterManagementAddOn>(ex)
            }
            (V1BETA1, "ClusterManagementAddOn") => {
                assert_roundtrip::<v1beta1::ClusterManagementAddOn>(ex)
            }
            (V1ALPHA1, "ManagedClusterAddOn") => {
                assert_roundtrip::<v1alpha1::ManagedClusterAddOn>(ex)
            }
            (V1BETA1, "ManagedClusterAddOn") => {
                assert_roundtrip::<v1beta1::ManagedClusterAddOn>(ex)
            }
            (V1ALPHA1, "AddOnDeploymentConfig") => {
                assert_roundtrip::<v1alpha1::AddOnDeploymentConfig>(ex)
            }
            (V1BETA1, "AddOnDeploymentConfig") => {
                assert_roundtrip::<v1beta1::AddOnDeploymentConfig>(ex)
            }
            (V1ALPHA1, "AddOnTemplate") => assert_roundtrip::<v1alpha1::AddOnTemplate>(ex),
            (v, k) => panic!("{}: no typed round trip for {v} {k}", ex.origin),
        }
    }
}

fn schema(version: &str, kind: &str) -> Value {
    schema_for(version, kind).unwrap_or_else(|| panic!("no CRD serves {version} {kind}"))
}

#[test]
fn cluster_management_addon_schema_defaults() {
    for version in [V1ALPHA1, V1BETA1] {
        let s = schema(version, "ClusterManagementAddOn");
        assert_eq!(
            schema_at(&s, "spec.installStrategy")["default"],
            json!({"type": "Manual"})
        );
        assert_eq!(
            schema_at(&s, "spec.installStrategy.type")["default"],
            json!("Manual")
        );
        assert_eq!(
            schema_at(&s, "spec.installStrategy.type")["enum"],
            json!(["Manual", "Placements"])
        );
        let placement = schema_at(&s, "spec.installStrategy.placements.[]");
        assert_eq!(
            schema_at(placement, "rolloutStrategy")["default"],
            json!({"type": "All"})
        );
        assert_eq!(
            schema_at(placement, "rolloutStrategy.type")["enum"],
            json!(["All", "Progressive", "ProgressivePerGroup"])
        );
        assert_eq!(
            schema_at(placement, "configs.[].group")["default"],
            json!("")
        );
        assert_eq!(
            schema_at(&s, "spec.installStrategy.placements")["x-kubernetes-list-map-keys"],
            json!(["namespace", "name"])
        );
    }
    let beta = schema(V1BETA1, "ClusterManagementAddOn");
    assert_eq!(
        schema_at(&beta, "spec.defaultConfigs.[].group")["default"],
        json!("")
    );
    assert_eq!(
        schema_at(&beta, "spec.defaultConfigs")["x-kubernetes-list-map-keys"],
        json!(["group", "resource"])
    );
    assert!(schema_at(&beta, "status.defaultConfigReferences").is_object());
    let alpha = schema(V1ALPHA1, "ClusterManagementAddOn");
    assert_eq!(
        schema_at(&alpha, "spec.supportedConfigs.[].group")["default"],
        json!("")
    );
    // v1alpha1 spells this status field with a lower-case c.
    assert!(schema_at(&alpha, "status.defaultconfigReferences").is_object());
    assert!(alpha["properties"]["status"]["properties"]["defaultConfigReferences"].is_null());
}

#[test]
fn managed_cluster_addon_schema_defaults() {
    for version in [V1ALPHA1, V1BETA1] {
        let s = schema(version, "ManagedClusterAddOn");
        assert_eq!(
            schema_at(&s, "status.healthCheck.mode")["default"],
            json!("Lease")
        );
        assert_eq!(
            schema_at(&s, "status.healthCheck.mode")["enum"],
            json!(["Lease", "Customized"])
        );
        assert_eq!(schema_at(&s, "spec.configs.[].group")["default"], json!(""));
    }
    let alpha = schema(V1ALPHA1, "ManagedClusterAddOn");
    let install_namespace = schema_at(&alpha, "spec.installNamespace");
    assert_eq!(
        install_namespace["default"],
        json!(ocm_api::addon::names::DEFAULT_INSTALL_NAMESPACE)
    );
    assert_eq!(install_namespace["maxLength"], json!(63));
    assert_eq!(
        schema_at(&alpha, "status.kubeClientDriver")["enum"],
        json!(["csr", "token"])
    );
    assert!(schema_at(&alpha, "status.registrations.[].subject.organizationUnit").is_object());

    let beta = schema(V1BETA1, "ManagedClusterAddOn");
    assert!(beta["properties"]["spec"]["properties"]["installNamespace"].is_null());
    assert_eq!(
        schema_at(&beta, "status.registrations.[].type")["enum"],
        json!(["kubeClient", "customSigner"])
    );
    assert_eq!(
        schema_at(&beta, "status.registrations.[].kubeClient.driver")["enum"],
        json!(["csr", "token"])
    );
    assert!(
        schema_at(
            &beta,
            "status.registrations.[].customSigner.subject.organizationUnits"
        )
        .is_object()
    );
}

#[test]
fn addon_deployment_config_schema_defaults() {
    let alpha = schema(V1ALPHA1, "AddOnDeploymentConfig");
    let beta = schema(V1BETA1, "AddOnDeploymentConfig");
    assert_eq!(alpha["properties"]["spec"], beta["properties"]["spec"]);
    let ns = schema_at(&alpha, "spec.agentInstallNamespace");
    assert_eq!(
        ns["default"],
        json!(ocm_api::addon::names::DEFAULT_INSTALL_NAMESPACE)
    );
    assert_eq!(ns["pattern"], json!("^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$"));
    assert_eq!(
        schema_at(&alpha, "spec.customizedVariables")["x-kubernetes-list-map-keys"],
        json!(["name"])
    );
    assert_eq!(
        schema_at(&alpha, "spec.resourceRequirements")["x-kubernetes-list-map-keys"],
        json!(["containerID"])
    );
}

#[test]
fn addon_template_schema() {
    let s = schema(V1ALPHA1, "AddOnTemplate");
    assert_eq!(
        schema_at(&s, "spec")["required"],
        json!(["addonName", "agentSpec"])
    );
    assert_eq!(
        schema_at(&s, "spec.registration.[].type")["enum"],
        json!(["KubeClient", "CustomSigner"])
    );
    assert_eq!(
        schema_at(&s, "spec.registration.[].kubeClient.hubPermissions.[].type")["enum"],
        json!(["CurrentCluster", "SingleNamespace"])
    );
    assert!(schema_at(&s, "spec.registration.[].customSigner.signingCA").is_object());
    assert!(schema_for(V1BETA1, "AddOnTemplate").is_none());
}

#[test]
fn crds_have_upstream_names_versions_and_columns() {
    let crds = ocm_api::addon::hub_crds();
    let find = |kind: &str| {
        crds.iter()
            .find(|c| c.spec.names.kind == kind)
            .unwrap_or_else(|| panic!("no CRD for {kind}"))
    };
    let columns = |kind: &str, version: &str| -> Vec<String> {
        find(kind)
            .spec
            .versions
            .iter()
            .find(|v| v.name == version)
            .and_then(|v| v.additional_printer_columns.as_ref())
            .map(|cols| cols.iter().map(|c| c.name.clone()).collect())
            .unwrap_or_default()
    };
    for (kind, scope, short) in [
        ("ClusterManagementAddOn", "Cluster", vec!["cma", "cmas"]),
        ("ManagedClusterAddOn", "Namespaced", vec!["mca", "mcas"]),
        ("AddOnDeploymentConfig", "Namespaced", vec![]),
        ("AddOnTemplate", "Cluster", vec![]),
    ] {
        let crd = find(kind);
        assert_eq!(crd.spec.scope, scope, "{kind}");
        assert_eq!(
            crd.spec.names.short_names.clone().unwrap_or_default(),
            short,
            "{kind}"
        );
        let versions: Vec<(&str, bool)> = crd
            .spec
            .versions
            .iter()
            .map(|v| (v.name.as_str(), v.storage))
            .collect();
        let expected = if kind == "AddOnTemplate" {
            vec![("v1alpha1", true)]
        } else {
            vec![("v1alpha1", true), ("v1beta1", false)]
        };
        assert_eq!(versions, expected, "{kind}");
    }
    assert_eq!(
        columns("ClusterManagementAddOn", "v1alpha1"),
        ["DISPLAY NAME", "CRD NAME"]
    );
    assert_eq!(
        columns("ClusterManagementAddOn", "v1beta1"),
        ["DISPLAY NAME"]
    );
    for version in ["v1alpha1", "v1beta1"] {
        assert_eq!(
            columns("ManagedClusterAddOn", version),
            ["Available", "Degraded", "Progressing"]
        );
        assert!(columns("AddOnDeploymentConfig", version).is_empty());
    }
    assert_eq!(columns("AddOnTemplate", "v1alpha1"), ["ADDON NAME"]);
}

/// Removes the fields v1beta1 has no place for (documented losses) from a v1alpha1 object.
fn without_v1alpha1_only_fields(mut object: Value) -> Value {
    for part in ["spec", "status"] {
        if let Some(fields) = object.get_mut(part).and_then(Value::as_object_mut) {
            fields.remove("addOnConfiguration");
        }
    }
    object
}

/// Every CMA and MCA example converts to the other served version, the result is valid
/// there, and converting back gives the example again (minus documented losses).
#[test]
fn examples_convert_both_ways() {
    let mut converted = 0;
    for ex in valid_examples_of_group(ocm_api::addon::GROUP) {
        let (there, expected_back) = match ex.api_version() {
            V1ALPHA1 => (V1BETA1, without_v1alpha1_only_fields(ex.value.clone())),
            _ => (V1ALPHA1, ex.value.clone()),
        };
        if ex.kind() == "AddOnTemplate" {
            assert!(convert(ex.value.clone(), there).is_err(), "{}", ex.origin);
            continue;
        }
        let other = convert(ex.value.clone(), there)
            .unwrap_or_else(|e| panic!("{}: converting to {there}: {e}", ex.origin));
        let other_ex = Example {
            origin: format!("{} as {there}", ex.origin),
            value: other.clone(),
        };
        if let Err(errors) = validate(&other_ex) {
            panic!("{}: invalid: {}", other_ex.origin, errors.join("; "));
        }
        let back = convert(other, ex.api_version())
            .unwrap_or_else(|e| panic!("{}: converting back: {e}", ex.origin));
        assert_eq!(back, expected_back, "{}: round trip changed it", ex.origin);
        converted += 1;
    }
    assert!(converted >= 8, "only {converted} examples converted");
}
