//! Availability taints (upstream's hub taint controller): the hub keeps two `NoSelect` taints
//! in step with `ManagedClusterConditionAvailable`, so placements stop selecting clusters that
//! are not healthy.
//!
//! | Available        | taints                                              |
//! |------------------|-----------------------------------------------------|
//! | absent / Unknown | `cluster.open-cluster-management.io/unreachable`    |
//! | False            | `cluster.open-cluster-management.io/unavailable`    |
//! | True             | neither                                             |
//!
//! Clusters being deleted are left alone. A new taint is written without `timeAdded`, which
//! the admission policy ([`super::admission`], upstream's mutating webhook) stamps; on a
//! server without that policy the controller stamps it in a second write.

use ocm_runtime::cache::SharedCache;
use std::sync::Arc;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use ocm_api::cluster::names::conditions::AVAILABLE;
use ocm_api::cluster::names::taints::{UNAVAILABLE, UNREACHABLE};
use ocm_api::cluster::v1::{ManagedCluster, Taint, TaintEffect};
use ocm_runtime::conditions::find_condition;
use serde_json::json;
use tracing::info;

use super::HubContext;
use super::lease::{HealthError, RETRY, ticks};

const CONTROLLER: &str = "managed-cluster-taints";

fn hub_taint(key: &str) -> Taint {
    Taint {
        key: key.to_owned(),
        value: String::new(),
        effect: TaintEffect::NoSelect,
        time_added: None,
    }
}

/// Whether two taints are the same taint (time ignored).
fn same_taint(a: &Taint, b: &Taint) -> bool {
    a.key == b.key && a.value == b.value && a.effect == b.effect
}

/// The taints `cluster` should have, or `None` when they are right already (or the cluster is
/// being deleted). Added taints have no `timeAdded`.
pub(crate) fn desired_taints(cluster: &ManagedCluster) -> Option<Vec<Taint>> {
    if cluster.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let conditions = cluster
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let status = find_condition(conditions, AVAILABLE).map(|c| c.status.as_str());
    let (add, remove): (Option<&str>, &[&str]) = match status {
        Some("True") => (None, &[UNAVAILABLE, UNREACHABLE]),
        Some("False") => (Some(UNAVAILABLE), &[UNREACHABLE]),
        _ => (Some(UNREACHABLE), &[UNAVAILABLE]),
    };
    let current = &cluster.spec.taints;
    let removed: Vec<Taint> = remove.iter().map(|k| hub_taint(k)).collect();
    let mut next: Vec<Taint> = current
        .iter()
        .filter(|t| !removed.iter().any(|r| same_taint(t, r)))
        .cloned()
        .collect();
    if let Some(key) = add {
        let taint = hub_taint(key);
        if !next.iter().any(|t| same_taint(t, &taint)) {
            next.push(taint);
        }
    }
    (next != *current).then_some(next)
}

/// The hub taints in `taints` still without `timeAdded`, stamped with `now`; `None` when
/// every hub taint has a time.
pub(crate) fn stamp_missing_times(taints: &[Taint], now: Timestamp) -> Option<Vec<Taint>> {
    let hub_keys = [UNAVAILABLE, UNREACHABLE];
    let mut changed = false;
    let stamped = taints
        .iter()
        .map(|t| {
            let mut t = t.clone();
            if t.time_added.is_none() && hub_keys.contains(&t.key.as_str()) {
                t.time_added = Some(Time(Timestamp::from_second(now.as_second()).unwrap_or(now)));
                changed = true;
            }
            t
        })
        .collect();
    changed.then_some(stamped)
}

async fn write_taints(
    api: &Api<ManagedCluster>,
    name: &str,
    resource_version: Option<String>,
    taints: &[Taint],
) -> Result<ManagedCluster, HealthError> {
    let patch = json!({
        "metadata": { "resourceVersion": resource_version },
        "spec": { "taints": taints },
    });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| HealthError::kube(format!("update taints of {name}"), e))
}

async fn reconcile(
    cluster: Arc<ManagedCluster>,
    ctx: Arc<HubContext>,
) -> Result<Action, HealthError> {
    ctx.metrics.reconciled(CONTROLLER);
    let Some(taints) = desired_taints(&cluster) else {
        return Ok(Action::await_change());
    };
    let name = cluster.name_any();
    let api: Api<ManagedCluster> = Api::all(ctx.client.clone());
    let updated = write_taints(
        &api,
        &name,
        cluster.meta().resource_version.clone(),
        &taints,
    )
    .await?;
    info!(cluster = %name, taints = ?taints.iter().map(|t| t.key.as_str()).collect::<Vec<_>>(), "updated availability taints");
    // No admission policy stamped the time: do it here.
    if let Some(stamped) = stamp_missing_times(&updated.spec.taints, Timestamp::now()) {
        write_taints(
            &api,
            &name,
            updated.meta().resource_version.clone(),
            &stamped,
        )
        .await?;
    }
    Ok(Action::await_change())
}

fn error_policy(_cluster: Arc<ManagedCluster>, err: &HealthError, ctx: Arc<HubContext>) -> Action {
    super::error::retry_after(&ctx.metrics, CONTROLLER, err, RETRY)
}

/// Runs the taint controller until `ctx.shutdown` is cancelled.
pub(crate) async fn run(ctx: Arc<HubContext>, clusters: SharedCache<ManagedCluster>) {
    let controller = clusters
        .controller()
        .with_config(kube::runtime::controller::Config::default().concurrency(4))
        .reconcile_all_on(ticks(ctx.options.resync))
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|_| futures::future::ready(()));
    tokio::select! {
        () = controller => {}
        () = ctx.shutdown.cancelled() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocm_api::cluster::v1::{ManagedClusterSpec, ManagedClusterStatus};
    use ocm_runtime::conditions::condition;

    fn cluster(available: Option<&str>, taints: Vec<Taint>) -> ManagedCluster {
        let mut c = ManagedCluster::new(
            "c1",
            ManagedClusterSpec {
                taints,
                ..ManagedClusterSpec::default()
            },
        );
        c.status = Some(ManagedClusterStatus {
            conditions: available
                .map(|s| vec![condition(AVAILABLE, s, "r", "m", None)])
                .unwrap_or_default(),
            ..ManagedClusterStatus::default()
        });
        c
    }

    fn keys(taints: &[Taint]) -> Vec<&str> {
        taints.iter().map(|t| t.key.as_str()).collect()
    }

    fn user_taint() -> Taint {
        Taint {
            key: "example.com/gpu".into(),
            value: "none".into(),
            effect: TaintEffect::PreferNoSelect,
            time_added: Some(Time(Timestamp::from_second(5).unwrap())),
        }
    }

    #[test]
    fn taints_follow_the_available_condition() {
        let unknown = desired_taints(&cluster(Some("Unknown"), vec![user_taint()])).unwrap();
        assert_eq!(keys(&unknown), ["example.com/gpu", UNREACHABLE]);
        assert_eq!(unknown[1].effect, TaintEffect::NoSelect);
        assert_eq!(unknown[1].time_added, None);
        let absent = desired_taints(&cluster(None, vec![])).unwrap();
        assert_eq!(keys(&absent), [UNREACHABLE]);
        let unavailable = desired_taints(&cluster(Some("False"), absent)).unwrap();
        assert_eq!(keys(&unavailable), [UNAVAILABLE]);
        let healthy = desired_taints(&cluster(Some("True"), unavailable)).unwrap();
        assert!(healthy.is_empty());
        assert_eq!(
            desired_taints(&cluster(Some("True"), vec![user_taint()])),
            None
        );
    }

    #[test]
    fn right_taints_and_deleting_clusters_are_left_alone() {
        let mut stamped = hub_taint(UNREACHABLE);
        stamped.time_added = Some(Time(Timestamp::from_second(7).unwrap()));
        assert_eq!(
            desired_taints(&cluster(Some("Unknown"), vec![stamped])),
            None
        );
        let mut deleting = cluster(Some("Unknown"), vec![]);
        deleting.metadata.deletion_timestamp = Some(Time(Timestamp::from_second(9).unwrap()));
        assert_eq!(desired_taints(&deleting), None);
    }

    #[test]
    fn only_hub_taints_without_time_are_stamped() {
        let now = "2026-03-03T03:03:03.5Z".parse::<Timestamp>().unwrap();
        let mut bare_user = user_taint();
        bare_user.time_added = None;
        let taints = vec![bare_user, hub_taint(UNREACHABLE)];
        let stamped = stamp_missing_times(&taints, now).unwrap();
        assert_eq!(stamped[0].time_added, None);
        assert_eq!(
            stamped[1].time_added,
            Some(Time("2026-03-03T03:03:03Z".parse().unwrap()))
        );
        assert_eq!(stamp_missing_times(&stamped, now), None);
    }
}
