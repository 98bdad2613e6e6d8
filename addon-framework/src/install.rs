//! Which clusters an addon is installed on — a pure plan of a ClusterManagementAddOn's
//! install strategy.
//!
//! `Manual`: the hub creates and deletes nothing; users create ManagedClusterAddOns.
//! `Placements`: every cluster any listed placement selects gets a ManagedClusterAddOn named
//! after the addon (owned by the ClusterManagementAddOn); one the strategy created is deleted
//! when its cluster is selected by none of them any more. ManagedClusterAddOns a user created
//! (not owned by the ClusterManagementAddOn) are never deleted by the strategy. Clusters that
//! are being deleted get no new addon.

use std::collections::{BTreeMap, BTreeSet};

use ocm_api::addon::names::{INSTALL_STRATEGY_MANUAL, INSTALL_STRATEGY_PLACEMENTS};

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
}
