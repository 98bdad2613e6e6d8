//! An addon's configs on one cluster — pure.
//!
//! Which config object applies per (group, resource): the ManagedClusterAddOn's own
//! `spec.configs` win over the configs of the install-strategy placement that selected the
//! cluster, which win over the ClusterManagementAddOn's `defaultConfigs` (a default named
//! `__reserved_no_default__`, or with no name, means none). Each config's spec hash is the
//! SHA-256 of its `spec` in canonical JSON (keys sorted), hex. Works carry the hashes in the
//! `open-cluster-management.io/config-spec-hash` annotation as a JSON map from
//! `<resource>.<group>/<namespace>/<name>` to hash.
//!
//! Rollout: when a config changes, each install-strategy placement hands it out per its
//! rollout strategy, through the planner ManifestWorkReplicaSet uses
//! ([`ocm_work::hub::rollout`]: `All`, `Progressive` with `maxConcurrency` and mandatory
//! decision groups, `ProgressivePerGroup`, `minSuccessTime`, `progressDeadline`,
//! `maxFailures`). A cluster's state in it comes from its ManagedClusterAddOn
//! ([`rollout_status`]); the placement's progress is a `Progressing` condition
//! ([`progression_condition`]).

use std::collections::BTreeMap;

use ocm_api::addon::names::RESERVED_NO_DEFAULT_CONFIG_NAME;
use ocm_api::addon::names::conditions::{PROGRESSING, configured, progressing};
use ocm_api::addon::v1beta1::{AddOnConfig, ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_work::hub::rollout::{ClusterRolloutStatus, RolloutStatus};
use serde_json::Value;

/// A config object an addon uses on a cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct ConfigRef {
    /// API group (empty for core).
    pub group: String,
    /// Plural resource, e.g. `addondeploymentconfigs`.
    pub resource: String,
    /// Namespace (empty for cluster-scoped configs).
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ConfigRef {
    /// The key in the config-spec-hash annotation: `<resource>.<group>/<namespace>/<name>`.
    pub fn key(&self) -> String {
        format!(
            "{}.{}/{}/{}",
            self.resource, self.group, self.namespace, self.name
        )
    }
}

fn from(config: &AddOnConfig) -> Option<ConfigRef> {
    if config.name.is_empty() || config.name == RESERVED_NO_DEFAULT_CONFIG_NAME {
        return None;
    }
    Some(ConfigRef {
        group: config.group.clone().unwrap_or_default(),
        resource: config.resource.clone(),
        namespace: config.namespace.clone(),
        name: config.name.clone(),
    })
}

/// The configs in effect: per (group, resource), the addon's own, else the placement's, else
/// the default. Sorted by group and resource.
pub fn desired(
    defaults: &[AddOnConfig],
    placement: &[AddOnConfig],
    own: &[AddOnConfig],
) -> Vec<ConfigRef> {
    let mut by_kind: BTreeMap<(String, String), Option<ConfigRef>> = BTreeMap::new();
    for layer in [defaults, placement, own] {
        for config in layer {
            let kind = (
                config.group.clone().unwrap_or_default(),
                config.resource.clone(),
            );
            by_kind.insert(kind, from(config));
        }
    }
    by_kind.into_values().flatten().collect()
}

/// `value` as JSON with object keys sorted (for hashing).
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        Value::String(k.clone()),
                        canonical(map.get(k).unwrap_or(&Value::Null))
                    )
                })
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

/// The spec hash of a config object: SHA-256 of its canonical `spec`, hex.
pub fn spec_hash(object: &Value) -> String {
    let spec = object.get("spec").unwrap_or(&Value::Null);
    let digest = ring::digest::digest(&ring::digest::SHA256, canonical(spec).as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The config-spec-hash annotation for configs and their hashes.
pub fn hash_annotation(hashes: &[(ConfigRef, String)]) -> String {
    let map: BTreeMap<String, &String> = hashes.iter().map(|(r, h)| (r.key(), h)).collect();
    serde_json::to_string(&map).unwrap_or_default()
}

/// Whether (group, resource) may name an addon config. Configs are custom resources: the
/// built-in groups (core `""`, `*.k8s.io`, `apps`, `batch`, …) hold credentials and workloads,
/// never configs, and the hub reads no such object because an addon's spec names it.
pub fn may_be_config(group: &str, resource: &str) -> bool {
    const BUILTIN: [&str; 8] = [
        "",
        "apps",
        "batch",
        "policy",
        "autoscaling",
        "extensions",
        "coordination.k8s.io",
        "rbac.authorization.k8s.io",
    ];
    !resource.is_empty() && !BUILTIN.contains(&group) && !group.ends_with(".k8s.io")
}

/// The config kinds `mca` refers to that an addon reading only `supported` kinds (group,
/// resource) does not read, as `<resource>.<group>`; none when `supported` is empty (the addon
/// takes any kind).
pub fn unsupported_configs(
    supported: &[(String, String)],
    mca: &ManagedClusterAddOn,
) -> Vec<String> {
    if supported.is_empty() {
        return Vec::new();
    }
    mca.status
        .iter()
        .flat_map(|s| &s.config_references)
        .map(|r| (r.group.clone().unwrap_or_default(), r.resource.clone()))
        .filter(|kind| !supported.contains(kind))
        .map(|(group, resource)| format!("{resource}.{group}"))
        .collect()
}

/// A cluster's state in the rollout of new configs, from its ManagedClusterAddOn; `None` when
/// it has not been handed the new configs yet (`has_new` false: it is still to be given them).
/// Handed them: `Failed` when its `Progressing` condition says so, `Succeeded` once it applied
/// every desired config, else `Progressing` — each since the condition's last transition.
pub fn rollout_status(
    cluster: &str,
    mca: &ManagedClusterAddOn,
    has_new: bool,
) -> Option<ClusterRolloutStatus> {
    if !has_new {
        return None;
    }
    let status = mca.status.as_ref();
    let progressing = status.and_then(|s| s.conditions.iter().find(|c| c.type_ == PROGRESSING));
    let since = progressing.map(|c| c.last_transition_time.0);
    let applied = status.is_none_or(|s| {
        s.config_references
            .iter()
            .all(|r| r.desired_config.is_none() || r.desired_config == r.last_applied_config)
    });
    let state = if progressing.is_some_and(|c| c.reason == progressing::FAILED) {
        RolloutStatus::Failed
    } else if applied {
        RolloutStatus::Succeeded
    } else {
        RolloutStatus::Progressing
    };
    Some(ClusterRolloutStatus::new(cluster, state, since))
}

/// The `Progressing` condition of a placement's install progression: (status, reason,
/// message) from how many of its `total` clusters succeeded, failed or timed out.
pub fn progression_condition(
    total: usize,
    succeeded: usize,
    failed: usize,
    timed_out: usize,
    breached: bool,
) -> (&'static str, &'static str, String) {
    if total > 0 && succeeded >= total {
        return (
            "False",
            progressing::COMPLETED,
            format!("{succeeded}/{total} completed with no errors, 0 failed 0 timeout."),
        );
    }
    let reason = if breached {
        progressing::FAILED
    } else {
        progressing::PROGRESSING
    };
    (
        "True",
        reason,
        format!("{succeeded}/{total} completed, {failed} failed {timed_out} timeout."),
    )
}

/// The `Configured` condition of one addon in a config pass: (status, reason, message), or
/// `None` to leave it as it is. `in_batch`: its rollout hands it the desired configs now (or
/// it is outside any placement); `state`: its rollout state ([`rollout_status`]; `None` while it
/// still waits for the new configs). True when in the batch or its rollout succeeded (an addon
/// without configs succeeds at once); False while it waits outside the batch; untouched while
/// it is still applying configs handed out in an earlier batch.
pub fn configured_condition(
    in_batch: bool,
    state: Option<RolloutStatus>,
) -> Option<(&'static str, &'static str, &'static str)> {
    const DONE: (&str, &str, &str) = (
        "True",
        configured::CONFIGURATIONS_CONFIGURED,
        "Configurations configured",
    );
    match state {
        _ if in_batch => Some(DONE),
        None => Some((
            "False",
            configured::CONFIGURATIONS_NOT_CONFIGURED,
            "Configurations updated and not configured yet",
        )),
        Some(RolloutStatus::Succeeded) => Some(DONE),
        Some(_) => None,
    }
}

/// The config kind of templates: the resource of `addon.open-cluster-management.io` a template addon's `defaultConfigs` name.
pub const TEMPLATE_RESOURCE: &str = "addontemplates";

/// Whether `cma` is a template addon: its `defaultConfigs` name the `addontemplates` kind.
pub fn is_template_addon(cma: &ClusterManagementAddOn) -> bool {
    cma.metadata.deletion_timestamp.is_none()
        && cma.spec.default_configs.iter().any(|c| {
            c.group.as_deref() == Some(ocm_api::addon::GROUP) && c.resource == TEMPLATE_RESOURCE
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn configured_is_true_in_the_batch_or_once_done_false_while_held_back() {
        let done = Some((
            "True",
            "ConfigurationsConfigured",
            "Configurations configured",
        ));
        let waiting = Some((
            "False",
            "ConfigurationsNotConfigured",
            "Configurations updated and not configured yet",
        ));
        // In the current batch: configured, whatever its state.
        assert_eq!(configured_condition(true, None), done);
        assert_eq!(
            configured_condition(true, Some(RolloutStatus::Progressing)),
            done
        );
        // Held back by the rollout strategy.
        assert_eq!(configured_condition(false, None), waiting);
        // Rolled out (or nothing to roll out).
        assert_eq!(
            configured_condition(false, Some(RolloutStatus::Succeeded)),
            done
        );
        // Handed its configs in an earlier batch, still applying them: left as it is.
        assert_eq!(
            configured_condition(false, Some(RolloutStatus::Progressing)),
            None
        );
        assert_eq!(
            configured_condition(false, Some(RolloutStatus::Failed)),
            None
        );
    }

    fn config(resource: &str, ns: &str, name: &str) -> AddOnConfig {
        AddOnConfig {
            group: Some("addon.open-cluster-management.io".into()),
            resource: resource.into(),
            namespace: ns.into(),
            name: name.into(),
        }
    }

    #[test]
    fn own_configs_beat_placement_configs_beat_defaults() {
        let defaults = [
            config("addondeploymentconfigs", "d", "default"),
            config("addontemplates", "", RESERVED_NO_DEFAULT_CONFIG_NAME),
        ];
        let placement = [config("addondeploymentconfigs", "p", "placement")];
        let own = [config("addondeploymentconfigs", "o", "own")];
        assert_eq!(desired(&defaults, &[], &[])[0].name, "default");
        assert_eq!(desired(&defaults, &placement, &[])[0].name, "placement");
        let all = desired(&defaults, &placement, &own);
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].name, "own");
    }

    #[test]
    fn hashes_ignore_key_order_and_metadata() {
        let a = json!({"metadata": {"name": "x"}, "spec": {"a": 1, "b": [1, {"c": 2, "d": 3}]}});
        let b = json!({"metadata": {"name": "y"}, "spec": {"b": [1, {"d": 3, "c": 2}], "a": 1}});
        assert_eq!(spec_hash(&a), spec_hash(&b));
        assert_eq!(spec_hash(&a).len(), 64);
        let c = json!({"spec": {"a": 2}});
        assert_ne!(spec_hash(&a), spec_hash(&c));
        let refs = [(config_ref(), "h".to_owned())];
        assert_eq!(
            hash_annotation(&refs),
            r#"{"addondeploymentconfigs.addon.open-cluster-management.io/ns/cfg":"h"}"#
        );
    }

    fn config_ref() -> ConfigRef {
        ConfigRef {
            group: "addon.open-cluster-management.io".into(),
            resource: "addondeploymentconfigs".into(),
            namespace: "ns".into(),
            name: "cfg".into(),
        }
    }

    fn addon(configs: Value, progressing: Option<&str>) -> ManagedClusterAddOn {
        let mut status = json!({"configReferences": configs});
        if let Some(reason) = progressing {
            status["conditions"] = json!([{"type": "Progressing", "status": "True",
                "reason": reason, "message": "", "lastTransitionTime": "2026-11-25T10:00:00Z"}]);
        }
        serde_json::from_value(json!({"metadata": {"name": "a", "namespace": "c1"},
                                      "spec": {}, "status": status}))
        .unwrap()
    }

    #[test]
    fn a_clusters_rollout_state_follows_its_addon_status() {
        let pending = json!([{"resource": "addondeploymentconfigs",
            "desiredConfig": {"namespace": "n", "name": "c", "specHash": "new"},
            "lastAppliedConfig": {"namespace": "n", "name": "c", "specHash": "old"}}]);
        let done = json!([{"resource": "addondeploymentconfigs",
            "desiredConfig": {"namespace": "n", "name": "c", "specHash": "new"},
            "lastAppliedConfig": {"namespace": "n", "name": "c", "specHash": "new"}}]);
        assert_eq!(
            rollout_status("c1", &addon(pending.clone(), None), false),
            None
        );
        let state = |mca: &ManagedClusterAddOn| rollout_status("c1", mca, true).unwrap().status;
        assert_eq!(
            state(&addon(pending.clone(), Some("Progressing"))),
            RolloutStatus::Progressing
        );
        assert_eq!(
            state(&addon(pending, Some("Failed"))),
            RolloutStatus::Failed
        );
        assert_eq!(
            state(&addon(done, Some("Completed"))),
            RolloutStatus::Succeeded
        );
    }

    #[test]
    fn only_custom_resources_may_be_configs() {
        assert!(may_be_config(
            "addon.open-cluster-management.io",
            "addondeploymentconfigs"
        ));
        assert!(may_be_config("example.com", "widgets"));
        assert!(may_be_config("cluster.x-k8s.io", "clusters"));
        assert!(!may_be_config("", "secrets"));
        assert!(!may_be_config("", "configmaps"));
        assert!(!may_be_config("apps", "deployments"));
        assert!(!may_be_config("rbac.authorization.k8s.io", "roles"));
        assert!(!may_be_config(
            "certificates.k8s.io",
            "certificatesigningrequests"
        ));
        assert!(!may_be_config("example.com", ""));
    }

    #[test]
    fn config_kinds_the_addon_does_not_read_are_named() {
        let refs = json!([
            {"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs"},
            {"group": "example.com", "resource": "widgets"}]);
        let mca = addon(refs, None);
        let adc = (
            "addon.open-cluster-management.io".to_owned(),
            "addondeploymentconfigs".to_owned(),
        );
        assert_eq!(unsupported_configs(&[adc], &mca), ["widgets.example.com"]);
        assert!(unsupported_configs(&[], &mca).is_empty());
    }

    #[test]
    fn a_progression_completes_when_every_cluster_succeeded() {
        assert_eq!(progression_condition(3, 3, 0, 0, false).1, "Completed");
        let (status, reason, message) = progression_condition(3, 1, 1, 0, false);
        assert_eq!((status, reason), ("True", "Progressing"));
        assert_eq!(message, "1/3 completed, 1 failed 0 timeout.");
        assert_eq!(progression_condition(3, 1, 2, 0, true).1, "Failed");
    }
}
