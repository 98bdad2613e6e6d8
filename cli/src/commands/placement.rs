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

use super::get_output::{NamespaceFlags, OutputFlag, Row, TableStyle, get_and_print, render_table};

/// Flags of `ocm get placements`.
#[derive(Debug, Args)]
pub struct GetPlacementsArgs {
    #[command(flatten)]
    namespaces: NamespaceFlags,
    #[command(flatten)]
    output: OutputFlag,
    #[command(flatten)]
    hub: super::HubAccess,
}

/// Flags of `ocm get decisions`.
#[derive(Debug, Args)]
pub struct GetDecisionsArgs {
    /// Only the decisions of this placement (default: every placement's).
    placement: Option<String>,
    #[command(flatten)]
    namespaces: NamespaceFlags,
    #[command(flatten)]
    output: OutputFlag,
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
        /// Its namespace (default: the kubeconfig context's namespace, else `default`, as
        /// kubectl).
        #[arg(short = 'n', long)]
        namespace: Option<String>,
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

/// The placements table: NAME, SELECTED, SATISFIED, MISCONFIGURED; wide adds CLUSTERSETS
/// and DECISION GROUPS.
pub fn render_placements(placements: &[Placement], style: TableStyle) -> String {
    let rows: Vec<Row> = placements
        .iter()
        .map(|p| {
            let mut cells = vec![
                p.name_any(),
                p.status
                    .as_ref()
                    .map(|s| s.number_of_selected_clusters.to_string())
                    .unwrap_or_default(),
                condition(p, "PlacementSatisfied"),
                condition(p, "PlacementMisconfigured"),
            ];
            if style.wide {
                cells.push(p.spec.cluster_sets.join(","));
                cells.push(
                    p.status
                        .as_ref()
                        .map(|s| s.decision_groups.len().to_string())
                        .unwrap_or_default(),
                );
            }
            Row {
                namespace: p.namespace().unwrap_or_default(),
                cells,
            }
        })
        .collect();
    let mut headers = vec!["NAME", "SELECTED", "SATISFIED", "MISCONFIGURED"];
    if style.wide {
        headers.extend(["CLUSTERSETS", "DECISION GROUPS"]);
    }
    render_table(&headers, rows, style.namespace_column)
}

/// The decisions table: DECISION, GROUP, INDEX, CLUSTER (one row per decided cluster, one
/// with an empty CLUSTER for a decision of none); wide adds PLACEMENT and REASON.
pub fn render_decisions(decisions: &[PlacementDecision], style: TableStyle) -> String {
    let mut rows = Vec::new();
    for d in decisions {
        let label = |k: &str| d.labels().get(k).cloned().unwrap_or_default();
        let decided: Vec<(String, String)> = d
            .status
            .iter()
            .flat_map(|s| s.decisions.iter())
            .map(|c| (c.cluster_name.clone(), c.reason.clone()))
            .collect();
        let clusters = if decided.is_empty() {
            vec![(String::new(), String::new())]
        } else {
            decided
        };
        for (cluster, reason) in clusters {
            let mut cells = vec![
                d.name_any(),
                label(DECISION_GROUP_NAME),
                label(DECISION_GROUP_INDEX),
                cluster,
            ];
            if style.wide {
                cells.extend([label(PLACEMENT), reason]);
            }
            rows.push(Row {
                namespace: d.namespace().unwrap_or_default(),
                cells,
            });
        }
    }
    let mut headers = vec!["DECISION", "GROUP", "INDEX", "CLUSTER"];
    if style.wide {
        headers.extend(["PLACEMENT", "REASON"]);
    }
    render_table(&headers, rows, style.namespace_column)
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

/// Prints the placements.
pub async fn get_placements(args: GetPlacementsArgs) -> anyhow::Result<()> {
    let hub = args.hub.connect().await?;
    let scope = args.namespaces.scope(hub.context_namespace());
    get_and_print::<Placement>(
        &hub.client,
        &scope,
        &ListParams::default(),
        args.output.output,
        render_placements,
        &scope.nothing_found("placements"),
    )
    .await
}

/// Prints the decisions of one placement or of all, one row per decided cluster.
pub async fn get_decisions(args: GetDecisionsArgs) -> anyhow::Result<()> {
    let hub = args.hub.connect().await?;
    let scope = args.namespaces.scope(hub.context_namespace());
    let params = match &args.placement {
        Some(placement) => ListParams::default().labels(&format!("{PLACEMENT}={placement}")),
        None => ListParams::default(),
    };
    let nothing = match &args.placement {
        Some(placement) => format!(
            "No decisions of placement {placement} found{} (does it exist?).",
            scope.location()
        ),
        None => scope.nothing_found("decisions"),
    };
    get_and_print::<PlacementDecision>(
        &hub.client,
        &scope,
        &params,
        args.output.output,
        render_decisions,
        &nothing,
    )
    .await
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
    let hub = hub.connect().await?;
    let namespace = namespace
        .or_else(|| hub.context_namespace())
        .unwrap_or_else(|| "default".to_owned());
    let client = hub.client;
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
            "metadata": {"name": "p", "namespace": "apps"}, "spec": {"clusterSets": ["a", "b"]},
            "status": {"numberOfSelectedClusters": 2, "conditions": [
                {"type": "PlacementSatisfied", "status": "True", "reason": "r", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        }))
        .unwrap();
        assert_eq!(
            render_placements(std::slice::from_ref(&p), TableStyle::default()),
            "NAME   SELECTED   SATISFIED   MISCONFIGURED\np      2          True\n"
        );
        let all_wide = TableStyle {
            namespace_column: true,
            wide: true,
        };
        assert_eq!(
            render_placements(&[p], all_wide),
            "NAMESPACE   NAME   SELECTED   SATISFIED   MISCONFIGURED   CLUSTERSETS   DECISION GROUPS\n\
             apps        p      2          True                        a,b           0\n"
        );
        let d: PlacementDecision = serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "PlacementDecision",
            "metadata": {"name": "p-decision-1", "namespace": "apps", "labels": {
                PLACEMENT: "p", DECISION_GROUP_INDEX: "0", DECISION_GROUP_NAME: "canary"}},
            "status": {"decisions": [{"clusterName": "c1", "reason": ""}]}
        }))
        .unwrap();
        assert_eq!(
            render_decisions(std::slice::from_ref(&d), TableStyle::default()),
            "DECISION       GROUP    INDEX   CLUSTER\np-decision-1   canary   0       c1\n"
        );
        assert_eq!(
            render_decisions(&[d], all_wide),
            "NAMESPACE   DECISION       GROUP    INDEX   CLUSTER   PLACEMENT   REASON\n\
             apps        p-decision-1   canary   0       c1        p\n"
        );
    }
}
