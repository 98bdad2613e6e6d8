//! The cluster-proxy step of `ocm demo`: the proxy server next to the hub, the addon enabled
//! on every simulated cluster, each agent run in this process with its pod credentials, and
//! the demo's hub admins made admins of every simulated cluster so `ocm proxy kubectl` works
//! at once.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, PostParams};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_cluster_proxy::addon::ClusterProxy;
use ocm_cluster_proxy::identity::IDENTITY_PREFIX;
use ocm_cluster_proxy::server::{self, ProxyServerOptions, RunningProxy};
use ocm_cluster_proxy::{ADDON_NAME, run_agent_in_process};
use ocm_hub::embedded::EmbeddedHub;
use ocm_runtime::shutdown::Shutdown;

/// On every simulated cluster, binds `cluster-admin` to the group the hub's `system:masters`
/// members act as through the proxy — a demo convenience; a real cluster's own admins decide
/// what hub users may do there.
async fn make_hub_admins_cluster_admins(spoke: &kube::Client) -> anyhow::Result<()> {
    let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "ocm-demo-hub-admins"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                      "name": format!("{IDENTITY_PREFIX}system:masters")}],
    }))?;
    match Api::<ClusterRoleBinding>::all(spoke.clone())
        .create(&PostParams::default(), &binding)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(err) => Err(err).context("binding cluster-admin for the hub's admins"),
    }
}

/// Starts the proxy server and enables cluster-proxy on `names`; returns once every
/// cluster's tunnel is open.
pub async fn enable_cluster_proxy(
    hub: &EmbeddedHub,
    names: &[String],
    data_dir: &Path,
    shutdown: &Shutdown,
) -> anyhow::Result<RunningProxy> {
    let admin = hub.admin_client();
    let proxy = server::start(
        admin.clone(),
        ProxyServerOptions::default(),
        shutdown.child(),
    )
    .await
    .context("starting the cluster proxy server")?;
    println!("    proxy server: {}", proxy.endpoint.url);
    ocm_cluster_proxy::access::ensure_cluster_management_addon(&admin).await?;
    tokio::spawn(
        ocm_addon_framework::manager::AddonManager::new(admin.clone())
            .with_addon(Arc::new(ClusterProxy::new(
                "ocm:latest",
                proxy.endpoint.clone(),
            )))
            .run(shutdown.child()),
    );
    for name in names {
        let mca: ManagedClusterAddOn = serde_json::from_value(serde_json::json!({
            "metadata": {"name": ADDON_NAME, "namespace": name}, "spec": {}}))?;
        match Api::<ManagedClusterAddOn>::namespaced(admin.clone(), name)
            .create(&PostParams::default(), &mca)
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(err) => {
                return Err(err).with_context(|| format!("enabling {ADDON_NAME} on {name}"));
            }
        }
    }
    for name in names {
        let spoke = crate::simulated::logical_spoke(&hub.server, name).await?;
        make_hub_admins_cluster_admins(&spoke).await?;
        let dir = data_dir.join("addon-agents").join(name).join(ADDON_NAME);
        run_agent_in_process(
            &admin,
            spoke,
            name,
            &proxy.endpoint,
            &dir,
            Duration::from_secs(5),
            shutdown.child(),
        )
        .await?;
    }
    for name in names {
        proxy.tunnels.wait_for(name, |t| t.is_some()).await;
        println!("    {name}: tunnel open");
    }
    Ok(proxy)
}
