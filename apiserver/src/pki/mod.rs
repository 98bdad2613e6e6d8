//! Certificates: the `ocm-apiserver-pki` crate (certificate authorities, serving and client
//! certificates, CSR parsing and signing), re-exported here, and x509 client-certificate
//! authentication ([`authenticate_client_chain`] and friends), which gives an
//! [`Identity`](crate::auth::Identity).

mod identity;

pub use identity::{
    ANONYMOUS, AUTHENTICATED, CertAuthError, ClientCaBundle, UNAUTHENTICATED, ValidFor,
    authenticate_client_chain, authenticate_client_chain_for, verify_client_chain,
    with_authenticated_group,
};
pub(crate) use ocm_apiserver_pki::*;
