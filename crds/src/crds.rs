//! The CustomResourceDefinitions ocm-rs installs, grouped by where they are installed.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};

/// Where a set of CRDs is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The hub cluster (ClusterManager side).
    Hub,
    /// A managed cluster (Klusterlet side).
    Klusterlet,
}

impl Target {
    /// Folder name under `crds/manifests/`.
    pub fn dir_name(self) -> &'static str {
        match self {
            Target::Hub => "hub",
            Target::Klusterlet => "klusterlet",
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

/// The CRDs for one target.
pub fn for_target(target: Target) -> Vec<CustomResourceDefinition> {
    match target {
        Target::Hub => hub(),
        Target::Klusterlet => klusterlet(),
    }
}

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

/// File name of a CRD's manifest: `<plural>.<group>.yaml` (the CRD's own name).
pub fn file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}.yaml", crd.metadata.name.as_deref().unwrap_or("unnamed"))
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
