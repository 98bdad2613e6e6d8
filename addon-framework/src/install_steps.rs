//! The install controller's steps for one addon: its ClusterManagementAddOn's install strategy
//! ([`crate::install::plan`]), and for each of its ManagedClusterAddOns the owner reference,
//! the cluster's addon annotations ([`crate::install::annotation_changes`]) and, without a
//! ClusterManagementAddOn, the unknown-addon Event. Each step is given the ManagedClusterAddOns
//! to look at; a write that fails adds the addon (or the single ManagedClusterAddOn) to the
//! `retry` of the next pass.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::Resource;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{ObjectRef, Store};
use ocm_api::addon::v1alpha1::AddOnDeploymentConfig;
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta1::PlacementDecision;
use serde_json::json;

use crate::error::ManagerError;
use crate::install_changes::Dirty;

/// The hub objects the passes read.
pub(crate) struct Caches {
    pub(crate) cmas: Store<ClusterManagementAddOn>,
    pub(crate) mcas: Store<ManagedClusterAddOn>,
    pub(crate) decisions: Store<PlacementDecision>,
    pub(crate) clusters: Store<ManagedCluster>,
    pub(crate) deployment_configs: Store<AddOnDeploymentConfig>,
    /// AddOnTemplates, their specs as stored.
    pub(crate) templates: Store<crate::stored_template::StoredTemplate>,
    /// The addon agents' ServiceAccounts of the token driver (label-selected: only those).
    pub(crate) token_accounts: Store<ServiceAccount>,
    /// The token driver's Roles (label-selected: only those).
    pub(crate) token_roles: Store<Role>,
    /// The token driver's RoleBindings (label-selected: only those).
    pub(crate) token_bindings: Store<RoleBinding>,
}

impl Caches {
    /// The token infrastructure objects, for [`crate::token_infra`].
    pub(crate) fn token(&self) -> crate::token_infra::TokenCaches<'_> {
        crate::token_infra::TokenCaches {
            accounts: &self.token_accounts,
            roles: &self.token_roles,
            bindings: &self.token_bindings,
        }
    }
}

/// The placements of `cma`'s install strategy.
pub(crate) fn placements_of(
    cma: &ClusterManagementAddOn,
) -> &[ocm_api::addon::v1alpha1::PlacementStrategy] {
    cma.spec
        .install_strategy
        .as_ref()
        .map_or(&[], |s| s.placements.as_slice())
}

/// The clusters each placement of `cma`'s strategy selects.
pub(crate) fn decisions_of(
    caches: &Caches,
    cma: &ClusterManagementAddOn,
) -> BTreeMap<String, Option<BTreeSet<String>>> {
    let mut out = BTreeMap::new();
    for placement in placements_of(cma) {
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

/// The type of `cma`'s install strategy as the API spells it (empty without one).
pub(crate) fn strategy_type(cma: &ClusterManagementAddOn) -> &'static str {
    cma.spec
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
        .unwrap_or_default()
}

/// Follows `cma`'s install strategy, with `mcas` all of its ManagedClusterAddOns: creates the
/// addons its placements select (with their cluster's addon annotations) and deletes those it
/// made that they no longer select. False when the strategy cannot be followed.
pub(crate) async fn install_addon(
    client: &kube::Client,
    caches: &Caches,
    cma: &ClusterManagementAddOn,
    mcas: &[Arc<ManagedClusterAddOn>],
    retry: &mut Dirty,
) -> Result<bool, ManagerError> {
    let name = cma.metadata.name.clone().unwrap_or_default();
    let uid = cma.metadata.uid.clone().unwrap_or_default();
    let existing: Vec<crate::install::Existing> = mcas
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
    let decisions = decisions_of(caches, cma);
    // Only the clusters the strategy selects matter: those being deleted get no new addon.
    let deleting: BTreeSet<String> = decisions
        .values()
        .flatten()
        .flatten()
        .filter(|c| {
            caches
                .clusters
                .get(&ObjectRef::new(c))
                .is_some_and(|c| c.metadata.deletion_timestamp.is_some())
        })
        .cloned()
        .collect();
    let planned = match crate::install::plan(strategy_type(cma), &decisions, &deleting, &existing) {
        Ok(planned) => planned,
        Err(err) => {
            tracing::warn!(addon = name, %err, "install strategy not followed");
            return Ok(false);
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
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(true),
                Err(err) => {
                    tracing::warn!(addon = name, cluster, %err, "creating the addon");
                    Ok::<bool, ManagerError>(false)
                }
            }
        }
    });
    let created: Vec<Result<bool, ManagerError>> = futures::stream::iter(creates)
        .buffer_unordered(16)
        .collect()
        .await;
    let created = created
        .into_iter()
        .collect::<Result<Vec<bool>, ManagerError>>()?;
    if created.contains(&false) {
        retry.merge(Dirty::addon(&name));
    }
    for cluster in planned.delete {
        let api: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), &cluster);
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(err) => {
                tracing::debug!(addon = name, cluster, %err, "addon not deleted yet; retrying");
                retry.merge(Dirty::addon(&name));
            }
        }
    }
    Ok(true)
}

/// Gives each of `mcas` (ManagedClusterAddOns of a `Placements` strategy's addon) its
/// cluster's addon annotations ([`crate::install::annotation_changes`]), one merge patch per
/// addon that needs it.
pub(crate) async fn sync_addon_annotations(
    client: &kube::Client,
    caches: &Caches,
    mcas: &[Arc<ManagedClusterAddOn>],
    retry: &mut Dirty,
) {
    let mcas = mcas
        .iter()
        .filter(|m| m.metadata.deletion_timestamp.is_none());
    for mca in mcas {
        let (Some(addon), Some(cluster)) = (&mca.metadata.name, &mca.metadata.namespace) else {
            continue;
        };
        let Some(managed) = caches.clusters.get(&ObjectRef::new(cluster)) else {
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
        let api: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), cluster);
        match api
            .patch(addon, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => tracing::info!(addon, cluster, "synced addon annotations from the cluster"),
            Err(err) => {
                tracing::debug!(addon, cluster, %err, "addon annotations not synced yet; retrying later");
                retry.merge(Dirty::single(addon, cluster));
            }
        }
    }
}

/// Whether the central addon manager runs `cma`: its lifecycle annotation says so, or it has
/// none and is a template addon (which no manager of its own runs). Upstream treats every
/// addon without the annotation as the addon manager's; ours leaves such code addons to their
/// own managers, which do not write `self` on their ClusterManagementAddOns.
pub(crate) fn managed_by_addon_manager(cma: &ClusterManagementAddOn) -> bool {
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

/// Makes the ClusterManagementAddOn the owner of each of `mcas` (its ManagedClusterAddOns),
/// when the central addon manager runs it (as upstream): deleting the ClusterManagementAddOn
/// then removes the addon from every cluster, whoever enabled it.
pub(crate) async fn adopt_addons(
    client: &kube::Client,
    mcas: &[Arc<ManagedClusterAddOn>],
    cma: &ClusterManagementAddOn,
    retry: &mut Dirty,
) {
    let (Some(name), Some(uid)) = (cma.metadata.name.as_deref(), cma.metadata.uid.as_deref())
    else {
        return;
    };
    if !managed_by_addon_manager(cma) || cma.metadata.deletion_timestamp.is_some() {
        return;
    }
    let orphans = mcas.iter().filter(|m| {
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
            retry.merge(Dirty::single(name, &cluster));
        }
    }
}

/// The reason of the Warning Event on a ManagedClusterAddOn whose addon this hub does not know
/// (an ocm-rs addition: without it such an addon just never does anything). An Event, not a
/// condition: upstream's hub writes no condition on such an addon, and clients (upstream's own
/// tests among them) expect its first condition to be the agent's `Available`.
pub const UNKNOWN_ADDON: &str = "ClusterManagementAddOnNotFound";

/// The Events of the install controller: who reports them, and which addons were told.
pub(crate) struct UnknownAddonEvents {
    recorder: Recorder,
    /// UIDs of the ManagedClusterAddOns already given the Event by this process.
    told: BTreeSet<String>,
}

impl UnknownAddonEvents {
    /// The Events of `client`'s install controller, nobody told yet.
    pub(crate) fn new(client: &kube::Client) -> UnknownAddonEvents {
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

/// Gives each of `mcas` a Warning Event ([`UNKNOWN_ADDON`]) when their addon is not `known`
/// (no ClusterManagementAddOn of its name), once per addon and process; removes the
/// `Configured` condition earlier versions wrote instead.
pub(crate) async fn mark_unknown_addons(
    client: &kube::Client,
    known: bool,
    mcas: &[Arc<ManagedClusterAddOn>],
    events: &mut UnknownAddonEvents,
    retry: &mut Dirty,
) {
    use ocm_api::addon::names::conditions::CONFIGURED;
    for mca in mcas {
        let (Some(name), Some(namespace)) = (&mca.metadata.name, &mca.metadata.namespace) else {
            continue;
        };
        let uid = mca.metadata.uid.clone().unwrap_or_default();
        let unknown = !known && mca.metadata.deletion_timestamp.is_none();
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
                    tracing::debug!(addon = name, cluster = namespace, %err, "addon event not published yet");
                    retry.merge(Dirty::single(name, namespace));
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
        if let Err(err) = crate::mca_status::patch_conditions(client, mca, &updated).await {
            tracing::debug!(addon = name, cluster = namespace, %err, "addon condition not removed yet");
            retry.merge(Dirty::single(name, namespace));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

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
