//! `multicluster.x-k8s.io`: SIG-Multicluster's Cluster Inventory API (KEP-4322). A
//! ClusterProfile describes one cluster of the fleet to multicluster tools (Argo CD's
//! ClusterProfile integration, MultiKueue); the hub keeps one per ManagedCluster in every
//! namespace a cluster set containing it is bound to (hub feature gate `ClusterProfile`), and
//! the cluster-proxy publishes how to reach the cluster in its `accessProviders`.

pub mod v1alpha1;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// API group name.
pub const GROUP: &str = "multicluster.x-k8s.io";

/// The enhancement that approved the Cluster Inventory API.
pub const API_APPROVED_BY: &str = "https://github.com/kubernetes/enhancements/pull/4322";

/// Label naming the fleet manager that made a ClusterProfile; its value is the manager's name.
pub const LABEL_CLUSTER_MANAGER: &str = "x-k8s.io/cluster-manager";

/// Label naming the cluster set of the profile's cluster.
pub const LABEL_CLUSTER_SET: &str = "multicluster.x-k8s.io/clusterset";

/// Label naming the ManagedCluster a profile describes (upstream OCM's).
pub const LABEL_CLUSTER_NAME: &str = "open-cluster-management.io/cluster-name";

/// Name of the fleet manager OCM writes into `spec.clusterManager.name` and the
/// [`LABEL_CLUSTER_MANAGER`] label; profiles naming another manager are never touched.
pub const CLUSTER_MANAGER_NAME: &str = "open-cluster-management";

/// Condition a profile copies from the cluster's `ManagedClusterConditionAvailable`.
pub const CONDITION_CONTROL_PLANE_HEALTHY: &str = "ControlPlaneHealthy";

/// Condition a profile copies from the cluster's `ManagedClusterJoined`.
pub const CONDITION_JOINED: &str = "Joined";

/// Name of the access provider the cluster-proxy publishes on every OCM ClusterProfile.
pub const ACCESS_PROVIDER_NAME: &str = "open-cluster-management";

/// Kubeconfig cluster extension whose object client-go hands an exec credential plugin as
/// `ExecCredential.spec.cluster.config`.
pub const EXEC_EXTENSION: &str = "client.authentication.k8s.io/exec";

/// The Cluster Inventory API CRDs, installed on a hub whose registration has the
/// `ClusterProfile` feature gate (and always on the embedded hub).
pub fn hub_crds() -> Vec<CustomResourceDefinition> {
    vec![crate::approval::api_approved(
        v1alpha1::ClusterProfile::crd(),
        API_APPROVED_BY,
    )]
}
