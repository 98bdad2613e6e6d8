//! The server's own controllers, which kube-controller-manager and the apiextensions server
//! run in a real cluster: CRD establishment and cleanup, namespace termination, the
//! ownerReference garbage collector, and the objects every cluster has (default
//! ServiceAccounts, `kube-root-ca.crt`, `default/kubernetes`, the authentication ConfigMap,
//! the API Priority and Fairness configuration).

mod crd;
mod csr;
mod flowcontrol;
mod gc;
mod jobs;
mod logical_cluster;
mod namespace;
mod published;
mod publisher;
mod quota;
mod rbac;
mod simulator;

pub(crate) use logical_cluster::ensure_cluster;

use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;

use crate::ops::Ctx;
use crate::state::Inner;
use ocm_apiserver_storage::{Bucket, Event};

/// Starts every controller on the current Tokio runtime.
pub(crate) fn start(inner: Arc<Inner>) {
    tokio::spawn(crd::run(inner.clone()));
    tokio::spawn(namespace::run(inner.clone()));
    tokio::spawn(csr::run(inner.clone()));
    tokio::spawn(rbac::run(inner.clone()));
    tokio::spawn(flowcontrol::run(inner.clone()));
    tokio::spawn(simulator::run(inner.clone()));
    tokio::spawn(publisher::run(inner.clone()));
    tokio::spawn(quota::run(inner.clone()));
    tokio::spawn(gc::run(inner));
}

/// The logical clusters due for one pass after `first` and every change already queued behind
/// it, in the order they became due: `note` sees each change and adds its cluster to the list
/// when the change needs a pass. Changes that arrive together (a new cluster's bootstrap
/// writes) then cost one pass per cluster, not one per change.
fn due_clusters(
    first: Arc<Event>,
    events: &mut UnboundedReceiver<Arc<Event>>,
    mut note: impl FnMut(&mut Vec<String>, &Event),
) -> Vec<String> {
    let mut due = Vec::new();
    let mut next = Some(first);
    while let Some(event) = next {
        note(&mut due, &event);
        next = events.try_recv().ok();
    }
    due
}

/// Makes the objects every cluster has in `namespace` of `cluster` (see [`published`]); false
/// when some could not be made yet (the publisher retries them).
pub(crate) async fn publish(inner: &Arc<Inner>, cluster: &str, namespace: &str) -> bool {
    publisher::sync_namespace(inner, cluster, namespace).await
}

/// Makes the API Priority and Fairness configuration of `cluster` (kube's mandatory and
/// suggested FlowSchemas and PriorityLevelConfigurations); false when some could not be made
/// yet (the controller retries them).
pub(crate) async fn bootstrap_flowcontrol(inner: &Arc<Inner>, cluster: &str) -> bool {
    flowcontrol::sync_cluster(inner, cluster).await
}

/// A pipeline context for the server's own writes to the objects of `bucket`.
pub(crate) fn system_ctx(inner: &Arc<Inner>, bucket: &Bucket, manager: &str) -> Option<Ctx> {
    let res = inner
        .registry
        .by_storage_resource(&bucket.cluster, &bucket.resource)?;
    let version = res.storage_version.clone();
    let mut ctx = Ctx::new(inner.clone(), &bucket.cluster, res, &version);
    ctx.manager = manager.to_owned();
    Some(ctx)
}
