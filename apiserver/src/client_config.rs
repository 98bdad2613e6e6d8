//! Where a webhook is reached: the `clientConfig` of admission webhooks and of CRD conversion
//! webhooks (`url`, or a `service` reference, each with its `caBundle`).

use base64::Engine as _;
use serde_json::Value;

use crate::meta::str_of;

/// Where a webhook is reached (`clientConfig`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientConfig {
    /// `url`: an https URL, with the PEM trust roots of `caBundle` (none when absent).
    Url {
        /// The URL.
        url: String,
        /// PEM CA bundle (decoded from base64).
        ca_bundle: Option<Vec<u8>>,
    },
    /// `service`: a cluster Service, reached at a ready pod behind it when that pod's ports
    /// are published (see [`crate::webhook::service`]).
    Service {
        /// Service namespace.
        namespace: String,
        /// Service name.
        name: String,
        /// Service port (default 443).
        port: i64,
        /// URL path (default `/`).
        path: String,
        /// PEM CA bundle (decoded from base64).
        ca_bundle: Option<Vec<u8>>,
    },
}

impl ClientConfig {
    /// Reads a `clientConfig` (`WebhookClientConfig` or the CRD conversion one).
    pub fn from_value(value: &Value) -> ClientConfig {
        let ca_bundle = value
            .get("caBundle")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok());
        match value.get("service").filter(|s| !s.is_null()) {
            Some(service) => ClientConfig::Service {
                namespace: str_of(service, "namespace").to_owned(),
                name: str_of(service, "name").to_owned(),
                port: service.get("port").and_then(Value::as_i64).unwrap_or(443),
                path: Some(str_of(service, "path"))
                    .filter(|p| !p.is_empty())
                    .unwrap_or("/")
                    .to_owned(),
                ca_bundle,
            },
            None => ClientConfig::Url {
                url: str_of(value, "url").to_owned(),
                ca_bundle,
            },
        }
    }
}
