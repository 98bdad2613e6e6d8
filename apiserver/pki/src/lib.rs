//! Certificates: certificate authorities (generated ECDSA P-256 or loaded, kept in the data
//! directory with private keys 0600), serving and client certificates, CSR parsing and signing
//! as the `kubernetes.io/kube-apiserver-client` signer. No HTTP, no storage: callers pass
//! PEM/DER and the current time. (Authenticating a request by its client certificate is the
//! API server's, in its `pki` module.)

mod ca;
pub mod cert;
mod csr;
mod der;

use std::path::PathBuf;

pub use ca::{CA_VALIDITY, CertAndKey, CertificateAuthority, write_file};
pub use cert::{CertSpec, ExtKeyUsage, San, Subject, key_usage};
pub use csr::{
    BACKDATE, CsrError, DEFAULT_MAX_DURATION, KUBE_APISERVER_CLIENT_SIGNER, MIN_DURATION,
    ParsedCsr, SHORT, SignError, key_usages, name_parts, parse_csr, sign_kube_apiserver_client,
    sign_parsed, signing_duration, validate_client_usages,
};

/// Failures creating, loading or using certificate material.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// One of a certificate/key pair exists without the other.
    #[error("{0} is missing (its certificate or key exists)")]
    Incomplete(PathBuf),
    /// Certificate or key material does not parse.
    #[error("{0}")]
    Parse(String),
    /// The private key does not belong to the certificate.
    #[error("the private key does not match the certificate")]
    KeyMismatch,
    /// The key type cannot sign certificates here.
    #[error("unsupported key algorithm: {0}")]
    UnsupportedKey(String),
    /// A cryptographic operation failed.
    #[error("crypto: {0}")]
    Crypto(String),
}
