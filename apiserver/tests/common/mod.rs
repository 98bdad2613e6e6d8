//! Shared helpers of the integration tests: an in-process server and a kube client on it.

#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(dead_code)]

pub mod crd;
pub mod kubectl;
pub mod tls;

use std::time::Duration;

use kube::Client;
use ocm_apiserver::{ApiServer, ApiServerConfig};

/// An in-memory server and a client talking to it in-process.
pub async fn server() -> (ApiServer, Client) {
    server_with(ApiServerConfig::default()).await
}

/// Like [`server`] with a custom configuration.
pub async fn server_with(config: ApiServerConfig) -> (ApiServer, Client) {
    let server = ApiServer::start(config).await.expect("server starts");
    let client = Client::new(server.service(), "default");
    (server, client)
}

/// Polls `check` until it returns `Some`, failing after 10 seconds.
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
