//! `spec.spreadPolicy`: spreading the selected clusters over topology domains.
//!
//! Upstream OCM defines this API but does not implement it; this is ocm-rs's design.
//!
//! **Domains.** For a constraint with `topologyKey` K (`topologyKeyType` `Label` or `Claim`),
//! the domain of a cluster is its value of label / claim K. The domains of a constraint are
//! the distinct values among the *feasible* clusters (those that passed every filter). The
//! skew of a constraint is `max − min` of the number of selected clusters per domain, over all
//! its domains — a domain with no selected cluster counts as 0, so it keeps the minimum down.
//!
//! **Hard and soft.** A `DoNotSchedule` constraint is hard: a cluster without key K is never
//! selected, and a cluster is selected only if the skew stays ≤ `maxSkew` afterwards. A
//! `ScheduleAnyway` constraint (the default) is soft: clusters without K may be selected (they
//! count in no domain), and exceeding `maxSkew` is allowed but avoided.
//!
//! **Selection.** The wanted count is `numberOfClusters`, or every feasible cluster when it is
//! unset. The feasible clusters are ranked as without a spread policy (total score descending,
//! then name). Then, one cluster per step, until the wanted count is reached:
//! 1. take the best-ranked cluster that keeps every hard constraint within `maxSkew` and
//!    every soft constraint within `maxSkew`;
//! 2. if there is none, take the cluster that keeps every hard constraint within `maxSkew`
//!    and has the smallest soft excess (`skew after − maxSkew`, compared constraint by
//!    constraint in spec order, as the API says earlier constraints matter more), best-ranked
//!    first among equals;
//! 3. if no cluster keeps the hard constraints, stop: fewer clusters are selected than
//!    wanted, and the placement reports `NotAllDecisionsScheduled` with the shortfall.
//!
//! So with only soft constraints the wanted count is always reached; with hard constraints the
//! result always satisfies them, at the price of selecting fewer. Adding a cluster to a domain
//! with the fewest selected clusters never raises the skew above 1, so a hard constraint only
//! stops the selection when those domains have no cluster left. The procedure is greedy (with
//! several hard constraints a cleverer order could sometimes select more) and deterministic.
//! Clusters with the same domain under every constraint are interchangeable, so each step only
//! looks at the best remaining cluster of each such combination (kept in a heap per
//! combination): a step costs O(combinations × constraints), and no full sort of the feasible
//! clusters is needed.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use ocm_api::cluster::v1beta1::{
    SpreadConstraintsTerm, TopologyKeyType, UnsatisfiableMaxSkewAction,
};

use super::fast_hash::FastMap;
use super::result::{Misconfiguration, SpreadReason};
use super::snapshot::Snapshot;

/// Plugin name used for spread policy misconfigurations.
pub(crate) const SPREAD: &str = "Spread";

/// Checks what the CRD schema would reject, for objects that did not go through it.
pub(crate) fn validate(terms: &[SpreadConstraintsTerm]) -> Result<(), Misconfiguration> {
    for (i, term) in terms.iter().enumerate() {
        if term.topology_key.is_empty() {
            return Err(Misconfiguration::new(
                SPREAD,
                format!("spreadConstraints[{i}].topologyKey must not be empty"),
            ));
        }
        if term.max_skew.unwrap_or(1) < 1 {
            return Err(Misconfiguration::new(
                SPREAD,
                format!("spreadConstraints[{i}].maxSkew must be at least 1"),
            ));
        }
    }
    Ok(())
}

/// What the spread selection produced.
pub(crate) struct Outcome {
    /// Selected positions, best-ranked first.
    pub(crate) selected: Vec<usize>,
    /// Feasible positions kept out by a hard constraint: (position, constraint, reason).
    pub(crate) rejected: Vec<(usize, usize, SpreadReason)>,
}

/// Rank of a feasible cluster: total descending, then position (name) ascending; smaller is
/// better.
type RankKey = (Reverse<i64>, usize);

/// Clusters sharing one domain per constraint: the domains, and the clusters not yet
/// selected in a min-heap by rank.
struct Group {
    domains: Vec<Option<u32>>,
    queue: BinaryHeap<Reverse<RankKey>>,
}

impl Group {
    fn head(&self) -> Option<RankKey> {
        self.queue.peek().map(|r| r.0)
    }
}

/// Per-constraint bookkeeping.
struct Constraint {
    hard: bool,
    max_skew: u32,
    /// Selected clusters per domain.
    counts: Vec<u32>,
    /// `hist[c]`: number of domains with `c` selected clusters.
    hist: Vec<u32>,
    min: u32,
    max: u32,
}

impl Constraint {
    fn new(hard: bool, max_skew: u32, domains: usize) -> Self {
        Constraint {
            hard,
            max_skew,
            counts: vec![0; domains],
            hist: vec![domains as u32],
            min: 0,
            max: 0,
        }
    }

    fn skew(&self) -> u32 {
        self.max - self.min
    }

    /// Skew after adding one cluster to `domain`.
    fn skew_after(&self, domain: Option<u32>) -> u32 {
        let Some(d) = domain else {
            return self.skew();
        };
        let c = self.counts[d as usize];
        let max = self.max.max(c + 1);
        let min = if c == self.min && self.hist[c as usize] == 1 {
            self.min + 1
        } else {
            self.min
        };
        max - min
    }

    fn excess_after(&self, domain: Option<u32>) -> u32 {
        self.skew_after(domain).saturating_sub(self.max_skew)
    }

    fn add(&mut self, domain: Option<u32>) {
        let Some(d) = domain else { return };
        let c = self.counts[d as usize];
        self.counts[d as usize] = c + 1;
        self.hist[c as usize] -= 1;
        if self.hist.len() <= (c + 1) as usize {
            self.hist.push(0);
        }
        self.hist[(c + 1) as usize] += 1;
        self.max = self.max.max(c + 1);
        while self.hist[self.min as usize] == 0 {
            self.min += 1;
        }
    }
}

/// Selects up to `wanted` of the feasible clusters (`feasible`: snapshot indices; `totals`:
/// their total scores).
pub(crate) fn select(
    terms: &[SpreadConstraintsTerm],
    snapshot: &Snapshot,
    feasible: &[u32],
    totals: &[i64],
    wanted: usize,
) -> Outcome {
    // Domain ids per constraint per position.
    let mut domains: Vec<Vec<Option<u32>>> = Vec::with_capacity(terms.len());
    let mut constraints = Vec::with_capacity(terms.len());
    for term in terms {
        let mut ids: FastMap<&str, u32> = FastMap::default();
        let column: Vec<Option<u32>> = feasible
            .iter()
            .map(|&i| {
                let entry = snapshot.entry(i);
                let value = match term.topology_key_type {
                    TopologyKeyType::Label => entry.label(&term.topology_key),
                    TopologyKeyType::Claim => entry.claim(&term.topology_key),
                }?;
                let next = ids.len() as u32;
                Some(*ids.entry(value).or_insert(next))
            })
            .collect();
        let hard = term.when_unsatisfiable == Some(UnsatisfiableMaxSkewAction::DoNotSchedule);
        let max_skew = term.max_skew.unwrap_or(1).max(1) as u32;
        constraints.push(Constraint::new(hard, max_skew, ids.len()));
        domains.push(column);
    }

    // Group the positions by their domain combination: the group id is built constraint by
    // constraint from (group so far, domain) pairs, without a key allocation per cluster.
    let mut rejected = Vec::new();
    let mut step: FastMap<(u32, u32), u32> = FastMap::default();
    let mut members: Vec<Vec<Reverse<RankKey>>> = Vec::new();
    let mut group_of_id: FastMap<u32, usize> = FastMap::default();
    let mut group_domains: Vec<Vec<Option<u32>>> = Vec::new();
    for pos in 0..feasible.len() {
        if let Some(k) =
            (0..terms.len()).find(|&k| constraints[k].hard && domains[k][pos].is_none())
        {
            rejected.push((pos, k, SpreadReason::MissingTopologyKey));
            continue;
        }
        let mut id = 0u32;
        for column in &domains {
            let d = column[pos].unwrap_or(u32::MAX);
            let next = step.len() as u32 + 1;
            id = *step.entry((id, d)).or_insert(next);
        }
        let g = *group_of_id.entry(id).or_insert_with(|| {
            group_domains.push(domains.iter().map(|column| column[pos]).collect());
            members.push(Vec::new());
            members.len() - 1
        });
        members[g].push(Reverse((Reverse(totals[pos]), pos)));
    }
    let mut groups: Vec<Group> = group_domains
        .into_iter()
        .zip(members)
        .map(|(domains, queue)| Group {
            domains,
            queue: BinaryHeap::from(queue),
        })
        .collect();
    let mut heads: BTreeSet<(RankKey, usize)> = groups
        .iter()
        .enumerate()
        .filter_map(|(g, group)| group.head().map(|rank| (rank, g)))
        .collect();

    let mut selected: Vec<RankKey> = Vec::new();
    while selected.len() < wanted && !heads.is_empty() {
        let mut best: Option<(Vec<u32>, RankKey, usize)> = None;
        for &(rank, g) in &heads {
            let key = &groups[g].domains;
            let hard_ok = constraints
                .iter()
                .zip(key)
                .all(|(c, d)| !c.hard || c.skew_after(*d) <= c.max_skew);
            if !hard_ok {
                continue;
            }
            let excess: Vec<u32> = constraints
                .iter()
                .zip(key)
                .filter(|(c, _)| !c.hard)
                .map(|(c, d)| c.excess_after(*d))
                .collect();
            let clean = excess.iter().all(|&e| e == 0);
            let better = best.as_ref().is_none_or(|(e, _, _)| excess < *e);
            if better {
                best = Some((excess, rank, g));
            }
            if clean {
                break;
            }
        }
        let Some((_, rank, g)) = best else { break };
        heads.remove(&(rank, g));
        let group = &mut groups[g];
        group.queue.pop();
        if let Some(next) = group.head() {
            heads.insert((next, g));
        }
        for (c, d) in constraints.iter_mut().zip(&group.domains) {
            c.add(*d);
        }
        selected.push(rank);
    }

    // What is left was kept out by a hard constraint only if the wanted count was not reached.
    if selected.len() < wanted {
        for &(_, g) in &heads {
            let key = &groups[g].domains;
            let blocking = constraints
                .iter()
                .zip(key)
                .position(|(c, d)| c.hard && c.skew_after(*d) > c.max_skew);
            if let Some(k) = blocking {
                for Reverse((_, pos)) in groups[g].queue.iter() {
                    rejected.push((*pos, k, SpreadReason::WouldExceedMaxSkew));
                }
            }
        }
    }
    selected.sort_unstable();
    rejected.sort_unstable_by_key(|r| r.0);
    Outcome {
        selected: selected.into_iter().map(|(_, pos)| pos).collect(),
        rejected,
    }
}
