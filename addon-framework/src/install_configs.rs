//! The configs of one addon: what each of its ManagedClusterAddOns should run (own >
//! placement > default configs, with spec hashes), handed out per each placement's rollout
//! strategy, and the ClusterManagementAddOn's `defaultConfigReferences` and
//! `installProgressions`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use ocm_api::addon::names::conditions::CONFIGURED;
use ocm_api::addon::v1alpha1::{InstallConfigReference, InstallProgression};
use ocm_api::addon::v1beta1::{
    ClusterManagementAddOn, ConfigReference, ConfigSpecHash, ManagedClusterAddOn,
};
use ocm_api::cluster::v1beta1::PlacementDecision;
use ocm_runtime::conditions::{condition, set_condition};
use ocm_work::hub::replicaset::placement_groups;
use ocm_work::hub::rollout::{ClusterGroups, ClusterRolloutStatus, RolloutStatus, plan_rollout};
use serde_json::{Value, json};

use crate::configs::ConfigRef;
use crate::install_changes::{Dirty, is_deployment_config, is_template};
use crate::install_steps::{Caches, decisions_of, placements_of};

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

/// What handing out one addon's configs came to.
#[derive(Debug, Default)]
pub(crate) struct Configured {
    /// When the answer changes by the clock alone (a soak time or a deadline ends).
    pub(crate) recheck: Option<Duration>,
    /// A config was read from the hub rather than from a watched cache: no event says when
    /// it changes, so the controller looks at the addon again on a timer.
    pub(crate) read_live: bool,
}

/// The configs each of `mcas` (every ManagedClusterAddOn of `cma`'s addon) should run: its
/// desired configs (own > placement > default) with their spec hashes in
/// `status.configReferences`, handed out per each placement's rollout strategy (addons
/// outside any placement get them at once); the ClusterManagementAddOn's
/// `defaultConfigReferences` and `installProgressions`.
pub(crate) async fn configure_addon(
    client: &kube::Client,
    caches: &Caches,
    cma: &ClusterManagementAddOn,
    mcas: &[Arc<ManagedClusterAddOn>],
    now: jiff::Timestamp,
    retry: &mut Dirty,
) -> Configured {
    let cmas: Api<ClusterManagementAddOn> = Api::all(client.clone());
    let mut outcome = Configured::default();
    let name = cma.metadata.name.clone().unwrap_or_default();
    let decisions = decisions_of(caches, cma);
    let mut hash_cache: BTreeMap<ConfigRef, Option<String>> = BTreeMap::new();
    let read_live = &mut outcome.read_live;
    let mut hash_of = async |config: &ConfigRef| -> Option<String> {
        if let Some(hash) = hash_cache.get(config) {
            return hash.clone();
        }
        let object = if is_deployment_config(config) {
            caches
                .deployment_configs
                .get(&ObjectRef::new(&config.name).within(&config.namespace))
                .and_then(|c| serde_json::to_value(c.as_ref()).ok())
        } else if is_template(config) {
            caches
                .templates
                .get(&ObjectRef::new(&config.name))
                .and_then(|t| serde_json::to_value(t.as_ref()).ok())
        } else {
            *read_live = true;
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
    for mca in mcas.iter().cloned() {
        let cluster = mca.metadata.namespace.clone().unwrap_or_default();
        let placement = placement_of(cma, &decisions, &cluster);
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
    for strategy in placements_of(cma) {
        let key = format!("{}/{}", strategy.namespace, strategy.name);
        let governed: Vec<&AddonPlan> = plans
            .iter()
            .filter(|p| p.placement.as_deref() == Some(key.as_str()))
            .collect();
        let progress = roll_out_placement(caches, strategy, &governed, now, &mut admitted);
        if let Some(after) = progress.recheck_after {
            outcome.recheck = Some(outcome.recheck.map_or(after, |r| r.min(after)));
        }
        let mut hashed = Vec::new();
        for config in crate::configs::desired(&cma.spec.default_configs, &strategy.configs, &[]) {
            let hash = hash_of(&config).await;
            hashed.push((config, hash));
        }
        progressions.push(install_progression(cma, strategy, &hashed, &progress));
    }
    if !write_cma_status(&cmas, cma, default_refs, progressions).await {
        retry.merge(Dirty::addon(&name));
    }
    for plan in plans {
        let in_batch = admitted.contains(&plan.cluster);
        if let Err(err) = write_addon_status(client, &plan, in_batch).await {
            tracing::debug!(addon = name, cluster = plan.cluster, %err,
                "config references or Configured condition not written yet");
            retry.merge(Dirty::addon(&name));
        }
    }
    outcome
}

/// Writes one addon's status of this pass ([`addon_status_patch`]), conditionally on the
/// version the pass read. When that version is outdated by a write that changed nothing the
/// plan reads (this very pass's owner reference, an agent's condition), the status is computed
/// again on the current version and written once more; otherwise the conflict is returned and
/// the addon re-planned.
async fn write_addon_status(
    client: &kube::Client,
    plan: &AddonPlan,
    in_batch: bool,
) -> Result<(), kube::Error> {
    let api: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), &plan.cluster);
    let name = plan.mca.metadata.name.as_deref().unwrap_or_default();
    let patch_on = async |mca: &ManagedClusterAddOn| -> Result<(), kube::Error> {
        let Some(status) = addon_status_patch(plan, mca, in_batch) else {
            return Ok(());
        };
        let patch = json!({"metadata": {"resourceVersion": mca.metadata.resource_version},
                           "status": status});
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(drop)
    };
    match patch_on(&plan.mca).await {
        Err(kube::Error::Api(status)) if status.code == 409 => {
            let current = api.get(name).await?;
            if !crate::install_changes::addon_change(Some(&plan.mca), Some(&current))
                .addons
                .is_empty()
            {
                return Err(kube::Error::Api(status));
            }
            patch_on(&current).await
        }
        other => other,
    }
}

/// The conditions of `mca` with `lost` (the `Configured` condition the config pass wrote and
/// a writer of the status dropped) put back; `None` when it has a `Configured` condition.
fn with_configured(mca: &ManagedClusterAddOn, lost: &Condition) -> Option<Vec<Condition>> {
    let conditions = mca
        .status
        .as_ref()
        .map_or(&[][..], |s| s.conditions.as_slice());
    if conditions.iter().any(|c| c.type_ == CONFIGURED) {
        return None;
    }
    let mut restored = conditions.to_vec();
    restored.push(lost.clone());
    Some(restored)
}

/// Puts `lost` back on `mca` (as cached) when it still has no `Configured` condition
/// ([`with_configured`]), conditionally on the version read: a conflict is returned, and the
/// newer version is looked at again.
pub(crate) async fn restore_configured(
    client: &kube::Client,
    mca: &ManagedClusterAddOn,
    lost: &Condition,
) -> Result<(), kube::Error> {
    match with_configured(mca, lost) {
        Some(conditions) => crate::mca_status::patch_conditions(client, mca, &conditions).await,
        None => Ok(()),
    }
}

/// The status one addon's config pass writes, `None` when nothing changes: its new
/// `configReferences` when its rollout batch (`in_batch`) hands them out now, and its
/// `Configured` condition (on `mca`, the plan's addon as read) when that changed.
fn addon_status_patch(
    plan: &AddonPlan,
    mca: &ManagedClusterAddOn,
    in_batch: bool,
) -> Option<Value> {
    let state = crate::configs::rollout_status(&plan.cluster, mca, plan.has_new).map(|s| s.status);
    let mut conditions = mca
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let configured = crate::configs::configured_condition(in_batch, state).is_some_and(
        |(status, reason, message)| {
            set_condition(
                &mut conditions,
                condition(CONFIGURED, status, reason, message, None),
            )
        },
    );
    let mut patch = serde_json::Map::new();
    if in_batch && !plan.has_new {
        patch.insert("configReferences".into(), json!(plan.references));
    }
    if configured {
        patch.insert("conditions".into(), json!(conditions));
    }
    (!patch.is_empty()).then_some(Value::Object(patch))
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
/// clusters of its current batch to `admitted` (those still to be handed the new configs get
/// them now).
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
            admitted.extend(result.to_rollout.iter().map(|s| s.cluster.clone()));
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
/// they changed (conditionally on its resourceVersion); false when that failed.
async fn write_cma_status(
    cmas: &Api<ClusterManagementAddOn>,
    cma: &ClusterManagementAddOn,
    default_refs: Vec<Value>,
    progressions: Vec<InstallProgression>,
) -> bool {
    let current = cma.status.as_ref();
    let current_defaults = current
        .map(|s| serde_json::to_value(&s.default_config_references).unwrap_or(Value::Null))
        .unwrap_or(json!([]));
    let current_progressions = current
        .map(|s| s.install_progressions.clone())
        .unwrap_or_default();
    if current_defaults == json!(default_refs) && current_progressions == progressions {
        return true;
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
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_lost_configured_condition_is_added_to_the_others_unless_one_is_back() {
        let lost = condition(
            CONFIGURED,
            "True",
            "ConfigurationsConfigured",
            "Configurations configured",
            None,
        );
        let available = condition("Available", "True", "Ready", "m", None);
        let mca = |conditions: Vec<&Condition>| -> ManagedClusterAddOn {
            serde_json::from_value(json!({
                "apiVersion": "addon.open-cluster-management.io/v1beta1",
                "kind": "ManagedClusterAddOn", "metadata": {"name": "hello", "namespace": "c1"},
                "spec": {}, "status": {"conditions": conditions}}))
            .unwrap()
        };
        let replaced = mca(vec![&available]);
        let mut restored = replaced.status.as_ref().unwrap().conditions.clone();
        restored.push(lost.clone());
        assert_eq!(with_configured(&replaced, &lost), Some(restored));
        let written_again = condition(CONFIGURED, "False", "Other", "m", None);
        assert_eq!(
            with_configured(&mca(vec![&available, &written_again]), &lost),
            None
        );
    }
}
