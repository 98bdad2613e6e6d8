//! Well-known names of the `operator` API group: finalizers, annotations, labels, condition
//! types and reasons, install modes, namespaces, secrets, and the names of the deployments
//! and service accounts the operators create.

/// Finalizers the operators put on their custom resources.
pub mod finalizers {
    /// On a ClusterManager: the hub components and CRDs are removed before it goes.
    pub const CLUSTER_MANAGER_CLEANUP: &str =
        "operator.open-cluster-management.io/cluster-manager-cleanup";
    /// On a Klusterlet: the agents and their resources on the managed cluster are removed
    /// before it goes.
    pub const KLUSTERLET_CLEANUP: &str = "operator.open-cluster-management.io/klusterlet-cleanup";
    /// On a Hosted-mode Klusterlet: the resources on the managed cluster (reached through the
    /// external kubeconfig) are removed before it goes.
    pub const KLUSTERLET_HOSTED_CLEANUP: &str =
        "operator.open-cluster-management.io/klusterlet-hosted-cleanup";
}

/// Annotations the operators read or write.
pub mod annotations {
    /// On a Hosted-mode Klusterlet being deleted: when the operator first failed to reach the
    /// managed cluster; after a grace period (5 minutes) it stops trying to clean up there.
    pub const MANAGED_RESOURCES_EVICTION_TIMESTAMP: &str =
        "operator.open-cluster-management.io/managed-resources-eviction-timestamp";
    /// Prefix of the annotations a Klusterlet's `clusterAnnotations` may set on its
    /// ManagedCluster.
    pub const CLUSTER_ANNOTATIONS_KEY_PREFIX: &str = "agent.open-cluster-management.io";
    /// On a ClusterManager: set to [`DASHBOARD_ENABLED`] to have the operator deploy the web
    /// dashboard (`<cm>-dashboard`) beside the hub components; absent (or any other value),
    /// no dashboard. An ocm-rs addition, carried as an annotation so that the ClusterManager's
    /// schema stays upstream's.
    pub const DASHBOARD: &str = "operator.open-cluster-management.io/dashboard";
    /// The value of [`DASHBOARD`] that turns the dashboard on.
    pub const DASHBOARD_ENABLED: &str = "enabled";
}

/// Labels the operators put on what they create.
pub mod labels {
    /// Label prefix reserved to OCM; labels with it are not copied onto operator-created
    /// resources.
    pub const RESERVED_PREFIX: &str = "open-cluster-management.io";
    /// Marks resources created by the cluster-manager operator.
    pub const CREATED_BY_CLUSTER_MANAGER: &str =
        "open-cluster-management.io/created-by-clustermanager";
    /// Marks resources created by the klusterlet operator.
    pub const CREATED_BY_KLUSTERLET: &str = "open-cluster-management.io/created-by-klusterlet";
    /// Label key naming the component on every operator-created deployment.
    pub const APP: &str = "app";
}

/// Condition types and reasons of ClusterManager and Klusterlet.
pub mod conditions {
    // --- ClusterManager condition types

    /// ClusterManager: every hub component was applied.
    pub const CLUSTER_MANAGER_APPLIED: &str = "Applied";
    /// ClusterManager: the registration controller is not serving.
    pub const HUB_REGISTRATION_DEGRADED: &str = "HubRegistrationDegraded";
    /// ClusterManager: the placement controller is not serving.
    pub const HUB_PLACEMENT_DEGRADED: &str = "HubPlacementDegraded";
    /// ClusterManager: hub deployments are rolling out.
    pub const PROGRESSING: &str = "Progressing";
    /// ClusterManager: storage-version migration of the hub APIs finished.
    pub const MIGRATION_SUCCEEDED: &str = "MigrationSucceeded";

    // --- ClusterManager reasons

    /// Applied: everything was applied.
    pub const REASON_CLUSTER_MANAGER_APPLIED: &str = "ClusterManagerApplied";
    /// Applied: applying deployments failed.
    pub const REASON_RUNTIME_RESOURCE_APPLY_FAILED: &str = "RuntimeResourceApplyFailed";
    /// Applied: syncing service accounts failed.
    pub const REASON_SERVICE_ACCOUNT_SYNC_FAILED: &str = "ServiceAccountSyncFailed";
    /// Applied: applying CRDs failed (ClusterManager and Klusterlet).
    pub const REASON_CRD_APPLY_FAILED: &str = "CRDApplyFailed";
    /// Applied: applying webhook configurations failed.
    pub const REASON_WEBHOOK_APPLY_FAILED: &str = "WebhookApplyFailed";
    /// Progressing: deployments are rolling.
    pub const REASON_DEPLOYMENT_ROLLING: &str = "ClusterManagerDeploymentRolling";
    /// Progressing: deployments are up to date.
    pub const REASON_UP_TO_DATE: &str = "ClusterManagerUpToDate";
    /// MigrationSucceeded: the migration failed.
    pub const REASON_STORAGE_VERSION_MIGRATION_FAILED: &str = "StorageVersionMigrationFailed";
    /// MigrationSucceeded: the migration is still running.
    pub const REASON_STORAGE_VERSION_MIGRATION_PROCESSING: &str =
        "StorageVersionMigrationProcessing";
    /// MigrationSucceeded: the migration finished (upstream's spelling).
    pub const REASON_STORAGE_VERSION_MIGRATION_SUCCEED: &str = "StorageVersionMigrationSucceed";
    /// HubRegistrationDegraded: the registration deployment could not be read.
    pub const REASON_GET_REGISTRATION_DEPLOYMENT_FAILED: &str = "GetRegistrationDeploymentFailed";
    /// HubRegistrationDegraded: registration pods are unavailable.
    pub const REASON_UNAVAILABLE_REGISTRATION_POD: &str = "UnavailableRegistrationPod";
    /// HubRegistrationDegraded: registration works.
    pub const REASON_REGISTRATION_FUNCTIONAL: &str = "RegistrationFunctional";
    /// HubPlacementDegraded: the placement deployment could not be read.
    pub const REASON_GET_PLACEMENT_DEPLOYMENT_FAILED: &str = "GetPlacementDeploymentFailed";
    /// HubPlacementDegraded: placement pods are unavailable.
    pub const REASON_UNAVAILABLE_PLACEMENT_POD: &str = "UnavailablePlacementPod";
    /// HubPlacementDegraded: placement works.
    pub const REASON_PLACEMENT_FUNCTIONAL: &str = "PlacementFunctional";

    // --- Klusterlet condition types

    /// Klusterlet: every agent resource was applied.
    pub const KLUSTERLET_APPLIED: &str = "Applied";
    /// Klusterlet (Hosted): the managed cluster's kubeconfig is usable, resources can be applied.
    pub const READY_TO_APPLY: &str = "ReadyToApply";
    /// Klusterlet: the agents are available.
    pub const KLUSTERLET_AVAILABLE: &str = "Available";
    /// Klusterlet: the agents cannot use their hub kubeconfig.
    pub const HUB_CONNECTION_DEGRADED: &str = "HubConnectionDegraded";
    /// Klusterlet: the registration agent is not serving.
    pub const REGISTRATION_DESIRED_DEGRADED: &str = "RegistrationDesiredDegraded";
    /// Klusterlet: the work agent is not serving.
    pub const WORK_DESIRED_DEGRADED: &str = "WorkDesiredDegraded";

    // --- Klusterlet reasons

    /// Applied: everything was applied.
    pub const REASON_KLUSTERLET_APPLIED: &str = "KlusterletApplied";
    /// Applied: applying resources failed.
    pub const REASON_KLUSTERLET_APPLY_FAILED: &str = "KlusterletApplyFailed";
    /// Applied: applying resources on the managed cluster failed.
    pub const REASON_MANAGED_CLUSTER_RESOURCE_APPLY_FAILED: &str =
        "ManagedClusterResourceApplyFailed";
    /// Applied: applying resources on the management cluster failed.
    pub const REASON_MANAGEMENT_CLUSTER_RESOURCE_APPLY_FAILED: &str =
        "ManagementClusterResourceApplyFailed";
    /// ReadyToApply: the external-managed-kubeconfig secret is missing or unusable.
    pub const REASON_KLUSTERLET_PREPARE_FAILED: &str = "KlusterletPrepareFailed";
    /// ReadyToApply: the external-managed-kubeconfig secret was validated.
    pub const REASON_KLUSTERLET_PREPARED: &str = "KlusterletPrepared";
    /// Available / *DesiredDegraded: reading the deployments failed.
    pub const REASON_GET_DEPLOYMENT_FAILED: &str = "GetDeploymentFailed";
    /// Available / *DesiredDegraded: some pods are unavailable.
    pub const REASON_UNAVAILABLE_PODS: &str = "UnavailablePods";
    /// Available / *DesiredDegraded: all deployments work.
    pub const REASON_DEPLOYMENTS_FUNCTIONAL: &str = "DeploymentsFunctional";
    /// Available / *DesiredDegraded: no pod is available.
    pub const REASON_NO_AVAILABLE_PODS: &str = "NoAvailablePods";
    /// Available: every deployed resource is available.
    pub const REASON_KLUSTERLET_AVAILABLE: &str = "KlusterletAvailable";
    /// HubConnectionDegraded: the agents reach the hub.
    pub const REASON_HUB_CONNECTION_FUNCTIONAL: &str = "HubConnectionFunctional";
    /// HubConnectionDegraded: the hub kubeconfig secret is missing.
    pub const REASON_HUB_KUBE_CONFIG_SECRET_MISSING: &str = "HubKubeConfigSecretMissing";
    /// HubConnectionDegraded: the secret has no kubeconfig.
    pub const REASON_HUB_KUBE_CONFIG_MISSING: &str = "HubKubeConfigMissing";
    /// HubConnectionDegraded: the hub kubeconfig could not be read.
    pub const REASON_HUB_KUBE_CONFIG_ERROR: &str = "HubKubeConfigError";
    /// HubConnectionDegraded: the secret has no cluster name.
    pub const REASON_CLUSTER_NAME_MISSING: &str = "ClusterNameMissing";
    /// HubConnectionDegraded: the hub refuses the credentials.
    pub const REASON_HUB_KUBE_CONFIG_UNAUTHORIZED: &str = "HubKubeConfigUnauthorized";

    // --- Both kinds

    /// Whether every feature gate in the spec is known to the component it is meant for.
    pub const VALID_FEATURE_GATES: &str = "ValidFeatureGates";
    /// ValidFeatureGates: all gates are known.
    pub const REASON_FEATURE_GATES_ALL_VALID: &str = "FeatureGatesAllValid";
    /// ValidFeatureGates: some gates are unknown and were dropped.
    pub const REASON_INVALID_FEATURE_GATES_EXISTING: &str = "InvalidFeatureGatesExisting";
}

/// Values of `spec.deployOption.mode`. ClusterManager accepts `Default` and `Hosted`;
/// Klusterlet all four (its schema does not check them).
pub mod install_modes {
    /// Everything runs on the cluster the object lives on.
    pub const DEFAULT: &str = "Default";
    /// Controllers run on a management cluster and reach the hub or managed cluster through
    /// an external kubeconfig secret.
    pub const HOSTED: &str = "Hosted";
    /// Klusterlet: registration and work run as one `klusterlet-agent` deployment.
    pub const SINGLETON: &str = "Singleton";
    /// Klusterlet: Singleton, on a management cluster.
    pub const SINGLETON_HOSTED: &str = "SingletonHosted";
}

/// Namespaces the operators deploy into.
pub mod namespaces {
    /// Where the operators themselves run.
    pub const OPERATOR: &str = "open-cluster-management";
    /// Where the hub components run in Default mode (Hosted: the ClusterManager's name).
    pub const HUB: &str = "open-cluster-management-hub";
    /// Default agent namespace on a managed cluster (Klusterlet `spec.namespace`).
    pub const AGENT: &str = "open-cluster-management-agent";
    /// Prefix every Klusterlet agent namespace must have.
    pub const AGENT_PREFIX: &str = "open-cluster-management-";
    /// The addon namespace on a managed cluster, whatever its Klusterlets' agent namespaces:
    /// every Klusterlet makes it, the last one to go removes it.
    pub const AGENT_ADDON: &str = "open-cluster-management-agent-addon";
}

/// Secrets (and their keys) the operators and agents use.
pub mod secrets {
    /// In the agent namespace: the kubeconfig the registration agent bootstraps with. Any
    /// change to it makes the agent bootstrap again.
    pub const BOOTSTRAP_HUB_KUBECONFIG: &str = "bootstrap-hub-kubeconfig";
    /// In the agent namespace: the agent's own hub credentials, written by the registration
    /// agent.
    pub const HUB_KUBECONFIG: &str = "hub-kubeconfig-secret";
    /// Hosted ClusterManager: admin kubeconfig of the hub cluster.
    pub const EXTERNAL_HUB_KUBECONFIG: &str = "external-hub-kubeconfig";
    /// Hosted Klusterlet: kubeconfig the operator uses to reach the managed cluster.
    pub const EXTERNAL_MANAGED_KUBECONFIG: &str = "external-managed-kubeconfig";
    /// Hosted Klusterlet: managed-cluster kubeconfig of the registration agent.
    pub const EXTERNAL_MANAGED_KUBECONFIG_REGISTRATION: &str =
        "external-managed-kubeconfig-registration";
    /// Hosted Klusterlet: managed-cluster kubeconfig of the work agent.
    pub const EXTERNAL_MANAGED_KUBECONFIG_WORK: &str = "external-managed-kubeconfig-work";
    /// SingletonHosted Klusterlet: managed-cluster kubeconfig of the single agent.
    pub const EXTERNAL_MANAGED_KUBECONFIG_AGENT: &str = "external-managed-kubeconfig-agent";
    /// In the hub namespace: settings of a non-kube work driver (key `config.yaml`).
    pub const WORK_DRIVER_CONFIG: &str = "work-driver-config";
    /// Image pull secret copied from the operator namespace to the component namespaces.
    pub const IMAGE_PULL_CREDENTIALS: &str = "open-cluster-management-image-pull-credentials";
    /// Serving certificate of the registration webhook.
    pub const REGISTRATION_WEBHOOK_SERVING_CERT: &str = "registration-webhook-serving-cert";
    /// Serving certificate of the work webhook.
    pub const WORK_WEBHOOK_SERVING_CERT: &str = "work-webhook-serving-cert";
    /// Serving certificate of the addon webhook.
    pub const ADDON_WEBHOOK_SERVING_CERT: &str = "addon-webhook-serving-cert";
    /// Serving certificate of the hub gRPC server.
    pub const GRPC_SERVER_SERVING_CERT: &str = "grpc-server-serving-cert";
    /// CA that signs the webhook serving certificates.
    pub const SIGNER: &str = "signer-secret";

    /// Key of a kubeconfig in the bootstrap and hub secrets.
    pub const KEY_KUBECONFIG: &str = "kubeconfig";
    /// Key of the client certificate in the hub secret.
    pub const KEY_TLS_CERT: &str = "tls.crt";
    /// Key of the client private key in the hub secret.
    pub const KEY_TLS_KEY: &str = "tls.key";
    /// Key of the cluster name in the hub secret.
    pub const KEY_CLUSTER_NAME: &str = "cluster-name";
    /// Key of the agent id in the hub secret.
    pub const KEY_AGENT_NAME: &str = "agent-name";
    /// Key of the work driver settings in `work-driver-config`.
    pub const KEY_WORK_DRIVER_CONFIG: &str = "config.yaml";

    /// Where the bootstrap secret is mounted in the registration agent.
    pub const BOOTSTRAP_MOUNT_DIR: &str = "/spoke/bootstrap";
    /// Where the hub kubeconfig secret is mounted in the agents.
    pub const HUB_KUBECONFIG_MOUNT_DIR: &str = "/spoke/hub-kubeconfig";
}

/// Names of what the cluster-manager operator deploys. Deployment names are the
/// ClusterManager's name followed by a suffix.
pub mod cluster_manager {
    /// Name of the ClusterManager that clusteradm and the chart create.
    pub const DEFAULT_NAME: &str = "cluster-manager";

    /// Deployment suffix of the registration controller.
    pub const REGISTRATION_CONTROLLER_SUFFIX: &str = "-registration-controller";
    /// Deployment suffix of the registration webhook.
    pub const REGISTRATION_WEBHOOK_SUFFIX: &str = "-registration-webhook";
    /// Deployment suffix of the work webhook.
    pub const WORK_WEBHOOK_SUFFIX: &str = "-work-webhook";
    /// Deployment suffix of the hub work controller (ManifestWorkReplicaSet or
    /// CleanUpCompletedManifestWork gates).
    pub const WORK_CONTROLLER_SUFFIX: &str = "-work-controller";
    /// Deployment suffix of the placement controller.
    pub const PLACEMENT_CONTROLLER_SUFFIX: &str = "-placement-controller";
    /// Deployment suffix of the addon webhook.
    pub const ADDON_WEBHOOK_SUFFIX: &str = "-addon-webhook";
    /// Deployment suffix of the addon manager (AddonManagement gate).
    pub const ADDON_MANAGER_CONTROLLER_SUFFIX: &str = "-addon-manager-controller";
    /// Deployment (and service) suffix of the gRPC server (grpc driver).
    pub const GRPC_SERVER_SUFFIX: &str = "-grpc-server";

    /// Service account of the registration controller.
    pub const REGISTRATION_CONTROLLER_SA: &str = "registration-controller-sa";
    /// Service account of the registration webhook.
    pub const REGISTRATION_WEBHOOK_SA: &str = "registration-webhook-sa";
    /// Service account of the work controller.
    pub const WORK_CONTROLLER_SA: &str = "work-controller-sa";
    /// Service account of the work webhook.
    pub const WORK_WEBHOOK_SA: &str = "work-webhook-sa";
    /// Service account of the placement controller.
    pub const PLACEMENT_CONTROLLER_SA: &str = "placement-controller-sa";
    /// Service account of the addon manager.
    pub const ADDON_MANAGER_CONTROLLER_SA: &str = "addon-manager-controller-sa";
    /// Service account of the addon webhook.
    pub const ADDON_WEBHOOK_SA: &str = "addon-webhook-sa";
    /// Service account of the gRPC server.
    pub const GRPC_SERVER_SA: &str = "grpc-server-sa";

    /// Service of the registration webhook.
    pub const REGISTRATION_WEBHOOK_SERVICE: &str = "cluster-manager-registration-webhook";
    /// Service of the work webhook.
    pub const WORK_WEBHOOK_SERVICE: &str = "cluster-manager-work-webhook";
    /// Service of the addon webhook (also the CMA/MCA conversion webhook).
    pub const ADDON_WEBHOOK_SERVICE: &str = "cluster-manager-addon-webhook";
}

/// Names of what the klusterlet operator deploys. Deployment and service-account names are
/// the Klusterlet's name followed by a suffix; the usual Klusterlet is named `klusterlet`.
pub mod klusterlet {
    /// Name of the Klusterlet that clusteradm and the chart create.
    pub const DEFAULT_NAME: &str = "klusterlet";

    /// Deployment suffix of the registration agent.
    pub const REGISTRATION_AGENT_SUFFIX: &str = "-registration-agent";
    /// Deployment suffix of the work agent.
    pub const WORK_AGENT_SUFFIX: &str = "-work-agent";
    /// Deployment suffix of the single agent (Singleton modes).
    pub const AGENT_SUFFIX: &str = "-agent";
    /// Service-account suffix of the registration agent.
    pub const REGISTRATION_SA_SUFFIX: &str = "-registration-sa";
    /// Service-account suffix of the work agent, and of the single agent in Singleton modes.
    pub const WORK_SA_SUFFIX: &str = "-work-sa";

    /// Registration agent deployment of the default Klusterlet.
    pub const REGISTRATION_AGENT: &str = "klusterlet-registration-agent";
    /// Work agent deployment of the default Klusterlet.
    pub const WORK_AGENT: &str = "klusterlet-work-agent";
    /// Single agent deployment of the default Klusterlet (Singleton modes).
    pub const AGENT: &str = "klusterlet-agent";
    /// Registration agent service account of the default Klusterlet.
    pub const REGISTRATION_SA: &str = "klusterlet-registration-sa";
    /// Work agent (and single agent) service account of the default Klusterlet.
    pub const WORK_SA: &str = "klusterlet-work-sa";

    /// The executable of the `ocm` image that the agent containers run: `ocm-agent`, which
    /// holds the managed cluster's agents alone and so keeps their memory small (`ocm` serves
    /// the same commands).
    pub const AGENT_EXECUTABLE: &str = "ocm-agent";
}
