//! The resource registry: which resources each logical cluster serves. Built-in resources are
//! the same everywhere; custom resources come from the cluster's CustomResourceDefinitions.

mod builtin;
mod crd;
pub mod priority;
mod stored_schema;
mod version;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;

pub(crate) use builtin::TypeVisitor;
pub use builtin::{BuiltinKind, builtin_resources};
pub use crd::{CrdError, crd_conditions, resource_from_crd};
pub use stored_schema::StoredSchema;
pub use version::{compare_versions, sort_versions};

use ocm_apiserver_storage::Bucket;

/// The `apiVersion` of objects of `group` and `version` (`v1` for the core group).
pub fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

/// How object names of a resource are validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameKind {
    /// DNS-1123 subdomain (most kinds).
    Subdomain,
    /// DNS-1123 label (namespaces).
    Label,
    /// DNS-1035 label (services).
    Dns1035Label,
    /// Any path segment (RBAC kinds).
    PathSegment,
}

/// The `scale` subresource of a custom resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleSpec {
    /// JSON path of the desired replicas, e.g. `.spec.replicas`.
    pub spec_replicas_path: String,
    /// JSON path of the observed replicas.
    pub status_replicas_path: String,
    /// JSON path of the label selector, if any.
    pub label_selector_path: Option<String>,
}

/// One additional printer column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrinterColumn {
    /// Column header.
    pub name: String,
    /// OpenAPI type: string, integer, number, boolean, date.
    pub type_: String,
    /// Optional format.
    pub format: String,
    /// Description.
    pub description: String,
    /// Priority; 0 is shown by default.
    pub priority: i64,
    /// JSON path into the object.
    pub json_path: String,
}

/// One served version of a resource.
#[derive(Clone, Debug)]
pub struct VersionInfo {
    /// Version name, e.g. `v1`.
    pub name: String,
    /// The `openAPIV3Schema` of custom resources.
    pub schema: Option<StoredSchema>,
    /// Additional printer columns (custom resources).
    pub printer_columns: Vec<PrinterColumn>,
    /// Selectable fields (custom resources), as JSON paths like `.spec.color`.
    pub selectable_fields: Vec<String>,
    /// Whether the version has a status subresource.
    pub status: bool,
    /// Scale subresource, if any.
    pub scale: Option<ScaleSpec>,
    /// Deprecation warning, if the version is deprecated.
    pub deprecation_warning: Option<String>,
    /// Field types for the patch algorithms, built on first use.
    pub patch_types: Arc<std::sync::OnceLock<ocm_apiserver_patch::ObjectType>>,
    /// The structural schema (custom resources), built on first use.
    pub structural: Arc<std::sync::OnceLock<ocm_apiserver_schema::StructuralSchema>>,
}

impl VersionInfo {
    /// The structural schema of a custom resource version.
    pub fn structural(&self) -> Option<&ocm_apiserver_schema::StructuralSchema> {
        let schema = self.schema.as_ref()?;
        Some(
            self.structural.get_or_init(|| {
                ocm_apiserver_schema::StructuralSchema::from_accepted(&schema.value())
            }),
        )
    }
}

/// Where a resource comes from.
#[derive(Clone, Debug)]
pub enum Source {
    /// A built-in kind.
    Builtin(BuiltinKind),
    /// A CustomResourceDefinition (its name).
    Crd(String),
}

/// Everything the server knows about one resource.
#[derive(Clone, Debug)]
pub struct ResourceInfo {
    /// API group; empty for core.
    pub group: String,
    /// Served versions, most preferred first.
    pub versions: Vec<VersionInfo>,
    /// The version objects are stored in.
    pub storage_version: String,
    /// Plural resource name.
    pub plural: String,
    /// Singular name.
    pub singular: String,
    /// Kind.
    pub kind: String,
    /// List kind.
    pub list_kind: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Short names for kubectl.
    pub short_names: Vec<String>,
    /// Categories, e.g. `all`.
    pub categories: Vec<String>,
    /// Verbs of the main resource.
    pub verbs: Vec<String>,
    /// Subresources other than status and scale, e.g. `approval`, `finalize`.
    pub extra_subresources: Vec<String>,
    /// Origin.
    pub source: Source,
    /// Name validation.
    pub name_kind: NameKind,
    /// Field selector labels besides `metadata.name` and `metadata.namespace`.
    pub field_labels: Vec<String>,
    /// A CRD's conversion webhook (`spec.conversion.strategy: Webhook`).
    pub conversion_webhook: Option<crate::client_config::ClientConfig>,
}

impl ResourceInfo {
    /// Whether the resource can be shown as a `meta.k8s.io` Table: every stored kind can; the
    /// create-only reviews have no table convertor in kube, so Table requests for them are
    /// 406 NotAcceptable.
    pub fn has_table(&self) -> bool {
        !self.builtin().is_some_and(|kind| kind.is_virtual())
    }

    /// `group/plural`, the storage bucket's resource part.
    pub fn storage_resource(&self) -> String {
        if self.builtin() == Some(BuiltinKind::EventsEvent) {
            // events.k8s.io/v1 Events are core Events, stored once.
            return "/events".to_owned();
        }
        format!("{}/{}", self.group, self.plural)
    }

    /// The `apiVersion` objects are stored with.
    pub fn storage_api_version(&self) -> String {
        if self.builtin() == Some(BuiltinKind::EventsEvent) {
            return "v1".to_owned();
        }
        self.api_version(&self.storage_version)
    }

    /// Whether stored objects are already what clients of every served version see.
    pub fn stored_as_served(&self) -> bool {
        !self.is_custom() && self.builtin() != Some(BuiltinKind::EventsEvent)
    }

    /// The storage bucket of this resource in `cluster`.
    pub fn bucket(&self, cluster: &str) -> Bucket {
        Bucket::new(cluster, &self.storage_resource())
    }

    /// `apiVersion` for a version.
    pub fn api_version(&self, version: &str) -> String {
        api_version(&self.group, version)
    }

    /// The served version named `name`.
    pub fn version(&self, name: &str) -> Option<&VersionInfo> {
        self.versions.iter().find(|v| v.name == name)
    }

    /// The preferred version.
    pub fn preferred_version(&self) -> &str {
        self.versions
            .first()
            .map(|v| v.name.as_str())
            .unwrap_or(&self.storage_version)
    }

    /// Whether a version has the status subresource.
    pub fn has_status(&self, version: &str) -> bool {
        self.version(version).is_some_and(|v| v.status)
    }

    /// Whether the server maintains `metadata.generation` for this resource.
    pub fn has_generation(&self) -> bool {
        match self.source {
            Source::Crd(_) => true,
            Source::Builtin(kind) => matches!(
                kind,
                BuiltinKind::Deployment
                    | BuiltinKind::ReplicaSet
                    | BuiltinKind::StatefulSet
                    | BuiltinKind::DaemonSet
                    | BuiltinKind::Job
                    | BuiltinKind::CronJob
                    | BuiltinKind::PodTemplate
                    | BuiltinKind::FlowSchema
                    | BuiltinKind::PriorityLevelConfiguration
                    | BuiltinKind::ValidatingAdmissionPolicy
                    | BuiltinKind::ValidatingAdmissionPolicyBinding
                    | BuiltinKind::CustomResourceDefinition
                    | BuiltinKind::PodDisruptionBudget
                    | BuiltinKind::Ingress
                    | BuiltinKind::NetworkPolicy
                    | BuiltinKind::HorizontalPodAutoscaler
                    | BuiltinKind::DeviceClass
            ),
        }
    }

    /// Whether this is a custom resource.
    pub fn is_custom(&self) -> bool {
        matches!(self.source, Source::Crd(_))
    }

    /// The built-in kind, if built in.
    pub fn builtin(&self) -> Option<BuiltinKind> {
        match self.source {
            Source::Builtin(kind) => Some(kind),
            Source::Crd(_) => None,
        }
    }

    /// `Kind` or `Kind.group`, as used in `Invalid` messages.
    pub fn qualified_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    /// Whether a verb is allowed on the main resource.
    pub fn allows(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// The subresources served for a version.
    pub fn subresources(&self, version: &str) -> Vec<String> {
        let mut subs = Vec::new();
        if let Some(v) = self.version(version) {
            if v.status {
                subs.push("status".to_owned());
            }
            if v.scale.is_some() {
                subs.push("scale".to_owned());
            }
        }
        subs.extend(self.extra_subresources.iter().cloned());
        subs
    }
}

/// The custom resources of one logical cluster.
#[derive(Debug, Default)]
struct ClusterResources {
    /// By CRD name.
    by_crd: HashMap<String, ServedCrd>,
}

/// A CRD's served resource and what it was built from.
#[derive(Debug)]
struct ServedCrd {
    /// A digest of the CRD's `spec` as JSON text ([`spec_digest`]): the same spec serves the
    /// same resource.
    spec: u64,
    info: Arc<ResourceInfo>,
}

/// A 64-bit digest of a CRD's `spec` written as compact JSON: two specs with the same digest
/// are taken to be the same (kept instead of the text itself, which was as large again as the
/// CRD's schemas).
fn spec_digest(crd: &Value) -> u64 {
    crd.get("spec").map_or(0, ocm_apiserver_json::digest)
}

/// All served resources, built in and per cluster.
#[derive(Debug)]
pub struct Registry {
    builtins: Vec<Arc<ResourceInfo>>,
    clusters: RwLock<HashMap<String, ClusterResources>>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl Registry {
    /// A registry with the built-in resources.
    pub fn new() -> Self {
        Registry {
            builtins: builtin_resources().into_iter().map(Arc::new).collect(),
            clusters: RwLock::new(HashMap::new()),
        }
    }

    /// Serves (or re-serves) a CRD's resource in `cluster`, built from `crd` (its
    /// CustomResourceDefinition object). While the CRD's `spec` stays the same the resource
    /// served stays the same object, so [`Registry::is_current`] holds for it: as in
    /// kube-apiserver, only a changed spec replaces what serves the resource (and ends its
    /// watches).
    pub fn set_crd(&self, cluster: &str, crd_name: &str, crd: &Value, info: ResourceInfo) {
        let spec = spec_digest(crd);
        let mut clusters = self.clusters.write().unwrap_or_else(|p| p.into_inner());
        let by_crd = &mut clusters.entry(cluster.to_owned()).or_default().by_crd;
        if by_crd
            .get(crd_name)
            .is_some_and(|served| served.spec == spec)
        {
            return;
        }
        by_crd.insert(
            crd_name.to_owned(),
            ServedCrd {
                spec,
                info: Arc::new(info),
            },
        );
    }

    /// Whether `res` is what serves its resource in `cluster` now: always for built-in kinds;
    /// for a CRD's resource, until the CRD's spec changes or it is deleted. Watches opened on
    /// an earlier resource end, as kube-apiserver ends them when it replaces a CRD's storage,
    /// so that clients watch again with the current conversion, schema and columns.
    pub fn is_current(&self, cluster: &str, res: &Arc<ResourceInfo>) -> bool {
        let Source::Crd(crd_name) = &res.source else {
            return true;
        };
        let clusters = self.clusters.read().unwrap_or_else(|p| p.into_inner());
        clusters
            .get(cluster)
            .and_then(|c| c.by_crd.get(crd_name))
            .is_some_and(|served| Arc::ptr_eq(&served.info, res))
    }

    /// Stops serving a CRD's resource in `cluster`.
    pub fn remove_crd(&self, cluster: &str, crd_name: &str) {
        let mut clusters = self.clusters.write().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = clusters.get_mut(cluster) {
            c.by_crd.remove(crd_name);
        }
    }

    /// The resource of a CRD in `cluster`, if served.
    pub fn crd_resource(&self, cluster: &str, crd_name: &str) -> Option<Arc<ResourceInfo>> {
        let clusters = self.clusters.read().unwrap_or_else(|p| p.into_inner());
        clusters
            .get(cluster)?
            .by_crd
            .get(crd_name)
            .map(|served| served.info.clone())
    }

    /// Every resource served in `cluster`.
    pub fn all(&self, cluster: &str) -> Vec<Arc<ResourceInfo>> {
        let mut all = self.builtins.clone();
        let clusters = self.clusters.read().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = clusters.get(cluster) {
            let mut crds: Vec<_> = c.by_crd.values().map(|s| s.info.clone()).collect();
            crds.sort_by(|a, b| (&a.group, &a.plural).cmp(&(&b.group, &b.plural)));
            all.extend(crds);
        }
        all
    }

    /// The built-in resources.
    pub fn builtins(&self) -> &[Arc<ResourceInfo>] {
        &self.builtins
    }

    /// The resource served at `group/version/plural` in `cluster`.
    pub fn lookup(
        &self,
        cluster: &str,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<Arc<ResourceInfo>> {
        if let Some(found) = self
            .builtins
            .iter()
            .find(|r| r.group == group && r.plural == plural && r.version(version).is_some())
        {
            return Some(found.clone());
        }
        let clusters = self.clusters.read().unwrap_or_else(|p| p.into_inner());
        clusters
            .get(cluster)?
            .by_crd
            .values()
            .map(|served| &served.info)
            .find(|r| r.group == group && r.plural == plural && r.version(version).is_some())
            .cloned()
    }

    /// The resource of `group` whose kind is `kind` in `cluster`.
    pub fn lookup_kind(&self, cluster: &str, group: &str, kind: &str) -> Option<Arc<ResourceInfo>> {
        if let Some(found) = self
            .builtins
            .iter()
            .find(|r| r.group == group && r.kind == kind)
        {
            return Some(found.clone());
        }
        let clusters = self.clusters.read().unwrap_or_else(|p| p.into_inner());
        clusters
            .get(cluster)?
            .by_crd
            .values()
            .map(|served| &served.info)
            .find(|r| r.group == group && r.kind == kind)
            .cloned()
    }

    /// The resource stored under `group/plural` in `cluster`.
    pub fn by_storage_resource(
        &self,
        cluster: &str,
        storage_resource: &str,
    ) -> Option<Arc<ResourceInfo>> {
        let (group, plural) = storage_resource.split_once('/')?;
        if let Some(found) = self
            .builtins
            .iter()
            .find(|r| r.group == group && r.plural == plural)
        {
            return Some(found.clone());
        }
        let clusters = self.clusters.read().unwrap_or_else(|p| p.into_inner());
        clusters
            .get(cluster)?
            .by_crd
            .values()
            .map(|served| &served.info)
            .find(|r| r.group == group && r.plural == plural)
            .cloned()
    }

    /// Whether `group/version` is served in `cluster`.
    pub fn serves_group_version(&self, cluster: &str, group: &str, version: &str) -> bool {
        self.all(cluster)
            .iter()
            .any(|r| r.group == group && r.version(version).is_some())
    }

    /// Forgets every custom resource of `cluster`.
    pub fn drop_cluster(&self, cluster: &str) {
        let mut clusters = self.clusters.write().unwrap_or_else(|p| p.into_inner());
        clusters.remove(cluster);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(description: &str) -> Value {
        let mut crd = crd::tests::widget_crd();
        crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["description"] = json!(description);
        crd
    }

    #[test]
    fn the_same_spec_keeps_the_served_resource_and_a_changed_one_replaces_it() {
        let registry = Registry::new();
        let serve = |crd: &Value| {
            let info = resource_from_crd(crd).unwrap();
            registry.set_crd("c", "widgets.example.com", crd, info);
            registry
                .lookup("c", "example.com", "v1", "widgets")
                .unwrap()
        };
        let first = serve(&crd("one"));
        let mut relabelled = crd("one");
        relabelled["metadata"]["labels"] = json!({"a": "b"});
        let same = serve(&relabelled);
        assert!(Arc::ptr_eq(&first, &same));
        assert!(registry.is_current("c", &first));
        let changed = serve(&crd("two"));
        assert!(!Arc::ptr_eq(&first, &changed));
        assert!(!registry.is_current("c", &first));
        assert!(registry.is_current("c", &changed));
        let schema = changed.version("v1").and_then(|v| v.schema.as_ref());
        assert_eq!(
            schema.map(|s| s.value()["description"].clone()),
            Some(json!("two"))
        );
    }
}
