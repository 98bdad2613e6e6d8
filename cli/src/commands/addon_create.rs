//! `ocm addon create NAME -f FILE…`: an addon without code — an AddOnTemplate made of plain
//! manifests (files or directories of YAML) and the ClusterManagementAddOn that uses it, as
//! `clusteradm addon create` makes them. The template is `<name>-<version>`; the hub's template
//! controller renders it per cluster.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

/// Flags of `ocm addon create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Name of the addon (its ClusterManagementAddOn).
    name: String,
    /// Manifest files or directories of them (`*.yaml`, `*.yml`, `*.json`); repeatable.
    #[arg(short = 'f', long = "filename", required = true)]
    files: Vec<PathBuf>,
    /// Version of the addon: the template is named `<name>-<version>`.
    #[arg(long, default_value = "0.0.1")]
    version: String,
    /// Replace an existing template and ClusterManagementAddOn of these names.
    #[arg(long)]
    overwrite: bool,
    /// Give the agent a hub kubeconfig (a kube-client registration).
    #[arg(long)]
    hub_registration: bool,
    /// With --hub-registration: bind this ClusterRole to the agent in its cluster's namespace
    /// on the hub.
    #[arg(long)]
    cluster_role_bind: Option<String>,
    /// Labels for both objects (`key=value`, comma separated).
    #[arg(long, value_delimiter = ',')]
    labels: Vec<String>,
    /// Install on the clusters this Placement selects (`namespace/name`); default: enable by
    /// hand with `ocm addon enable`.
    #[arg(long)]
    placement_ref: Option<String>,
    #[command(flatten)]
    hub: super::HubAccess,
}

/// What the two objects are made from.
#[derive(Debug, Clone, Default)]
pub struct AddonSpec {
    /// Addon name.
    pub name: String,
    /// Version (template name suffix).
    pub version: String,
    /// The agent's manifests.
    pub manifests: Vec<Value>,
    /// Whether the agent gets a hub kubeconfig.
    pub hub_registration: bool,
    /// ClusterRole bound in the cluster namespace, if any.
    pub cluster_role_bind: Option<String>,
    /// Labels of both objects.
    pub labels: serde_json::Map<String, Value>,
    /// Install-strategy placement (namespace, name), if any.
    pub placement: Option<(String, String)>,
}

impl AddonSpec {
    /// `<name>-<version>`.
    pub fn template_name(&self) -> String {
        format!("{}-{}", self.name, self.version)
    }

    /// The AddOnTemplate.
    pub fn template(&self) -> Value {
        let mut registration = Vec::new();
        if self.hub_registration {
            let permissions: Vec<Value> = self
                .cluster_role_bind
                .iter()
                .map(|role| {
                    json!({"type": "CurrentCluster", "currentCluster": {"clusterRoleName": role}})
                })
                .collect();
            registration.push(json!({"type": "KubeClient",
                "kubeClient": {"hubPermissions": permissions}}));
        }
        json!({
            "apiVersion": "addon.open-cluster-management.io/v1alpha1",
            "kind": "AddOnTemplate",
            "metadata": {"name": self.template_name(), "labels": self.labels},
            "spec": {
                "addonName": self.name,
                "agentSpec": {"workload": {"manifests": self.manifests}},
                "registration": registration,
            },
        })
    }

    /// The ClusterManagementAddOn: the template as its default config, installed by hand or
    /// through the placement.
    pub fn cluster_management_addon(&self) -> Value {
        let strategy = match &self.placement {
            Some((namespace, name)) => json!({"type": "Placements",
                "placements": [{"namespace": namespace, "name": name}]}),
            None => json!({"type": "Manual"}),
        };
        json!({
            "apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ClusterManagementAddOn",
            "metadata": {
                "name": self.name,
                "labels": self.labels,
                "annotations": {"addon.open-cluster-management.io/lifecycle": "addon-manager"},
            },
            "spec": {
                "defaultConfigs": [{"group": "addon.open-cluster-management.io",
                    "resource": "addontemplates", "name": self.template_name()}],
                "installStrategy": strategy,
            },
        })
    }
}

/// The spec from the flags, the manifests already read; `Err` says which flag is wrong.
pub fn spec_from(
    name: &str,
    version: &str,
    manifests: Vec<Value>,
    hub_registration: bool,
    cluster_role_bind: Option<String>,
    labels: &[String],
    placement_ref: Option<&str>,
) -> anyhow::Result<AddonSpec> {
    if name.is_empty() || version.is_empty() {
        bail!("the addon name and --version must not be empty");
    }
    if cluster_role_bind.is_some() && !hub_registration {
        bail!(
            "--cluster-role-bind binds a role to the agent's hub identity: it needs --hub-registration"
        );
    }
    let mut label_map = serde_json::Map::new();
    for label in labels.iter().filter(|l| !l.is_empty()) {
        let Some((key, value)) = label.split_once('=') else {
            bail!("--labels {label:?} is not key=value");
        };
        label_map.insert(key.to_owned(), json!(value));
    }
    let placement = match placement_ref {
        None => None,
        Some(reference) => match reference.split_once('/') {
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
                Some((ns.to_owned(), name.to_owned()))
            }
            _ => bail!("--placement-ref {reference:?} is not namespace/name"),
        },
    };
    Ok(AddonSpec {
        name: name.to_owned(),
        version: version.to_owned(),
        manifests,
        hub_registration,
        cluster_role_bind,
        labels: label_map,
        placement,
    })
}

/// The files `path` names: itself, or a directory's manifest files (sorted, not recursive).
fn manifest_files(path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .with_context(|| format!("reading {}", path.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("{} has no .yaml, .yml or .json files", path.display());
    }
    Ok(files)
}

/// Runs `ocm addon create`.
pub async fn create(args: CreateArgs) -> anyhow::Result<()> {
    let mut manifests = Vec::new();
    for path in &args.files {
        for file in manifest_files(path)? {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            manifests.extend(
                super::work::manifests_from_yaml(&text)
                    .with_context(|| format!("in {}", file.display()))?,
            );
        }
    }
    let spec = spec_from(
        &args.name,
        &args.version,
        manifests,
        args.hub_registration,
        args.cluster_role_bind.clone(),
        &args.labels,
        args.placement_ref.as_deref(),
    )?;
    let client = args.hub.client().await?;
    let addon = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(
            "addon.open-cluster-management.io",
            "v1beta1",
            "ClusterManagementAddOn",
        ),
        "clustermanagementaddons",
    );
    let template = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(
            "addon.open-cluster-management.io",
            "v1alpha1",
            "AddOnTemplate",
        ),
        "addontemplates",
    );
    // The template first: the ClusterManagementAddOn names it.
    put(
        &client,
        &template,
        spec.template(),
        args.overwrite,
        "addontemplate",
    )
    .await?;
    put(
        &client,
        &addon,
        spec.cluster_management_addon(),
        args.overwrite,
        "clustermanagementaddon",
    )
    .await?;
    if spec.placement.is_none() {
        println!(
            "next: ocm addon enable --names {} --clusters CLUSTER",
            spec.name
        );
    }
    Ok(())
}

/// Creates `object`, or replaces it with `overwrite`.
async fn put(
    client: &kube::Client,
    resource: &ApiResource,
    object: Value,
    overwrite: bool,
    what: &str,
) -> anyhow::Result<()> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
    let mut object: DynamicObject = serde_json::from_value(object)?;
    let name = object.metadata.name.clone().unwrap_or_default();
    let refused = |e: kube::Error| match e {
        kube::Error::Api(s) => anyhow::anyhow!("the hub refused {what} {name}: {}", s.message),
        other => anyhow::Error::from(other),
    };
    match api.get_opt(&name).await? {
        None => {
            api.create(&PostParams::default(), &object)
                .await
                .map_err(refused)?;
            println!("{what} {name} created");
        }
        Some(_) if !overwrite => {
            println!("{what} {name} exists and is left as it is (use --overwrite to replace it)");
        }
        Some(existing) => {
            object.metadata.resource_version = existing.metadata.resource_version;
            api.replace(&name, &PostParams::default(), &object)
                .await
                .map_err(refused)?;
            println!("{what} {name} updated");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_the_template_and_addon_like_clusteradm() {
        let manifests = vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "namespace": "ns"}})];
        let spec = spec_from(
            "hello",
            "0.0.1",
            manifests,
            true,
            Some("reader".into()),
            &["team=a".into()],
            Some("addons/all"),
        )
        .unwrap();
        let template = spec.template();
        assert_eq!(template["metadata"]["name"], "hello-0.0.1");
        assert_eq!(template["metadata"]["labels"]["team"], "a");
        assert_eq!(template["spec"]["addonName"], "hello");
        assert_eq!(
            template["spec"]["registration"][0]["kubeClient"]["hubPermissions"][0],
            json!({"type": "CurrentCluster", "currentCluster": {"clusterRoleName": "reader"}})
        );
        let cma = spec.cluster_management_addon();
        assert_eq!(
            cma["metadata"]["annotations"]["addon.open-cluster-management.io/lifecycle"],
            "addon-manager"
        );
        assert_eq!(cma["spec"]["defaultConfigs"][0]["name"], "hello-0.0.1");
        assert_eq!(
            cma["spec"]["installStrategy"],
            json!({"type": "Placements", "placements": [{"namespace": "addons", "name": "all"}]})
        );
        let manual = spec_from("hello", "1", vec![], false, None, &[], None).unwrap();
        assert_eq!(
            manual.cluster_management_addon()["spec"]["installStrategy"]["type"],
            "Manual"
        );
        assert_eq!(manual.template()["spec"]["registration"], json!([]));
    }

    #[test]
    fn bad_flags_are_named() {
        let err = |r: anyhow::Result<AddonSpec>| r.unwrap_err().to_string();
        assert!(
            err(spec_from(
                "a",
                "1",
                vec![],
                false,
                Some("r".into()),
                &[],
                None
            ))
            .contains("needs --hub-registration")
        );
        assert!(
            err(spec_from(
                "a",
                "1",
                vec![],
                false,
                None,
                &["x".into()],
                None
            ))
            .contains("not key=value")
        );
        assert!(
            err(spec_from(
                "a",
                "1",
                vec![],
                false,
                None,
                &[],
                Some("justname")
            ))
            .contains("not namespace/name")
        );
    }
}
