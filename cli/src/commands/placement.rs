//! `ocm get placements`, `ocm get decisions` and `ocm explain placement`.

use std::sync::Arc;

use clap::{Args, Subcommand};
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use ocm_api::cluster::names::labels::{DECISION_GROUP_INDEX, DECISION_GROUP_NAME, PLACEMENT};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1alpha1::AddOnPlacementScore;
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_api::cluster::v1beta2::{ManagedClusterSet, ManagedClusterSetBinding};
use ocm_placement::scheduler::{
    Explanation, Snapshot, SnapshotInput, explain as explain_placement,
};

/// Flags of `ocm get placements`.
#[derive(Debug, Args)]
pub struct GetPlacementsArgs {
    /// Namespace (default: every namespace).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    #[command(flatten)]
    hub: super::HubAccess,
}

/// Flags of `ocm get decisions`.
#[derive(Debug, Args)]
pub struct GetDecisionsArgs {
    /// The placement.
    placement: String,
    /// Its namespace.
    #[arg(short = 'n', long, default_value = "default")]
    namespace: String,
    #[command(flatten)]
    hub: super::HubAccess,
}

/// Flags of `ocm explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    #[command(subcommand)]
    what: ExplainWhat,
}

#[derive(Debug, Subcommand)]
enum ExplainWhat {
    /// Why each cluster was or was not chosen by a placement, with each prioritizer's score.
    Placement {
        /// The placement.
        name: String,
        /// Its namespace.
        #[arg(short = 'n', long, default_value = "default")]
        namespace: String,
        #[command(flatten)]
        hub: super::HubAccess,
    },
}

fn condition(p: &Placement, t: &str) -> String {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == t))
        .map(|c| c.status.clone())
        .unwrap_or_default()
}

/// The placements table: NAMESPACE, NAME, SELECTED, SATISFIED, MISCONFIGURED.
pub fn render_placements(placements: &[Placement]) -> String {
    let rows: Vec<Vec<String>> = placements
        .iter()
        .map(|p| {
            vec![
                p.namespace().unwrap_or_default(),
                p.name_any(),
                p.status
                    .as_ref()
                    .map(|s| s.number_of_selected_clusters.to_string())
                    .unwrap_or_default(),
                condition(p, "PlacementSatisfied"),
                condition(p, "PlacementMisconfigured"),
            ]
        })
        .collect();
    ocm_runtime::text_table::render(
        &[
            "NAMESPACE",
            "NAME",
            "SELECTED",
            "SATISFIED",
            "MISCONFIGURED",
        ],
        &rows,
    )
}

/// The decisions table: DECISION, GROUP, INDEX, CLUSTER (one row per cluster).
pub fn render_decisions(decisions: &[PlacementDecision]) -> String {
    let mut rows = Vec::new();
    for d in decisions {
        let label = |k: &str| d.labels().get(k).cloned().unwrap_or_default();
        for c in d.status.iter().flat_map(|s| s.decisions.iter()) {
            rows.push(vec![
                d.name_any(),
                label(DECISION_GROUP_NAME),
                label(DECISION_GROUP_INDEX),
                c.cluster_name.clone(),
            ]);
        }
    }
    ocm_runtime::text_table::render(&["DECISION", "GROUP", "INDEX", "CLUSTER"], &rows)
}

/// The explanation table: CLUSTER, VERDICT.
pub fn render_explanation(explanation: &Explanation) -> String {
    let rows: Vec<Vec<String>> = explanation
        .clusters
        .iter()
        .map(|c| vec![c.cluster.clone(), c.verdict.to_string()])
        .collect();
    let mut out = ocm_runtime::text_table::render(&["CLUSTER", "VERDICT"], &rows);
    if let Some(m) = &explanation.result.misconfiguration {
        out.push_str(&format!("misconfigured: {m:?}\n"));
    }
    out
}

/// Prints the placements table.
pub async fn get_placements(args: GetPlacementsArgs) -> anyhow::Result<()> {
    let client = args.hub.client().await?;
    let api: Api<Placement> = match &args.namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    };
    let list = api.list(&ListParams::default()).await?.items;
    if list.is_empty() {
        println!("No placements.");
    } else {
        print!("{}", render_placements(&list));
    }
    Ok(())
}

/// Prints the clusters a placement decided on.
pub async fn get_decisions(args: GetDecisionsArgs) -> anyhow::Result<()> {
    let client = args.hub.client().await?;
    let api: Api<PlacementDecision> = Api::namespaced(client, &args.namespace);
    let mut list = api
        .list(&ListParams::default().labels(&format!("{PLACEMENT}={}", args.placement)))
        .await?
        .items;
    list.sort_by_key(|d| d.name_any());
    if list.is_empty() {
        println!(
            "No decisions for placement {}/{} (does it exist?).",
            args.namespace, args.placement
        );
    } else {
        print!("{}", render_decisions(&list));
    }
    Ok(())
}

/// Every object of kind `K` on the hub.
async fn all<K>(client: &kube::Client) -> anyhow::Result<Vec<Arc<K>>>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + for<'de> k8s_openapi::serde::Deserialize<'de>
        + std::fmt::Debug,
{
    let items = Api::<K>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items;
    Ok(items.into_iter().map(Arc::new).collect())
}

/// Explains a placement's decision from the hub's current objects.
pub async fn explain(args: ExplainArgs) -> anyhow::Result<()> {
    let ExplainWhat::Placement {
        name,
        namespace,
        hub,
    } = args.what;
    let client = hub.client().await?;
    let placement = Api::<Placement>::namespaced(client.clone(), &namespace)
        .get_opt(&name)
        .await?
        .ok_or_else(|| anyhow::anyhow!("placement {namespace}/{name} not found"))?;
    let snapshot = Snapshot::new(SnapshotInput {
        clusters: all::<ManagedCluster>(&client).await?,
        cluster_sets: all::<ManagedClusterSet>(&client).await?,
        bindings: all::<ManagedClusterSetBinding>(&client).await?,
        scores: all::<AddOnPlacementScore>(&client).await?,
        decisions: all::<PlacementDecision>(&client).await?,
        now: jiff::Timestamp::now(),
    });
    print!(
        "{}",
        render_explanation(&explain_placement(&placement, &snapshot))
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tables_show_selection_and_decisions() {
        let p: Placement = serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "p", "namespace": "apps"}, "spec": {},
            "status": {"numberOfSelectedClusters": 2, "conditions": [
                {"type": "PlacementSatisfied", "status": "True", "reason": "r", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        }))
        .unwrap();
        assert_eq!(
            render_placements(&[p]),
            "NAMESPACE   NAME   SELECTED   SATISFIED   MISCONFIGURED\napps        p      2          True\n"
        );
        let d: PlacementDecision = serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "PlacementDecision",
            "metadata": {"name": "p-decision-1", "namespace": "apps", "labels": {
                PLACEMENT: "p", DECISION_GROUP_INDEX: "0", DECISION_GROUP_NAME: "canary"}},
            "status": {"decisions": [{"clusterName": "c1", "reason": ""}]}
        }))
        .unwrap();
        assert_eq!(
            render_decisions(&[d]),
            "DECISION       GROUP    INDEX   CLUSTER\np-decision-1   canary   0       c1\n"
        );
    }
}
