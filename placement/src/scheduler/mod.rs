//! The pure scheduler core: given a [`Snapshot`] of the hub's objects, decide which clusters a
//! Placement selects, how they are grouped and paged into PlacementDecisions, and what the
//! Placement's status says. No I/O, no clock (the snapshot carries `now`), no async.
//!
//! # Algorithm
//!
//! [`schedule`] follows upstream OCM's scheduler step by step:
//!
//! 1. **Skip** placements being deleted or annotated
//!    `cluster.open-cluster-management.io/experimental-scheduling-disable: "true"`.
//! 2. **Eligible sets**: the ManagedClusterSetBindings of the placement's namespace whose set
//!    exists (the binding's `Bound` condition is not consulted, as upstream), intersected
//!    with `spec.clusterSets` when it is not empty. **Candidates**: the members of those sets
//!    (by the exclusive set label, or by the set's label selector — a missing selector selects
//!    nothing, an empty one everything), without clusters that have a deletion timestamp.
//! 3. **Predicate filter** (only when there are predicates and candidates): a cluster passes
//!    when any predicate matches; a predicate matches when its label selector, its claim
//!    selector (over `status.clusterClaims`) and each of its CEL expressions match (see
//!    `cel` below). Invalid selectors and CEL compile errors make the placement
//!    Misconfigured (`Predicate:<error>`), with Kubernetes' messages for selectors.
//! 4. **TaintToleration filter** (only when clusters are left): tolerations are validated
//!    (`TaintToleration:If the key is empty, operator must be Exists.`,
//!    `TaintToleration:If the operator is Exists, the value should be empty.`), then each
//!    taint must be tolerated: `PreferNoSelect` always is, `NoSelectIfNew` is when the
//!    cluster is already in this placement's decisions, anything else needs a matching
//!    toleration whose `tolerationSeconds` (from the taint's `timeAdded`) have not run out.
//! 5. **Prioritizers** with their weights and scores, see [`score`](self#scores) below.
//! 6. **Selection**: sort by total score descending, then by name; take the first
//!    `numberOfClusters` (all when unset). With a `spreadPolicy`, see
//!    [spread](self#spread-policy) below.
//! 7. **Decision groups** and **PlacementDecisions** (pages of at most 100 clusters).
//! 8. **Status**: `numberOfSelectedClusters`, `decisionGroups`, and the conditions
//!    `PlacementMisconfigured` then `PlacementSatisfied`, merged into the existing ones.
//!
//! A misconfiguration in steps 3–5 stops scheduling: nothing is selected, one empty decision
//! group and one empty PlacementDecision are written (as upstream).
//!
//! # Scores
//!
//! In mode `Additive` (default) `Balance` and `Steady` run with weight 1 unless configured
//! otherwise; in mode `Exact` only the configured prioritizers run. Weights are −10..10 (0
//! disables). `Balance` = `2 × trunc(100 × (0.5 − n/max))` for a cluster with `n` decisions
//! of other placements (100 when `n = 0`); `Steady` = 100 for clusters already selected;
//! `ResourceAllocatableCPU`/`Memory` = `trunc(((a − min)/(max − min) − 0.5) × 200)` over the
//! feasible clusters (100 when all equal); `AddOn` = the AddOnPlacementScore value (0 when
//! missing or past `validUntil`). The `Spread` built-in is Misconfigured as upstream — spread
//! is expressed with `spreadPolicy`.
//!
//! # Spread policy
//!
//! Upstream has the API but no implementation. Here, each constraint's domains are the values
//! of its topology key (label or claim) among the feasible clusters; clusters are picked one
//! at a time in rank order, skipping those that would break a `DoNotSchedule` constraint's
//! `maxSkew` and preferring those that keep `ScheduleAnyway` constraints within theirs. See
//! the `spread` module source documentation for the exact procedure.
//!
//! # Requeue
//!
//! [`ScheduleResult::requeue_at`] is the earliest toleration expiry among the clusters that
//! passed thanks to a toleration with `tolerationSeconds`, and the earliest future
//! `validUntil` of the AddOnPlacementScores used for scoring.
//!
//! # Deviations from upstream
//!
//! - Upstream requeues only for the tolerations of clusters already in the decisions and
//!   never for `validUntil`; here both are requeue times (the result then changes by the
//!   clock alone, so the controller must look again).
//! - `NotAllDecisionsScheduled` also counts clusters a `DoNotSchedule` spread constraint
//!   kept out when `numberOfClusters` is unset (upstream has no spread).
//! - Orders upstream leaves to Go map iteration (order of prioritizer results, which of
//!   several misconfigured prioritizers is reported, clusters in the expired-score warning)
//!   are fixed here: spec order and cluster name order.
//! - A negative `numberOfClusters` (which crashes upstream's slice expression) selects
//!   nothing.
//! - A set whose label selector is invalid selects no cluster (upstream fails the whole
//!   reconcile and retries).
//! - CEL: see the `cel` module (static checks are narrower than cel-go's type checker; there
//!   is no cost limit; `scores()` returns `{name, value}` as upstream does; `managedCluster`
//!   lacks `metadata.managedFields`).
//!
//! # Cost
//!
//! [`Snapshot::new`] indexes everything once (set membership, claims, allocatable resources,
//! decision counts, score objects); a schedule is then linear in the candidate clusters of the
//! placement and allocates a few vectors of that length. CEL predicates are the expensive part
//! (a few microseconds per cluster and expression, through the `cel` crate's interpreter).

mod cel;
mod decisions;
mod explain;
mod fast_hash;
pub(crate) mod filter;
mod groups;
mod quantity;
mod result;
mod schedule;
mod score;
mod scores;
mod select;
mod selector;
mod snapshot;
mod spread;
mod status;
mod taints;

pub use decisions::{decision_name, owner_reference};
pub use explain::{
    ClusterExplanation, ClusterVerdict, Explanation, PredicateMiss, PredicatePart,
    PrioritizerScore, ScoredOutcome, explain,
};
pub use result::{
    ClusterName, DecisionGroupResult, FilterReason, FilteredCluster, Misconfiguration,
    PrioritizerInfo, Ranking, ScheduleResult, SelectedCluster, SkipReason, SpreadReason,
    SpreadRejection, TaintRejection, Warning,
};
pub use schedule::schedule;
pub use selector::{Requirement, Selector};
pub use snapshot::{Snapshot, SnapshotInput};
pub use status::merge_conditions;
