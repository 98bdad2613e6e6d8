//! What an addon author implements: [`AgentAddon`], the addon's name and options and the
//! objects its agent needs on each cluster. Options mirror upstream's `AgentAddonOptions`, with
//! the same defaults (see the field docs).

use std::sync::Arc;

use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use serde_json::Value;

/// Why an addon could not produce what the framework asked for. Its message is shown on the
/// ManagedClusterAddOn's conditions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AddonError(pub String);

impl AddonError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> AddonError {
        AddonError(message.into())
    }
}

/// Decides whether a change of the ManagedCluster (old, new) redeploys an addon's agent.
pub type ClusterChangeFilter = Arc<dyn Fn(&ManagedCluster, &ManagedCluster) -> bool + Send + Sync>;

/// An addon: the agent it installs on every cluster where it is enabled.
#[async_trait::async_trait]
pub trait AgentAddon: Send + Sync {
    /// The addon's name and options. The name must equal its ClusterManagementAddOn's name.
    fn options(&self) -> &AddonOptions;

    /// The objects to put on `cluster` for `addon` (each with `apiVersion`, `kind` and
    /// `metadata.name`): namespaces, deployments, RBAC, config maps… `configs` are the config
    /// objects in effect for this addon on this cluster (its AddOnDeploymentConfig values
    /// among them).
    async fn manifests(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
        configs: &AddonConfigs,
    ) -> Result<Vec<Value>, AddonError>;

    /// [`AgentAddon::manifests`] with conditions the addon wants on the ManagedClusterAddOn
    /// about this rendering (each replaces the condition of its type; types the addon stops
    /// naming stay as they were). The framework calls this one; the default gives the
    /// manifests and no conditions.
    async fn render(
        &self,
        cluster: &ManagedCluster,
        addon: &ManagedClusterAddOn,
        configs: &AddonConfigs,
    ) -> Result<Rendered, AddonError> {
        Ok(Rendered {
            manifests: self.manifests(cluster, addon, configs).await?,
            conditions: Vec::new(),
        })
    }

    /// The install namespace this addon prefers on a cluster when neither its options nor its
    /// AddOnDeploymentConfig name one (template addons: the namespace of their agent's
    /// Deployment). `None` (the default): the framework's default namespace.
    fn default_install_namespace(
        &self,
        _addon: &ManagedClusterAddOn,
        _configs: &AddonConfigs,
    ) -> Option<String> {
        None
    }

    /// The `manifestConfigs` entries (update strategies, feedback rules) of the addon's works
    /// on a cluster; by default the options' [`AddonOptions::manifest_configs`].
    fn manifest_configs(
        &self,
        _addon: &ManagedClusterAddOn,
        _configs: &AddonConfigs,
    ) -> Vec<Value> {
        self.options().manifest_configs.clone()
    }
}

/// What an addon renders for one cluster ([`AgentAddon::render`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rendered {
    /// The objects to put on the cluster, as [`AgentAddon::manifests`] gives them.
    pub manifests: Vec<Value>,
    /// Conditions to set on the ManagedClusterAddOn (`observedGeneration` is filled in).
    pub conditions: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>,
}

/// The config objects in effect for an addon on one cluster.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AddonConfigs {
    /// The AddOnDeploymentConfig's spec, when the addon has one.
    pub deployment: Option<ocm_api::addon::v1beta1::AddOnDeploymentConfigSpec>,
    /// Every config object (as JSON) with its reference.
    pub objects: Vec<(crate::configs::ConfigRef, Value)>,
}

impl AddonConfigs {
    /// The value of the AddOnDeploymentConfig's customized variable `name`.
    pub fn variable(&self, name: &str) -> Option<&str> {
        self.deployment
            .as_ref()?
            .customized_variables
            .iter()
            .find(|v| v.name == name)
            .and_then(|v| v.value.as_deref())
    }

    /// The AddOnDeploymentConfig's `agentInstallNamespace`, when set and not empty.
    pub fn install_namespace(&self) -> Option<&str> {
        self.deployment
            .as_ref()?
            .agent_install_namespace
            .as_deref()
            .filter(|ns| !ns.is_empty())
    }

    /// `image` as the AddOnDeploymentConfig's `registries` rewrite it: a mirror replaces the
    /// leading `source` it stands for (the last matching entry wins); unchanged otherwise.
    pub fn image(&self, image: &str) -> String {
        match &self.deployment {
            Some(deployment) => override_image(&deployment.registries, image),
            None => image.to_owned(),
        }
    }

    /// The AddOnDeploymentConfig's node placement: (`nodeSelector`, `tolerations`) for the
    /// agent's pod templates, when set.
    pub fn node_placement(&self) -> Option<&ocm_api::addon::v1alpha1::NodePlacement> {
        self.deployment.as_ref()?.node_placement.as_ref()
    }

    /// The pod-template settings the AddOnDeploymentConfig gives container `container` of
    /// Deployment `deployment`, as JSON ready for a manifest: `nodeSelector` and `tolerations`
    /// (empty when unset) and `resources` ([`AddonConfigs::resources_for`], `{}` when unset).
    pub fn pod_settings(&self, deployment: &str, container: &str) -> PodSettings {
        let placement = self.node_placement();
        let json = |v: Result<serde_json::Value, serde_json::Error>| v.unwrap_or_default();
        PodSettings {
            node_selector: json(serde_json::to_value(
                placement
                    .map(|p| p.node_selector.clone())
                    .unwrap_or_default(),
            )),
            tolerations: json(serde_json::to_value(
                placement.map(|p| p.tolerations.clone()).unwrap_or_default(),
            )),
            resources: json(serde_json::to_value(
                self.resources_for("deployments", deployment, container)
                    .cloned()
                    .unwrap_or_default(),
            )),
        }
    }

    /// The AddOnDeploymentConfig's proxy settings, when set.
    pub fn proxy(&self) -> Option<&ocm_api::addon::v1alpha1::ProxyConfig> {
        self.deployment.as_ref()?.proxy_config.as_ref()
    }

    /// The resource requirements the AddOnDeploymentConfig gives container `container` of
    /// `resource` (plural, e.g. `deployments`) `name`: the last `resourceRequirements` entry
    /// whose `containerID` (`<resource>:<name>:<container>`, each part may be `*`) matches.
    pub fn resources_for(
        &self,
        resource: &str,
        name: &str,
        container: &str,
    ) -> Option<&k8s_openapi::api::core::v1::ResourceRequirements> {
        let wanted = [resource, name, container];
        self.deployment
            .as_ref()?
            .resource_requirements
            .iter()
            .rev()
            .find(|r| {
                let parts: Vec<&str> = r.container_id.split(':').collect();
                parts.len() == 3
                    && parts
                        .iter()
                        .zip(wanted)
                        .all(|(part, value)| *part == "*" || *part == value)
            })
            .map(|r| &r.resources)
    }
}

/// `image` as `registries` rewrite it: a mirror replaces the leading `source` it stands for
/// (the last matching entry wins; an entry without `source` matches every image).
pub fn override_image(registries: &[ocm_api::addon::v1alpha1::ImageMirror], image: &str) -> String {
    let mut out = image.to_owned();
    for registry in registries {
        let source = registry.source.as_deref().unwrap_or_default();
        if let Some(rest) = image.strip_prefix(source) {
            out = format!("{}{rest}", registry.mirror.trim_end_matches('/'));
        }
    }
    out
}

/// Pod-template settings from an AddOnDeploymentConfig ([`AddonConfigs::pod_settings`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodSettings {
    /// `spec.template.spec.nodeSelector`.
    pub node_selector: serde_json::Value,
    /// `spec.template.spec.tolerations`.
    pub tolerations: serde_json::Value,
    /// The container's `resources`.
    pub resources: serde_json::Value,
}

/// The install namespace the framework decided for `addon` (`status.namespace`), or an error
/// saying it is not decided yet (the framework calls `manifests` again once it is).
pub fn decided_namespace(
    addon: &ocm_api::addon::v1beta1::ManagedClusterAddOn,
) -> Result<String, AddonError> {
    addon
        .status
        .as_ref()
        .map(|s| s.namespace.clone())
        .filter(|ns| !ns.is_empty())
        .ok_or_else(|| AddonError::new("the install namespace is not decided yet"))
}

/// How the framework installs, registers and watches an addon.
#[derive(Clone, Default)]
pub struct AddonOptions {
    /// The addon's name (unique on the hub).
    pub name: String,
    /// Hub credentials for the addon's agent; `None`: the agent needs none.
    pub registration: Option<Registration>,
    /// How health is judged (default [`HealthProber::Lease`], as upstream).
    pub health: HealthProber,
    /// Namespace the agent is installed into on the managed cluster; `None`: the addon's
    /// AddOnDeploymentConfig `agentInstallNamespace`, else
    /// `open-cluster-management-agent-addon`.
    pub install_namespace: Option<String>,
    /// Config kinds (group, resource) the addon reads, e.g. AddOnDeploymentConfig.
    pub supported_configs: Vec<(String, String)>,
    /// Per-object overrides of the work's update strategy and feedback rules (raw
    /// `manifestConfigs` entries of a ManifestWork).
    pub manifest_configs: Vec<Value>,
    /// Whether a change of the ManagedCluster (old, new) redeploys the agent; `None`: only
    /// changes that the framework itself tracks (none of the cluster's fields).
    pub redeploy_on_cluster_change: Option<ClusterChangeFilter>,
    /// Whether the addon runs in hosted mode when a ManagedClusterAddOn asks for it with the
    /// `addon.open-cluster-management.io/hosting-cluster-name` annotation (see
    /// [`crate::hosted`]); default `false`: the annotation is ignored.
    pub hosted_mode: bool,
    /// Whether the framework waits for the ManagedClusterAddOn's `Configured` condition to be
    /// True before it renders manifests (writes no ManifestWork until then), so that the agent
    /// is first deployed with its configs, not with defaults; default `false`, as upstream's
    /// `ConfigCheckEnabled`.
    pub config_check_enabled: bool,
}

impl std::fmt::Debug for AddonOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddonOptions")
            .field("name", &self.name)
            .field("registration", &self.registration)
            .field("health", &self.health)
            .field("install_namespace", &self.install_namespace)
            .field("config_check_enabled", &self.config_check_enabled)
            .finish_non_exhaustive()
    }
}

impl AddonOptions {
    /// Options for an addon called `name`, with upstream's defaults.
    pub fn new(name: impl Into<String>) -> AddonOptions {
        AddonOptions {
            name: name.into(),
            ..AddonOptions::default()
        }
    }
}

/// One credential the addon's agent gets on a cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistrationConfig {
    /// A client certificate for the hub's API server (`kubernetes.io/kube-apiserver-client`),
    /// approved by the framework through [`Registration::approve`]. Empty user / groups:
    /// upstream's defaults ([`crate::registration::default_user`],
    /// [`crate::registration::default_groups`]).
    KubeClient {
        /// Certificate user (CN).
        user: String,
        /// Certificate groups (O).
        groups: Vec<String>,
    },
    /// A certificate from another signer, signed by the framework through
    /// [`Registration::sign`].
    CustomSigner {
        /// Signer name, e.g. `example.com/signer`.
        signer_name: String,
        /// Certificate user (CN).
        user: String,
        /// Certificate groups (O).
        groups: Vec<String>,
        /// Organizational units (OU).
        organization_units: Vec<String>,
    },
}

/// A CSR as the framework shows it to an addon's checks.
#[derive(Clone, Debug)]
pub struct CsrInfo {
    /// The CSR's name.
    pub name: String,
    /// `spec.signerName`.
    pub signer_name: String,
    /// The requester (`spec.username`).
    pub username: String,
    /// Subject CN of the request.
    pub common_name: String,
    /// Subject O of the request.
    pub organizations: Vec<String>,
    /// The PEM request (`spec.request`).
    pub request_pem: String,
}

/// Decides whether a CSR of an addon's agent on a cluster is approved.
pub type CsrApproveCheck =
    Arc<dyn Fn(&ManagedCluster, &ManagedClusterAddOn, &CsrInfo) -> bool + Send + Sync>;

/// Signs a custom-signer CSR: returns the certificate PEM.
pub type CsrSigner = Arc<
    dyn Fn(&ManagedCluster, &ManagedClusterAddOn, &CsrInfo) -> Result<String, AddonError>
        + Send
        + Sync,
>;

/// Produces the registrations of an addon on a cluster.
pub type RegistrationConfigs = Arc<
    dyn Fn(&ManagedCluster, &ManagedClusterAddOn) -> Result<Vec<RegistrationConfig>, AddonError>
        + Send
        + Sync,
>;

/// The hub-side permissions of the addon's agent: RBAC objects (Role, RoleBinding,
/// ClusterRole, ClusterRoleBinding as JSON) the framework applies for a cluster. Returning
/// `Err(PermissionPending)` means "not ready yet, ask again later".
pub type PermissionConfig = Arc<
    dyn Fn(&ManagedCluster, &ManagedClusterAddOn) -> Result<Vec<Value>, PermissionError>
        + Send
        + Sync,
>;

/// Why hub permissions are not in place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PermissionError {
    /// Something the permissions depend on is not there yet (upstream's SubjectNotReadyError):
    /// asked again later, not reported as a failure.
    #[error("not ready yet: {0}")]
    Pending(String),
    /// The permissions cannot be set up.
    #[error("{0}")]
    Failed(String),
}

/// How an addon's agent is registered with the hub.
#[derive(Clone)]
pub struct Registration {
    /// The credentials the agent gets on a cluster.
    pub configurations: RegistrationConfigs,
    /// Approves kube-client CSRs; default [`crate::registration::default_approve`].
    pub approve: CsrApproveCheck,
    /// Hub permissions for the agent's groups, if any.
    pub permissions: Option<PermissionConfig>,
    /// Signs custom-signer CSRs, if the addon has any.
    pub sign: Option<CsrSigner>,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("permissions", &self.permissions.is_some())
            .field("sign", &self.sign.is_some())
            .finish_non_exhaustive()
    }
}

/// How the framework judges an addon healthy.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum HealthProber {
    /// The agent renews a Lease named after the addon in its install namespace; the
    /// registration agent on the cluster checks it (upstream's default).
    #[default]
    Lease,
    /// Never judged: Available is set from the work being applied.
    None,
    /// From the addon's ManifestWork: `probes` are feedback rules per object; the addon is
    /// available when every probed object reports its fields and `check` (if any) accepts them.
    Work {
        /// `manifestConfigs` entries (resourceIdentifier + feedbackRules) to probe.
        probes: Vec<Value>,
        /// Judges each probed object's feedback; `None` accepts any reported feedback.
        check: Option<WorkHealthCheck>,
    },
    /// Every Deployment among the manifests has `availableReplicas` ≥ 1.
    DeploymentAvailability,
    /// Every Deployment and DaemonSet among the manifests is available.
    WorkloadAvailability,
}

/// A check of one probed object's status feedback: given its `resourceIdentifier` and its
/// feedback values (`name`, `fieldValue`), `Err` says why the addon is not available.
#[derive(Clone)]
pub struct WorkHealthCheck(pub Arc<WorkHealthCheckFn>);

/// The function inside a [`WorkHealthCheck`].
pub type WorkHealthCheckFn = dyn Fn(&Value, &[(String, Value)]) -> Result<(), String> + Send + Sync;

impl WorkHealthCheck {
    /// A check from a closure.
    pub fn new(
        check: impl Fn(&Value, &[(String, Value)]) -> Result<(), String> + Send + Sync + 'static,
    ) -> WorkHealthCheck {
        WorkHealthCheck(Arc::new(check))
    }
}

impl std::fmt::Debug for WorkHealthCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WorkHealthCheck")
    }
}

impl PartialEq for WorkHealthCheck {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl HealthProber {
    /// The `status.healthCheck.mode` this prober gives a ManagedClusterAddOn.
    pub fn mode(&self) -> &'static str {
        match self {
            HealthProber::Lease => ocm_api::addon::names::HEALTH_CHECK_MODE_LEASE,
            _ => ocm_api::addon::names::HEALTH_CHECK_MODE_CUSTOMIZED,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn configs(spec: Value) -> AddonConfigs {
        AddonConfigs {
            deployment: Some(serde_json::from_value(spec).unwrap()),
            objects: Vec::new(),
        }
    }

    #[test]
    fn registries_rewrite_images() {
        let c = configs(json!({"registries": [
            {"source": "quay.io/open-cluster-management", "mirror": "mirror.example/ocm/"},
            {"source": "quay.io/open-cluster-management/helloworld", "mirror": "mirror.example/hw"}]}));
        assert_eq!(
            c.image("quay.io/open-cluster-management/registration:v1"),
            "mirror.example/ocm/registration:v1"
        );
        assert_eq!(
            c.image("quay.io/open-cluster-management/helloworld:v1"),
            "mirror.example/hw:v1"
        );
        assert_eq!(c.image("docker.io/busybox"), "docker.io/busybox");
        assert_eq!(AddonConfigs::default().image("a/b:1"), "a/b:1");
    }

    #[test]
    fn resource_requirements_match_by_container_id() {
        let c = configs(json!({"resourceRequirements": [
            {"containerID": "*:*:*", "resources": {"requests": {"cpu": "10m"}}},
            {"containerID": "deployments:agent:main", "resources": {"requests": {"cpu": "1"}}}]}));
        let cpu = |r: Option<&k8s_openapi::api::core::v1::ResourceRequirements>| {
            r.and_then(|r| r.requests.as_ref())
                .map(|q| q["cpu"].0.clone())
        };
        assert_eq!(
            cpu(c.resources_for("deployments", "agent", "main")),
            Some("1".into())
        );
        assert_eq!(
            cpu(c.resources_for("deployments", "agent", "sidecar")),
            Some("10m".into())
        );
        assert_eq!(
            AddonConfigs::default().resources_for("deployments", "a", "b"),
            None
        );
        let placed = configs(json!({"nodePlacement": {"nodeSelector": {"disk": "ssd"}}}));
        assert_eq!(
            placed.node_placement().unwrap().node_selector["disk"],
            "ssd"
        );
        assert!(placed.proxy().is_none());
    }
}
