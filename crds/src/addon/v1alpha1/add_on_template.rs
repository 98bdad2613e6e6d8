//! AddOnTemplate (v1alpha1): an addon defined entirely by data, its agent manifests and the
//! credentials the agent needs, without a dedicated addon manager.

use k8s_openapi::api::rbac::v1::RoleRef;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{SIGNER_NAME_PATTERN, Subject};
use crate::work::v1::ManifestWorkSpec;

/// An addon's agent manifests and registrations.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "addon.open-cluster-management.io",
    version = "v1alpha1",
    kind = "AddOnTemplate",
    doc = "An addon defined by a template: the agent manifests to deploy on each cluster (rendered with variables and AddOnDeploymentConfig values) and the hub credentials the agent needs. A ClusterManagementAddOn uses it by listing it as a config.",
    plural = "addontemplates",
    derive = "PartialEq",
    printcolumn = r#"{"name":"ADDON NAME","type":"string","jsonPath":".spec.addonName"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AddOnTemplateSpec {
    /// Name of the addon this template defines.
    pub addon_name: String,

    /// The agent's manifests and how to apply them, as in a ManifestWork; values such as
    /// `{{CLUSTER_NAME}}` are substituted per cluster.
    pub agent_spec: ManifestWorkSpec,

    /// Credentials the agent needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub registration: Vec<RegistrationSpec>,
}

/// A credential a template addon's agent needs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationSpec {
    /// Kind of registration; says which of `kubeClient` and `customSigner` applies.
    #[serde(rename = "type")]
    pub type_: RegistrationType,
    /// Settings of a `KubeClient` registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_client: Option<KubeClientRegistrationConfig>,
    /// Settings of a `CustomSigner` registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_signer: Option<CustomSignerRegistrationConfig>,
}

/// Kind of template addon registration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RegistrationType {
    /// A hub client certificate (`kubernetes.io/kube-apiserver-client`) for the default
    /// addon user and groups.
    #[default]
    KubeClient,
    /// A certificate from a custom signer, signed by the hub with the given CA.
    CustomSigner,
}

/// Settings of a hub client registration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeClientRegistrationConfig {
    /// Permissions on the hub granted to the agent's identity.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hub_permissions: Vec<HubPermissionConfig>,
}

/// A permission on the hub granted to a template addon's agent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HubPermissionConfig {
    /// Where the binding is made; says which of `currentCluster` and `singleNamespace`
    /// applies.
    #[serde(rename = "type")]
    pub type_: HubPermissionsBindingType,
    /// With `CurrentCluster`: the cluster role bound in the cluster's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_cluster: Option<CurrentClusterBindingConfig>,
    /// With `SingleNamespace`: the role bound in a fixed namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub single_namespace: Option<SingleNamespaceBindingConfig>,
}

/// Where a hub permission is bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum HubPermissionsBindingType {
    /// A RoleBinding in the managed cluster's namespace on the hub.
    #[default]
    CurrentCluster,
    /// A RoleBinding in one given namespace on the hub.
    SingleNamespace,
}

/// A cluster role bound in the managed cluster's namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CurrentClusterBindingConfig {
    /// Name of the ClusterRole.
    pub cluster_role_name: String,
}

/// A role bound in one namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SingleNamespaceBindingConfig {
    /// Namespace of the RoleBinding.
    pub namespace: String,
    /// The Role or ClusterRole bound.
    #[schemars(schema_with = "role_ref_schema")]
    pub role_ref: RoleRef,
}

impl Eq for SingleNamespaceBindingConfig {}

/// Settings of a custom-signer registration of a template addon.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomSignerRegistrationConfig {
    /// Signer of the certificate (`example.com/signer-name`).
    #[schemars(length(min = 5, max = 571), regex(pattern = SIGNER_NAME_PATTERN))]
    pub signer_name: String,
    /// Subject of the certificate; absent means the default addon user and groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
    /// Secret holding the CA (`tls.crt`, `tls.key`) the hub signs the CSRs with.
    #[serde(rename = "signingCA")]
    pub signing_ca: SigningCARef,
}

/// A secret on the hub holding a signing CA.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SigningCARef {
    /// Secret name.
    pub name: String,
    /// Secret namespace; absent means the namespace of the addon manager.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// Schema of an RBAC role reference, atomic as upstream marks it.
fn role_ref_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "required": ["apiGroup", "kind", "name"],
        "x-kubernetes-map-type": "atomic",
        "properties": {
            "apiGroup": {"type": "string"},
            "kind": {"type": "string"},
            "name": {"type": "string"}
        }
    })
}
