//! The operator: ClusterManager and Klusterlet reconcilers that install ocm-rs on real
//! clusters. So far: the ClusterManager in Default mode ([`cluster_manager`]), the Klusterlet
//! in Default and Singleton modes ([`klusterlet`]), what their Deployments share ([`pod`]),
//! how they write what they render ([`apply`]), and the operators' own install manifests
//! ([`manifests`]).

pub mod apply;
pub mod cluster_manager;
pub mod klusterlet;
pub mod manifests;
pub mod pod;

/// Why one reconcile failed (it is retried).
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// The cluster refused or did not answer.
    #[error("cluster API: {0}")]
    Api(#[from] kube::Error),
    /// An object did not (de)serialize.
    #[error("encoding: {0}")]
    Encoding(#[from] serde_json::Error),
    /// A certificate could not be made or read.
    #[error("certificate: {0}")]
    Certificate(#[from] ocm_webhook::certs::CertError),
}

/// How an operator runs.
#[derive(Debug, Clone)]
pub struct OperatorOptions {
    /// The `ocm` image the components run (unless the ClusterManager or Klusterlet names its
    /// own).
    pub image: String,
}
