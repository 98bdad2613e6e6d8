//! The cluster-proxy addon end to end: a hub with simulated clusters, the proxy server, the
//! addon installed and registered by the framework, agents running with their pod credentials,
//! and real kubectl (through `ocm proxy kubeconfig`) reaching clusters through the tunnels.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, DeleteParams};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_cluster_proxy::addon::ClusterProxy;
use ocm_cluster_proxy::server::{self, ProxyServerOptions};
use ocm_e2e::WAIT;
use ocm_runtime::shutdown::Shutdown;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");
const ALICE: &str = "system:serviceaccount:team:alice";

use ocm_e2e::create_or_keep as create;

struct Kubectl {
    kubeconfig: PathBuf,
}

impl Kubectl {
    /// Runs kubectl; returns (success, stdout, stderr).
    async fn run(
        &self,
        args: &[&str],
        stdin: Option<&str>,
    ) -> anyhow::Result<(bool, String, String)> {
        ocm_e2e::kubectl(&self.kubeconfig, args, stdin).await
    }

    /// The Status a kube client with the same kubeconfig gets listing Namespaces.
    async fn refusal(&self) -> anyhow::Result<kube::core::Status> {
        let client = ocm_runtime::kubeconfig::client_from_file(&self.kubeconfig).await?;
        match Api::<Namespace>::all(client)
            .list(&Default::default())
            .await
        {
            Err(kube::Error::Api(status)) => Ok(*status),
            other => bail!("listing namespaces was not refused: {other:?}"),
        }
    }

    async fn ok(&self, args: &[&str]) -> anyhow::Result<String> {
        let (ok, out, err) = self.run(args, None).await?;
        if !ok {
            bail!("kubectl {args:?} failed: {err}");
        }
        Ok(out)
    }

    async fn fails(&self, args: &[&str]) -> anyhow::Result<String> {
        let (ok, out, err) = self.run(args, None).await?;
        if ok {
            bail!("kubectl {args:?} succeeded: {out}");
        }
        Ok(err)
    }
}

/// `ocm proxy kubeconfig --cluster <cluster>` with the hub credentials in `hub_kubeconfig`.
async fn proxy_kubeconfig(
    hub_kubeconfig: &Path,
    cluster: &str,
    dir: &Path,
) -> anyhow::Result<Kubectl> {
    let out = dir.join(format!(
        "{}-{cluster}.kubeconfig",
        hub_kubeconfig
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("user")
    ));
    let status = tokio::process::Command::new(OCM)
        .args(["proxy", "kubeconfig", "--cluster", cluster, "--kubeconfig"])
        .arg(hub_kubeconfig)
        .arg("-o")
        .arg(&out)
        .status()
        .await?;
    anyhow::ensure!(status.success(), "ocm proxy kubeconfig failed");
    Ok(Kubectl { kubeconfig: out })
}

async fn ocm_output(args: &[&str], hub_kubeconfig: &Path) -> anyhow::Result<String> {
    let out = tokio::process::Command::new(OCM)
        .args(args)
        .arg("--kubeconfig")
        .arg(hub_kubeconfig)
        .output()
        .await?;
    anyhow::ensure!(
        out.status.success(),
        "ocm {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Grants `ocm:hub:<alice>` on a cluster everything on ConfigMaps in namespace `demo`.
async fn grant_configmaps(spoke: &kube::Client) -> anyhow::Result<()> {
    create(
        &Api::<Role>::namespaced(spoke.clone(), "demo"),
        json!({"metadata": {"name": "configmaps", "namespace": "demo"},
               "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]}),
    )
    .await?;
    create(
        &Api::<RoleBinding>::namespaced(spoke.clone(), "demo"),
        json!({"metadata": {"name": "alice-configmaps", "namespace": "demo"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                           "name": "configmaps"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                             "name": format!("ocm:hub:{ALICE}")}]}),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kubectl_reaches_clusters_through_tunnels_as_the_mapped_identity() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (hub, clusters, _agents) = ocm_e2e::fleet(dir.path(), 2).await?;
    let admin = hub.admin_client();
    let (c01, c02) = (clusters[0].clone(), clusters[1].clone());

    // The proxy server and the addon on both clusters, agents with their pod credentials.
    let proxy = server::start(
        admin.clone(),
        ProxyServerOptions::default(),
        Shutdown::new(),
    )
    .await?;
    let endpoint = proxy.endpoint.clone();
    ocm_cluster_proxy::access::ensure_cluster_management_addon(&admin).await?;
    let manager = Shutdown::new();
    tokio::spawn(
        ocm_addon_framework::manager::AddonManager::new(admin.clone())
            .with_addon(Arc::new(ClusterProxy::new("ocm:test", endpoint.clone())))
            .run(manager.clone()),
    );
    let mut agent_stops = Vec::new();
    let mut agent_states = Vec::new();
    for name in &clusters {
        create(
            &Api::<ManagedClusterAddOn>::namespaced(admin.clone(), name),
            json!({"metadata": {"name": "cluster-proxy", "namespace": name}, "spec": {}}),
        )
        .await?;
        let stop = Shutdown::new();
        let (_, state) = ocm_cluster_proxy::run_agent_in_process(
            &admin,
            ocm_e2e::simulated_spoke(&hub, name).await?,
            name,
            &endpoint,
            &dir.path().join("agents").join(name),
            Duration::from_millis(500),
            stop.clone(),
        )
        .await?;
        agent_stops.push(stop);
        agent_states.push(state);
    }
    for name in &clusters {
        tokio::time::timeout(WAIT, proxy.tunnels.wait_for(name, |t| t.is_some()))
            .await
            .with_context(|| format!("no tunnel from {name}"))?;
    }

    // Alice, a hub user (a service account token), without any hub permission.
    create(
        &Api::<Namespace>::all(admin.clone()),
        json!({"metadata": {"name": "team"}}),
    )
    .await?;
    create(
        &Api::<ServiceAccount>::namespaced(admin.clone(), "team"),
        json!({"metadata": {"name": "alice", "namespace": "team"}}),
    )
    .await?;
    let alice_hub =
        ocm_e2e::service_account_kubeconfig(&admin, &hub.admin_kubeconfig, "team", "alice").await?;
    let alice = proxy_kubeconfig(&alice_hub, &c01, dir.path()).await?;
    let err = alice.fails(&["get", "namespaces"]).await?;
    assert!(err.contains("Forbidden"), "{err}");
    let refused = alice.refusal().await?;
    assert_eq!(refused.code, 403);
    assert!(
        refused.message.contains(&format!(
            "User \"{ALICE}\" cannot get resource \"managedclusters/proxy\""
        )),
        "{refused:?}"
    );

    // With the hub permission for c01, she reaches c01 as ocm:hub:<alice>: the cluster's RBAC
    // decides, and it grants nothing yet.
    ocm_e2e::allow_proxy(
        &admin,
        ("proxy-c01", "alice-proxy-c01"),
        &c01,
        ("team", "alice"),
        &["*"],
    )
    .await?;
    let err = alice.fails(&["get", "namespaces"]).await?;
    assert!(
        err.contains(&format!(
            "User \"ocm:hub:{ALICE}\" cannot list resource \"namespaces\""
        )),
        "{err}"
    );

    // The cluster grants her ConfigMaps in `demo`: apply, get, and a watch that sees a change.
    let spoke = ocm_e2e::simulated_spoke(&hub, &c01).await?;
    create(
        &Api::<Namespace>::all(spoke.clone()),
        json!({"metadata": {"name": "demo"}}),
    )
    .await?;
    grant_configmaps(&spoke).await?;
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: greeting\n  namespace: demo\ndata:\n  hello: world\n";
    let (ok, _, err) = alice.run(&["apply", "-f", "-"], Some(manifest)).await?;
    assert!(ok, "apply through the proxy: {err}");
    let value = alice
        .ok(&[
            "-n",
            "demo",
            "get",
            "configmap",
            "greeting",
            "-o",
            "jsonpath={.data.hello}",
        ])
        .await?;
    assert_eq!(value, "world");
    let seen = Api::<ConfigMap>::namespaced(spoke.clone(), "demo")
        .get("greeting")
        .await?;
    assert_eq!(
        seen.data
            .unwrap_or_default()
            .get("hello")
            .map(String::as_str),
        Some("world")
    );

    let mut watch = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&alice.kubeconfig)
        .args(["-n", "demo", "get", "configmaps", "-w", "-o", "name"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = BufReader::new(watch.stdout.take().context("watch stdout")?).lines();
    let wait_line = async |lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
                           want: &str|
           -> anyhow::Result<()> {
        loop {
            match tokio::time::timeout(WAIT, lines.next_line()).await {
                Ok(Ok(Some(line))) if line.contains(want) => return Ok(()),
                Ok(Ok(Some(_))) => continue,
                _ => bail!("the watch ended before {want} appeared"),
            }
        }
    };
    wait_line(&mut lines, "configmap/greeting").await?;
    create(
        &Api::<ConfigMap>::namespaced(spoke.clone(), "demo"),
        json!({"metadata": {"name": "second", "namespace": "demo"}}),
    )
    .await?;
    wait_line(&mut lines, "configmap/second").await?;

    // Cutting the tunnel ends the watch in flight; the agent opens a new tunnel.
    let before = proxy.tunnels.get(&c01).map(|t| t.id).unwrap_or_default();
    assert!(proxy.tunnels.cut(&c01));
    let ended = tokio::time::timeout(WAIT, watch.wait()).await;
    assert!(ended.is_ok(), "the watch outlived its tunnel");
    tokio::time::timeout(
        WAIT,
        proxy
            .tunnels
            .wait_for(&c01, |t| t.is_some_and(|t| t.id > before)),
    )
    .await
    .context("the agent did not reconnect after the cut")?;
    alice
        .ok(&["-n", "demo", "get", "configmap", "second"])
        .await?;

    // `ocm proxy kubectl` does the same in one step.
    let out = tokio::process::Command::new(OCM)
        .env("OCM_HOME", dir.path().join("ocm-home"))
        .args(["proxy", "kubectl", "--cluster", &c01, "--kubeconfig"])
        .arg(&alice_hub)
        .args([
            "--",
            "-n",
            "demo",
            "get",
            "configmap",
            "second",
            "-o",
            "name",
        ])
        .output()
        .await?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "configmap/second"
    );

    // Revoked on the cluster: refused by the cluster again.
    Api::<RoleBinding>::namespaced(spoke.clone(), "demo")
        .delete("alice-configmaps", &DeleteParams::default())
        .await?;
    let err = alice.fails(&["-n", "demo", "get", "configmaps"]).await?;
    assert!(err.contains("cannot list resource \"configmaps\""), "{err}");

    // No hub permission for c02.
    let alice_c02 = proxy_kubeconfig(&alice_hub, &c02, dir.path()).await?;
    alice_c02.fails(&["get", "namespaces"]).await?;
    let refused = alice_c02.refusal().await?;
    assert_eq!(refused.code, 403);
    assert!(
        refused.message.contains(&format!("\"{c02}\" is forbidden")),
        "{refused:?}"
    );

    // c02's agent goes down: a clear 503, at once.
    agent_stops[1].cancel();
    tokio::time::timeout(WAIT, proxy.tunnels.wait_for(&c02, |t| t.is_none()))
        .await
        .context("c02's tunnel stayed open")?;
    let admin_c02 = proxy_kubeconfig(&hub.admin_kubeconfig, &c02, dir.path()).await?;
    admin_c02.fails(&["get", "namespaces"]).await?;
    // (kube-rs retries a 503; kubectl's raw request shows the Status as it came.)
    let path = format!("/clusters/{c02}/api/v1/namespaces");
    let err = admin_c02.fails(&["get", "--raw", &path]).await?;
    assert!(
        err.contains("ServiceUnavailable")
            && err.contains(&format!("cluster {c02} is not reachable")),
        "{err}"
    );
    let nowhere = proxy_kubeconfig(&hub.admin_kubeconfig, "nowhere", dir.path()).await?;
    let refused = nowhere.refusal().await?;
    assert_eq!((refused.code, refused.reason.as_str()), (404, "NotFound"));
    let health = ocm_output(&["proxy", "health"], &hub.admin_kubeconfig).await?;
    let row = |name: &str| {
        health
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(row(&c01).contains("open"), "{health}");
    assert!(row(&c02).contains("none"), "{health}");

    // The proxy server restarts on the same address: the agent reconnects, same CA.
    let addr = proxy.addr;
    proxy.stop().await;
    let proxy = server::start(
        admin.clone(),
        ProxyServerOptions {
            listen: addr,
            ..Default::default()
        },
        Shutdown::new(),
    )
    .await?;
    assert_eq!(proxy.endpoint, endpoint);
    tokio::time::timeout(WAIT, proxy.tunnels.wait_for(&c01, |t| t.is_some()))
        .await
        .context("the agent did not reconnect after the server restarted")?;
    grant_configmaps(&spoke).await?;
    alice
        .ok(&["-n", "demo", "get", "configmap", "greeting"])
        .await?;
    assert!(agent_states[0].borrow().opened >= 3);

    proxy.stop().await;
    manager.cancel();
    agent_stops[0].cancel();
    hub.stop().await;
    Ok(())
}
