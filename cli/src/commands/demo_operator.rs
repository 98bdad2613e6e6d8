//! `ocm demo --operator`: the production install path on one machine. The hub is an empty
//! Kubernetes API server; `ocm init --operator` installs the cluster-manager operator, whose
//! ClusterManager deploys the hub components; each simulated managed cluster gets the
//! klusterlet operator and a Klusterlet, whose agents join. Every one of those is a
//! Deployment of the `ocm` image, run as a real `ocm` process by the process kubelet. As
//! `ocm demo`, it serves the web dashboard with the hub's admin kubeconfig (unless
//! `--no-dashboard`).

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_runtime::shutdown::Shutdown;

use super::demo_steps::{cluster_names, listen_address, start_dashboard, step, suggest_dashboard};
use crate::process_kubelet::LocalImage;
use crate::simulated::SimulatedCluster;
use ocm_setup::kubelet::start_kubelet;
use ocm_setup::operators::{KlusterletRequest, install_hub, install_klusterlet, wait_hub_ready};
use ocm_setup::wait::wait_all_available;

/// What `ocm demo --operator` was asked for.
#[derive(Debug)]
pub struct OperatorDemo {
    /// How many simulated clusters join.
    pub clusters: usize,
    /// Address of the hub API server (default: the previous run's, else a free port).
    pub listen: Option<std::net::SocketAddr>,
    /// Exit once every cluster is Available.
    pub until_ready: bool,
    /// Images run as executables of this machine.
    pub local_images: Vec<LocalImage>,
    /// Whether and where the dashboard is served.
    pub dashboard: super::dashboard::DashboardFlags,
}

/// How long each stage may take.
const STAGE: Duration = Duration::from_secs(120);

/// The `ocm` pods running on a cluster, as `namespace/name` lines.
async fn pods(client: &kube::Client) -> anyhow::Result<Vec<String>> {
    let list = Api::<Pod>::all(client.clone())
        .list(&Default::default())
        .await?;
    let mut out: Vec<String> = list
        .items
        .iter()
        .filter(|p| {
            p.metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(crate::process_kubelet::pod::PROCESS_LABEL))
        })
        .map(|p| {
            format!(
                "{}/{}",
                p.metadata.namespace.as_deref().unwrap_or_default(),
                p.metadata.name.as_deref().unwrap_or_default()
            )
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Runs the operator demo.
pub async fn run(args: OperatorDemo, data_dir: &Path) -> anyhow::Result<()> {
    let image = ocm_setup::operators::default_image();
    let shutdown = Shutdown::new();
    shutdown.cancel_on_signal();

    step("Starting the hub cluster: an empty Kubernetes API server; its ocm pods run as processes");
    let hub_dir = data_dir.join(super::hub_access::OPERATOR_DEMO_HUB_DIR);
    // The same port as last time: the clusters' agents keep the hub's URL.
    let listen = listen_address(data_dir, args.listen);
    let hub = SimulatedCluster::start(&hub_dir, listen).await?;
    if let Some(port) = hub.url.rsplit(':').next() {
        let _ = std::fs::write(data_dir.join("listen"), format!("127.0.0.1:{port}\n"));
    }
    start_kubelet(&hub, &image, &args.local_images, &hub_dir, &shutdown)?;
    super::hub_access::record_current_hub(&hub.kubeconfig);
    println!(
        "    hub API server: {} (kubeconfig {})",
        hub.url,
        hub.kubeconfig.display()
    );
    let admin = hub.client();
    let dashboard = start_dashboard(&args.dashboard, &admin, &shutdown).await?;

    step(&format!(
        "`ocm init --operator`: the cluster-manager operator ({image}) and a ClusterManager"
    ));
    install_hub(&admin, &image).await?;
    wait_hub_ready(&admin, STAGE).await?;
    println!("    the operator deployed the hub components, each a process now:");
    for pod in pods(&admin).await? {
        println!("      {pod}");
    }
    let token = crate::bootstrap::init_hub(&admin, Some(Duration::from_secs(3600))).await?;
    let hub_server = ocm_runtime::kubeconfig::current_server(&ocm_runtime::kubeconfig::parse(
        &std::fs::read_to_string(&hub.kubeconfig)?,
    )?)?;
    let ca = hub_server.ca_pem.context("the hub kubeconfig has no CA")?;
    let bootstrap = ocm_hub::join::bootstrap_kubeconfig(&hub.url, &ca, &token.to_string());

    let names = cluster_names(args.clusters);
    step(&format!(
        "`ocm join --operator` on {} simulated clusters: the klusterlet operator and a Klusterlet each",
        names.len()
    ));
    let mut spokes = Vec::new();
    for name in &names {
        let dir = data_dir.join("clusters").join(name);
        let spoke = SimulatedCluster::start(&dir, ([127, 0, 0, 1], 0).into()).await?;
        start_kubelet(&spoke, &image, &args.local_images, &dir, &shutdown)?;
        install_klusterlet(
            &spoke.client(),
            &KlusterletRequest {
                image: &image,
                bootstrap: &bootstrap,
                cluster_name: name,
                singleton: false,
                client_cert_expiration_seconds: None,
                several_hubs: None,
                eviction_grace: None,
            },
        )
        .await?;
        println!(
            "    {name}: {} (kubeconfig {})",
            spoke.url,
            spoke.kubeconfig.display()
        );
        spokes.push(spoke);
    }

    step("Hub admin runs `ocm accept`: approves each cluster's CSR and sets hubAcceptsClient");
    for name in &names {
        let accepted =
            tokio::time::timeout(STAGE, crate::accept::accept_when_asked(&admin, name, false))
                .await
                .with_context(|| {
                    format!("{name} did not ask to join within {} s", STAGE.as_secs())
                })??;
        println!(
            "    {name}: {}",
            if accepted.accepted_now {
                "accepted"
            } else {
                "was already accepted"
            }
        );
    }
    step("Waiting until every cluster is Joined and Available");
    let clusters: Api<ManagedCluster> = Api::all(admin.clone());
    tokio::time::timeout(STAGE, wait_all_available(&clusters, &names))
        .await
        .context("clusters did not become available in time")??;
    let list = clusters.list(&Default::default()).await?;
    println!();
    print!(
        "{}",
        crate::clusters_table::render(&list.items, jiff::Timestamp::now())
    );
    if let Some(first) = spokes.first() {
        println!();
        println!("    on {}, the agents are processes too:", names[0]);
        for pod in pods(&first.client()).await? {
            println!("      {pod}");
        }
    }
    println!();
    println!("Try it alongside:");
    suggest_dashboard(dashboard.as_ref());
    println!(
        "    kubectl --kubeconfig {} get clustermanager,deployments,pods -A",
        hub.kubeconfig.display()
    );
    if !args.until_ready {
        println!();
        println!("Running (Ctrl-C to stop).");
        shutdown.cancelled().await;
    }
    shutdown.cancel();
    for spoke in spokes {
        spoke.stop().await;
    }
    hub.stop().await;
    Ok(())
}
