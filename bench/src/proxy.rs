//! `ocm bench proxy`: the cluster-proxy addon's cost.
//!
//! 1. Throughput: a hub with `--clusters` simulated clusters (joined by their registration
//!    agents), the proxy server, the addon manager and each cluster's proxy agent running with
//!    its pod credentials, as in the end-to-end test. The hub admin's mapped identity
//!    (`ocm:hub:admin`) is bound to `cluster-admin` on every cluster. `--concurrency` clients
//!    send GETs of a small ConfigMap, of one big ConfigMap and a LIST of `--big-configmaps` big
//!    ones, for `--seconds` each, once directly to the cluster (the hub's HTTPS address with the
//!    cluster's path prefix `/clusters/managed-<name>`, which is how a simulated cluster is
//!    reached over the network) and once through the proxy (`/clusters/<name>` on its URL). The
//!    agents reach their cluster over that same HTTPS address, so the proxy path adds exactly
//!    the proxy server and the tunnel.
//! 2. Tunnel scale ([`crate::proxy_tunnels`]): one `ocm proxy server` process holding
//!    `--tunnels` tunnels; its RSS.
//!
//! Everything but that server process shares this process, and with it the machine's cores.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, PostParams};
use kube::config::Kubeconfig;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_cluster_proxy::pki::Endpoint;
use ocm_cluster_proxy::server::{self, ProxyServerOptions};
use ocm_runtime::shutdown::Shutdown;
use serde_json::json;

use crate::proxy_load::{self as load, Row};
use ocm_hub::embedded::EmbeddedHub;
use ocm_hub::fleet::{Fleet, FleetOptions};

/// Flags of `ocm bench proxy`.
#[derive(Debug, Args)]
pub struct BenchProxyArgs {
    /// Simulated clusters for the throughput measurement.
    #[arg(long, default_value_t = 2)]
    clusters: usize,
    /// How long each workload runs on each path, in seconds (0 skips the throughput part).
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Concurrent clients, each with its own connections, spread over the clusters.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Size of each big ConfigMap's data, in KiB (a ConfigMap holds at most 1 MiB).
    #[arg(long, default_value_t = 900)]
    big_kib: usize,
    /// How many big ConfigMaps the LIST returns.
    #[arg(long, default_value_t = 8)]
    big_configmaps: usize,
    /// Tunnels one proxy server process holds in the scale measurement (0 skips it).
    #[arg(long, default_value_t = 1000)]
    tunnels: usize,
}

/// Namespace of the benchmark's ConfigMaps on each cluster.
const NAMESPACE: &str = "proxy-bench";
/// Namespace of the big ConfigMaps.
const BIG_NAMESPACE: &str = "proxy-bench-big";
/// The hub admin's identity on clusters, as the proxy maps it.
const MAPPED_ADMIN: &str = "ocm:hub:admin";

/// Runs the benchmark.
pub async fn bench(args: BenchProxyArgs) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("ocm-bench-proxy-{}", std::process::id()));
    println!(
        "ocm bench proxy: {} clusters, {} clients, {} s per workload and path; {} tunnels",
        args.clusters, args.concurrency, args.seconds, args.tunnels
    );
    let joining = Instant::now();
    let fleet = Fleet::start(
        &dir,
        FleetOptions {
            join_timeout: Duration::from_secs(300),
            ..FleetOptions::new(args.clusters)
        },
    )
    .await?;
    println!(
        "  hub {} with {} joined clusters in {:.1} s (not measured)",
        fleet.hub.url,
        fleet.clusters.len(),
        joining.elapsed().as_secs_f64()
    );
    let result = async {
        if args.seconds > 0 && args.clusters > 0 {
            throughput(&fleet, &dir, &args).await?;
        }
        if args.tunnels > 0 {
            crate::proxy_tunnels::run(&fleet.hub, &dir, args.tunnels).await?;
        }
        anyhow::Ok(())
    }
    .await;
    fleet.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// A kubeconfig of the hub admin for `cluster`'s API server, directly: the hub's address with
/// the simulated cluster's path prefix.
fn direct_kubeconfig(hub: &EmbeddedHub, cluster: &str) -> anyhow::Result<Kubeconfig> {
    let config = Kubeconfig::read_from(&hub.admin_kubeconfig)
        .with_context(|| format!("reading {}", hub.admin_kubeconfig.display()))?;
    let endpoint = Endpoint {
        url: hub.url.clone(),
        ca_pem: hub.ca_pem.clone(),
    };
    let prefix = format!(
        "/clusters/{}",
        ocm_hub::simulated::logical_cluster_name(cluster)
    );
    Ok(ocm_cluster_proxy::access::retarget(
        &config,
        &endpoint,
        &prefix,
        &format!("{cluster}-direct"),
    )?)
}

/// The proxy server, the addon manager and every cluster's agent, running until `stop`.
async fn start_proxy(
    fleet: &Fleet,
    dir: &Path,
    stop: &Shutdown,
) -> anyhow::Result<server::RunningProxy> {
    let admin = fleet.hub.admin_client();
    let proxy = server::start(admin.clone(), ProxyServerOptions::default(), stop.child()).await?;
    ocm_cluster_proxy::access::ensure_cluster_management_addon(&admin).await?;
    tokio::spawn(
        ocm_addon_framework::manager::AddonManager::new(admin.clone())
            .with_addon(Arc::new(ocm_cluster_proxy::addon::ClusterProxy::new(
                "ocm:bench",
                proxy.endpoint.clone(),
            )))
            .run(stop.child()),
    );
    for name in &fleet.clusters {
        let addon: ManagedClusterAddOn = serde_json::from_value(
            json!({"metadata": {"name": ocm_cluster_proxy::ADDON_NAME, "namespace": name},
                   "spec": {}}),
        )?;
        Api::<ManagedClusterAddOn>::namespaced(admin.clone(), name)
            .create(&PostParams::default(), &addon)
            .await
            .with_context(|| format!("enabling cluster-proxy on {name}"))?;
        let spoke =
            ocm_runtime::kubeconfig::client_from_kubeconfig(direct_kubeconfig(&fleet.hub, name)?)
                .await?;
        ocm_cluster_proxy::run_agent_in_process(
            &admin,
            spoke,
            name,
            &proxy.endpoint,
            &dir.join("agents").join(name),
            Duration::from_secs(2),
            stop.child(),
        )
        .await?;
    }
    for name in &fleet.clusters {
        tokio::time::timeout(
            Duration::from_secs(120),
            proxy.tunnels.wait_for(name, |t| t.is_some()),
        )
        .await
        .with_context(|| format!("no tunnel from {name}"))?;
    }
    Ok(proxy)
}

/// Creates `value` through `api` (the bench's clusters are fresh: nothing exists yet).
async fn create<K>(api: &Api<K>, value: serde_json::Value) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let object: K = serde_json::from_value(value)?;
    api.create(&PostParams::default(), &object)
        .await
        .with_context(|| {
            format!(
                "creating {}",
                object.meta().name.clone().unwrap_or_default()
            )
        })?;
    Ok(())
}

/// The ConfigMaps the workloads read, and `cluster-admin` for the hub admin's mapped identity.
async fn prepare_cluster(spoke: &kube::Client, args: &BenchProxyArgs) -> anyhow::Result<()> {
    create(
        &Api::<ClusterRoleBinding>::all(spoke.clone()),
        json!({"metadata": {"name": "proxy-bench-admin"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "cluster-admin"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                             "name": MAPPED_ADMIN}]}),
    )
    .await?;
    let namespaces = Api::<Namespace>::all(spoke.clone());
    for ns in [NAMESPACE, BIG_NAMESPACE] {
        create(&namespaces, json!({"metadata": {"name": ns}})).await?;
    }
    create(
        &Api::<ConfigMap>::namespaced(spoke.clone(), NAMESPACE),
        json!({"metadata": {"name": "small", "namespace": NAMESPACE},
               "data": {"greeting": "hello", "cluster": "simulated"}}),
    )
    .await?;
    let payload: String = "0123456789abcdef"
        .chars()
        .cycle()
        .take(args.big_kib * 1024)
        .collect();
    let big = Api::<ConfigMap>::namespaced(spoke.clone(), BIG_NAMESPACE);
    for i in 1..=args.big_configmaps.max(1) {
        create(
            &big,
            json!({"metadata": {"name": format!("big-{i}"), "namespace": BIG_NAMESPACE},
                   "data": {"payload": payload}}),
        )
        .await?;
    }
    Ok(())
}

/// `count` clients of the cluster kubeconfigs, round-robin.
async fn clients(configs: &[Kubeconfig], count: usize) -> anyhow::Result<Vec<kube::Client>> {
    let mut clients = Vec::with_capacity(count);
    for config in configs.iter().cycle().take(count) {
        clients.push(ocm_runtime::kubeconfig::client_from_kubeconfig(config.clone()).await?);
    }
    Ok(clients)
}

async fn throughput(fleet: &Fleet, dir: &Path, args: &BenchProxyArgs) -> anyhow::Result<()> {
    let stop = Shutdown::new();
    let setting_up = Instant::now();
    let proxy = start_proxy(fleet, dir, &stop).await?;
    let mut direct = Vec::new();
    let mut proxied = Vec::new();
    for name in &fleet.clusters {
        prepare_cluster(&fleet.spoke(name).await?, args).await?;
        direct.push(direct_kubeconfig(&fleet.hub, name)?);
        let text =
            ocm_cluster_proxy::access::proxy_kubeconfig(&fleet.hub.admin_kubeconfig, name).await?;
        proxied.push(
            serde_json::from_str::<Kubeconfig>(&text).context("parsing the proxy kubeconfig")?,
        );
    }
    println!(
        "  throughput: proxy server {}, {} agents with tunnels open, set up in {:.1} s",
        proxy.endpoint.url,
        fleet.clusters.len(),
        setting_up.elapsed().as_secs_f64()
    );
    let workloads = [
        (
            "small GET".to_owned(),
            format!("/api/v1/namespaces/{NAMESPACE}/configmaps/small"),
        ),
        (
            format!("GET {} KiB ConfigMap", args.big_kib),
            format!("/api/v1/namespaces/{BIG_NAMESPACE}/configmaps/big-1"),
        ),
        (
            format!("LIST {} x {} KiB", args.big_configmaps.max(1), args.big_kib),
            format!("/api/v1/namespaces/{BIG_NAMESPACE}/configmaps"),
        ),
    ];
    let duration = Duration::from_secs(args.seconds);
    let concurrency = args.concurrency.max(1);
    let mut rows = Vec::new();
    for (workload, path) in workloads {
        let direct_figures = load::run(clients(&direct, concurrency).await?, &path, duration)
            .await
            .with_context(|| format!("{workload}, direct"))?;
        let proxy_figures = load::run(clients(&proxied, concurrency).await?, &path, duration)
            .await
            .with_context(|| format!("{workload}, through the proxy"))?;
        let versus = proxy_figures.per_second() / direct_figures.per_second().max(f64::EPSILON);
        rows.push(Row {
            workload: workload.clone(),
            path: "direct",
            figures: direct_figures,
            versus_direct: None,
        });
        rows.push(Row {
            workload,
            path: "proxy",
            figures: proxy_figures,
            versus_direct: Some(versus),
        });
    }
    for line in load::render(&rows).lines() {
        println!("  {line}");
    }
    stop.cancel();
    proxy.stop().await;
    Ok(())
}
