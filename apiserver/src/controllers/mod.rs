//! The server's own controllers, which kube-controller-manager and the apiextensions server
//! run in a real cluster: CRD establishment and cleanup, namespace termination, the
//! ownerReference garbage collector, and the objects every cluster has (default
//! ServiceAccounts, `kube-root-ca.crt`, `default/kubernetes`, the authentication ConfigMap,
//! the API Priority and Fairness configuration).

mod apiservices;
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

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;

use futures::stream::{self, StreamExt};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::control::ServerAccess;
use ocm_apiserver_storage::Event;

/// Starts every controller on the current Tokio runtime.
pub(crate) fn start(server: ServerAccess) {
    tokio::spawn(crd::run(server.clone()));
    tokio::spawn(namespace::run(server.clone()));
    tokio::spawn(csr::run(server.clone()));
    tokio::spawn(rbac::run(server.clone()));
    tokio::spawn(flowcontrol::run(server.clone()));
    tokio::spawn(simulator::run(server.clone()));
    tokio::spawn(publisher::run(server.clone()));
    tokio::spawn(quota::run(server.clone()));
    tokio::spawn(apiservices::run(server.clone()));
    tokio::spawn(gc::run(server));
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

/// How a controller that keeps something per logical cluster is driven by [`run_per_cluster`].
struct PerCluster<R, S> {
    /// Whether the stored resource names one the controller keeps: the clusters holding it
    /// get a pass when the controller starts.
    keeps: fn(&str) -> bool,
    /// Whether a change makes its cluster due for a pass.
    relevant: R,
    /// One pass over a cluster (`first`: the start-up pass); false when something is left
    /// to do, and the cluster is tried again at the next resync.
    sync: S,
    /// How many clusters a batch of due ones is worked on at once.
    concurrency: usize,
}

/// Runs a per-cluster controller until shutdown: a pass over every cluster that holds what
/// it keeps, then one per cluster each batch of changes makes due ([`due_clusters`]), and
/// at every resync again over the clusters whose last pass left something to do.
async fn run_per_cluster<R, S, Fut>(server: ServerAccess, controller: PerCluster<R, S>)
where
    R: Fn(&Event) -> bool,
    S: Fn(String, bool) -> Fut,
    Fut: Future<Output = bool>,
{
    let (_, mut events) = server.watch_all();
    let mut shutdown = server.shutdown();
    let mut retry: HashSet<String> = HashSet::new();
    let initial: HashSet<String> = server
        .buckets()
        .into_iter()
        .filter(|b| (controller.keeps)(&b.resource))
        .map(|b| b.cluster.to_string())
        .collect();
    let pass = async |due: Vec<String>, first: bool, retry: &mut HashSet<String>| {
        let results: Vec<(String, bool)> = stream::iter(due)
            .map(|cluster| async {
                let done = (controller.sync)(cluster.clone(), first).await;
                (cluster, done)
            })
            .buffer_unordered(controller.concurrency.max(1))
            .collect()
            .await;
        for (cluster, done) in results {
            if done {
                retry.remove(&cluster);
            } else {
                retry.insert(cluster);
            }
        }
    };
    pass(initial.into_iter().collect(), true, &mut retry).await;
    let mut resync = tokio::time::interval(server.config().resync_interval);
    loop {
        let due: Vec<String> = tokio::select! {
            e = events.recv() => {
                let Some(event) = e else { return };
                due_clusters(event, &mut events, |due, event| {
                    let cluster = &*event.key.bucket.cluster;
                    if (controller.relevant)(event) && !due.iter().any(|c| c == cluster) {
                        due.push(cluster.to_string());
                    }
                })
            }
            _ = resync.tick() => retry.drain().collect(),
            _ = shutdown.changed() => return,
        };
        pass(due, false, &mut retry).await;
    }
}

/// Makes the objects every cluster has in `namespace` of `cluster` (see [`published`]); false
/// when some could not be made yet (the publisher retries them).
pub(crate) async fn publish(server: &ServerAccess, cluster: &str, namespace: &str) -> bool {
    publisher::sync_namespace(server, cluster, namespace).await
}

/// Replaces `status.conditions` of the object `name` of `ctx`'s resource by a `/status`
/// write, with what `conditions` makes of the object as it then stands (nothing is changed
/// when it gives `None`). A 404 (the object went) is no failure.
async fn set_conditions(
    ctx: &mut crate::ops::Ctx,
    name: &str,
    conditions: impl Fn(&serde_json::Value) -> Option<Vec<serde_json::Value>> + Send + Sync,
) -> Result<(), ocm_apiserver_status::ApiError> {
    use serde_json::{Value, json};
    let mut mutate = |_: &mut crate::ops::Ctx, current: &Value| {
        let mut next = current.clone();
        if let Some(conditions) = conditions(current)
            && let Some(map) = next.as_object_mut()
        {
            let status = map.entry("status").or_insert_with(|| json!({}));
            if !status.is_object() {
                *status = json!({});
            }
            status["conditions"] = Value::Array(conditions);
        }
        Ok(next)
    };
    let target = crate::ops::Target::Sub("status".into());
    let managed = crate::ops::Managed::RecordUpdate;
    match ctx
        .update("", name, &target, managed, false, &mut mutate)
        .await
    {
        Err(err) if err.code != 404 => Err(err),
        _ => Ok(()),
    }
}

/// Writes `cluster`'s local APIServices unless that was done (see [`apiservices`]).
pub(crate) async fn register_apiservices(server: &ServerAccess, cluster: &str) {
    apiservices::register_once(server, cluster).await;
}

/// Writes the local APIServices `cluster` lacks (as kube-apiserver does when it starts).
pub(crate) async fn register_apiservices_at_start(server: &ServerAccess, cluster: &str) {
    apiservices::register(server, cluster).await;
}

/// Makes the API Priority and Fairness configuration of `cluster` (kube's mandatory and
/// suggested FlowSchemas and PriorityLevelConfigurations); false when some could not be made
/// yet (the controller retries them).
pub(crate) async fn bootstrap_flowcontrol(server: &ServerAccess, cluster: &str) -> bool {
    flowcontrol::sync_cluster(server, cluster).await
}
