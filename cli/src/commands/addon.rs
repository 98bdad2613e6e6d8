//! `ocm addon enable|disable|create` and `ocm get addons`: turn an addon on or off for clusters by
//! creating or deleting their ManagedClusterAddOns, and list them with the columns kubectl
//! shows.

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_api::cluster::v1::ManagedCluster;
use serde_json::json;

use super::get_output::{
    ClusterNamespaceFlags, OutputFlag, Row, TableStyle, get_and_print, render_table,
};

/// Flags of `ocm addon`.
#[derive(Debug, Args)]
pub struct AddonArgs {
    #[command(subcommand)]
    command: AddonCommand,
}

#[derive(Debug, Subcommand)]
enum AddonCommand {
    /// Enable addons on clusters (create their ManagedClusterAddOns).
    Enable(EnableArgs),
    /// Disable addons on clusters (delete their ManagedClusterAddOns).
    Disable(DisableArgs),
    /// Create an addon from plain manifests: an AddOnTemplate and its ClusterManagementAddOn.
    Create(super::addon_create::CreateArgs),
}

/// Flags of `ocm addon enable`.
#[derive(Debug, Args)]
pub struct EnableArgs {
    /// Addon names (comma separated); each needs its ClusterManagementAddOn on the hub.
    #[arg(long, value_delimiter = ',', required = true)]
    names: Vec<String>,
    /// Clusters (comma separated).
    #[arg(long, value_delimiter = ',', required = true)]
    clusters: Vec<String>,
    /// Namespace the addon's agent is installed into on the clusters (default: the addon's).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    #[command(flatten)]
    hub: super::HubAccess,
}

/// Flags of `ocm addon disable`.
#[derive(Debug, Args)]
pub struct DisableArgs {
    /// Addon names (comma separated).
    #[arg(long, value_delimiter = ',', required = true)]
    names: Vec<String>,
    /// Clusters (comma separated).
    #[arg(long, value_delimiter = ',', required = true)]
    clusters: Vec<String>,
    #[command(flatten)]
    hub: super::HubAccess,
}

/// Flags of `ocm get addons`.
#[derive(Debug, Args)]
pub struct GetAddonsArgs {
    #[command(flatten)]
    namespaces: ClusterNamespaceFlags,
    #[command(flatten)]
    output: OutputFlag,
    #[command(flatten)]
    hub: super::HubAccess,
}

/// Runs `ocm addon …`.
pub async fn run(args: AddonArgs) -> anyhow::Result<()> {
    match args.command {
        AddonCommand::Enable(args) => enable(args).await,
        AddonCommand::Disable(args) => disable(args).await,
        AddonCommand::Create(args) => super::addon_create::create(args).await,
    }
}

async fn enable(args: EnableArgs) -> anyhow::Result<()> {
    let client = args.hub.client().await?;
    let cmas: Api<ClusterManagementAddOn> = Api::all(client.clone());
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    for name in &args.names {
        if cmas.get_opt(name).await?.is_none() {
            bail!("addon {name:?} is not known on this hub (no ClusterManagementAddOn {name:?})");
        }
    }
    for cluster in &args.clusters {
        if clusters.get_opt(cluster).await?.is_none() {
            bail!("cluster {cluster:?} is not a managed cluster of this hub");
        }
    }
    // v1alpha1 carries the install namespace in the spec (v1beta1 has no such field).
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(
            "addon.open-cluster-management.io",
            "v1alpha1",
            "ManagedClusterAddOn",
        ),
        "managedclusteraddons",
    );
    for cluster in &args.clusters {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), cluster, &resource);
        for name in &args.names {
            let mut spec = json!({});
            if let Some(ns) = &args.namespace {
                spec["installNamespace"] = json!(ns);
            }
            let object: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "addon.open-cluster-management.io/v1alpha1",
                "kind": "ManagedClusterAddOn",
                "metadata": {"name": name, "namespace": cluster},
                "spec": spec,
            }))?;
            match api.create(&PostParams::default(), &object).await {
                Ok(_) => println!("addon {name} enabled on cluster {cluster}"),
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    println!("addon {name} is already enabled on cluster {cluster}")
                }
                Err(err) => {
                    return Err(err).with_context(|| format!("enabling {name} on {cluster}"));
                }
            }
        }
    }
    Ok(())
}

async fn disable(args: DisableArgs) -> anyhow::Result<()> {
    let client = args.hub.client().await?;
    for cluster in &args.clusters {
        let api: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), cluster);
        for name in &args.names {
            match api.delete(name, &DeleteParams::default()).await {
                Ok(_) => println!("addon {name} disabled on cluster {cluster}"),
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    println!("addon {name} is not enabled on cluster {cluster}")
                }
                Err(err) => {
                    return Err(err).with_context(|| format!("disabling {name} on {cluster}"));
                }
            }
        }
    }
    Ok(())
}

/// The status of condition `type_`, empty when absent (as kubectl's printer columns).
fn condition_status(mca: &ManagedClusterAddOn, type_: &str) -> String {
    mca.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
        .map(|c| c.status.clone())
        .unwrap_or_default()
}

/// The table `kubectl get managedclusteraddons` prints: NAME, AVAILABLE, DEGRADED,
/// PROGRESSING; wide adds AGENT NAMESPACE (where the agent runs on its cluster) and HEALTH
/// CHECK (its mode).
pub fn render_addons(addons: &[ManagedClusterAddOn], style: TableStyle) -> String {
    let rows: Vec<Row> = addons
        .iter()
        .map(|a| {
            let mut cells = vec![
                a.metadata.name.clone().unwrap_or_default(),
                condition_status(a, "Available"),
                condition_status(a, "Degraded"),
                condition_status(a, "Progressing"),
            ];
            if style.wide {
                cells.extend([agent_namespace(a), health_check_mode(a)]);
            }
            Row {
                namespace: a.metadata.namespace.clone().unwrap_or_default(),
                cells,
            }
        })
        .collect();
    let mut headers = vec!["NAME", "AVAILABLE", "DEGRADED", "PROGRESSING"];
    if style.wide {
        headers.extend(["AGENT NAMESPACE", "HEALTH CHECK"]);
    }
    render_table(&headers, rows, style.namespace_column)
}

fn agent_namespace(mca: &ManagedClusterAddOn) -> String {
    mca.status
        .as_ref()
        .map(|s| s.namespace.clone())
        .unwrap_or_default()
}

fn health_check_mode(mca: &ManagedClusterAddOn) -> String {
    mca.status
        .as_ref()
        .and_then(|s| s.health_check.as_ref())
        .and_then(|h| serde_json::to_value(h.mode).ok())
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Prints the addons of one cluster or of all.
pub async fn get_addons(args: GetAddonsArgs) -> anyhow::Result<()> {
    let hub = args.hub.connect().await?;
    let scope = args.namespaces.scope(hub.context_namespace());
    let nothing = format!(
        "{} Enable one with `ocm addon enable --names NAME --clusters CLUSTER`.",
        scope.nothing_found("addons")
    );
    get_and_print::<ManagedClusterAddOn>(
        &hub.client,
        &scope,
        &ListParams::default(),
        args.output.output,
        render_addons,
        &nothing,
    )
    .await
}
