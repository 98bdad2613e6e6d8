//! What a change of a watched object means for the next pass of the addon install controller
//! (`install_controller`): which addons it re-plans whole, which single ManagedClusterAddOns
//! only their own steps (or only get back the `Configured` condition an agent's status write
//! dropped) — or nothing, when no field a pass reads changed (an agent's
//! `Available` or health write, a cluster's status). Pure functions of the old and new object,
//! so that a pass on a large fleet plans what changed, not every addon.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use kube::Resource;
use kube::runtime::reflector::{ObjectRef, Store};
use ocm_api::addon::names::conditions::{CONFIGURED, PROGRESSING, TOKEN_INFRASTRUCTURE_READY};
use ocm_api::addon::v1alpha1::AddOnDeploymentConfig;
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta1::PlacementDecision;

use crate::configs::ConfigRef;
use crate::stored_template::StoredTemplate;

/// The label naming a PlacementDecision's Placement.
const PLACEMENT_LABEL: &str = "cluster.open-cluster-management.io/placement";

/// What the next pass looks at again.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Dirty {
    /// Everything: the next pass is a full one.
    pub(crate) all: bool,
    /// Addon names re-planned whole: install strategy, configs and rollout over every
    /// ManagedClusterAddOn of the name, and each one's own steps.
    pub(crate) addons: BTreeSet<String>,
    /// Single ManagedClusterAddOns (addon name, cluster): their own steps only — owner
    /// reference, cluster annotations, unknown-addon Event, token infrastructure.
    pub(crate) single: BTreeSet<(String, String)>,
    /// Single ManagedClusterAddOns (addon name, cluster) whose status lost the `Configured`
    /// condition the config pass wrote (an agent replaced its conditions): that condition,
    /// to put back.
    pub(crate) configured: BTreeMap<(String, String), Condition>,
}

impl Dirty {
    /// Nothing to look at.
    pub(crate) fn is_empty(&self) -> bool {
        !self.all && self.addons.is_empty() && self.single.is_empty() && self.configured.is_empty()
    }

    /// Everything: a full pass.
    pub(crate) fn everything() -> Dirty {
        Dirty {
            all: true,
            ..Dirty::default()
        }
    }

    /// The addon `name`, whole.
    pub(crate) fn addon(name: &str) -> Dirty {
        Dirty {
            addons: BTreeSet::from([name.to_owned()]),
            ..Dirty::default()
        }
    }

    /// The addons `names`, whole.
    pub(crate) fn addons(names: impl IntoIterator<Item = String>) -> Dirty {
        Dirty {
            addons: names.into_iter().collect(),
            ..Dirty::default()
        }
    }

    /// The addon `name` on `cluster`, its own steps.
    pub(crate) fn single(name: &str, cluster: &str) -> Dirty {
        Dirty {
            single: BTreeSet::from([(name.to_owned(), cluster.to_owned())]),
            ..Dirty::default()
        }
    }

    /// The addon `name` on `cluster`: its lost `Configured` condition `lost` put back.
    pub(crate) fn configured(name: &str, cluster: &str, lost: Condition) -> Dirty {
        Dirty {
            configured: BTreeMap::from([((name.to_owned(), cluster.to_owned()), lost)]),
            ..Dirty::default()
        }
    }

    /// Adds `other`.
    pub(crate) fn merge(&mut self, other: Dirty) {
        self.all |= other.all;
        self.addons.extend(other.addons);
        self.single.extend(other.single);
        self.configured.extend(other.configured);
    }
}

/// The conditions of `mca` of type `type_`.
fn condition_of<'a>(mca: &'a ManagedClusterAddOn, type_: &str) -> Option<&'a Condition> {
    mca.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}

/// What the plan of the whole addon reads of one of its ManagedClusterAddOns: whether the
/// ClusterManagementAddOn owns it, whether it is deleting, its own configs, its config
/// references and `Progressing` (the rollout's view of it).
fn plan_view(mca: &ManagedClusterAddOn) -> impl PartialEq + '_ {
    (
        mca.metadata
            .owner_references
            .iter()
            .flatten()
            .map(|o| o.uid.as_str())
            .collect::<Vec<_>>(),
        mca.metadata.deletion_timestamp.is_some(),
        &mca.spec.configs,
        mca.status
            .as_ref()
            .map_or(&[][..], |s| s.config_references.as_slice()),
        condition_of(mca, PROGRESSING),
    )
}

/// What the addon's own steps read: its annotations, owners, registrations, and the
/// conditions `Configured` (only the unknown-addon mark earlier versions wrote, not the config
/// pass's own condition, whose writes must not wake another pass) and
/// `TokenInfrastructureReady`.
fn own_view(mca: &ManagedClusterAddOn) -> impl PartialEq + '_ {
    (
        (
            &mca.metadata.uid,
            &mca.metadata.annotations,
            &mca.metadata.owner_references,
            mca.metadata.deletion_timestamp.is_some(),
        ),
        mca.status
            .as_ref()
            .map_or(&[][..], |s| s.registrations.as_slice()),
        condition_of(mca, CONFIGURED).filter(|c| !is_config_pass_reason(&c.reason)),
        condition_of(mca, TOKEN_INFRASTRUCTURE_READY),
    )
}

/// Whether `reason` is one the config pass gives its `Configured` condition.
fn is_config_pass_reason(reason: &str) -> bool {
    use ocm_api::addon::names::conditions::configured;
    [
        configured::CONFIGURATIONS_CONFIGURED,
        configured::CONFIGURATIONS_NOT_CONFIGURED,
    ]
    .contains(&reason)
}

/// The `Configured` condition the config pass wrote on `old` when `new` (not deleting) has
/// none: a writer of the status (an addon agent replacing the conditions with its own) dropped
/// it. The controller's own writes never drop it, so putting it back wakes nothing again.
fn lost_configured(old: &ManagedClusterAddOn, new: &ManagedClusterAddOn) -> Option<Condition> {
    if new.metadata.deletion_timestamp.is_some() || condition_of(new, CONFIGURED).is_some() {
        return None;
    }
    condition_of(old, CONFIGURED)
        .filter(|c| is_config_pass_reason(&c.reason))
        .cloned()
}

/// A ManagedClusterAddOn added (`old` None), changed or deleted (`new` None): its addon whole
/// when it came or went or what the plan reads changed; else itself when what its own steps
/// read changed, and its `Configured` condition put back when that was dropped; else nothing.
pub(crate) fn addon_change(
    old: Option<&ManagedClusterAddOn>,
    new: Option<&ManagedClusterAddOn>,
) -> Dirty {
    let Some(any) = new.or(old) else {
        return Dirty::default();
    };
    let (Some(name), Some(cluster)) = (&any.metadata.name, &any.metadata.namespace) else {
        return Dirty::default();
    };
    match (old, new) {
        (Some(old), Some(new)) if plan_view(old) == plan_view(new) => {
            let mut dirty = Dirty::default();
            if own_view(old) != own_view(new) {
                dirty.merge(Dirty::single(name, cluster));
            }
            if let Some(lost) = lost_configured(old, new) {
                dirty.merge(Dirty::configured(name, cluster, lost));
            }
            dirty
        }
        _ => Dirty::addon(name),
    }
}

/// A ClusterManagementAddOn added, changed (spec, annotations, status: all read) or deleted:
/// its addon whole.
pub(crate) fn cma_change(
    old: Option<&ClusterManagementAddOn>,
    new: Option<&ClusterManagementAddOn>,
) -> Dirty {
    let Some(name) = new.or(old).and_then(|c| c.metadata.name.as_deref()) else {
        return Dirty::default();
    };
    let view = |c: &ClusterManagementAddOn| {
        (
            c.metadata.uid.clone(),
            c.metadata.annotations.clone(),
            c.metadata.deletion_timestamp.is_some(),
            c.spec.clone(),
            c.status.clone(),
        )
    };
    match (old, new) {
        (Some(old), Some(new)) if view(old) == view(new) => Dirty::default(),
        _ => Dirty::addon(name),
    }
}

/// Whether `cma`'s install strategy lists the placement `namespace/name`.
fn lists_placement(cma: &ClusterManagementAddOn, namespace: &str, name: &str) -> bool {
    cma.spec.install_strategy.as_ref().is_some_and(|s| {
        s.placements
            .iter()
            .any(|p| p.namespace == namespace && p.name == name)
    })
}

/// A PlacementDecision added, changed or deleted: the addons whose install strategy lists its
/// placement, when its clusters or labels (placement, decision group) changed.
pub(crate) fn decision_change(
    cmas: &[Arc<ClusterManagementAddOn>],
    old: Option<&PlacementDecision>,
    new: Option<&PlacementDecision>,
) -> Dirty {
    let view = |d: &PlacementDecision| (d.metadata.labels.clone(), d.status.clone());
    if let (Some(old), Some(new)) = (old, new)
        && view(old) == view(new)
    {
        return Dirty::default();
    }
    let placements: BTreeSet<(&str, &str)> = [old, new]
        .into_iter()
        .flatten()
        .filter_map(|d| {
            Some((
                d.metadata.namespace.as_deref()?,
                d.metadata.labels.as_ref()?.get(PLACEMENT_LABEL)?.as_str(),
            ))
        })
        .collect();
    Dirty::addons(
        cmas.iter()
            .filter(|c| {
                placements
                    .iter()
                    .any(|(ns, name)| lists_placement(c, ns, name))
            })
            .filter_map(|c| c.metadata.name.clone()),
    )
}

/// A ManagedCluster added, changed or deleted, with `addons` the names of its
/// ManagedClusterAddOns and `cmas` every ClusterManagementAddOn: every addon whole when it
/// started deleting or, deleting, went (install strategies create no addon on a deleting
/// cluster); its addons' own steps when its addon annotations changed; else nothing (which
/// clusters a placement selects reaches the controller as PlacementDecisions).
pub(crate) fn cluster_change(
    cmas: &[Arc<ClusterManagementAddOn>],
    addons: &[String],
    old: Option<&ManagedCluster>,
    new: Option<&ManagedCluster>,
) -> Dirty {
    let Some(cluster) = new.or(old).and_then(|c| c.metadata.name.as_deref()) else {
        return Dirty::default();
    };
    let deleting =
        |c: Option<&ManagedCluster>| c.is_some_and(|c| c.metadata.deletion_timestamp.is_some());
    if deleting(old) != deleting(new) {
        return Dirty::addons(cmas.iter().filter_map(|c| c.metadata.name.clone()));
    }
    let annotations = |c: Option<&ManagedCluster>| {
        crate::install::addon_annotations(c.and_then(|c| c.metadata.annotations.as_ref()))
    };
    if annotations(old) == annotations(new) {
        return Dirty::default();
    }
    let mut dirty = Dirty::default();
    for addon in addons {
        dirty.merge(Dirty::single(addon, cluster));
    }
    dirty
}

/// The configs of the cached kind `resource` that `cma` names (defaults and per placement), as
/// (namespace, name).
fn configs_of<'a>(
    cma: &ClusterManagementAddOn,
    resource: &'a str,
) -> impl Iterator<Item = (String, String)> + use<'a> {
    let defaults = crate::configs::desired(&cma.spec.default_configs, &[], &[]);
    let placements: Vec<ConfigRef> = cma
        .spec
        .install_strategy
        .iter()
        .flat_map(|s| s.placements.iter())
        .flat_map(|p| crate::configs::desired(&[], &p.configs, &[]))
        .collect();
    defaults
        .into_iter()
        .chain(placements)
        .filter(move |c| c.group == ocm_api::addon::GROUP && c.resource == resource)
        .map(|c| (c.namespace, c.name))
}

/// The resource of AddOnDeploymentConfigs.
pub(crate) const DEPLOYMENT_CONFIGS: &str = "addondeploymentconfigs";

/// The resource of AddOnTemplates.
pub(crate) const TEMPLATES: &str = crate::stored_template::RESOURCE;

/// Whether `config` is an AddOnDeploymentConfig (a config kind the controller caches).
pub(crate) fn is_deployment_config(config: &ConfigRef) -> bool {
    config.group == ocm_api::addon::GROUP && config.resource == DEPLOYMENT_CONFIGS
}

/// Whether `config` is an AddOnTemplate (a config kind the controller caches).
pub(crate) fn is_template(config: &ConfigRef) -> bool {
    config.group == ocm_api::addon::GROUP && config.resource == TEMPLATES
}

/// A config object of the cached kind `resource` added, changed or deleted: when its spec
/// (`spec`) changed, the addons whose ClusterManagementAddOn names it and those of `users`
/// (the addons whose ManagedClusterAddOns name it).
fn config_change<K: Resource, S: PartialEq + ?Sized>(
    cmas: &[Arc<ClusterManagementAddOn>],
    users: &BTreeSet<String>,
    resource: &str,
    (old, new): (Option<&K>, Option<&K>),
    spec: fn(&K) -> &S,
) -> Dirty {
    let Some(any) = new.or(old) else {
        return Dirty::default();
    };
    if let (Some(old), Some(new)) = (old, new)
        && spec(old) == spec(new)
    {
        return Dirty::default();
    }
    let meta = any.meta();
    let key = (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    );
    let by_cma = cmas
        .iter()
        .filter(|c| configs_of(c, resource).any(|k| k == key))
        .filter_map(|c| c.metadata.name.clone());
    Dirty::addons(by_cma.chain(users.iter().cloned()))
}

/// An AddOnDeploymentConfig added, changed or deleted: [`config_change`].
pub(crate) fn deployment_config_change(
    cmas: &[Arc<ClusterManagementAddOn>],
    users: &BTreeSet<String>,
    old: Option<&AddOnDeploymentConfig>,
    new: Option<&AddOnDeploymentConfig>,
) -> Dirty {
    config_change(cmas, users, DEPLOYMENT_CONFIGS, (old, new), |c| &c.spec)
}

/// An AddOnTemplate added, changed or deleted: [`config_change`].
pub(crate) fn template_change(
    cmas: &[Arc<ClusterManagementAddOn>],
    users: &BTreeSet<String>,
    old: Option<&StoredTemplate>,
    new: Option<&StoredTemplate>,
) -> Dirty {
    config_change(cmas, users, TEMPLATES, (old, new), |t| &t.spec)
}

/// The addon (by its label) and cluster (namespace) of a token infrastructure object: that
/// ManagedClusterAddOn's own steps.
fn token_object_owner(meta: &ObjectMeta) -> Dirty {
    let addon = meta
        .labels
        .as_ref()
        .and_then(|l| l.get(ocm_api::addon::names::labels::TOKEN_INFRASTRUCTURE_ADDON));
    match (addon, &meta.namespace) {
        (Some(addon), Some(cluster)) => Dirty::single(addon, cluster),
        _ => Dirty::default(),
    }
}

/// A token infrastructure ServiceAccount added, changed or deleted: its addon's own steps on
/// its cluster (the `TokenInfrastructureReady` condition names its UID).
pub(crate) fn account_change(old: Option<&ServiceAccount>, new: Option<&ServiceAccount>) -> Dirty {
    if let (Some(old), Some(new)) = (old, new)
        && old.metadata.uid == new.metadata.uid
    {
        return Dirty::default();
    }
    new.or(old)
        .map_or_else(Dirty::default, |a| token_object_owner(&a.metadata))
}

/// A token infrastructure Role or RoleBinding deleted (or no longer labelled, which leaves
/// the selected watch the same way), or changed in what the hub writes of it (`view`): its
/// addon's own steps on its cluster, which make it again. One added is no change: the pass
/// that wants it made it.
fn token_rbac_change<K: Resource, V: PartialEq>(
    old: Option<&K>,
    new: Option<&K>,
    view: impl Fn(&K) -> V,
) -> Dirty {
    match (old, new) {
        (Some(old), Some(new)) if view(old) == view(new) => Dirty::default(),
        (Some(old), _) => token_object_owner(old.meta()),
        (None, _) => Dirty::default(),
    }
}

/// A token infrastructure Role deleted or its rules changed: see [`token_rbac_change`].
pub(crate) fn role_change(old: Option<&Role>, new: Option<&Role>) -> Dirty {
    token_rbac_change(old, new, |r| r.rules.clone())
}

/// A token infrastructure RoleBinding deleted or its role or subjects changed: see
/// [`token_rbac_change`].
pub(crate) fn binding_change(old: Option<&RoleBinding>, new: Option<&RoleBinding>) -> Dirty {
    token_rbac_change(old, new, |b| (b.role_ref.clone(), b.subjects.clone()))
}

/// The ManagedClusterAddOns by addon name (their clusters), and the addons whose
/// ManagedClusterAddOns name each cached config (AddOnDeploymentConfig, AddOnTemplate): kept
/// up to date from watch events, so that a pass finds an addon's ManagedClusterAddOns without
/// scanning the fleet.
#[derive(Debug, Default)]
pub(crate) struct AddonIndex {
    clusters: BTreeMap<String, BTreeSet<String>>,
    /// (resource, namespace, name) of a cached config → addon names. Names are not removed
    /// when an addon stops naming the config (that only re-plans an addon more than needed)
    /// until the index is rebuilt.
    config_users: BTreeMap<(String, String, String), BTreeSet<String>>,
}

impl AddonIndex {
    /// Adds `mca` (added or changed).
    pub(crate) fn insert(&mut self, mca: &ManagedClusterAddOn) {
        let (Some(name), Some(cluster)) = (&mca.metadata.name, &mca.metadata.namespace) else {
            return;
        };
        // Most events are of addons already indexed: no allocation for them.
        match self.clusters.get_mut(name) {
            Some(clusters) if clusters.contains(cluster) => {}
            Some(clusters) => {
                clusters.insert(cluster.clone());
            }
            None => {
                self.clusters
                    .insert(name.clone(), BTreeSet::from([cluster.clone()]));
            }
        }
        for config in crate::configs::desired(&[], &[], &mca.spec.configs) {
            if is_deployment_config(&config) || is_template(&config) {
                self.config_users
                    .entry((config.resource, config.namespace, config.name))
                    .or_default()
                    .insert(name.clone());
            }
        }
    }

    /// Removes `mca` (deleted).
    pub(crate) fn remove(&mut self, mca: &ManagedClusterAddOn) {
        let (Some(name), Some(cluster)) = (&mca.metadata.name, &mca.metadata.namespace) else {
            return;
        };
        if let Some(clusters) = self.clusters.get_mut(name) {
            clusters.remove(cluster);
            if clusters.is_empty() {
                self.clusters.remove(name);
            }
        }
    }

    /// Indexes `store` afresh.
    pub(crate) fn rebuild(&mut self, store: &Store<ManagedClusterAddOn>) {
        *self = AddonIndex::default();
        for mca in store.state() {
            self.insert(&mca);
        }
    }

    /// The names of the addons with a ManagedClusterAddOn.
    pub(crate) fn names(&self) -> impl Iterator<Item = &String> {
        self.clusters.keys()
    }

    /// The names of the addons with a ManagedClusterAddOn on `cluster`.
    pub(crate) fn names_on(&self, cluster: &str) -> Vec<String> {
        self.clusters
            .iter()
            .filter(|(_, clusters)| clusters.contains(cluster))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The ManagedClusterAddOns named `name`, on every cluster, as `store` holds them.
    pub(crate) fn named(
        &self,
        store: &Store<ManagedClusterAddOn>,
        name: &str,
    ) -> Vec<Arc<ManagedClusterAddOn>> {
        self.clusters
            .get(name)
            .into_iter()
            .flatten()
            .filter_map(|cluster| store.get(&ObjectRef::new(name).within(cluster)))
            .collect()
    }

    /// The addons whose ManagedClusterAddOns name the config `namespace/name` of the cached
    /// kind `resource`.
    pub(crate) fn config_users(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> BTreeSet<String> {
        self.config_users
            .get(&(resource.to_owned(), namespace.to_owned(), name.to_owned()))
            .cloned()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::{Value, json};

    fn mca(status: Value) -> ManagedClusterAddOn {
        serde_json::from_value(json!({
            "apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ManagedClusterAddOn",
            "metadata": {"name": "hello", "namespace": "c1", "uid": "u1", "resourceVersion": "1"},
            "spec": {}, "status": status}))
        .unwrap()
    }

    fn condition(type_: &str, status: &str, reason: &str) -> Value {
        json!({"type": type_, "status": status, "reason": reason, "message": "m",
               "lastTransitionTime": "2026-11-30T00:00:00Z"})
    }

    fn cma(name: &str, spec: Value) -> Arc<ClusterManagementAddOn> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "addon.open-cluster-management.io/v1beta1",
                "kind": "ClusterManagementAddOn", "metadata": {"name": name}, "spec": spec}))
            .unwrap(),
        )
    }

    #[test]
    fn an_agents_status_write_plans_nothing() {
        // The first status an addon gets is not a change of what the passes read.
        let mut first = mca(json!({}));
        first.status = None;
        let available = mca(json!({"conditions": [condition("Available", "True", "Ready")]}));
        assert!(addon_change(Some(&first), Some(&available)).is_empty());
        let before = mca(json!({"conditions": [condition("Available", "True", "Ready")]}));
        let mut after = mca(
            json!({"conditions": [condition("Available", "False", "Gone")],
                                   "healthCheck": {"mode": "Lease"}}),
        );
        after.metadata.resource_version = Some("2".into());
        assert!(addon_change(Some(&before), Some(&after)).is_empty());
    }

    #[test]
    fn the_config_pass_own_configured_condition_plans_nothing() {
        let before = mca(json!({}));
        for reason in ["ConfigurationsConfigured", "ConfigurationsNotConfigured"] {
            let configured = mca(json!({"conditions": [condition("Configured", "True", reason)]}));
            assert!(addon_change(Some(&before), Some(&configured)).is_empty());
        }
        // The unknown-addon mark earlier versions wrote is the addon's own step to remove.
        let marked = mca(
            json!({"conditions": [condition("Configured", "False", "ClusterManagementAddOnNotFound")]}),
        );
        assert_eq!(
            addon_change(Some(&before), Some(&marked)),
            Dirty::single("hello", "c1")
        );
    }

    #[test]
    fn a_dropped_configured_condition_is_put_back_once() {
        let configured = condition("Configured", "True", "ConfigurationsConfigured");
        let agents = condition("Available", "True", "Ready");
        let written = mca(json!({"conditions": [configured.clone(), agents.clone()]}));
        // An agent replaces the conditions with its own.
        let replaced = mca(json!({"conditions": [agents.clone()]}));
        let lost: Condition = serde_json::from_value(configured).unwrap();
        assert_eq!(
            addon_change(Some(&written), Some(&replaced)),
            Dirty::configured("hello", "c1", lost)
        );
        let cleared = mca(json!({}));
        assert!(!addon_change(Some(&written), Some(&cleared)).is_empty());
        // Putting it back (the controller's own write) plans nothing, nor does an agent's
        // write that keeps it.
        assert!(addon_change(Some(&replaced), Some(&written)).is_empty());
        let kept = mca(json!({"conditions": [
            condition("Configured", "True", "ConfigurationsConfigured"),
            condition("Available", "False", "Gone")]}));
        assert!(addon_change(Some(&written), Some(&kept)).is_empty());
        // Only the config pass's condition is put back, and not on a deleting addon.
        let marked = mca(json!({"conditions": [
            condition("Configured", "False", "ClusterManagementAddOnNotFound")]}));
        assert_eq!(
            addon_change(Some(&marked), Some(&cleared)),
            Dirty::single("hello", "c1")
        );
        let mut deleting = serde_json::to_value(&replaced).unwrap();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-11-30T00:00:00Z");
        let deleting: ManagedClusterAddOn = serde_json::from_value(deleting).unwrap();
        assert_eq!(
            addon_change(Some(&written), Some(&deleting)),
            Dirty::addon("hello")
        );
    }

    #[test]
    fn config_references_and_progressing_plan_the_whole_addon() {
        let before = mca(json!({}));
        let applied = mca(
            json!({"configReferences": [{"group": "addon.open-cluster-management.io",
            "resource": "addondeploymentconfigs",
            "desiredConfig": {"namespace": "ns", "name": "c", "specHash": "h"},
            "lastAppliedConfig": {"namespace": "ns", "name": "c", "specHash": "h"}}]}),
        );
        assert_eq!(
            addon_change(Some(&before), Some(&applied)),
            Dirty::addon("hello")
        );
        let failed = mca(json!({"conditions": [condition("Progressing", "False", "Failed")]}));
        assert_eq!(
            addon_change(Some(&before), Some(&failed)),
            Dirty::addon("hello")
        );
        // Coming and going changes the install plan.
        assert_eq!(addon_change(None, Some(&before)), Dirty::addon("hello"));
        assert_eq!(addon_change(Some(&before), None), Dirty::addon("hello"));
    }

    #[test]
    fn registrations_and_annotations_are_the_addons_own_steps() {
        let before = mca(json!({}));
        let token = mca(json!({"registrations": [{"type": "kubeClient",
                                                   "kubeClient": {"driver": "token"}}]}));
        assert_eq!(
            addon_change(Some(&before), Some(&token)),
            Dirty::single("hello", "c1")
        );
        let ready =
            mca(json!({"conditions": [condition("TokenInfrastructureReady", "True", "R")]}));
        assert_eq!(
            addon_change(Some(&before), Some(&ready)),
            Dirty::single("hello", "c1")
        );
        let mut annotated = before.clone();
        annotated.metadata.annotations = Some([("a".to_owned(), "b".to_owned())].into());
        assert_eq!(
            addon_change(Some(&before), Some(&annotated)),
            Dirty::single("hello", "c1")
        );
    }

    #[test]
    fn a_decision_plans_the_addons_that_install_through_its_placement() {
        let cmas = [
            cma(
                "a",
                json!({"installStrategy": {"type": "Placements",
                "placements": [{"namespace": "ns", "name": "p"}]}}),
            ),
            cma(
                "b",
                json!({"installStrategy": {"type": "Placements",
                "placements": [{"namespace": "ns", "name": "other"}]}}),
            ),
            cma("c", json!({})),
        ];
        let decision = |clusters: &[&str]| -> PlacementDecision {
            serde_json::from_value(json!({
                "apiVersion": "cluster.open-cluster-management.io/v1beta1",
                "kind": "PlacementDecision",
                "metadata": {"name": "p-1", "namespace": "ns", "labels": {PLACEMENT_LABEL: "p"}},
                "status": {"decisions": clusters.iter()
                    .map(|c| json!({"clusterName": c, "reason": ""})).collect::<Vec<_>>()}}))
            .unwrap()
        };
        let one = decision(&["c1"]);
        let two = decision(&["c1", "c2"]);
        assert_eq!(
            decision_change(&cmas, Some(&one), Some(&two)),
            Dirty::addon("a")
        );
        assert_eq!(decision_change(&cmas, None, Some(&one)), Dirty::addon("a"));
        let mut same = one.clone();
        same.metadata.resource_version = Some("9".into());
        assert!(decision_change(&cmas, Some(&one), Some(&same)).is_empty());
    }

    #[test]
    fn a_cluster_plans_its_addons_only_for_addon_annotations_and_deletion() {
        let cmas = [cma("a", json!({})), cma("b", json!({}))];
        let cluster = |annotations: Value, deleting: bool| -> ManagedCluster {
            let mut metadata = json!({"name": "c1", "annotations": annotations});
            if deleting {
                metadata["deletionTimestamp"] = json!("2026-11-30T00:00:00Z");
            }
            serde_json::from_value(json!({
                "apiVersion": "cluster.open-cluster-management.io/v1",
                "kind": "ManagedCluster", "metadata": metadata, "spec": {}}))
            .unwrap()
        };
        let addons = ["a".to_owned()];
        let plain = cluster(json!({"foo.example.com/x": "1"}), false);
        let other = cluster(json!({"foo.example.com/x": "2"}), false);
        assert!(cluster_change(&cmas, &addons, Some(&plain), Some(&other)).is_empty());
        let annotated = cluster(
            json!({"addon.open-cluster-management.io/hosting-cluster-name": "h"}),
            false,
        );
        assert_eq!(
            cluster_change(&cmas, &addons, Some(&plain), Some(&annotated)),
            Dirty::single("a", "c1")
        );
        let deleting = cluster(json!({}), true);
        let every = Dirty::addons(["a".to_owned(), "b".to_owned()]);
        assert_eq!(
            cluster_change(&cmas, &addons, Some(&plain), Some(&deleting)),
            every
        );
        assert_eq!(cluster_change(&cmas, &addons, Some(&deleting), None), every);
        // A cluster joining plans nothing until a placement selects it.
        assert!(cluster_change(&cmas, &addons, None, Some(&plain)).is_empty());
    }

    /// Three ClusterManagementAddOns: one naming `config` by default, one through a
    /// placement, one not at all.
    fn cmas_naming(config: &Value) -> [Arc<ClusterManagementAddOn>; 3] {
        [
            cma("by-default", json!({"defaultConfigs": config})),
            cma(
                "by-placement",
                json!({"installStrategy": {"type": "Placements",
                "placements": [{"namespace": "ns", "name": "p", "configs": config}]}}),
            ),
            cma("neither", json!({})),
        ]
    }

    #[test]
    fn a_deployment_config_plans_the_addons_that_name_it() {
        let config = json!([{"group": "addon.open-cluster-management.io",
                             "resource": "addondeploymentconfigs", "namespace": "ns", "name": "d"}]);
        let cmas = cmas_naming(&config);
        let adc = |replicas: u32| -> AddOnDeploymentConfig {
            serde_json::from_value(json!({
                "apiVersion": "addon.open-cluster-management.io/v1alpha1",
                "kind": "AddOnDeploymentConfig", "metadata": {"name": "d", "namespace": "ns"},
                "spec": {"nodePlacement": {"nodeSelector": {"r": replicas.to_string()}}}}))
            .unwrap()
        };
        let users = BTreeSet::from(["by-own".to_owned()]);
        assert_eq!(
            deployment_config_change(&cmas, &users, Some(&adc(1)), Some(&adc(2))),
            Dirty::addons(["by-default", "by-placement", "by-own"].map(String::from))
        );
        assert!(deployment_config_change(&cmas, &users, Some(&adc(1)), Some(&adc(1))).is_empty());
    }

    #[test]
    fn a_template_plans_the_addons_that_name_it_when_its_spec_changes() {
        let config = json!([{"group": "addon.open-cluster-management.io",
                             "resource": "addontemplates", "name": "t"}]);
        let cmas = cmas_naming(&config);
        let template = |image: &str, version: &str| -> StoredTemplate {
            serde_json::from_value(json!({
                "metadata": {"name": "t", "resourceVersion": version},
                "spec": {"addonName": "by-default", "image": image}}))
            .unwrap()
        };
        let users = BTreeSet::from(["by-own".to_owned()]);
        let every = Dirty::addons(["by-default", "by-placement", "by-own"].map(String::from));
        assert_eq!(
            template_change(
                &cmas,
                &users,
                Some(&template("a", "1")),
                Some(&template("b", "2"))
            ),
            every
        );
        assert_eq!(
            template_change(&cmas, &users, None, Some(&template("a", "1"))),
            every
        );
        assert_eq!(
            template_change(&cmas, &users, Some(&template("a", "1")), None),
            every
        );
        // Metadata only (labels, a resourceVersion): nothing to plan.
        assert!(
            template_change(
                &cmas,
                &users,
                Some(&template("a", "1")),
                Some(&template("a", "2"))
            )
            .is_empty()
        );
    }

    #[test]
    fn the_index_finds_an_addons_clusters_and_config_users() {
        let mut index = AddonIndex::default();
        let mut own = mca(json!({}));
        own.spec.configs = serde_json::from_value(json!([{
            "group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs",
            "namespace": "c1", "name": "mine"}, {
            "group": "addon.open-cluster-management.io", "resource": "addontemplates",
            "name": "mine"}]))
        .unwrap();
        index.insert(&own);
        assert_eq!(index.names_on("c1"), ["hello"]);
        assert!(index.names_on("c2").is_empty());
        assert_eq!(
            index.config_users(DEPLOYMENT_CONFIGS, "c1", "mine"),
            BTreeSet::from(["hello".to_owned()])
        );
        assert_eq!(
            index.config_users(TEMPLATES, "", "mine"),
            BTreeSet::from(["hello".to_owned()])
        );
        assert!(index.config_users(TEMPLATES, "c1", "mine").is_empty());
        index.remove(&own);
        assert_eq!(index.names().count(), 0);
    }

    #[test]
    fn a_replaced_token_account_plans_its_addon_on_its_cluster() {
        let account = |uid: &str| -> ServiceAccount {
            serde_json::from_value(
                json!({"metadata": {"name": "hello-agent", "namespace": "c1",
                "uid": uid, "labels": {
                    ocm_api::addon::names::labels::TOKEN_INFRASTRUCTURE_ADDON: "hello"}}}),
            )
            .unwrap()
        };
        assert!(account_change(Some(&account("1")), Some(&account("1"))).is_empty());
        assert_eq!(
            account_change(Some(&account("1")), None),
            Dirty::single("hello", "c1")
        );
    }

    #[test]
    fn a_deleted_or_changed_token_role_or_binding_plans_its_addon_on_its_cluster() {
        let [_, role, binding] = crate::token_infra::objects("c1", "hello", "u1");
        let role: Role = serde_json::from_value(role).unwrap();
        let binding: RoleBinding = serde_json::from_value(binding).unwrap();
        let own = Dirty::single("hello", "c1");
        // Made by the pass, or written again unchanged: nothing to repair.
        assert!(role_change(None, Some(&role)).is_empty());
        let mut touched = role.clone();
        touched.metadata.resource_version = Some("7".into());
        touched.metadata.annotations = Some([("a".to_owned(), "b".to_owned())].into());
        assert!(role_change(Some(&role), Some(&touched)).is_empty());
        assert!(binding_change(None, Some(&binding)).is_empty());
        assert!(binding_change(Some(&binding), Some(&binding.clone())).is_empty());
        // Deleted (or unlabelled: it leaves the selected watch) or changed by hand.
        assert_eq!(role_change(Some(&role), None), own);
        assert_eq!(binding_change(Some(&binding), None), own);
        let mut widened = role.clone();
        widened.rules.as_mut().unwrap()[0].verbs.push("get".into());
        assert_eq!(role_change(Some(&role), Some(&widened)), own);
        let mut narrowed = binding.clone();
        narrowed.subjects.as_mut().unwrap().pop();
        assert_eq!(binding_change(Some(&binding), Some(&narrowed)), own);
        // Without the addon label it names no addon.
        let mut unnamed = role.clone();
        unnamed.metadata.labels = None;
        assert!(role_change(Some(&unnamed), None).is_empty());
    }
}
