//! What can go wrong in the proxy server and its agent.

/// Why a cluster-proxy part could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// A call to the hub or a managed cluster failed.
    #[error("API: {0}")]
    Api(#[from] kube::Error),
    /// Certificates could not be made or read.
    #[error("certificates: {0}")]
    Pki(String),
    /// TLS could not be set up.
    #[error("TLS: {0}")]
    Tls(#[from] rustls::Error),
    /// A socket or file failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// The tunnel could not be opened or broke.
    #[error("tunnel: {0}")]
    Tunnel(String),
    /// Something the proxy needs on the hub is missing or malformed.
    #[error("{0}")]
    Config(String),
}

impl From<rcgen::Error> for ProxyError {
    fn from(err: rcgen::Error) -> ProxyError {
        ProxyError::Pki(err.to_string())
    }
}

/// An I/O error with what was being done.
pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ProxyError {
    let what = what.into();
    move |source| ProxyError::Io { what, source }
}
