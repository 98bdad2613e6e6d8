//! Which clusters an addon is installed on — a pure plan of a ClusterManagementAddOn's
//! install strategy.
//!
//! `Manual`: the hub creates and deletes nothing; users create ManagedClusterAddOns.
//! `Placements`: every cluster any listed placement selects gets a ManagedClusterAddOn named
//! after the addon (owned by the ClusterManagementAddOn); one the strategy created is deleted
//! when its cluster is selected by none of them any more. ManagedClusterAddOns a user created
//! (not owned by the ClusterManagementAddOn) are never deleted by the strategy. Clusters that
//! are being deleted get no new addon.
//!
//! Addon annotations: the annotations of a ManagedCluster whose key starts with
//! `addon.open-cluster-management.io` ([`addon_annotations`]) are copied onto every
//! ManagedClusterAddOn a `Placements` strategy governs — when the strategy creates it, and
//! whenever the cluster's change ([`annotation_changes`]: changed values written, keys the
//! cluster no longer has removed). `addon.open-cluster-management.io/v1alpha1-install-namespace`
//! is the API conversion's own record of a v1alpha1 `installNamespace`, never copied or removed.

use std::collections::{BTreeMap, BTreeSet};

use ocm_api::addon::names::{INSTALL_STRATEGY_MANUAL, INSTALL_STRATEGY_PLACEMENTS};

/// Whether annotation `key` is an addon annotation a cluster hands to its addons.
fn is_addon_annotation(key: &str) -> bool {
    key.starts_with(ocm_api::addon::GROUP)
        && key != ocm_api::addon::names::annotations::V1ALPHA1_INSTALL_NAMESPACE
}

/// The addon annotations of a cluster (from its annotations).
pub fn addon_annotations(cluster: Option<&BTreeMap<String, String>>) -> BTreeMap<String, String> {
    cluster
        .into_iter()
        .flatten()
        .filter(|(k, _)| is_addon_annotation(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// What an addon's annotations (`addon`) need so that its addon annotations are the cluster's
/// (`wanted`, from [`addon_annotations`]): key → new value, `None` to remove; empty when they
/// already are. Other annotations are left alone.
pub fn annotation_changes(
    addon: Option<&BTreeMap<String, String>>,
    wanted: &BTreeMap<String, String>,
) -> BTreeMap<String, Option<String>> {
    let current = addon_annotations(addon);
    let mut changes = BTreeMap::new();
    for (key, value) in wanted {
        if current.get(key) != Some(value) {
            changes.insert(key.clone(), Some(value.clone()));
        }
    }
    for key in current.keys() {
        if !wanted.contains_key(key) {
            changes.insert(key.clone(), None);
        }
    }
    changes
}

/// A ManagedClusterAddOn of the addon that exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Existing {
    /// Its cluster (namespace).
    pub cluster: String,
    /// Whether the ClusterManagementAddOn owns it (the strategy created it).
    pub owned: bool,
}

/// What the strategy changes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstallPlan {
    /// Clusters that get a new ManagedClusterAddOn.
    pub create: Vec<String>,
    /// Clusters whose strategy-made ManagedClusterAddOn goes.
    pub delete: Vec<String>,
}

/// Why a strategy cannot be followed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidStrategy(pub String);

/// Plans the strategy `strategy_type` given, per listed placement (`namespace/name`), the
/// clusters it selects (`None` when its decisions cannot be read: the plan then deletes nothing
/// rather than guess), the clusters being deleted, and the existing addons.
pub fn plan(
    strategy_type: &str,
    decisions: &BTreeMap<String, Option<BTreeSet<String>>>,
    deleting: &BTreeSet<String>,
    existing: &[Existing],
) -> Result<InstallPlan, InvalidStrategy> {
    match strategy_type {
        "" | INSTALL_STRATEGY_MANUAL => return Ok(InstallPlan::default()),
        INSTALL_STRATEGY_PLACEMENTS => {}
        other => {
            return Err(InvalidStrategy(format!(
                "install strategy type {other:?} is not supported (Manual or Placements)"
            )));
        }
    }
    let complete = decisions.values().all(Option::is_some);
    let selected: BTreeSet<&String> = decisions.values().flatten().flatten().collect();
    let have: BTreeSet<&String> = existing.iter().map(|e| &e.cluster).collect();
    let create = selected
        .iter()
        .filter(|c| !have.contains(*c) && !deleting.contains(**c))
        .map(|c| (*c).clone())
        .collect();
    let delete = if complete {
        existing
            .iter()
            .filter(|e| e.owned && !selected.contains(&e.cluster))
            .map(|e| e.cluster.clone())
            .collect()
    } else {
        Vec::new()
    };
    Ok(InstallPlan { create, delete })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn placements_add_and_remove_only_what_they_own() {
        let mut decisions = BTreeMap::new();
        decisions.insert("ns/p1".to_owned(), Some(set(&["c1", "c2"])));
        decisions.insert("ns/p2".to_owned(), Some(set(&["c3"])));
        let existing = vec![
            Existing {
                cluster: "c1".into(),
                owned: true,
            },
            Existing {
                cluster: "c4".into(),
                owned: true,
            },
            Existing {
                cluster: "c5".into(),
                owned: false,
            },
        ];
        let plan = plan(
            INSTALL_STRATEGY_PLACEMENTS,
            &decisions,
            &set(&["c3"]),
            &existing,
        )
        .unwrap();
        assert_eq!(plan.create, vec!["c2".to_owned()]);
        assert_eq!(plan.delete, vec!["c4".to_owned()]);
    }

    #[test]
    fn unreadable_decisions_delete_nothing_and_manual_does_nothing() {
        let mut decisions = BTreeMap::new();
        decisions.insert("ns/p1".to_owned(), Some(set(&["c1"])));
        decisions.insert("ns/p2".to_owned(), None);
        let existing = vec![Existing {
            cluster: "c4".into(),
            owned: true,
        }];
        let plan = plan(
            INSTALL_STRATEGY_PLACEMENTS,
            &decisions,
            &BTreeSet::new(),
            &existing,
        )
        .unwrap();
        assert_eq!(plan.create, vec!["c1".to_owned()]);
        assert!(plan.delete.is_empty());
        assert_eq!(plan_manual(&decisions, &existing), InstallPlan::default());
        assert!(super::plan("Everywhere", &decisions, &BTreeSet::new(), &existing).is_err());
    }

    fn plan_manual(
        decisions: &BTreeMap<String, Option<BTreeSet<String>>>,
        existing: &[Existing],
    ) -> InstallPlan {
        super::plan(
            INSTALL_STRATEGY_MANUAL,
            decisions,
            &BTreeSet::new(),
            existing,
        )
        .unwrap()
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn only_addon_annotations_travel_from_cluster_to_addon() {
        let cluster = map(&[
            (
                "addon.open-cluster-management.io/hosting-cluster-name",
                "h1",
            ),
            ("addon.open-cluster-management.io/test-annotation", "v1"),
            (
                "addon.open-cluster-management.io/v1alpha1-install-namespace",
                "ns",
            ),
            ("foo.example.com/bar", "value1"),
        ]);
        assert_eq!(
            addon_annotations(Some(&cluster)),
            map(&[
                (
                    "addon.open-cluster-management.io/hosting-cluster-name",
                    "h1"
                ),
                ("addon.open-cluster-management.io/test-annotation", "v1"),
            ])
        );
        assert!(addon_annotations(Some(&map(&[("foo.example.com/bar", "x")]))).is_empty());
        assert!(addon_annotations(None).is_empty());
    }

    #[test]
    fn addon_annotations_follow_the_cluster() {
        let wanted = map(&[
            ("addon.open-cluster-management.io/a", "new"),
            ("addon.open-cluster-management.io/b", "same"),
        ]);
        let addon = map(&[
            ("addon.open-cluster-management.io/a", "old"),
            ("addon.open-cluster-management.io/b", "same"),
            ("addon.open-cluster-management.io/gone", "x"),
            (
                "addon.open-cluster-management.io/v1alpha1-install-namespace",
                "ns",
            ),
            ("user.example.com/kept", "y"),
        ]);
        let changes = annotation_changes(Some(&addon), &wanted);
        let expected: BTreeMap<String, Option<String>> = [
            ("addon.open-cluster-management.io/a", Some("new")),
            ("addon.open-cluster-management.io/gone", None),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.map(str::to_owned)))
        .collect();
        assert_eq!(changes, expected);
        assert!(annotation_changes(Some(&wanted), &wanted).is_empty());
        assert!(annotation_changes(None, &BTreeMap::new()).is_empty());
    }
}
