//! The HTTPS call to a webhook: POST of a JSON review to `clientConfig.url` (with
//! `?timeout=<n>s` as kube-apiserver appends), trusting only `caBundle`, within the webhook's
//! timeout. Errors read like the reasons kube-apiserver reports.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::{CertificateDer, pem::PemObject};
use serde_json::Value;

use super::config::ClientConfig;

/// Largest webhook response read.
const MAX_RESPONSE_BYTES: usize = 3 * 1024 * 1024;

/// Why a call failed (the text after `failed to call webhook: `).
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// `clientConfig.service` with no ready pod behind it this server can reach.
    #[error("{0}")]
    ServiceUnreachable(String),
    /// The URL or the CA bundle cannot be used.
    #[error("{0}")]
    Config(String),
    /// Connecting, TLS or HTTP failed.
    #[error("Post \"{url}\": {reason}")]
    Transport {
        /// The URL called.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The webhook did not answer within its timeout.
    #[error("Post \"{url}\": context deadline exceeded")]
    Timeout {
        /// The URL called.
        url: String,
    },
    /// The webhook answered with a status other than 200.
    #[error("{0}")]
    Status(String),
    /// The answer is not JSON.
    #[error("the server responded with an invalid body: {0}")]
    Decode(String),
}

fn tls_config(ca_bundle: Option<&[u8]>) -> Result<rustls::ClientConfig, CallError> {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(pem) = ca_bundle {
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|err| CallError::Config(format!("invalid caBundle: {err}")))?;
            roots
                .add(cert)
                .map_err(|err| CallError::Config(format!("invalid caBundle: {err}")))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| CallError::Config(err.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

/// The URL with kube-apiserver's `timeout` query parameter.
pub fn url_with_timeout(url: &str, timeout: Duration) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}timeout={}s", timeout.as_secs())
}

/// Posts `body` to the webhook and returns the decoded JSON answer.
pub async fn post(
    client: &ClientConfig,
    timeout: Duration,
    body: &Value,
) -> Result<Value, CallError> {
    let (url, ca_bundle) = match client {
        ClientConfig::Service {
            namespace, name, ..
        } => {
            return Err(CallError::ServiceUnreachable(format!(
                "service \"{namespace}/{name}\" has no endpoints this server can reach"
            )));
        }
        ClientConfig::Url { url, ca_bundle } => (url, ca_bundle),
    };
    let url = url_with_timeout(url, timeout);
    let uri: http::Uri = url
        .parse()
        .map_err(|err| CallError::Config(format!("invalid url {url:?}: {err}")))?;
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_config(ca_bundle.as_deref())?)
        .https_only()
        .enable_http1()
        .enable_http2()
        .build();
    let http: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build(connector);
    let payload =
        ocm_apiserver_json::to_vec(body).map_err(|err| CallError::Config(err.to_string()))?;
    let request = http::Request::post(uri)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .body(Full::new(Bytes::from(payload)))
        .map_err(|err| CallError::Config(err.to_string()))?;
    let call = async {
        let response = http.request(request).await.map_err(|err| {
            let mut reason = err.to_string();
            let mut source = std::error::Error::source(&err);
            while let Some(s) = source {
                reason = format!("{reason}: {s}");
                source = s.source();
            }
            CallError::Transport {
                url: url.clone(),
                reason,
            }
        })?;
        let status = response.status();
        let bytes = http_body_util::Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|err| CallError::Transport {
                url: url.clone(),
                reason: err.to_string(),
            })?
            .to_bytes();
        Ok::<_, CallError>((status, bytes))
    };
    let (status, bytes) = tokio::time::timeout(timeout, call)
        .await
        .map_err(|_| CallError::Timeout { url: url.clone() })??;
    if status != http::StatusCode::OK {
        let text = String::from_utf8_lossy(&bytes).trim().to_owned();
        return Err(CallError::Status(status_message(status.as_u16(), &text)));
    }
    serde_json::from_slice(&bytes).map_err(|err| CallError::Decode(err.to_string()))
}

/// The message client-go gives a non-200 answer without a Status body.
fn status_message(code: u16, body: &str) -> String {
    match code {
        500 if !body.is_empty() => {
            format!("an error on the server ({body:?}) has prevented the request from succeeding")
        }
        500 => "an error on the server has prevented the request from succeeding".to_owned(),
        400 => "the server rejected our request for an unknown reason".to_owned(),
        404 => "the server could not find the requested resource".to_owned(),
        code => format!(
            "the server responded with the status code {code} but did not return more information"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_is_appended() {
        assert_eq!(
            url_with_timeout("https://a/b", Duration::from_secs(10)),
            "https://a/b?timeout=10s"
        );
    }

    #[tokio::test]
    async fn service_references_fail_clearly() {
        let err = post(
            &ClientConfig::Service {
                namespace: "n".into(),
                name: "s".into(),
                port: 443,
                path: "/".into(),
                ca_bundle: None,
            },
            Duration::from_secs(1),
            &Value::Null,
        )
        .await
        .err()
        .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("service \"n/s\" has no endpoints this server can reach")
        );
    }
}
