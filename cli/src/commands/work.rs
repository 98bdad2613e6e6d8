//! `ocm create work` and `ocm get works`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams, PostParams};
use ocm_api::work::v1::ManifestWork;
use serde_json::{Value, json};

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
    /// Only this cluster's works (default: every cluster).
    #[arg(long)]
    cluster: Option<String>,
    #[command(flatten)]
    hub: super::HubAccess,
}

/// Reads the manifests of `text`: YAML documents, each an object or a `List` of objects.
pub fn manifests_from_yaml(text: &str) -> anyhow::Result<Vec<Value>> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).context("parsing YAML")?;
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

/// The works table: NAME, CLUSTER, APPLIED, AVAILABLE, AGE.
pub fn render_works(works: &[ManifestWork], now: jiff::Timestamp) -> String {
    let condition = |w: &ManifestWork, t: &str| {
        w.status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == t))
            .map(|c| c.status.clone())
            .unwrap_or_default()
    };
    let rows: Vec<Vec<String>> = works
        .iter()
        .map(|w| {
            let age = w
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|t| ocm_apiserver::table::human_duration(now.as_second() - t.0.as_second()))
                .unwrap_or_default();
            vec![
                w.metadata.name.clone().unwrap_or_default(),
                w.metadata.namespace.clone().unwrap_or_default(),
                condition(w, "Applied"),
                condition(w, "Available"),
                age,
            ]
        })
        .collect();
    ocm_runtime::text_table::render(&["NAME", "CLUSTER", "APPLIED", "AVAILABLE", "AGE"], &rows)
}

/// Prints the works table.
pub async fn get_works(args: GetWorksArgs) -> anyhow::Result<()> {
    let client = args.hub.client().await?;
    let api: Api<ManifestWork> = match &args.cluster {
        Some(c) => Api::namespaced(client, c),
        None => Api::all(client),
    };
    let works = api.list(&ListParams::default()).await?.items;
    if works.is_empty() {
        println!("No ManifestWorks. Create one with `ocm create work NAME --cluster C -f FILE`.");
    } else {
        print!("{}", render_works(&works, jiff::Timestamp::now()));
    }
    Ok(())
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
        let text = render_works(&[w], "2026-01-01T00:05:00Z".parse().unwrap());
        assert_eq!(
            text,
            "NAME   CLUSTER   APPLIED   AVAILABLE   AGE\napp    c1        True      False       5m\n"
        );
    }
}
