//! The completed-work cleanup (upstream's `CleanUpCompletedManifestWork` gate): a
//! ManifestWork whose `spec.deleteOption.ttlSecondsAfterFinished` is set is deleted that many
//! seconds after its `Complete` condition became True (at once for 0). Works of a
//! ManifestWorkReplicaSet are left to it, works being deleted are skipped. Runs on the hub.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams};
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use ocm_api::work::names::{MANIFEST_WORK_REPLICA_SET_LABEL, conditions};
use ocm_api::work::v1::ManifestWork;
use ocm_runtime::metrics::ControllerMetrics;
use ocm_runtime::shutdown::Shutdown;

const CONTROLLER: &str = "manifestworkgarbagecollection";

/// What to do with one ManifestWork.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cleanup {
    /// Nothing: no TTL, not complete, being deleted, or owned by a replica set.
    Keep,
    /// Look again once this much time has passed (the TTL is still running).
    RecheckAfter(Duration),
    /// Its TTL after completion has run out.
    Delete,
}

/// The pure decision for `work` at `now`.
pub fn cleanup(work: &ManifestWork, now: Timestamp) -> Cleanup {
    if work.metadata.deletion_timestamp.is_some()
        || work.labels().contains_key(MANIFEST_WORK_REPLICA_SET_LABEL)
    {
        return Cleanup::Keep;
    }
    let Some(ttl) = work
        .spec
        .delete_option
        .as_ref()
        .and_then(|d| d.ttl_seconds_after_finished)
    else {
        return Cleanup::Keep;
    };
    let Some(complete) = work
        .status
        .as_ref()
        .and_then(|s| {
            s.conditions
                .iter()
                .find(|c| c.type_ == conditions::COMPLETE)
        })
        .filter(|c| c.status == "True")
    else {
        return Cleanup::Keep;
    };
    if ttl <= 0 {
        return Cleanup::Delete;
    }
    let deadline = complete
        .last_transition_time
        .0
        .checked_add(jiff::SignedDuration::from_secs(ttl))
        .unwrap_or(Timestamp::MAX);
    if now < deadline {
        let left = now.duration_until(deadline);
        Cleanup::RecheckAfter(Duration::try_from(left).unwrap_or(Duration::from_secs(1)))
    } else {
        Cleanup::Delete
    }
}

struct Ctx {
    client: kube::Client,
    metrics: ControllerMetrics,
}

/// Runs the cleanup over every ManifestWork of the hub until `shutdown` is cancelled.
#[inline(never)]
pub fn run(
    client: kube::Client,
    metrics: ControllerMetrics,
    shutdown: Shutdown,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(run_body(client, metrics, shutdown))
}

async fn run_body(client: kube::Client, metrics: ControllerMetrics, shutdown: Shutdown) {
    let controller = ocm_runtime::cache::controller(
        Api::<ManifestWork>::all(client.clone()),
        watcher::Config::default().any_semantic(),
    );
    let ctx = Arc::new(Ctx { client, metrics });
    let running = controller
        .run(reconcile, error_policy, ctx)
        .for_each(|_| futures::future::ready(()));
    tokio::select! {
        () = running => {}
        () = shutdown.cancelled() => {}
    }
}

fn error_policy(_work: Arc<ManifestWork>, err: &kube::Error, ctx: Arc<Ctx>) -> Action {
    tracing::debug!(%err, "completed manifestwork cleanup failed");
    ctx.metrics.failed(CONTROLLER, "api");
    Action::requeue(Duration::from_secs(2))
}

async fn reconcile(work: Arc<ManifestWork>, ctx: Arc<Ctx>) -> Result<Action, kube::Error> {
    ctx.metrics.reconciled(CONTROLLER);
    match cleanup(&work, Timestamp::now()) {
        Cleanup::Keep => Ok(Action::await_change()),
        Cleanup::RecheckAfter(after) => Ok(Action::requeue(after)),
        Cleanup::Delete => {
            let namespace = work.namespace().unwrap_or_default();
            let name = work.name_any();
            tracing::info!(%namespace, %name, "deleting a completed ManifestWork after its TTL");
            match Api::<ManifestWork>::namespaced(ctx.client.clone(), &namespace)
                .delete(&name, &DeleteParams::default())
                .await
            {
                Ok(_) => Ok(Action::await_change()),
                Err(kube::Error::Api(e)) if e.code == 404 => Ok(Action::await_change()),
                Err(e) => Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn work(
        ttl: Option<i64>,
        complete: Option<(&str, &str)>,
        labels: serde_json::Value,
    ) -> ManifestWork {
        let mut w = json!({
            "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
            "metadata": {"name": "w", "namespace": "c1", "labels": labels},
            "spec": {"workload": {"manifests": []}},
        });
        if let Some(ttl) = ttl {
            w["spec"]["deleteOption"] =
                json!({"propagationPolicy": "Foreground", "ttlSecondsAfterFinished": ttl});
        }
        if let Some((status, at)) = complete {
            w["status"] = json!({"conditions": [{"type": "Complete", "status": status,
                "reason": "ConditionRulesAggregated", "message": "",
                "lastTransitionTime": at}]});
        }
        serde_json::from_value(w).unwrap()
    }

    #[test]
    fn a_completed_work_goes_after_its_ttl() {
        let now: Timestamp = "2026-01-01T00:00:10Z".parse().unwrap();
        let done_at = Some(("True", "2026-01-01T00:00:08Z"));
        assert_eq!(
            cleanup(&work(Some(3), done_at, json!({})), now),
            Cleanup::RecheckAfter(Duration::from_secs(1))
        );
        assert_eq!(
            cleanup(&work(Some(2), done_at, json!({})), now),
            Cleanup::Delete
        );
        assert_eq!(
            cleanup(&work(Some(0), done_at, json!({})), now),
            Cleanup::Delete
        );
        // No TTL, not complete, or a replica set's: kept.
        assert_eq!(cleanup(&work(None, done_at, json!({})), now), Cleanup::Keep);
        assert_eq!(
            cleanup(
                &work(Some(0), Some(("False", "2026-01-01T00:00:08Z")), json!({})),
                now
            ),
            Cleanup::Keep
        );
        assert_eq!(cleanup(&work(Some(0), None, json!({})), now), Cleanup::Keep);
        assert_eq!(
            cleanup(
                &work(
                    Some(0),
                    done_at,
                    json!({MANIFEST_WORK_REPLICA_SET_LABEL: "default.rs"})
                ),
                now
            ),
            Cleanup::Keep
        );
    }
}
