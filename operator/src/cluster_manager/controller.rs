//! The ClusterManager controller: applies what [`super::render`] says (server-side apply),
//! reports `Applied` and `Progressing` with upstream's reasons, observed generation and
//! related resources, and on deletion removes everything it created before letting the
//! ClusterManager go (finalizer `operator.open-cluster-management.io/cluster-manager-cleanup`).
//!
//! Not yet: the webhook server's certificate, the webhook configurations and the hub CRDs
//! with their conversion stanza (the webhook Deployment waits for its certificate Secret), the
//! Hosted mode, `HubRegistrationDegraded` / `HubPlacementDegraded`.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::controller::Action;
use kube::runtime::{Controller, watcher};
use ocm_api::operator::v1::ClusterManager;
use ocm_runtime::conditions::{condition, set_condition};
use ocm_runtime::shutdown::Shutdown;
use serde_json::{Value, json};

use super::render::{RenderInput, render};

/// The finalizer that holds a deleting ClusterManager until its objects are gone.
pub const CLEANUP_FINALIZER: &str = "operator.open-cluster-management.io/cluster-manager-cleanup";

/// Field manager of what the operator applies.
const FIELD_MANAGER: &str = "cluster-manager-operator";

/// Why one reconcile failed (it is retried).
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// The hub refused or did not answer.
    #[error("hub API: {0}")]
    Api(#[from] kube::Error),
    /// An object did not (de)serialize.
    #[error("encoding: {0}")]
    Encoding(#[from] serde_json::Error),
}

/// How the operator runs.
#[derive(Debug, Clone)]
pub struct OperatorOptions {
    /// The `ocm` image the hub components run (unless the ClusterManager names its own).
    pub image: String,
}

struct Ctx {
    client: kube::Client,
    options: OperatorOptions,
}

/// Runs the ClusterManager controller until `shutdown`.
pub async fn run(client: kube::Client, options: OperatorOptions, shutdown: Shutdown) {
    let api: Api<ClusterManager> = Api::all(client.clone());
    let ctx = Arc::new(Ctx { client, options });
    Controller::new(api, watcher::Config::default())
        .graceful_shutdown_on(async move { shutdown.cancelled().await })
        .run(reconcile, error_policy, ctx)
        .for_each(|_| async {})
        .await;
}

fn error_policy(_cm: Arc<ClusterManager>, err: &OperatorError, _ctx: Arc<Ctx>) -> Action {
    tracing::debug!(%err, "cluster manager reconcile failed; retrying");
    Action::requeue(Duration::from_secs(5))
}

/// Where a rendered object lives: group, version, plural resource, namespace, name.
struct Coordinates<'a> {
    group: &'a str,
    version: &'a str,
    kind: &'a str,
    resource: String,
    namespace: &'a str,
    name: &'a str,
}

fn coordinates(object: &Value) -> Coordinates<'_> {
    let text = |p: &str| {
        object
            .pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let api_version = text("/apiVersion");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = text("/kind");
    Coordinates {
        group,
        version,
        kind,
        resource: format!("{}s", kind.to_lowercase()),
        namespace: text("/metadata/namespace"),
        name: text("/metadata/name"),
    }
}

/// The API of a rendered object, and its name.
fn api_of(client: &kube::Client, object: &Value) -> (Api<DynamicObject>, String) {
    let at = coordinates(object);
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(at.group, at.version, at.kind),
        &at.resource,
    );
    let api = match at.namespace {
        "" => Api::all_with(client.clone(), &resource),
        ns => Api::namespaced_with(client.clone(), ns, &resource),
    };
    (api, at.name.to_owned())
}

/// `relatedResources` entry of a rendered object.
fn related(object: &Value) -> Value {
    let at = coordinates(object);
    json!({"group": at.group, "version": at.version, "resource": at.resource,
           "namespace": at.namespace, "name": at.name})
}

async fn control_plane_nodes(client: &kube::Client) -> usize {
    let nodes: Api<Node> = Api::all(client.clone());
    let mut count = 0;
    for label in [
        "node-role.kubernetes.io/control-plane",
        "node-role.kubernetes.io/master",
    ] {
        if let Ok(list) = nodes.list(&ListParams::default().labels(label)).await {
            count = count.max(list.items.len());
        }
    }
    count
}

async fn reconcile(cm: Arc<ClusterManager>, ctx: Arc<Ctx>) -> Result<Action, OperatorError> {
    let api: Api<ClusterManager> = Api::all(ctx.client.clone());
    let name = cm.metadata.name.clone().unwrap_or_default();
    let nodes = control_plane_nodes(&ctx.client).await;
    let objects = render(&RenderInput {
        cluster_manager: &cm,
        image: &ctx.options.image,
        control_plane_nodes: nodes,
    });
    let finalizers = cm.metadata.finalizers.clone().unwrap_or_default();
    let has_finalizer = finalizers.iter().any(|f| f == CLEANUP_FINALIZER);
    if cm.metadata.deletion_timestamp.is_some() {
        if !has_finalizer {
            return Ok(Action::await_change());
        }
        // Cluster-scoped objects by name, then the namespace (which takes the rest).
        for object in objects.iter().rev() {
            let (objects_api, object_name) = api_of(&ctx.client, object);
            match objects_api
                .delete(&object_name, &DeleteParams::default())
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(err) => return Err(err.into()),
            }
        }
        let rest: Vec<&String> = finalizers
            .iter()
            .filter(|f| *f != CLEANUP_FINALIZER)
            .collect();
        let patch = json!({"metadata": {"finalizers": rest,
                                        "resourceVersion": cm.metadata.resource_version}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        return Ok(Action::await_change());
    }
    if !has_finalizer {
        let mut with = finalizers.clone();
        with.push(CLEANUP_FINALIZER.to_owned());
        let patch = json!({"metadata": {"finalizers": with,
                                        "resourceVersion": cm.metadata.resource_version}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        return Ok(Action::await_change());
    }
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut failure = None;
    let mut rolling = Vec::new();
    for object in &objects {
        let (objects_api, object_name) = api_of(&ctx.client, object);
        match objects_api
            .patch(&object_name, &params, &Patch::Apply(object))
            .await
        {
            Ok(written) => {
                if object["kind"] == "Deployment" && !deployment_up_to_date(&written) {
                    rolling.push(object_name);
                }
            }
            Err(err) => {
                failure = Some(format!(
                    "{} {object_name}: {err}",
                    object["kind"].as_str().unwrap_or_default()
                ));
                break;
            }
        }
    }
    let generation = cm.metadata.generation;
    let mut conditions = cm
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let (status, reason, message) = match &failure {
        None => (
            "True",
            "ClusterManagerApplied",
            "Components of cluster manager are applied".to_owned(),
        ),
        Some(err) => ("False", "RuntimeResourceApplyFailed", err.clone()),
    };
    set_condition(
        &mut conditions,
        condition("Applied", status, reason, &message, generation),
    );
    let (status, reason, message) = if rolling.is_empty() {
        (
            "False",
            "ClusterManagerUpToDate",
            "Components of cluster manager are up to date".to_owned(),
        )
    } else {
        (
            "True",
            "ClusterManagerDeploymentRolling",
            format!("Deployments {} are rolling out", rolling.join(", ")),
        )
    };
    set_condition(
        &mut conditions,
        condition("Progressing", status, reason, &message, generation),
    );
    let status = json!({
        "observedGeneration": generation,
        "conditions": conditions,
        "relatedResources": objects.iter().map(related).collect::<Vec<_>>(),
    });
    let current = serde_json::to_value(cm.status.clone().unwrap_or_default())?;
    let unchanged = ["observedGeneration", "conditions", "relatedResources"]
        .iter()
        .all(|k| current.get(k) == status.get(k));
    if !unchanged {
        let patch = json!({"metadata": {"resourceVersion": cm.metadata.resource_version},
                           "status": status});
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    Ok(Action::requeue(
        if rolling.is_empty() && failure.is_none() {
            Duration::from_secs(300)
        } else {
            Duration::from_secs(10)
        },
    ))
}

/// Whether a Deployment (as the server returned it) has rolled out its current generation.
fn deployment_up_to_date(deployment: &DynamicObject) -> bool {
    let value = &deployment.data;
    let generation = deployment.metadata.generation.unwrap_or_default();
    let replicas = value
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let status = |field: &str| {
        value
            .pointer(&format!("/status/{field}"))
            .and_then(Value::as_i64)
            .unwrap_or_default()
    };
    status("observedGeneration") >= generation
        && status("updatedReplicas") >= replicas
        && status("availableReplicas") >= replicas
}
