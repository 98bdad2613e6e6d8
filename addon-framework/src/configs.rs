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
//! Rollout ([`admit_rollout`]): when a config changes, `All` gives every cluster the new
//! config at once; `Progressive` lets at most `maxConcurrency` clusters at a time run a new
//! config they have not applied yet. `ProgressivePerGroup` is treated as `All` (per-group
//! ordering, `minSuccessTime`, `progressDeadline` and `maxFailures` are not acted on yet).

use std::collections::BTreeMap;

use ocm_api::addon::names::RESERVED_NO_DEFAULT_CONFIG_NAME;
use ocm_api::addon::v1beta1::AddOnConfig;
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

/// A cluster's rollout state for one addon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterRollout {
    /// The cluster.
    pub cluster: String,
    /// Whether its desired configs already equal the new ones.
    pub has_new: bool,
    /// Whether it has applied the configs it was given.
    pub applied: bool,
}

/// Which clusters get the new configs now: every cluster for `All`; for `Progressive`, as many
/// clusters still on old configs as `max_concurrency` minus the clusters that have the new
/// configs but not applied them yet (in name order). `max_concurrency` of 0 or `None` means
/// no limit.
pub fn admit_rollout(clusters: &[ClusterRollout], max_concurrency: Option<usize>) -> Vec<String> {
    let waiting: Vec<&ClusterRollout> = clusters.iter().filter(|c| !c.has_new).collect();
    let Some(limit) = max_concurrency.filter(|n| *n > 0) else {
        return waiting.iter().map(|c| c.cluster.clone()).collect();
    };
    let in_flight = clusters.iter().filter(|c| c.has_new && !c.applied).count();
    let mut waiting = waiting;
    waiting.sort_by(|a, b| a.cluster.cmp(&b.cluster));
    waiting
        .into_iter()
        .take(limit.saturating_sub(in_flight))
        .map(|c| c.cluster.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn progressive_rollout_moves_max_concurrency_clusters_at_a_time() {
        let state = |c: &str, has_new, applied| ClusterRollout {
            cluster: c.into(),
            has_new,
            applied,
        };
        let start = [
            state("c1", false, true),
            state("c2", false, true),
            state("c3", false, true),
        ];
        assert_eq!(admit_rollout(&start, Some(1)), vec!["c1".to_owned()]);
        assert_eq!(admit_rollout(&start, None).len(), 3);
        let one_in_flight = [
            state("c1", true, false),
            state("c2", false, true),
            state("c3", false, true),
        ];
        assert!(admit_rollout(&one_in_flight, Some(1)).is_empty());
        let one_done = [
            state("c1", true, true),
            state("c2", false, true),
            state("c3", false, true),
        ];
        assert_eq!(admit_rollout(&one_done, Some(1)), vec!["c2".to_owned()]);
    }
}
