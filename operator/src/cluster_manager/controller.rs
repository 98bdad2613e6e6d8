//! The ClusterManager controller: applies the hub CRDs and what [`super::render`] says
//! (server-side apply), keeps the webhook servers' certificates ([`super::webhook_cert`]),
//! reports `Applied` and `Progressing` with upstream's reasons, observed generation and
//! related resources, and on deletion removes everything it created but the CRDs before
//! letting the ClusterManager go (finalizer
//! `operator.open-cluster-management.io/cluster-manager-cleanup`).
//!
//! Hosted mode: the components (and the webhook certificate) in the namespace named after the
//! ClusterManager on this management cluster, pointed at the hub by the kubeconfig in Secret
//! `external-hub-kubeconfig` there; the CRDs on that hub. Without the secret, `Applied` is
//! False (`RuntimeResourceApplyFailed`, naming it).
//!
//! Once the webhook servers' Deployments are rolled out, the Mutating/ValidatingWebhookConfiguration
//! of the hub's admission policies are registered on the hub, each webhook naming its group's
//! webhook Service — in Hosted mode the URL of its server's configured address
//! ([`super::hosted`]) — (reason `WebhookApplyFailed` when that fails); deleting the
//! ClusterManager removes them first. A Hosted ClusterManager without the addresses gets
//! `Applied` False (`WebhookApplyFailed`, naming the missing fields) and nothing is applied.
//!
//! With them, the addon CRDs' `spec.conversion` names the addon webhook Service (Hosted: the
//! registration webhook's address; v1alpha1 and v1beta1 of ClusterManagementAddOn and
//! ManagedClusterAddOn converted by that server); it is turned off again when the
//! ClusterManager goes, since the CRDs stay.
//!
//! `HubRegistrationDegraded` and `HubPlacementDegraded` follow those components' Deployments.
//!
//! What a pass is about to install that `relatedResources` does not list yet is written there
//! first ([`record_ahead`]): what an earlier spec installed and the current one does not
//! render (a component turned off, such as the dashboard without its annotation) is pruned
//! from that list, so nothing installed may be missing from it — not even when the status
//! written at the end of the pass is refused because the ClusterManager changed meanwhile.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::{Controller, watcher};
use ocm_api::operator::v1::ClusterManager;
use ocm_runtime::conditions::{condition, set_condition};
use ocm_runtime::shutdown::Shutdown;
use serde_json::json;

use super::hosted::{HostedWebhooks, extra_hosts, hosted_webhooks, webhook_kinds};
use super::render::{
    EXTERNAL_HUB_KUBECONFIG, HUB_NAMESPACE, RenderInput, WebhookKind, components_namespace, crds,
    hosted, render,
};
use crate::apply::{
    Applied, apply_all, control_plane_nodes, delete_all, record_ahead, related, related_entries,
    set_finalizer, settle_related,
};
pub use crate::{OperatorError, OperatorOptions};
use ocm_webhook::install::WebhookEndpoint;

/// The finalizer that holds a deleting ClusterManager until its objects are gone.
pub const CLEANUP_FINALIZER: &str = "operator.open-cluster-management.io/cluster-manager-cleanup";

/// Field manager of what the operator applies.
const FIELD_MANAGER: &str = "cluster-manager-operator";
/// Field manager of the addon CRDs' `spec.conversion`.
const CONVERSION_MANAGER: &str = "cluster-manager-operator-conversion";

struct Ctx {
    client: kube::Client,
    options: OperatorOptions,
}

/// Runs the ClusterManager controller until `shutdown`.
#[inline(never)]
pub fn run(
    client: kube::Client,
    options: OperatorOptions,
    shutdown: Shutdown,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(run_body(client, options, shutdown))
}

async fn run_body(client: kube::Client, options: OperatorOptions, shutdown: Shutdown) {
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

/// `Hub<Component>Degraded` from the component's Deployment, with upstream's reasons:
/// `<Component>Functional` (False), `Unavailable<Component>Pod`, `Get<Component>DeploymentFailed`.
fn component_degraded(
    component: &str,
    deployment: Option<&Deployment>,
) -> (&'static str, String, String) {
    let Some(deployment) = deployment else {
        return (
            "True",
            format!("Get{component}DeploymentFailed"),
            format!("the {} deployment is missing", component.to_lowercase()),
        );
    };
    let wanted = deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1);
    let available = deployment
        .status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or_default();
    if available < wanted {
        (
            "True",
            format!("Unavailable{component}Pod"),
            format!(
                "{available} of {wanted} {} pods are available",
                component.to_lowercase()
            ),
        )
    } else {
        (
            "False",
            format!("{component}Functional"),
            format!("{component} is functional"),
        )
    }
}

/// Where the hub's API server reaches the webhook server of `kind` of ClusterManager
/// `cm_name`: its Service, or in Hosted mode (`hosted`) the configured address.
fn endpoint_of(
    cm_name: &str,
    hosted: Option<&HostedWebhooks>,
    kind: WebhookKind,
) -> WebhookEndpoint {
    match hosted {
        Some(hosted) => WebhookEndpoint::Url(hosted.of(kind).base_url()),
        None => WebhookEndpoint::Service {
            namespace: HUB_NAMESPACE.to_owned(),
            name: kind.service(cm_name),
        },
    }
}

/// The hub's webhook configurations, each webhook reached at the server of its API group
/// ([`WebhookKind::of_group`], [`endpoint_of`]) of ClusterManager `cm_name`, trusting
/// `ca_bundle`.
fn webhook_configurations(
    cm_name: &str,
    hosted: Option<&HostedWebhooks>,
    ca_bundle: &str,
) -> Vec<serde_json::Value> {
    use ocm_webhook::install::{mutating_configuration, routed, validating_configuration};
    let endpoint = |group: &str| endpoint_of(cm_name, hosted, WebhookKind::of_group(group));
    // The URL is replaced by the endpoint; only its path is kept.
    let base = "https://webhook.invalid";
    vec![
        routed(mutating_configuration(base, ca_bundle), endpoint),
        routed(validating_configuration(base, ca_bundle), endpoint),
    ]
}

/// The `spec.conversion` of the addon CRDs: through the addon webhook server of
/// ClusterManager `cm_name` trusting `ca_bundle`, or (`None`) no conversion webhook. Applied as
/// [`CONVERSION_MANAGER`], so the CRD applies (which leave `spec.conversion` out) neither
/// remove it nor fight over it, and a webhook rollout does not turn conversion off.
fn conversion_objects(
    cm_name: &str,
    hosted: Option<&HostedWebhooks>,
    ca_bundle: Option<&str>,
) -> Vec<serde_json::Value> {
    let endpoint = endpoint_of(cm_name, hosted, WebhookKind::Addon);
    ocm_webhook::install::conversion_objects(ca_bundle.map(|ca| (&endpoint, ca)))
}

/// The ClusterManager's current conditions.
fn conditions_of(
    cm: &ClusterManager,
) -> Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    cm.status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default()
}

/// Writes `Applied` False with `reason` and `message` (nothing was applied this pass).
async fn refuse(
    api: &Api<ClusterManager>,
    cm: &ClusterManager,
    reason: &str,
    message: &str,
) -> Result<(), kube::Error> {
    let generation = cm.metadata.generation;
    let mut conditions = conditions_of(cm);
    set_condition(
        &mut conditions,
        condition("Applied", "False", reason, message, generation),
    );
    let patch = json!({"metadata": {"resourceVersion": cm.metadata.resource_version},
                       "status": {"observedGeneration": generation,
                                  "conditions": conditions}});
    let name = cm.metadata.name.clone().unwrap_or_default();
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// A client of a Hosted ClusterManager's hub, from the external kubeconfig secret in
/// `namespace`; `Ok(Err(why))` when there is none or it does not make a client.
async fn hub_client(
    management: &kube::Client,
    namespace: &str,
) -> Result<Result<kube::Client, String>, kube::Error> {
    let secret =
        Api::<k8s_openapi::api::core::v1::Secret>::namespaced(management.clone(), namespace)
            .get_opt(EXTERNAL_HUB_KUBECONFIG)
            .await?;
    let yaml = secret
        .as_ref()
        .and_then(|s| s.data.as_ref())
        .and_then(|d| d.get("kubeconfig"))
        .and_then(|b| String::from_utf8(b.0.clone()).ok());
    let Some(yaml) = yaml else {
        return Ok(Err(format!(
            "secret {namespace}/{EXTERNAL_HUB_KUBECONFIG} (key kubeconfig) not found: the Hosted \
             hub components reach the hub through it"
        )));
    };
    Ok(ocm_runtime::kubeconfig::client_from_untrusted_yaml(&yaml)
        .await
        .map_err(|e| format!("secret {namespace}/{EXTERNAL_HUB_KUBECONFIG}: {e}")))
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
    if cm.metadata.deletion_timestamp.is_some() {
        if cm
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == CLEANUP_FINALIZER)
        {
            // The webhook configurations first (with the server gone, failurePolicy Fail
            // would refuse every OCM write), then cluster-scoped objects by name, then the
            // namespace (which takes the rest). A Hosted hub's are on that hub.
            let hub = if hosted(&cm) {
                hub_client(&ctx.client, &components_namespace(&cm))
                    .await?
                    .map_err(|why| tracing::warn!(%why, "cannot remove the hub's webhooks"))
                    .ok()
            } else {
                Some(ctx.client.clone())
            };
            if let Some(hub) = hub {
                delete_all(&hub, &webhook_configurations(&name, None, "")).await?;
                let none = conversion_objects(&name, None, None);
                if let Some(err) = apply_all(&hub, CONVERSION_MANAGER, &none).await.failure {
                    tracing::warn!(%err, "cannot turn the addon CRDs' conversion webhook off");
                }
            }
            delete_all(&ctx.client, &objects).await?;
            set_finalizer(&api, &cm.metadata, CLEANUP_FINALIZER, false).await?;
        }
        return Ok(Action::await_change());
    }
    if set_finalizer(&api, &cm.metadata, CLEANUP_FINALIZER, true).await? {
        return Ok(Action::await_change());
    }
    // A Hosted hub must be told where the webhook servers are before anything is applied:
    // without that its policies would not be enforced.
    let hosted_webhooks = match hosted_webhooks(&cm) {
        Ok(endpoints) => endpoints,
        Err(message) => {
            refuse(&api, &cm, "WebhookApplyFailed", &message).await?;
            return Ok(Action::requeue(Duration::from_secs(60)));
        }
    };
    // The hub: this cluster, or in Hosted mode the one behind the external kubeconfig.
    let hub = if hosted(&cm) {
        match hub_client(&ctx.client, &components_namespace(&cm)).await? {
            Ok(client) => client,
            Err(message) => {
                refuse(&api, &cm, "RuntimeResourceApplyFailed", &message).await?;
                return Ok(Action::requeue(Duration::from_secs(10)));
            }
        }
    } else {
        ctx.client.clone()
    };
    let crd_objects = crds(&cm);
    // What this pass installs goes into relatedResources first, so that it is pruned once no
    // longer rendered even if the status written at the end of the pass is refused.
    let planned: Vec<serde_json::Value> = crd_objects.iter().chain(&objects).map(related).collect();
    let recorded = related_entries(cm.status.as_ref().map(|s| s.related_resources.as_slice()));
    let cm = match record_ahead(&recorded, &planned) {
        Some(entries) => {
            let patch = json!({"metadata": {"resourceVersion": cm.metadata.resource_version},
                               "status": {"relatedResources": entries}});
            Arc::new(
                api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?,
            )
        }
        None => cm,
    };
    let crds_applied = apply_all(&hub, FIELD_MANAGER, &crd_objects).await;
    let Applied {
        mut failure,
        rolling,
        ..
    } = match &crds_applied.failure {
        None => apply_all(&ctx.client, FIELD_MANAGER, &objects).await,
        Some(_) => crds_applied,
    };
    let mut webhook_objects = Vec::new();
    if failure.is_none() {
        let hosts_of = |kind| extra_hosts(hosted_webhooks.as_ref(), kind);
        let ensured = super::webhook_cert::ensure(
            &ctx.client,
            &components_namespace(&cm),
            &name,
            &webhook_kinds(&cm),
            &hosts_of,
        )
        .await;
        match ensured {
            Err(err) => failure = Some(format!("webhook serving certificate: {err}")),
            // Registered once the server answers: before, failurePolicy Fail would refuse
            // every OCM write.
            Ok(ca)
                if !WebhookKind::ALL
                    .iter()
                    .any(|kind| rolling.contains(&kind.service(&name))) =>
            {
                webhook_objects = webhook_configurations(&name, hosted_webhooks.as_ref(), &ca);
                let mut applied = apply_all(&hub, FIELD_MANAGER, &webhook_objects).await;
                if applied.failure.is_none() {
                    let conversion = conversion_objects(&name, hosted_webhooks.as_ref(), Some(&ca));
                    applied = apply_all(&hub, CONVERSION_MANAGER, &conversion).await;
                }
                if let Some(err) = applied.failure {
                    failure = Some(format!("WebhookApplyFailed: {err}"));
                }
            }
            Ok(_) => {}
        }
    }
    let generation = cm.metadata.generation;
    let mut conditions = conditions_of(&cm);
    let (status, reason, message) = match &failure {
        None => (
            "True",
            "ClusterManagerApplied",
            "Components of cluster manager are applied".to_owned(),
        ),
        Some(err) if err.starts_with("CustomResourceDefinition") => {
            ("False", "CRDApplyFailed", err.clone())
        }
        Some(err) if err.starts_with("WebhookApplyFailed: ") => (
            "False",
            "WebhookApplyFailed",
            err.trim_start_matches("WebhookApplyFailed: ").to_owned(),
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
    let namespace = components_namespace(&cm);
    for (type_, component, label) in [
        (
            "HubRegistrationDegraded",
            "registration-controller",
            "Registration",
        ),
        ("HubPlacementDegraded", "placement-controller", "Placement"),
    ] {
        let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
        let found = deployments
            .get_opt(&format!("{name}-{component}"))
            .await
            .ok()
            .flatten();
        let (status, reason, message) = component_degraded(label, found.as_ref());
        set_condition(
            &mut conditions,
            condition(type_, status, &reason, &message, generation),
        );
    }
    let related_resources: Vec<serde_json::Value> = crd_objects
        .iter()
        .chain(&objects)
        .chain(&webhook_objects)
        .map(related)
        .collect();
    let before = related_entries(cm.status.as_ref().map(|s| s.related_resources.as_slice()));
    // Registered webhooks stay while their server rolls out (a gap would let writes skip
    // the policies); they go only with the ClusterManager.
    let mut related_resources = related_resources;
    if webhook_objects.is_empty() {
        related_resources.extend(
            before
                .iter()
                .filter(|r| r["group"] == "admissionregistration.k8s.io")
                .cloned(),
        );
    }
    let related_resources =
        settle_related(&ctx.client, before, related_resources, failure.is_none()).await?;
    let status = json!({
        "observedGeneration": generation,
        "conditions": conditions,
        "relatedResources": related_resources,
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
    // Deployments are not watched (applying them must never feed back into this loop), so
    // a rollout is followed closely and settles in seconds.
    Ok(Action::requeue(if failure.is_some() {
        Duration::from_secs(10)
    } else if !rolling.is_empty() {
        crate::apply::ROLLOUT_RECHECK
    } else {
        Duration::from_secs(300)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::apply::test_deployment as deployment;

    #[test]
    fn component_conditions_use_upstreams_reasons() {
        let (status, reason, _) = component_degraded("Registration", Some(&deployment(1, 1)));
        assert_eq!(
            (status, reason.as_str()),
            ("False", "RegistrationFunctional")
        );
        let (status, reason, _) = component_degraded("Placement", Some(&deployment(3, 1)));
        assert_eq!(
            (status, reason.as_str()),
            ("True", "UnavailablePlacementPod")
        );
        let (_, reason, _) = component_degraded("Registration", None);
        assert_eq!(reason, "GetRegistrationDeploymentFailed");
    }
}
