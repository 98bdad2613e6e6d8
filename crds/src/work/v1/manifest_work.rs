//! ManifestWork: a set of Kubernetes objects the hub wants applied on one managed cluster.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::schema::EmbeddedObject;

/// Pattern of a service account's namespace and name (a DNS subdomain).
const SUBDOMAIN_PATTERN: &str =
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$";

/// What the hub wants the work agent to apply on the managed cluster, and how.
///
/// Also embedded as the template of a ManifestWorkReplicaSet and of an AddOnTemplate.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "work.open-cluster-management.io",
    version = "v1",
    kind = "ManifestWork",
    doc = "A set of Kubernetes objects to apply on one managed cluster. It lives in that cluster's namespace on the hub; the cluster's work agent applies the objects and reports their state back here.",
    plural = "manifestworks",
    namespaced,
    status = "ManifestWorkStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkSpec {
    /// The objects to apply.
    #[serde(default, skip_serializing_if = "ManifestsTemplate::is_empty")]
    pub workload: ManifestsTemplate,

    /// What happens to the applied objects when the work is deleted; absent means every
    /// object is deleted in the foreground.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_option: Option<DeleteOption>,

    /// Per-object settings: status feedback, update strategy, condition rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifest_configs: Vec<ManifestConfigOption>,

    /// Identity the agent checks its permissions against before applying; absent means the
    /// agent applies with its own identity, unchecked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<ManifestWorkExecutor>,
}

/// One object of a work: any complete Kubernetes object, kept field for field.
pub type Manifest = EmbeddedObject;

/// The list of objects a work applies.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestsTemplate {
    /// The objects, each with `apiVersion`, `kind` and `metadata.name`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifests: Vec<Manifest>,
}

impl ManifestsTemplate {
    /// Whether there are no objects (the field is then left out on the wire).
    pub fn is_empty(&self) -> bool {
        self.manifests.is_empty()
    }
}

/// Deletion behaviour of the objects a work applied.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOption {
    /// Whether the objects are deleted, all left behind, or only the listed ones left
    /// behind; absent means `Foreground`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Foreground"))]
    pub propagation_policy: Option<DeletePropagationPolicyType>,

    /// The objects to leave behind when the policy is `SelectivelyOrphan`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selectively_orphans: Option<SelectivelyOrphan>,

    /// Seconds after the work turned `Complete` before the hub deletes it; absent means
    /// never, 0 means at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i64>,
}

/// What happens to a work's objects when the work is deleted or an object leaves it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum DeletePropagationPolicyType {
    /// Delete every object and wait until they are gone.
    #[default]
    Foreground,
    /// Leave every object on the cluster.
    Orphan,
    /// Leave the objects matched by the orphaning rules, delete the rest.
    SelectivelyOrphan,
}

/// The objects left on the cluster under the `SelectivelyOrphan` policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SelectivelyOrphan {
    /// One rule per object to leave behind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub orphaning_rules: Vec<OrphaningRule>,
}

/// Names one object of a work by group, resource, namespace and name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceIdentifier {
    /// API group; empty (or absent) for the core group. Always written by Go clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Resource (plural) name, e.g. `deployments`.
    pub resource: String,
    /// Object name.
    pub name: String,
    /// Namespace; empty (or absent) for a cluster-scoped object. Always written by Go clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// An object to leave on the cluster when the work is deleted.
pub type OrphaningRule = ResourceIdentifier;

/// Settings for the work's objects matched by `resourceIdentifier`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestConfigOption {
    /// Which object of the work these settings apply to; `*` matches any value when the
    /// agent compares.
    pub resource_identifier: ResourceIdentifier,

    /// Status fields of the object to report back in the work status.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feedback_rules: Vec<FeedbackRule>,

    /// How the agent writes the object; absent means `Update`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<UpdateStrategy>,

    /// Rules that set conditions on the manifest from the object's state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["condition"]))]
    pub condition_rules: Vec<ConditionRule>,

    /// Whether the agent polls the object for feedback or watches it; absent means `Poll`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Poll"))]
    pub feedback_scrape_type: Option<FeedbackScrapeType>,
}

/// A rule deriving a condition of one manifest from its object's state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "self.type != 'CEL' || self.condition != \"\"",
    "message": "Condition is required for CEL rules"
}]))]
pub struct ConditionRule {
    /// Type of the condition the rule sets; `Complete` stops further updates of the object.
    pub condition: String,
    /// How the condition is evaluated.
    #[serde(rename = "type")]
    pub type_: ConditionRuleType,
    /// CEL expressions (all must hold) when the type is `CEL`; `object` is the live object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cel_expressions: Option<Vec<String>>,
    /// Message of the condition. Always written (possibly empty) by Go clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// CEL expression producing the message (variables `object` and `result`); a non-empty
    /// result replaces `message`. Always written (possibly empty) by Go clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_expression: Option<String>,
}

/// How a condition rule is evaluated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ConditionRuleType {
    /// Built-in rules for common kinds (Job and Pod completion).
    #[default]
    WellKnownConditions,
    /// The rule's CEL expressions.
    #[serde(rename = "CEL")]
    Cel,
}

/// How the agent gathers status feedback.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum FeedbackScrapeType {
    /// Read the object every status sync period.
    #[default]
    Poll,
    /// Watch the object and report changes as they happen.
    Watch,
}

/// Which status fields of an object are reported back.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackRule {
    /// Built-in fields for common kinds, or the listed JSON paths.
    #[serde(rename = "type")]
    pub type_: FeedbackType,
    /// The fields to report when the type is `JSONPaths`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub json_paths: Vec<JsonPath>,
}

/// Kind of feedback rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum FeedbackType {
    /// The built-in fields of well-known kinds (Deployment, DaemonSet, Job, Pod).
    #[default]
    WellKnownStatus,
    /// The JSON paths listed in the rule.
    #[serde(rename = "JSONPaths")]
    JsonPaths,
}

/// A named field of an object's status to report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JsonPath {
    /// Name the value is reported under.
    pub name: String,
    /// API version to read the object with; absent means the preferred version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// Kubernetes JSONPath of the field, relative to `.status`.
    pub path: String,
}

/// How the agent writes an object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateStrategy {
    /// The strategy; the API server fills in `Update` when it is left out.
    #[serde(rename = "type")]
    #[schemars(extend("default" = "Update"))]
    pub type_: UpdateStrategyType,
    /// Server-side apply settings, used when the type is `ServerSideApply`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_side_apply: Option<ServerSideApplyConfig>,
}

/// Strategy for writing an object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum UpdateStrategyType {
    /// Create it if missing, otherwise replace it with the manifest.
    #[default]
    Update,
    /// Create it if missing, never change it afterwards.
    CreateOnly,
    /// Server-side apply with the agent's field manager; conflicts fail the manifest.
    ServerSideApply,
    /// Never write it: only check it exists and report its status. Never deleted.
    ReadOnly,
}

/// Server-side apply settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerSideApplyConfig {
    /// Take ownership of fields other managers own instead of failing; absent means false.
    /// Always written by Go clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// Field manager of the apply; must start with `work-agent`. Absent means `work-agent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^work-agent"), extend("default" = "work-agent"))]
    pub field_manager: Option<String>,
    /// Fields left alone by the apply, per condition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["condition"]))]
    pub ignore_fields: Vec<IgnoreField>,
}

/// Fields of an object the agent does not overwrite, and when.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IgnoreField {
    /// When the fields are ignored; the API server fills in `OnSpokePresent` when left out.
    #[schemars(extend("default" = "OnSpokePresent"))]
    pub condition: IgnoreFieldsCondition,
    /// Kubernetes JSONPaths of the fields.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json_paths: Vec<String>,
    /// RFC 6901 JSON pointers of the fields (`/spec/replicas`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json_pointers: Vec<String>,
    /// jq path expressions selecting the fields.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jq_path_expressions: Vec<String>,
}

/// When ignored fields are left alone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum IgnoreFieldsCondition {
    /// Whenever the object already exists on the managed cluster.
    #[default]
    OnSpokePresent,
    /// Only when something on the managed cluster changed them.
    OnSpokeChange,
}

/// Identity the agent acts as when applying a work.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkExecutor {
    /// The identity. Always serialized.
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub subject: ManifestWorkExecutorSubject,
}

/// The identity whose permissions on the managed cluster bound what a work may apply.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkExecutorSubject {
    /// Kind of identity.
    #[serde(rename = "type")]
    pub type_: ManifestWorkExecutorSubjectType,
    /// The service account, when the type is `ServiceAccount`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<ManifestWorkSubjectServiceAccount>,
}

/// Kind of executor identity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ManifestWorkExecutorSubjectType {
    /// A service account on the managed cluster.
    #[default]
    ServiceAccount,
}

/// A service account on the managed cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkSubjectServiceAccount {
    /// Its namespace.
    #[schemars(length(min = 1, max = 253), regex(pattern = SUBDOMAIN_PATTERN))]
    pub namespace: String,
    /// Its name.
    #[schemars(length(min = 1, max = 253), regex(pattern = SUBDOMAIN_PATTERN))]
    pub name: String,
}

/// What the work agent reports about a work.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkStatus {
    /// Applied, Available, Complete, Deleting and rule-defined conditions of the whole work.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// State of each object of the work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_status: Option<ManifestResourceStatus>,
}

/// State of each object of a work.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestResourceStatus {
    /// One entry per manifest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifests: Vec<ManifestCondition>,
}

/// State of one object of a work on the managed cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestCondition {
    /// Which manifest and object this is.
    pub resource_meta: ManifestResourceMeta,
    /// Status values gathered by the feedback rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_feedback: Option<StatusFeedbackResult>,
    /// Applied, Available, StatusFeedbackSynced and rule-defined conditions of the object.
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}

/// Position of a manifest in the work and the object it resolved to. Every field is always
/// serialized, as the agent writes them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestResourceMeta {
    /// Index of the manifest in `spec.workload.manifests`.
    pub ordinal: i32,
    /// API group (empty for core).
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub group: String,
    /// API version.
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub version: String,
    /// Kind.
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub kind: String,
    /// Resource (plural) name.
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub resource: String,
    /// Object name.
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub name: String,
    /// Namespace (empty for cluster-scoped objects).
    #[serde(default)]
    #[schemars(transform = crate::schema::no_default)]
    pub namespace: String,
}

/// Values gathered by an object's feedback rules.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusFeedbackResult {
    /// One value per reported field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub values: Vec<FeedbackValue>,
}

/// One reported status field.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackValue {
    /// Name of the field, as named by the feedback rule.
    pub name: String,
    /// Its value.
    pub field_value: FieldValue,
}

/// A typed status value: the member named by `type` is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldValue {
    /// Which member holds the value.
    #[serde(rename = "type")]
    pub type_: ValueType,
    /// Integer value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integer: Option<i64>,
    /// String value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string: Option<String>,
    /// Boolean value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boolean: Option<bool>,
    /// A list or object, as JSON text of at most 1024 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub json_raw: Option<String>,
}

/// Type of a reported status value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ValueType {
    /// A 64-bit integer.
    #[default]
    Integer,
    /// A string.
    String,
    /// A boolean.
    Boolean,
    /// A list or object as JSON text.
    JsonRaw,
}
