//! `ocm create work` and `ocm get works`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams, PostParams};
use ocm_api::work::v1::ManifestWork;
use serde_json::{Value, json};

use super::get_output::{
    ClusterNamespaceFlags, OutputFlag, Row, TableStyle, get_and_print, render_table,
};

/// Flags of `ocm create work`.
#[derive(Debug, Args)]
pub struct CreateWorkArgs {
    /// Name of the ManifestWork.
    name: String,
    /// The managed cluster (its namespace on the hub).
    #[arg(long)]
    cluster: String,
    /// File of manifests: one or more YAML documents, or a List.
    #[arg(short = 'f', long = "file")]
    file: PathBuf,
    /// Replace the manifests of an existing work of that name.
    #[arg(long)]
    overwrite: bool,
    #[command(flatten)]
    hub: super::HubAccess,
}

/// Flags of `ocm get works`.
#[derive(Debug, Args)]
pub struct GetWorksArgs {
    #[command(flatten)]
    namespaces: ClusterNamespaceFlags,
    #[command(flatten)]
    output: OutputFlag,
    #[command(flatten)]
    hub: super::HubAccess,
}

/// The YAML documents of `text` as JSON values (empty documents as `null`).
pub fn yaml_documents(text: &str) -> anyhow::Result<Vec<Value>> {
    serde_saphyr::from_multiple(text).context("parsing YAML")
}

/// Reads the manifests of `text`: YAML documents, each an object or a `List` of objects.
pub fn manifests_from_yaml(text: &str) -> anyhow::Result<Vec<Value>> {
    let docs = yaml_documents(text)?;
    let mut out = Vec::new();
    for doc in docs {
        if doc.is_null() {
            continue;
        }
        if doc.get("kind").and_then(Value::as_str) == Some("List") {
            out.extend(doc["items"].as_array().cloned().unwrap_or_default());
        } else {
            out.push(doc);
        }
    }
    for (i, m) in out.iter().enumerate() {
        if !m.is_object() || m.get("kind").is_none() || m.get("apiVersion").is_none() {
            anyhow::bail!(
                "manifest {} is not a Kubernetes object with apiVersion and kind",
                i + 1
            );
        }
    }
    if out.is_empty() {
        anyhow::bail!("no manifests found");
    }
    Ok(out)
}

/// Creates (or with `--overwrite` updates) the ManifestWork.
pub async fn create_work(args: CreateWorkArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("reading {}", args.file.display()))?;
    let manifests =
        manifests_from_yaml(&text).with_context(|| format!("in {}", args.file.display()))?;
    let client = args.hub.client().await?;
    if Api::<Namespace>::all(client.clone())
        .get_opt(&args.cluster)
        .await?
        .is_none()
    {
        anyhow::bail!(
            "cluster {} has no namespace on the hub (is it joined and accepted? see `ocm get clusters`)",
            args.cluster
        );
    }
    let api: Api<ManifestWork> = Api::namespaced(client, &args.cluster);
    let work: ManifestWork = serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": args.name, "namespace": args.cluster},
        "spec": {"workload": {"manifests": manifests}},
    }))?;
    match api.get_opt(&args.name).await? {
        Some(_) if !args.overwrite => anyhow::bail!(
            "work {} already exists in cluster {} (use --overwrite to replace its manifests)",
            args.name,
            args.cluster
        ),
        Some(existing) => {
            let mut updated = existing;
            updated.spec.workload = work.spec.workload;
            api.replace(&args.name, &PostParams::default(), &updated)
                .await
                .map_err(server_message)?;
            println!("manifestwork {}/{} updated", args.cluster, args.name);
        }
        None => {
            api.create(&PostParams::default(), &work)
                .await
                .map_err(server_message)?;
            println!("manifestwork {}/{} created", args.cluster, args.name);
        }
    }
    Ok(())
}

fn server_message(e: kube::Error) -> anyhow::Error {
    match e {
        kube::Error::Api(s) => anyhow::anyhow!("the hub refused the work: {}", s.message),
        other => other.into(),
    }
}

/// The works table: NAME, APPLIED, AVAILABLE, AGE; wide adds PROGRESSING, DEGRADED and
/// MANIFESTS (how many the work carries).
pub fn render_works(works: &[ManifestWork], now: jiff::Timestamp, style: TableStyle) -> String {
    let condition = |w: &ManifestWork, t: &str| {
        w.status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == t))
            .map(|c| c.status.clone())
            .unwrap_or_default()
    };
    let rows: Vec<Row> = works
        .iter()
        .map(|w| {
            let age = w
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|t| ocm_apiserver::table::human_duration(now.as_second() - t.0.as_second()))
                .unwrap_or_default();
            let mut cells = vec![
                w.metadata.name.clone().unwrap_or_default(),
                condition(w, "Applied"),
                condition(w, "Available"),
                age,
            ];
            if style.wide {
                cells.extend([
                    condition(w, "Progressing"),
                    condition(w, "Degraded"),
                    w.spec.workload.manifests.len().to_string(),
                ]);
            }
            Row {
                namespace: w.metadata.namespace.clone().unwrap_or_default(),
                cells,
            }
        })
        .collect();
    let mut headers = vec!["NAME", "APPLIED", "AVAILABLE", "AGE"];
    if style.wide {
        headers.extend(["PROGRESSING", "DEGRADED", "MANIFESTS"]);
    }
    render_table(&headers, rows, style.namespace_column)
}

/// Prints the works of one cluster or of all.
pub async fn get_works(args: GetWorksArgs) -> anyhow::Result<()> {
    let hub = args.hub.connect().await?;
    let scope = args.namespaces.scope(hub.context_namespace());
    let nothing = format!(
        "{} Create one with `ocm create work NAME --cluster C -f FILE`.",
        scope.nothing_found("ManifestWorks")
    );
    get_and_print::<ManifestWork>(
        &hub.client,
        &scope,
        &ListParams::default(),
        args.output.output,
        |works, style| render_works(works, jiff::Timestamp::now(), style),
        &nothing,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_documents_and_lists_become_manifests() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n\
                    apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: b}}\n";
        let m = manifests_from_yaml(text).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[1]["kind"], "Secret");
        assert!(manifests_from_yaml("foo: bar\n").is_err());
        assert!(manifests_from_yaml("").is_err());
    }

    #[test]
    fn works_table_has_the_conditions() {
        let w: ManifestWork = serde_json::from_value(json!({
            "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
            "metadata": {"name": "app", "namespace": "c1", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"workload": {"manifests": []}},
            "status": {"conditions": [
                {"type": "Applied", "status": "True", "reason": "r", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                {"type": "Available", "status": "False", "reason": "r", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        }))
        .unwrap();
        let now = "2026-01-01T00:05:00Z".parse().unwrap();
        let text = render_works(std::slice::from_ref(&w), now, TableStyle::default());
        assert_eq!(
            text,
            "NAME   APPLIED   AVAILABLE   AGE\napp    True      False       5m\n"
        );
        let all_wide = TableStyle {
            namespace_column: true,
            wide: true,
        };
        assert_eq!(
            render_works(&[w], now, all_wide),
            "NAMESPACE   NAME   APPLIED   AVAILABLE   AGE   PROGRESSING   DEGRADED   MANIFESTS\n\
             c1          app    True      False       5m                             0\n"
        );
    }
}
