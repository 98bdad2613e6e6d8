//! The Klusterlet controller, on the managed cluster: applies what [`super::render`] says
//! (the CRDs first) with server-side apply and reports `ReadyToApply`, `Applied`,
//! `HubConnectionDegraded` ([`super::hub_connection`]), `RegistrationDesiredDegraded`,
//! `WorkDesiredDegraded` and `Available` with upstream's reasons, observed generation,
//! Deployment generations and related resources. Deleting a Klusterlet stops its agents,
//! releases the AppliedManifestWorks (their finalizers need an agent; what they applied is
//! then collected through its owner references), removes what it installed but the CRDs,
//! and lets it go (finalizer `operator.open-cluster-management.io/klusterlet-cleanup`).
//!
//! Reacts to changes of Klusterlets, of the bootstrap, hub and external managed kubeconfig
//! secrets and of the secrets a Klusterlet's `bootstrapKubeConfigs` lists (one watch of every
//! Secret's metadata, never its data); re-checks every 10 s while the agents are not available
//! or the hub connection is degraded (the hub's answers cannot be watched), else every minute.
//!
//! Hosted and SingletonHosted: the agents and their secrets on this (management) cluster, in
//! the namespace named after the Klusterlet; the CRDs and the AppliedManifestWork cleanup on
//! the managed cluster, reached through Secret `external-managed-kubeconfig` there (missing:
//! `ReadyToApply` False, `KlusterletPrepareFailed`). As upstream, a Hosted Klusterlet holds
//! the cleanup finalizer from the start and `operator.open-cluster-management.io/
//! klusterlet-hosted-cleanup` once it is ready to apply on the managed cluster: a Klusterlet
//! deleted before that has nothing there and goes at once; after it, the cleanup there gives
//! up on an unreachable managed cluster after 5 minutes.
//!
//! `bootstrapKubeConfigs` LocalSecrets: the registration agent is given the list and chooses
//! the hub ([`super::hub_list`]); the controller reports on the list in
//! `HubConnectionDegraded` ([`super::bootstrap_secrets`]).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use ocm_api::operator::v1::Klusterlet;
use ocm_api::work::v1::AppliedManifestWork;
use ocm_runtime::conditions::{condition, set_condition};
use ocm_runtime::shutdown::Shutdown;
use serde_json::{Value, json};

use super::hub_connection::{self, BOOTSTRAP_SECRET, Check, HUB_SECRET};
use super::render::{
    ADDON_NAMESPACE, Agent, EXTERNAL_MANAGED_KUBECONFIG, HubSecret, KLUSTERLET_LABEL, Mode,
    RenderInput, addon_namespace, addon_namespace_unused, agent_namespace, crds,
    hosted_managed_namespace, klusterlet_name, render, unwanted_managed_namespaces,
};
use super::{bootstrap_secrets, hub_list};
use crate::apply::{
    apply_all, control_plane_nodes, delete_all, patch_metadata, prune, related, related_entries,
    set_finalizer, settle_related,
};
pub use crate::{OperatorError, OperatorOptions};

/// The finalizer that holds a deleting Klusterlet until its objects are gone.
pub const CLEANUP_FINALIZER: &str = "operator.open-cluster-management.io/klusterlet-cleanup";

/// The finalizer a Hosted Klusterlet holds once it applied on its managed cluster, for the
/// cleanup there.
pub const HOSTED_CLEANUP_FINALIZER: &str =
    "operator.open-cluster-management.io/klusterlet-hosted-cleanup";

/// Annotation: when a deleting Hosted Klusterlet first failed to reach its managed cluster.
pub const EVICTION_ANNOTATION: &str =
    "operator.open-cluster-management.io/managed-resources-eviction-timestamp";

/// How long a deleting Hosted Klusterlet keeps trying to clean up an unreachable managed
/// cluster before it lets go (upstream: 5 minutes).
const EVICTION_TIMEOUT: Duration = Duration::from_secs(300);

/// Whether a deleting Klusterlet's cleanup includes its managed cluster: always but in the
/// Hosted modes, where only once it applied there ([`HOSTED_CLEANUP_FINALIZER`] held).
fn cleans_managed_cluster(mode: Mode, finalizers: &[String]) -> bool {
    !mode.hosted() || finalizers.iter().any(|f| f == HOSTED_CLEANUP_FINALIZER)
}

/// A client of a Hosted Klusterlet's managed cluster, from the external kubeconfig secret in
/// `namespace`; `Ok(Err(why))` when there is none or it does not make a client.
async fn managed_client(
    management: &kube::Client,
    namespace: &str,
) -> Result<Result<kube::Client, String>, kube::Error> {
    let secret = Api::<Secret>::namespaced(management.clone(), namespace)
        .get_opt(EXTERNAL_MANAGED_KUBECONFIG)
        .await?;
    let Some(secret) = secret else {
        return Ok(Err(format!(
            "secret {EXTERNAL_MANAGED_KUBECONFIG} not found in namespace {namespace}: the \
             Hosted agents reach their managed cluster through it"
        )));
    };
    let yaml = secret
        .data
        .as_ref()
        .and_then(|d| d.get("kubeconfig"))
        .and_then(|b| String::from_utf8(b.0.clone()).ok());
    let Some(yaml) = yaml else {
        return Ok(Err(format!(
            "secret {namespace}/{EXTERNAL_MANAGED_KUBECONFIG} has no kubeconfig key"
        )));
    };
    Ok(ocm_runtime::kubeconfig::client_from_untrusted_yaml(&yaml)
        .await
        .map_err(|e| format!("secret {namespace}/{EXTERNAL_MANAGED_KUBECONFIG}: {e}")))
}

/// Removes what a deleting Klusterlet installed: the agents first, then (with
/// `managed_cluster`) the AppliedManifestWorks on the managed cluster, then the rest. A
/// Hosted Klusterlet whose managed cluster cannot be reached keeps trying for
/// [`EVICTION_TIMEOUT`] (from the time in [`EVICTION_ANNOTATION`]), then lets go;
/// `Some(wait)` asks to come back later.
async fn clean_up(
    k: &Klusterlet,
    ctx: &Ctx,
    namespace: &str,
    mode: Mode,
    managed_cluster: bool,
) -> Result<Option<Duration>, OperatorError> {
    let objects = render(&RenderInput {
        klusterlet: k,
        image: &ctx.options.image,
        control_plane_nodes: 0,
        hub_secret: &HubSecret::default(),
    });
    let (agents, rest): (Vec<Value>, Vec<Value>) =
        objects.into_iter().partition(|o| o["kind"] == "Deployment");
    delete_all(&ctx.client, &agents).await?;
    if !managed_cluster {
        delete_all(&ctx.client, &rest).await?;
        prune(&ctx.client, &previous_related(k), &[]).await?;
        return Ok(None);
    }
    let managed = if mode.hosted() {
        managed_client(&ctx.client, namespace).await?
    } else {
        Ok(ctx.client.clone())
    };
    let released = match &managed {
        Ok(managed) => {
            tokio::time::timeout(Duration::from_secs(10), release_managed_cluster(managed, k))
                .await
                .map_err(|_| "the managed cluster did not answer".to_owned())
                .and_then(|r| r.map_err(|e| e.to_string()))
        }
        Err(why) => Err(why.clone()),
    };
    if let Ok(found) = released
        && found > 0
    {
        // Look again: done once no agent is left to re-create them.
        return Ok(Some(crate::apply::ROLLOUT_RECHECK));
    }
    if let Err(why) = released {
        let now = jiff::Timestamp::now();
        let since = k
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(EVICTION_ANNOTATION))
            .and_then(|t| t.parse::<jiff::Timestamp>().ok());
        match since {
            None => {
                tracing::warn!(klusterlet = %klusterlet_name(k), %why, "cannot clean up the managed cluster; retrying");
                let patch =
                    json!({"metadata": {"annotations": {EVICTION_ANNOTATION: now.to_string()}}});
                Api::<Klusterlet>::all(ctx.client.clone())
                    .patch(
                        klusterlet_name(k),
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await?;
                return Ok(Some(Duration::from_secs(10)));
            }
            Some(since) if now.duration_since(since).unsigned_abs() < EVICTION_TIMEOUT => {
                return Ok(Some(Duration::from_secs(10)));
            }
            Some(_) => {
                tracing::warn!(klusterlet = %klusterlet_name(k), %why, "giving up on the unreachable managed cluster");
            }
        }
    }
    delete_all(&ctx.client, &rest).await?;
    // And whatever an earlier spec installed that this one would not render.
    prune(&ctx.client, &previous_related(k), &[]).await?;
    Ok(None)
}

/// On a deleting Klusterlet's managed cluster: removes every AppliedManifestWork
/// ([`release_applied_works`]) and, once none is left, the namespaces it made there
/// ([`unwanted_managed_namespaces`]) and the shared addon namespace unless another
/// Klusterlet's agent namespace is still there. Returns how many AppliedManifestWorks there
/// were.
async fn release_managed_cluster(
    managed: &kube::Client,
    k: &Klusterlet,
) -> Result<usize, kube::Error> {
    let found = release_applied_works(managed).await?;
    if found > 0 {
        return Ok(found);
    }
    let labelled = labelled_namespaces(managed).await?;
    let mut gone = unwanted_managed_namespaces(k, &labelled, false);
    let owner = klusterlet_name(k);
    if addon_namespace_unused(owner, labelled.iter().map(|(_, value)| value.as_str())) {
        gone.push(ADDON_NAMESPACE.to_owned());
    }
    delete_all(managed, &namespaces(&gone)).await?;
    Ok(0)
}

/// The namespaces labelled [`KLUSTERLET_LABEL`] on a cluster: (name, the label's value).
async fn labelled_namespaces(client: &kube::Client) -> Result<Vec<(String, String)>, kube::Error> {
    let labelled = Api::<Namespace>::all(client.clone())
        .list(&ListParams::default().labels(KLUSTERLET_LABEL))
        .await?;
    Ok(labelled
        .items
        .into_iter()
        .filter_map(|ns| {
            let value = ns.metadata.labels?.remove(KLUSTERLET_LABEL)?;
            Some((ns.metadata.name?, value))
        })
        .collect())
}

/// Namespace objects named `names`, for [`delete_all`] (which deletes in reverse order).
fn namespaces(names: &[String]) -> Vec<Value> {
    names
        .iter()
        .rev()
        .map(|name| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}))
        .collect()
}

/// Applies the namespaces a Klusterlet makes on its managed cluster: the shared addon
/// namespace and, Hosted, `spec.namespace` ([`hosted_managed_namespace`]; left alone when it
/// is another Klusterlet's own namespace there), and removes the ones an earlier
/// `spec.namespace` made.
async fn apply_managed_namespaces(
    managed: &kube::Client,
    k: &Klusterlet,
) -> Result<crate::apply::Applied, kube::Error> {
    let Some(hosted) = hosted_managed_namespace(k) else {
        return Ok(apply_all(managed, FIELD_MANAGER, &[addon_namespace(k)]).await);
    };
    let labelled = labelled_namespaces(managed).await?;
    let owner = klusterlet_name(k);
    let name = hosted["metadata"]["name"].as_str().unwrap_or_default();
    let taken = labelled
        .iter()
        .any(|(n, value)| n == name && value != owner);
    let mut objects = vec![addon_namespace(k)];
    if !taken {
        objects.push(hosted);
    }
    let applied = apply_all(managed, FIELD_MANAGER, &objects).await;
    if applied.failure.is_none() {
        let stale = unwanted_managed_namespaces(k, &labelled, true);
        for name in &stale {
            tracing::info!(klusterlet = owner, namespace = %name, "removing the namespace an earlier spec.namespace made on the managed cluster");
        }
        delete_all(managed, &namespaces(&stale)).await?;
    }
    Ok(applied)
}

/// Field manager of what the operator applies.
const FIELD_MANAGER: &str = "klusterlet-operator";

struct Ctx {
    client: kube::Client,
    options: OperatorOptions,
}

/// The secrets every Klusterlet's agents use in their agent namespace, by these names.
const AGENT_SECRETS: [&str; 3] = [BOOTSTRAP_SECRET, HUB_SECRET, EXTERNAL_MANAGED_KUBECONFIG];

/// The Klusterlets secret `name` of `namespace` matters to, of those whose agent namespace it
/// is: all of them for the agents' own secrets ([`AGENT_SECRETS`]), else those whose
/// `bootstrapKubeConfigs` list names it.
fn klusterlets_using(
    store: &Store<Klusterlet>,
    namespace: &str,
    name: &str,
) -> Vec<ObjectRef<Klusterlet>> {
    let everyones = AGENT_SECRETS.contains(&name);
    store
        .state()
        .iter()
        .filter(|k| agent_namespace(k) == namespace && (everyones || hub_list::lists(k, name)))
        .map(|k| ObjectRef::from_obj(&**k))
        .collect()
}

/// An annotation the operator kept on a Klusterlet whose hub was unreachable (main of
/// 2026-11-25 to 11-30, before the agent chose among the listed hubs); nothing reads it now.
const RETIRED_LOST_SINCE: &str = "operator.open-cluster-management.io/hub-connection-lost-since";

/// Whether a Klusterlet still carries [`RETIRED_LOST_SINCE`].
fn has_retired_annotation(meta: &kube::api::ObjectMeta) -> bool {
    meta.annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(RETIRED_LOST_SINCE))
}

/// Removes [`RETIRED_LOST_SINCE`] from a Klusterlet that still has it; whether it wrote.
async fn drop_retired_annotation(
    api: &Api<Klusterlet>,
    meta: &kube::api::ObjectMeta,
) -> Result<bool, kube::Error> {
    if !has_retired_annotation(meta) {
        return Ok(false);
    }
    patch_metadata(
        api,
        meta,
        json!({"annotations": {RETIRED_LOST_SINCE: null}}),
    )
    .await?;
    Ok(true)
}

/// Runs the Klusterlet controller until `shutdown`.
#[inline(never)]
pub fn run(
    client: kube::Client,
    options: OperatorOptions,
    shutdown: Shutdown,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(run_body(client, options, shutdown))
}

async fn run_body(client: kube::Client, options: OperatorOptions, shutdown: Shutdown) {
    let klusterlets: Api<Klusterlet> = Api::all(client.clone());
    let controller = Controller::new(klusterlets, watcher::Config::default());
    let store = controller.store();
    // Every Secret's metadata (never its data): a change of one wakes the Klusterlets using it.
    let secret_metadata: Api<PartialObjectMeta<Secret>> = Api::all(client.clone());
    let any_secret = watcher(secret_metadata, watcher::Config::default()).touched_objects();
    let controller =
        controller.watches_stream(any_secret, move |secret: PartialObjectMeta<Secret>| {
            let meta = &secret.metadata;
            klusterlets_using(
                &store,
                meta.namespace.as_deref().unwrap_or_default(),
                meta.name.as_deref().unwrap_or_default(),
            )
        });
    let ctx = Arc::new(Ctx { client, options });
    controller
        .graceful_shutdown_on(async move { shutdown.cancelled().await })
        .run(reconcile, error_policy, ctx)
        .for_each(|_| async {})
        .await;
}

fn error_policy(_k: Arc<Klusterlet>, err: &OperatorError, _ctx: Arc<Ctx>) -> Action {
    tracing::debug!(%err, "klusterlet reconcile failed; retrying");
    Action::requeue(Duration::from_secs(5))
}

/// Removes every AppliedManifestWork of the managed cluster, finalizers first (no agent is
/// left to honour them).
/// Returns how many there were: a stopping work agent may still re-create one, so the
/// cleanup is done only once a pass finds none.
async fn release_applied_works(client: &kube::Client) -> Result<usize, kube::Error> {
    let api: Api<AppliedManifestWork> = Api::all(client.clone());
    let list = match api.list(&ListParams::default()).await {
        Ok(list) => list,
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(0),
        Err(err) => return Err(err),
    };
    let found = list.items.len();
    for work in list.items {
        let name = work.metadata.name.clone().unwrap_or_default();
        if work
            .metadata
            .finalizers
            .as_ref()
            .is_some_and(|f| !f.is_empty())
        {
            let patch = json!({"metadata": {"finalizers": null}});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(err) => return Err(err),
        }
    }
    Ok(found)
}

/// What the agents' Deployments say: `(status, reason, message)` of a `…DesiredDegraded`
/// condition for the Deployments `names`.
fn degraded(deployments: &[(String, Option<Deployment>)]) -> (&'static str, &'static str, String) {
    for (name, deployment) in deployments {
        let Some(deployment) = deployment else {
            return (
                "True",
                "GetDeploymentFailed",
                format!("Deployment {name} not found"),
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
        if wanted == 0 {
            return (
                "True",
                "HubKubeConfigMissing",
                format!("Deployment {name} waits for the hub kubeconfig secret (0 replicas)"),
            );
        }
        if available < wanted {
            return (
                "True",
                "UnavailablePods",
                format!("{available} of {wanted} pods of Deployment {name} are available"),
            );
        }
    }
    (
        "False",
        "DeploymentsFunctional",
        "Deployments are functional".into(),
    )
}

/// The `relatedResources` of the last status, as JSON entries — but the shared addon
/// namespace, which earlier versions listed (it is never pruned with one Klusterlet's
/// objects).
fn previous_related(k: &Klusterlet) -> Vec<Value> {
    let shared = related(&addon_namespace(k));
    related_entries(k.status.as_ref().map(|s| s.related_resources.as_slice()))
        .into_iter()
        .filter(|entry| *entry != shared)
        .collect()
}

/// Writes the status when it changed.
async fn write_status(
    api: &Api<Klusterlet>,
    k: &Klusterlet,
    conditions: Vec<Condition>,
    related_resources: Vec<Value>,
    generations: Vec<Value>,
) -> Result<(), OperatorError> {
    let status = json!({
        "observedGeneration": k.metadata.generation,
        "conditions": conditions,
        "relatedResources": related_resources,
        "generations": generations,
    });
    let current = serde_json::to_value(k.status.clone().unwrap_or_default())?;
    let unchanged = [
        "observedGeneration",
        "conditions",
        "relatedResources",
        "generations",
    ]
    .iter()
    .all(|key| {
        current.get(key).unwrap_or(&Value::Null) == status.get(key).unwrap_or(&Value::Null)
            || (current.get(key).is_none() && status[*key].as_array().is_some_and(|a| a.is_empty()))
    });
    if !unchanged {
        let patch = json!({"metadata": {"resourceVersion": k.metadata.resource_version},
                           "status": status});
        let name = klusterlet_name(k);
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    Ok(())
}

/// Removes `gone` from a Klusterlet's finalizers in one patch (conditional on its
/// resourceVersion).
async fn remove_finalizers(
    api: &Api<Klusterlet>,
    meta: &kube::api::ObjectMeta,
    gone: &[&str],
) -> Result<(), kube::Error> {
    let wanted: Vec<&String> = meta
        .finalizers
        .iter()
        .flatten()
        .filter(|f| !gone.contains(&f.as_str()))
        .collect();
    patch_metadata(api, meta, json!({ "finalizers": wanted })).await
}

async fn reconcile(k: Arc<Klusterlet>, ctx: Arc<Ctx>) -> Result<Action, OperatorError> {
    let api: Api<Klusterlet> = Api::all(ctx.client.clone());
    let owner = klusterlet_name(&k).to_owned();
    let namespace = agent_namespace(&k);
    let mode = Mode::of(&k);
    let finalizers = k.metadata.finalizers.clone().unwrap_or_default();
    if k.metadata.deletion_timestamp.is_some() {
        let held: Vec<&str> = [CLEANUP_FINALIZER, HOSTED_CLEANUP_FINALIZER]
            .into_iter()
            .filter(|f| finalizers.iter().any(|h| h == f))
            .collect();
        if !held.is_empty() {
            let managed_cluster = cleans_managed_cluster(mode, &finalizers);
            if let Some(wait) = clean_up(&k, &ctx, &namespace, mode, managed_cluster).await? {
                return Ok(Action::requeue(wait));
            }
            remove_finalizers(&api, &k.metadata, &held).await?;
        }
        return Ok(Action::await_change());
    }
    if set_finalizer(&api, &k.metadata, CLEANUP_FINALIZER, true).await? {
        return Ok(Action::await_change());
    }
    // Outside the Hosted modes the managed cluster is this one: the cleanup finalizer covers it.
    if !mode.hosted() && set_finalizer(&api, &k.metadata, HOSTED_CLEANUP_FINALIZER, false).await? {
        return Ok(Action::await_change());
    }
    if drop_retired_annotation(&api, &k.metadata).await? {
        return Ok(Action::await_change());
    }
    let generation = k.metadata.generation;
    let mut conditions = k
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let mut set = |type_: &str, status: &str, reason: &str, message: &str| {
        set_condition(
            &mut conditions,
            condition(type_, status, reason, message, generation),
        );
    };
    // Where the managed cluster's own objects go: this cluster, or in the Hosted modes the
    // cluster behind the external kubeconfig.
    let managed = if mode.hosted() {
        match managed_client(&ctx.client, &namespace).await? {
            Ok(client) => {
                // Ready to apply there: from now on its cleanup includes the managed cluster.
                if set_finalizer(&api, &k.metadata, HOSTED_CLEANUP_FINALIZER, true).await? {
                    return Ok(Action::await_change());
                }
                client
            }
            Err(message) => {
                set("ReadyToApply", "False", "KlusterletPrepareFailed", &message);
                write_status(&api, &k, conditions, previous_related(&k), Vec::new()).await?;
                return Ok(Action::requeue(Duration::from_secs(10)));
            }
        }
    } else {
        ctx.client.clone()
    };
    if matches!(mode, Mode::Singleton | Mode::SingletonHosted) && k.spec.cluster_name.is_empty() {
        // One process runs both agents: the work agent needs the name from the start.
        set(
            "ReadyToApply",
            "False",
            "KlusterletPrepareFailed",
            "the Singleton modes need spec.clusterName",
        );
        write_status(&api, &k, conditions, previous_related(&k), Vec::new()).await?;
        return Ok(Action::await_change());
    }
    set(
        "ReadyToApply",
        "True",
        "KlusterletPrepared",
        "Klusterlet is ready to apply",
    );
    let (hub, hub_secret) =
        hub_connection::check_hub(&ctx.client, &namespace, &k.spec.cluster_name).await?;
    // With a list of bootstrap secrets the agent chooses among them; the listed ones are
    // checked instead of the one it copies into `bootstrap-hub-kubeconfig`.
    let hub_degraded = match hub_list::local_secrets(&k) {
        Some(list) => {
            let probe = hub != Check::Functional;
            let listed =
                bootstrap_secrets::check_list(&ctx.client, &namespace, &list.names, probe).await?;
            bootstrap_secrets::degraded_condition(&listed, &hub)
        }
        None => {
            let bootstrap = hub_connection::check_bootstrap(&ctx.client, &namespace).await?;
            hub_connection::degraded_condition(&bootstrap, &hub)
        }
    };
    let nodes = control_plane_nodes(&ctx.client).await;
    let objects = render(&RenderInput {
        klusterlet: &k,
        image: &ctx.options.image,
        control_plane_nodes: nodes,
        hub_secret: &hub_secret,
    });
    let crd_objects = crds(&k);
    let crds_applied = apply_all(&managed, FIELD_MANAGER, &crd_objects).await;
    let mut applied = match &crds_applied.failure {
        None => {
            let shared = apply_managed_namespaces(&managed, &k).await?;
            match shared.failure {
                None => apply_all(&ctx.client, FIELD_MANAGER, &objects).await,
                Some(_) => shared,
            }
        }
        Some(_) => crds_applied,
    };
    if applied.failure.is_none() {
        // Where the agents run, for the hub's check of hosted addons (when asked to report).
        match super::hosting_report::hosting_claim(&k) {
            Ok(None) => {}
            Ok(Some(claim)) => {
                let reported = apply_all(&managed, FIELD_MANAGER, &[claim]).await;
                if reported.failure.is_some() {
                    applied.failure = reported.failure;
                }
            }
            Err(message) => applied.failure = Some(message),
        }
    }
    match &applied.failure {
        None => set(
            "Applied",
            "True",
            "KlusterletApplied",
            "Klusterlet Component Applied",
        ),
        Some(err) if err.starts_with("CustomResourceDefinition") => {
            set("Applied", "False", "CRDApplyFailed", err);
        }
        Some(err) => set("Applied", "False", "ManagedClusterResourceApplyFailed", err),
    }
    let (status, reason, message) = hub_degraded;
    set("HubConnectionDegraded", status, &reason, &message);
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let mut live = Vec::new();
    for agent in Agent::of(mode) {
        let name = agent.deployment_name(&owner);
        let deployment = deployments.get_opt(&name).await?;
        live.push((*agent, name, deployment));
    }
    let pick = |want: fn(Agent) -> bool| -> Vec<(String, Option<Deployment>)> {
        live.iter()
            .filter(|(agent, _, _)| want(*agent))
            .map(|(_, name, d)| (name.clone(), d.clone()))
            .collect()
    };
    let registration = degraded(&pick(Agent::registers));
    set(
        "RegistrationDesiredDegraded",
        registration.0,
        registration.1,
        &registration.2,
    );
    let work = degraded(&pick(Agent::works));
    set("WorkDesiredDegraded", work.0, work.1, &work.2);
    let all = degraded(&pick(|_| true));
    let available = all.0 == "False";
    if available {
        set(
            "Available",
            "True",
            "KlusterletAvailable",
            "Klusterlet is available",
        );
    } else {
        let reason = match all.1 {
            "GetDeploymentFailed" => "GetDeploymentFailed",
            _ => "NoAvailablePods",
        };
        set("Available", "False", reason, &all.2);
    }
    let generations: Vec<Value> = applied
        .deployments
        .iter()
        .map(|(ns, name, generation)| {
            json!({"group": "apps", "version": "v1", "resource": "deployments",
                   "namespace": ns, "name": name, "lastGeneration": generation})
        })
        .collect();
    let related_resources: Vec<Value> = crd_objects.iter().chain(&objects).map(related).collect();
    let before = previous_related(&k);
    let related_resources = settle_related(
        &ctx.client,
        before,
        related_resources,
        applied.failure.is_none(),
    )
    .await?;
    write_status(&api, &k, conditions, related_resources, generations).await?;
    let settled = available && hub == Check::Functional && applied.failure.is_none();
    Ok(Action::requeue(if settled {
        Duration::from_secs(60)
    } else if !applied.rolling.is_empty() {
        crate::apply::ROLLOUT_RECHECK
    } else {
        Duration::from_secs(10)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::apply::test_deployment as deployment;

    #[test]
    fn a_secret_wakes_the_klusterlets_using_it_in_their_agent_namespace() {
        let (store, mut writer) = kube::runtime::reflector::store::<Klusterlet>();
        let klusterlet = |name: &str, spec: Value| -> Klusterlet {
            serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
        };
        let list = |names: &[&str]| {
            let secrets: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
            json!({"registrationConfiguration": {"bootstrapKubeConfigs": {
                "type": "LocalSecrets", "localSecretsConfig": {"kubeConfigSecrets": secrets}}}})
        };
        let mut default_ns = list(&["hub-a", "hub-b"]);
        default_ns["namespace"] = json!("agents");
        let mut hosted = list(&["hub-a"]);
        hosted["deployOption"] = json!({"mode": "Hosted"});
        for k in [
            klusterlet("default", default_ns),
            klusterlet("cluster1", hosted),
            klusterlet("unlisted", json!({"namespace": "agents"})),
        ] {
            writer.apply_watcher_event(&watcher::Event::Apply(k));
        }
        // Sorted: the store hands its objects out in no set order.
        let woken = |namespace: &str, name: &str| -> Vec<String> {
            let mut names: Vec<String> = klusterlets_using(&store, namespace, name)
                .into_iter()
                .map(|r| r.name)
                .collect();
            names.sort();
            names
        };
        assert_eq!(woken("agents", "hub-b"), ["default"]);
        // A Hosted Klusterlet's agents read their secrets in the namespace named after it.
        assert_eq!(woken("cluster1", "hub-a"), ["cluster1"]);
        assert!(woken("agents", "hub-c").is_empty());
        assert!(woken("elsewhere", "hub-a").is_empty());
        // The agents' own secrets matter to every Klusterlet of the namespace.
        assert_eq!(woken("agents", HUB_SECRET), ["default", "unlisted"]);
        assert_eq!(woken("cluster1", BOOTSTRAP_SECRET), ["cluster1"]);
    }

    #[test]
    fn the_retired_lost_since_annotation_is_recognised() {
        let meta = |annotations: Value| -> kube::api::ObjectMeta {
            serde_json::from_value(json!({"name": "klusterlet", "annotations": annotations}))
                .unwrap()
        };
        assert!(has_retired_annotation(&meta(
            json!({RETIRED_LOST_SINCE: "2026-11-28T10:00:00Z", "other": "x"})
        )));
        assert!(!has_retired_annotation(&meta(json!({"other": "x"}))));
        assert!(!has_retired_annotation(&kube::api::ObjectMeta::default()));
    }

    #[test]
    fn only_a_hosted_klusterlet_that_applied_cleans_its_managed_cluster() {
        let held = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        assert!(cleans_managed_cluster(
            Mode::Default,
            &held(&[CLEANUP_FINALIZER])
        ));
        assert!(!cleans_managed_cluster(
            Mode::Hosted,
            &held(&[CLEANUP_FINALIZER])
        ));
        assert!(cleans_managed_cluster(
            Mode::Hosted,
            &held(&[CLEANUP_FINALIZER, HOSTED_CLEANUP_FINALIZER])
        ));
        assert!(!cleans_managed_cluster(Mode::SingletonHosted, &[]));
    }

    #[test]
    fn desired_degraded_follows_the_deployments() {
        let found = |d: Option<Deployment>| vec![("klusterlet-agent".to_owned(), d)];
        assert_eq!(
            degraded(&found(Some(deployment(1, 1)))).1,
            "DeploymentsFunctional"
        );
        assert_eq!(
            degraded(&found(Some(deployment(3, 1)))).1,
            "UnavailablePods"
        );
        assert_eq!(
            degraded(&found(Some(deployment(0, 0)))).1,
            "HubKubeConfigMissing"
        );
        assert_eq!(degraded(&found(None)).1, "GetDeploymentFailed");
        assert_eq!(degraded(&found(None)).0, "True");
    }
}
