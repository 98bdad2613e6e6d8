//! Well-known names of the `cluster` API group: labels, annotations, finalizers, taints,
//! conditions.
//!
//! Grouped by what they are: [`labels`], [`annotations`], [`finalizers`], [`taints`],
//! [`conditions`] (condition types and, per type, their reasons), [`claims`],
//! [`prioritizers`], plus the built-in cluster sets and the placement limits.

// --- built-in cluster sets --------------------------------------------------------------------

/// Cluster set the hub creates (ExclusiveClusterSetLabel) and puts every cluster without a
/// cluster set label into.
pub const DEFAULT_CLUSTER_SET: &str = "default";

/// Cluster set the hub creates with an empty label selector: every managed cluster.
pub const GLOBAL_CLUSTER_SET: &str = "global";

// --- placement --------------------------------------------------------------------------------

/// Most cluster decisions the placement controller writes into one PlacementDecision; more
/// selected clusters spill into further PlacementDecisions. A controller limit, not a schema
/// one.
pub const MAX_CLUSTER_DECISIONS: usize = 100;

/// Infix of PlacementDecision names: `<placement>-decision-<N>`, N counting from 1.
pub const DECISION_NAME_INFIX: &str = "-decision-";

/// Prioritizer policy mode that keeps the default prioritizers next to the configured ones
/// (the default).
pub const PRIORITIZER_MODE_ADDITIVE: &str = "Additive";

/// Prioritizer policy mode that uses only the configured prioritizers.
pub const PRIORITIZER_MODE_EXACT: &str = "Exact";

/// Toleration operator: the taint value must equal the toleration value (the default).
pub const TOLERATION_OP_EQUAL: &str = "Equal";

/// Toleration operator: any taint value matches.
pub const TOLERATION_OP_EXISTS: &str = "Exists";

// --- registration -----------------------------------------------------------------------------

/// Name of the Lease the registration agent renews in its cluster namespace on the hub.
pub const MANAGED_CLUSTER_LEASE: &str = "managed-cluster-lease";

/// Resource name of CPU in `capacity` / `allocatable`.
pub const RESOURCE_CPU: &str = "cpu";

/// Resource name of memory in `capacity` / `allocatable`.
pub const RESOURCE_MEMORY: &str = "memory";

/// API group of the registration subresources checked with SubjectAccessReviews
/// (`managedclusters/accept`, `managedclusters/clientcertificates`).
pub const REGISTER_GROUP: &str = "register.open-cluster-management.io";

/// Subresource of ManagedCluster (group [`REGISTER_GROUP`], verb `update`) a user needs to
/// set `hubAcceptsClient` to true.
pub const SUBRESOURCE_ACCEPT: &str = "managedclusters/accept";

/// Subresource of ManagedCluster (group [`REGISTER_GROUP`], verb `renew`) an agent needs to
/// renew its client certificate.
pub const SUBRESOURCE_CLIENT_CERTIFICATES: &str = "managedclusters/clientcertificates";

/// Subresource of ManagedClusterSet (verb `create`) needed to move a cluster into or out of
/// a set by its label.
pub const SUBRESOURCE_CLUSTER_SET_JOIN: &str = "managedclustersets/join";

/// Subresource of ManagedClusterSet (verb `create`) needed to create or update a binding to
/// the set.
pub const SUBRESOURCE_CLUSTER_SET_BIND: &str = "managedclustersets/bind";

/// Well-known labels.
pub mod labels {
    /// Names the managed cluster an object belongs to: on the cluster namespace on the hub,
    /// on CSRs, leases and RBAC objects created for the cluster.
    pub const CLUSTER_NAME: &str = "open-cluster-management.io/cluster-name";

    /// On a ManagedCluster: the ExclusiveClusterSetLabel cluster set it belongs to.
    pub const CLUSTER_SET: &str = "cluster.open-cluster-management.io/clusterset";

    /// On a PlacementDecision: name of the Placement it belongs to.
    pub const PLACEMENT: &str = "cluster.open-cluster-management.io/placement";

    /// On a PlacementDecision: index of its decision group.
    pub const DECISION_GROUP_INDEX: &str =
        "cluster.open-cluster-management.io/decision-group-index";

    /// On a PlacementDecision: name of its decision group (empty for unnamed groups).
    pub const DECISION_GROUP_NAME: &str = "cluster.open-cluster-management.io/decision-group-name";

    /// On a ClusterClaim (managed cluster): keep this claim on the managed cluster, do not
    /// report it to the hub.
    pub const SPOKE_ONLY_CLAIM: &str = "open-cluster-management.io/spoke-only";

    /// Prefix of the label the agent puts on namespaces it created on the managed cluster for
    /// a cluster set's `managedNamespaces`; the rest is a hash of the hub (cut to 63 chars).
    pub const MANAGED_NAMESPACE_PREFIX: &str = "clusterset.open-cluster-management.io/";
}

/// Well-known annotations.
pub mod annotations {
    /// On a ManagedCluster: JSON `{"registries":[{"source":..,"mirror":..}]}` overriding the
    /// image registries of addons on that cluster (AddOnDeploymentConfig registries win).
    pub const IMAGE_REGISTRIES: &str = "open-cluster-management.io/image-registries";

    /// On a ManagedCluster: RFC 3339 time at which the hub accepted it automatically.
    pub const AUTOMATICALLY_ACCEPTED_ON: &str =
        "open-cluster-management.io/automatically-accepted-on";

    /// On a ManagedCluster: `"true"` turns off the hub's clock-sync check.
    pub const SKIP_CLOCK_SYNC_CHECK: &str =
        "registration.open-cluster-management.io/skip-clock-sync-check";

    /// On resources in a cluster namespace: deletion order (0..100, lower first; missing or
    /// invalid values go first) when the cluster is deleted.
    pub const CLEANUP_PRIORITY: &str = "open-cluster-management.io/cleanup-priority";

    /// On a Placement: `"true"` makes the scheduler skip it.
    pub const EXPERIMENTAL_SCHEDULING_DISABLE: &str =
        "cluster.open-cluster-management.io/experimental-scheduling-disable";

    /// On the built-in cluster sets: `"false"` stops the hub from resetting their spec.
    pub const AUTOUPDATE: &str = "cluster.open-cluster-management.io/autoupdate";

    /// Prefix of ManagedCluster annotations the klusterlet sets from its `clusterAnnotations`
    /// (on create only).
    pub const AGENT_PREFIX: &str = "agent.open-cluster-management.io/";

    /// On a ManagedCluster registered with the awsirsa driver: ARN of the EKS cluster.
    pub const MANAGED_CLUSTER_ARN: &str = "agent.open-cluster-management.io/managed-cluster-arn";
}

/// Finalizers.
pub mod finalizers {
    /// On a ManagedCluster, added when it is accepted: the hub removes the cluster's RBAC
    /// before letting it go.
    pub const API_RESOURCE_CLEANUP: &str =
        "cluster.open-cluster-management.io/api-resource-cleanup";

    /// On a ManagedCluster: the hub deletes addons and works in the cluster namespace first.
    pub const RESOURCE_CLEANUP: &str = "cluster.open-cluster-management.io/resource-cleanup";
}

/// Taint keys the hub manages (effect `NoSelect`); agents may not add or remove them.
pub mod taints {
    /// The cluster's `ManagedClusterConditionAvailable` condition is False.
    pub const UNAVAILABLE: &str = "cluster.open-cluster-management.io/unavailable";

    /// The cluster's `ManagedClusterConditionAvailable` condition is Unknown or missing.
    pub const UNREACHABLE: &str = "cluster.open-cluster-management.io/unreachable";
}

/// Reserved cluster claims.
pub mod claims {
    /// Cluster id claim.
    pub const ID: &str = "id.k8s.io";

    /// Kubernetes version claim.
    pub const KUBE_VERSION: &str = "kubeversion.open-cluster-management.io";

    /// Platform claim (e.g. AWS, GCP).
    pub const PLATFORM: &str = "platform.open-cluster-management.io";

    /// Product claim (e.g. OpenShift, EKS).
    pub const PRODUCT: &str = "product.open-cluster-management.io";

    /// Where the klusterlet's agents run (its own cluster, or in Hosted mode the management
    /// cluster), as the klusterlet reports it: hosted addons must be hosted there.
    pub const HOSTING_CLUSTER: &str = "hosting-cluster.open-cluster-management.io";

    /// Claim names always reported, before custom ones, and not counted against the custom
    /// claim limit.
    pub const RESERVED: [&str; 5] = [ID, KUBE_VERSION, PLATFORM, PRODUCT, HOSTING_CLUSTER];

    /// Most custom (non-reserved) claims reported in the ManagedCluster status by default.
    pub const DEFAULT_MAX_CUSTOM_CLAIMS: usize = 20;
}

/// Built-in placement prioritizers (`scoreCoordinate.builtIn`).
pub mod prioritizers {
    /// Favours clusters with fewer decisions from other placements (default weight 1).
    pub const BALANCE: &str = "Balance";

    /// Favours clusters already selected by this placement (default weight 1).
    pub const STEADY: &str = "Steady";

    /// Favours clusters with more allocatable CPU.
    pub const RESOURCE_ALLOCATABLE_CPU: &str = "ResourceAllocatableCPU";

    /// Favours clusters with more allocatable memory.
    pub const RESOURCE_ALLOCATABLE_MEMORY: &str = "ResourceAllocatableMemory";

    /// Spreads clusters over topologies; documented upstream but not implemented there.
    pub const SPREAD: &str = "Spread";
}

/// Condition types and, per type, their reasons.
pub mod conditions {
    /// ManagedCluster: the hub admin accepted (True) or denied (False) the cluster.
    pub const HUB_ACCEPTED: &str = "HubAcceptedManagedCluster";

    /// ManagedCluster: denial constant kept for compatibility; denial is expressed as
    /// `HubAcceptedManagedCluster=False`.
    pub const HUB_DENIED: &str = "HubDeniedManagedCluster";

    /// ManagedCluster: the agent joined the hub.
    pub const JOINED: &str = "ManagedClusterJoined";

    /// ManagedCluster: the cluster's API server is reachable and its lease is fresh.
    pub const AVAILABLE: &str = "ManagedClusterConditionAvailable";

    /// ManagedCluster: the clocks of hub and agent agree.
    pub const CLOCK_SYNCED: &str = "ManagedClusterConditionClockSynced";

    /// ManagedCluster: the cluster is being deleted and its namespace cleaned up.
    pub const DELETING: &str = "Deleting";

    /// ManagedCluster: result of the last client certificate rotation (set by the agent).
    pub const CERTIFICATE_ROTATED: &str = "ClusterCertificateRotated";

    /// ManagedCluster `status.managedNamespaces[]`: the namespace exists on the cluster.
    pub const NAMESPACE_AVAILABLE: &str = "NamespaceAvailable";

    /// ManagedClusterSet: True when the set selects no cluster.
    pub const CLUSTER_SET_EMPTY: &str = "ClusterSetEmpty";

    /// ManagedClusterSetBinding: the bound set exists.
    pub const BOUND: &str = "Bound";

    /// Placement: the placement selected all the clusters it asked for.
    pub const PLACEMENT_SATISFIED: &str = "PlacementSatisfied";

    /// Placement: the spec cannot be scheduled (bad CEL, unknown prioritizer, ...).
    pub const PLACEMENT_MISCONFIGURED: &str = "PlacementMisconfigured";

    /// Reasons of [`HUB_ACCEPTED`].
    pub mod hub_accepted {
        /// True: accepted.
        pub const ADMIN_ACCEPTED: &str = "HubClusterAdminAccepted";
        /// False: denied.
        pub const ADMIN_DENIED: &str = "HubClusterAdminDenied";
        /// False: accepting failed part way.
        pub const ERROR: &str = "Error";
    }

    /// Reasons of [`JOINED`].
    pub mod joined {
        /// True: joined.
        pub const JOINED: &str = "ManagedClusterJoined";
    }

    /// Reasons of [`AVAILABLE`].
    pub mod available {
        /// True: the API server answers its health check.
        pub const AVAILABLE: &str = "ManagedClusterAvailable";
        /// False: the API server health check keeps failing.
        pub const KUBE_APISERVER_UNAVAILABLE: &str = "ManagedClusterKubeAPIServerUnavailable";
        /// Unknown: the agent stopped renewing its lease.
        pub const LEASE_UPDATE_STOPPED: &str = "ManagedClusterLeaseUpdateStopped";
    }

    /// Reasons of [`CLOCK_SYNCED`].
    pub mod clock_synced {
        /// True: clocks agree.
        pub const SYNCED: &str = "ManagedClusterClockSynced";
        /// False: clocks differ by more than the lease grace period.
        pub const OUT_OF_SYNC: &str = "ManagedClusterClockOutOfSync";
    }

    /// Reasons of [`DELETING`].
    pub mod deleting {
        /// False: resources remain in the cluster namespace.
        pub const RESOURCE_REMAINING: &str = "ResourceRemaining";
        /// True: the cluster namespace holds no more resources to clean.
        pub const NO_RESOURCE: &str = "NoResource";
        /// Cleaning failed.
        pub const ERROR: &str = "DeletingError";
    }

    /// Reasons of [`CERTIFICATE_ROTATED`].
    pub mod certificate_rotated {
        /// True: a new client certificate was written.
        pub const UPDATED: &str = "ClientCertificateUpdated";
        /// False: rotation failed.
        pub const UPDATE_FAILED: &str = "ClientCertificateUpdateFailed";
        /// False: the certificate expired before it could be rotated and the agent registered
        /// again with its bootstrap kubeconfig (ocm-rs; upstream has no such reason).
        pub const EXPIRED: &str = "ClientCertificateExpired";
    }

    /// Reasons of [`NAMESPACE_AVAILABLE`].
    pub mod namespace_available {
        /// True: the namespace was applied.
        pub const APPLIED: &str = "NamespaceApplied";
        /// False: applying the namespace failed.
        pub const APPLY_FAILED: &str = "NamespaceApplyFailed";
    }

    /// Reasons of [`CLUSTER_SET_EMPTY`].
    pub mod cluster_set_empty {
        /// False: "N ManagedClusters selected".
        pub const CLUSTERS_SELECTED: &str = "ClustersSelected";
        /// True: no cluster matched.
        pub const NO_CLUSTER_MATCHED: &str = "NoClusterMatched";
    }

    /// Reasons of [`BOUND`].
    pub mod bound {
        /// True: the set exists.
        pub const CLUSTER_SET_BOUND: &str = "ClusterSetBound";
        /// False: the set does not exist.
        pub const CLUSTER_SET_NOT_FOUND: &str = "ClusterSetNotFound";
    }

    /// Reasons of [`PLACEMENT_SATISFIED`], in the order the
    /// scheduler checks them.
    pub mod placement_satisfied {
        /// False: no ManagedClusterSetBinding in the namespace.
        pub const NO_BINDINGS: &str = "NoManagedClusterSetBindings";
        /// False: none of `spec.clusterSets` is bound.
        pub const NO_INTERSECTION: &str = "NoIntersection";
        /// False: every eligible set is empty.
        pub const ALL_SETS_EMPTY: &str = "AllManagedClusterSetsEmpty";
        /// False: scheduling failed, or fewer clusters than `numberOfClusters` were selected.
        pub const NOT_ALL_DECISIONS_SCHEDULED: &str = "NotAllDecisionsScheduled";
        /// False: no candidate cluster passed the filters.
        pub const NO_CLUSTER_MATCHED: &str = "NoManagedClusterMatched";
        /// True: every wanted cluster was selected.
        pub const ALL_DECISIONS_SCHEDULED: &str = "AllDecisionsScheduled";
    }

    /// Reasons of [`PLACEMENT_MISCONFIGURED`].
    pub mod placement_misconfigured {
        /// True: message is `<plugin>:<error>`.
        pub const MISCONFIGURED: &str = "Misconfigured";
        /// False: the spec is fine (upstream spelling).
        pub const SUCCEED_CONFIGURED: &str = "Succeedconfigured";
    }
}

/// Feature gates of the hub's registration controllers (upstream's names).
pub mod hub_feature_gates {
    /// The `default` and `global` cluster sets are kept (on by default).
    pub const DEFAULT_CLUSTER_SET: &str = "DefaultClusterSet";
    /// ClusterProfiles of the Cluster Inventory API are kept (off by default).
    pub const CLUSTER_PROFILE: &str = "ClusterProfile";
    /// Every hub registration gate.
    pub const ALL: [&str; 2] = [DEFAULT_CLUSTER_SET, CLUSTER_PROFILE];
}
