//! Fleet gauges: `<prefix>_managed_clusters{condition, status}` — how many ManagedClusters
//! have each of the conditions `Available` (`ManagedClusterConditionAvailable`), `Joined`
//! (`ManagedClusterJoined`) and `HubAccepted` (`HubAcceptedManagedCluster`) with status
//! `True`, `False` or `Unknown` (clusters without the condition are not counted). Kept
//! current by a ManagedCluster watch; registered once per metrics registry.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use futures::StreamExt;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::watcher;
use ocm_api::cluster::names::conditions::{AVAILABLE, HUB_ACCEPTED, JOINED};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::conditions::find_condition;
use ocm_runtime::metrics::ControllerMetrics;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use tracing::warn;

use super::HubContext;

const CONTROLLER: &str = "managed-cluster-metrics";

/// The conditions counted: (label value, condition type).
pub(crate) const COUNTED: [(&str, &str); 3] = [
    ("Available", AVAILABLE),
    ("Joined", JOINED),
    ("HubAccepted", HUB_ACCEPTED),
];

/// The statuses counted.
pub(crate) const STATUSES: [&str; 3] = ["True", "False", "Unknown"];

/// Labels of the gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConditionLabels {
    condition: String,
    status: String,
}

/// One cluster's counted statuses, by [`COUNTED`] index (`None` = condition absent).
pub(crate) type Statuses = [Option<&'static str>; 3];

/// The counted statuses of `cluster`.
pub(crate) fn statuses(cluster: &ManagedCluster) -> Statuses {
    let conditions = cluster
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    COUNTED.map(|(_, type_)| {
        find_condition(conditions, type_)
            .and_then(|c| STATUSES.iter().find(|s| **s == c.status).copied())
    })
}

/// Counts per (condition index, status) over all clusters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    by_cluster: HashMap<String, Statuses>,
    counts: HashMap<(usize, &'static str), i64>,
}

impl Tally {
    /// Records a cluster's current statuses.
    pub(crate) fn apply(&mut self, name: &str, new: Statuses) {
        let old = self.by_cluster.insert(name.to_owned(), new);
        self.adjust(old, Some(new));
    }

    /// Forgets a deleted cluster.
    pub(crate) fn delete(&mut self, name: &str) {
        let old = self.by_cluster.remove(name);
        self.adjust(old, None);
    }

    fn adjust(&mut self, old: Option<Statuses>, new: Option<Statuses>) {
        for i in 0..COUNTED.len() {
            if let Some(status) = old.and_then(|o| o[i]) {
                *self.counts.entry((i, status)).or_default() -= 1;
            }
            if let Some(status) = new.and_then(|n| n[i]) {
                *self.counts.entry((i, status)).or_default() += 1;
            }
        }
    }

    /// Clusters whose condition `COUNTED[index]` has `status`.
    pub(crate) fn count(&self, index: usize, status: &str) -> i64 {
        STATUSES
            .iter()
            .find(|s| **s == status)
            .and_then(|s| self.counts.get(&(index, *s)))
            .copied()
            .unwrap_or(0)
    }
}

/// The gauge family of one registry (registered on first use).
fn family(metrics: &ControllerMetrics) -> Family<ConditionLabels, Gauge> {
    static FAMILIES: OnceLock<Mutex<HashMap<usize, Family<ConditionLabels, Gauge>>>> =
        OnceLock::new();
    let registry = metrics.registry();
    let key = Arc::as_ptr(&registry) as usize;
    let mut families = FAMILIES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    families
        .entry(key)
        .or_insert_with(|| {
            let family = Family::<ConditionLabels, Gauge>::default();
            metrics.with_registry(|r| {
                r.register(
                    "managed_clusters",
                    "Managed clusters by condition and status",
                    family.clone(),
                );
            });
            family
        })
        .clone()
}

fn publish(family: &Family<ConditionLabels, Gauge>, tally: &Tally) {
    for (index, (label, _)) in COUNTED.iter().enumerate() {
        for status in STATUSES {
            family
                .get_or_create(&ConditionLabels {
                    condition: (*label).to_owned(),
                    status: status.to_owned(),
                })
                .set(tally.count(index, status));
        }
    }
}

/// Keeps the gauges current until `ctx.shutdown` is cancelled.
pub(crate) async fn run(ctx: Arc<HubContext>) {
    let family = family(&ctx.metrics);
    let api: Api<ManagedCluster> = Api::all(ctx.client.clone());
    let mut events = watcher(api, watcher::Config::default().any_semantic())
        .backoff_on_errors()
        .boxed();
    let mut tally = Tally::default();
    let mut relisting: Option<Tally> = None;
    publish(&family, &tally);
    loop {
        let event = tokio::select! {
            () = ctx.shutdown.cancelled() => return,
            event = events.next() => event,
        };
        match event {
            None => return,
            Some(Err(err)) => {
                ctx.metrics.failed(CONTROLLER, "watch");
                warn!(error = %err, "watching clusters for metrics failed");
                continue;
            }
            Some(Ok(watcher::Event::Init)) => relisting = Some(Tally::default()),
            Some(Ok(watcher::Event::InitApply(cluster))) => {
                if let Some(pending) = relisting.as_mut() {
                    pending.apply(&cluster.name_any(), statuses(&cluster));
                }
                continue;
            }
            Some(Ok(watcher::Event::InitDone)) => {
                if let Some(done) = relisting.take() {
                    tally = done;
                }
            }
            Some(Ok(watcher::Event::Apply(cluster))) => {
                tally.apply(&cluster.name_any(), statuses(&cluster));
            }
            Some(Ok(watcher::Event::Delete(cluster))) => tally.delete(&cluster.name_any()),
        }
        ctx.metrics.reconciled(CONTROLLER);
        publish(&family, &tally);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocm_api::cluster::v1::{ManagedClusterSpec, ManagedClusterStatus};
    use ocm_runtime::conditions::condition;

    fn cluster(name: &str, conds: &[(&str, &str)]) -> ManagedCluster {
        let mut c = ManagedCluster::new(name, ManagedClusterSpec::default());
        c.status = Some(ManagedClusterStatus {
            conditions: conds
                .iter()
                .map(|(t, s)| condition(t, s, "r", "m", None))
                .collect(),
            ..ManagedClusterStatus::default()
        });
        c
    }

    #[test]
    fn tally_follows_updates_and_deletions() {
        let mut tally = Tally::default();
        let a = cluster(
            "a",
            &[
                (AVAILABLE, "True"),
                (JOINED, "True"),
                (HUB_ACCEPTED, "True"),
            ],
        );
        let b = cluster("b", &[(HUB_ACCEPTED, "False")]);
        tally.apply("a", statuses(&a));
        tally.apply("b", statuses(&b));
        assert_eq!(tally.count(0, "True"), 1);
        assert_eq!(tally.count(2, "True"), 1);
        assert_eq!(tally.count(2, "False"), 1);
        let a2 = cluster(
            "a",
            &[
                (AVAILABLE, "Unknown"),
                (JOINED, "True"),
                (HUB_ACCEPTED, "True"),
            ],
        );
        tally.apply("a", statuses(&a2));
        assert_eq!(tally.count(0, "True"), 0);
        assert_eq!(tally.count(0, "Unknown"), 1);
        tally.delete("a");
        tally.delete("missing");
        assert_eq!(tally.count(0, "Unknown"), 0);
        assert_eq!(tally.count(1, "True"), 0);
        assert_eq!(tally.count(2, "False"), 1);
        assert_eq!(tally.count(2, "Weird"), 0);
    }

    #[test]
    fn gauges_appear_once_per_registry() {
        let metrics = ControllerMetrics::new("ocm");
        let f1 = family(&metrics);
        let f2 = family(&metrics);
        let mut tally = Tally::default();
        tally.apply("a", statuses(&cluster("a", &[(AVAILABLE, "False")])));
        publish(&f1, &tally);
        publish(&f2, &tally);
        let text = metrics.encode();
        assert_eq!(
            text.matches("# TYPE ocm_managed_clusters gauge").count(),
            1,
            "{text}"
        );
        assert!(
            text.contains("ocm_managed_clusters{condition=\"Available\",status=\"False\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("ocm_managed_clusters{condition=\"Joined\",status=\"True\"} 0"),
            "{text}"
        );
    }
}
