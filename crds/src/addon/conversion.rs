//! Conversion of addon objects between `v1alpha1` (the storage version) and `v1beta1`.
//!
//! The mapping follows upstream OCM's conversion webhook field for field, so a client sees
//! the same object through either version as it would against upstream. Upstream converts
//! through v1alpha1 as the hub version; every pair of versions here is one step apart, so each
//! direction is a single function.
//!
//! [`convert`] is the entry point the API server calls with an object as JSON and the
//! `apiVersion` it wants. The typed functions below it do the actual work:
//!
//! - [`cma_v1alpha1_to_v1beta1`] / [`cma_v1beta1_to_v1alpha1`] for ClusterManagementAddOn,
//! - [`mca_v1alpha1_to_v1beta1`] / [`mca_v1beta1_to_v1alpha1`] for ManagedClusterAddOn.
//!
//! AddOnDeploymentConfig has the same schema in both versions; converting it only rewrites
//! `apiVersion`. AddOnTemplate is served in v1alpha1 only.
//!
//! # What survives a round trip
//!
//! `metadata` is copied unchanged (apart from the ManagedClusterAddOn annotation below), and
//! so is every field both versions share. Per field that differs:
//!
//! ClusterManagementAddOn
//!
//! | v1alpha1 | v1beta1 | v1alpha1 → v1beta1 → v1alpha1 |
//! |---|---|---|
//! | `spec.supportedConfigs[]{group, resource, defaultConfig{namespace, name}}` | `spec.defaultConfigs[]{group, resource, namespace, name}` | lossless: an entry without `defaultConfig` becomes one named [`RESERVED_NO_DEFAULT_CONFIG_NAME`], which turns back into "no default" |
//! | `spec.addOnConfiguration` (deprecated) | — | **lost** |
//! | `status.defaultconfigReferences` | `status.defaultConfigReferences` | lossless (only the JSON name differs) |
//!
//! ManagedClusterAddOn
//!
//! | v1alpha1 | v1beta1 | v1alpha1 → v1beta1 → v1alpha1 |
//! |---|---|---|
//! | `spec.installNamespace` (deprecated) | annotation [`V1ALPHA1_INSTALL_NAMESPACE`] | lossless: carried in the annotation, which is removed again in v1alpha1 |
//! | `status.addOnConfiguration` (deprecated) | — | **lost** |
//! | `status.configReferences[].namespace`, `.name` (deprecated) | — | restored from `desiredConfig.namespace` / `.name`; lossless when they equal those (the addon manager always writes them so), otherwise the values of `desiredConfig` win, and without `desiredConfig` they come back empty |
//! | `status.registrations[]` with signer `kubernetes.io/kube-apiserver-client` | `{type: kubeClient, kubeClient{subject{user, groups}}}` | lossless except `subject.organizationUnit`, which is **lost** |
//! | `status.registrations[]` with any other signer | `{type: customSigner, customSigner{signerName, subject{user, groups, organizationUnits}}}` | lossless (`organizationUnit` is renamed `organizationUnits`) |
//! | `status.kubeClientDriver` | `driver` of every `kubeClient` registration | lossless when there is a kube-apiserver-client registration, **lost** otherwise |
//!
//! In the other direction, v1beta1 → v1alpha1 → v1beta1 loses: a `customSigner` registration
//! whose signer is `kubernetes.io/kube-apiserver-client` (it comes back as `kubeClient`); a
//! `customSigner` registration without its `customSigner` block (it comes back with an empty
//! signer); and differing `driver`s of several `kubeClient` registrations (all get the first
//! one's).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use super::names::{
    KUBE_APISERVER_CLIENT_SIGNER, RESERVED_NO_DEFAULT_CONFIG_NAME,
    annotations::V1ALPHA1_INSTALL_NAMESPACE,
};
use super::{GROUP, v1alpha1, v1beta1};

/// Full `apiVersion` of the v1alpha1 addon kinds.
pub const V1ALPHA1: &str = "addon.open-cluster-management.io/v1alpha1";

/// Full `apiVersion` of the v1beta1 addon kinds.
pub const V1BETA1: &str = "addon.open-cluster-management.io/v1beta1";

/// Why an object could not be converted.
#[derive(Debug, thiserror::Error)]
pub enum ConversionError {
    /// The object is not a JSON object.
    #[error("object to convert is not a JSON object")]
    NotAnObject,
    /// `apiVersion` or `kind` is missing or not a string.
    #[error("object to convert has no string `{0}`")]
    MissingField(&'static str),
    /// The requested or the object's `apiVersion` is not a version of the addon group.
    #[error("{0:?} is not an apiVersion of {GROUP} (expected {V1ALPHA1} or {V1BETA1})")]
    UnknownVersion(String),
    /// The kind is not one of the addon group's kinds.
    #[error("kind {0:?} is not a kind of {GROUP}")]
    UnknownKind(String),
    /// The kind exists but not in that version.
    #[error("{kind} is not served in {api_version}")]
    NotServed {
        /// Kind of the object.
        kind: String,
        /// The version it is not served in.
        api_version: String,
    },
    /// The object does not match the schema of its version.
    #[error("decoding {kind} {api_version}: {source}")]
    Decode {
        /// Kind of the object.
        kind: String,
        /// Its `apiVersion`.
        api_version: String,
        /// What did not match.
        #[source]
        source: serde_json::Error,
    },
    /// The converted object could not be turned into JSON.
    #[error("encoding {kind} {api_version}: {source}")]
    Encode {
        /// Kind of the object.
        kind: String,
        /// The target `apiVersion`.
        api_version: String,
        /// Underlying error.
        #[source]
        source: serde_json::Error,
    },
}

/// Versions of the addon group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    V1alpha1,
    V1beta1,
}

impl Version {
    fn parse(api_version: &str) -> Option<Self> {
        match api_version {
            V1ALPHA1 => Some(Self::V1alpha1),
            V1BETA1 => Some(Self::V1beta1),
            _ => None,
        }
    }
}

/// Kinds of the addon group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    ClusterManagementAddOn,
    ManagedClusterAddOn,
    AddOnDeploymentConfig,
    AddOnTemplate,
}

impl Kind {
    fn parse(kind: &str) -> Option<Self> {
        match kind {
            "ClusterManagementAddOn" => Some(Self::ClusterManagementAddOn),
            "ManagedClusterAddOn" => Some(Self::ManagedClusterAddOn),
            "AddOnDeploymentConfig" => Some(Self::AddOnDeploymentConfig),
            "AddOnTemplate" => Some(Self::AddOnTemplate),
            _ => None,
        }
    }

    fn served_in(self, version: Version) -> bool {
        match self {
            Self::AddOnTemplate => version == Version::V1alpha1,
            _ => true,
        }
    }
}

/// Converts an addon object (JSON, as the API server holds it) to `to_api_version`
/// (`addon.open-cluster-management.io/v1alpha1` or `.../v1beta1`).
///
/// An object already in the target version is returned unchanged. ClusterManagementAddOn
/// and ManagedClusterAddOn are converted field by field as the [module docs](self) describe
/// (fields the types do not know are dropped, as the API server prunes them anyway);
/// AddOnDeploymentConfig only gets its `apiVersion` rewritten. Anything else — a non-object,
/// a missing `apiVersion` or `kind`, another group, an unknown kind or version, an object that
/// does not match its schema — is an error; this function never panics.
pub fn convert(object: Value, to_api_version: &str) -> Result<Value, ConversionError> {
    let target = Version::parse(to_api_version)
        .ok_or_else(|| ConversionError::UnknownVersion(to_api_version.to_string()))?;
    let fields = object.as_object().ok_or(ConversionError::NotAnObject)?;
    let api_version = fields
        .get("apiVersion")
        .and_then(Value::as_str)
        .ok_or(ConversionError::MissingField("apiVersion"))?;
    let kind_name = fields
        .get("kind")
        .and_then(Value::as_str)
        .ok_or(ConversionError::MissingField("kind"))?;
    let source = Version::parse(api_version)
        .ok_or_else(|| ConversionError::UnknownVersion(api_version.to_string()))?;
    let kind = Kind::parse(kind_name)
        .ok_or_else(|| ConversionError::UnknownKind(kind_name.to_string()))?;
    for (version, name) in [(source, api_version), (target, to_api_version)] {
        if !kind.served_in(version) {
            return Err(ConversionError::NotServed {
                kind: kind_name.to_string(),
                api_version: name.to_string(),
            });
        }
    }
    if source == target {
        return Ok(object);
    }
    let kind_name = kind_name.to_string();
    let source_version = api_version.to_string();
    match (kind, target) {
        (Kind::ClusterManagementAddOn, Version::V1beta1) => typed(
            object,
            &kind_name,
            &source_version,
            to_api_version,
            cma_v1alpha1_to_v1beta1,
        ),
        (Kind::ClusterManagementAddOn, Version::V1alpha1) => typed(
            object,
            &kind_name,
            &source_version,
            to_api_version,
            cma_v1beta1_to_v1alpha1,
        ),
        (Kind::ManagedClusterAddOn, Version::V1beta1) => typed(
            object,
            &kind_name,
            &source_version,
            to_api_version,
            mca_v1alpha1_to_v1beta1,
        ),
        (Kind::ManagedClusterAddOn, Version::V1alpha1) => typed(
            object,
            &kind_name,
            &source_version,
            to_api_version,
            mca_v1beta1_to_v1alpha1,
        ),
        (Kind::AddOnDeploymentConfig, _) => {
            let mut object = object;
            if let Some(fields) = object.as_object_mut() {
                fields.insert(
                    "apiVersion".to_string(),
                    Value::String(to_api_version.to_string()),
                );
            }
            Ok(object)
        }
        // Served in one version only, so the versions were equal and it returned above.
        (Kind::AddOnTemplate, _) => Err(ConversionError::NotServed {
            kind: kind_name,
            api_version: to_api_version.to_string(),
        }),
    }
}

/// Decodes `object` as `S`, converts it with `f` and encodes the result.
fn typed<S, T>(
    object: Value,
    kind: &str,
    from: &str,
    to: &str,
    f: fn(&S) -> T,
) -> Result<Value, ConversionError>
where
    S: DeserializeOwned,
    T: Serialize,
{
    let source: S = serde_json::from_value(object).map_err(|source| ConversionError::Decode {
        kind: kind.to_string(),
        api_version: from.to_string(),
        source,
    })?;
    serde_json::to_value(f(&source)).map_err(|source| ConversionError::Encode {
        kind: kind.to_string(),
        api_version: to.to_string(),
        source,
    })
}

// --- ClusterManagementAddOn ------------------------------------------------------------------

/// ClusterManagementAddOn v1alpha1 → v1beta1.
///
/// - `spec.addOnMeta`, `spec.installStrategy` (type, placements with their configs and
///   rollout strategies) and the whole status: copied.
/// - `spec.supportedConfigs` → `spec.defaultConfigs`: group and resource copied, the
///   `defaultConfig` namespace and name moved up; an entry without `defaultConfig` gets the
///   name [`RESERVED_NO_DEFAULT_CONFIG_NAME`] so the entry (the supported kind) survives.
/// - `spec.addOnConfiguration`: dropped (no v1beta1 field).
pub fn cma_v1alpha1_to_v1beta1(
    cma: &v1alpha1::ClusterManagementAddOn,
) -> v1beta1::ClusterManagementAddOn {
    let spec = &cma.spec;
    v1beta1::ClusterManagementAddOn {
        metadata: cma.metadata.clone(),
        spec: v1beta1::ClusterManagementAddOnSpec {
            add_on_meta: spec.add_on_meta.clone(),
            default_configs: spec
                .supported_configs
                .iter()
                .map(|c| {
                    let (namespace, name) = match &c.default_config {
                        Some(d) => (d.namespace.clone(), d.name.clone()),
                        None => (String::new(), RESERVED_NO_DEFAULT_CONFIG_NAME.to_string()),
                    };
                    v1beta1::AddOnConfig {
                        group: c.group.clone(),
                        resource: c.resource.clone(),
                        namespace,
                        name,
                    }
                })
                .collect(),
            install_strategy: spec.install_strategy.clone(),
        },
        status: cma
            .status
            .as_ref()
            .map(|s| v1beta1::ClusterManagementAddOnStatus {
                default_config_references: s.default_config_references.clone(),
                install_progressions: s.install_progressions.clone(),
            }),
    }
}

/// ClusterManagementAddOn v1beta1 → v1alpha1.
///
/// - `spec.addOnMeta`, `spec.installStrategy` and the whole status: copied.
/// - `spec.defaultConfigs` → `spec.supportedConfigs`: group and resource copied; namespace
///   and name become `defaultConfig`, unless the name is empty or
///   [`RESERVED_NO_DEFAULT_CONFIG_NAME`], which means no default config.
/// - `spec.addOnConfiguration`: left unset.
pub fn cma_v1beta1_to_v1alpha1(
    cma: &v1beta1::ClusterManagementAddOn,
) -> v1alpha1::ClusterManagementAddOn {
    let spec = &cma.spec;
    v1alpha1::ClusterManagementAddOn {
        metadata: cma.metadata.clone(),
        spec: v1alpha1::ClusterManagementAddOnSpec {
            add_on_meta: spec.add_on_meta.clone(),
            add_on_configuration: None,
            supported_configs: spec
                .default_configs
                .iter()
                .map(|c| v1alpha1::ConfigMeta {
                    group: c.group.clone(),
                    resource: c.resource.clone(),
                    default_config: (!c.name.is_empty()
                        && c.name != RESERVED_NO_DEFAULT_CONFIG_NAME)
                        .then(|| v1alpha1::ConfigReferent {
                            namespace: c.namespace.clone(),
                            name: c.name.clone(),
                        }),
                })
                .collect(),
            install_strategy: spec.install_strategy.clone(),
        },
        status: cma
            .status
            .as_ref()
            .map(|s| v1alpha1::ClusterManagementAddOnStatus {
                default_config_references: s.default_config_references.clone(),
                install_progressions: s.install_progressions.clone(),
            }),
    }
}

// --- ManagedClusterAddOn ---------------------------------------------------------------------

/// ManagedClusterAddOn v1alpha1 → v1beta1.
///
/// - `spec.installNamespace`: moved to the annotation [`V1ALPHA1_INSTALL_NAMESPACE`] when set
///   (other annotations are kept).
/// - `spec.configs`, and status conditions, relatedObjects, addOnMeta, supportedConfigs,
///   namespace, healthCheck: copied.
/// - `status.configReferences[]`: group, resource, lastObservedGeneration, desiredConfig and
///   lastAppliedConfig copied; the deprecated namespace and name dropped.
/// - `status.registrations[]`: signer `kubernetes.io/kube-apiserver-client` becomes a
///   `kubeClient` registration with the subject's user and groups (organization units are
///   dropped); any other signer becomes a `customSigner` registration with the full subject.
/// - `status.kubeClientDriver`: set as `driver` on every `kubeClient` registration.
/// - `status.addOnConfiguration`: dropped.
pub fn mca_v1alpha1_to_v1beta1(
    mca: &v1alpha1::ManagedClusterAddOn,
) -> v1beta1::ManagedClusterAddOn {
    let mut metadata = mca.metadata.clone();
    if let Some(ns) = mca
        .spec
        .install_namespace
        .as_deref()
        .filter(|ns| !ns.is_empty())
    {
        metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(V1ALPHA1_INSTALL_NAMESPACE.to_string(), ns.to_string());
    }
    v1beta1::ManagedClusterAddOn {
        metadata,
        spec: v1beta1::ManagedClusterAddOnSpec {
            configs: mca.spec.configs.clone(),
        },
        status: mca.status.as_ref().map(|s| {
            let driver = s.kube_client_driver;
            v1beta1::ManagedClusterAddOnStatus {
                conditions: s.conditions.clone(),
                related_objects: s.related_objects.clone(),
                add_on_meta: s.add_on_meta.clone(),
                supported_configs: s.supported_configs.clone(),
                config_references: s
                    .config_references
                    .iter()
                    .map(|r| v1beta1::ConfigReference {
                        group: r.group.clone(),
                        resource: r.resource.clone(),
                        last_observed_generation: r.last_observed_generation,
                        desired_config: r.desired_config.clone(),
                        last_applied_config: r.last_applied_config.clone(),
                    })
                    .collect(),
                namespace: s.namespace.clone(),
                registrations: s
                    .registrations
                    .iter()
                    .map(|r| registration_to_v1beta1(r, driver))
                    .collect(),
                health_check: s.health_check.clone(),
            }
        }),
    }
}

/// ManagedClusterAddOn v1beta1 → v1alpha1.
///
/// - annotation [`V1ALPHA1_INSTALL_NAMESPACE`]: removed and turned into
///   `spec.installNamespace` (left unset without the annotation).
/// - `spec.configs`, and status conditions, relatedObjects, addOnMeta, supportedConfigs,
///   namespace, healthCheck: copied.
/// - `status.configReferences[]`: copied; the deprecated namespace and name are filled from
///   `desiredConfig` (empty without one).
/// - `status.registrations[]`: `kubeClient` becomes signer `kubernetes.io/kube-apiserver-client`
///   with the subject's user and groups; `customSigner` becomes its signer and subject.
/// - `status.kubeClientDriver`: the `driver` of the first `kubeClient` registration that has
///   a `kubeClient` block.
/// - `status.addOnConfiguration`: left unset.
pub fn mca_v1beta1_to_v1alpha1(
    mca: &v1beta1::ManagedClusterAddOn,
) -> v1alpha1::ManagedClusterAddOn {
    let (metadata, install_namespace) = take_install_namespace(&mca.metadata);
    v1alpha1::ManagedClusterAddOn {
        metadata,
        spec: v1alpha1::ManagedClusterAddOnSpec {
            install_namespace,
            configs: mca.spec.configs.clone(),
        },
        status: mca
            .status
            .as_ref()
            .map(|s| v1alpha1::ManagedClusterAddOnStatus {
                conditions: s.conditions.clone(),
                related_objects: s.related_objects.clone(),
                add_on_meta: s.add_on_meta.clone(),
                add_on_configuration: None,
                supported_configs: s.supported_configs.clone(),
                config_references: s
                    .config_references
                    .iter()
                    .map(|r| {
                        let (namespace, name) = r
                            .desired_config
                            .as_ref()
                            .map(|d| (d.namespace.clone(), d.name.clone()))
                            .unwrap_or_default();
                        v1alpha1::ConfigReference {
                            group: r.group.clone(),
                            resource: r.resource.clone(),
                            namespace,
                            name,
                            last_observed_generation: r.last_observed_generation,
                            desired_config: r.desired_config.clone(),
                            last_applied_config: r.last_applied_config.clone(),
                        }
                    })
                    .collect(),
                namespace: s.namespace.clone(),
                registrations: s
                    .registrations
                    .iter()
                    .map(registration_to_v1alpha1)
                    .collect(),
                health_check: s.health_check.clone(),
                kube_client_driver: s
                    .registrations
                    .iter()
                    .find_map(|r| match (r.type_, &r.kube_client) {
                        (v1beta1::RegistrationType::KubeClient, Some(k)) => Some(k.driver),
                        _ => None,
                    })
                    .flatten(),
            }),
    }
}

/// Removes the install-namespace annotation from a copy of `metadata`; returns the copy and
/// the annotation's value (`None` when absent or empty). An annotation map left empty is
/// removed, as it would be absent on the wire.
fn take_install_namespace(metadata: &ObjectMeta) -> (ObjectMeta, Option<String>) {
    let mut metadata = metadata.clone();
    let value = metadata
        .annotations
        .as_mut()
        .and_then(|a| a.remove(V1ALPHA1_INSTALL_NAMESPACE));
    if metadata.annotations.as_ref().is_some_and(|a| a.is_empty()) && value.is_some() {
        metadata.annotations = None;
    }
    (metadata, value.filter(|v| !v.is_empty()))
}

fn registration_to_v1beta1(
    r: &v1alpha1::RegistrationConfig,
    driver: Option<v1beta1::KubeClientDriver>,
) -> v1beta1::RegistrationConfig {
    if r.signer_name == KUBE_APISERVER_CLIENT_SIGNER {
        v1beta1::RegistrationConfig {
            type_: v1beta1::RegistrationType::KubeClient,
            kube_client: Some(v1beta1::KubeClientConfig {
                subject: r.subject.as_ref().map(|s| v1beta1::KubeClientSubject {
                    user: s.user.clone(),
                    groups: s.groups.clone(),
                }),
                driver,
            }),
            custom_signer: None,
        }
    } else {
        v1beta1::RegistrationConfig {
            type_: v1beta1::RegistrationType::CustomSigner,
            kube_client: None,
            custom_signer: Some(v1beta1::CustomSignerConfig {
                signer_name: r.signer_name.clone(),
                subject: r.subject.as_ref().map(|s| v1beta1::Subject {
                    user: s.user.clone(),
                    groups: s.groups.clone(),
                    organization_units: s.organization_units.clone(),
                }),
            }),
        }
    }
}

fn registration_to_v1alpha1(r: &v1beta1::RegistrationConfig) -> v1alpha1::RegistrationConfig {
    match r.type_ {
        v1beta1::RegistrationType::KubeClient => v1alpha1::RegistrationConfig {
            signer_name: KUBE_APISERVER_CLIENT_SIGNER.to_string(),
            subject: r
                .kube_client
                .as_ref()
                .and_then(|k| k.subject.as_ref())
                .map(|s| v1alpha1::Subject {
                    user: s.user.clone(),
                    groups: s.groups.clone(),
                    organization_units: Vec::new(),
                }),
        },
        v1beta1::RegistrationType::CustomSigner => match &r.custom_signer {
            Some(c) => v1alpha1::RegistrationConfig {
                signer_name: c.signer_name.clone(),
                subject: c.subject.as_ref().map(|s| v1alpha1::Subject {
                    user: s.user.clone(),
                    groups: s.groups.clone(),
                    organization_units: s.organization_units.clone(),
                }),
            },
            None => v1alpha1::RegistrationConfig::default(),
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn alpha_cma() -> Value {
        json!({
            "apiVersion": V1ALPHA1,
            "kind": "ClusterManagementAddOn",
            "metadata": {
                "name": "application-manager",
                "annotations": {"addon.open-cluster-management.io/lifecycle": "addon-manager"},
                "resourceVersion": "1234",
                "uid": "0b6e5a8e-5c1d-4f4e-9a55-1c2d3e4f5a6b"
            },
            "spec": {
                "addOnMeta": {"displayName": "Application Manager", "description": "Syncs apps."},
                "supportedConfigs": [
                    {
                        "group": "addon.open-cluster-management.io",
                        "resource": "addondeploymentconfigs",
                        "defaultConfig": {"namespace": "open-cluster-management", "name": "defaults"}
                    },
                    {"group": "", "resource": "configmaps"},
                    {"resource": "secrets", "defaultConfig": {"name": "cluster-scoped"}}
                ],
                "installStrategy": {
                    "type": "Placements",
                    "placements": [
                        {
                            "namespace": "open-cluster-management-global-set",
                            "name": "canary",
                            "configs": [{
                                "group": "addon.open-cluster-management.io",
                                "resource": "addondeploymentconfigs",
                                "namespace": "open-cluster-management",
                                "name": "canary"
                            }],
                            "rolloutStrategy": {
                                "type": "Progressive",
                                "progressive": {
                                    "mandatoryDecisionGroups": [{"groupName": "canary-west"}, {"groupIndex": 1}],
                                    "maxConcurrency": "25%",
                                    "minSuccessTime": "5m",
                                    "progressDeadline": "10m",
                                    "maxFailures": 2
                                }
                            }
                        },
                        {"namespace": "default", "name": "all"}
                    ]
                }
            },
            "status": {
                "defaultconfigReferences": [{
                    "group": "addon.open-cluster-management.io",
                    "resource": "addondeploymentconfigs",
                    "desiredConfig": {"namespace": "open-cluster-management", "name": "defaults", "specHash": "abc"}
                }],
                "installProgressions": [{
                    "namespace": "open-cluster-management-global-set",
                    "name": "canary",
                    "configReferences": [{
                        "group": "addon.open-cluster-management.io",
                        "resource": "addondeploymentconfigs",
                        "desiredConfig": {"namespace": "open-cluster-management", "name": "canary", "specHash": "new"},
                        "lastKnownGoodConfig": {"namespace": "open-cluster-management", "name": "canary", "specHash": "old"},
                        "lastAppliedConfig": {"namespace": "open-cluster-management", "name": "canary", "specHash": "old"}
                    }],
                    "conditions": [{
                        "type": "Progressing",
                        "status": "True",
                        "reason": "Progressing",
                        "message": "2/5 progressing..., 0 failed 0 timeout.",
                        "lastTransitionTime": "2026-11-01T10:00:00Z",
                        "observedGeneration": 4
                    }]
                }]
            }
        })
    }

    fn alpha_mca() -> Value {
        json!({
            "apiVersion": V1ALPHA1,
            "kind": "ManagedClusterAddOn",
            "metadata": {
                "name": "application-manager",
                "namespace": "cluster1",
                "labels": {"open-cluster-management.io/addon-name": "application-manager"},
                "annotations": {"addon.open-cluster-management.io/hosting-cluster-name": "local-cluster"},
                "finalizers": ["addon.open-cluster-management.io/addon-pre-delete"]
            },
            "spec": {
                "installNamespace": "app-agent",
                "configs": [{
                    "group": "addon.open-cluster-management.io",
                    "resource": "addondeploymentconfigs",
                    "namespace": "cluster1",
                    "name": "app-cluster1"
                }]
            },
            "status": {
                "conditions": [
                    {
                        "type": "Available",
                        "status": "True",
                        "reason": "ManagedClusterAddOnLeaseUpdated",
                        "message": "available",
                        "lastTransitionTime": "2026-11-01T10:02:00Z"
                    },
                    {
                        "type": "RegistrationApplied",
                        "status": "True",
                        "reason": "SetPermissionApplied",
                        "message": "configured",
                        "lastTransitionTime": "2026-11-01T10:00:20Z"
                    }
                ],
                "relatedObjects": [
                    {"group": "addon.open-cluster-management.io", "resource": "clustermanagementaddons", "name": "application-manager"},
                    {"group": "work.open-cluster-management.io", "resource": "manifestworks", "namespace": "cluster1", "name": "addon-application-manager-deploy-0"}
                ],
                "addOnMeta": {"displayName": "Application Manager"},
                "supportedConfigs": [
                    {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs"},
                    {"group": "", "resource": "configmaps"}
                ],
                "configReferences": [{
                    "group": "addon.open-cluster-management.io",
                    "resource": "addondeploymentconfigs",
                    "namespace": "cluster1",
                    "name": "app-cluster1",
                    "lastObservedGeneration": 2,
                    "desiredConfig": {"namespace": "cluster1", "name": "app-cluster1", "specHash": "h1"},
                    "lastAppliedConfig": {"namespace": "cluster1", "name": "app-cluster1", "specHash": "h0"}
                }],
                "namespace": "app-agent",
                "registrations": [
                    {
                        "signerName": "kubernetes.io/kube-apiserver-client",
                        "subject": {
                            "user": "system:open-cluster-management:cluster:cluster1:addon:application-manager:agent:application-manager",
                            "groups": ["system:open-cluster-management:cluster:cluster1:addon:application-manager"]
                        }
                    },
                    {
                        "signerName": "example.com/app-signer",
                        "subject": {"user": "app", "groups": ["apps"], "organizationUnit": ["cluster1", "edge"]}
                    },
                    {"signerName": "kubernetes.io/kube-apiserver-client"}
                ],
                "healthCheck": {"mode": "Customized"},
                "kubeClientDriver": "token"
            }
        })
    }

    fn to_beta_and_back(object: Value) -> (Value, Value) {
        let beta = convert(object, V1BETA1).unwrap();
        assert_eq!(beta["apiVersion"], V1BETA1);
        let alpha = convert(beta.clone(), V1ALPHA1).unwrap();
        assert_eq!(alpha["apiVersion"], V1ALPHA1);
        (beta, alpha)
    }

    #[test]
    fn cma_v1alpha1_round_trip_keeps_every_shared_field() {
        let (beta, alpha) = to_beta_and_back(alpha_cma());
        assert_eq!(alpha, alpha_cma());
        assert_eq!(
            beta["spec"]["defaultConfigs"],
            json!([
                {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
                 "namespace": "open-cluster-management", "name": "defaults"},
                {"group": "", "resource": "configmaps", "name": RESERVED_NO_DEFAULT_CONFIG_NAME},
                {"resource": "secrets", "name": "cluster-scoped"}
            ])
        );
        assert!(beta["spec"].get("supportedConfigs").is_none());
        assert_eq!(
            beta["status"]["defaultConfigReferences"],
            alpha_cma()["status"]["defaultconfigReferences"]
        );
        assert_eq!(
            beta["spec"]["installStrategy"],
            alpha_cma()["spec"]["installStrategy"]
        );
    }

    #[test]
    fn cma_add_on_configuration_is_the_only_loss() {
        let mut original = alpha_cma();
        original["spec"]["addOnConfiguration"] = json!({"crdName": "configs.example.com", "crName": "default", "lastObservedGeneration": 3});
        let (beta, alpha) = to_beta_and_back(original);
        assert!(beta["spec"].get("addOnConfiguration").is_none());
        assert_eq!(alpha, alpha_cma());
    }

    #[test]
    fn cma_v1beta1_round_trip_is_lossless() {
        let beta = convert(alpha_cma(), V1BETA1).unwrap();
        let back = convert(convert(beta.clone(), V1ALPHA1).unwrap(), V1BETA1).unwrap();
        assert_eq!(back, beta);
    }

    #[test]
    fn mca_v1alpha1_round_trip_keeps_every_shared_field() {
        let (beta, alpha) = to_beta_and_back(alpha_mca());
        assert_eq!(alpha, alpha_mca());

        assert_eq!(
            beta["metadata"]["annotations"],
            json!({
                "addon.open-cluster-management.io/hosting-cluster-name": "local-cluster",
                "addon.open-cluster-management.io/v1alpha1-install-namespace": "app-agent"
            })
        );
        assert!(beta["spec"].get("installNamespace").is_none());
        assert_eq!(
            beta["status"]["configReferences"],
            json!([{
                "group": "addon.open-cluster-management.io",
                "resource": "addondeploymentconfigs",
                "lastObservedGeneration": 2,
                "desiredConfig": {"namespace": "cluster1", "name": "app-cluster1", "specHash": "h1"},
                "lastAppliedConfig": {"namespace": "cluster1", "name": "app-cluster1", "specHash": "h0"}
            }])
        );
        assert_eq!(
            beta["status"]["registrations"],
            json!([
                {"type": "kubeClient", "kubeClient": {
                    "subject": {
                        "user": "system:open-cluster-management:cluster:cluster1:addon:application-manager:agent:application-manager",
                        "groups": ["system:open-cluster-management:cluster:cluster1:addon:application-manager"]
                    },
                    "driver": "token"
                }},
                {"type": "customSigner", "customSigner": {
                    "signerName": "example.com/app-signer",
                    "subject": {"user": "app", "groups": ["apps"], "organizationUnits": ["cluster1", "edge"]}
                }},
                {"type": "kubeClient", "kubeClient": {"driver": "token"}}
            ])
        );
        assert!(beta["status"].get("kubeClientDriver").is_none());
    }

    #[test]
    fn mca_documented_losses() {
        let mut original = alpha_mca();
        // Lost: deprecated addOnConfiguration, organization units of a hub client
        // registration, and a driver with no kube-apiserver-client registration to carry it.
        original["status"]["addOnConfiguration"] = json!({"crdName": "x.example.com"});
        original["status"]["registrations"][0]["subject"]["organizationUnit"] = json!(["ou"]);
        let (_, alpha) = to_beta_and_back(original);
        assert_eq!(alpha, alpha_mca());

        let mut no_hub_client = alpha_mca();
        let regs = no_hub_client["status"]["registrations"]
            .as_array_mut()
            .unwrap();
        regs.retain(|r| r["signerName"] != KUBE_APISERVER_CLIENT_SIGNER);
        let (_, alpha) = to_beta_and_back(no_hub_client.clone());
        assert!(alpha["status"].get("kubeClientDriver").is_none());
        no_hub_client["status"]
            .as_object_mut()
            .unwrap()
            .remove("kubeClientDriver");
        assert_eq!(alpha, no_hub_client);
    }

    #[test]
    fn mca_v1beta1_to_v1alpha1_follows_upstream() {
        let beta = json!({
            "apiVersion": V1BETA1,
            "kind": "ManagedClusterAddOn",
            "metadata": {
                "name": "hello",
                "namespace": "cluster2",
                "annotations": {"addon.open-cluster-management.io/v1alpha1-install-namespace": "hello-agent"}
            },
            "spec": {},
            "status": {
                "configReferences": [
                    {"group": "addon.open-cluster-management.io", "resource": "addontemplates",
                     "desiredConfig": {"name": "hello-v2", "specHash": "c0ffee"}},
                    {"resource": "configmaps", "lastObservedGeneration": 1}
                ],
                "registrations": [
                    {"type": "customSigner", "customSigner": {"signerName": "example.com/s"}},
                    {"type": "kubeClient"},
                    {"type": "kubeClient", "kubeClient": {"driver": "csr"}},
                    {"type": "kubeClient", "kubeClient": {"driver": "token"}}
                ]
            }
        });
        let alpha = convert(beta, V1ALPHA1).unwrap();
        // The carrier annotation is gone (and with it the now empty map).
        assert!(alpha["metadata"].get("annotations").is_none());
        assert_eq!(alpha["spec"], json!({"installNamespace": "hello-agent"}));
        assert_eq!(
            alpha["status"]["configReferences"],
            json!([
                {"group": "addon.open-cluster-management.io", "resource": "addontemplates",
                 "name": "hello-v2", "desiredConfig": {"name": "hello-v2", "specHash": "c0ffee"}},
                {"resource": "configmaps", "name": "", "lastObservedGeneration": 1}
            ])
        );
        assert_eq!(
            alpha["status"]["registrations"],
            json!([
                {"signerName": "example.com/s"},
                {"signerName": "kubernetes.io/kube-apiserver-client"},
                {"signerName": "kubernetes.io/kube-apiserver-client"},
                {"signerName": "kubernetes.io/kube-apiserver-client"}
            ])
        );
        // The first kubeClient registration with a kubeClient block decides.
        assert_eq!(alpha["status"]["kubeClientDriver"], "csr");
    }

    #[test]
    fn mca_without_install_namespace_gets_no_annotation() {
        let mut original = alpha_mca();
        original["spec"]
            .as_object_mut()
            .unwrap()
            .remove("installNamespace");
        original["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("annotations");
        let beta = convert(original.clone(), V1BETA1).unwrap();
        assert!(beta["metadata"].get("annotations").is_none());
        assert_eq!(convert(beta, V1ALPHA1).unwrap(), original);
    }

    #[test]
    fn typed_functions_match_the_json_entry_point() {
        let cma: v1alpha1::ClusterManagementAddOn = serde_json::from_value(alpha_cma()).unwrap();
        let beta = cma_v1alpha1_to_v1beta1(&cma);
        assert_eq!(cma_v1beta1_to_v1alpha1(&beta), cma);
        assert_eq!(
            serde_json::to_value(&beta).unwrap(),
            convert(alpha_cma(), V1BETA1).unwrap()
        );

        let mca: v1alpha1::ManagedClusterAddOn = serde_json::from_value(alpha_mca()).unwrap();
        let beta = mca_v1alpha1_to_v1beta1(&mca);
        assert_eq!(mca_v1beta1_to_v1alpha1(&beta), mca);
        assert_eq!(
            serde_json::to_value(&beta).unwrap(),
            convert(alpha_mca(), V1BETA1).unwrap()
        );
    }

    #[test]
    fn same_version_is_identity() {
        // Returned as given, even fields the types do not know.
        let mut object = alpha_mca();
        object["spec"]["somethingNew"] = json!(true);
        assert_eq!(convert(object.clone(), V1ALPHA1).unwrap(), object);
        let template = json!({"apiVersion": V1ALPHA1, "kind": "AddOnTemplate", "metadata": {"name": "t"},
                              "spec": {"addonName": "t", "agentSpec": {}}});
        assert_eq!(convert(template.clone(), V1ALPHA1).unwrap(), template);
    }

    #[test]
    fn addon_deployment_config_only_changes_api_version() {
        let adc = json!({
            "apiVersion": V1ALPHA1,
            "kind": "AddOnDeploymentConfig",
            "metadata": {"name": "c", "namespace": "cluster1"},
            "spec": {"agentInstallNamespace": "agents", "customizedVariables": [{"name": "A", "value": "1"}]}
        });
        let beta = convert(adc.clone(), V1BETA1).unwrap();
        let mut expected = adc.clone();
        expected["apiVersion"] = json!(V1BETA1);
        assert_eq!(beta, expected);
        assert_eq!(convert(beta, V1ALPHA1).unwrap(), adc);
    }

    #[test]
    fn bad_input_is_an_error() {
        let cases: Vec<(Value, &str)> = vec![
            (json!(null), V1BETA1),
            (json!([alpha_mca()]), V1BETA1),
            (json!("ManagedClusterAddOn"), V1BETA1),
            (json!({"kind": "ManagedClusterAddOn"}), V1BETA1),
            (json!({"apiVersion": V1ALPHA1}), V1BETA1),
            (
                json!({"apiVersion": 1, "kind": "ManagedClusterAddOn"}),
                V1BETA1,
            ),
            (json!({"apiVersion": V1ALPHA1, "kind": ["x"]}), V1BETA1),
            (alpha_mca(), "v1beta1"),
            (alpha_mca(), "addon.open-cluster-management.io/v1"),
            (alpha_mca(), "work.open-cluster-management.io/v1"),
            (alpha_mca(), ""),
            (
                json!({"apiVersion": "addon.open-cluster-management.io/v2", "kind": "ManagedClusterAddOn"}),
                V1BETA1,
            ),
            (
                json!({"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster"}),
                V1BETA1,
            ),
            (
                json!({"apiVersion": V1ALPHA1, "kind": "ManifestWork"}),
                V1BETA1,
            ),
            (
                json!({"apiVersion": V1ALPHA1, "kind": "AddOnTemplate", "metadata": {"name": "t"}, "spec": {}}),
                V1BETA1,
            ),
            (
                json!({"apiVersion": V1BETA1, "kind": "AddOnTemplate"}),
                V1ALPHA1,
            ),
            // Does not decode: no metadata or spec, wrong types, bad enum values.
            (
                json!({"apiVersion": V1ALPHA1, "kind": "ManagedClusterAddOn"}),
                V1BETA1,
            ),
            (
                json!({"apiVersion": V1ALPHA1, "kind": "ManagedClusterAddOn", "metadata": {}, "spec": "x"}),
                V1BETA1,
            ),
            (
                json!({"apiVersion": V1BETA1, "kind": "ClusterManagementAddOn", "metadata": {},
                    "spec": {"installStrategy": {"type": "Sometimes"}}}),
                V1ALPHA1,
            ),
            (
                json!({"apiVersion": V1BETA1, "kind": "ManagedClusterAddOn", "metadata": {}, "spec": {},
                    "status": {"registrations": [{"type": "password"}]}}),
                V1ALPHA1,
            ),
            (
                json!({"apiVersion": V1ALPHA1, "kind": "ClusterManagementAddOn", "metadata": {"name": 5}, "spec": {}}),
                V1BETA1,
            ),
        ];
        for (object, target) in cases {
            let shown = object.to_string();
            let result = convert(object, target);
            assert!(result.is_err(), "{shown} -> {target}: {result:?}");
            // Every error renders a message.
            assert!(!result.unwrap_err().to_string().is_empty());
        }
    }

    #[test]
    fn error_kinds_are_specific() {
        assert!(matches!(
            convert(json!(1), V1BETA1),
            Err(ConversionError::NotAnObject)
        ));
        assert!(matches!(
            convert(json!({"kind": "X"}), V1BETA1),
            Err(ConversionError::MissingField("apiVersion"))
        ));
        assert!(matches!(
            convert(alpha_cma(), "v1"),
            Err(ConversionError::UnknownVersion(v)) if v == "v1"
        ));
        assert!(matches!(
            convert(json!({"apiVersion": V1ALPHA1, "kind": "Foo"}), V1BETA1),
            Err(ConversionError::UnknownKind(k)) if k == "Foo"
        ));
        assert!(matches!(
            convert(
                json!({"apiVersion": V1ALPHA1, "kind": "AddOnTemplate"}),
                V1BETA1
            ),
            Err(ConversionError::NotServed { .. })
        ));
        assert!(matches!(
            convert(
                json!({"apiVersion": V1ALPHA1, "kind": "ClusterManagementAddOn", "metadata": {}}),
                V1BETA1
            ),
            Err(ConversionError::Decode { .. })
        ));
    }
}
