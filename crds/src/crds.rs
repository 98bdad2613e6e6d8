//! The CustomResourceDefinitions ocm-rs installs, grouped by where they are installed.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};

/// Where a set of CRDs is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The hub cluster (ClusterManager side).
    Hub,
    /// A managed cluster (Klusterlet side).
    Klusterlet,
    /// A managed cluster whose Klusterlet turns on the registration `ClusterProperty`
    /// feature gate: the SIG-Multicluster About API (as upstream, installed only then).
    About,
    /// A hub whose registration turns on the `ClusterProfile` feature gate: SIG-Multicluster's
    /// Cluster Inventory API (as upstream, installed only then, never removed).
    Multicluster,
}

impl Target {
    /// Every target, in the order `crdgen` writes them.
    pub const ALL: [Target; 4] = [
        Target::Hub,
        Target::Klusterlet,
        Target::About,
        Target::Multicluster,
    ];

    /// Folder name under `crds/manifests/`.
    pub fn dir_name(self) -> &'static str {
        match self {
            Target::Hub => "hub",
            Target::Klusterlet => "klusterlet",
            Target::About => "about",
            Target::Multicluster => "multicluster",
        }
    }
}

/// Every CRD installed on the hub, sorted by name.
pub fn hub() -> Vec<CustomResourceDefinition> {
    let mut crds = crate::cluster::hub_crds();
    crds.extend(crate::work::hub_crds());
    crds.extend(crate::addon::hub_crds());
    crds.extend(crate::operator::hub_crds());
    sort(crds)
}

/// Every CRD installed on a managed cluster, sorted by name.
pub fn klusterlet() -> Vec<CustomResourceDefinition> {
    let mut crds = crate::cluster::klusterlet_crds();
    crds.extend(crate::work::klusterlet_crds());
    crds.extend(crate::addon::klusterlet_crds());
    crds.extend(crate::operator::klusterlet_crds());
    sort(crds)
}

/// The About API CRDs (ClusterProperty) a Klusterlet installs with the `ClusterProperty`
/// registration feature gate.
pub fn about() -> Vec<CustomResourceDefinition> {
    sort(crate::about::klusterlet_crds())
}

/// The Cluster Inventory API CRDs (ClusterProfile) a hub installs with the `ClusterProfile`
/// registration feature gate.
pub fn multicluster() -> Vec<CustomResourceDefinition> {
    sort(crate::multicluster::hub_crds())
}

/// The CRDs for one target.
pub fn for_target(target: Target) -> Vec<CustomResourceDefinition> {
    match target {
        Target::Hub => hub(),
        Target::Klusterlet => klusterlet(),
        Target::About => about(),
        Target::Multicluster => multicluster(),
    }
}

pub use crate::approval::{API_APPROVED_ANNOTATION, api_approved};

fn sort(crds: Vec<CustomResourceDefinition>) -> Vec<CustomResourceDefinition> {
    let mut crds: Vec<_> = crds.into_iter().map(complete).collect();
    crds.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    crds
}

/// Fills in what kube-derive leaves out but upstream CRDs carry: `listKind`, and the
/// `apiVersion`, `kind` and `metadata` properties of every version's schema. Drops the
/// schema `title`, which upstream CRDs do not have.
fn complete(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    if crd.spec.names.list_kind.is_none() {
        crd.spec.names.list_kind = Some(format!("{}List", crd.spec.names.kind));
    }
    for version in &mut crd.spec.versions {
        let Some(schema) = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        else {
            continue;
        };
        schema.title = None;
        restore_int_or_string_types(schema);
        let name = crd.metadata.name.as_deref().unwrap_or_default();
        strip_nullable(schema, name, "");
        if !SPEC_REQUIRED_KINDS.contains(&crd.spec.names.kind.as_str())
            && let Some(required) = schema.required.as_mut()
        {
            required.retain(|r| r != "spec");
            if required.is_empty() {
                schema.required = None;
            }
        }
        let props = schema.properties.get_or_insert_with(Default::default);
        for field in ["apiVersion", "kind"] {
            props
                .entry(field.to_string())
                .or_insert_with(|| JSONSchemaProps {
                    type_: Some("string".into()),
                    ..Default::default()
                });
        }
        props
            .entry("metadata".to_string())
            .or_insert_with(|| JSONSchemaProps {
                type_: Some("object".into()),
                ..Default::default()
            });
    }
    crd
}

/// Kinds whose upstream CRD requires `spec` at the top level. kube-derive requires it for
/// every kind; the others accept objects without one.
const SPEC_REQUIRED_KINDS: &[&str] = &[
    "ClusterManagementAddOn",
    "ManagedClusterAddOn",
    "AddOnDeploymentConfig",
    "AddOnTemplate",
    "Placement",
];

/// Fields upstream declares `nullable` (CRD name, dotted path with `[]` for list items). Every
/// other `nullable` comes from kube-derive marking `Option` fields, which upstream CRDs do not
/// do: a nullable field keeps an explicit `null` instead of dropping it, and kube-apiserver
/// refuses a nullable list-map key outright.
const NULLABLE_FIELDS: &[(&str, &str)] = &[(
    "managedclusters.cluster.open-cluster-management.io",
    "spec.taints[].timeAdded",
)];

/// Removes `nullable` everywhere below `schema` except at [`NULLABLE_FIELDS`].
fn strip_nullable(schema: &mut JSONSchemaProps, crd_name: &str, path: &str) {
    let keep = NULLABLE_FIELDS
        .iter()
        .any(|(c, p)| *c == crd_name && *p == path);
    if !keep {
        schema.nullable = None;
    }
    let child_path = |field: &str| {
        if path.is_empty() {
            field.to_string()
        } else {
            format!("{path}.{field}")
        }
    };
    for (field, child) in schema.properties.iter_mut().flatten() {
        strip_nullable(child, crd_name, &child_path(field));
    }
    for child in schema
        .any_of
        .iter_mut()
        .flatten()
        .chain(schema.all_of.iter_mut().flatten())
        .chain(schema.one_of.iter_mut().flatten())
    {
        strip_nullable(child, crd_name, path);
    }
    match schema.items.as_mut() {
        Some(JSONSchemaPropsOrArray::Schema(s)) => {
            strip_nullable(s, crd_name, &format!("{path}[]"))
        }
        Some(JSONSchemaPropsOrArray::Schemas(list)) => {
            for s in list {
                strip_nullable(s, crd_name, &format!("{path}[]"));
            }
        }
        None => {}
    }
    if let Some(JSONSchemaPropsOrBool::Schema(s)) = schema.additional_properties.as_mut() {
        strip_nullable(s, crd_name, &format!("{path}.*"));
    }
}

/// kube-derive's structural rewrite empties the `anyOf` branches of int-or-string schemas
/// (`anyOf: [{}, {}]`); upstream CRDs carry `[{type: integer}, {type: string}]`, which is what
/// kube-apiserver's own int-or-string schemas look like. Put the types back, everywhere.
fn restore_int_or_string_types(schema: &mut JSONSchemaProps) {
    if schema.x_kubernetes_int_or_string == Some(true)
        && let Some(any_of) = schema.any_of.as_mut()
        && any_of.len() == 2
        && any_of.iter().all(|s| s.type_.is_none())
    {
        any_of[0].type_ = Some("integer".into());
        any_of[1].type_ = Some("string".into());
    }
    let children = schema
        .properties
        .iter_mut()
        .flat_map(|p| p.values_mut())
        .chain(schema.any_of.iter_mut().flatten())
        .chain(schema.all_of.iter_mut().flatten())
        .chain(schema.one_of.iter_mut().flatten());
    for child in children {
        restore_int_or_string_types(child);
    }
    match schema.items.as_mut() {
        Some(JSONSchemaPropsOrArray::Schema(s)) => restore_int_or_string_types(s),
        Some(JSONSchemaPropsOrArray::Schemas(list)) => {
            list.iter_mut().for_each(restore_int_or_string_types)
        }
        None => {}
    }
    if let Some(JSONSchemaPropsOrBool::Schema(s)) = schema.additional_properties.as_mut() {
        restore_int_or_string_types(s);
    }
}

/// File name of a CRD's manifest: `<plural>.<group>.yaml` (the CRD's own name).
pub fn file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}.yaml", crd.metadata.name.as_deref().unwrap_or("unnamed"))
}

/// The file under `crds/manifests/` holding every CRD of a target as one compact JSON array
/// (`hub.json`, …), written by `crdgen` beside the YAML files and embedded by [`stored`].
pub fn json_file_name(target: Target) -> String {
    format!("{}.json", target.dir_name())
}

/// Every CRD of a target as one compact JSON array, as `crdgen` writes it to
/// [`json_file_name`].
pub fn to_json_array(crds: &[CustomResourceDefinition]) -> Result<String, serde_json::Error> {
    let mut text = serde_json::to_string(crds)?;
    text.push('\n');
    Ok(text)
}

/// The CRDs of a target as checked in (the test `checked_in_manifests_match_generated` keeps
/// them equal to what [`for_target`] generates), for a process that installs them: reading
/// this text costs no schema generation and no typed CRD code, which the hub and a simulated
/// cluster would otherwise run once at start and keep resident.
pub fn stored(target: Target) -> &'static str {
    match target {
        Target::Hub => include_str!("../manifests/hub.json"),
        Target::Klusterlet => include_str!("../manifests/klusterlet.json"),
        Target::About => include_str!("../manifests/about.json"),
        Target::Multicluster => include_str!("../manifests/multicluster.json"),
    }
}

/// [`stored`] as one JSON object per CRD.
pub fn stored_values(target: Target) -> Result<Vec<serde_json::Value>, serde_json::Error> {
    serde_json::from_str(stored(target))
}

/// Errors turning CRDs into YAML.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The CRD could not be serialized.
    #[error("serializing CRD {name} to YAML: {source}")]
    Yaml {
        /// CRD name.
        name: String,
        /// Underlying error.
        #[source]
        source: serde_saphyr::ser::Error,
    },
}

/// One CRD as a YAML document (no leading `---`).
pub fn to_yaml(crd: &CustomResourceDefinition) -> Result<String, RenderError> {
    serde_saphyr::to_string(crd).map_err(|source| RenderError::Yaml {
        name: crd.metadata.name.clone().unwrap_or_default(),
        source,
    })
}

/// Several CRDs as one multi-document YAML stream.
pub fn to_multi_yaml(crds: &[CustomResourceDefinition]) -> Result<String, RenderError> {
    let mut out = String::new();
    for crd in crds {
        out.push_str("---\n");
        out.push_str(&to_yaml(crd)?);
    }
    Ok(out)
}
