//! The addon manager of `ocm bench addons --manager-process` in a process of its own, as an
//! addon's manager runs in its own Deployment beside the hub: `ocm bench addon-manager`
//! (internal) runs the bench addons' [`AddonManager`] against the hub named by a kubeconfig
//! until stdin closes; [`ManagerProcess`] starts it with a ServiceAccount token of the hub.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, PostParams};
use ocm_addon_framework::manager::AddonManager;
use ocm_runtime::shutdown::Shutdown;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Flags of `ocm bench addon-manager` (internal).
#[derive(Debug, Args)]
pub struct AddonManagerArgs {
    /// Kubeconfig of the hub.
    #[arg(long)]
    kubeconfig: PathBuf,
    /// How many bench addons (`bench-addon-1` …).
    #[arg(long)]
    addons: usize,
}

/// Runs the bench addons' manager until stdin closes; prints `running` once it started.
pub async fn run(args: AddonManagerArgs) -> anyhow::Result<()> {
    let client = ocm_runtime::kubeconfig::client_from_file(&args.kubeconfig)
        .await
        .with_context(|| format!("reading {}", args.kubeconfig.display()))?;
    let mut manager = AddonManager::new(client);
    for name in crate::addon::addon_names(args.addons) {
        manager = manager.with_addon(Arc::new(crate::addon::BenchAddon::new(name)));
    }
    let shutdown = Shutdown::new();
    let running = tokio::spawn(manager.run(shutdown.child()));
    println!("running");
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(_)) = lines.next_line().await {}
    shutdown.cancel();
    running.await.context("the addon manager")?;
    Ok(())
}

/// Namespace of the manager's ServiceAccount on the hub.
const NAMESPACE: &str = "default";
/// The manager's ServiceAccount (bound to `cluster-admin`, as the bench addons need no less
/// than an addon manager's usual rights and nothing here measures authorization).
const ACCOUNT: &str = "bench-addon-manager";

/// A running `ocm bench addon-manager`.
pub struct ManagerProcess {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
}

impl ManagerProcess {
    /// Gives the manager a ServiceAccount token of the hub at `server_kubeconfig` (a
    /// kubeconfig template: `token_kubeconfig(token)`), writes its kubeconfig into `dir` and
    /// starts it with `addons` bench addons; returns once it runs.
    pub async fn start(
        admin: &kube::Client,
        token_kubeconfig: impl Fn(&str) -> String,
        dir: &Path,
        addons: usize,
    ) -> anyhow::Result<Self> {
        let token = account_token(admin).await?;
        let path = dir.join("addon-manager.kubeconfig");
        std::fs::write(&path, token_kubeconfig(&token))?;
        let mut command = crate::support::ocm_child()?;
        command
            .args(["bench", "addon-manager", "--addons", &addons.to_string()])
            .arg("--kubeconfig")
            .arg(&path);
        let (mut child, _) =
            crate::support::spawn_until_ready(command, "addon manager", |l| l == "running").await?;
        let stdin = child.stdin.take().context("addon manager stdin")?;
        Ok(ManagerProcess { child, stdin })
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Closes its stdin and waits for it to end.
    pub async fn stop(mut self) {
        let _ = self.stdin.shutdown().await;
        drop(self.stdin);
        let _ = self.child.wait().await;
    }
}

/// A token of the manager's ServiceAccount, created with its `cluster-admin` binding.
async fn account_token(admin: &kube::Client) -> anyhow::Result<String> {
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), NAMESPACE);
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": ACCOUNT, "namespace": NAMESPACE}}))?;
    accounts
        .create(&PostParams::default(), &account)
        .await
        .context("creating the addon manager's ServiceAccount")?;
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": ACCOUNT},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE}],
    }))?;
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &binding)
        .await
        .context("binding the addon manager's ServiceAccount")?;
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(86_400),
            ..TokenRequestSpec::default()
        },
        ..TokenRequest::default()
    };
    let answer = accounts
        .create_token_request(ACCOUNT, &PostParams::default(), &request)
        .await
        .context("a token for the addon manager")?;
    answer
        .status
        .map(|s| s.token)
        .context("the token request came back without a token")
}
