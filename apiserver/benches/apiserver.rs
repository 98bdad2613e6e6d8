//! Benchmark of the embedded API server through real kube clients on the in-process service:
//! create and update throughput of small ConfigMaps (SQLite durable in a temporary directory,
//! and memory; 1 and 32 concurrent clients), the time of one full list of 10,000 objects,
//! watch fan-out to 1,000 watchers, and the resident memory per object beyond its JSON with
//! 100,000 objects loaded in memory. Prints a table; nothing is asserted.
//!
//! Run with `cargo bench -p ocm-apiserver --bench apiserver`. `OCM_BENCH_SCALE` (a factor,
//! default 1) scales every count, e.g. `OCM_BENCH_SCALE=0.1` for a quick smoke run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::error::Error;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, ObjectMeta, PostParams, WatchEvent, WatchParams};
use kube::{Client, ResourceExt};
use ocm_apiserver::{ApiServer, ApiServerConfig};
use ocm_apiserver_storage::Bucket;
use tower::ServiceExt;

type BoxError = Box<dyn Error + Send + Sync>;

const NAMESPACE: &str = "bench";

/// Scales a default count by `OCM_BENCH_SCALE`, keeping at least `min`.
fn scaled(default: usize, min: usize) -> usize {
    let factor: f64 = std::env::var("OCM_BENCH_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|f: &f64| f.is_finite() && *f > 0.0)
        .unwrap_or(1.0);
    ((default as f64 * factor).round() as usize).max(min)
}

/// Resident set size of this process in bytes, from `/proc/self/status`.
fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn configmap(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("key".to_owned(), value.to_owned())])),
        ..ConfigMap::default()
    }
}

async fn start(data_dir: Option<std::path::PathBuf>) -> Result<ApiServer, BoxError> {
    let server = ApiServer::start(ApiServerConfig {
        data_dir,
        ..ApiServerConfig::default()
    })
    .await?;
    let client = Client::new(server.service(), "default");
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(NAMESPACE.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client)
        .create(&PostParams::default(), &ns)
        .await?;
    Ok(server)
}

fn clients(server: &ApiServer, n: usize) -> Vec<Api<ConfigMap>> {
    (0..n)
        .map(|_| Api::namespaced(Client::new(server.service(), "default"), NAMESPACE))
        .collect()
}

/// Creates `total` ConfigMaps named `{prefix}-{i}` spread over `apis` (one task per client);
/// returns the elapsed time and, if `keep`, the created objects (left out when measuring
/// memory, so the client side holds nothing).
async fn create_many(
    apis: &[Api<ConfigMap>],
    prefix: &str,
    total: usize,
    keep: bool,
) -> Result<(Duration, Vec<ConfigMap>), BoxError> {
    let n = apis.len();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (c, api) in apis.iter().enumerate() {
        let api = api.clone();
        let prefix = prefix.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut made = Vec::new();
            for i in (c..total).step_by(n) {
                let cm = configmap(&format!("{prefix}-{i}"), &format!("value-{i}"));
                let created = api.create(&PostParams::default(), &cm).await?;
                if keep {
                    made.push(created);
                }
            }
            Ok::<_, BoxError>(made)
        }));
    }
    let mut all = Vec::with_capacity(total);
    for task in tasks {
        all.extend(task.await??);
    }
    Ok((started.elapsed(), all))
}

/// Replaces every object once (changing its data), spread over `apis`; returns the time.
async fn update_all(
    apis: &[Api<ConfigMap>],
    objects: Vec<ConfigMap>,
) -> Result<Duration, BoxError> {
    let n = apis.len();
    let mut per_client: Vec<Vec<ConfigMap>> = vec![Vec::new(); n];
    for (i, object) in objects.into_iter().enumerate() {
        per_client[i % n].push(object);
    }
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (api, objects) in apis.iter().cloned().zip(per_client) {
        tasks.push(tokio::spawn(async move {
            for mut object in objects {
                let name = object.name_any();
                object.data = Some(BTreeMap::from([("key".to_owned(), "updated".to_owned())]));
                api.replace(&name, &PostParams::default(), &object).await?;
            }
            Ok::<_, BoxError>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(started.elapsed())
}

fn per_second(count: usize, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64().max(1e-9)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

struct Row {
    what: String,
    figure: String,
}

fn row(rows: &mut Vec<Row>, what: impl Into<String>, figure: impl Into<String>) {
    let row = Row {
        what: what.into(),
        figure: figure.into(),
    };
    println!("  {:<62} {}", row.what, row.figure);
    rows.push(row);
}

async fn bench_memory_per_object(rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let total = scaled(100_000, 100);
    let server = start(None).await?;
    let apis = clients(&server, 32);
    // Warm up the request path so one-time allocations do not count against the objects.
    create_many(&apis, "warm", 64, false).await?;
    let before = rss_bytes().ok_or("no VmRSS in /proc/self/status")?;
    let (elapsed, _) = create_many(&apis, "rss", total, false).await?;
    let after = rss_bytes().ok_or("no VmRSS in /proc/self/status")?;
    let (_, items) = server
        .store()
        .list(&Bucket::new("", "/configmaps"), Some(NAMESPACE), None);
    let json: usize = items
        .iter()
        .filter(|(_, name, _)| name.starts_with("rss-"))
        .map(|(_, _, object)| object.value.len())
        .sum();
    let grown = after.saturating_sub(before) as f64;
    let per_object = grown / total as f64;
    let json_per_object = json as f64 / total as f64;
    row(
        rows,
        format!("memory: load {total} ConfigMaps (32 clients)"),
        format!(
            "{:.1} s, {:.0}/s",
            elapsed.as_secs_f64(),
            per_second(total, elapsed)
        ),
    );
    row(
        rows,
        "memory: RSS growth per object",
        format!(
            "{per_object:.0} B (JSON {json_per_object:.0} B, beyond JSON {:.0} B; RSS {} -> {} MiB)",
            per_object - json_per_object,
            before / (1 << 20),
            after / (1 << 20)
        ),
    );
    server.shutdown();
    Ok(())
}

async fn bench_writes(rows: &mut Vec<Row>) -> Result<(), BoxError> {
    for durable in [true, false] {
        for writers in [1usize, 32] {
            let total = if writers == 1 {
                scaled(1_000, 10)
            } else {
                scaled(6_400, 64)
            };
            let dir = tempfile::tempdir()?;
            let server = start(durable.then(|| dir.path().to_path_buf())).await?;
            let apis = clients(&server, writers);
            let (created_in, objects) = create_many(&apis, "w", total, true).await?;
            let updated_in = update_all(&apis, objects).await?;
            let backend = if durable { "sqlite" } else { "memory" };
            row(
                rows,
                format!("{backend}, {writers} clients: creates/s ({total} objects)"),
                format!("{:.0}", per_second(total, created_in)),
            );
            row(
                rows,
                format!("{backend}, {writers} clients: updates/s ({total} objects)"),
                format!("{:.0}", per_second(total, updated_in)),
            );
            server.shutdown();
        }
    }
    Ok(())
}

async fn bench_list(rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let total = scaled(10_000, 10);
    let rounds = 5;
    let server = start(None).await?;
    let apis = clients(&server, 32);
    create_many(&apis, "l", total, false).await?;
    let api = &apis[0];
    let mut typed = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        let list = api.list(&ListParams::default()).await?;
        typed.push(started.elapsed());
        assert_eq!(list.items.len(), total);
    }
    let mut raw = Vec::new();
    let mut size = 0;
    for _ in 0..rounds {
        let request = http::Request::get(format!("/api/v1/namespaces/{NAMESPACE}/configmaps"))
            .header("accept", "application/json")
            .body(http_body_util::Full::new(bytes::Bytes::new()))?;
        let started = Instant::now();
        let response = server.service().oneshot(request).await?;
        let body = response.into_body().collect().await?.to_bytes();
        raw.push(started.elapsed());
        size = body.len();
    }
    row(
        rows,
        format!("list {total} objects, kube client incl. decoding (median of {rounds})"),
        format!("{:.1} ms", median(typed).as_secs_f64() * 1e3),
    );
    row(
        rows,
        format!("list {total} objects, raw HTTP body (median of {rounds})"),
        format!(
            "{:.1} ms ({:.1} MiB)",
            median(raw).as_secs_f64() * 1e3,
            size as f64 / (1 << 20) as f64
        ),
    );
    server.shutdown();
    Ok(())
}

/// What a watcher reports: it saw the warm-up write, the single write, or all burst writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    Warm,
    One,
    Burst,
}

/// Waits until `watchers` watchers have reported `want`.
async fn wait_all(
    want: Seen,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Seen>,
    watchers: usize,
) -> Result<(), BoxError> {
    let mut n = 0;
    while n < watchers {
        match rx.recv().await {
            Some(seen) if seen == want => n += 1,
            Some(_) => {}
            None => return Err(BoxError::from("a watcher ended early")),
        }
    }
    Ok(())
}

async fn bench_watch(rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let watchers = scaled(1_000, 10);
    let burst = 100;
    let server = start(None).await?;
    let apis = clients(&server, 32);
    let writer = apis[0].clone();
    let probe = writer
        .create(&PostParams::default(), &configmap("probe", "start"))
        .await?;
    let from = probe.resource_version().ok_or("no resourceVersion")?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Seen>();
    let mut tasks = Vec::new();
    for w in 0..watchers {
        let api = apis[w % apis.len()].clone();
        let tx = tx.clone();
        let from = from.clone();
        tasks.push(tokio::spawn(async move {
            let mut stream = api.watch(&WatchParams::default(), &from).await?.boxed();
            let mut bursts = 0;
            while let Some(event) = stream.try_next().await? {
                let object = match event {
                    WatchEvent::Added(o) | WatchEvent::Modified(o) => o,
                    WatchEvent::Error(e) => return Err(BoxError::from(e.to_string())),
                    _ => continue,
                };
                let value = object
                    .data
                    .as_ref()
                    .and_then(|d| d.get("key"))
                    .cloned()
                    .unwrap_or_default();
                let seen = if value == "warm" {
                    Seen::Warm
                } else if value == "one" {
                    Seen::One
                } else if value.starts_with("burst") {
                    bursts += 1;
                    if bursts < burst {
                        continue;
                    }
                    Seen::Burst
                } else {
                    continue;
                };
                if tx.send(seen).is_err() {
                    break;
                }
            }
            Ok::<_, BoxError>(())
        }));
    }
    drop(tx);
    // Warm-up: every watcher is connected once it has seen this write.
    let setup = Instant::now();
    let warm = writer
        .replace("probe", &PostParams::default(), &{
            let mut cm = configmap("probe", "warm");
            cm.metadata.resource_version = probe.resource_version();
            cm
        })
        .await?;
    wait_all(Seen::Warm, &mut rx, watchers).await?;
    let setup = setup.elapsed();

    let started = Instant::now();
    let mut cm = configmap("probe", "one");
    cm.metadata.resource_version = warm.resource_version();
    writer.replace("probe", &PostParams::default(), &cm).await?;
    wait_all(Seen::One, &mut rx, watchers).await?;
    let one = started.elapsed();

    let started = Instant::now();
    let writes = futures::future::try_join_all((0..burst).map(|i| {
        let api = apis[i % apis.len()].clone();
        async move {
            api.create(
                &PostParams::default(),
                &configmap(&format!("burst-{i}"), &format!("burst-{i}")),
            )
            .await
        }
    }));
    writes.await?;
    wait_all(Seen::Burst, &mut rx, watchers).await?;
    let all = started.elapsed();
    for task in &tasks {
        task.abort();
    }
    row(
        rows,
        format!("watch: connect {watchers} watchers and deliver a first write"),
        format!("{:.0} ms", setup.as_secs_f64() * 1e3),
    );
    row(
        rows,
        format!("watch: 1 write until all {watchers} watchers received it"),
        format!("{:.1} ms", one.as_secs_f64() * 1e3),
    );
    row(
        rows,
        format!("watch: {burst} writes until all {watchers} watchers received all"),
        format!(
            "{:.0} ms ({:.0} events/s delivered)",
            all.as_secs_f64() * 1e3,
            per_second(burst * watchers, all)
        ),
    );
    server.shutdown();
    Ok(())
}

fn main() -> Result<(), BoxError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("ocm-apiserver benchmark ({cores} cores, in-process kube clients)");
    let started = Instant::now();
    let mut rows = Vec::new();
    runtime.block_on(async {
        // Memory first, so the RSS baseline is not inflated by earlier phases' heaps.
        bench_memory_per_object(&mut rows).await?;
        bench_writes(&mut rows).await?;
        bench_list(&mut rows).await?;
        bench_watch(&mut rows).await?;
        Ok::<_, BoxError>(())
    })?;
    println!();
    println!("| measurement | result |");
    println!("|---|---|");
    for row in &rows {
        println!("| {} | {} |", row.what, row.figure);
    }
    println!("total {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}
