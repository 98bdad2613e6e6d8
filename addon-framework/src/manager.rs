//! The controllers that run an addon on the hub.
//!
//! [`AddonManager`] is what an addon's own process runs (the library form of upstream's addon
//! manager): for every ManagedClusterAddOn of each of its addons it asks the addon for its
//! manifests, delivers them as the works [`crate::works::plan`] describes (server-side apply;
//! stale works deleted; nothing written when the addon fails), and writes the status —
//! install namespace, registrations, health-check mode and the `ManifestApplied`,
//! `RegistrationApplied` and (for probers other than Lease) `Available` conditions.
//!
//! [`run_install_strategies`] is the generic controller `ocm hub` runs for every addon:
//! ClusterManagementAddOn install strategies ([`crate::install::plan`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, WatchStreamExt, watcher};
use ocm_api::addon::names::DEFAULT_INSTALL_NAMESPACE;
use ocm_api::addon::names::annotations::V1ALPHA1_INSTALL_NAMESPACE;
use ocm_api::addon::names::conditions::{
    AVAILABLE, HOOK_MANIFEST_COMPLETED, MANIFEST_APPLIED, PROGRESSING, REGISTRATION_APPLIED,
    manifest_applied, progressing, registration_applied,
};
use ocm_api::addon::names::labels::ADDON_NAME;
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_runtime::conditions::{condition, set_condition};
use ocm_runtime::shutdown::Shutdown;
use serde_json::{Value, json};

use crate::agent::{AddonConfigs, AgentAddon};
use crate::configs::ConfigRef;
use crate::works::{WorkInput, plan};

/// Why one reconcile failed (it is retried).
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// The hub refused or did not answer.
    #[error("hub API")]
    Api(#[from] kube::Error),
    /// An object did not (de)serialize.
    #[error("encoding")]
    Encoding(#[from] serde_json::Error),
}

/// The finalizer that holds a deleting addon until its pre-delete hook finished.
const PRE_DELETE_FINALIZER: &str = ocm_api::addon::names::finalizers::ADDON_PRE_DELETE_HOOK;

/// How often every addon is reconciled even without a change (works' status feeds health).
const RESYNC: Duration = Duration::from_secs(30);

/// Runs addons' hub side: delivery, status and health.
pub struct AddonManager {
    client: kube::Client,
    addons: Vec<Arc<dyn AgentAddon>>,
}

impl std::fmt::Debug for AddonManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddonManager")
            .field(
                "addons",
                &self
                    .addons
                    .iter()
                    .map(|a| a.options().name.clone())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

struct Ctx {
    client: kube::Client,
    addon: Arc<dyn AgentAddon>,
}

impl AddonManager {
    /// A manager talking to the hub through `client` (it needs to read clusters, read and
    /// write ManagedClusterAddOns and their status, and write ManifestWorks).
    pub fn new(client: kube::Client) -> AddonManager {
        AddonManager {
            client,
            addons: Vec::new(),
        }
    }

    /// Adds an addon.
    pub fn with_addon(mut self, addon: Arc<dyn AgentAddon>) -> AddonManager {
        self.addons.push(addon);
        self
    }

    /// Runs every addon's controllers until `shutdown`, each addon's on a task of its own (so
    /// that a busy addon cannot starve another of polls).
    pub async fn run(self, shutdown: Shutdown) {
        let mut tasks = vec![tokio::spawn(run_csr_approval(
            self.client.clone(),
            self.addons.clone(),
            shutdown.clone(),
        ))];
        for addon in self.addons {
            tasks.push(tokio::spawn(run_addon(
                self.client.clone(),
                addon,
                shutdown.clone(),
            )));
        }
        for task in tasks {
            if let Err(err) = task.await {
                tracing::warn!(%err, "an addon controller task ended abnormally");
            }
        }
    }
}

async fn run_addon(client: kube::Client, addon: Arc<dyn AgentAddon>, shutdown: Shutdown) {
    let name = addon.options().name.clone();
    let addons: Api<ManagedClusterAddOn> = Api::all(client.clone());
    let works: Api<ocm_api::work::v1::ManifestWork> = Api::all(client.clone());
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    let by_name = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let work_name = name.clone();
    let cluster_name = name.clone();
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        addon,
    });
    Controller::new(addons, by_name)
        .watches(
            works,
            watcher::Config::default().labels(&format!("{ADDON_NAME}={name}")),
            move |work| {
                work.metadata
                    .namespace
                    .map(|ns| ObjectRef::new(&work_name).within(&ns))
            },
        )
        .watches(clusters, watcher::Config::default(), move |cluster| {
            cluster
                .metadata
                .name
                .map(|c| ObjectRef::new(&cluster_name).within(&c))
        })
        .graceful_shutdown_on(async move { shutdown.cancelled().await })
        .run(reconcile, error_policy, ctx)
        .for_each(|_| async {})
        .await;
}

fn error_policy(_addon: Arc<ManagedClusterAddOn>, err: &ManagerError, _ctx: Arc<Ctx>) -> Action {
    tracing::debug!(err = ?err, "addon reconcile failed; retrying");
    Action::requeue(Duration::from_secs(2))
}

/// The status fields the manager owns, computed from one pass.
#[derive(Debug, Default)]
struct Outcome {
    conditions: Vec<Condition>,
    namespace: Option<String>,
    registrations: Option<Value>,
    config_references: Option<Value>,
}

async fn reconcile(mca: Arc<ManagedClusterAddOn>, ctx: Arc<Ctx>) -> Result<Action, ManagerError> {
    let options = ctx.addon.options();
    let namespace = mca.metadata.namespace.clone().unwrap_or_default();
    let generation = mca.metadata.generation;
    let mut outcome = Outcome {
        conditions: mca
            .status
            .as_ref()
            .map(|s| s.conditions.clone())
            .unwrap_or_default(),
        ..Outcome::default()
    };
    let deleting = mca.metadata.deletion_timestamp.is_some();
    if deleting && !has_finalizer(&mca) {
        return Ok(Action::await_change());
    }
    let clusters: Api<ManagedCluster> = Api::all(ctx.client.clone());
    let Some(cluster) = clusters.get_opt(&namespace).await? else {
        if deleting {
            set_pre_delete_finalizer(&ctx, &mca, false).await?;
            return Ok(Action::await_change());
        }
        set_condition(
            &mut outcome.conditions,
            condition(
                MANIFEST_APPLIED,
                "False",
                "ManagedClusterNotFound",
                &format!(
                    "namespace {namespace} is not a cluster namespace: there is no ManagedCluster {namespace}"
                ),
                generation,
            ),
        );
        write_status(&ctx, &mca, &outcome).await?;
        return Ok(Action::requeue(RESYNC));
    };
    let (configs, hashes) = load_configs(&ctx.client, &mca).await;
    // The addon's choice, else its AddOnDeploymentConfig's, else the namespace a v1alpha1
    // client set on this addon, else the default.
    let install_namespace = options
        .install_namespace
        .clone()
        .or_else(|| configs.install_namespace().map(str::to_owned))
        .or_else(|| {
            mca.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(V1ALPHA1_INSTALL_NAMESPACE))
                .filter(|ns| !ns.is_empty())
                .cloned()
        })
        .unwrap_or_else(|| DEFAULT_INSTALL_NAMESPACE.to_owned());
    outcome.namespace = Some(install_namespace);
    // Registrations.
    match &options.registration {
        None => {
            set_condition(
                &mut outcome.conditions,
                condition(
                    REGISTRATION_APPLIED,
                    "True",
                    registration_applied::NIL_REGISTRATION,
                    "Registration of the addon agent is configured",
                    generation,
                ),
            );
            outcome.registrations = Some(json!([]));
        }
        Some(registration) => match (registration.configurations)(&cluster, &mca) {
            Ok(configs) => {
                let entries =
                    crate::registration::status_registrations(&namespace, &options.name, &configs);
                outcome.registrations = Some(serde_json::to_value(entries)?);
                let permissions = match &registration.permissions {
                    None => Ok(()),
                    Some(permissions) => match permissions(&cluster, &mca) {
                        Ok(objects) => apply_permissions(&ctx.client, &options.name, &objects)
                            .await
                            .map_err(|e| e.to_string()),
                        Err(err) => Err(err.to_string()),
                    },
                };
                let (status, reason, message) = match &permissions {
                    Ok(()) => (
                        "True",
                        registration_applied::SET_PERMISSION_APPLIED,
                        "Registration of the addon agent is configured".to_owned(),
                    ),
                    Err(err) => (
                        "False",
                        registration_applied::SET_PERMISSION_FAILED,
                        format!("Failed to set permission for hub agent: {err}"),
                    ),
                };
                set_condition(
                    &mut outcome.conditions,
                    condition(REGISTRATION_APPLIED, status, reason, &message, generation),
                );
            }
            Err(err) => {
                set_condition(
                    &mut outcome.conditions,
                    condition(
                        REGISTRATION_APPLIED,
                        "False",
                        registration_applied::SET_PERMISSION_FAILED,
                        &err.0,
                        generation,
                    ),
                );
            }
        },
    }
    // Manifests → works. Nothing is written when the addon fails.
    let manifests = match ctx.addon.manifests(&cluster, &mca, &configs).await {
        Ok(manifests) => manifests,
        Err(err) if deleting => {
            tracing::warn!(addon = options.name, cluster = namespace, %err,
                "no manifests to run the pre-delete hook from; letting the addon go");
            set_pre_delete_finalizer(&ctx, &mca, false).await?;
            return Ok(Action::await_change());
        }
        Err(err) => {
            set_condition(
                &mut outcome.conditions,
                condition(
                    MANIFEST_APPLIED,
                    "False",
                    manifest_applied::APPLY_FAILED,
                    &format!(
                        "failed to build the manifests of addon {}: {err}",
                        options.name
                    ),
                    generation,
                ),
            );
            write_status(&ctx, &mca, &outcome).await?;
            return Ok(Action::requeue(RESYNC));
        }
    };
    let mut manifest_configs = options.manifest_configs.clone();
    manifest_configs.extend(crate::health::probe_configs(&options.health, &manifests));
    let uid = mca.metadata.uid.clone().unwrap_or_default();
    let planned = match plan(&WorkInput {
        addon: &options.name,
        cluster: &namespace,
        owner_uid: &uid,
        manifests: &manifests,
        manifest_configs: &manifest_configs,
        config_hash: (!hashes.is_empty()).then(|| crate::configs::hash_annotation(&hashes)),
        limit: WorkInput::DEFAULT_LIMIT,
    }) {
        Ok(planned) => planned,
        Err(err) => {
            set_condition(
                &mut outcome.conditions,
                condition(
                    MANIFEST_APPLIED,
                    "False",
                    manifest_applied::APPLY_FAILED,
                    &err.0,
                    generation,
                ),
            );
            write_status(&ctx, &mca, &outcome).await?;
            return Ok(Action::requeue(RESYNC));
        }
    };
    let works: Api<ocm_api::work::v1::ManifestWork> =
        Api::namespaced(ctx.client.clone(), &namespace);
    let params = PatchParams::apply(&format!("addon-manager-{}", options.name)).force();
    if deleting {
        return run_pre_delete(
            &ctx,
            &mca,
            planned.pre_delete.as_ref(),
            &works,
            &params,
            outcome,
        )
        .await;
    }
    if planned.pre_delete.is_some() {
        set_pre_delete_finalizer(&ctx, &mca, true).await?;
    }
    let mut applied = Vec::new();
    let mut failure = None;
    for work in &planned.deploy {
        let name = work["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        match works.patch(&name, &params, &Patch::Apply(work)).await {
            Ok(written) => applied.push(serde_json::to_value(written)?),
            Err(err) => {
                failure = Some(format!("failed to apply work {name}: {err}"));
                break;
            }
        }
    }
    if failure.is_none() {
        let keep: BTreeSet<&str> = planned
            .deploy
            .iter()
            .filter_map(|w| w["metadata"]["name"].as_str())
            .collect();
        let existing = works
            .list(&ListParams::default().labels(&format!("{ADDON_NAME}={}", options.name)))
            .await?;
        for work in existing {
            let name = work.metadata.name.clone().unwrap_or_default();
            let deploy = name.starts_with(&format!("addon-{}-deploy-", options.name));
            if deploy && !keep.contains(name.as_str()) {
                let _ = works.delete(&name, &DeleteParams::default()).await;
            }
        }
    }
    match &failure {
        Some(message) => set_condition(
            &mut outcome.conditions,
            condition(
                MANIFEST_APPLIED,
                "False",
                manifest_applied::WORK_APPLY_FAILED,
                message,
                generation,
            ),
        ),
        None => set_condition(
            &mut outcome.conditions,
            condition(
                MANIFEST_APPLIED,
                "True",
                manifest_applied::APPLIED,
                "no errors",
                generation,
            ),
        ),
    };
    let all_applied = failure.is_none()
        && applied.iter().all(|w| {
            let generation = w.pointer("/metadata/generation").and_then(Value::as_i64);
            w.pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| {
                    cs.iter().any(|c| {
                        c["type"] == "Applied"
                            && c["status"] == "True"
                            && c.get("observedGeneration").and_then(Value::as_i64) == generation
                    })
                })
        });
    record_applied_configs(&mca, all_applied, generation, &mut outcome);
    if let Some(judgement) = crate::health::judge(&options.health, Some(&applied)) {
        set_condition(
            &mut outcome.conditions,
            condition(
                AVAILABLE,
                judgement.status,
                judgement.reason,
                &judgement.message,
                generation,
            ),
        );
    }
    write_status(&ctx, &mca, &outcome).await?;
    Ok(Action::requeue(RESYNC))
}

fn has_finalizer(mca: &ManagedClusterAddOn) -> bool {
    mca.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == PRE_DELETE_FINALIZER)
}

/// Adds or removes the pre-delete finalizer (conditionally on the object's resourceVersion).
async fn set_pre_delete_finalizer(
    ctx: &Ctx,
    mca: &ManagedClusterAddOn,
    present: bool,
) -> Result<(), ManagerError> {
    if has_finalizer(mca) == present {
        return Ok(());
    }
    let mut finalizers: Vec<String> = mca
        .metadata
        .finalizers
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|f| f != PRE_DELETE_FINALIZER)
        .collect();
    if present {
        finalizers.push(PRE_DELETE_FINALIZER.to_owned());
    }
    let api: Api<ManagedClusterAddOn> = Api::namespaced(
        ctx.client.clone(),
        mca.metadata.namespace.as_deref().unwrap_or_default(),
    );
    let patch = json!({"metadata": {"finalizers": finalizers,
                                    "resourceVersion": mca.metadata.resource_version}});
    api.patch(
        mca.metadata.name.as_deref().unwrap_or_default(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}

/// A deleting addon with pre-delete hook objects: apply the hook work and let the addon go
/// once every hook Job or Pod has finished (its deploy works stay until then).
async fn run_pre_delete(
    ctx: &Ctx,
    mca: &ManagedClusterAddOn,
    hook: Option<&Value>,
    works: &Api<ocm_api::work::v1::ManifestWork>,
    params: &PatchParams,
    mut outcome: Outcome,
) -> Result<Action, ManagerError> {
    let Some(hook) = hook else {
        set_pre_delete_finalizer(ctx, mca, false).await?;
        return Ok(Action::await_change());
    };
    let name = crate::works::pre_delete_work_name(&ctx.addon.options().name);
    let written = serde_json::to_value(works.patch(&name, params, &Patch::Apply(hook)).await?)?;
    let generation = mca.metadata.generation;
    if crate::works::hook_completed(&written) {
        // The addon goes now; its works (owned by it) go with it.
        set_pre_delete_finalizer(ctx, mca, false).await?;
        return Ok(Action::await_change());
    }
    set_condition(
        &mut outcome.conditions,
        condition(
            HOOK_MANIFEST_COMPLETED,
            "False",
            "HookManifestIsNotCompleted",
            "waiting for the pre-delete hook manifests to complete",
            generation,
        ),
    );
    write_status(ctx, mca, &outcome).await?;
    Ok(Action::requeue(Duration::from_secs(2)))
}

/// The config objects named by `mca`'s `status.configReferences` (desired configs), and their
/// spec hashes. Objects that cannot be read are left out.
async fn load_configs(
    client: &kube::Client,
    mca: &ManagedClusterAddOn,
) -> (AddonConfigs, Vec<(ConfigRef, String)>) {
    let mut configs = AddonConfigs::default();
    let mut hashes = Vec::new();
    let references = mca
        .status
        .as_ref()
        .map(|s| s.config_references.clone())
        .unwrap_or_default();
    for reference in references {
        let Some(desired) = reference.desired_config else {
            continue;
        };
        let config = ConfigRef {
            group: reference.group.unwrap_or_default(),
            resource: reference.resource,
            namespace: desired.namespace,
            name: desired.name,
        };
        let Some(object) = fetch_config(client, &config).await else {
            continue;
        };
        let hash = desired
            .spec_hash
            .unwrap_or_else(|| crate::configs::spec_hash(&object));
        if config.resource == "addondeploymentconfigs" {
            configs.deployment = object
                .get("spec")
                .and_then(|spec| serde_json::from_value(spec.clone()).ok());
        }
        hashes.push((config.clone(), hash));
        configs.objects.push((config, object));
    }
    (configs, hashes)
}

/// Reads a config object, finding its API through discovery (AddOnDeploymentConfig
/// directly).
pub(crate) async fn fetch_config(client: &kube::Client, config: &ConfigRef) -> Option<Value> {
    let resource =
        if config.group == ocm_api::addon::GROUP && config.resource == "addondeploymentconfigs" {
            kube::core::ApiResource::from_gvk_with_plural(
                &kube::core::GroupVersionKind::gvk(
                    ocm_api::addon::GROUP,
                    "v1alpha1",
                    "AddOnDeploymentConfig",
                ),
                "addondeploymentconfigs",
            )
        } else {
            let group = kube::discovery::group(client, &config.group).await.ok()?;
            group
                .recommended_resources()
                .into_iter()
                .find(|(r, _)| r.plural == config.resource)
                .map(|(r, _)| r)?
        };
    let api: Api<kube::api::DynamicObject> = if config.namespace.is_empty() {
        Api::all_with(client.clone(), &resource)
    } else {
        Api::namespaced_with(client.clone(), &config.namespace, &resource)
    };
    let object = api.get_opt(&config.name).await.ok()??;
    serde_json::to_value(object).ok()
}

/// Once every work is applied at its current generation, the desired configs are the applied
/// ones: `lastAppliedConfig` follows `desiredConfig`, and `Progressing` turns Completed.
fn record_applied_configs(
    mca: &ManagedClusterAddOn,
    all_applied: bool,
    generation: Option<i64>,
    outcome: &mut Outcome,
) {
    let mut references = mca
        .status
        .as_ref()
        .map(|s| s.config_references.clone())
        .unwrap_or_default();
    if references.is_empty() {
        return;
    }
    let pending = references
        .iter()
        .any(|r| r.desired_config.is_some() && r.desired_config != r.last_applied_config);
    if all_applied && pending {
        for reference in &mut references {
            if reference.desired_config.is_some() {
                reference.last_applied_config = reference.desired_config.clone();
            }
        }
        outcome.config_references = serde_json::to_value(&references).ok();
    }
    let (status, reason, message) = if all_applied {
        ("False", progressing::COMPLETED, "completed with no errors.")
    } else {
        (
            "True",
            progressing::PROGRESSING,
            "applying the addon's configs",
        )
    };
    set_condition(
        &mut outcome.conditions,
        condition(PROGRESSING, status, reason, message, generation),
    );
}

/// Applies an addon's hub RBAC objects (server-side apply).
async fn apply_permissions(
    client: &kube::Client,
    addon: &str,
    objects: &[Value],
) -> Result<(), kube::Error> {
    let params = PatchParams::apply(&format!("addon-manager-{addon}")).force();
    for object in objects {
        let text = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("");
        let (group, version) = text("/apiVersion")
            .split_once('/')
            .unwrap_or(("", text("/apiVersion")));
        let kind = text("/kind");
        let resource = kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk(group, version, kind),
            &crate::works::plural(kind),
        );
        let api: Api<kube::api::DynamicObject> = match text("/metadata/namespace") {
            "" => Api::all_with(client.clone(), &resource),
            ns => Api::namespaced_with(client.clone(), ns, &resource),
        };
        api.patch(text("/metadata/name"), &params, &Patch::Apply(object))
            .await?;
    }
    Ok(())
}

/// Approves (and for custom signers signs) the CSRs of the addons' agents, per
/// [`crate::csr::decide`].
async fn run_csr_approval(
    client: kube::Client,
    addons: Vec<Arc<dyn AgentAddon>>,
    shutdown: Shutdown,
) {
    use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    let events = watcher(csrs.clone(), watcher::Config::default().labels(ADDON_NAME))
        .default_backoff()
        .applied_objects();
    let mut events = std::pin::pin!(events.take_until(shutdown.cancelled()));
    while let Some(event) = events.next().await {
        let Ok(csr) = event else { continue };
        if let Err(err) = handle_csr(&client, &addons, &csrs, &csr).await {
            tracing::debug!(%err, "addon CSR not handled yet");
        }
    }
}

async fn handle_csr(
    client: &kube::Client,
    addons: &[Arc<dyn AgentAddon>],
    csrs: &Api<k8s_openapi::api::certificates::v1::CertificateSigningRequest>,
    csr: &k8s_openapi::api::certificates::v1::CertificateSigningRequest,
) -> Result<(), ManagerError> {
    use crate::csr::{CsrDecision, decide, info, is_decided, labels};
    if is_decided(csr) {
        return Ok(());
    }
    let Some((cluster, addon_name)) = labels(csr) else {
        return Ok(());
    };
    let Some(addon) = addons.iter().find(|a| a.options().name == addon_name) else {
        return Ok(());
    };
    let Some(registration) = addon.options().registration.as_ref() else {
        return Ok(());
    };
    let mcas: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), &cluster);
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    let (Some(mca), Some(managed)) = (
        mcas.get_opt(&addon_name).await?,
        clusters.get_opt(&cluster).await?,
    ) else {
        return Ok(());
    };
    let name = csr.metadata.name.clone().unwrap_or_default();
    let info = match info(csr) {
        Ok(info) => info,
        Err(err) => {
            tracing::info!(csr = name, %err, "addon CSR refused");
            return Ok(());
        }
    };
    let configs = (registration.configurations)(&managed, &mca).unwrap_or_default();
    let approve = |i: &crate::agent::CsrInfo| (registration.approve)(&managed, &mca, i);
    let decision = decide(&cluster, &info, &configs, &approve);
    let sign = match decision {
        CsrDecision::Ignore => return Ok(()),
        CsrDecision::Refuse(reason) => {
            tracing::info!(
                csr = name,
                addon = addon_name,
                cluster,
                reason,
                "addon CSR refused"
            );
            return Ok(());
        }
        CsrDecision::Approve => false,
        CsrDecision::ApproveAndSign => true,
    };
    let mut approved = csr.clone();
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::now());
    approved
        .status
        .get_or_insert_with(Default::default)
        .conditions
        .get_or_insert_with(Vec::new)
        .push(
            k8s_openapi::api::certificates::v1::CertificateSigningRequestCondition {
                type_: "Approved".into(),
                status: "True".into(),
                reason: Some("AutoApprovedByAddonManager".into()),
                message: Some(format!("Auto approved by the {addon_name} addon manager")),
                last_update_time: Some(now.clone()),
                last_transition_time: Some(now),
            },
        );
    let approved = csrs
        .replace_subresource("approval", &name, &PostParams::default(), &approved)
        .await?;
    if sign {
        let Some(signer) = registration.sign.as_ref() else {
            tracing::info!(
                csr = name,
                "custom-signer CSR approved but the addon has no signer"
            );
            return Ok(());
        };
        match signer(&managed, &mca, &info) {
            Ok(certificate) => {
                let mut signed = approved;
                signed
                    .status
                    .get_or_insert_with(Default::default)
                    .certificate = Some(k8s_openapi::ByteString(certificate.into_bytes()));
                csrs.replace_status(&name, &PostParams::default(), &signed)
                    .await?;
            }
            Err(err) => tracing::warn!(csr = name, %err, "signing the addon CSR failed"),
        }
    }
    Ok(())
}

/// Writes the manager's status fields when they changed, conditionally on the object's
/// resourceVersion (the registration agent writes other conditions of the same object).
async fn write_status(
    ctx: &Ctx,
    mca: &ManagedClusterAddOn,
    outcome: &Outcome,
) -> Result<(), ManagerError> {
    let options = ctx.addon.options();
    let current = mca.status.clone().unwrap_or_default();
    let mut status = json!({
        "conditions": outcome.conditions,
        "healthCheck": {"mode": options.health.mode()},
    });
    if let Some(ns) = &outcome.namespace {
        status["namespace"] = json!(ns);
    }
    if let Some(registrations) = &outcome.registrations {
        status["registrations"] = registrations.clone();
    }
    if let Some(references) = &outcome.config_references {
        status["configReferences"] = references.clone();
    }
    let before = serde_json::to_value(&current)?;
    let unchanged = [
        "conditions",
        "healthCheck",
        "namespace",
        "registrations",
        "configReferences",
    ]
    .iter()
    .all(|k| {
        status.get(k).is_none_or(|v| {
            before.get(k).unwrap_or(&Value::Null) == v
                || (v.as_array().is_some_and(Vec::is_empty) && before.get(k).is_none())
        })
    });
    if unchanged {
        return Ok(());
    }
    let api: Api<ManagedClusterAddOn> = Api::namespaced(
        ctx.client.clone(),
        mca.metadata.namespace.as_deref().unwrap_or_default(),
    );
    let patch = json!({
        "metadata": {"resourceVersion": mca.metadata.resource_version},
        "status": status,
    });
    api.patch_status(
        mca.metadata.name.as_deref().unwrap_or_default(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}

/// The clusters each placement of `cma`'s strategy selects (`None`: unreadable).
async fn decisions_of(
    client: &kube::Client,
    cma: &ClusterManagementAddOn,
) -> BTreeMap<String, Option<BTreeSet<String>>> {
    let mut out = BTreeMap::new();
    let placements = cma
        .spec
        .install_strategy
        .as_ref()
        .map(|s| s.placements.clone())
        .unwrap_or_default();
    for placement in placements {
        let key = format!("{}/{}", placement.namespace, placement.name);
        let api: Api<ocm_api::cluster::v1beta1::PlacementDecision> =
            Api::namespaced(client.clone(), &placement.namespace);
        let selector = format!(
            "cluster.open-cluster-management.io/placement={}",
            placement.name
        );
        let clusters = api
            .list(&ListParams::default().labels(&selector))
            .await
            .ok()
            .map(|list| {
                list.items
                    .iter()
                    .filter_map(|d| d.status.as_ref())
                    .flat_map(|s| s.decisions.iter().map(|d| d.cluster_name.clone()))
                    .collect()
            });
        out.insert(key, clusters);
    }
    out
}

/// One pass over every ClusterManagementAddOn's install strategy.
async fn install_pass(client: &kube::Client) -> Result<(), ManagerError> {
    let cmas: Api<ClusterManagementAddOn> = Api::all(client.clone());
    let mcas: Api<ManagedClusterAddOn> = Api::all(client.clone());
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    let deleting: BTreeSet<String> = clusters
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|c| c.metadata.deletion_timestamp.is_some())
        .filter_map(|c| c.metadata.name)
        .collect();
    for cma in cmas.list(&ListParams::default()).await?.items {
        let name = cma.metadata.name.clone().unwrap_or_default();
        let uid = cma.metadata.uid.clone().unwrap_or_default();
        let strategy = cma
            .spec
            .install_strategy
            .as_ref()
            .and_then(|s| s.type_)
            .map(|t| match t {
                ocm_api::addon::v1alpha1::InstallStrategyType::Placements => {
                    ocm_api::addon::names::INSTALL_STRATEGY_PLACEMENTS
                }
                ocm_api::addon::v1alpha1::InstallStrategyType::Manual => {
                    ocm_api::addon::names::INSTALL_STRATEGY_MANUAL
                }
            })
            .unwrap_or_default();
        let existing: Vec<crate::install::Existing> = mcas
            .list(&ListParams::default().fields(&format!("metadata.name={name}")))
            .await?
            .items
            .into_iter()
            .map(|m| crate::install::Existing {
                cluster: m.metadata.namespace.clone().unwrap_or_default(),
                owned: m
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.uid == uid),
            })
            .collect();
        let decisions = decisions_of(client, &cma).await;
        let planned = match crate::install::plan(strategy, &decisions, &deleting, &existing) {
            Ok(planned) => planned,
            Err(err) => {
                tracing::warn!(addon = name, %err, "install strategy not followed");
                continue;
            }
        };
        // Up to 16 creates in flight: a new addon on a large fleet is thousands of them.
        let creates = planned.create.into_iter().map(|cluster| {
            let name = name.clone();
            let uid = uid.clone();
            async move {
                let api: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), &cluster);
                let mca: ManagedClusterAddOn = serde_json::from_value(json!({
                    "apiVersion": "addon.open-cluster-management.io/v1beta1",
                    "kind": "ManagedClusterAddOn",
                    "metadata": {"name": name, "namespace": cluster, "ownerReferences": [{
                        "apiVersion": "addon.open-cluster-management.io/v1beta1",
                        "kind": "ClusterManagementAddOn", "name": name, "uid": uid}]},
                    "spec": {},
                }))?;
                match api.create(&PostParams::default(), &mca).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 409 => {}
                    Err(err) => tracing::warn!(addon = name, cluster, %err, "creating the addon"),
                }
                Ok::<(), ManagerError>(())
            }
        });
        let created: Vec<Result<(), ManagerError>> = futures::stream::iter(creates)
            .buffer_unordered(16)
            .collect()
            .await;
        created
            .into_iter()
            .collect::<Result<Vec<()>, ManagerError>>()?;
        for cluster in planned.delete {
            let api: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), &cluster);
            let _ = api.delete(&name, &DeleteParams::default()).await;
        }
    }
    Ok(())
}

/// The placement (of `cma`'s strategy) that selected `cluster` first, with its configs and
/// Progressive `maxConcurrency`.
fn placement_of<'a>(
    cma: &'a ClusterManagementAddOn,
    decisions: &BTreeMap<String, Option<BTreeSet<String>>>,
    cluster: &str,
) -> Option<&'a ocm_api::addon::v1alpha1::PlacementStrategy> {
    cma.spec
        .install_strategy
        .as_ref()?
        .placements
        .iter()
        .find(|p| {
            decisions
                .get(&format!("{}/{}", p.namespace, p.name))
                .and_then(Option::as_ref)
                .is_some_and(|clusters| clusters.contains(cluster))
        })
}

fn max_concurrency(
    placement: Option<&ocm_api::addon::v1alpha1::PlacementStrategy>,
) -> Option<usize> {
    let strategy = serde_json::to_value(placement?.rollout_strategy.as_ref()?).ok()?;
    if strategy.get("type").and_then(Value::as_str) != Some("Progressive") {
        return None;
    }
    match strategy.pointer("/progressive/maxConcurrency")? {
        Value::Number(n) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
        Value::String(s) => s.trim_end_matches('%').parse().ok(),
        _ => None,
    }
}

/// One pass of the configs every ManagedClusterAddOn should run: its desired configs (own >
/// placement > default) with their spec hashes in `status.configReferences`, handed out per
/// the placement's rollout strategy ([`crate::configs::admit_rollout`]), and the
/// ClusterManagementAddOn's `defaultConfigReferences`.
async fn config_pass(client: &kube::Client) -> Result<(), ManagerError> {
    use ocm_api::addon::v1beta1::ConfigSpecHash;
    let cmas: Api<ClusterManagementAddOn> = Api::all(client.clone());
    let mcas: Api<ManagedClusterAddOn> = Api::all(client.clone());
    for cma in cmas.list(&ListParams::default()).await?.items {
        let name = cma.metadata.name.clone().unwrap_or_default();
        let decisions = decisions_of(client, &cma).await;
        let mut hash_cache: BTreeMap<ConfigRef, Option<String>> = BTreeMap::new();
        let mut hash_of = async |config: &ConfigRef| -> Option<String> {
            if let Some(hash) = hash_cache.get(config) {
                return hash.clone();
            }
            let hash = fetch_config(client, config)
                .await
                .map(|o| crate::configs::spec_hash(&o));
            hash_cache.insert(config.clone(), hash.clone());
            hash
        };
        // Default config references of the ClusterManagementAddOn.
        let defaults = crate::configs::desired(&cma.spec.default_configs, &[], &[]);
        let mut default_refs = Vec::new();
        for config in &defaults {
            default_refs.push(json!({
                "group": config.group, "resource": config.resource,
                "desiredConfig": {"namespace": config.namespace, "name": config.name,
                                  "specHash": hash_of(config).await.unwrap_or_default()},
            }));
        }
        let current_defaults = cma
            .status
            .as_ref()
            .map(|s| serde_json::to_value(&s.default_config_references).unwrap_or(Value::Null))
            .unwrap_or(json!([]));
        if current_defaults != json!(default_refs) {
            let patch = json!({"metadata": {"resourceVersion": cma.metadata.resource_version},
                               "status": {"defaultConfigReferences": default_refs}});
            let _ = cmas
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await;
        }
        // Per addon: desired configs, gated by rollout.
        let addons = mcas
            .list(&ListParams::default().fields(&format!("metadata.name={name}")))
            .await?
            .items;
        let mut plans = Vec::new();
        for mca in &addons {
            let cluster = mca.metadata.namespace.clone().unwrap_or_default();
            let placement = placement_of(&cma, &decisions, &cluster);
            let placement_configs = placement.map(|p| p.configs.clone()).unwrap_or_default();
            let desired = crate::configs::desired(
                &cma.spec.default_configs,
                &placement_configs,
                &mca.spec.configs,
            );
            let mut references = Vec::new();
            for config in &desired {
                let hash = hash_of(config).await;
                references.push((config.clone(), hash));
            }
            let existing = mca
                .status
                .as_ref()
                .map(|s| s.config_references.clone())
                .unwrap_or_default();
            let new: Vec<ocm_api::addon::v1beta1::ConfigReference> = references
                .iter()
                .map(|(config, hash)| ocm_api::addon::v1beta1::ConfigReference {
                    group: Some(config.group.clone()),
                    resource: config.resource.clone(),
                    last_observed_generation: None,
                    desired_config: Some(ConfigSpecHash {
                        namespace: config.namespace.clone(),
                        name: config.name.clone(),
                        spec_hash: hash.clone(),
                    }),
                    last_applied_config: existing
                        .iter()
                        .find(|e| {
                            e.group.clone().unwrap_or_default() == config.group
                                && e.resource == config.resource
                        })
                        .and_then(|e| e.last_applied_config.clone()),
                })
                .collect();
            let desired_of = |refs: &[ocm_api::addon::v1beta1::ConfigReference]| {
                refs.iter()
                    .map(|r| {
                        (
                            r.group.clone().unwrap_or_default(),
                            r.resource.clone(),
                            r.desired_config.clone(),
                        )
                    })
                    .collect::<Vec<_>>()
            };
            let has_new = desired_of(&existing) == desired_of(&new);
            let applied = existing
                .iter()
                .all(|r| r.desired_config.is_none() || r.desired_config == r.last_applied_config);
            plans.push((
                mca,
                cluster,
                max_concurrency(placement),
                new,
                has_new,
                applied,
            ));
        }
        // Rollout per concurrency limit (clusters sharing a limit are admitted together).
        let states: Vec<crate::configs::ClusterRollout> = plans
            .iter()
            .map(
                |(_, cluster, _, _, has_new, applied)| crate::configs::ClusterRollout {
                    cluster: cluster.clone(),
                    has_new: *has_new,
                    applied: *applied,
                },
            )
            .collect();
        let limit = plans.iter().find_map(|(_, _, limit, _, _, _)| *limit);
        let admitted: BTreeSet<String> = crate::configs::admit_rollout(&states, limit)
            .into_iter()
            .collect();
        for (mca, cluster, _, new, has_new, _) in plans {
            if has_new || !admitted.contains(&cluster) {
                continue;
            }
            let api: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), &cluster);
            let patch = json!({"metadata": {"resourceVersion": mca.metadata.resource_version},
                               "status": {"configReferences": new}});
            if let Err(err) = api
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                tracing::debug!(addon = name, cluster, %err, "config references not written yet");
            }
        }
    }
    Ok(())
}

/// Follows every ClusterManagementAddOn's install strategy and hands out its configs until
/// `shutdown`: a pass whenever a ClusterManagementAddOn, PlacementDecision, ManagedClusterAddOn,
/// ManagedCluster or AddOnDeploymentConfig changes (and every 30 s).
pub async fn run_install_strategies(client: kube::Client, shutdown: Shutdown) {
    let changed = Arc::new(tokio::sync::Notify::new());
    fn watch<K>(api: Api<K>, changed: Arc<tokio::sync::Notify>) -> tokio::task::JoinHandle<()>
    where
        K: kube::Resource
            + Clone
            + std::fmt::Debug
            + serde::de::DeserializeOwned
            + Send
            + Sync
            + 'static,
    {
        tokio::spawn(async move {
            watcher(api, watcher::Config::default())
                .default_backoff()
                .for_each(|_| {
                    changed.notify_one();
                    async {}
                })
                .await;
        })
    }
    let watchers = [
        watch(
            Api::<ClusterManagementAddOn>::all(client.clone()),
            changed.clone(),
        ),
        watch(
            Api::<ManagedClusterAddOn>::all(client.clone()),
            changed.clone(),
        ),
        watch(
            Api::<ocm_api::cluster::v1beta1::PlacementDecision>::all(client.clone()),
            changed.clone(),
        ),
        watch(Api::<ManagedCluster>::all(client.clone()), changed.clone()),
        watch(
            Api::<ocm_api::addon::v1alpha1::AddOnDeploymentConfig>::all(client.clone()),
            changed.clone(),
        ),
    ];
    loop {
        if let Err(err) = install_pass(&client).await {
            tracing::debug!(%err, "install strategy pass failed; retrying");
        }
        if let Err(err) = config_pass(&client).await {
            tracing::debug!(%err, "addon config pass failed; retrying");
        }
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = changed.notified() => {}
            _ = tokio::time::sleep(RESYNC) => {}
        }
    }
    for watcher in watchers {
        watcher.abort();
    }
}
