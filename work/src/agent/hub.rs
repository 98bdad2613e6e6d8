//! The agent's hub connection: built from the hub kubeconfig secret the registration agent
//! maintains, and rebuilt whenever that secret changes (certificate rotation), without a
//! restart.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::shutdown::Shutdown;

use super::WorkAgentOptions;
use super::context::Hub;
use super::reconcile::{self, Ctx};

/// Name of the secret holding the hub kubeconfig.
const HUB_KUBECONFIG_SECRET: &str = "hub-kubeconfig-secret";

/// The hub credentials in the secret: its kubeconfig (for the server and CA) and the client
/// certificate and key the kubeconfig refers to as files (`tls.crt`, `tls.key`), as upstream
/// mounts them; and the registration agent's id (`agent-name`), which it keeps when it moves
/// to another hub.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Credentials {
    kubeconfig: String,
    cert_pem: String,
    key_pem: String,
    agent_name: Option<String>,
}

fn credentials_of(secret: &Secret) -> Option<Credentials> {
    let text = |key: &str| {
        secret
            .data
            .as_ref()
            .and_then(|d| d.get(key))
            .and_then(|b| String::from_utf8(b.0.clone()).ok())
            .filter(|s| !s.trim().is_empty())
    };
    Some(Credentials {
        kubeconfig: text("kubeconfig")?,
        cert_pem: text("tls.crt")?,
        key_pem: text("tls.key")?,
        agent_name: text(ocm_api::operator::names::secrets::KEY_AGENT_NAME),
    })
}

/// The clusters the work agent reaches, and where it gets its hub client.
pub(crate) struct Clients {
    /// The managed cluster.
    pub(crate) spoke: kube::Client,
    /// Where the hub kubeconfig secret is.
    pub(crate) secrets: kube::Client,
    /// The hub client slot (shared with the registration agent in one process).
    pub(crate) hub: ocm_runtime::kubeconfig::SharedClient,
}

/// Runs the work controllers with a hub client built from the current secret; restarts them
/// with a new client when the secret's kubeconfig changes.
pub(crate) async fn run_with_hub_credentials(
    clients: Clients,
    options: WorkAgentOptions,
    stats: Arc<tokio::sync::watch::Sender<super::WorkAgentStats>>,
    shutdown: Shutdown,
) {
    let Clients {
        spoke,
        secrets: secrets_client,
        hub: shared,
    } = clients;
    let secrets: Api<Secret> = Api::namespaced(secrets_client, &options.agent_namespace);
    let config = watcher::Config::default()
        .fields(&format!("metadata.name={HUB_KUBECONFIG_SECRET}"))
        .any_semantic();
    let mut stream = watcher(secrets, config)
        .backoff_on_errors()
        .touched_objects()
        .boxed();
    let mut current: Option<(Credentials, Shutdown)> = None;
    loop {
        let secret = tokio::select! {
            () = shutdown.cancelled() => break,
            next = stream.next() => match next {
                Some(Ok(secret)) => secret,
                Some(Err(err)) => {
                    tracing::debug!(%err, "watching the hub kubeconfig secret");
                    continue;
                }
                None => break,
            },
        };
        let Some(credentials) = credentials_of(&secret) else {
            continue;
        };
        if current.as_ref().is_some_and(|(c, _)| *c == credentials) {
            continue;
        }
        let (client, url) = match hub_client(&shared, &credentials).await {
            Ok(x) => x,
            Err(err) => {
                tracing::warn!(%err, "the hub kubeconfig secret is not usable yet");
                continue;
            }
        };
        if let Some((_, running)) = current.take() {
            tracing::info!("hub credentials changed; reconnecting");
            running.cancel();
        }
        let running = shutdown.child();
        let ctx = Arc::new(Ctx::new(
            client,
            spoke.clone(),
            Hub {
                url: &url,
                agent_name: credentials.agent_name.as_deref(),
            },
            options.clone(),
            stats.clone(),
        ));
        tokio::spawn(reconcile::run(ctx.clone(), running.clone()));
        tokio::spawn(super::applied::sweep(ctx, running.clone()));
        current = Some((credentials, running));
    }
    if let Some((_, running)) = current {
        running.cancel();
    }
}

async fn hub_client(
    shared: &ocm_runtime::kubeconfig::SharedClient,
    credentials: &Credentials,
) -> Result<(kube::Client, String), String> {
    let parsed =
        ocm_runtime::kubeconfig::parse(&credentials.kubeconfig).map_err(|e| e.to_string())?;
    let server = ocm_runtime::kubeconfig::current_server(&parsed).map_err(|e| e.to_string())?;
    let client = shared
        .client_for(
            &server,
            &ocm_runtime::kubeconfig::KubeconfigAuth::ClientCertData {
                cert_pem: credentials.cert_pem.clone(),
                key_pem: credentials.key_pem.clone(),
            },
        )
        .await
        .map_err(|e| e.to_string())?;
    Ok((client, server.server))
}
