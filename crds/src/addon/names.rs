//! Well-known names of the `addon` API group: labels, annotations, finalizers, conditions.
//!
//! Grouped by what they are: [`labels`], [`annotations`], [`finalizers`], [`conditions`]
//! (condition types and, per type, their reasons), plus the default install namespace, the
//! health check modes and the names the v1alpha1 <-> v1beta1 conversion relies on.

// --- namespaces -------------------------------------------------------------------------------

/// Namespace on the managed cluster where addon agents are installed unless an
/// AddOnDeploymentConfig or the addon itself says otherwise.
pub const DEFAULT_INSTALL_NAMESPACE: &str = "open-cluster-management-agent-addon";

// --- health check modes -----------------------------------------------------------------------

/// Health check mode in which the addon agent renews a Lease named after the addon in its
/// install namespace and the klusterlet derives `Available` from it (the default).
pub const HEALTH_CHECK_MODE_LEASE: &str = "Lease";

/// Health check mode in which the hub addon manager sets `Available` itself (from the
/// ManifestWork status or probes); the klusterlet leaves the condition alone.
pub const HEALTH_CHECK_MODE_CUSTOMIZED: &str = "Customized";

// --- install strategies -----------------------------------------------------------------------

/// ClusterManagementAddOn install strategy: ManagedClusterAddOns are created by hand.
pub const INSTALL_STRATEGY_MANUAL: &str = "Manual";

/// ClusterManagementAddOn install strategy: the hub creates a ManagedClusterAddOn in every
/// cluster the listed placements select.
pub const INSTALL_STRATEGY_PLACEMENTS: &str = "Placements";

// --- registration -----------------------------------------------------------------------------

/// Signer of kube-apiserver client certificates. In v1alpha1 a registration with this signer
/// is what v1beta1 calls a `kubeClient` registration.
pub const KUBE_APISERVER_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";

/// Placeholder config name upstream writes into a v1beta1 `defaultConfigs` entry converted
/// from a v1alpha1 `supportedConfigs` entry that had no `defaultConfig`. Never a real name
/// (it starts with `__`); converting back turns it into "no default config" again.
pub const RESERVED_NO_DEFAULT_CONFIG_NAME: &str = "__reserved_no_default__";

/// Well-known labels.
pub mod labels {
    /// Names the addon an object belongs to: set on addon ManifestWorks, addon CSRs and other
    /// hub-side resources created for an addon.
    pub const ADDON_NAME: &str = "open-cluster-management.io/addon-name";

    /// Install namespace of a hosted-mode addon, set on its ManifestWorks in the hosting
    /// cluster namespace.
    pub const ADDON_NAMESPACE: &str = "open-cluster-management.io/addon-namespace";

    /// Names the AddOnTemplate an object was rendered from (template addons).
    pub const ADDON_TEMPLATE_NAME: &str = "open-cluster-management.io/addon-template-name";

    /// Marks a namespace on the managed cluster as an addon install namespace (value
    /// `"true"`); the klusterlet operator copies image pull secrets and TLS settings there.
    pub const INSTALL_NAMESPACE: &str = "addon.open-cluster-management.io/namespace";

    /// Deprecated label form of [`super::annotations::ADDON_PRE_DELETE_HOOK`]: a manifest
    /// carrying it is a pre-delete hook.
    pub const DEPRECATED_ADDON_PRE_DELETE_HOOK: &str =
        "open-cluster-management.io/addon-pre-delete";

    /// Deprecated label form of [`super::annotations::HOSTED_MANIFEST_LOCATION`].
    pub const DEPRECATED_HOSTED_MANIFEST_LOCATION: &str =
        "addon.open-cluster-management.io/hosted-manifest-location";

    /// Prefix of the labels the hub's addon discovery controller puts on a ManagedCluster,
    /// one per addon: `feature.open-cluster-management.io/addon-<addon name>`, with a value
    /// from [`ADDON_FEATURE_AVAILABLE`], [`ADDON_FEATURE_UNHEALTHY`] or
    /// [`ADDON_FEATURE_UNREACHABLE`].
    pub const ADDON_FEATURE_PREFIX: &str = "feature.open-cluster-management.io/addon-";

    /// Addon feature label value: the addon is available.
    pub const ADDON_FEATURE_AVAILABLE: &str = "available";

    /// Addon feature label value: the addon reports itself unavailable.
    pub const ADDON_FEATURE_UNHEALTHY: &str = "unhealthy";

    /// Addon feature label value: the addon's health is unknown.
    pub const ADDON_FEATURE_UNREACHABLE: &str = "unreachable";

    /// Marks the hub objects of an addon agent's token infrastructure (value `"true"`): the
    /// ServiceAccount, Role and RoleBinding the token driver uses.
    pub const TOKEN_INFRASTRUCTURE: &str = "addon.open-cluster-management.io/token-infrastructure";

    /// Names the addon on its token infrastructure objects.
    pub const TOKEN_INFRASTRUCTURE_ADDON: &str = "addon.open-cluster-management.io/name";

    /// The addon feature label key for one addon.
    pub fn addon_feature(addon_name: &str) -> String {
        format!("{ADDON_FEATURE_PREFIX}{addon_name}")
    }
}

/// Well-known annotations.
pub mod annotations {
    /// Prefix of the ManagedCluster annotations the hub copies onto the ManagedClusterAddOns it
    /// creates for an install strategy.
    pub const PREFIX: &str = "addon.open-cluster-management.io";

    /// On a ClusterManagementAddOn: who manages the addon's lifecycle, [`LIFECYCLE_ADDON_MANAGER`]
    /// (the central addon manager) or [`LIFECYCLE_SELF`] (the addon's own manager).
    pub const LIFECYCLE: &str = "addon.open-cluster-management.io/lifecycle";

    /// [`LIFECYCLE`] value: the central addon manager installs and updates the addon.
    pub const LIFECYCLE_ADDON_MANAGER: &str = "addon-manager";

    /// [`LIFECYCLE`] value: the addon's own manager does.
    pub const LIFECYCLE_SELF: &str = "self";

    /// On a ClusterManagementAddOn (legacy addons): do not create ManagedClusterAddOns
    /// automatically.
    pub const DISABLE_AUTOMATIC_INSTALLATION: &str =
        "addon.open-cluster-management.io/disable-automatic-installation";

    /// On a ManagedClusterAddOn: run the addon in hosted mode, its agent deployed on the named
    /// hosting cluster.
    pub const HOSTING_CLUSTER_NAME: &str = "addon.open-cluster-management.io/hosting-cluster-name";

    /// On an addon manifest: the manifest is a pre-delete hook (a Job or Pod run to completion
    /// before the addon is removed).
    pub const ADDON_PRE_DELETE_HOOK: &str = "addon.open-cluster-management.io/addon-pre-delete";

    /// On an addon manifest: leave the resource on the managed cluster when the addon is
    /// removed.
    pub const DELETION_ORPHAN: &str = "addon.open-cluster-management.io/deletion-orphan";

    /// On an addon manifest in hosted mode: where it is deployed, [`HOSTED_MANIFEST_LOCATION_MANAGED`]
    /// (default), [`HOSTED_MANIFEST_LOCATION_HOSTING`] or [`HOSTED_MANIFEST_LOCATION_NONE`].
    pub const HOSTED_MANIFEST_LOCATION: &str =
        "addon.open-cluster-management.io/hosted-manifest-location";

    /// [`HOSTED_MANIFEST_LOCATION`] value: on the managed cluster.
    pub const HOSTED_MANIFEST_LOCATION_MANAGED: &str = "managed";

    /// [`HOSTED_MANIFEST_LOCATION`] value: on the hosting cluster.
    pub const HOSTED_MANIFEST_LOCATION_HOSTING: &str = "hosting";

    /// [`HOSTED_MANIFEST_LOCATION`] value: nowhere.
    pub const HOSTED_MANIFEST_LOCATION_NONE: &str = "none";

    /// On a v1beta1 ManagedClusterAddOn: carries the v1alpha1 `spec.installNamespace`, which
    /// v1beta1 has no field for. Added when converting to v1beta1, removed (and turned back into
    /// the field) when converting to v1alpha1.
    pub const V1ALPHA1_INSTALL_NAMESPACE: &str =
        "addon.open-cluster-management.io/v1alpha1-install-namespace";

    /// On addon ManifestWorks: JSON map of the spec hashes of the configs the manifests were
    /// rendered with.
    pub const CONFIG_SPEC_HASH: &str = "open-cluster-management.io/config-spec-hash";

    /// On a ManagedClusterAddOn (addon-framework addons built from templates or charts): JSON
    /// values merged into the rendering values.
    pub const VALUES: &str = "addon.open-cluster-management.io/values";
}

/// Well-known finalizers.
pub mod finalizers {
    /// On a ManagedClusterAddOn: the pre-delete hook has to complete before deletion.
    pub const ADDON_PRE_DELETE_HOOK: &str = "addon.open-cluster-management.io/addon-pre-delete";

    /// On a hosted-mode ManagedClusterAddOn: the pre-delete hook on the hosting cluster has to
    /// complete before deletion.
    pub const HOSTING_ADDON_PRE_DELETE_HOOK: &str =
        "addon.open-cluster-management.io/hosting-addon-pre-delete";

    /// On a hosted-mode ManagedClusterAddOn: the manifests deployed on the hosting cluster
    /// have to be removed before deletion.
    pub const HOSTING_MANIFESTS_CLEANUP: &str =
        "addon.open-cluster-management.io/hosting-manifests-cleanup";

    /// Deprecated spelling of [`ADDON_PRE_DELETE_HOOK`]; removed when found.
    pub const DEPRECATED_ADDON_PRE_DELETE_HOOK: &str =
        "cluster.open-cluster-management.io/addon-pre-delete";

    /// Deprecated spelling of [`HOSTING_ADDON_PRE_DELETE_HOOK`]; removed when found.
    pub const DEPRECATED_HOSTING_ADDON_PRE_DELETE_HOOK: &str =
        "cluster.open-cluster-management.io/hosting-addon-pre-delete";

    /// Deprecated spelling of [`HOSTING_MANIFESTS_CLEANUP`]; removed when found.
    pub const DEPRECATED_HOSTING_MANIFESTS_CLEANUP: &str =
        "cluster.open-cluster-management.io/hosting-manifests-cleanup";
}

/// ManagedClusterAddOn condition types and their reasons.
pub mod conditions {
    /// The addon agent is running and healthy.
    pub const AVAILABLE: &str = "Available";

    /// The addon agent works but with reduced function.
    pub const DEGRADED: &str = "Degraded";

    /// The addon's desired configs (defaults, placement configs, own configs) are handed out
    /// to it per its rollout strategy (written by the hub's install controller).
    pub const CONFIGURED: &str = "Configured";

    /// The addon is being installed or upgraded to new configs.
    pub const PROGRESSING: &str = "Progressing";

    /// The addon's manifests were applied to the managed cluster.
    pub const MANIFEST_APPLIED: &str = "ManifestApplied";

    /// The addon's pre-delete hook manifests completed.
    pub const HOOK_MANIFEST_COMPLETED: &str = "HookManifestCompleted";

    /// Hosted mode: the addon's manifests were applied to the hosting cluster.
    pub const HOSTING_MANIFEST_APPLIED: &str = "HostingManifestApplied";

    /// Hosted mode: the hosting cluster named in the annotation is a valid managed cluster.
    pub const HOSTING_CLUSTER_VALIDITY: &str = "HostingClusterValidity";

    /// The addon's registrations and their hub permissions were set up.
    pub const REGISTRATION_APPLIED: &str = "RegistrationApplied";

    /// The klusterlet rotated a registration's client certificate (one per registration).
    pub const CLUSTER_CERTIFICATE_ROTATED: &str = "ClusterCertificateRotated";

    /// Token driver: the hub made the addon agent's ServiceAccount (`<addon>-agent` in the
    /// cluster namespace) and the rights to request its tokens; the message names the
    /// ServiceAccount and its UID (`ServiceAccount <ns>/<name> (UID: <uid>) is ready`).
    pub const TOKEN_INFRASTRUCTURE_READY: &str = "TokenInfrastructureReady";

    /// Token driver: whether the agent got the addon agent a fresh ServiceAccount token.
    pub const TOKEN_REFRESHED: &str = "TokenRefreshed";

    /// Reasons of [`AVAILABLE`].
    pub mod available {
        /// The addon's ManifestWork does not exist yet.
        pub const WORK_NOT_FOUND: &str = "WorkNotFound";
        /// Applying the addon's ManifestWork failed.
        pub const WORK_APPLY_FAILED: &str = "WorkApplyFailed";
        /// The addon's ManifestWork is not applied yet.
        pub const WORK_NOT_APPLIED: &str = "WorkNotApplied";
        /// The addon's ManifestWork is applied (no probe configured).
        pub const WORK_APPLIED: &str = "WorkApplied";
        /// The health probe has not reported yet.
        pub const NO_PROBE_RESULT: &str = "NoProbeResult";
        /// The health probe reports the addon unavailable.
        pub const PROBE_UNAVAILABLE: &str = "ProbeUnavailable";
        /// The health probe reports the addon available.
        pub const PROBE_AVAILABLE: &str = "ProbeAvailable";
        /// Lease mode: the agent stopped renewing its lease.
        pub const LEASE_UPDATE_STOPPED: &str = "ManagedClusterAddOnLeaseUpdateStopped";
        /// Lease mode: the agent's lease does not exist.
        pub const LEASE_NOT_FOUND: &str = "ManagedClusterAddOnLeaseNotFound";
        /// Lease mode: the agent renews its lease.
        pub const LEASE_UPDATED: &str = "ManagedClusterAddOnLeaseUpdated";
    }

    /// Reasons of [`MANIFEST_APPLIED`].
    pub mod manifest_applied {
        /// Creating or updating the ManifestWork failed.
        pub const WORK_APPLY_FAILED: &str = "ManifestWorkApplyFailed";
        /// The manifests are applied.
        pub const APPLIED: &str = "AddonManifestApplied";
        /// Applying the manifests on the managed cluster failed.
        pub const APPLY_FAILED: &str = "AddonManifestAppliedFailed";
    }

    /// Reasons of [`CONFIGURED`].
    pub mod configured {
        /// The addon's desired configs are handed out to it (or its rollout is done).
        pub const CONFIGURATIONS_CONFIGURED: &str = "ConfigurationsConfigured";
        /// The addon waits on its rollout to be handed its new configs.
        pub const CONFIGURATIONS_NOT_CONFIGURED: &str = "ConfigurationsNotConfigured";
    }

    /// Reasons of [`PROGRESSING`].
    pub mod progressing {
        /// Install or upgrade in progress.
        pub const PROGRESSING: &str = "Progressing";
        /// Install or upgrade done.
        pub const COMPLETED: &str = "Completed";
        /// Install or upgrade failed.
        pub const FAILED: &str = "Failed";
        /// Waiting for canary clusters of the rollout.
        pub const WAITING_FOR_CANARY: &str = "WaitingForCanary";
        /// The addon does not support the configured config types.
        pub const CONFIGURATION_UNSUPPORTED: &str = "ConfigurationUnsupported";
    }

    /// Reasons of [`REGISTRATION_APPLIED`].
    pub mod registration_applied {
        /// The addon has no registrations.
        pub const NIL_REGISTRATION: &str = "NilRegistration";
        /// Setting up hub permissions failed.
        pub const SET_PERMISSION_FAILED: &str = "SetPermissionFailed";
        /// Hub permissions are set up.
        pub const SET_PERMISSION_APPLIED: &str = "SetPermissionApplied";
    }

    /// Reasons of [`HOSTING_CLUSTER_VALIDITY`].
    pub mod hosting_cluster_validity {
        /// The hosting cluster is a valid managed cluster.
        pub const VALID: &str = "HostingClusterValid";
        /// The hosting cluster is not a valid managed cluster.
        pub const INVALID: &str = "HostingClusterInvalid";
        /// The hosting cluster is not where the target's klusterlet reports it runs.
        pub const MISMATCH: &str = "HostingClusterMismatch";
    }
}
