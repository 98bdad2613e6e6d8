//! The restart phase of `ocm bench registration --restart`: the joined fleet's hub is stopped
//! and started again on its data directory and address, and the benchmark reports how long
//! until every agent has renewed its lease on the new hub, and how many list and watch
//! requests the new hub served meanwhile (a relist storm shows as about one `LIST` per agent
//! and resource).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_runtime::backoff::WatchBackoffExt;

use ocm_hub::embedded::{EmbeddedHub, EmbeddedHubOptions};

/// The lease each registration agent renews in its cluster namespace.
const CLUSTER_LEASE: &str = "managed-cluster-lease";

/// Stops `hub`, starts it again with `options` (same data directory and address) and measures
/// the fleet `expected` (its agents in processes `fleet`, if any) coming back; returns the new
/// hub.
pub(crate) async fn measure(
    hub: EmbeddedHub,
    options: EmbeddedHubOptions,
    expected: &BTreeSet<String>,
    fleet: &[u32],
) -> anyhow::Result<EmbeddedHub> {
    println!("  restart: stopping the hub");
    let stopping = Instant::now();
    hub.stop().await;
    let hub = EmbeddedHub::start(options)
        .await
        .context("starting the hub again")?;
    let back = Instant::now();
    let restarted_at = jiff::Timestamp::now();
    println!(
        "  restart: hub stopped and serving again in {:.1} s",
        back.duration_since(stopping).as_secs_f64()
    );
    let renewed = all_leases_renewed(&hub, expected, restarted_at, fleet).await?;
    println!(
        "  restart: every cluster's lease renewed on the new hub {:.1} s after it came back \
         (seen by this benchmark's watch)",
        renewed.seen.as_secs_f64()
    );
    println!(
        "  restart: by the leases' own renewTime, the last first renewal came {:.1} s after it \
         came back (10 s: {}, 20 s: {}, 30 s: {}; a renewal seen late may be a later one, so \
         this is an upper bound)",
        renewed.last().as_secs_f64(),
        renewed.within(Duration::from_secs(10)),
        renewed.within(Duration::from_secs(20)),
        renewed.within(Duration::from_secs(30)),
    );
    let unknown = not_available(&hub, expected).await?;
    println!("  restart: clusters not Available now: {unknown}");
    print_requests(&hub, expected.len()).await?;
    Ok(hub)
}

/// When the fleet's leases were renewed on the new hub.
struct Renewals {
    /// When this benchmark's watch had seen every lease renewed.
    seen: Duration,
    /// Per cluster, the earliest renewTime after the restart it saw, as time since the restart.
    first: Vec<Duration>,
}

impl Renewals {
    /// When the last cluster first renewed (by renewTime).
    fn last(&self) -> Duration {
        self.first.iter().max().copied().unwrap_or_default()
    }

    /// How many clusters renewed within `limit` of the restart (by renewTime).
    fn within(&self, limit: Duration) -> usize {
        self.first.iter().filter(|d| **d <= limit).count()
    }
}

/// Waits until the lease of every cluster in `expected` was renewed after `since`.
async fn all_leases_renewed(
    hub: &EmbeddedHub,
    expected: &BTreeSet<String>,
    since: jiff::Timestamp,
    fleet: &[u32],
) -> anyhow::Result<Renewals> {
    // CPU seconds of this process (the hub) and of the fleet processes so far.
    let cpu = || {
        (
            crate::support::process_usage().1,
            fleet
                .iter()
                .map(|pid| crate::support::cpu_of(*pid))
                .sum::<f64>(),
        )
    };
    let mut last_cpu = (cpu(), Instant::now());
    let began = Instant::now();
    // Cluster-wide and unfiltered, so that this watch's own list is not an agent's.
    let leases: Api<Lease> = Api::all(hub.admin_client());
    let mut stream = watcher(leases, watcher::Config::default())
        .backoff_on_errors()
        .applied_objects()
        .boxed();
    let mut renewed: BTreeMap<String, Duration> = BTreeMap::new();
    let mut tick = tokio::time::interval(Duration::from_secs(10));
    loop {
        let event = tokio::select! {
            event = stream.next() => event,
            _ = tick.tick() => {
                // Whether the fleet waits on the hub, on itself or on nothing: the CPU each
                // side used since the last line (two cores give 200 %).
                let ((hub_cpu, fleet_cpu), at) = last_cpu;
                let now = cpu();
                let seconds = at.elapsed().as_secs_f64().max(0.001);
                println!(
                    "  restart: {:>4.0} s: {} of {} leases renewed (CPU since the last line: hub {:.0} %, fleet {:.0} %)",
                    began.elapsed().as_secs_f64(), renewed.len(), expected.len(),
                    (now.0 - hub_cpu) / seconds * 100.0,
                    (now.1 - fleet_cpu) / seconds * 100.0,
                );
                last_cpu = (now, Instant::now());
                continue;
            }
        };
        let Some(event) = event else {
            anyhow::bail!("lost the watch on leases")
        };
        let Ok(lease) = event else { continue };
        if lease.metadata.name.as_deref() != Some(CLUSTER_LEASE) {
            continue;
        }
        let Some(namespace) = lease.metadata.namespace.clone() else {
            continue;
        };
        let after = lease
            .spec
            .as_ref()
            .and_then(|s| s.renew_time.as_ref())
            .filter(|t| t.0 > since)
            .and_then(|t| Duration::try_from(t.0.duration_since(since)).ok());
        if let Some(after) = after
            && expected.contains(&namespace)
        {
            renewed.entry(namespace).or_insert(after);
            if renewed.len() == expected.len() {
                return Ok(Renewals {
                    seen: began.elapsed(),
                    first: renewed.into_values().collect(),
                });
            }
        }
    }
}

/// How many clusters of `expected` are not Joined and Available.
async fn not_available(hub: &EmbeddedHub, expected: &BTreeSet<String>) -> anyhow::Result<usize> {
    let clusters: Api<ManagedCluster> = Api::all(hub.admin_client());
    let available = clusters
        .list(&Default::default())
        .await?
        .items
        .iter()
        .filter(|c| ocm_setup::wait::joined_and_available(c))
        .filter_map(|c| c.metadata.name.clone())
        .filter(|n| expected.contains(n))
        .count();
    Ok(expected.len() - available)
}

/// Prints the new hub's `LIST` and `WATCH` requests by resource, from its `/metrics`.
async fn print_requests(hub: &EmbeddedHub, clusters: usize) -> anyhow::Result<()> {
    let metrics = hub
        .admin_client()
        .request_text(http::Request::get("/metrics").body(Vec::new())?)
        .await?;
    let counts = request_counts(&metrics);
    println!("  restart: requests the new hub served, by verb and resource ({clusters} agents):");
    for ((verb, resource), count) in counts {
        println!("    {verb:<6} {resource:<34} {count}");
    }
    let floor = (clusters as u64 / 100).max(1);
    println!("  restart: its other requests, by verb, resource and code (at least {floor}):");
    for ((verb, resource, code), count) in other_request_counts(&metrics) {
        if count >= floor {
            println!("    {verb:<6} {resource:<34} {code} {count}");
        }
    }
    Ok(())
}

/// `apiserver_request_total` summed by (verb, resource with its subresource, code) for every
/// verb but `LIST` and `WATCH`, and for those two their failures: what the new hub spent its
/// first minutes on besides relists, and what it refused.
fn other_request_counts(metrics: &str) -> BTreeMap<(String, String, String), u64> {
    let mut counts = BTreeMap::new();
    for sample in ocm_apiserver::metrics::request_counts(metrics) {
        let verb = sample.label("verb");
        if (verb == "LIST" || verb == "WATCH") && sample.label("code").starts_with('2') {
            continue;
        }
        let resource = match sample.label("subresource") {
            "" => sample.label("resource").to_owned(),
            sub => format!("{}/{sub}", sample.label("resource")),
        };
        *counts
            .entry((verb.to_owned(), resource, sample.label("code").to_owned()))
            .or_default() += sample.value;
    }
    counts
}

/// `apiserver_request_total` summed by (verb, resource) for `LIST` and `WATCH`.
pub(crate) fn request_counts(metrics: &str) -> BTreeMap<(String, String), u64> {
    let mut counts = BTreeMap::new();
    for sample in ocm_apiserver::metrics::request_counts(metrics) {
        let verb = sample.label("verb");
        if verb == "LIST" || verb == "WATCH" {
            *counts
                .entry((verb.to_owned(), sample.label("resource").to_owned()))
                .or_default() += sample.value;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_summed_by_verb_and_resource() {
        let metrics = "\
# HELP apiserver_request_total x
apiserver_request_total{verb=\"LIST\",dry_run=\"\",group=\"\",version=\"v1\",resource=\"secrets\",subresource=\"\",scope=\"namespace\",component=\"apiserver\",code=\"200\"} 3
apiserver_request_total{verb=\"LIST\",dry_run=\"\",group=\"\",version=\"v1\",resource=\"secrets\",subresource=\"\",scope=\"cluster\",component=\"apiserver\",code=\"200\"} 2
apiserver_request_total{verb=\"WATCH\",dry_run=\"\",group=\"\",version=\"v1\",resource=\"secrets\",subresource=\"\",scope=\"namespace\",component=\"apiserver\",code=\"200\"} 7
apiserver_request_total{verb=\"GET\",dry_run=\"\",group=\"\",version=\"v1\",resource=\"secrets\",subresource=\"\",scope=\"resource\",component=\"apiserver\",code=\"200\"} 9
apiserver_request_total{verb=\"LIST\",dry_run=\"\",group=\"\",version=\"v1\",resource=\"secrets\",subresource=\"\",scope=\"cluster\",component=\"apiserver\",code=\"429\"} 4
";
        assert_eq!(
            other_request_counts(metrics),
            BTreeMap::from([
                (
                    ("GET".to_owned(), "secrets".to_owned(), "200".to_owned()),
                    9
                ),
                (
                    ("LIST".to_owned(), "secrets".to_owned(), "429".to_owned()),
                    4
                ),
            ])
        );
        let counts = request_counts(metrics);
        assert_eq!(
            counts,
            BTreeMap::from([
                (("LIST".to_owned(), "secrets".to_owned()), 9),
                (("WATCH".to_owned(), "secrets".to_owned()), 7),
            ])
        );
    }
}
