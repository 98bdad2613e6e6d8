//! Shared helpers of the integration tests: an in-process server and a kube client on it.

#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(dead_code)]

pub mod crd;
pub mod kubectl;
pub mod tls;
pub mod vap;

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

/// Sends a request as it is: the answer's status code, headers and whole body.
pub async fn send_raw(
    client: &Client,
    req: http::Request<kube::client::Body>,
) -> (u16, http::HeaderMap, Vec<u8>) {
    use http_body_util::BodyExt;
    let resp = client.send(req).await.unwrap();
    let code = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (code, headers, body.to_vec())
}

/// An answer of [`send_accept`]: status code, Content-Type, `Warning` headers and body.
pub struct Answer {
    pub code: u16,
    pub content_type: String,
    pub warnings: Vec<String>,
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as UTF-8 text.
    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap()
    }
}

/// Sends a request with an `Accept` header and an optional body of the given media type.
pub async fn send_accept(
    client: &Client,
    method: &str,
    uri: &str,
    accept: &str,
    body: Option<(&str, Vec<u8>)>,
) -> Answer {
    let mut req = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("accept", accept);
    let body = match body {
        Some((media, bytes)) => {
            req = req.header("content-type", media);
            kube::client::Body::from(bytes)
        }
        None => kube::client::Body::empty(),
    };
    let (code, headers, body) = send_raw(client, req.body(body).unwrap()).await;
    let content_type = headers
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let warnings = headers
        .get_all("warning")
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    Answer {
        code,
        content_type,
        warnings,
        body,
    }
}

/// Sends `body` (if any) as JSON with an `Accept` header.
pub async fn send_json(
    client: &Client,
    method: &str,
    uri: &str,
    accept: &str,
    body: Option<&serde_json::Value>,
) -> Answer {
    let body = body.map(|v| ("application/json", serde_json::to_vec(v).unwrap()));
    send_accept(client, method, uri, accept, body).await
}

/// Creates Node `name` whose kubelet endpoint is `127.0.0.1:<port>`, as a kubelet reports it.
pub async fn node_with_kubelet(client: &Client, name: &str, port: u16) {
    use kube::api::{Api, Patch, PatchParams, PostParams};
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    nodes
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap(),
        )
        .await
        .unwrap();
    nodes
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": {
                "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
                "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}]}})),
        )
        .await
        .unwrap();
}

/// (code, reason, message) of an API error; panics on other errors.
pub fn status_of(err: kube::Error) -> (u16, String, String) {
    match err {
        kube::Error::Api(s) => (s.code, s.reason.clone(), s.message.clone()),
        other => panic!("expected an API error, got {other}"),
    }
}

/// A ConfigMap named `name` with `data`.
pub fn cm(name: &str, data: serde_json::Value) -> k8s_openapi::api::core::v1::ConfigMap {
    serde_json::from_value(serde_json::json!({"metadata": {"name": name}, "data": data})).unwrap()
}

/// Creates a ConfigMap in `ns`.
pub async fn create_cm(
    client: &Client,
    ns: &str,
    obj: &k8s_openapi::api::core::v1::ConfigMap,
) -> Result<k8s_openapi::api::core::v1::ConfigMap, kube::Error> {
    kube::Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), ns)
        .create(&kube::api::PostParams::default(), obj)
        .await
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
