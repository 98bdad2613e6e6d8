//! The generic controller `ocm hub` runs for every addon: ClusterManagementAddOn install
//! strategies ([`crate::install::plan`]) and the configs each ManagedClusterAddOn should run,
//! handed out per rollout strategy.
//!
//! Strategy-governed addons also get their cluster's addon annotations
//! ([`crate::install::annotation_changes`]), and addons whose agents use the token driver their
//! ServiceAccount ([`crate::token_infra`]).
//!
//! Both passes read caches fed by watches (ClusterManagementAddOns, ManagedClusterAddOns,
//! PlacementDecisions, ManagedClusters, AddOnDeploymentConfigs) and write only differences:
//! on a large fleet every addon status write wakes them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::Resource;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use ocm_api::addon::v1alpha1::{AddOnDeploymentConfig, InstallConfigReference, InstallProgression};
use ocm_api::addon::v1beta1::{
    ClusterManagementAddOn, ConfigReference, ConfigSpecHash, ManagedClusterAddOn,
};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta1::PlacementDecision;
use ocm_runtime::conditions::{condition, set_condition};
use ocm_runtime::shutdown::Shutdown;
use ocm_work::hub::replicaset::placement_groups;
use ocm_work::hub::rollout::{ClusterGroups, ClusterRolloutStatus, RolloutStatus, plan_rollout};
use serde_json::{Value, json};

use crate::configs::ConfigRef;
use crate::error::ManagerError;

/// How often the passes run without a change.
const RESYNC: Duration = Duration::from_secs(30);

/// The hub objects the passes read.
struct Caches {
    cmas: Store<ClusterManagementAddOn>,
    mcas: Store<ManagedClusterAddOn>,
    decisions: Store<PlacementDecision>,
    clusters: Store<ManagedCluster>,
    deployment_configs: Store<AddOnDeploymentConfig>,
    /// The addon agents' ServiceAccounts of the token driver (label-selected: only those).
    token_accounts: Store<ServiceAccount>,
}

/// The ManagedClusterAddOns of one pass, indexed by addon name: each pass reads the cache once
/// instead of scanning every addon of the fleet once per ClusterManagementAddOn and step.
struct AddonIndex {
    by_name: BTreeMap<String, Vec<Arc<ManagedClusterAddOn>>>,
}

impl AddonIndex {
    /// Indexes the cache's current addons.
    fn of(mcas: &Store<ManagedClusterAddOn>) -> AddonIndex {
        let mut by_name: BTreeMap<String, Vec<Arc<ManagedClusterAddOn>>> = BTreeMap::new();
        for mca in mcas.state() {
            if let Some(name) = mca.metadata.name.clone() {
                by_name.entry(name).or_default().push(mca);
            }
        }
        AddonIndex { by_name }
    }

    /// The addons named `name`, on every cluster.
    fn named(&self, name: &str) -> &[Arc<ManagedClusterAddOn>] {
        self.by_name.get(name).map_or(&[], Vec::as_slice)
    }

    /// Every addon.
    fn all(&self) -> impl Iterator<Item = &Arc<ManagedClusterAddOn>> {
        self.by_name.values().flatten()
    }
}

/// The clusters each placement of `cma`'s strategy selects.
fn decisions_of(
    caches: &Caches,
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
        let decisions = caches.decisions.state_filter(|d| {
            d.metadata.namespace.as_deref() == Some(placement.namespace.as_str())
                && d.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("cluster.open-cluster-management.io/placement"))
                    == Some(&placement.name)
        });
        let clusters = decisions
            .iter()
            .filter_map(|d| d.status.as_ref())
            .flat_map(|s| s.decisions.iter().map(|d| d.cluster_name.clone()))
            .collect();
        out.insert(key, Some(clusters));
    }
    out
}

/// One pass over every ClusterManagementAddOn's install strategy.
async fn install_pass(
    client: &kube::Client,
    caches: &Caches,
    index: &AddonIndex,
) -> Result<(), ManagerError> {
    let deleting: BTreeSet<String> = caches
        .clusters
        .state_filter(|c| c.metadata.deletion_timestamp.is_some())
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    for cma in caches.cmas.state() {
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
        let existing: Vec<crate::install::Existing> = index
            .named(&name)
            .iter()
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
        let decisions = decisions_of(caches, &cma);
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
            // The cluster's addon annotations come along (none: no annotations at all).
            let annotations = crate::install::addon_annotations(
                caches
                    .clusters
                    .get(&ObjectRef::new(&cluster))
                    .and_then(|c| c.metadata.annotations.clone())
                    .as_ref(),
            );
            async move {
                let api: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), &cluster);
                let mut metadata = json!({"name": name, "namespace": cluster, "ownerReferences": [{
                    "apiVersion": "addon.open-cluster-management.io/v1beta1",
                    "kind": "ClusterManagementAddOn", "name": name, "uid": uid}]});
                if !annotations.is_empty() {
                    metadata["annotations"] = json!(annotations);
                }
                let mca: ManagedClusterAddOn = serde_json::from_value(json!({
                    "apiVersion": "addon.open-cluster-management.io/v1beta1",
                    "kind": "ManagedClusterAddOn",
                    "metadata": metadata,
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
        adopt_addons(client, index, &cma).await;
        if strategy == ocm_api::addon::names::INSTALL_STRATEGY_PLACEMENTS {
            sync_addon_annotations(client, caches, index, &name).await;
        }
    }
    Ok(())
}

/// Gives every ManagedClusterAddOn named `addon` its cluster's addon annotations
/// ([`crate::install::annotation_changes`]), one merge patch per addon that needs it.
async fn sync_addon_annotations(
    client: &kube::Client,
    caches: &Caches,
    index: &AddonIndex,
    addon: &str,
) {
    let mcas = index
        .named(addon)
        .iter()
        .filter(|m| m.metadata.deletion_timestamp.is_none());
    for mca in mcas {
        let cluster = mca.metadata.namespace.clone().unwrap_or_default();
        let Some(managed) = caches.clusters.get(&ObjectRef::new(&cluster)) else {
            continue;
        };
        let wanted = crate::install::addon_annotations(managed.metadata.annotations.as_ref());
        let changes =
            crate::install::annotation_changes(mca.metadata.annotations.as_ref(), &wanted);
        if changes.is_empty() {
            continue;
        }
        let patch = json!({"metadata": {"resourceVersion": mca.metadata.resource_version,
                                        "annotations": changes}});
        let api: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), &cluster);
        match api
            .patch(addon, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => tracing::info!(addon, cluster, "synced addon annotations from the cluster"),
            Err(err) => {
                tracing::debug!(addon, cluster, %err, "addon annotations not synced yet; retrying later")
            }
        }
    }
}

/// Whether the central addon manager runs `cma`: its lifecycle annotation says so, or it has
/// none and is a template addon (which no manager of its own runs). Upstream treats every
/// addon without the annotation as the addon manager's; ours leaves such code addons to their
/// own managers, which do not write `self` on their ClusterManagementAddOns.
fn managed_by_addon_manager(cma: &ClusterManagementAddOn) -> bool {
    use ocm_api::addon::names::annotations::{LIFECYCLE, LIFECYCLE_ADDON_MANAGER};
    match cma
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(LIFECYCLE))
    {
        Some(value) => value == LIFECYCLE_ADDON_MANAGER,
        None => crate::configs::is_template_addon(cma),
    }
}

/// Makes the ClusterManagementAddOn the owner of each of its ManagedClusterAddOns, when the
/// central addon manager runs it (as upstream): deleting the ClusterManagementAddOn then
/// removes the addon from every cluster, whoever enabled it.
async fn adopt_addons(client: &kube::Client, index: &AddonIndex, cma: &ClusterManagementAddOn) {
    let (Some(name), Some(uid)) = (cma.metadata.name.as_deref(), cma.metadata.uid.as_deref())
    else {
        return;
    };
    if !managed_by_addon_manager(cma) || cma.metadata.deletion_timestamp.is_some() {
        return;
    }
    let orphans = index.named(name).iter().filter(|m| {
        m.metadata.deletion_timestamp.is_none()
            && !m
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.uid == uid)
    });
    for mca in orphans {
        let cluster = mca.metadata.namespace.clone().unwrap_or_default();
        let mut owners = mca.metadata.owner_references.clone().unwrap_or_default();
        owners.push(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                api_version: "addon.open-cluster-management.io/v1beta1".into(),
                kind: "ClusterManagementAddOn".into(),
                name: name.to_owned(),
                uid: uid.to_owned(),
                controller: Some(true),
                // Blocking would need the finalizers permission on the owner; nothing waits on it.
                block_owner_deletion: None,
            },
        );
        let patch = json!({"metadata": {
            "resourceVersion": mca.metadata.resource_version,
            "ownerReferences": owners}});
        let api: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), &cluster);
        if let Err(err) = api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::debug!(addon = name, cluster, %err, "adopting the addon failed; retrying later");
        }
    }
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

/// Config references as the status records them, for the desired configs with their hashes
/// (keeping each kind's `lastAppliedConfig` from `existing`).
fn config_references(
    desired: &[(ConfigRef, Option<String>)],
    existing: &[ConfigReference],
) -> Vec<ConfigReference> {
    desired
        .iter()
        .map(|(config, hash)| ConfigReference {
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
        .collect()
}

/// (group, resource, desired) of each reference: what a rollout compares.
fn desired_of(refs: &[ConfigReference]) -> Vec<(String, String, Option<ConfigSpecHash>)> {
    refs.iter()
        .map(|r| {
            (
                r.group.clone().unwrap_or_default(),
                r.resource.clone(),
                r.desired_config.clone(),
            )
        })
        .collect()
}

/// One addon on one cluster in a config pass.
struct AddonPlan {
    mca: Arc<ManagedClusterAddOn>,
    cluster: String,
    /// The install-strategy placement that governs it (`namespace/name`), if any.
    placement: Option<String>,
    references: Vec<ConfigReference>,
    /// Its status already names the new desired configs.
    has_new: bool,
}

/// One pass of the configs every ManagedClusterAddOn should run: its desired configs (own >
/// placement > default) with their spec hashes in `status.configReferences`, handed out per
/// each placement's rollout strategy (addons outside any placement get them at once); the
/// ClusterManagementAddOn's `defaultConfigReferences` and `installProgressions`. Returns when
/// the answer changes by the clock alone (a soak time or a deadline ends).
async fn config_pass(
    client: &kube::Client,
    caches: &Caches,
    index: &AddonIndex,
) -> Result<Option<Duration>, ManagerError> {
    let cmas: Api<ClusterManagementAddOn> = Api::all(client.clone());
    let now = jiff::Timestamp::now();
    let mut recheck: Option<Duration> = None;
    for cma in caches.cmas.state() {
        let name = cma.metadata.name.clone().unwrap_or_default();
        let decisions = decisions_of(caches, &cma);
        let mut hash_cache: BTreeMap<ConfigRef, Option<String>> = BTreeMap::new();
        let mut hash_of = async |config: &ConfigRef| -> Option<String> {
            if let Some(hash) = hash_cache.get(config) {
                return hash.clone();
            }
            let object = if config.group == ocm_api::addon::GROUP
                && config.resource == "addondeploymentconfigs"
            {
                caches
                    .deployment_configs
                    .get(&ObjectRef::new(&config.name).within(&config.namespace))
                    .and_then(|c| serde_json::to_value(c.as_ref()).ok())
            } else {
                crate::config_fetch::fetch_config(client, config).await
            };
            let hash = object.map(|o| crate::configs::spec_hash(&o));
            hash_cache.insert(config.clone(), hash.clone());
            hash
        };
        let mut default_refs = Vec::new();
        for config in &crate::configs::desired(&cma.spec.default_configs, &[], &[]) {
            default_refs.push(json!({
                "group": config.group, "resource": config.resource,
                "desiredConfig": {"namespace": config.namespace, "name": config.name,
                                  "specHash": hash_of(config).await.unwrap_or_default()},
            }));
        }
        // Per addon: its desired configs.
        let mut plans = Vec::new();
        for mca in index.named(&name).iter().cloned() {
            let cluster = mca.metadata.namespace.clone().unwrap_or_default();
            let placement = placement_of(&cma, &decisions, &cluster);
            let placement_configs = placement.map(|p| p.configs.clone()).unwrap_or_default();
            let desired = crate::configs::desired(
                &cma.spec.default_configs,
                &placement_configs,
                &mca.spec.configs,
            );
            let mut hashed = Vec::new();
            for config in desired {
                let hash = hash_of(&config).await;
                hashed.push((config, hash));
            }
            let existing = mca
                .status
                .as_ref()
                .map(|s| s.config_references.clone())
                .unwrap_or_default();
            let references = config_references(&hashed, &existing);
            let has_new = desired_of(&existing) == desired_of(&references);
            plans.push(AddonPlan {
                placement: placement.map(|p| format!("{}/{}", p.namespace, p.name)),
                cluster,
                mca,
                references,
                has_new,
            });
        }
        // Addons outside any placement get their configs at once; each placement's addons
        // per its rollout strategy.
        let mut admitted: BTreeSet<String> = plans
            .iter()
            .filter(|p| p.placement.is_none())
            .map(|p| p.cluster.clone())
            .collect();
        let mut progressions = Vec::new();
        let strategies = cma
            .spec
            .install_strategy
            .as_ref()
            .map(|s| s.placements.clone())
            .unwrap_or_default();
        for strategy in &strategies {
            let key = format!("{}/{}", strategy.namespace, strategy.name);
            let governed: Vec<&AddonPlan> = plans
                .iter()
                .filter(|p| p.placement.as_deref() == Some(key.as_str()))
                .collect();
            let progress = roll_out_placement(caches, strategy, &governed, now, &mut admitted);
            if let Some(after) = progress.recheck_after {
                recheck = Some(recheck.map_or(after, |r| r.min(after)));
            }
            let mut hashed = Vec::new();
            for config in crate::configs::desired(&cma.spec.default_configs, &strategy.configs, &[])
            {
                let hash = hash_of(&config).await;
                hashed.push((config, hash));
            }
            progressions.push(install_progression(&cma, strategy, &hashed, &progress));
        }
        write_cma_status(&cmas, &cma, default_refs, progressions).await;
        for plan in plans {
            if plan.has_new || !admitted.contains(&plan.cluster) {
                continue;
            }
            let api: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), &plan.cluster);
            let patch = json!({"metadata": {"resourceVersion": plan.mca.metadata.resource_version},
                               "status": {"configReferences": plan.references}});
            if let Err(err) = api
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                tracing::debug!(addon = name, cluster = plan.cluster, %err,
                    "config references not written yet");
            }
        }
    }
    Ok(recheck)
}

/// How one placement's rollout stands.
#[derive(Debug, Default)]
struct PlacementProgress {
    total: usize,
    succeeded: usize,
    failed: usize,
    timed_out: usize,
    breached: bool,
    /// The strategy cannot be followed.
    error: Option<String>,
    recheck_after: Option<Duration>,
}

/// Plans one placement's rollout of new configs over the addons it governs, adding the
/// clusters that get them now to `admitted`.
fn roll_out_placement(
    caches: &Caches,
    strategy: &ocm_api::addon::v1alpha1::PlacementStrategy,
    governed: &[&AddonPlan],
    now: jiff::Timestamp,
    admitted: &mut BTreeSet<String>,
) -> PlacementProgress {
    let decisions: Vec<PlacementDecision> = caches
        .decisions
        .state_filter(|d| d.metadata.namespace.as_deref() == Some(strategy.namespace.as_str()))
        .iter()
        .map(|d| d.as_ref().clone())
        .collect();
    let decided = placement_groups(&strategy.name, &decisions);
    let group_of = decided.group_of();
    let mut groups = ClusterGroups::default();
    for plan in governed {
        if let Some(key) = group_of.get(plan.cluster.as_str()) {
            groups.insert((*key).clone(), [plan.cluster.clone()]);
        }
    }
    let existing: Vec<ClusterRolloutStatus> = governed
        .iter()
        .filter_map(|p| crate::configs::rollout_status(&p.cluster, &p.mca, p.has_new))
        .collect();
    let mut progress = PlacementProgress {
        total: governed.len(),
        succeeded: existing
            .iter()
            .filter(|s| s.status == RolloutStatus::Succeeded)
            .count(),
        failed: existing
            .iter()
            .filter(|s| s.status == RolloutStatus::Failed)
            .count(),
        ..PlacementProgress::default()
    };
    let rollout_strategy = strategy.rollout_strategy.clone().unwrap_or_default();
    match plan_rollout(&rollout_strategy, &groups, &existing, now) {
        Ok(result) => {
            admitted.extend(
                result
                    .to_rollout
                    .iter()
                    .filter(|s| s.status == RolloutStatus::ToApply)
                    .map(|s| s.cluster.clone()),
            );
            progress.timed_out = result.timed_out.len();
            progress.breached = result.max_failure_breach;
            progress.recheck_after = result.recheck_after;
        }
        Err(err) => progress.error = Some(err.to_string()),
    }
    progress
}

/// A placement's `installProgressions` entry.
fn install_progression(
    cma: &ClusterManagementAddOn,
    strategy: &ocm_api::addon::v1alpha1::PlacementStrategy,
    desired: &[(ConfigRef, Option<String>)],
    progress: &PlacementProgress,
) -> InstallProgression {
    let previous = cma.status.as_ref().and_then(|s| {
        s.install_progressions
            .iter()
            .find(|p| p.namespace == strategy.namespace && p.name == strategy.name)
    });
    let complete =
        progress.error.is_none() && progress.total > 0 && progress.succeeded >= progress.total;
    let config_references = desired
        .iter()
        .map(|(config, hash)| {
            let wanted = ConfigSpecHash {
                namespace: config.namespace.clone(),
                name: config.name.clone(),
                spec_hash: hash.clone(),
            };
            let before = previous.and_then(|p| {
                p.config_references.iter().find(|r| {
                    r.group.clone().unwrap_or_default() == config.group
                        && r.resource == config.resource
                })
            });
            let kept =
                |f: fn(&InstallConfigReference) -> Option<ConfigSpecHash>| before.and_then(f);
            InstallConfigReference {
                group: Some(config.group.clone()),
                resource: config.resource.clone(),
                desired_config: Some(wanted.clone()),
                last_known_good_config: if complete {
                    Some(wanted.clone())
                } else {
                    kept(|r| r.last_known_good_config.clone())
                },
                last_applied_config: if complete {
                    Some(wanted)
                } else {
                    kept(|r| r.last_applied_config.clone())
                },
            }
        })
        .collect();
    let (status, reason, message) = match &progress.error {
        Some(err) => (
            "False",
            ocm_api::addon::names::conditions::progressing::FAILED,
            format!("the rollout strategy cannot be followed: {err}"),
        ),
        None => crate::configs::progression_condition(
            progress.total,
            progress.succeeded,
            progress.failed,
            progress.timed_out,
            progress.breached,
        ),
    };
    let mut conditions = previous.map(|p| p.conditions.clone()).unwrap_or_default();
    set_condition(
        &mut conditions,
        condition(
            ocm_api::addon::names::conditions::PROGRESSING,
            status,
            reason,
            &message,
            None,
        ),
    );
    InstallProgression {
        namespace: strategy.namespace.clone(),
        name: strategy.name.clone(),
        config_references,
        conditions,
    }
}

/// Writes a ClusterManagementAddOn's `defaultConfigReferences` and `installProgressions` when
/// they changed (conditionally on its resourceVersion; a conflict is retried next pass).
async fn write_cma_status(
    cmas: &Api<ClusterManagementAddOn>,
    cma: &ClusterManagementAddOn,
    default_refs: Vec<Value>,
    progressions: Vec<InstallProgression>,
) {
    let current = cma.status.as_ref();
    let current_defaults = current
        .map(|s| serde_json::to_value(&s.default_config_references).unwrap_or(Value::Null))
        .unwrap_or(json!([]));
    let current_progressions = current
        .map(|s| s.install_progressions.clone())
        .unwrap_or_default();
    if current_defaults == json!(default_refs) && current_progressions == progressions {
        return;
    }
    let patch = json!({"metadata": {"resourceVersion": cma.metadata.resource_version},
                       "status": {"defaultConfigReferences": default_refs,
                                  "installProgressions": progressions}});
    let name = cma.metadata.name.as_deref().unwrap_or_default();
    if let Err(err) = cmas
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        tracing::debug!(addon = name, %err, "addon status not written yet");
    }
}

/// The reason of the Warning Event on a ManagedClusterAddOn whose addon this hub does not know
/// (an ocm-rs addition: without it such an addon just never does anything). An Event, not a
/// condition: upstream's hub writes no condition on such an addon, and clients (upstream's own
/// tests among them) expect its first condition to be the agent's `Available`.
pub const UNKNOWN_ADDON: &str = "ClusterManagementAddOnNotFound";

/// The Events of the install controller: who reports them, and which addons were told.
struct UnknownAddonEvents {
    recorder: Recorder,
    /// UIDs of the ManagedClusterAddOns already given the Event by this process.
    told: BTreeSet<String>,
}

impl UnknownAddonEvents {
    fn new(client: &kube::Client) -> UnknownAddonEvents {
        UnknownAddonEvents {
            recorder: Recorder::new(
                client.clone(),
                Reporter {
                    controller: "addon-install-controller".into(),
                    instance: None,
                },
            ),
            told: BTreeSet::new(),
        }
    }
}

/// Gives every ManagedClusterAddOn without a ClusterManagementAddOn of its name a Warning Event
/// ([`UNKNOWN_ADDON`]), once per addon and process; removes the `Configured` condition earlier
/// versions wrote instead.
async fn mark_unknown_addons(
    client: &kube::Client,
    caches: &Caches,
    index: &AddonIndex,
    events: &mut UnknownAddonEvents,
) {
    use ocm_api::addon::names::conditions::CONFIGURED;
    let known: BTreeSet<String> = caches
        .cmas
        .state()
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    for mca in index.all() {
        let (Some(name), Some(namespace)) = (&mca.metadata.name, &mca.metadata.namespace) else {
            continue;
        };
        let uid = mca.metadata.uid.clone().unwrap_or_default();
        let unknown = !known.contains(name) && mca.metadata.deletion_timestamp.is_none();
        if unknown && !events.told.contains(&uid) {
            let event = Event {
                type_: EventType::Warning,
                reason: UNKNOWN_ADDON.into(),
                note: Some(format!(
                    "there is no ClusterManagementAddOn {name} on this hub: no addon manager installs an addon of this name"
                )),
                action: "Install".into(),
                secondary: None,
            };
            match events.recorder.publish(&event, &mca.object_ref(&())).await {
                Ok(()) => {
                    events.told.insert(uid);
                }
                Err(err) => {
                    tracing::debug!(addon = name, cluster = namespace, %err, "addon event not published yet")
                }
            }
        } else if !unknown {
            events.told.remove(&uid);
        }
        let conditions = mca
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default();
        if !conditions
            .iter()
            .any(|c| c.type_ == CONFIGURED && c.reason == UNKNOWN_ADDON)
        {
            continue;
        }
        let mut updated = conditions.to_vec();
        updated.retain(|c| !(c.type_ == CONFIGURED && c.reason == UNKNOWN_ADDON));
        let api: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), namespace);
        let patch = json!({"metadata": {"resourceVersion": mca.metadata.resource_version},
                           "status": {"conditions": updated}});
        if let Err(err) = api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::debug!(addon = name, cluster = namespace, %err, "addon condition not removed yet");
        }
    }
}

/// Follows every ClusterManagementAddOn's install strategy and hands out its configs until
/// `shutdown`: a pass whenever a ClusterManagementAddOn, PlacementDecision, ManagedClusterAddOn,
/// ManagedCluster or AddOnDeploymentConfig changes (and every 30 s).
#[inline(never)]
pub fn run_install_strategies(
    client: kube::Client,
    shutdown: Shutdown,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(run_install_strategies_body(client, shutdown))
}

async fn run_install_strategies_body(client: kube::Client, shutdown: Shutdown) {
    let changed = Arc::new(tokio::sync::Notify::new());
    let (cmas, cma_feed) = cache::<ClusterManagementAddOn>(&client, &changed, &shutdown);
    let (mcas, mca_feed) = cache::<ManagedClusterAddOn>(&client, &changed, &shutdown);
    let (decisions, decision_feed) = cache::<PlacementDecision>(&client, &changed, &shutdown);
    let (clusters, cluster_feed) = cache::<ManagedCluster>(&client, &changed, &shutdown);
    let (deployment_configs, config_feed) =
        cache::<AddOnDeploymentConfig>(&client, &changed, &shutdown);
    let (token_accounts, account_feed) = ocm_runtime::cache::notifying_store(
        Api::<ServiceAccount>::all(client.clone()),
        watcher::Config::default().labels(&format!(
            "{}=true",
            ocm_api::addon::names::labels::TOKEN_INFRASTRUCTURE
        )),
        changed.clone(),
        shutdown.clone(),
    );
    let feeds = [
        cma_feed,
        mca_feed,
        decision_feed,
        cluster_feed,
        config_feed,
        account_feed,
    ];
    let caches = Caches {
        cmas,
        mcas,
        decisions,
        clusters,
        deployment_configs,
        token_accounts,
    };
    let ready = async {
        let _ = caches.cmas.wait_until_ready().await;
        let _ = caches.mcas.wait_until_ready().await;
        let _ = caches.decisions.wait_until_ready().await;
        let _ = caches.clusters.wait_until_ready().await;
        let _ = caches.deployment_configs.wait_until_ready().await;
        let _ = caches.token_accounts.wait_until_ready().await;
    };
    let mut unknown_events = UnknownAddonEvents::new(&client);
    let mut token_infra = crate::token_infra::TokenInfra::default();
    tokio::select! {
        _ = shutdown.cancelled() => {}
        _ = ready => loop {
            let started = tokio::time::Instant::now();
            let index = AddonIndex::of(&caches.mcas);
            if let Err(err) = install_pass(&client, &caches, &index).await {
                tracing::debug!(%err, "install strategy pass failed; retrying");
            }
            mark_unknown_addons(&client, &caches, &index, &mut unknown_events).await;
            token_infra
                .pass(&client, index.all(), &caches.token_accounts)
                .await;
            let recheck = match config_pass(&client, &caches, &index).await {
                Ok(recheck) => recheck,
                Err(err) => {
                    tracing::debug!(%err, "addon config pass failed; retrying");
                    None
                }
            };
            drop(index);
            let took = started.elapsed();
            tracing::debug!(seconds = took.as_secs_f64(), "addon install and config pass");
            // A soak time or deadline ending changes the rollout without any event.
            let wait = recheck.map_or(RESYNC, |r| r.min(RESYNC));
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = changed.notified() => {}
                _ = tokio::time::sleep(wait) => {}
            }
            // While a large fleet's addons keep changing, the next pass waits so that the
            // passes take at most about a fifth of a core: the changes meanwhile are
            // coalesced into it.
            let pause = pass_pause(took);
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep_until(started + took + pause) => {}
            }
        }
    }
    for feed in feeds {
        feed.abort();
    }
}

/// How long after a pass that took `took` the next one may start: four times as long (so that
/// back-to-back passes use at most a fifth of a core), at most 5 s; nothing for a pass under
/// 10 ms (a small fleet's changes are handled at once).
fn pass_pause(took: Duration) -> Duration {
    if took < Duration::from_millis(10) {
        return Duration::ZERO;
    }
    (took * 4).min(Duration::from_secs(5))
}

/// A cache of every `K`, and the task that keeps it (notifying `changed` on every event).
fn cache<K>(
    client: &kube::Client,
    changed: &Arc<tokio::sync::Notify>,
    shutdown: &Shutdown,
) -> (Store<K>, tokio::task::JoinHandle<()>)
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    ocm_runtime::cache::notifying_store(
        Api::<K>::all(client.clone()),
        watcher::Config::default(),
        changed.clone(),
        shutdown.clone(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_of_a_large_fleet_are_spaced_and_small_ones_are_not() {
        assert_eq!(pass_pause(Duration::from_millis(3)), Duration::ZERO);
        assert_eq!(
            pass_pause(Duration::from_millis(100)),
            Duration::from_millis(400)
        );
        assert_eq!(pass_pause(Duration::from_secs(4)), Duration::from_secs(5));
    }

    #[test]
    fn the_addon_manager_runs_template_addons_unless_they_say_self() {
        let cma = |annotations: Value, spec: Value| -> ClusterManagementAddOn {
            serde_json::from_value(json!({
                "apiVersion": "addon.open-cluster-management.io/v1beta1",
                "kind": "ClusterManagementAddOn",
                "metadata": {"name": "a", "annotations": annotations}, "spec": spec}))
            .unwrap_or_else(|e| panic!("{e}"))
        };
        let template = json!({"defaultConfigs": [{"group": "addon.open-cluster-management.io",
                                                  "resource": "addontemplates", "name": "t"}]});
        let lifecycle = ocm_api::addon::names::annotations::LIFECYCLE;
        // Without the annotation: a template addon is the addon manager's, a code addon not.
        assert!(managed_by_addon_manager(&cma(json!({}), template.clone())));
        assert!(!managed_by_addon_manager(&cma(json!({}), json!({}))));
        let manager = json!({lifecycle: "addon-manager"});
        assert!(managed_by_addon_manager(&cma(manager, json!({}))));
        let own = json!({lifecycle: "self"});
        assert!(!managed_by_addon_manager(&cma(own, template)));
    }
}
