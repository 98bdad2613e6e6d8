//! `ocm bench dashboard --clusters N`: an embedded hub holding N ManagedClusters with status
//! (written directly through the API, as a fleet's agents would have), and a dashboard on it
//! with the admin kubeconfig over TLS. Prints how long the dashboard's watch takes to fill,
//! then the time to serve pages (the overview first), idle and while clusters keep changing.

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_runtime::shutdown::Shutdown;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use ocm_hub::embedded::{EmbeddedHub, EmbeddedHubOptions};

/// Flags of `ocm bench dashboard`.
#[derive(Debug, Args)]
pub struct BenchDashboardArgs {
    /// How many ManagedClusters.
    #[arg(long, default_value_t = 10_000)]
    clusters: usize,
    /// Requests per page measured.
    #[arg(long, default_value_t = 20)]
    requests: usize,
    /// Cluster status updates per second during the second round.
    #[arg(long, default_value_t = 100)]
    churn: usize,
    /// Keep serving this many seconds after measuring (to open the pages in a browser).
    #[arg(long, default_value_t = 0)]
    hold_seconds: u64,
}

/// The status of cluster `i`: one in fifty Unknown, one in a hundred Unavailable.
fn status(i: usize, now: &str) -> serde_json::Value {
    let available = match i {
        i if i % 50 == 0 => "Unknown",
        i if i % 100 == 1 => "False",
        _ => "True",
    };
    let cpu = 2 + (i * 7) % 30;
    json!({"status": {
        "conditions": [
            {"type": "HubAcceptedManagedCluster", "status": "True", "reason": "HubClusterAdminAccepted",
             "message": "Accepted by hub cluster admin", "lastTransitionTime": now},
            {"type": "ManagedClusterJoined", "status": "True", "reason": "ManagedClusterJoined",
             "message": "Managed cluster joined", "lastTransitionTime": now},
            {"type": "ManagedClusterConditionAvailable", "status": available,
             "reason": "ManagedClusterAvailable", "message": "Managed cluster is available",
             "lastTransitionTime": now}],
        "version": {"kubernetes": format!("v1.{}.0", 30 + i % 6)},
        "capacity": {"cpu": cpu.to_string(), "memory": format!("{}Gi", cpu * 4)},
        "allocatable": {"cpu": cpu.to_string(), "memory": format!("{}Gi", cpu * 4)}}})
}

/// `GET path` from the dashboard: status line, body length, time.
async fn get(addr: std::net::SocketAddr, path: &str) -> anyhow::Result<(String, usize, Duration)> {
    let start = Instant::now();
    let text = get_raw(addr, path).await?;
    let took = start.elapsed();
    let status = text.lines().next().unwrap_or_default().to_owned();
    let body = text.split_once("\r\n\r\n").map_or(0, |(_, b)| b.len());
    Ok((status, body, took))
}

/// The whole HTTP/1.1 response to `GET path`.
async fn get_raw(addr: std::net::SocketAddr, path: &str) -> anyhow::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await?;
    Ok(String::from_utf8_lossy(&response).into_owned())
}

/// Median, 95th percentile and maximum of `times`, in ms.
fn summary(times: &mut [Duration]) -> String {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    format!(
        "median {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        ms(at(0.5)),
        ms(at(0.95)),
        ms(at(1.0))
    )
}

/// Runs the benchmark.
pub async fn bench(args: BenchDashboardArgs) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("ocm-bench-dashboard-{}", std::process::id()));
    let hub = EmbeddedHub::start(EmbeddedHubOptions {
        memory: true,
        listen: ([127, 0, 0, 1], 0).into(),
        run_controllers: false,
        ..EmbeddedHubOptions::new(&dir)
    })
    .await?;
    let admin = hub.admin_client();
    println!(
        "ocm bench dashboard: {} ManagedClusters with status (hub controllers off, so nothing \
         else writes them)",
        args.clusters
    );
    let creating = Instant::now();
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    let now = jiff::Timestamp::now().to_string();
    let results: Vec<anyhow::Result<()>> = futures::stream::iter(0..args.clusters)
        .map(|i| {
            let clusters = clusters.clone();
            let now = now.clone();
            async move {
                let name = format!("cluster-{i:05}");
                let cluster: ManagedCluster = serde_json::from_value(json!({
                    "apiVersion": "cluster.open-cluster-management.io/v1",
                    "kind": "ManagedCluster",
                    "metadata": {"name": name, "labels": {
                        "cluster.open-cluster-management.io/clusterset": "default",
                        "region": format!("region-{}", i % 8)}},
                    "spec": {"hubAcceptsClient": true, "leaseDurationSeconds": 60}}))?;
                clusters.create(&PostParams::default(), &cluster).await?;
                clusters
                    .patch_status(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(status(i, &now)),
                    )
                    .await?;
                Ok(())
            }
        })
        .buffer_unordered(64)
        .collect()
        .await;
    for result in results {
        result?;
    }
    println!("  created in {:.1} s", creating.elapsed().as_secs_f64());

    let shutdown = Shutdown::new();
    let client = ocm_runtime::kubeconfig::client_from_file(&hub.admin_kubeconfig).await?;
    let starting = Instant::now();
    let dashboard =
        ocm_dashboard::Dashboard::start(client, &[([127, 0, 0, 1], 0).into()], shutdown.clone())
            .await?;
    let addr = dashboard.local_addr;
    // The overview lists every cluster once the watch has listed them all.
    let listed = format!(" of {}</span>", args.clusters);
    loop {
        let page = get_raw(addr, "/?fragment=1").await?;
        if page.contains(&listed) && !page.contains("Loading") {
            break;
        }
        anyhow::ensure!(
            starting.elapsed() < Duration::from_secs(600),
            "the dashboard's cache did not fill in 10 minutes"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "  dashboard watch filled (every cluster listed) {:.2} s after start",
        starting.elapsed().as_secs_f64()
    );

    let pages = [
        ("overview, first 100 rows and counts", "/"),
        ("overview sorted by CPU, descending", "/?sort=cpu&dir=desc"),
        ("overview filtered to Unknown", "/?state=unknown"),
        ("overview filtered by text", "/?q=cluster-09"),
        ("overview page 50", "/?page=50"),
        ("cluster page", "/clusters/cluster-04242"),
        ("addon matrix", "/addons"),
        ("join requests", "/join-requests"),
    ];
    measure(addr, &pages, args.requests).await?;

    println!(
        "  again while {} cluster status updates per second arrive:",
        args.churn
    );
    let churn = Shutdown::new();
    let churning = tokio::spawn(churn_clusters(
        clusters.clone(),
        args.clusters,
        args.churn,
        churn.clone(),
    ));
    measure(addr, &pages[..2], args.requests).await?;
    churn.cancel();
    let updates = churning.await.context("churn task")?;
    println!("    ({updates} updates written)");
    let (rss_kib, _) = crate::support::process_usage();
    println!(
        "  process RSS (hub API server with {} clusters + dashboard): {} MiB",
        args.clusters,
        rss_kib / 1024
    );
    if args.hold_seconds > 0 {
        println!("  serving {} for {} s", dashboard.url, args.hold_seconds);
        tokio::time::sleep(Duration::from_secs(args.hold_seconds)).await;
    }
    shutdown.cancel();
    hub.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

async fn measure(
    addr: std::net::SocketAddr,
    pages: &[(&str, &str)],
    requests: usize,
) -> anyhow::Result<()> {
    for (what, path) in pages {
        let mut times = Vec::new();
        let mut size = 0;
        for _ in 0..requests.max(1) {
            let (status, body, took) = get(addr, path).await?;
            anyhow::ensure!(status.contains("200"), "GET {path} answered {status}");
            size = body;
            times.push(took);
        }
        println!(
            "    GET {path} ({what}): {}, {} KiB",
            summary(&mut times),
            size / 1024
        );
    }
    Ok(())
}

/// Flips clusters' Available status at `per_second` until cancelled; returns the updates made.
async fn churn_clusters(
    clusters: Api<ManagedCluster>,
    n: usize,
    per_second: usize,
    stop: Shutdown,
) -> usize {
    let mut done = 0;
    let mut interval =
        tokio::time::interval(Duration::from_secs_f64(1.0 / per_second.max(1) as f64));
    while !stop.is_cancelled() {
        interval.tick().await;
        let i = (done * 7919) % n.max(1);
        let now = jiff::Timestamp::now().to_string();
        let mut patch = status(i, &now);
        patch["status"]["conditions"][2]["status"] =
            json!(if done % 2 == 0 { "Unknown" } else { "True" });
        if clusters
            .patch_status(
                &format!("cluster-{i:05}"),
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await
            .is_ok()
        {
            done += 1;
        }
    }
    done
}
