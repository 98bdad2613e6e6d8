//! Ordering the writes of a placement's PlacementDecision pages so that no cluster that stays
//! selected is ever missing from all of them (upstream issue #1346: rewriting page 1 before
//! page 2 drops a cluster that moves from page 1 to page 2 until page 2 is written).
//!
//! The plan has three phases:
//!
//! 1. every desired page is written with its new clusters **plus** the clusters it holds now
//!    that stay selected but belong to another page from now on ("movers"); clusters no
//!    longer selected are dropped here;
//! 2. pages that kept movers are written again with exactly their new clusters;
//! 3. pages that are no longer wanted are deleted.
//!
//! After every single step each cluster selected both before and after is in some page (it
//! may be in two for a moment; readers take the union, as upstream's consumers do). Pages
//! whose content does not change are not written at all.

use std::collections::{BTreeMap, HashMap, HashSet};

use ocm_api::cluster::v1beta1::ClusterDecision;

/// One write of the plan.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PageStep {
    /// Write desired page `page` (an index into the desired pages) with these clusters;
    /// `create` when it does not exist yet.
    Write {
        /// Index into the desired pages.
        page: usize,
        /// The page's `status.decisions` after this step.
        clusters: Vec<ClusterDecision>,
        /// The page does not exist yet.
        create: bool,
    },
    /// Delete the page of this name.
    Delete(String),
}

/// The steps that turn `current` (page name → its clusters now) into `desired` (page name
/// and its clusters, in page order).
pub(crate) fn plan(
    current: &BTreeMap<String, Vec<ClusterDecision>>,
    desired: &[(String, Vec<ClusterDecision>)],
) -> Vec<PageStep> {
    let mut new_page: HashMap<&str, &str> = HashMap::new();
    for (name, clusters) in desired {
        for c in clusters {
            new_page
                .entry(c.cluster_name.as_str())
                .or_insert(name.as_str());
        }
    }
    let mut steps = Vec::new();
    let mut second = Vec::new();
    for (page, (name, clusters)) in desired.iter().enumerate() {
        let now = current.get(name);
        let movers: Vec<ClusterDecision> = now
            .into_iter()
            .flatten()
            .filter(|c| {
                new_page
                    .get(c.cluster_name.as_str())
                    .is_some_and(|p| *p != name.as_str())
            })
            .cloned()
            .collect();
        let mut first = clusters.clone();
        if !movers.is_empty() {
            let present: HashSet<&str> = clusters.iter().map(|c| c.cluster_name.as_str()).collect();
            first.extend(
                movers
                    .into_iter()
                    .filter(|c| !present.contains(c.cluster_name.as_str())),
            );
            second.push(PageStep::Write {
                page,
                clusters: clusters.clone(),
                create: false,
            });
        }
        if now != Some(&first) {
            steps.push(PageStep::Write {
                page,
                clusters: first,
                create: now.is_none(),
            });
        }
    }
    steps.extend(second);
    let wanted: HashSet<&str> = desired.iter().map(|(n, _)| n.as_str()).collect();
    steps.extend(
        current
            .keys()
            .filter(|n| !wanted.contains(n.as_str()))
            .map(|n| PageStep::Delete(n.clone())),
    );
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cd(name: &str) -> ClusterDecision {
        ClusterDecision {
            cluster_name: name.to_string(),
            reason: String::new(),
            score: None,
        }
    }

    fn page(names: &[&str]) -> Vec<ClusterDecision> {
        names.iter().map(|n| cd(n)).collect()
    }

    fn names(n: std::ops::Range<usize>) -> Vec<String> {
        n.map(|i| format!("c{i:03}")).collect()
    }

    fn pages_of(all: &[String], size: usize) -> Vec<(String, Vec<ClusterDecision>)> {
        all.chunks(size)
            .enumerate()
            .map(|(i, chunk)| {
                (
                    format!("p-decision-{}", i + 1),
                    chunk.iter().map(|n| cd(n)).collect(),
                )
            })
            .collect()
    }

    /// Runs the plan step by step, checking after each that every cluster selected before
    /// and after is in some page; returns the final pages.
    fn replay(
        current: BTreeMap<String, Vec<ClusterDecision>>,
        desired: &[(String, Vec<ClusterDecision>)],
    ) -> (BTreeMap<String, Vec<ClusterDecision>>, usize) {
        let steps = plan(&current, desired);
        let before: HashSet<String> = current
            .values()
            .flatten()
            .map(|c| c.cluster_name.clone())
            .collect();
        let after: HashSet<String> = desired
            .iter()
            .flat_map(|(_, cs)| cs.iter().map(|c| c.cluster_name.clone()))
            .collect();
        let mut state = current;
        for step in &steps {
            match step {
                PageStep::Write {
                    page,
                    clusters,
                    create,
                } => {
                    let name = &desired[*page].0;
                    assert_eq!(*create, !state.contains_key(name), "{step:?}");
                    state.insert(name.clone(), clusters.clone());
                }
                PageStep::Delete(name) => {
                    assert!(state.remove(name).is_some());
                }
            }
            let present: HashSet<&str> = state
                .values()
                .flatten()
                .map(|c| c.cluster_name.as_str())
                .collect();
            for kept in before.intersection(&after) {
                assert!(
                    present.contains(kept.as_str()),
                    "{kept} missing after {step:?}"
                );
            }
        }
        (state, steps.len())
    }

    fn expect_final(
        state: &BTreeMap<String, Vec<ClusterDecision>>,
        desired: &[(String, Vec<ClusterDecision>)],
    ) {
        let want: BTreeMap<String, Vec<ClusterDecision>> = desired.iter().cloned().collect();
        assert_eq!(state, &want);
    }

    #[test]
    fn nothing_to_do_when_pages_are_equal() {
        let desired = pages_of(&names(0..150), 100);
        let current = desired.iter().cloned().collect();
        assert!(plan(&current, &desired).is_empty());
    }

    #[test]
    fn new_pages_are_created_in_order() {
        let desired = pages_of(&names(0..250), 100);
        let (state, steps) = replay(BTreeMap::new(), &desired);
        expect_final(&state, &desired);
        assert_eq!(steps, 3);
    }

    #[test]
    fn a_cluster_moving_to_a_later_page_is_never_missing() {
        // c000..c149 selected; then a cluster sorting first joins: c099 moves from page 1
        // to page 2.
        let old = pages_of(&names(1..151), 100);
        let mut all = names(0..151);
        all.sort();
        let desired = pages_of(&all, 100);
        let (state, _) = replay(old.into_iter().collect(), &desired);
        expect_final(&state, &desired);
    }

    #[test]
    fn clusters_moving_to_an_earlier_page_and_a_dropped_page() {
        // 201 clusters over three pages; the first 101 leave: everything shifts two pages
        // down and page 3 goes away.
        let old = pages_of(&names(0..201), 100);
        let desired = pages_of(&names(101..201), 100);
        let (state, _) = replay(old.into_iter().collect(), &desired);
        expect_final(&state, &desired);
    }

    #[test]
    fn movers_in_both_directions_at_once() {
        let current: BTreeMap<String, Vec<ClusterDecision>> = [
            ("p-decision-1".to_string(), page(&["a", "b"])),
            ("p-decision-2".to_string(), page(&["c", "d"])),
        ]
        .into_iter()
        .collect();
        let desired = vec![
            ("p-decision-1".to_string(), page(&["a", "c"])),
            ("p-decision-2".to_string(), page(&["b", "e"])),
        ];
        let (state, _) = replay(current, &desired);
        expect_final(&state, &desired);
    }

    #[test]
    fn deselected_clusters_leave_in_the_first_write() {
        let current: BTreeMap<String, Vec<ClusterDecision>> =
            [("p-decision-1".to_string(), page(&["a", "b", "c"]))]
                .into_iter()
                .collect();
        let desired = vec![("p-decision-1".to_string(), page(&["a", "c"]))];
        assert_eq!(
            plan(&current, &desired),
            vec![PageStep::Write {
                page: 0,
                clusters: page(&["a", "c"]),
                create: false
            }]
        );
    }

    #[test]
    fn a_page_that_only_loses_movers_is_written_twice_and_a_surplus_page_deleted_last() {
        let current: BTreeMap<String, Vec<ClusterDecision>> = [
            ("p-decision-1".to_string(), page(&["a"])),
            ("p-decision-2".to_string(), page(&["b"])),
        ]
        .into_iter()
        .collect();
        // Groups changed: both clusters now in one page of another name.
        let desired = vec![("p-decision-3".to_string(), page(&["a", "b"]))];
        let steps = plan(&current, &desired);
        assert_eq!(
            steps,
            vec![
                PageStep::Write {
                    page: 0,
                    clusters: page(&["a", "b"]),
                    create: true
                },
                PageStep::Delete("p-decision-1".to_string()),
                PageStep::Delete("p-decision-2".to_string()),
            ]
        );
        let (state, _) = replay(current, &desired);
        expect_final(&state, &desired);
    }

    #[test]
    fn random_changes_never_lose_a_kept_cluster() {
        // A small deterministic generator: no dependency, same cases every run.
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for _ in 0..300 {
            let size = 1 + next(4) as usize;
            let pick = |next: &mut dyn FnMut(u64) -> u64| {
                let mut all: Vec<String> = (0..20)
                    .filter(|_| next(2) == 0)
                    .map(|i| format!("c{i:02}"))
                    .collect();
                all.sort();
                all
            };
            let old = pages_of(&pick(&mut next), size);
            let desired = pages_of(&pick(&mut next), size);
            let (state, _) = replay(old.into_iter().collect(), &desired);
            expect_final(&state, &desired);
        }
    }
}
