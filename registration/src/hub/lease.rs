//! Cluster availability from the agent's heartbeat (upstream's hub lease and clock-sync
//! controllers).
//!
//! For every ManagedCluster that was ever accepted (it has a `HubAcceptedManagedCluster`
//! condition):
//! - the Lease `managed-cluster-lease` in its namespace is created when missing (label
//!   `open-cluster-management.io/cluster-name`, holderIdentity `managed-cluster-lease`,
//!   renewTime now), unless the cluster is being deleted;
//! - when `now >= renewTime + grace` (grace = [`HubOptions::lease_grace_multiplier`] ×
//!   `leaseDurationSeconds`, a duration of 0 counting as 60 s), or the Lease is gone while the
//!   cluster is deleting, `ManagedClusterConditionAvailable` becomes Unknown with reason
//!   `ManagedClusterLeaseUpdateStopped`. A fresh Lease is looked at again exactly when it
//!   expires; recovery is seen through the Lease watch;
//! - each time the agent renews the Lease, `ManagedClusterConditionClockSynced` is True when
//!   hub time and renewTime are less than the grace period apart, else False
//!   (`ManagedClusterClockOutOfSync`); the annotation
//!   `registration.open-cluster-management.io/skip-clock-sync-check: "true"` keeps it True.
//!
//! Setting Available back to True is the agent's job.
//!
//! [`HubOptions::lease_grace_multiplier`]: super::HubOptions::lease_grace_multiplier

use ocm_runtime::cache::SharedCache;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, MicroTime, ObjectMeta};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use ocm_api::cluster::names::MANAGED_CLUSTER_LEASE;
use ocm_api::cluster::names::annotations::SKIP_CLOCK_SYNC_CHECK;
use ocm_api::cluster::names::conditions::{
    AVAILABLE, CLOCK_SYNCED, HUB_ACCEPTED, available, clock_synced,
};
use ocm_api::cluster::names::labels::CLUSTER_NAME;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_runtime::conditions::{condition, find_condition, set_condition};
use serde_json::json;
use tracing::{debug, info};

use super::HubContext;

const CONTROLLER: &str = "managed-cluster-lease";

/// `leaseDurationSeconds` used when a cluster's is unset or 0.
pub(crate) const DEFAULT_LEASE_DURATION_SECONDS: u64 = 60;

/// Upstream's grace multiplier, used when the option is 0.
const DEFAULT_GRACE_MULTIPLIER: u32 = 5;

/// Message of Available=Unknown.
pub(crate) const LEASE_STOPPED_MESSAGE: &str = "Registration agent stopped updating its lease.";
/// Message of ClockSynced=True.
const CLOCK_SYNCED_MESSAGE: &str = "The clock of the managed cluster is synced with the hub.";
/// Message of ClockSynced=False.
const CLOCK_OUT_OF_SYNC_MESSAGE: &str = "The clock of hub and agent is out of sync. This may cause the Unknown status and affect agent functionalities.";

pub(crate) use super::error::{HubError as HealthError, has_code};

/// A stream that ticks every `period` (not immediately), for full resyncs.
pub(crate) fn ticks(period: Duration) -> impl futures::Stream<Item = ()> + Send + 'static {
    let period = period.max(Duration::from_secs(1));
    futures::stream::unfold((), move |()| async move {
        tokio::time::sleep(period).await;
        Some(((), ()))
    })
}

/// Delay before retrying a failed reconcile.
pub(crate) const RETRY: Duration = Duration::from_secs(1);

/// Writes `conditions` as the cluster's status conditions, guarded by its resourceVersion
/// (a stale cluster gives a 409 and a retry).
pub(crate) async fn write_cluster_conditions(
    api: &Api<ManagedCluster>,
    cluster: &ManagedCluster,
    conditions: &[Condition],
) -> Result<ManagedCluster, HealthError> {
    let patch = json!({
        "metadata": { "resourceVersion": cluster.meta().resource_version },
        "status": { "conditions": conditions },
    });
    api.patch_status(
        &cluster.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .map_err(|e| HealthError::kube(format!("update status of {}", cluster.name_any()), e))
}

/// The grace period after the last renewal before a cluster counts as gone.
pub(crate) fn grace_period(lease_duration_seconds: Option<i32>, multiplier: u32) -> Duration {
    let secs = lease_duration_seconds
        .and_then(|s| u64::try_from(s).ok())
        .filter(|s| *s > 0)
        .unwrap_or(DEFAULT_LEASE_DURATION_SECONDS);
    let multiplier = if multiplier == 0 {
        DEFAULT_GRACE_MULTIPLIER
    } else {
        multiplier
    };
    Duration::from_secs(secs.saturating_mul(u64::from(multiplier)))
}

/// What the hub knows of a cluster's Lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LeaseSeen {
    /// No Lease.
    Missing,
    /// A Lease with this renewTime (none = never renewed).
    Present(Option<Timestamp>),
}

/// What to do about a cluster's availability.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LeaseDecision {
    /// Never accepted: nothing to do.
    Skip,
    /// The Lease is missing: create it.
    CreateLease,
    /// Set Available to Unknown; look again after `requeue`, if any.
    MarkUnknown {
        /// When to look again.
        requeue: Option<Duration>,
    },
    /// The Lease is fresh; look again exactly when it expires.
    Fresh {
        /// Time left until expiry.
        requeue: Duration,
    },
}

/// Whether the cluster was ever accepted (it has a `HubAcceptedManagedCluster` condition).
pub(crate) fn ever_accepted(cluster: &ManagedCluster) -> bool {
    let conditions = cluster
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    find_condition(conditions, HUB_ACCEPTED).is_some()
}

/// The availability decision for `cluster` with its Lease `lease` at `now`.
pub(crate) fn decide(
    cluster: &ManagedCluster,
    lease: LeaseSeen,
    now: Timestamp,
    multiplier: u32,
) -> LeaseDecision {
    if !ever_accepted(cluster) {
        return LeaseDecision::Skip;
    }
    let renew_time = match lease {
        LeaseSeen::Missing if cluster.metadata.deletion_timestamp.is_some() => {
            return LeaseDecision::MarkUnknown { requeue: None };
        }
        LeaseSeen::Missing => return LeaseDecision::CreateLease,
        LeaseSeen::Present(renew_time) => renew_time,
    };
    let grace = grace_period(cluster.spec.lease_duration_seconds, multiplier);
    let expiry = renew_time.and_then(|t| t.checked_add(grace).ok());
    match expiry {
        Some(expiry) if now < expiry => {
            let left = now
                .duration_until(expiry)
                .try_into()
                .unwrap_or(Duration::ZERO);
            LeaseDecision::Fresh { requeue: left }
        }
        _ => LeaseDecision::MarkUnknown {
            requeue: Some(grace),
        },
    }
}

/// The conditions with Available set to Unknown, or `None` when it already is Unknown.
pub(crate) fn with_available_unknown(conditions: &[Condition]) -> Option<Vec<Condition>> {
    if find_condition(conditions, AVAILABLE).is_some_and(|c| c.status == "Unknown") {
        return None;
    }
    let mut out = conditions.to_vec();
    set_condition(
        &mut out,
        condition(
            AVAILABLE,
            "Unknown",
            available::LEASE_UPDATE_STOPPED,
            LEASE_STOPPED_MESSAGE,
            None,
        ),
    );
    Some(out)
}

/// The ClockSynced condition for a renewal at `renew_time` seen at `now`.
pub(crate) fn clock_condition(
    cluster: &ManagedCluster,
    renew_time: Timestamp,
    now: Timestamp,
    multiplier: u32,
) -> Condition {
    let grace = grace_period(cluster.spec.lease_duration_seconds, multiplier);
    let skew: Duration = if now >= renew_time {
        renew_time.duration_until(now)
    } else {
        now.duration_until(renew_time)
    }
    .try_into()
    .unwrap_or(Duration::MAX);
    let skip = cluster
        .annotations()
        .get(SKIP_CLOCK_SYNC_CHECK)
        .is_some_and(|v| v == "true");
    if skew < grace || skip {
        condition(
            CLOCK_SYNCED,
            "True",
            clock_synced::SYNCED,
            CLOCK_SYNCED_MESSAGE,
            None,
        )
    } else {
        condition(
            CLOCK_SYNCED,
            "False",
            clock_synced::OUT_OF_SYNC,
            CLOCK_OUT_OF_SYNC_MESSAGE,
            None,
        )
    }
}

/// The conditions with `clock` set, or `None` when ClockSynced already has its status.
pub(crate) fn with_clock(conditions: &[Condition], clock: Condition) -> Option<Vec<Condition>> {
    if find_condition(conditions, CLOCK_SYNCED).is_some_and(|c| c.status == clock.status) {
        return None;
    }
    let mut out = conditions.to_vec();
    set_condition(&mut out, clock);
    Some(out)
}

/// The Lease the hub creates for a cluster.
pub(crate) fn initial_lease(cluster: &str, now: Timestamp) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: Some(MANAGED_CLUSTER_LEASE.to_owned()),
            namespace: Some(cluster.to_owned()),
            labels: Some([(CLUSTER_NAME.to_owned(), cluster.to_owned())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(MANAGED_CLUSTER_LEASE.to_owned()),
            renew_time: Some(MicroTime(now)),
            ..LeaseSpec::default()
        }),
    }
}

/// What the Lease watch (or the last read) showed of one cluster's Lease.
#[derive(Clone, Debug)]
struct Entry {
    renew_time: Option<Timestamp>,
    resource_version: String,
    /// The agent renewed since the last clock check.
    clock_check: bool,
}

/// Cluster leases as the Lease watch shows them, keyed by cluster name.
#[derive(Default)]
struct LeaseCache {
    entries: Mutex<HashMap<String, Entry>>,
}

impl LeaseCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a Lease event and names the cluster to look at.
    fn observe(&self, lease: &Lease) -> Option<ObjectRef<ManagedCluster>> {
        if lease.name_any() != MANAGED_CLUSTER_LEASE {
            return None;
        }
        let cluster = lease.labels().get(CLUSTER_NAME)?.clone();
        if cluster.is_empty() || lease.namespace().as_deref() != Some(cluster.as_str()) {
            return None;
        }
        let renew_time = lease
            .spec
            .as_ref()
            .and_then(|s| s.renew_time.as_ref())
            .map(|t| t.0);
        let rv = lease.resource_version().unwrap_or_default();
        let mut entries = self.lock();
        match entries.get_mut(&cluster) {
            Some(prev) => {
                if prev.renew_time != renew_time {
                    prev.clock_check = true;
                }
                prev.renew_time = renew_time;
                prev.resource_version = rv;
            }
            None => {
                entries.insert(
                    cluster.clone(),
                    Entry {
                        renew_time,
                        resource_version: rv,
                        clock_check: false,
                    },
                );
            }
        }
        Some(ObjectRef::new(&cluster))
    }

    fn get(&self, cluster: &str) -> Option<Entry> {
        self.lock().get(cluster).cloned()
    }

    fn set(&self, cluster: &str, lease: &Lease) {
        let renew_time = lease
            .spec
            .as_ref()
            .and_then(|s| s.renew_time.as_ref())
            .map(|t| t.0);
        let mut entries = self.lock();
        let clock_check = entries.get(cluster).is_some_and(|e| e.clock_check);
        entries.insert(
            cluster.to_owned(),
            Entry {
                renew_time,
                resource_version: lease.resource_version().unwrap_or_default(),
                clock_check,
            },
        );
    }

    fn forget(&self, cluster: &str) {
        self.lock().remove(cluster);
    }

    /// Whether a clock check of `cluster` is pending.
    fn clock_check_pending(&self, cluster: &str) -> bool {
        self.lock().get(cluster).is_some_and(|e| e.clock_check)
    }

    /// Marks the pending clock check of `cluster` as done.
    fn clock_checked(&self, cluster: &str) {
        if let Some(e) = self.lock().get_mut(cluster) {
            e.clock_check = false;
        }
    }

    /// Takes the pending clock check of `cluster`.
    #[cfg(test)]
    fn take_clock_check(&self, cluster: &str) -> bool {
        let pending = self.clock_check_pending(cluster);
        self.clock_checked(cluster);
        pending
    }
}

struct LeaseCtx {
    hub: Arc<HubContext>,
    cache: Arc<LeaseCache>,
}

/// Reads a cluster's Lease from the server into the cache.
async fn read_lease(ctx: &LeaseCtx, cluster: &str) -> Result<LeaseSeen, HealthError> {
    let api: Api<Lease> = Api::namespaced(ctx.hub.client.clone(), cluster);
    match api.get_opt(MANAGED_CLUSTER_LEASE).await {
        Ok(Some(lease)) => {
            ctx.cache.set(cluster, &lease);
            Ok(LeaseSeen::Present(
                lease.spec.and_then(|s| s.renew_time).map(|t| t.0),
            ))
        }
        Ok(None) => {
            ctx.cache.forget(cluster);
            Ok(LeaseSeen::Missing)
        }
        Err(e) => Err(HealthError::kube(format!("get lease of {cluster}"), e)),
    }
}

async fn reconcile(
    cluster: Arc<ManagedCluster>,
    ctx: Arc<LeaseCtx>,
) -> Result<Action, HealthError> {
    ctx.hub.metrics.reconciled(CONTROLLER);
    let name = cluster.name_any();
    let multiplier = ctx.hub.options.lease_grace_multiplier;
    let now = Timestamp::now();
    if !ever_accepted(&cluster) {
        return Ok(Action::await_change());
    }
    // The watch cannot tell a deleted Lease from an unchanged one: read it from the server
    // when the cache has none, when the cluster is being deleted, and before declaring it gone.
    let cached = ctx
        .cache
        .get(&name)
        .filter(|_| cluster.metadata.deletion_timestamp.is_none());
    let mut seen = match &cached {
        Some(entry) => LeaseSeen::Present(entry.renew_time),
        None => read_lease(&ctx, &name).await?,
    };
    let mut decision = decide(&cluster, seen, now, multiplier);
    if matches!(decision, LeaseDecision::MarkUnknown { .. }) && cached.is_some() {
        // Confirm with the server before declaring the cluster gone.
        seen = read_lease(&ctx, &name).await?;
        decision = decide(&cluster, seen, Timestamp::now(), multiplier);
    }
    let conditions = cluster
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let mut desired = conditions.clone();
    let clock_check = ctx.cache.clock_check_pending(&name);
    if clock_check
        && let LeaseSeen::Present(Some(renew_time)) = seen
        && let Some(next) = with_clock(
            &desired,
            clock_condition(&cluster, renew_time, now, multiplier),
        )
    {
        desired = next;
    }
    let action = match decision {
        LeaseDecision::Skip => Action::await_change(),
        LeaseDecision::CreateLease => {
            let api: Api<Lease> = Api::namespaced(ctx.hub.client.clone(), &name);
            match api
                .create(
                    &PostParams::default(),
                    &initial_lease(&name, Timestamp::now()),
                )
                .await
            {
                Ok(lease) => {
                    debug!(cluster = %name, "created cluster lease");
                    ctx.cache.set(&name, &lease);
                }
                // Already there, or the namespace is not there yet: look again soon.
                Err(e) if has_code(&e, 409) || has_code(&e, 404) => {
                    return Ok(Action::requeue(RETRY));
                }
                Err(e) => return Err(HealthError::kube(format!("create lease of {name}"), e)),
            }
            Action::requeue(grace_period(
                cluster.spec.lease_duration_seconds,
                multiplier,
            ))
        }
        LeaseDecision::MarkUnknown { requeue } => {
            if let Some(next) = with_available_unknown(&desired) {
                info!(cluster = %name, "cluster lease expired; availability unknown");
                desired = next;
            }
            requeue.map_or_else(Action::await_change, Action::requeue)
        }
        LeaseDecision::Fresh { requeue } => Action::requeue(requeue),
    };
    if desired != conditions {
        let api: Api<ManagedCluster> = Api::all(ctx.hub.client.clone());
        write_cluster_conditions(&api, &cluster, &desired).await?;
    }
    if clock_check {
        ctx.cache.clock_checked(&name);
    }
    Ok(action)
}

fn error_policy(_cluster: Arc<ManagedCluster>, err: &HealthError, ctx: Arc<LeaseCtx>) -> Action {
    super::error::retry_after(&ctx.hub.metrics, CONTROLLER, err, RETRY)
}

/// Runs the lease controller until `ctx.shutdown` is cancelled.
pub(crate) async fn run(ctx: Arc<HubContext>, clusters: SharedCache<ManagedCluster>) {
    let client = ctx.client.clone();
    let cache = Arc::new(LeaseCache::default());
    let observer = cache.clone();
    let controller = clusters
        .controller()
        .with_config(kube::runtime::controller::Config::default().concurrency(4))
        .watches(
            Api::<Lease>::all(client),
            watcher::Config::default()
                .labels(CLUSTER_NAME)
                .any_semantic(),
            move |lease| observer.observe(&lease),
        )
        .reconcile_all_on(ticks(ctx.options.resync))
        .run(
            reconcile,
            error_policy,
            Arc::new(LeaseCtx {
                hub: ctx.clone(),
                cache,
            }),
        )
        .for_each(|_| futures::future::ready(()));
    tokio::select! {
        () = controller => {}
        () = ctx.shutdown.cancelled() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use ocm_api::cluster::v1::{ManagedClusterSpec, ManagedClusterStatus};

    fn ts(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).unwrap()
    }

    fn cluster(accepted: bool, lease_secs: Option<i32>) -> ManagedCluster {
        let mut c = ManagedCluster::new(
            "c1",
            ManagedClusterSpec {
                hub_accepts_client: accepted,
                lease_duration_seconds: lease_secs,
                ..ManagedClusterSpec::default()
            },
        );
        if accepted {
            c.status = Some(ManagedClusterStatus {
                conditions: vec![condition(
                    HUB_ACCEPTED,
                    "True",
                    "HubClusterAdminAccepted",
                    "",
                    None,
                )],
                ..ManagedClusterStatus::default()
            });
        }
        c
    }

    #[test]
    fn grace_is_multiplier_times_duration_with_defaults() {
        assert_eq!(grace_period(Some(60), 5), Duration::from_secs(300));
        assert_eq!(grace_period(Some(0), 5), Duration::from_secs(300));
        assert_eq!(grace_period(None, 2), Duration::from_secs(120));
        assert_eq!(grace_period(Some(1), 2), Duration::from_secs(2));
        assert_eq!(grace_period(Some(10), 0), Duration::from_secs(50));
        assert_eq!(grace_period(Some(-3), 1), Duration::from_secs(60));
    }

    #[test]
    fn never_accepted_clusters_are_skipped() {
        let c = cluster(false, Some(60));
        assert_eq!(
            decide(&c, LeaseSeen::Missing, ts(1000), 5),
            LeaseDecision::Skip
        );
        assert_eq!(
            decide(&c, LeaseSeen::Present(None), ts(1000), 5),
            LeaseDecision::Skip
        );
    }

    #[test]
    fn missing_leases_are_created_unless_the_cluster_is_deleting() {
        let mut c = cluster(true, Some(60));
        assert_eq!(
            decide(&c, LeaseSeen::Missing, ts(1000), 5),
            LeaseDecision::CreateLease
        );
        c.metadata.deletion_timestamp = Some(Time(ts(900)));
        assert_eq!(
            decide(&c, LeaseSeen::Missing, ts(1000), 5),
            LeaseDecision::MarkUnknown { requeue: None }
        );
    }

    #[test]
    fn expiry_is_exact_and_requeues_at_it() {
        let c = cluster(true, Some(10));
        // grace = 50 s: renewed at 1000 → fresh until 1050 exclusive.
        assert_eq!(
            decide(&c, LeaseSeen::Present(Some(ts(1000))), ts(1020), 5),
            LeaseDecision::Fresh {
                requeue: Duration::from_secs(30)
            }
        );
        assert_eq!(
            decide(&c, LeaseSeen::Present(Some(ts(1000))), ts(1050), 5),
            LeaseDecision::MarkUnknown {
                requeue: Some(Duration::from_secs(50))
            }
        );
        assert_eq!(
            decide(&c, LeaseSeen::Present(None), ts(1050), 5),
            LeaseDecision::MarkUnknown {
                requeue: Some(Duration::from_secs(50))
            }
        );
    }

    #[test]
    fn unknown_is_written_once() {
        let conditions = vec![condition(
            AVAILABLE,
            "True",
            available::AVAILABLE,
            "ok",
            None,
        )];
        let next = with_available_unknown(&conditions).unwrap();
        let a = find_condition(&next, AVAILABLE).unwrap();
        assert_eq!(
            (a.status.as_str(), a.reason.as_str(), a.message.as_str()),
            (
                "Unknown",
                "ManagedClusterLeaseUpdateStopped",
                LEASE_STOPPED_MESSAGE
            )
        );
        assert_eq!(with_available_unknown(&next), None);
        assert!(with_available_unknown(&[]).is_some());
    }

    #[test]
    fn clock_sync_compares_both_directions_and_honours_the_skip_annotation() {
        let mut c = cluster(true, Some(10));
        let synced = clock_condition(&c, ts(1000), ts(1049), 5);
        assert_eq!(
            (synced.status.as_str(), synced.reason.as_str()),
            ("True", "ManagedClusterClockSynced")
        );
        let late = clock_condition(&c, ts(1000), ts(1050), 5);
        assert_eq!(
            (late.status.as_str(), late.reason.as_str()),
            ("False", "ManagedClusterClockOutOfSync")
        );
        let ahead = clock_condition(&c, ts(1100), ts(1000), 5);
        assert_eq!(ahead.status, "False");
        c.metadata.annotations =
            Some([(SKIP_CLOCK_SYNC_CHECK.to_owned(), "true".to_owned())].into());
        assert_eq!(clock_condition(&c, ts(1100), ts(1000), 5).status, "True");
        // Written only when the status changes.
        let list = vec![synced.clone()];
        assert_eq!(with_clock(&list, synced), None);
        assert!(with_clock(&list, late).is_some());
    }

    #[test]
    fn the_cache_flags_renewals() {
        let cache = LeaseCache::default();
        let mut lease = initial_lease("c1", ts(1000));
        lease.metadata.resource_version = Some("1".into());
        assert_eq!(cache.observe(&lease), Some(ObjectRef::new("c1")));
        assert!(!cache.take_clock_check("c1"));
        lease.metadata.resource_version = Some("2".into());
        lease.spec.as_mut().unwrap().renew_time = Some(MicroTime(ts(1010)));
        cache.observe(&lease);
        assert!(cache.take_clock_check("c1"));
        assert!(!cache.take_clock_check("c1"));
        assert_eq!(cache.get("c1").unwrap().renew_time, Some(ts(1010)));
        // The same version again (a relist, or the deletion event) changes nothing.
        cache.observe(&lease);
        assert!(!cache.take_clock_check("c1"));
        assert_eq!(cache.get("c1").unwrap().renew_time, Some(ts(1010)));
        // Leases of other names or outside the cluster namespace are ignored.
        let mut other = initial_lease("c1", ts(1000));
        other.metadata.name = Some("x".into());
        assert_eq!(cache.observe(&other), None);
        let mut elsewhere = initial_lease("c1", ts(1000));
        elsewhere.metadata.namespace = Some("c2".into());
        assert_eq!(cache.observe(&elsewhere), None);
    }
}
