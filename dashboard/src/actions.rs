//! What the dashboard changes on the hub, with the user's own credentials: accepting a cluster
//! (exactly `ocm accept`: [`ocm_registration::accept::accept_cluster`]) or denying its join
//! request ([`ocm_registration::accept::deny_cluster`]); and asking the hub, with
//! SelfSubjectAccessReviews, whether to offer those buttons at all.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use ocm_registration::accept::{AcceptError, accept_cluster, deny_cluster};

use crate::pages::join::Permissions;

/// What a join-request button asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Accept the cluster.
    Accept,
    /// Deny its pending requests.
    Deny,
}

impl Action {
    /// The action named in a path (`accept`, `deny`).
    pub fn parse(name: &str) -> Option<Action> {
        match name {
            "accept" => Some(Action::Accept),
            "deny" => Some(Action::Deny),
            _ => None,
        }
    }
}

/// Runs `action` on `cluster`; the outcome in words, `Err` when it failed.
pub async fn run(client: &kube::Client, cluster: &str, action: Action) -> Result<String, String> {
    match action {
        Action::Accept => match accept_cluster(client, cluster, false).await {
            Ok(accepted) if accepted.accepted_now => Ok(format!(
                "Cluster {cluster} accepted ({} certificate request{} approved).",
                accepted.approved_csrs.len(),
                if accepted.approved_csrs.len() == 1 {
                    ""
                } else {
                    "s"
                }
            )),
            Ok(_) => Ok(format!("Cluster {cluster} was already accepted.")),
            Err(err) => Err(describe(&err)),
        },
        Action::Deny => match deny_cluster(client, cluster).await {
            Ok(denied) => Ok(format!(
                "Denied the join request of {cluster} ({}).",
                denied.join(", ")
            )),
            Err(err) => Err(describe(&err)),
        },
    }
}

/// An error in words, the hub's refusal spelled out (`403 Forbidden: …`).
pub fn describe(err: &AcceptError) -> String {
    match err {
        AcceptError::Api {
            what,
            source: kube::Error::Api(status),
        } => format!(
            "{what}: the hub refused with {} {}: {}",
            status.code, status.reason, status.message
        ),
        AcceptError::Api { what, source } => format!("{what}: {source}"),
        other => other.to_string(),
    }
}

/// How long a permissions answer is reused.
const PERMISSIONS_TTL: Duration = Duration::from_secs(10);

/// The user's permissions on join requests, asked at most every [`PERMISSIONS_TTL`].
#[derive(Debug, Default)]
pub struct PermissionCache {
    last: Mutex<Option<(Instant, Permissions)>>,
}

impl PermissionCache {
    /// The permissions of the client's user.
    pub async fn get(&self, client: &kube::Client) -> Permissions {
        let cached = {
            let last = self.last.lock().unwrap_or_else(|e| e.into_inner());
            last.as_ref()
                .filter(|(at, _)| at.elapsed() < PERMISSIONS_TTL)
                .map(|(_, permissions)| permissions.clone())
        };
        if let Some(permissions) = cached {
            return permissions;
        }
        let permissions = ask(client).await;
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((Instant::now(), permissions.clone()));
        permissions
    }
}

/// Asks the hub what the user may do: accepting needs to patch ManagedClusters (what
/// [`accept_cluster`] does to set `hubAcceptsClient`), the
/// `managedclusters/accept` subresource of `register.open-cluster-management.io` (the hub's
/// admission check), the CSR approval subresource and to approve for the
/// `kubernetes.io/kube-apiserver-client` signer; denying needs the last two.
async fn ask(client: &kube::Client) -> Permissions {
    // (group, resource, subresource, verb, name)
    let questions = [
        (ocm_api::cluster::GROUP, "managedclusters", "", "patch", ""),
        (
            ocm_api::cluster::names::REGISTER_GROUP,
            "managedclusters",
            "accept",
            "update",
            "",
        ),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            "approval",
            "update",
            "",
        ),
        (
            "certificates.k8s.io",
            "signers",
            "",
            "approve",
            "kubernetes.io/kube-apiserver-client",
        ),
    ];
    let some = |text: &str| (!text.is_empty()).then(|| text.to_owned());
    let answers = futures::future::join_all(questions.iter().map(
        |(group, resource, subresource, verb, name)| {
            allowed(
                client,
                ResourceAttributes {
                    group: Some((*group).to_owned()),
                    resource: Some((*resource).to_owned()),
                    subresource: some(subresource),
                    verb: Some((*verb).to_owned()),
                    name: some(name),
                    ..Default::default()
                },
            )
        },
    ))
    .await;
    let [clusters, accept, approval, signer] = answers[..] else {
        return Permissions::default();
    };
    Permissions {
        accept: clusters && accept && approval && signer,
        deny: approval && signer,
    }
}

/// Whether the hub allows the client's user `attributes` (false when it cannot be asked).
async fn allowed(client: &kube::Client, attributes: ResourceAttributes) -> bool {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(attributes),
            ..Default::default()
        },
        ..Default::default()
    };
    match Api::<SelfSubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
    {
        Ok(answer) => answer.status.is_some_and(|s| s.allowed),
        Err(err) => {
            tracing::debug!(%err, "SelfSubjectAccessReview failed");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_code_and_reason() {
        let err = AcceptError::Api {
            what: "approving CSR c1-x".into(),
            source: kube::Error::Api(
                kube::core::Status::failure("user \"viewer\" cannot update", "Forbidden")
                    .with_code(403)
                    .boxed(),
            ),
        };
        assert_eq!(
            describe(&err),
            "approving CSR c1-x: the hub refused with 403 Forbidden: user \"viewer\" cannot update"
        );
        assert!(err.is_forbidden());
        assert_eq!(Action::parse("accept"), Some(Action::Accept));
        assert_eq!(Action::parse("delete"), None);
    }
}
