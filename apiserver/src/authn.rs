//! Request authentication, as kube-apiserver's authentication filter does it: a verified
//! client certificate, else a bearer token (bootstrap token or service-account JWT), else
//! anonymous (`system:anonymous` / `system:unauthenticated`) when allowed. Presented but bad
//! credentials are 401 `Unauthorized`, never anonymous and never 500.

use std::sync::{Arc, Mutex};

use http::HeaderMap;
use jiff::Timestamp;
use serde_json::Value;

use crate::auth::Identity;
use crate::pki::{
    ANONYMOUS, CertAuthError, ClientCaBundle, UNAUTHENTICATED, ValidFor,
    authenticate_client_chain_for,
};
use crate::tokens::{
    BOOTSTRAP_TOKEN_NAMESPACE, BearerKind, ServiceAccountTokenConfig, SigningKey,
    authenticate_bootstrap_token, bootstrap_token_secret_name, check_token_objects,
    classify_bearer, verify_service_account_token,
};
use ocm_apiserver_status::ApiError;
use ocm_apiserver_storage::{Bucket, ObjectKey, Store};

/// Marks a request that arrived over the network (TLS listener): it must be authenticated.
/// Holds the client-certificate chain the peer presented (leaf first, DER; may be empty),
/// shared by every request of the connection, with the identity it was last verified as.
#[derive(Clone, Debug, Default)]
pub struct PeerCertificates(Arc<PeerChain>);

#[derive(Debug, Default)]
struct PeerChain {
    chain: Vec<Vec<u8>>,
    /// The chain's identity and the span it holds for. A connection keeps its chain, and the
    /// client CA bundle does not change while the server runs, so re-verifying it (signature
    /// checks on every request of an HTTP/2 connection) would give the same answer inside
    /// that span; outside it the chain is verified again.
    verified: Mutex<Option<(Option<Identity>, ValidFor)>>,
}

impl PeerCertificates {
    /// The chain a peer presented (leaf first, DER; empty when it presented none).
    pub fn new(chain: Vec<Vec<u8>>) -> Self {
        PeerCertificates(Arc::new(PeerChain {
            chain,
            verified: Mutex::default(),
        }))
    }

    /// The identity of the chain at `now`: `Ok(None)` when it names no user (no CN).
    fn identity(
        &self,
        roots: &ClientCaBundle,
        now: Timestamp,
    ) -> Result<Option<Identity>, CertAuthError> {
        if let Ok(cached) = self.0.verified.lock()
            && let Some((identity, valid)) = cached.as_ref()
            && valid.contains(now)
        {
            return Ok(identity.clone());
        }
        let refs: Vec<&[u8]> = self.0.chain.iter().map(Vec::as_slice).collect();
        let (identity, valid) = authenticate_client_chain_for(&refs, roots, now)?;
        if let Ok(mut cached) = self.0.verified.lock() {
            *cached = Some((identity.clone(), valid));
        }
        Ok(identity)
    }
}

/// The 401 every authentication failure answers.
pub fn unauthorized() -> ApiError {
    ApiError::new(401, "Unauthorized", "Unauthorized")
}

/// The anonymous identity.
pub fn anonymous() -> Identity {
    Identity {
        user: ANONYMOUS.to_owned(),
        groups: vec![UNAUTHENTICATED.to_owned()],
        ..Default::default()
    }
}

/// The bearer token of an `Authorization` header: `Some(Err)` when the header is present but
/// not a usable bearer token.
fn bearer(headers: &HeaderMap) -> Option<Result<String, ()>> {
    let value = headers.get(http::header::AUTHORIZATION)?;
    let Ok(text) = value.to_str() else {
        return Some(Err(()));
    };
    let mut parts = text.trim().splitn(2, ' ');
    let scheme = parts.next().unwrap_or("");
    let token = parts.next().unwrap_or("").trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        // kube ignores other schemes (basic auth is gone): the request falls through.
        return None;
    }
    Some(Ok(token.to_owned()))
}

/// What authentication reads: the stored objects tokens are checked against (bootstrap-token
/// Secrets, service accounts and the objects bound tokens name), the key and settings of
/// service-account tokens, the client CA bundle, and whether anonymous requests run.
pub(crate) struct Credentials<'a> {
    /// The objects tokens are checked against.
    pub(crate) store: &'a Store,
    /// The key service-account tokens are signed with.
    pub(crate) sa_key: &'a SigningKey,
    /// Issuer and audiences of service-account tokens.
    pub(crate) sa_config: &'a ServiceAccountTokenConfig,
    /// The CAs client certificates must chain to.
    pub(crate) client_ca: &'a ClientCaBundle,
    /// Whether a network request without credentials runs as `system:anonymous`.
    pub(crate) anonymous_auth: bool,
}

fn stored_json(
    creds: &Credentials<'_>,
    cluster: &str,
    resource: &str,
    ns: &str,
    name: &str,
) -> Option<Value> {
    let key = ObjectKey::new(Bucket::new(cluster, resource), ns, name);
    let object = creds.store.get(&key)?;
    serde_json::from_slice(&object.value).ok()
}

pub(crate) fn authenticate_token(
    creds: &Credentials<'_>,
    cluster: &str,
    token: &str,
) -> Result<Identity, ApiError> {
    let now = Timestamp::now();
    match classify_bearer(token) {
        BearerKind::Bootstrap(parsed) => {
            let secret = stored_json(
                creds,
                cluster,
                "/secrets",
                BOOTSTRAP_TOKEN_NAMESPACE,
                &bootstrap_token_secret_name(&parsed.id),
            );
            authenticate_bootstrap_token(token, secret.as_ref(), now).map_err(|err| {
                tracing::debug!(%err, "bootstrap token rejected");
                unauthorized()
            })
        }
        BearerKind::Jwt => {
            let keys = [creds.sa_key.verifying_key()];
            let claims = verify_service_account_token(creds.sa_config, &keys, token, now).map_err(
                |err| {
                    tracing::debug!(%err, "service-account token rejected");
                    unauthorized()
                },
            )?;
            let sa = stored_json(
                creds,
                cluster,
                "/serviceaccounts",
                &claims.namespace,
                &claims.name,
            );
            let bound = claims.bound.as_ref().and_then(|(kind, name, _)| {
                let resource = match kind.as_str() {
                    "Pod" => "/pods",
                    "Secret" => "/secrets",
                    _ => "/nodes",
                };
                let ns = if kind == "Node" {
                    ""
                } else {
                    &claims.namespace
                };
                stored_json(creds, cluster, resource, ns, name)
            });
            check_token_objects(&claims, sa.as_ref(), bound.as_ref(), now).map_err(|err| {
                tracing::debug!(%err, "service-account token revoked");
                unauthorized()
            })
        }
        BearerKind::Unknown => Err(unauthorized()),
    }
}

/// Authenticates a network request: `peer` holds the presented client-certificate chain.
pub(crate) fn authenticate(
    creds: &Credentials<'_>,
    cluster: &str,
    headers: &HeaderMap,
    peer: &PeerCertificates,
) -> Result<Identity, ApiError> {
    if !peer.0.chain.is_empty() {
        match peer.identity(creds.client_ca, Timestamp::now()) {
            Ok(Some(identity)) => return Ok(identity),
            Ok(None) => {}
            Err(err) => {
                tracing::debug!(%err, "client certificate rejected");
                return Err(unauthorized());
            }
        }
    }
    match bearer(headers) {
        Some(Ok(token)) => authenticate_token(creds, cluster, &token),
        Some(Err(())) => Err(unauthorized()),
        None if creds.anonymous_auth => Ok(anonymous()),
        None => Err(unauthorized()),
    }
}

/// The identity of an in-process request without an [`Identity`] extension: its bearer token
/// if it carries one, else the admin (in-process clients are trusted).
pub(crate) fn authenticate_in_process(
    creds: &Credentials<'_>,
    cluster: &str,
    headers: &HeaderMap,
) -> Result<Identity, ApiError> {
    match bearer(headers) {
        Some(Ok(token)) => authenticate_token(creds, cluster, &token),
        Some(Err(())) => Err(unauthorized()),
        None => Ok(Identity::admin()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::CertificateAuthority;
    use jiff::SignedDuration;

    #[test]
    fn a_connections_chain_is_verified_once_while_it_stays_valid() {
        let t = Timestamp::now();
        let ca = CertificateAuthority::generate("ca", t, SignedDuration::from_hours(24)).unwrap();
        let cert = ca
            .issue_client("agent", &["group"], t, SignedDuration::from_hours(1))
            .unwrap();
        let der = crate::pki::cert::pem_blocks(cert.cert_pem.as_bytes(), "CERTIFICATE").remove(0);
        let bundle = ClientCaBundle::from_pem(ca.cert_pem());
        let peer = PeerCertificates::new(vec![der]);
        let same_connection = peer.clone();
        let id = peer.identity(&bundle, t).unwrap().unwrap();
        assert_eq!(id.user, "agent");
        // Inside the span the cached answer is used: even roots that would refuse the chain
        // are not consulted again.
        let later = t.checked_add(SignedDuration::from_mins(30)).unwrap();
        let cached = same_connection
            .identity(&ClientCaBundle::default(), later)
            .unwrap();
        assert_eq!(cached, Some(id));
        // Past the leaf's expiry the chain is verified again, and refused.
        let expired = t.checked_add(SignedDuration::from_hours(2)).unwrap();
        assert!(matches!(
            peer.identity(&bundle, expired),
            Err(CertAuthError::Expired { .. })
        ));
        // A connection without a verified answer verifies: a foreign root refuses it.
        let fresh = PeerCertificates::new(peer.0.chain.clone());
        assert_eq!(
            fresh.identity(&ClientCaBundle::default(), t),
            Err(CertAuthError::UnknownAuthority)
        );
    }

    #[test]
    fn bearer_header_forms() {
        let mut h = HeaderMap::new();
        assert!(bearer(&h).is_none());
        h.insert(http::header::AUTHORIZATION, "Bearer abc".parse().unwrap());
        assert_eq!(bearer(&h), Some(Ok("abc".to_owned())));
        h.insert(http::header::AUTHORIZATION, "bearer  x.y ".parse().unwrap());
        assert_eq!(bearer(&h), Some(Ok("x.y".to_owned())));
        h.insert(http::header::AUTHORIZATION, "Basic Zm9v".parse().unwrap());
        assert!(bearer(&h).is_none());
        h.insert(http::header::AUTHORIZATION, "Bearer ".parse().unwrap());
        assert!(bearer(&h).is_none());
    }
}
