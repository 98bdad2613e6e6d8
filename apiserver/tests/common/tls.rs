//! A server listening on TLS with an admin kubeconfig, for tests over the network.

#![allow(dead_code)]

use std::path::PathBuf;

use ocm_apiserver::serve::{Serving, serve_tls};
use ocm_apiserver::tls::{TlsMaterial, write_file};
use ocm_apiserver::{ApiServer, ApiServerConfig};

/// A server served over TLS on a random local port, with its kubeconfig on disk.
pub struct TlsServer {
    pub server: ApiServer,
    pub serving: Serving,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
    pub url: String,
}

impl TlsServer {
    pub async fn start() -> TlsServer {
        Self::start_with(ApiServerConfig::default()).await
    }

    /// Like [`TlsServer::start`] with a custom configuration (its `client_ca` is set to the
    /// generated CA).
    pub async fn start_with(config: ApiServerConfig) -> TlsServer {
        let dir = tempfile::tempdir().unwrap();
        let tls = TlsMaterial::load_or_create(&dir.path().join("pki"), &[]).unwrap();
        let config = ApiServerConfig {
            client_ca: Some(tls.ca_cert.clone()),
            client_ca_key: Some(tls.ca_key.clone()),
            ..config
        };
        let server = ApiServer::start(config).await.unwrap();
        let serving = serve_tls(
            server.clone(),
            "127.0.0.1:0".parse().unwrap(),
            tls.server_config().unwrap(),
        )
        .await
        .unwrap();
        let url = format!("https://127.0.0.1:{}", serving.local_addr.port());
        let kubeconfig = dir.path().join("admin.kubeconfig");
        write_file(&kubeconfig, &tls.admin_kubeconfig(&url), true).unwrap();
        TlsServer {
            server,
            serving,
            dir,
            kubeconfig,
            url,
        }
    }

    /// A kube client built from the kubeconfig file.
    pub async fn client(&self) -> kube::Client {
        self.client_for(&self.url).await
    }

    /// A kube client for another server URL (e.g. a `/clusters/{name}` prefix).
    pub async fn client_for(&self, url: &str) -> kube::Client {
        kube::Client::try_from(self.config_for(url).await).unwrap()
    }

    /// A kube client over HTTPS that acts as `user` (in `system:authenticated`): the admin
    /// impersonating it.
    pub async fn client_as(&self, user: &str) -> kube::Client {
        let mut config = self.config_for(&self.url).await;
        config.auth_info.impersonate = Some(user.to_owned());
        config.auth_info.impersonate_groups = Some(vec!["system:authenticated".to_owned()]);
        kube::Client::try_from(config).unwrap()
    }

    async fn config_for(&self, url: &str) -> kube::Config {
        let text = std::fs::read_to_string(&self.kubeconfig).unwrap();
        let text = text.replace(&self.url, url);
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&text).unwrap();
        kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .unwrap()
    }
}
