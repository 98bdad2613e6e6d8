//! Which AppliedManifestWorks the sweep finishes, marks for eviction, unmarks or evicts, as a
//! pure function of one record and what the agent knows ([`decide`]).
//!
//! Rules (upstream's "unmanaged AppliedManifestWork" eviction):
//! - A record is this agent's when it names the agent's current hub (`spec.hubHash`) or the
//!   agent's id (`spec.agentID`): the id stays the same when the agent moves to another hub
//!   (upstream's MultipleHubs), so the records of the hub it left are still its own. Records
//!   of other agents (another Klusterlet on the same cluster) are left alone.
//! - A record is unmanaged when it names another hub, or when its ManifestWork is gone from
//!   the current hub. It is marked (`status.evictionStartTime`) when first seen unmanaged and
//!   deleted once the grace period has passed since the mark; a record that is managed again
//!   before that (the agent back on its hub, the ManifestWork re-created) is unmarked.
//! - A grace period of [`EVICTION_DISABLED_FROM`] or more turns eviction off: nothing is
//!   marked, and marks are cleared.
//! - A record being deleted is finished: what it alone owns is deleted, its claim on shared
//!   objects released, then its finalizer removed.

use std::time::Duration;

use ocm_api::work::v1::AppliedManifestWork;

/// A grace period this long or longer turns eviction off (upstream's bound: 100 years).
pub(crate) const EVICTION_DISABLED_FROM: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// The agent's side of a decision: whom it serves and how patient it is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Agent<'a> {
    /// Hash of the hub the agent works for now.
    pub(crate) hub_hash: &'a str,
    /// The agent's id (the same on every hub).
    pub(crate) agent_id: &'a str,
    /// How long an unmanaged record is kept after it was marked.
    pub(crate) grace: Duration,
}

/// What the sweep does with one AppliedManifestWork.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Another agent's record, or nothing to change.
    Nothing,
    /// Being deleted: release what it applied and remove its finalizer.
    FinishDeletion,
    /// Unmanaged and not marked yet: set `status.evictionStartTime` to now.
    Mark,
    /// Managed (again), or eviction turned off, but marked: clear the mark.
    Unmark,
    /// Unmanaged for the whole grace period: delete it.
    Evict,
}

/// Whether `amw` is this agent's record.
pub(crate) fn ours(amw: &AppliedManifestWork, agent: Agent<'_>) -> bool {
    amw.spec.hub_hash == agent.hub_hash || amw.spec.agent_id == agent.agent_id
}

/// What to do with `amw` at `now`. `work_on_hub`: whether its ManifestWork exists on the
/// current hub (only asked for records of the current hub; others are unmanaged anyway).
pub(crate) fn decide(
    amw: &AppliedManifestWork,
    agent: Agent<'_>,
    work_on_hub: bool,
    now: jiff::Timestamp,
) -> Action {
    if !ours(amw, agent) {
        return Action::Nothing;
    }
    if amw.metadata.deletion_timestamp.is_some() {
        return Action::FinishDeletion;
    }
    let marked = amw
        .status
        .as_ref()
        .and_then(|s| s.eviction_start_time.as_ref())
        .map(|t| t.0);
    let unmanaged = amw.spec.hub_hash != agent.hub_hash || !work_on_hub;
    let evicting = unmanaged && agent.grace < EVICTION_DISABLED_FROM;
    match (evicting, marked) {
        (false, Some(_)) => Action::Unmark,
        (false, None) => Action::Nothing,
        (true, None) => Action::Mark,
        (true, Some(since)) if grace_over(since, now, agent.grace) => Action::Evict,
        (true, Some(_)) => Action::Nothing,
    }
}

/// Whether `grace` has passed from `since` to `now` (a mark in the future has not).
fn grace_over(since: jiff::Timestamp, now: jiff::Timestamp, grace: Duration) -> bool {
    Duration::try_from(now.duration_since(since)).is_ok_and(|elapsed| elapsed >= grace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use ocm_api::work::v1::{AppliedManifestWorkSpec, AppliedManifestWorkStatus};

    const HUB_A: &str = "aaaa";
    const HUB_B: &str = "bbbb";
    const MINUTE: Duration = Duration::from_secs(60);

    fn at(minutes: i64) -> jiff::Timestamp {
        jiff::Timestamp::UNIX_EPOCH + jiff::SignedDuration::from_mins(minutes)
    }

    fn record(hub: &str, agent_id: &str, marked_at: Option<i64>) -> AppliedManifestWork {
        let mut amw = AppliedManifestWork::new(
            &format!("{hub}-app"),
            AppliedManifestWorkSpec {
                hub_hash: hub.into(),
                agent_id: agent_id.into(),
                manifest_work_name: "app".into(),
            },
        );
        amw.status = Some(AppliedManifestWorkStatus {
            eviction_start_time: marked_at.map(|m| Time(at(m))),
            ..Default::default()
        });
        amw
    }

    fn on(hub: &str, grace: Duration) -> Agent<'_> {
        Agent {
            hub_hash: hub,
            agent_id: "agent-1",
            grace,
        }
    }

    /// A record of hub A, unmanaged for an agent on `agent_hub` with a grace of `minutes`: marked
    /// when first seen, kept until the grace is over, then evicted.
    fn marked_then_evicted(agent_hub: &str, minutes: u32, work_on_hub: bool) {
        let agent = on(agent_hub, minutes * MINUTE);
        let fresh = record(HUB_A, "agent-1", None);
        assert_eq!(decide(&fresh, agent, work_on_hub, at(0)), Action::Mark);
        let marked = record(HUB_A, "agent-1", Some(0));
        let grace = i64::from(minutes);
        assert_eq!(
            decide(&marked, agent, work_on_hub, at(grace - 1)),
            Action::Nothing
        );
        assert_eq!(
            decide(&marked, agent, work_on_hub, at(grace)),
            Action::Evict
        );
        assert_eq!(
            decide(&marked, agent, work_on_hub, at(grace * 10)),
            Action::Evict
        );
    }

    #[test]
    fn a_record_of_the_hub_the_agent_left_is_marked_then_evicted_after_the_grace() {
        // Whether A's work exists says nothing: the agent no longer serves A.
        marked_then_evicted(HUB_B, 60, true);
        marked_then_evicted(HUB_B, 60, false);
    }

    #[test]
    fn back_on_its_hub_before_the_grace_the_agent_unmarks_the_record() {
        let marked = record(HUB_A, "agent-1", Some(0));
        assert_eq!(
            decide(&marked, on(HUB_A, 60 * MINUTE), true, at(30)),
            Action::Unmark
        );
        let unmarked = record(HUB_A, "agent-1", None);
        assert_eq!(
            decide(&unmarked, on(HUB_A, 60 * MINUTE), true, at(30)),
            Action::Nothing
        );
    }

    #[test]
    fn a_record_whose_work_left_the_current_hub_is_evicted_after_the_grace() {
        marked_then_evicted(HUB_A, 10, false);
        // The work re-created in time: unmarked.
        let marked = record(HUB_A, "agent-1", Some(0));
        assert_eq!(
            decide(&marked, on(HUB_A, 10 * MINUTE), true, at(9)),
            Action::Unmark
        );
    }

    #[test]
    fn records_of_the_current_hub_are_ours_whatever_agent_id_they_name() {
        // Written by an agent with another id (an older default): still this hub's record.
        let legacy = record(HUB_A, HUB_A, None);
        assert_eq!(
            decide(&legacy, on(HUB_A, MINUTE), false, at(0)),
            Action::Mark
        );
    }

    #[test]
    fn another_agents_records_are_left_alone() {
        let agent = on(HUB_B, MINUTE);
        let theirs = record(HUB_A, "agent-2", Some(0));
        assert_eq!(decide(&theirs, agent, false, at(600)), Action::Nothing);
        let mut deleting = record(HUB_A, "agent-2", None);
        deleting.metadata.deletion_timestamp = Some(Time(at(0)));
        assert_eq!(decide(&deleting, agent, false, at(1)), Action::Nothing);
    }

    #[test]
    fn a_record_being_deleted_is_finished() {
        for hub in [HUB_A, HUB_B] {
            let mut deleting = record(hub, "agent-1", Some(0));
            deleting.metadata.deletion_timestamp = Some(Time(at(1)));
            assert_eq!(
                decide(&deleting, on(HUB_B, MINUTE), true, at(2)),
                Action::FinishDeletion
            );
        }
    }

    #[test]
    fn a_grace_of_a_hundred_years_turns_eviction_off() {
        let agent = on(HUB_B, EVICTION_DISABLED_FROM);
        let fresh = record(HUB_A, "agent-1", None);
        assert_eq!(decide(&fresh, agent, false, at(0)), Action::Nothing);
        let marked = record(HUB_A, "agent-1", Some(0));
        assert_eq!(decide(&marked, agent, false, at(1)), Action::Unmark);
        let just_below = on(HUB_B, EVICTION_DISABLED_FROM - Duration::from_secs(1));
        assert_eq!(decide(&fresh, just_below, false, at(0)), Action::Mark);
    }

    #[test]
    fn a_mark_in_the_future_is_not_over() {
        let marked = record(HUB_A, "agent-1", Some(10));
        assert_eq!(
            decide(&marked, on(HUB_B, Duration::ZERO), true, at(5)),
            Action::Nothing
        );
        assert_eq!(
            decide(&marked, on(HUB_B, Duration::ZERO), true, at(10)),
            Action::Evict
        );
    }
}
