//! Where a ClusterManager's webhook servers listen, and — in Hosted mode — where the hub's API
//! server reaches them — pure.
//!
//! Listening: each webhook Deployment's `bindConfiguration` (Default mode:
//! `spec.deployOption.default.<kind>WebhookConfiguration`, Hosted mode:
//! `spec.deployOption.hosted.<kind>WebhookConfiguration`) gives the server's port (absent, zero
//! or less: 9443) and whether its pods use the host network. `healthProbePort` and
//! `metricsPort` are accepted and not used: `ocm hub webhook` serves neither probes nor metrics
//! on a port of its own (readiness is the serving port answering).
//!
//! Reaching, Hosted mode: the hub's API server is not in the management cluster, so no
//! Service reference can lead it to the servers. The webhook configurations and the addon
//! CRDs' conversion on the hub name `https://<address>:<port>` instead, from
//! `registrationWebhookConfiguration` and `workWebhookConfiguration` (port absent: 443), and
//! each serving certificate also names its address (DNS name or IP SAN). Upstream's Hosted
//! API has no addon webhook configuration; since every `ocm hub webhook` serves every policy
//! and the conversion, ocm-rs sends the `addon.open-cluster-management.io` webhooks and the
//! addon conversion to the registration webhook's address, and runs no addon webhook
//! Deployment in Hosted mode (nothing could reach it). Both addresses are required: a Hosted
//! ClusterManager without them is refused as a whole ([`hosted_webhooks`]), since applying
//! the rest would leave a hub whose policies are not enforced.

use ocm_api::operator::v1::{
    BindConfiguration, ClusterManager, ClusterManagerInstallMode, HostedWebhookConfiguration,
};

use super::component::WebhookKind;

/// Whether the ClusterManager runs its components on a management cluster.
pub fn hosted(cm: &ClusterManager) -> bool {
    cm.spec
        .deploy_option
        .as_ref()
        .is_some_and(|d| d.mode == ClusterManagerInstallMode::Hosted)
}

/// Port the webhook server listens on inside its pod, unless its `bindConfiguration` names
/// another ([`webhook_port`]).
pub const WEBHOOK_PORT: i32 = 9443;

/// Where the hub's API server reaches one webhook server of a Hosted ClusterManager.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostedEndpoint {
    /// Host name or IPv4 address.
    pub address: String,
    /// Port.
    pub port: i32,
}

impl HostedEndpoint {
    /// `https://<address>:<port>`.
    pub fn base_url(&self) -> String {
        format!("https://{}:{}", self.address, self.port)
    }
}

/// Where the hub's API server reaches a Hosted ClusterManager's webhook servers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostedWebhooks {
    /// The registration webhook server (also sent the addon webhooks and conversions).
    pub registration: HostedEndpoint,
    /// The work webhook server.
    pub work: HostedEndpoint,
}

impl HostedWebhooks {
    /// The endpoint the webhooks of `kind` are sent to (the addon ones: the registration
    /// server's).
    pub fn of(&self, kind: WebhookKind) -> &HostedEndpoint {
        match kind {
            WebhookKind::Work => &self.work,
            WebhookKind::Registration | WebhookKind::Addon => &self.registration,
        }
    }
}

/// The API server port an absent `port` means (upstream's default).
pub const DEFAULT_HOSTED_PORT: i32 = 443;

fn endpoint(
    field: &str,
    config: Option<&HostedWebhookConfiguration>,
) -> Result<HostedEndpoint, String> {
    let path = format!("spec.deployOption.hosted.{field}");
    let Some(config) = config.filter(|c| !c.address.trim().is_empty()) else {
        return Err(format!("{path}.address is not set"));
    };
    let port = config.port.unwrap_or(DEFAULT_HOSTED_PORT);
    if !(1..=65535).contains(&port) {
        return Err(format!("{path}.port {port} is not a port (1-65535)"));
    }
    Ok(HostedEndpoint {
        address: config.address.trim().to_owned(),
        port,
    })
}

/// Where the hub's API server reaches a Hosted ClusterManager's webhook servers, or why it
/// cannot be told: every missing or invalid field, named by its path. `Ok(None)` in Default
/// mode.
pub fn hosted_webhooks(cm: &ClusterManager) -> Result<Option<HostedWebhooks>, String> {
    if !hosted(cm) {
        return Ok(None);
    }
    let configuration = cm
        .spec
        .deploy_option
        .as_ref()
        .and_then(|d| d.hosted.as_ref());
    let registration = endpoint(
        "registrationWebhookConfiguration",
        configuration.and_then(|c| c.registration_webhook_configuration.as_ref()),
    );
    let work = endpoint(
        "workWebhookConfiguration",
        configuration.and_then(|c| c.work_webhook_configuration.as_ref()),
    );
    match (registration, work) {
        (Ok(registration), Ok(work)) => Ok(Some(HostedWebhooks { registration, work })),
        (registration, work) => {
            let problems: Vec<String> = [registration.err(), work.err()]
                .into_iter()
                .flatten()
                .collect();
            Err(format!(
                "Hosted mode needs the address at which the hub's API server reaches the \
                 webhook servers: {}; nothing is applied until it is",
                problems.join("; ")
            ))
        }
    }
}

/// The webhook servers a ClusterManager runs: all three, or in Hosted mode the registration
/// and work ones (the addon webhooks go to the registration server).
pub fn webhook_kinds(cm: &ClusterManager) -> Vec<WebhookKind> {
    if hosted(cm) {
        vec![WebhookKind::Registration, WebhookKind::Work]
    } else {
        WebhookKind::ALL.to_vec()
    }
}

/// The `bindConfiguration` of the webhook server of `kind`, for the ClusterManager's mode.
pub fn bind_configuration(cm: &ClusterManager, kind: WebhookKind) -> Option<&BindConfiguration> {
    let option = cm.spec.deploy_option.as_ref()?;
    if hosted(cm) {
        let hosted = option.hosted.as_ref()?;
        let config = match kind {
            WebhookKind::Registration => hosted.registration_webhook_configuration.as_ref(),
            WebhookKind::Work => hosted.work_webhook_configuration.as_ref(),
            WebhookKind::Addon => None,
        };
        config?.bind_configuration.as_ref()
    } else {
        let default = option.default.as_ref()?;
        let config = match kind {
            WebhookKind::Registration => default.registration_webhook_configuration.as_ref(),
            WebhookKind::Work => default.work_webhook_configuration.as_ref(),
            WebhookKind::Addon => default.addon_webhook_configuration.as_ref(),
        };
        config?.bind_configuration.as_ref()
    }
}

/// The port the webhook server of `kind` listens on: its `bindConfiguration.port`, or 9443.
pub fn webhook_port(cm: &ClusterManager, kind: WebhookKind) -> i32 {
    bind_configuration(cm, kind)
        .and_then(|b| b.port)
        .filter(|p| (1..=65535).contains(p))
        .unwrap_or(WEBHOOK_PORT)
}

/// Whether the webhook server of `kind` runs in the host's network.
pub fn webhook_host_network(cm: &ClusterManager, kind: WebhookKind) -> bool {
    bind_configuration(cm, kind)
        .and_then(|b| b.host_network)
        .unwrap_or(false)
}

/// The names the serving certificate of `kind` must hold besides its Service's: in Hosted
/// mode the address the hub reaches it at.
pub fn extra_hosts(endpoints: Option<&HostedWebhooks>, kind: WebhookKind) -> Vec<String> {
    endpoints
        .map(|e| vec![e.of(kind).address.clone()])
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::super::render::tests::cm;
    use super::*;
    use serde_json::json;

    #[test]
    fn hosted_mode_needs_both_addresses_and_names_what_is_missing() {
        assert_eq!(hosted_webhooks(&cm(json!({}))), Ok(None));
        let err = hosted_webhooks(&cm(json!({"deployOption": {"mode": "Hosted"}}))).unwrap_err();
        assert!(
            err.contains("spec.deployOption.hosted.registrationWebhookConfiguration.address")
                && err.contains("spec.deployOption.hosted.workWebhookConfiguration.address"),
            "{err}"
        );
        let err = hosted_webhooks(&cm(json!({"deployOption": {"mode": "Hosted", "hosted": {
            "registrationWebhookConfiguration": {"address": "10.0.0.5", "port": 0}}}})))
        .unwrap_err();
        assert!(
            err.contains("registrationWebhookConfiguration.port 0"),
            "{err}"
        );
        assert!(err.contains("workWebhookConfiguration.address"), "{err}");
        let endpoints = hosted_webhooks(&cm(json!({"deployOption": {"mode": "Hosted", "hosted": {
            "registrationWebhookConfiguration": {"address": "10.0.0.5"},
            "workWebhookConfiguration": {"address": "work.example.com", "port": 31443}}}})))
        .unwrap()
        .unwrap();
        assert_eq!(
            endpoints.of(WebhookKind::Registration).base_url(),
            "https://10.0.0.5:443"
        );
        assert_eq!(
            endpoints.of(WebhookKind::Addon).base_url(),
            "https://10.0.0.5:443"
        );
        assert_eq!(
            endpoints.of(WebhookKind::Work).base_url(),
            "https://work.example.com:31443"
        );
        assert_eq!(
            extra_hosts(Some(&endpoints), WebhookKind::Work),
            ["work.example.com"]
        );
        assert!(extra_hosts(None, WebhookKind::Work).is_empty());
    }

    #[test]
    fn bind_configurations_follow_the_mode() {
        let default = cm(json!({"deployOption": {"mode": "Default", "default": {
            "addonWebhookConfiguration": {"bindConfiguration": {"port": 7443}}}}}));
        assert_eq!(webhook_port(&default, WebhookKind::Addon), 7443);
        assert_eq!(webhook_port(&default, WebhookKind::Work), WEBHOOK_PORT);
        assert_eq!(webhook_kinds(&default).len(), 3);
        let hosted = cm(json!({"deployOption": {"mode": "Hosted", "hosted": {
            "registrationWebhookConfiguration": {"address": "a", "bindConfiguration":
                {"port": 30443, "hostNetwork": true}},
            "workWebhookConfiguration": {"address": "a", "bindConfiguration": {"port": -1}}}}}));
        assert_eq!(webhook_port(&hosted, WebhookKind::Registration), 30443);
        assert!(webhook_host_network(&hosted, WebhookKind::Registration));
        assert_eq!(webhook_port(&hosted, WebhookKind::Work), WEBHOOK_PORT);
        assert!(!webhook_host_network(&hosted, WebhookKind::Work));
        assert_eq!(
            webhook_kinds(&hosted),
            [WebhookKind::Registration, WebhookKind::Work]
        );
    }
}
