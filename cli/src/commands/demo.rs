//! `ocm demo`: an embedded hub and N simulated managed clusters in one process, joined step
//! by step with what happens printed in plain words, a sample application placed on every
//! cluster, then a live table of clusters. The data dir is durable: a second run resumes
//! instead of registering again.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

use super::demo_steps::{cluster_names, listen_address, start_dashboard, step, suggest_dashboard};
use clap::Args;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_registration::agent::{Agent, AgentOptions};
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::shutdown::Shutdown;
use ocm_setup::wait::wait_all_available;

use crate::embedded::{EmbeddedHub, EmbeddedHubOptions};
use crate::process_kubelet::LocalImage;

/// Flags of `ocm demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where the demo keeps its state (default ~/.ocm/demo, or ~/.ocm/demo-operator).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// How many simulated clusters to join.
    #[arg(long, default_value_t = 3)]
    pub(crate) clusters: usize,
    /// Address of the hub API server (default: the port of the previous run, else a free one).
    #[arg(long)]
    pub(crate) listen: Option<SocketAddr>,
    /// Exit once every cluster is joined and available instead of showing the live table.
    #[arg(long)]
    pub(crate) until_ready: bool,
    /// The production path: operators install the hub and the agents, which run as `ocm`
    /// processes started by a process kubelet (see docs/install.md).
    #[arg(long)]
    operator: bool,
    /// With --operator: run pods of IMAGE (any tag of its repository) as EXECUTABLE of this
    /// machine, which stands for the image's program (repeatable; see docs/install.md).
    #[arg(
        long = "local-image",
        value_name = "IMAGE=EXECUTABLE",
        requires = "operator"
    )]
    pub(crate) local_images: Vec<LocalImage>,
    #[command(flatten)]
    pub(crate) dashboard: super::dashboard::DashboardFlags,
}

/// Runs the demo.
pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    if args.operator {
        let data_dir = args
            .data_dir
            .clone()
            .unwrap_or_else(|| super::ocm_home().join(super::hub_access::OPERATOR_DEMO_DIR));
        let demo = super::demo_operator::OperatorDemo {
            clusters: args.clusters,
            listen: args.listen,
            until_ready: args.until_ready,
            local_images: args.local_images,
            dashboard: args.dashboard,
        };
        return super::demo_operator::run(demo, &data_dir).await;
    }
    let data_dir = args
        .data_dir
        .clone()
        .unwrap_or_else(|| super::ocm_home().join(super::hub_access::DEMO_DIR));
    let resumed = data_dir.join("objects.db").exists();
    let shutdown = Shutdown::new();
    shutdown.cancel_on_signal();

    step("Starting the hub: embedded Kubernetes API server + registration controllers");
    let listen = listen_address(&data_dir, args.listen);
    let hub = EmbeddedHub::start(EmbeddedHubOptions {
        listen,
        extra_controllers: ocm_setup::controllers::addon_controllers(),
        // The demo shows the whole fleet: ClusterProfiles for the Cluster Inventory API too.
        hub: ocm_registration::hub::HubOptions {
            cluster_profiles: true,
            ..ocm_registration::hub::HubOptions::default()
        },
        ..EmbeddedHubOptions::new(&data_dir)
    })
    .await?;
    if let Some(port) = hub.url.rsplit(':').next() {
        let _ = std::fs::write(data_dir.join("listen"), format!("127.0.0.1:{port}\n"));
    }
    super::hub_access::record_current_hub(&hub.admin_kubeconfig);
    println!("    hub API server: {}", hub.url);
    println!("    data directory: {}", data_dir.display());
    if resumed {
        println!("    (resuming from the previous run's data)");
    }
    let admin = hub.admin_client();
    let dashboard = start_dashboard(&args.dashboard, &admin, &shutdown).await?;

    step("Hub admin runs `ocm init`: a bootstrap token that may only ask to join");
    let token = crate::bootstrap::init_hub(&admin, Some(Duration::from_secs(3600))).await?;
    println!(
        "    token {}.**************** (valid 1 h, group system:bootstrappers:managedcluster)",
        token.id
    );
    let bootstrap = ocm_hub::join::bootstrap_kubeconfig(&hub.url, &hub.ca_pem, &token.to_string());

    let names = cluster_names(args.clusters);
    step(&format!(
        "Starting {} simulated managed clusters, each running its own registration and work agents",
        names.len()
    ));
    let mut agents = Vec::new();
    let mut work_agents = Vec::new();
    let mut already_joined = BTreeMap::new();
    for name in &names {
        let spoke = crate::simulated::logical_spoke(&hub.server, name).await?;
        let has_credentials =
            Api::<Secret>::namespaced(spoke.clone(), ocm_hub::join::AGENT_NAMESPACE)
                .get_opt("hub-kubeconfig-secret")
                .await
                .ok()
                .flatten()
                .is_some();
        already_joined.insert(name.clone(), has_credentials);
        if !has_credentials {
            ocm_hub::join::prepare_spoke(&spoke, &bootstrap).await?;
        }
        println!(
            "    {name}: 2 nodes, 8 CPUs, 32Gi memory{}",
            if has_credentials {
                " — already holds hub credentials, resuming"
            } else {
                " — `ocm join` wrote the bootstrap kubeconfig"
            }
        );
        let spoke_for_work = spoke.clone();
        // The cluster's two agents share one connection to the hub, as in `ocm agent`.
        let hub_client = ocm_runtime::kubeconfig::SharedClient::new();
        let agent = Agent::new(
            spoke,
            AgentOptions {
                cluster_name: name.clone(),
                addon_lease_check_period: Duration::from_secs(5),
                ..Default::default()
            },
        )
        .with_shared_hub_client(hub_client.clone());
        let mut progress = agent.progress();
        let label = name.clone();
        tokio::spawn(async move {
            let mut last = String::new();
            loop {
                let text = progress.borrow_and_update().to_string();
                if text != last {
                    println!("    [{label}] {text}");
                    last = text;
                }
                if progress.changed().await.is_err() {
                    break;
                }
            }
        });
        let token = shutdown.child();
        agents.push(tokio::spawn(async move { agent.run(token).await }));
        let work = ocm_work::agent::WorkAgent::new(
            spoke_for_work,
            ocm_work::agent::WorkAgentOptions {
                cluster_name: name.clone(),
                status_sync_interval: Duration::from_secs(2),
                ..Default::default()
            },
        )
        .with_shared_hub_client(hub_client);
        let token = shutdown.child();
        work_agents.push(tokio::spawn(async move { work.run(token).await }));
    }

    step("Hub admin runs `ocm accept`: approves each cluster's CSR and sets hubAcceptsClient");
    for name in &names {
        let accepted = tokio::time::timeout(
            Duration::from_secs(120),
            crate::accept::accept_when_asked(&admin, name, false),
        )
        .await
        .with_context(|| format!("{name} did not ask to join within 120 s"))??;
        if accepted.accepted_now {
            println!(
                "    {name}: approved CSR {} and accepted",
                accepted.approved_csrs.join(", ")
            );
        } else {
            println!("    {name}: was already accepted");
        }
    }

    step("Waiting until every cluster is Joined and Available (its lease is fresh)");
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    tokio::time::timeout(
        Duration::from_secs(120),
        wait_all_available(&clusters, &names),
    )
    .await
    .context("clusters did not become available within 120 s")??;
    let list = clusters.list(&Default::default()).await?;
    println!();
    print!(
        "{}",
        crate::clusters_table::render(&list.items, jiff::Timestamp::now())
    );

    step(
        "Hub admin places a sample application on every cluster: a Placement over the \
         `default` cluster set and a ManifestWorkReplicaSet (Namespace, ConfigMap, Deployment)",
    );
    crate::sample_app::place(&admin).await?;
    let rows = tokio::time::timeout(
        Duration::from_secs(120),
        crate::sample_app::wait_running(&admin, &names),
    )
    .await
    .context("the sample application did not run everywhere within 120 s")??;
    println!("    each cluster's work agent applied it; the simulated kubelet made it ready:");
    println!();
    print!("{}", crate::sample_app::render(&rows));
    println!();
    step(
        "Hub admin enables the helloworld addon on every cluster: the addon manager installs its \
         agent through ManifestWork and registers it; each agent copies its cluster's ConfigMaps",
    );
    let addon_rows = tokio::time::timeout(
        Duration::from_secs(120),
        enable_helloworld(&hub, &names, &data_dir, &shutdown),
    )
    .await
    .context("helloworld did not become Available everywhere within 120 s")??;
    println!();
    let all_clusters = super::get_output::TableStyle {
        namespace_column: true,
        wide: false,
    };
    print!("{}", super::addon::render_addons(&addon_rows, all_clusters));
    println!();
    step(
        "Hub admin enables the cluster-proxy addon: each cluster's agent opens a tunnel out to \
         the proxy server, so the hub reaches every cluster's API without dialing in",
    );
    let proxy = tokio::time::timeout(
        Duration::from_secs(120),
        super::demo_proxy::enable_cluster_proxy(&hub, &names, &data_dir, &shutdown),
    )
    .await
    .context("cluster-proxy tunnels did not open within 120 s")??;
    println!();
    println!("Try it alongside:");
    suggest_dashboard(dashboard.as_ref());
    println!(
        "    kubectl --kubeconfig {} get managedclusters",
        hub.admin_kubeconfig.display()
    );
    println!(
        "    kubectl --kubeconfig {} get leases -A",
        hub.admin_kubeconfig.display()
    );
    println!(
        "    kubectl --kubeconfig {} get placementdecisions,manifestworkreplicasets -n {}",
        hub.admin_kubeconfig.display(),
        crate::sample_app::NAMESPACE
    );
    println!(
        "    kubectl --kubeconfig {} get manifestworks -A",
        hub.admin_kubeconfig.display()
    );
    println!(
        "    kubectl --kubeconfig {} get managedclusteraddons -A",
        hub.admin_kubeconfig.display()
    );
    if let Some(first) = names.first() {
        println!(
            "    ocm proxy kubectl --kubeconfig {} --cluster {first} -- get nodes",
            hub.admin_kubeconfig.display()
        );
        // The sample's binding of `default` into its namespace gives every cluster a
        // ClusterProfile there, reachable as a Cluster Inventory API consumer would.
        println!(
            "    kubectl --kubeconfig {} get clusterprofiles -n {}",
            hub.admin_kubeconfig.display(),
            crate::sample_app::NAMESPACE
        );
        println!(
            "    ocm clusterprofile kubeconfig --kubeconfig {} -n {} {first} -o {first}.kubeconfig \\
             && kubectl --kubeconfig {first}.kubeconfig get nodes",
            hub.admin_kubeconfig.display(),
            crate::sample_app::NAMESPACE
        );
    }

    if !args.until_ready {
        println!();
        println!("Live view (Ctrl-C to stop; run `ocm demo` again to resume):");
        live_table(&clusters, &shutdown).await;
    }
    shutdown.cancel();
    for agent in agents {
        let _ = tokio::time::timeout(Duration::from_secs(5), agent).await;
    }
    for agent in work_agents {
        let _ = tokio::time::timeout(Duration::from_secs(5), agent).await;
    }
    proxy.stop().await;
    hub.stop().await;
    Ok(())
}

/// Enables helloworld on every cluster (Manual install), runs its addon manager and, for each
/// cluster, its agent in this process with the credentials its pod would mount; returns the
/// ManagedClusterAddOns once all are Available.
async fn enable_helloworld(
    hub: &EmbeddedHub,
    names: &[String],
    data_dir: &Path,
    shutdown: &Shutdown,
) -> anyhow::Result<Vec<ocm_api::addon::v1beta1::ManagedClusterAddOn>> {
    use helloworld_addon::{ADDON_NAME, HelloWorld};
    use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
    let admin = hub.admin_client();
    let cmas: Api<ClusterManagementAddOn> = Api::all(admin.clone());
    let cma: ClusterManagementAddOn = serde_json::from_value(serde_json::json!({
        "apiVersion": "addon.open-cluster-management.io/v1beta1",
        "kind": "ClusterManagementAddOn",
        "metadata": {"name": ADDON_NAME},
        "spec": {"addOnMeta": {"displayName": "Hello World",
                               "description": "copies each cluster's ConfigMaps from the hub"},
                 "installStrategy": {"type": "Manual"}},
    }))?;
    match cmas.create(&Default::default(), &cma).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(err) => return Err(err).context("creating ClusterManagementAddOn helloworld"),
    }
    tokio::spawn(
        ocm_addon_framework::manager::AddonManager::new(admin.clone())
            .with_addon(std::sync::Arc::new(HelloWorld::new(
                "helloworld-addon:latest",
            )))
            .run(shutdown.child()),
    );
    for name in names {
        let mcas: Api<ManagedClusterAddOn> = Api::namespaced(admin.clone(), name);
        let mca: ManagedClusterAddOn = serde_json::from_value(serde_json::json!({
            "apiVersion": "addon.open-cluster-management.io/v1beta1",
            "kind": "ManagedClusterAddOn",
            "metadata": {"name": ADDON_NAME, "namespace": name},
            "spec": {},
        }))?;
        match mcas.create(&Default::default(), &mca).await {
            Ok(_) => println!("    {name}: helloworld enabled"),
            Err(kube::Error::Api(s)) if s.code == 409 => {
                println!("    {name}: helloworld was already enabled")
            }
            Err(err) => return Err(err).with_context(|| format!("enabling helloworld on {name}")),
        }
    }
    for name in names {
        let spoke = crate::simulated::logical_spoke(&hub.server, name).await?;
        let dir = data_dir.join("addon-agents").join(name).join(ADDON_NAME);
        let namespace = ocm_addon_framework::agent_helpers::mount_agent_credentials(
            &admin,
            &spoke,
            name,
            ADDON_NAME,
            &dir,
            Duration::from_secs(120),
        )
        .await?;
        println!(
            "    {name}: agent registered, hub credentials in {namespace}/helloworld-hub-kubeconfig"
        );
        tokio::spawn(helloworld_addon::agent::run(
            ocm_addon_framework::agent_helpers::RotatingHubClient::new(dir),
            spoke,
            name.clone(),
            namespace,
            ADDON_NAME.to_owned(),
            shutdown.child(),
        ));
    }
    let mut rows = Vec::new();
    for name in names {
        let mcas: Api<ManagedClusterAddOn> = Api::namespaced(admin.clone(), name);
        let mca = kube::runtime::wait::await_condition(
            mcas,
            ADDON_NAME,
            |m: Option<&ManagedClusterAddOn>| {
                m.and_then(|m| m.status.as_ref()).is_some_and(|s| {
                    s.conditions
                        .iter()
                        .any(|c| c.type_ == "Available" && c.status == "True")
                })
            },
        )
        .await?;
        rows.extend(mca);
    }
    Ok(rows)
}

async fn live_table(clusters: &Api<ManagedCluster>, shutdown: &Shutdown) {
    let (reader, writer) = kube::runtime::reflector::store();
    let mut stream = watcher(clusters.clone(), watcher::Config::default())
        .backoff_on_errors()
        .reflect(writer)
        .touched_objects()
        .boxed();
    let mut last = String::new();
    let mut tick = tokio::time::interval(Duration::from_secs(2));
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = stream.next() => continue,
            _ = tick.tick() => {}
        }
        let items: Vec<ManagedCluster> = reader.state().iter().map(|c| (**c).clone()).collect();
        // Ages change every second; compare without them to print only real changes.
        let table = crate::clusters_table::render(&items, jiff::Timestamp::now());
        let key: String = table
            .lines()
            .map(|l| l.rsplit_once(' ').map(|(a, _)| a).unwrap_or(l).to_owned())
            .collect();
        if key != last {
            println!("--- {}", jiff::Timestamp::now().strftime("%H:%M:%S"));
            print!("{table}");
            last = key;
        }
    }
}
