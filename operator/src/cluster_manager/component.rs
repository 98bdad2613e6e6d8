//! The hub components a ClusterManager deploys ([`Component`]) and its webhook servers
//! ([`WebhookKind`]), with the names upstream gives their Deployments, ServiceAccounts and
//! serving certificates; and the web dashboard, an ocm-rs addition deployed on request.

/// A hub component the ClusterManager deploys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    /// Registration controllers.
    Registration,
    /// Placement controller.
    Placement,
    /// ManifestWorkReplicaSet controller.
    Work,
    /// The addons' generic hub controllers.
    AddonManager,
    /// An admission (and conversion) webhook server.
    Webhook(WebhookKind),
    /// The web dashboard (`ocm dashboard`), when the ClusterManager asks for it.
    Dashboard,
}

/// Which API group's webhooks a webhook server is sent (upstream runs one server per group).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WebhookKind {
    /// `cluster.open-cluster-management.io` (ManagedCluster, ManagedClusterSetBinding, …).
    Registration,
    /// `work.open-cluster-management.io` (ManifestWork, ManifestWorkReplicaSet).
    Work,
    /// `addon.open-cluster-management.io`, and the addon CRDs' version conversion.
    Addon,
}

impl WebhookKind {
    /// Every webhook server, in start order.
    pub const ALL: [WebhookKind; 3] = [
        WebhookKind::Registration,
        WebhookKind::Work,
        WebhookKind::Addon,
    ];

    /// The server a webhook of API group `group` is sent to (anything not work or addon goes
    /// to the registration one).
    pub fn of_group(group: &str) -> WebhookKind {
        match group {
            "work.open-cluster-management.io" => WebhookKind::Work,
            "addon.open-cluster-management.io" => WebhookKind::Addon,
            _ => WebhookKind::Registration,
        }
    }

    /// `registration`, `work` or `addon`.
    pub fn name(self) -> &'static str {
        match self {
            WebhookKind::Registration => "registration",
            WebhookKind::Work => "work",
            WebhookKind::Addon => "addon",
        }
    }

    /// Name of its Deployment and Service: `<cm>-<kind>-webhook`.
    pub fn service(self, cm_name: &str) -> String {
        format!("{cm_name}-{}-webhook", self.name())
    }

    /// Secret holding its serving certificate: `<kind>-webhook-serving-cert` (upstream's).
    pub fn serving_secret(self) -> String {
        format!("{}-webhook-serving-cert", self.name())
    }
}

impl Component {
    /// Suffix of the Deployment name after `<cm>-`.
    pub fn deployment_suffix(self) -> &'static str {
        match self {
            Component::Registration => "registration-controller",
            Component::Placement => "placement-controller",
            Component::Work => "work-controller",
            Component::AddonManager => "addon-manager-controller",
            Component::Webhook(WebhookKind::Registration) => "registration-webhook",
            Component::Webhook(WebhookKind::Work) => "work-webhook",
            Component::Webhook(WebhookKind::Addon) => "addon-webhook",
            Component::Dashboard => "dashboard",
        }
    }

    /// The ServiceAccount the component runs as.
    pub fn service_account(self) -> String {
        format!("{}-sa", self.deployment_suffix())
    }

    /// `ocm hub controllers --only` name (`None` for the webhook server and the dashboard).
    pub(crate) fn controllers_name(self) -> Option<&'static str> {
        match self {
            Component::Registration => Some("registration"),
            Component::Placement => Some("placement"),
            Component::Work => Some("work"),
            Component::AddonManager => Some("addon-manager"),
            Component::Webhook(_) | Component::Dashboard => None,
        }
    }
}
