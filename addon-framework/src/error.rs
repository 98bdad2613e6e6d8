//! Why one pass of an addon controller failed (it is retried).

/// Why one reconcile failed (it is retried).
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// The hub refused or did not answer.
    #[error("hub API: {0}")]
    Api(#[from] kube::Error),
    /// An object did not (de)serialize.
    #[error("encoding: {0}")]
    Encoding(#[from] serde_json::Error),
    /// The addon could not sign a custom-signer CSR (yet).
    #[error("signing: {0}")]
    Sign(crate::agent::AddonError),
}
