//! `operator.open-cluster-management.io`: typed round trips of every example, and the schema
//! defaults, enums and limits the reference names for ClusterManager and Klusterlet.

use crate::common;

use common::{assert_roundtrip, schema_at, schema_for, valid_examples_of_group};
use ocm_api::operator::v1;
use serde_json::{Value, json};

const V1: &str = "operator.open-cluster-management.io/v1";

fn cluster_manager() -> Value {
    schema_for(V1, "ClusterManager").unwrap_or_else(|| panic!("no ClusterManager CRD"))
}

fn klusterlet() -> Value {
    schema_for(V1, "Klusterlet").unwrap_or_else(|| panic!("no Klusterlet CRD"))
}

#[test]
fn every_example_round_trips_through_its_type() {
    let examples = valid_examples_of_group(ocm_api::operator::GROUP);
    assert!(!examples.is_empty());
    for ex in &examples {
        match (ex.api_version(), ex.kind()) {
            ("operator.open-cluster-management.io/v1", "ClusterManager") => {
                assert_roundtrip::<v1::ClusterManager>(ex)
            }
            ("operator.open-cluster-management.io/v1", "Klusterlet") => {
                assert_roundtrip::<v1::Klusterlet>(ex)
            }
            (v, k) => panic!("{}: no typed round trip for {v} {k}", ex.origin),
        }
    }
}

#[test]
fn crds_are_registered_where_they_run() {
    let name = |c: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition| {
        c.metadata.name.clone().unwrap_or_default()
    };
    let hub: Vec<String> = ocm_api::crds::hub().iter().map(name).collect();
    let agent: Vec<String> = ocm_api::crds::klusterlet().iter().map(name).collect();
    assert!(hub.contains(&"clustermanagers.operator.open-cluster-management.io".to_string()));
    assert!(!hub.contains(&"klusterlets.operator.open-cluster-management.io".to_string()));
    assert!(agent.contains(&"klusterlets.operator.open-cluster-management.io".to_string()));
    assert!(!agent.contains(&"clustermanagers.operator.open-cluster-management.io".to_string()));
    for crd in ocm_api::crds::hub()
        .into_iter()
        .chain(ocm_api::crds::klusterlet())
        .filter(|c| c.spec.group == ocm_api::operator::GROUP)
    {
        assert_eq!(crd.spec.scope, "Cluster");
        let v = &crd.spec.versions[0];
        assert_eq!((v.name.as_str(), v.served, v.storage), ("v1", true, true));
        assert!(
            v.subresources
                .as_ref()
                .and_then(|s| s.status.as_ref())
                .is_some()
        );
        assert!(v.additional_printer_columns.is_none());
    }
}

#[test]
fn cluster_manager_image_defaults() {
    let s = cluster_manager();
    for (field, image) in [
        ("registrationImagePullSpec", "registration"),
        ("workImagePullSpec", "work"),
        ("placementImagePullSpec", "placement"),
        ("addOnManagerImagePullSpec", "addon-manager"),
    ] {
        assert_eq!(
            schema_at(&s, &format!("spec.{field}"))["default"],
            json!(format!("quay.io/open-cluster-management/{image}")),
            "{field}"
        );
    }
}

#[test]
fn cluster_manager_deploy_option_defaults() {
    let s = cluster_manager();
    assert_eq!(
        schema_at(&s, "spec")["default"],
        json!({"deployOption": {"mode": "Default"}})
    );
    assert_eq!(
        schema_at(&s, "spec.deployOption")["default"],
        json!({"mode": "Default"})
    );
    let mode = schema_at(&s, "spec.deployOption.mode");
    assert_eq!(mode["default"], json!("Default"));
    assert_eq!(mode["enum"], json!(["Default", "Hosted"]));
    assert_eq!(
        schema_at(&s, "spec.deployOption")["required"],
        json!(["mode"])
    );

    let bind = schema_at(
        &s,
        "spec.deployOption.default.registrationWebhookConfiguration.bindConfiguration",
    );
    assert_eq!(bind["properties"]["port"]["default"], json!(9443));
    assert_eq!(
        bind["properties"]["healthProbePort"]["default"],
        json!(8000)
    );
    assert_eq!(bind["properties"]["metricsPort"]["default"], json!(8080));
    assert_eq!(
        bind["properties"]["port"]["maximum"].as_f64(),
        Some(65535.0)
    );
    let hosted = schema_at(&s, "spec.deployOption.hosted.workWebhookConfiguration");
    assert_eq!(hosted["properties"]["port"]["default"], json!(443));
    assert_eq!(hosted["required"], json!(["address"]));
}

#[test]
fn cluster_manager_work_and_registration_defaults() {
    let s = cluster_manager();
    assert_eq!(
        schema_at(&s, "spec.workConfiguration")["default"],
        json!({"workDriver": "kube"})
    );
    let driver = schema_at(&s, "spec.workConfiguration.workDriver");
    assert_eq!(driver["default"], json!("kube"));
    assert_eq!(driver["enum"], json!(["kube", "mqtt", "grpc"]));

    let gate = schema_at(&s, "spec.registrationConfiguration.featureGates.[].mode");
    assert_eq!(gate["default"], json!("Disable"));
    assert_eq!(gate["enum"], json!(["Enable", "Disable"]));

    let drivers = schema_at(&s, "spec.registrationConfiguration.registrationDrivers");
    assert_eq!(drivers["x-kubernetes-list-type"], json!("map"));
    assert_eq!(drivers["x-kubernetes-list-map-keys"], json!(["authType"]));
    let auth = schema_at(
        &s,
        "spec.registrationConfiguration.registrationDrivers.[].authType",
    );
    assert_eq!(auth["default"], json!("csr"));
    assert_eq!(auth["enum"], json!(["csr", "awsirsa", "grpc"]));

    let qos = schema_at(&s, "spec.resourceRequirement.type");
    assert_eq!(qos["default"], json!("Default"));
    assert_eq!(
        qos["enum"],
        json!(["Default", "BestEffort", "ResourceRequirement"])
    );

    let exposure = schema_at(&s, "spec.serverConfiguration.endpointsExposure.[]");
    assert_eq!(exposure["properties"]["protocol"]["default"], json!("grpc"));
    assert_eq!(
        schema_at(
            &s,
            "spec.serverConfiguration.endpointsExposure.[].grpc.type"
        )["default"],
        json!("hostname")
    );
}

#[test]
fn status_namespace_has_no_default() {
    for s in [cluster_manager(), klusterlet()] {
        assert!(
            schema_at(&s, "status.relatedResources.[].namespace")
                .get("default")
                .is_none()
        );
        assert!(
            schema_at(&s, "status.generations.[].namespace")
                .get("default")
                .is_none()
        );
        assert_eq!(
            schema_at(&s, "status.conditions")["x-kubernetes-list-map-keys"],
            json!(["type"])
        );
    }
}

#[test]
fn klusterlet_spec_limits() {
    let s = klusterlet();
    let ns = schema_at(&s, "spec.namespace");
    assert_eq!(ns["maxLength"], json!(57));
    assert_eq!(
        ns["pattern"],
        json!("^open-cluster-management-[-a-z0-9]*[a-z0-9]$")
    );
    let name = schema_at(&s, "spec.clusterName");
    assert_eq!(name["maxLength"], json!(63));
    assert_eq!(name["pattern"], json!("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"));
    // Upstream leaves the Klusterlet deploy mode unchecked and without a default.
    let mode = schema_at(&s, "spec.deployOption.mode");
    assert!(mode.get("enum").is_none() && mode.get("default").is_none());
    assert_eq!(
        schema_at(&s, "spec.hubApiServerHostAlias")["required"],
        json!(["hostname", "ip"])
    );
}

#[test]
fn klusterlet_registration_defaults() {
    let s = klusterlet();
    let reg = "spec.registrationConfiguration";
    assert_eq!(
        schema_at(&s, &format!("{reg}.kubeAPIQPS"))["default"],
        json!(50)
    );
    assert_eq!(
        schema_at(&s, &format!("{reg}.kubeAPIBurst"))["default"],
        json!(100)
    );

    let bootstrap = schema_at(&s, &format!("{reg}.bootstrapKubeConfigs"));
    assert_eq!(bootstrap["properties"]["type"]["default"], json!("None"));
    assert_eq!(
        bootstrap["properties"]["type"]["enum"],
        json!(["None", "LocalSecrets"])
    );
    let local = schema_at(
        &s,
        &format!("{reg}.bootstrapKubeConfigs.localSecretsConfig"),
    );
    assert_eq!(local["required"], json!(["kubeConfigSecrets"]));
    let timeout = &local["properties"]["hubConnectionTimeoutSeconds"];
    assert_eq!(timeout["default"], json!(600));
    assert_eq!(timeout["minimum"].as_f64(), Some(180.0));
    // Upstream's Go marker for "at least two secrets" is misspelt (`minItems`), so its CRD does
    // not enforce it; neither does ours.
    assert!(
        local["properties"]["kubeConfigSecrets"]
            .get("minItems")
            .is_none()
    );

    let claims = schema_at(&s, &format!("{reg}.clusterClaimConfiguration"));
    assert_eq!(
        claims["properties"]["maxCustomClusterClaims"]["default"],
        json!(20)
    );
    assert_eq!(claims["required"], json!(["maxCustomClusterClaims"]));
    let suffixes = &claims["properties"]["reservedClusterClaimSuffixes"];
    assert_eq!(suffixes["maxItems"], json!(10));
    assert_eq!(suffixes["items"]["minLength"], json!(1));
    assert_eq!(suffixes["items"]["maxLength"], json!(64));

    let driver = schema_at(&s, &format!("{reg}.registrationDriver.authType"));
    assert_eq!(driver["default"], json!("csr"));
    assert_eq!(driver["enum"], json!(["csr", "awsirsa", "grpc"]));
    assert_eq!(
        schema_at(
            &s,
            &format!("{reg}.addOnKubeClientRegistrationDriver.authType")
        )["enum"],
        json!(["csr", "token"])
    );
}

#[test]
fn klusterlet_work_defaults() {
    let s = klusterlet();
    for (field, value) in [
        ("kubeAPIQPS", 50),
        ("kubeAPIBurst", 100),
        ("hubKubeAPIQPS", 50),
        ("hubKubeAPIBurst", 100),
    ] {
        assert_eq!(
            schema_at(&s, &format!("spec.workConfiguration.{field}"))["default"],
            json!(value),
            "{field}"
        );
    }
    for field in [
        "appliedManifestWorkEvictionGracePeriod",
        "statusSyncInterval",
    ] {
        assert_eq!(
            schema_at(&s, &format!("spec.workConfiguration.{field}"))["pattern"],
            json!("^([0-9]+(s|m|h))+$")
        );
    }
}
