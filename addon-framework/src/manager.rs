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

pub use crate::install_controller::{
    FULL_RESYNC, InstallStats, UNKNOWN_ADDON, run_install_strategies,
    run_install_strategies_counted,
};

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{self, ObjectRef, ReflectHandle, Store, store::Writer};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use ocm_api::addon::names::DEFAULT_INSTALL_NAMESPACE;
use ocm_api::addon::names::annotations::V1ALPHA1_INSTALL_NAMESPACE;
use ocm_api::addon::names::conditions::{
    AVAILABLE, CONFIGURED, HOOK_MANIFEST_COMPLETED, HOSTING_CLUSTER_VALIDITY, MANIFEST_APPLIED,
    PROGRESSING, REGISTRATION_APPLIED, hosting_cluster_validity, manifest_applied, progressing,
    registration_applied,
};
use ocm_api::addon::names::labels::{ADDON_NAME, ADDON_NAMESPACE};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::work::v1::ManifestWork;
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::conditions::{condition, is_true, set_condition};
use ocm_runtime::shutdown::Shutdown;
use serde_json::{Value, json};

use crate::agent::{AddonConfigs, AgentAddon};
use crate::configs::ConfigRef;
use crate::work_applier::{LiveWork, WorkApplier};
use crate::works::{WorkInput, plan};

pub use crate::error::ManagerError;

/// The finalizer that holds a deleting addon until its pre-delete hook finished.
const PRE_DELETE_FINALIZER: &str = ocm_api::addon::names::finalizers::ADDON_PRE_DELETE_HOOK;

/// The finalizer that holds a deleting hosted addon until its hook on the hosting cluster
/// finished.
const HOSTING_PRE_DELETE_FINALIZER: &str =
    ocm_api::addon::names::finalizers::HOSTING_ADDON_PRE_DELETE_HOOK;

/// The finalizer that holds a deleting hosted addon until its hosting works are gone.
const HOSTING_CLEANUP_FINALIZER: &str =
    ocm_api::addon::names::finalizers::HOSTING_MANIFESTS_CLEANUP;

/// How soon a pass that could not finish (a failed render, work write or permission write, a
/// missing or invalid cluster) looks again without an event.
const RETRY: Duration = Duration::from_secs(30);

/// How often an addon that finished its pass is reconciled with no change seen, at the least
/// (upstream's addon framework builds its informers with a 10-minute resync). Its own
/// ManagedClusterAddOn, its works' status, its cluster's first sight and its configs (their
/// spec hashes in the status) wake it at once; this only catches what an addon reads from
/// elsewhere.
const RESYNC: Duration = Duration::from_secs(600);

/// Resyncs spread over this much more by the addon's namespace and name, so that a fleet
/// reconciled together at the start does not come back as one wave.
const RESYNC_SPREAD: Duration = Duration::from_secs(300);

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
    /// Every ManagedCluster (shared by the addons of this manager).
    clusters: Store<ManagedCluster>,
    /// Every addon's ManifestWorks (shared by the addons of this manager).
    works: Store<ManifestWork>,
    /// What this addon's controller last wrote per work.
    applier: WorkApplier,
    /// Per cluster namespace, a fingerprint of the hub permissions last applied.
    permissions: Mutex<HashMap<String, u64>>,
}

/// Room in the shared caches' broadcast to the addons' controllers.
const SHARED_BUFFER: usize = 1024;

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
    /// that a busy addon cannot starve another of polls). One watch on ManagedClusters and one
    /// on addon ManifestWorks feed caches that every addon reads.
    #[inline(never)]
    pub fn run(self, shutdown: Shutdown) -> futures::future::BoxFuture<'static, ()> {
        Box::pin(self.run_body(shutdown))
    }

    async fn run_body(self, shutdown: Shutdown) {
        let (clusters, cluster_writer) = reflector::store_shared(SHARED_BUFFER);
        let (works, work_writer) = reflector::store_shared(SHARED_BUFFER);
        let mut tasks = vec![tokio::spawn(crate::csr_approval::run_csr_approval(
            self.client.clone(),
            self.addons.clone(),
            shutdown.clone(),
        ))];
        let mut controllers = Vec::new();
        for addon in self.addons {
            let (Some(cluster_events), Some(work_events)) =
                (cluster_writer.subscribe(), work_writer.subscribe())
            else {
                tracing::error!("the addon manager's shared caches refused a subscriber");
                return;
            };
            let ctx = Arc::new(Ctx {
                client: self.client.clone(),
                addon,
                clusters: clusters.clone(),
                works: works.clone(),
                applier: WorkApplier::default(),
                permissions: Mutex::new(HashMap::new()),
            });
            controllers.push((ctx, cluster_events, work_events));
        }
        tasks.push(tokio::spawn(feed(
            Api::<ManagedCluster>::all(self.client.clone()),
            watcher::Config::default(),
            cluster_writer,
            |cluster: &mut ManagedCluster| cluster.metadata.managed_fields = None,
            shutdown.clone(),
        )));
        // Reconciles need a work's identity, labels and status; its manifests are the ones
        // the manager rendered (memory: thousands of works).
        tasks.push(tokio::spawn(feed(
            Api::<ManifestWork>::all(self.client.clone()),
            watcher::Config::default().labels(ADDON_NAME),
            work_writer,
            |work: &mut ManifestWork| {
                work.metadata.managed_fields = None;
                work.spec.workload.manifests = Vec::new();
            },
            shutdown.clone(),
        )));
        // Reconciles read clusters and works from the caches: start once both are filled.
        tokio::select! {
            _ = shutdown.cancelled() => {}
            _ = async {
                let _ = clusters.wait_until_ready().await;
                let _ = works.wait_until_ready().await;
            } => {
                for (ctx, cluster_events, work_events) in controllers {
                    tasks.push(tokio::spawn(run_addon(
                        ctx,
                        cluster_events,
                        work_events,
                        shutdown.clone(),
                    )));
                }
            }
        }
        for task in tasks {
            if let Err(err) = task.await {
                tracing::warn!(%err, "an addon controller task ended abnormally");
            }
        }
    }
}

/// Keeps a shared cache of `api`'s objects, each trimmed by `trim`, until `shutdown`.
async fn feed<K>(
    api: Api<K>,
    config: watcher::Config,
    writer: Writer<K>,
    trim: fn(&mut K),
    shutdown: Shutdown,
) where
    K: kube::Resource
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
{
    watcher(api, config)
        .backoff_on_errors()
        .modify(trim)
        .reflect_shared(writer)
        .take_until(shutdown.cancelled())
        .for_each(|_| async {})
        .await;
}

async fn run_addon(
    ctx: Arc<Ctx>,
    cluster_events: ReflectHandle<ManagedCluster>,
    work_events: ReflectHandle<ManifestWork>,
    shutdown: Shutdown,
) {
    let name = ctx.addon.options().name.clone();
    let addons: Api<ManagedClusterAddOn> = Api::all(ctx.client.clone());
    let by_name = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let work_name = name.clone();
    let cluster_name = name.clone();
    let filter = ctx.addon.options().redeploy_on_cluster_change.clone();
    let seen: Mutex<HashMap<String, Arc<ManagedCluster>>> = Mutex::new(HashMap::new());
    let (store, writer) = reflector::store();
    let own = watcher(addons, by_name)
        .backoff_on_errors()
        .modify(|mca: &mut ManagedClusterAddOn| mca.metadata.managed_fields = None)
        .reflect(writer)
        .touched_objects();
    Controller::for_stream(own, store)
        .watches_shared_stream(work_events, move |work| {
            let labels = work.metadata.labels.as_ref()?;
            // A hosting work belongs to the addon of the cluster it is labelled with.
            let cluster = labels
                .get(ADDON_NAMESPACE)
                .cloned()
                .or_else(|| work.metadata.namespace.clone());
            (labels.get(ADDON_NAME) == Some(&work_name))
                .then_some(cluster)
                .flatten()
                .map(|ns| ObjectRef::new(&work_name).within(&ns))
        })
        .watches_shared_stream(cluster_events, move |cluster| {
            let name = cluster.metadata.name.clone()?;
            let previous = match seen.lock() {
                Ok(mut seen) => seen.insert(name.clone(), cluster.clone()),
                Err(poisoned) => poisoned.into_inner().insert(name.clone(), cluster.clone()),
            };
            cluster_change_redeploys(previous.as_deref(), &cluster, filter.as_ref())
                .then(|| ObjectRef::new(&cluster_name).within(&name))
        })
        .graceful_shutdown_on(async move { shutdown.cancelled().await })
        .run(reconcile, error_policy, ctx)
        .for_each(|_| async {})
        .await;
}

/// Whether a ManagedCluster event reconciles the addon on that cluster: its first sight
/// always (the addon may have waited for the cluster), an update only when the addon's
/// `redeploy_on_cluster_change` filter says so (upstream's default filter says no; the
/// periodic resync still catches up).
fn cluster_change_redeploys(
    previous: Option<&ManagedCluster>,
    cluster: &ManagedCluster,
    filter: Option<&crate::agent::ClusterChangeFilter>,
) -> bool {
    match (previous, filter) {
        (None, _) => true,
        (Some(old), Some(filter)) => filter(old, cluster),
        (Some(_), None) => false,
    }
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
    let hooks_pending = has_finalizer(&mca) || has(&mca, HOSTING_PRE_DELETE_FINALIZER);
    // The hosting works go once the hooks ran.
    if deleting
        && !hooks_pending
        && has(&mca, HOSTING_CLEANUP_FINALIZER)
        && !clean_up_hosting(&ctx, &mca).await?
    {
        return Ok(Action::requeue(Duration::from_secs(2)));
    }
    if deleting && !hooks_pending {
        return Ok(Action::await_change());
    }
    let Some(cluster) = ctx.clusters.get(&ObjectRef::new(&namespace)) else {
        if deleting {
            release_hooks(&ctx, &mca).await?;
            return Ok(Action::await_change());
        }
        return settle(
            &ctx,
            &mca,
            &mut outcome,
            condition(
                MANIFEST_APPLIED,
                "False",
                "ManagedClusterNotFound",
                &format!(
                    "namespace {namespace} is not a cluster namespace: there is no ManagedCluster {namespace}"
                ),
                generation,
            ),
        )
        .await;
    };
    // Configs of kinds the addon does not read: said so, and nothing deployed with them.
    let unsupported = crate::configs::unsupported_configs(&options.supported_configs, &mca);
    if !unsupported.is_empty() {
        return settle(
            &ctx,
            &mca,
            &mut outcome,
            condition(
                PROGRESSING,
                "False",
                progressing::CONFIGURATION_UNSUPPORTED,
                &format!(
                    "addon {} does not support the config kind(s) {}",
                    options.name,
                    unsupported.join(", ")
                ),
                generation,
            ),
        )
        .await;
    }
    // Hosted mode: only on a hosting cluster the target's klusterlet can observe.
    let hosting = crate::hosted::hosting_cluster(&mca, options.hosted_mode);
    if let Some(hosting) = &hosting {
        let hosting_cluster = ctx.clusters.get(&ObjectRef::new(hosting));
        let verdict = crate::hosted::validity(&cluster, hosting, hosting_cluster.as_deref());
        let (status, reason, message) = match &verdict {
            Ok(message) => ("True", hosting_cluster_validity::VALID, message.clone()),
            Err((reason, message)) => ("False", *reason, message.clone()),
        };
        set_condition(
            &mut outcome.conditions,
            condition(
                HOSTING_CLUSTER_VALIDITY,
                status,
                reason,
                &message,
                generation,
            ),
        );
        if verdict.is_err() && !deleting {
            write_status(&ctx, &mca, &outcome).await?;
            return Ok(Action::requeue(RETRY));
        }
    }
    // Config check: nothing rendered until the hub's config pass says the addon is configured
    // (its status change wakes this pass). Works already written stay as they are.
    if options.config_check_enabled && !deleting && !is_true(&outcome.conditions, CONFIGURED) {
        tracing::debug!(
            addon = options.name,
            cluster = namespace,
            "addon not configured yet"
        );
        write_status(&ctx, &mca, &outcome).await?;
        return Ok(Action::await_change());
    }
    let (configs, hashes, unread) = load_configs(&ctx.client, &mca).await;
    // The addon's choice, else its AddOnDeploymentConfig's, else the addon's preference for
    // this cluster, else the namespace a v1alpha1 client set on this addon, else the default.
    let install_namespace = options
        .install_namespace
        .clone()
        .or_else(|| configs.install_namespace().map(str::to_owned))
        .or_else(|| ctx.addon.default_install_namespace(&mca, &configs))
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
                let existing = mca
                    .status
                    .as_ref()
                    .map(|s| s.registrations.as_slice())
                    .unwrap_or_default();
                let entries = crate::registration::keep_agent_choices(
                    crate::registration::status_registrations(&namespace, &options.name, &configs),
                    existing,
                );
                outcome.registrations = Some(serde_json::to_value(entries)?);
                let permissions = match &registration.permissions {
                    None => Ok(()),
                    Some(permissions) => match permissions(&cluster, &mca) {
                        Ok(objects) => apply_permissions(&ctx, &namespace, &objects)
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
    let manifests = match ctx.addon.render(&cluster, &mca, &configs).await {
        Ok(rendered) => {
            for mut reported in rendered.conditions {
                reported.observed_generation = generation;
                set_condition(&mut outcome.conditions, reported);
            }
            rendered.manifests
        }
        Err(err) if deleting => {
            tracing::warn!(addon = options.name, cluster = namespace, %err,
                "no manifests to run the pre-delete hook from; letting the addon go");
            release_hooks(&ctx, &mca).await?;
            return Ok(Action::await_change());
        }
        Err(err) => {
            return settle(
                &ctx,
                &mca,
                &mut outcome,
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
            )
            .await;
        }
    };
    let manifest_configs = ctx.addon.manifest_configs(&mca, &configs);
    let uid = mca.metadata.uid.clone().unwrap_or_default();
    let input = WorkInput {
        addon: &options.name,
        cluster: &namespace,
        owner_uid: &uid,
        manifests: &[],
        manifest_configs: &manifest_configs,
        config_hash: (!hashes.is_empty()).then(|| crate::configs::hash_annotation(&hashes)),
        limit: WorkInput::DEFAULT_LIMIT,
    };
    let (planned, hosting_works) =
        match plan_works(&input, &options.health, manifests, hosting.as_deref()) {
            Ok(planned) => planned,
            Err(err) => {
                return settle(
                    &ctx,
                    &mca,
                    &mut outcome,
                    condition(
                        MANIFEST_APPLIED,
                        "False",
                        manifest_applied::APPLY_FAILED,
                        &err.0,
                        generation,
                    ),
                )
                .await;
            }
        };
    let params = PatchParams::apply(&format!("addon-manager-{}", options.name)).force();
    if deleting {
        // The hosting cluster's hook first, then the managed cluster's.
        let hooks = [
            (
                hosting_works.pre_delete.as_ref(),
                hosting.as_deref().unwrap_or_default(),
                HOSTING_PRE_DELETE_FINALIZER,
            ),
            (
                planned.pre_delete.as_ref(),
                namespace.as_str(),
                PRE_DELETE_FINALIZER,
            ),
        ];
        // One hook per pass: its finalizer going wakes the next pass.
        if let Some((work, work_namespace, finalizer)) = hooks
            .into_iter()
            .find(|(_, _, finalizer)| has(&mca, finalizer))
            && !run_pre_delete(
                &ctx,
                &mca,
                work,
                work_namespace,
                finalizer,
                &params,
                &mut outcome,
            )
            .await?
        {
            write_status(&ctx, &mca, &outcome).await?;
            return Ok(Action::requeue(Duration::from_secs(2)));
        }
        return Ok(Action::await_change());
    }
    // The finalizers this addon needs, in one write.
    let hosted_any = hosting.is_some()
        && (!hosting_works.deploy.is_empty() || hosting_works.pre_delete.is_some());
    let needed: Vec<&str> = [
        (planned.pre_delete.is_some(), PRE_DELETE_FINALIZER),
        (
            hosting_works.pre_delete.is_some(),
            HOSTING_PRE_DELETE_FINALIZER,
        ),
        (hosted_any, HOSTING_CLEANUP_FINALIZER),
    ]
    .into_iter()
    .filter(|(wanted, finalizer)| *wanted && !has(&mca, finalizer))
    .map(|(_, finalizer)| finalizer)
    .collect();
    if !needed.is_empty() {
        add_finalizers(&ctx, &mca, &needed).await?;
    }
    let mut failure = None;
    let mut applied = match apply_works(&ctx, &namespace, &planned.deploy, &params).await {
        Ok(applied) => applied,
        Err(err) => {
            failure = Some(err);
            Vec::new()
        }
    };
    if failure.is_none() {
        let prefix = format!("addon-{}-deploy-", options.name);
        delete_stale(&ctx, &namespace, &prefix, &planned.deploy, None).await;
    }
    if let (Some(hosting), None) = (&hosting, &failure) {
        let deploy = &hosting_works.deploy;
        match apply_works(&ctx, hosting, deploy, &params).await {
            Ok(more) => {
                applied.extend(more);
                let prefix = crate::hosted::hosting_work_prefix(&options.name, &namespace);
                delete_stale(&ctx, hosting, &prefix, deploy, Some(&namespace)).await;
            }
            Err(err) => failure = Some(err),
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
    Ok(Action::requeue(next_pass_after(
        &outcome.conditions,
        unread,
        &namespace,
        &options.name,
    )))
}

/// When a finished pass of the addon `name` on cluster `namespace` runs again without an
/// event: soon ([`RETRY`]) when a step failed (its `ManifestApplied` or `RegistrationApplied`
/// is False) or some of its desired configs could not be read (`unread_configs`: it rendered
/// without them), else after [`RESYNC`] plus a share of [`RESYNC_SPREAD`] fixed by the names.
fn next_pass_after(
    conditions: &[Condition],
    unread_configs: usize,
    namespace: &str,
    name: &str,
) -> Duration {
    let failed = conditions.iter().any(|c| {
        (c.type_ == MANIFEST_APPLIED || c.type_ == REGISTRATION_APPLIED) && c.status == "False"
    });
    if failed || unread_configs > 0 {
        return RETRY;
    }
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (namespace, name).hash(&mut hasher);
    let spread = u128::from(hasher.finish()) * RESYNC_SPREAD.as_millis() / u128::from(u64::MAX);
    RESYNC + Duration::from_millis(u64::try_from(spread).unwrap_or_default())
}

/// The works of `manifests`: for the managed cluster, and (hosted mode, `hosting` named) for
/// the hosting cluster. `input` gives everything but the manifests.
fn plan_works(
    input: &WorkInput<'_>,
    health: &crate::agent::HealthProber,
    manifests: Vec<Value>,
    hosting: Option<&str>,
) -> Result<(crate::works::WorkPlan, crate::hosted::HostingWorks), crate::agent::AddonError> {
    let (managed, on_hosting) = match hosting {
        Some(_) => crate::hosted::split(manifests)?,
        None => (manifests, Vec::new()),
    };
    let with_probes = |manifests: &[Value]| {
        crate::health::merge_manifest_configs(
            crate::health::probe_configs(health, manifests),
            input.manifest_configs,
        )
    };
    let configs = with_probes(&managed);
    let planned = plan(&WorkInput {
        manifests: &managed,
        manifest_configs: &configs,
        ..input.clone()
    })?;
    let hosting_works = match hosting {
        Some(hosting) if !on_hosting.is_empty() => {
            let configs = with_probes(&on_hosting);
            let hosting_plan = plan(&WorkInput {
                manifests: &on_hosting,
                manifest_configs: &configs,
                ..input.clone()
            })?;
            crate::hosted::to_hosting(hosting_plan, input.addon, input.cluster, hosting)
        }
        _ => crate::hosted::HostingWorks::default(),
    };
    Ok((planned, hosting_works))
}

fn has_finalizer(mca: &ManagedClusterAddOn) -> bool {
    has(mca, PRE_DELETE_FINALIZER)
}

fn has(mca: &ManagedClusterAddOn, finalizer: &str) -> bool {
    mca.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == finalizer)
}

/// Adds or removes the pre-delete finalizer (conditionally on the object's resourceVersion).
async fn set_pre_delete_finalizer(
    ctx: &Ctx,
    mca: &ManagedClusterAddOn,
    present: bool,
) -> Result<(), ManagerError> {
    set_finalizer(ctx, mca, PRE_DELETE_FINALIZER, present).await
}

/// Adds `finalizers` in one write (conditionally on the object's resourceVersion).
async fn add_finalizers(
    ctx: &Ctx,
    mca: &ManagedClusterAddOn,
    finalizers: &[&str],
) -> Result<(), ManagerError> {
    let mut all = mca.metadata.finalizers.clone().unwrap_or_default();
    all.extend(finalizers.iter().map(|f| (*f).to_owned()));
    write_finalizers(ctx, mca, all).await
}

/// Adds or removes `finalizer` (conditionally on the object's resourceVersion).
async fn set_finalizer(
    ctx: &Ctx,
    mca: &ManagedClusterAddOn,
    finalizer: &str,
    present: bool,
) -> Result<(), ManagerError> {
    if has(mca, finalizer) == present {
        return Ok(());
    }
    let mut finalizers: Vec<String> = mca
        .metadata
        .finalizers
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|f| f != finalizer)
        .collect();
    if present {
        finalizers.push(finalizer.to_owned());
    }
    write_finalizers(ctx, mca, finalizers).await
}

/// Writes `mca`'s finalizers (conditionally on the object's resourceVersion).
async fn write_finalizers(
    ctx: &Ctx,
    mca: &ManagedClusterAddOn,
    finalizers: Vec<String>,
) -> Result<(), ManagerError> {
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

/// A deleting hosted addon: removes its works on the hosting cluster (found by their labels,
/// wherever they are), then its cleanup finalizer. `Ok(true)` once done.
async fn clean_up_hosting(ctx: &Ctx, mca: &ManagedClusterAddOn) -> Result<bool, ManagerError> {
    let addon = &ctx.addon.options().name;
    let cluster = mca.metadata.namespace.as_deref().unwrap_or_default();
    let left = ctx.works.state_filter(|w| {
        let labels = w.metadata.labels.as_ref();
        labels.and_then(|l| l.get(ADDON_NAME)) == Some(addon)
            && labels
                .and_then(|l| l.get(ADDON_NAMESPACE))
                .map(String::as_str)
                == Some(cluster)
    });
    for work in &left {
        let (Some(ns), Some(name)) = (&work.metadata.namespace, &work.metadata.name) else {
            continue;
        };
        let api: Api<ManifestWork> = Api::namespaced(ctx.client.clone(), ns);
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(err) => return Err(err.into()),
        }
    }
    if !left.is_empty() {
        return Ok(false);
    }
    set_finalizer(ctx, mca, HOSTING_CLEANUP_FINALIZER, false).await?;
    Ok(true)
}

/// Applies the `planned` works in `namespace` (server-side apply, skipping those the cache shows
/// as already written): the works as they are now (with status), or why one failed.
async fn apply_works(
    ctx: &Ctx,
    namespace: &str,
    planned: &[Value],
    params: &PatchParams,
) -> Result<Vec<Value>, String> {
    let works: Api<ManifestWork> = Api::namespaced(ctx.client.clone(), namespace);
    let mut applied = Vec::new();
    for work in planned {
        let name = work["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let live = ctx.works.get(&ObjectRef::new(&name).within(namespace));
        let identity = live.as_deref().map(|w| LiveWork {
            uid: w.metadata.uid.as_deref().unwrap_or_default(),
            generation: w.metadata.generation.unwrap_or_default(),
        });
        if let Some(live) = &live
            && ctx.applier.is_current(namespace, work, identity)
        {
            // The cache keeps no manifests: those are `work`'s; the rest is the live work's.
            let mut seen = work.clone();
            seen["metadata"]["uid"] = json!(live.metadata.uid);
            seen["metadata"]["generation"] = json!(live.metadata.generation);
            seen["status"] = serde_json::to_value(&live.status).unwrap_or_default();
            applied.push(seen);
            continue;
        }
        match works.patch(&name, params, &Patch::Apply(work)).await {
            Ok(written) => {
                ctx.applier.record(
                    namespace,
                    work,
                    LiveWork {
                        uid: written.metadata.uid.as_deref().unwrap_or_default(),
                        generation: written.metadata.generation.unwrap_or_default(),
                    },
                );
                applied.push(serde_json::to_value(written).unwrap_or_default());
            }
            Err(err) => return Err(format!("failed to apply work {name}: {err}")),
        }
    }
    Ok(applied)
}

/// Deletes this addon's works in `namespace` named `prefix…` that are not in `keep`: with
/// `hosted_for` the hosting works of that cluster, else the managed cluster's own works
/// (hosting works of other clusters kept there are not this pass's).
async fn delete_stale(
    ctx: &Ctx,
    namespace: &str,
    prefix: &str,
    keep: &[Value],
    hosted_for: Option<&str>,
) {
    let addon = &ctx.addon.options().name;
    let keep: BTreeSet<&str> = keep
        .iter()
        .filter_map(|w| w["metadata"]["name"].as_str())
        .collect();
    let stale = ctx.works.state_filter(|w| {
        let labels = w.metadata.labels.as_ref();
        w.metadata.namespace.as_deref() == Some(namespace)
            && labels.and_then(|l| l.get(ADDON_NAME)) == Some(addon)
            && labels
                .and_then(|l| l.get(ADDON_NAMESPACE))
                .map(String::as_str)
                == hosted_for
            && w.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with(prefix) && !keep.contains(n))
    });
    let works: Api<ManifestWork> = Api::namespaced(ctx.client.clone(), namespace);
    for work in stale {
        let name = work.metadata.name.clone().unwrap_or_default();
        ctx.applier.forget(namespace, &name);
        let _ = works.delete(&name, &DeleteParams::default()).await;
    }
}

/// A deleting addon's pre-delete hook held by `finalizer`: applies the hook `work` in
/// `namespace` and lets the finalizer go once every hook Job or Pod has finished (or when
/// there is no hook). `Ok(false)` while it runs (the condition says so in `outcome`).
async fn run_pre_delete(
    ctx: &Ctx,
    mca: &ManagedClusterAddOn,
    work: Option<&Value>,
    namespace: &str,
    finalizer: &str,
    params: &PatchParams,
    outcome: &mut Outcome,
) -> Result<bool, ManagerError> {
    let Some(work) = work.filter(|_| !namespace.is_empty()) else {
        set_finalizer(ctx, mca, finalizer, false).await?;
        return Ok(true);
    };
    let name = work["metadata"]["name"].as_str().unwrap_or_default();
    let works: Api<ManifestWork> = Api::namespaced(ctx.client.clone(), namespace);
    let written = serde_json::to_value(works.patch(name, params, &Patch::Apply(work)).await?)?;
    if crate::works::hook_completed(&written) {
        // The addon goes now; its works (owned by it, or cleaned up behind their finalizer) go
        // with it.
        set_finalizer(ctx, mca, finalizer, false).await?;
        return Ok(true);
    }
    set_condition(
        &mut outcome.conditions,
        condition(
            HOOK_MANIFEST_COMPLETED,
            "False",
            "HookManifestIsNotCompleted",
            "waiting for the pre-delete hook manifests to complete",
            mca.metadata.generation,
        ),
    );
    Ok(false)
}

/// Lets a deleting addon go without its pre-delete hooks (nothing to run them from).
async fn release_hooks(ctx: &Ctx, mca: &ManagedClusterAddOn) -> Result<(), ManagerError> {
    set_pre_delete_finalizer(ctx, mca, false).await?;
    // Re-read: the first patch changed the resourceVersion the second is conditional on.
    let api: Api<ManagedClusterAddOn> = Api::namespaced(
        ctx.client.clone(),
        mca.metadata.namespace.as_deref().unwrap_or_default(),
    );
    if let Some(fresh) = api
        .get_opt(mca.metadata.name.as_deref().unwrap_or_default())
        .await?
    {
        set_finalizer(ctx, &fresh, HOSTING_PRE_DELETE_FINALIZER, false).await?;
    }
    Ok(())
}

/// The config objects named by `mca`'s `status.configReferences` (desired configs), their
/// spec hashes, and how many could not be read (left out).
async fn load_configs(
    client: &kube::Client,
    mca: &ManagedClusterAddOn,
) -> (AddonConfigs, Vec<(ConfigRef, String)>, usize) {
    let mut configs = AddonConfigs::default();
    let mut hashes = Vec::new();
    let mut unread = 0;
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
        let Some(object) = crate::config_fetch::fetch_config(client, &config).await else {
            unread += 1;
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
    (configs, hashes, unread)
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

/// Applies an addon's hub RBAC objects for one cluster (server-side apply), unless this
/// controller already applied exactly these.
async fn apply_permissions(ctx: &Ctx, cluster: &str, objects: &[Value]) -> Result<(), kube::Error> {
    let fingerprint = crate::work_applier::fingerprint(&objects);
    let applied = |map: &HashMap<String, u64>| map.get(cluster) == Some(&fingerprint);
    if ctx.permissions.lock().is_ok_and(|map| applied(&map)) {
        return Ok(());
    }
    write_permissions(&ctx.client, &ctx.addon.options().name, objects).await?;
    if let Ok(mut map) = ctx.permissions.lock() {
        map.insert(cluster.to_owned(), fingerprint);
    }
    Ok(())
}

/// Server-side applies hub RBAC objects.
async fn write_permissions(
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

/// Sets `condition` (one that stops this reconcile: nothing more is deployed), writes the
/// status and comes back after [`RETRY`].
async fn settle(
    ctx: &Ctx,
    mca: &ManagedClusterAddOn,
    outcome: &mut Outcome,
    condition: Condition,
) -> Result<Action, ManagerError> {
    set_condition(&mut outcome.conditions, condition);
    write_status(ctx, mca, outcome).await?;
    Ok(Action::requeue(RETRY))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(label: &str) -> ManagedCluster {
        serde_json::from_value(
            json!({"metadata": {"name": "c1", "labels": {"tier": label}},
                                      "spec": {}}),
        )
        .unwrap()
    }

    #[test]
    fn a_finished_pass_resyncs_late_and_spread_and_a_failed_one_soon() {
        let applied = |status: &str| {
            vec![condition(
                MANIFEST_APPLIED,
                status,
                manifest_applied::APPLIED,
                "",
                None,
            )]
        };
        let later = next_pass_after(&applied("True"), 0, "c1", "hello");
        assert!(later >= RESYNC && later < RESYNC + RESYNC_SPREAD);
        assert_eq!(later, next_pass_after(&applied("True"), 0, "c1", "hello"));
        let spread: std::collections::BTreeSet<Duration> = (0..50)
            .map(|i| next_pass_after(&[], 0, &format!("cluster-{i}"), "hello"))
            .collect();
        assert!(spread.len() > 40, "{spread:?}");
        assert_eq!(next_pass_after(&applied("False"), 0, "c1", "hello"), RETRY);
        let registration = vec![condition(
            REGISTRATION_APPLIED,
            "False",
            registration_applied::SET_PERMISSION_FAILED,
            "",
            None,
        )];
        assert_eq!(next_pass_after(&registration, 0, "c1", "hello"), RETRY);
        // A desired config it could not read: rendered without it, so soon again.
        assert_eq!(next_pass_after(&applied("True"), 1, "c1", "hello"), RETRY);
    }

    #[test]
    fn cluster_updates_redeploy_only_through_the_addons_filter() {
        let (gold, silver) = (cluster("gold"), cluster("silver"));
        assert!(cluster_change_redeploys(None, &gold, None));
        assert!(!cluster_change_redeploys(Some(&gold), &silver, None));
        let on_tier: crate::agent::ClusterChangeFilter =
            Arc::new(|old, new| old.metadata.labels != new.metadata.labels);
        assert!(cluster_change_redeploys(
            Some(&gold),
            &silver,
            Some(&on_tier)
        ));
        assert!(!cluster_change_redeploys(
            Some(&gold),
            &gold,
            Some(&on_tier)
        ));
    }
}
