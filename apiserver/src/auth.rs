//! Who is making a request. Network requests are authenticated by [`crate::authn`]; an
//! in-process request may carry an [`Identity`] in its extensions (see
//! [`crate::ApiServer::service_as`]), and one without it (and without a bearer token) runs as
//! the admin user. The type is the RBAC crate's, whose policies authorize it.

pub use ocm_apiserver_rbac::Identity;
