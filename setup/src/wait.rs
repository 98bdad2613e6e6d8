//! Waiting on the hub: until an object satisfies a test, and until clusters are Joined and
//! Available — by watching, never by polling on a clock.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context;
use futures::StreamExt;
use kube::api::Api;
use kube::runtime::wait::await_condition;
use kube::runtime::{WatchStreamExt, watcher};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_runtime::backoff::WatchBackoffExt;

pub use ocm_hub::fleet::joined_and_available;

/// Waits until every cluster in `names` is Joined and Available.
pub async fn wait_all_available(
    clusters: &Api<ManagedCluster>,
    names: &[String],
) -> anyhow::Result<()> {
    let mut stream = watcher(clusters.clone(), watcher::Config::default())
        .backoff_on_errors()
        .applied_objects()
        .boxed();
    let mut ready: BTreeMap<String, bool> = names.iter().map(|n| (n.clone(), false)).collect();
    if ready.is_empty() {
        return Ok(());
    }
    while let Some(event) = stream.next().await {
        let Ok(cluster) = event else { continue };
        let name = cluster.metadata.name.clone().unwrap_or_default();
        if let Some(flag) = ready.get_mut(&name) {
            *flag = joined_and_available(&cluster);
        }
        if ready.values().all(|r| *r) {
            return Ok(());
        }
    }
    anyhow::bail!("lost the watch on the hub")
}

/// Waits (up to `timeout`) until object `name` of `api` satisfies `done`.
pub async fn wait_until<K>(
    api: Api<K>,
    name: &str,
    timeout: Duration,
    done: impl Fn(&K) -> bool + Send + 'static,
) -> anyhow::Result<()>
where
    K: kube::Resource
        + Clone
        + k8s_openapi::serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    tokio::time::timeout(
        timeout,
        await_condition(api, name, move |o: Option<&K>| o.is_some_and(&done)),
    )
    .await
    .with_context(|| format!("{name} not ready after {} s", timeout.as_secs()))??;
    Ok(())
}

/// Whether `conditions` hold one of type `type_` with `status`.
pub fn has(
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    type_: &str,
    status: &str,
) -> bool {
    conditions
        .iter()
        .any(|c| c.type_ == type_ && c.status == status)
}
