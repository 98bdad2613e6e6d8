//! Who a user of the proxy is and whether they may reach a cluster, decided by the hub: a
//! client certificate from the hub's client CA (verified during the TLS handshake) or a bearer
//! token the hub confirms (TokenReview), then a SubjectAccessReview for
//! `managedclusters/proxy` of that cluster. Both answers are cached briefly so a burst of
//! requests costs the hub one review.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};

use crate::identity::HubUser;

/// How long an answer of the hub is reused.
const CACHE_TTL: Duration = Duration::from_secs(10);
/// Entries kept before the cache is cleared.
const CACHE_MAX: usize = 10_000;

/// The API group of ManagedCluster.
pub const CLUSTER_GROUP: &str = "cluster.open-cluster-management.io";

/// Why a request was refused before it reached a cluster.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// No or bad credentials (401).
    #[error("{0}")]
    Unauthorized(String),
    /// Authenticated, but not allowed (403).
    #[error("{0}")]
    Forbidden(String),
    /// The hub could not be asked (503).
    #[error("{0}")]
    HubUnavailable(String),
}

struct Cache<K, V> {
    entries: Mutex<HashMap<K, (Instant, V)>>,
}

impl<K: std::hash::Hash + Eq, V: Clone> Cache<K, V> {
    fn new() -> Self {
        Cache {
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, key: &K) -> Option<V> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .get(key)
            .filter(|(at, _)| at.elapsed() < CACHE_TTL)
            .map(|(_, v)| v.clone())
    }

    fn put(&self, key: K, value: V) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= CACHE_MAX {
            entries.clear();
        }
        entries.insert(key, (Instant::now(), value));
    }
}

/// Asks the hub who users are and what they may do.
pub struct HubAuth {
    hub: kube::Client,
    tokens: Cache<String, HubUser>,
    decisions: Cache<(HubUser, String, String), ()>,
}

impl std::fmt::Debug for HubAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubAuth").finish_non_exhaustive()
    }
}

/// The user named by a client certificate (DER): CN is the name, O the groups — as
/// kube-apiserver reads client certificates.
pub fn certificate_user(der: &[u8]) -> Option<HubUser> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())?
        .to_owned();
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_owned))
        .collect();
    Some(HubUser { name, groups })
}

fn hub_error(err: kube::Error) -> AuthError {
    AuthError::HubUnavailable(format!("the hub could not be asked: {err}"))
}

impl HubAuth {
    /// Asks `hub` (which must be allowed to create TokenReviews and SubjectAccessReviews).
    pub fn new(hub: kube::Client) -> HubAuth {
        HubAuth {
            hub,
            tokens: Cache::new(),
            decisions: Cache::new(),
        }
    }

    /// The user behind a bearer token.
    pub async fn token_user(&self, token: &str) -> Result<HubUser, AuthError> {
        if let Some(user) = self.tokens.get(&token.to_owned()) {
            return Ok(user);
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_owned()),
                audiences: None,
            },
            ..Default::default()
        };
        let answer = Api::<TokenReview>::all(self.hub.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(hub_error)?;
        let status = answer.status.unwrap_or_default();
        let user = status
            .user
            .filter(|_| status.authenticated == Some(true))
            .and_then(|u| {
                Some(HubUser {
                    name: u.username?,
                    groups: u.groups.unwrap_or_default(),
                })
            })
            .ok_or_else(|| {
                AuthError::Unauthorized(
                    status
                        .error
                        .unwrap_or_else(|| "the hub does not know this token".into()),
                )
            })?;
        self.tokens.put(token.to_owned(), user.clone());
        Ok(user)
    }

    /// Whether `user` may `verb` `managedclusters/proxy` of `cluster` (or, with `cluster`
    /// `None`, `list` ManagedClusters: what seeing every tunnel needs).
    pub async fn authorize(
        &self,
        user: &HubUser,
        verb: &str,
        cluster: Option<&str>,
    ) -> Result<(), AuthError> {
        let key = (
            user.clone(),
            verb.to_owned(),
            cluster.unwrap_or_default().to_owned(),
        );
        if self.decisions.get(&key).is_some() {
            return Ok(());
        }
        let attributes = ResourceAttributes {
            group: Some(CLUSTER_GROUP.into()),
            resource: Some("managedclusters".into()),
            subresource: cluster.map(|_| "proxy".to_owned()),
            name: cluster.map(str::to_owned),
            verb: Some(verb.into()),
            ..Default::default()
        };
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.name.clone()),
                groups: Some(user.groups.clone()),
                resource_attributes: Some(attributes),
                ..Default::default()
            },
            ..Default::default()
        };
        let answer = Api::<SubjectAccessReview>::all(self.hub.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(hub_error)?;
        if answer.status.as_ref().is_some_and(|s| s.allowed) {
            self.decisions.put(key, ());
            return Ok(());
        }
        let what = match cluster {
            Some(c) => format!(
                "managedclusters.{CLUSTER_GROUP} \"{c}\" is forbidden: User \"{}\" cannot {verb} \
                 resource \"managedclusters/proxy\" in API group \"{CLUSTER_GROUP}\" at the \
                 cluster scope",
                user.name
            ),
            None => format!(
                "managedclusters.{CLUSTER_GROUP} is forbidden: User \"{}\" cannot {verb} \
                 resource \"managedclusters\" in API group \"{CLUSTER_GROUP}\" at the cluster \
                 scope",
                user.name
            ),
        };
        Err(AuthError::Forbidden(what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificates_name_the_user_and_groups() {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::default();
        let mut dn = rcgen::DistinguishedName::new();
        dn.push(rcgen::DnType::CommonName, "alice");
        dn.push(rcgen::DnType::OrganizationName, "devs");
        params.distinguished_name = dn;
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(
            certificate_user(cert.der()),
            Some(HubUser {
                name: "alice".into(),
                groups: vec!["devs".into()]
            })
        );
        assert_eq!(certificate_user(b"not a certificate"), None);
    }
}
