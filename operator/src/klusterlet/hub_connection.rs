//! Whether a Klusterlet's agents can reach their hub: the bootstrap kubeconfig secret and the
//! hub kubeconfig secret are read on the managed cluster, and the hub is asked (with
//! SelfSubjectAccessReviews made with each credential) whether it lets them do their job.
//! The verdict is the `HubConnectionDegraded` condition, with upstream's reasons:
//! `<bootstrap>,<hub>` (for example `BootstrapSecretMissing,HubKubeConfigSecretMissing`)
//! while degraded, `HubConnectionFunctional` once the hub kubeconfig works.

use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use ocm_runtime::kubeconfig::{self, KubeconfigAuth};

use super::render::HubSecret;

/// Spoke Secret holding the bootstrap kubeconfig (key `kubeconfig`).
pub const BOOTSTRAP_SECRET: &str = "bootstrap-hub-kubeconfig";
/// Spoke Secret where the registration agent keeps its hub credentials.
pub const HUB_SECRET: &str = "hub-kubeconfig-secret";

/// How long one question to the hub may take.
const HUB_TIMEOUT: Duration = Duration::from_secs(10);

/// What was found about one credential.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// Its secret does not exist.
    SecretMissing,
    /// The secret exists but holds no usable kubeconfig or certificate.
    KubeconfigMissing(String),
    /// The kubeconfig does not make a client.
    Error(String),
    /// The hub refused (or could not be asked).
    Unauthorized(String),
    /// The hub lets it do what the agent needs.
    Functional,
}

/// `HubConnectionDegraded` from the two checks: `(status, reason, message)`.
pub fn degraded_condition(bootstrap: &Check, hub: &Check) -> (&'static str, String, String) {
    degraded_condition_with(bootstrap_verdict(bootstrap), hub)
}

/// The bootstrap half of `HubConnectionDegraded` for the bootstrap secret: `(reason,
/// message)`.
pub fn bootstrap_verdict(bootstrap: &Check) -> (&'static str, String) {
    match bootstrap {
        Check::SecretMissing => (
            "BootstrapSecretMissing",
            format!("the bootstrap secret {BOOTSTRAP_SECRET} does not exist"),
        ),
        Check::KubeconfigMissing(m) | Check::Error(m) => (
            "BootstrapSecretError",
            format!("the bootstrap secret {BOOTSTRAP_SECRET} is not usable: {m}"),
        ),
        Check::Unauthorized(m) => (
            "BootstrapSecretUnauthorized",
            format!("the hub does not let the bootstrap kubeconfig register: {m}"),
        ),
        Check::Functional => (
            "BootstrapSecretFunctional",
            "the bootstrap kubeconfig works".to_owned(),
        ),
    }
}

/// `HubConnectionDegraded` from the bootstrap half (`(reason, message)`, from
/// [`bootstrap_verdict`] or a list of bootstrap secrets) and the hub kubeconfig's check.
pub fn degraded_condition_with(
    (bootstrap_reason, bootstrap_message): (&'static str, String),
    hub: &Check,
) -> (&'static str, String, String) {
    if *hub == Check::Functional {
        return (
            "False",
            "HubConnectionFunctional".into(),
            "Hub kubeconfig secret works".into(),
        );
    }
    let (hub_reason, hub_message) = match hub {
        Check::SecretMissing => (
            "HubKubeConfigSecretMissing",
            format!("the hub kubeconfig secret {HUB_SECRET} does not exist yet"),
        ),
        Check::KubeconfigMissing(m) => (
            "HubKubeConfigMissing",
            format!("the hub kubeconfig secret {HUB_SECRET} holds no credentials yet: {m}"),
        ),
        Check::Error(m) => (
            "HubKubeConfigError",
            format!("the hub kubeconfig is not usable: {m}"),
        ),
        Check::Unauthorized(m) => (
            "HubKubeConfigUnauthorized",
            format!("the hub does not let the agent work with the hub kubeconfig: {m}"),
        ),
        // Returned above.
        Check::Functional => ("HubConnectionFunctional", String::new()),
    };
    (
        "True",
        format!("{bootstrap_reason},{hub_reason}"),
        format!("{bootstrap_message}; {hub_message}"),
    )
}

/// The bytes under `key` of a secret.
fn secret_text(secret: &Secret, key: &str) -> Option<String> {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .and_then(|b| String::from_utf8(b.0.clone()).ok())
        .filter(|t| !t.trim().is_empty())
}

/// An access question: `verb` on `resource` (of `group`) named `name` in `namespace`.
fn access(
    group: &str,
    resource: &str,
    subresource: &str,
    verb: &str,
    namespace: &str,
    name: &str,
) -> ResourceAttributes {
    let some = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    ResourceAttributes {
        group: Some(group.to_owned()),
        resource: Some(resource.to_owned()),
        subresource: some(subresource),
        verb: Some(verb.to_owned()),
        namespace: some(namespace),
        name: some(name),
        ..Default::default()
    }
}

/// Asks the hub, as `client`, each of `questions`; the first refusal (or failure) explains.
async fn allowed(client: kube::Client, questions: Vec<ResourceAttributes>) -> Check {
    let api: Api<SelfSubjectAccessReview> = Api::all(client);
    for question in questions {
        let what = format!(
            "{} {}{}",
            question.verb.as_deref().unwrap_or_default(),
            question.resource.as_deref().unwrap_or_default(),
            question
                .subresource
                .as_deref()
                .map(|s| format!("/{s}"))
                .unwrap_or_default()
        );
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(question),
                ..Default::default()
            },
            ..Default::default()
        };
        let params = PostParams::default();
        match tokio::time::timeout(HUB_TIMEOUT, api.create(&params, &review)).await {
            Ok(Ok(answer)) if answer.status.as_ref().is_some_and(|s| s.allowed) => {}
            Ok(Ok(_)) => return Check::Unauthorized(format!("not allowed to {what}")),
            Ok(Err(kube::Error::Api(status))) => {
                return Check::Unauthorized(format!("{} ({})", status.message, status.code));
            }
            Ok(Err(err)) => return Check::Unauthorized(format!("hub unreachable: {err}")),
            Err(_) => {
                return Check::Unauthorized(format!(
                    "hub did not answer within {}s",
                    HUB_TIMEOUT.as_secs()
                ));
            }
        }
    }
    Check::Functional
}

/// Reads the secret `name` in `namespace` (`None` when it does not exist).
async fn read(
    spoke: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<Option<Secret>, kube::Error> {
    Api::<Secret>::namespaced(spoke.clone(), namespace)
        .get_opt(name)
        .await
}

/// Judges the bootstrap kubeconfig: may it create CSRs and ManagedClusters on the hub?
pub async fn check_bootstrap(spoke: &kube::Client, namespace: &str) -> Result<Check, kube::Error> {
    let Some(secret) = read(spoke, namespace, BOOTSTRAP_SECRET).await? else {
        return Ok(Check::SecretMissing);
    };
    let Some(yaml) = secret_text(&secret, "kubeconfig") else {
        return Ok(Check::KubeconfigMissing("no kubeconfig key".into()));
    };
    Ok(check_bootstrap_kubeconfig(&yaml).await)
}

/// The kubeconfig in secret `namespace/name`, if both exist.
pub async fn read_kubeconfig(
    spoke: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<Option<String>, kube::Error> {
    Ok(read(spoke, namespace, name)
        .await?
        .and_then(|s| secret_text(&s, "kubeconfig")))
}

/// Judges a bootstrap kubeconfig: may it create CSRs and ManagedClusters on its hub?
pub async fn check_bootstrap_kubeconfig(yaml: &str) -> Check {
    let client = match kubeconfig::client_from_untrusted_yaml(yaml).await {
        Ok(client) => client,
        Err(err) => return Check::Error(err.to_string()),
    };
    let cluster = "open-cluster-management.io";
    allowed(
        client,
        vec![
            access(
                "certificates.k8s.io",
                "certificatesigningrequests",
                "",
                "create",
                "",
                "",
            ),
            access(
                &format!("cluster.{cluster}"),
                "managedclusters",
                "",
                "create",
                "",
                "",
            ),
            access(
                &format!("cluster.{cluster}"),
                "managedclusters",
                "",
                "get",
                "",
                "",
            ),
        ],
    )
    .await
}

/// Judges the hub kubeconfig secret (may the agent read and report its ManagedCluster and
/// list its works?), and says what rendering needs from it. `cluster` is the Klusterlet's
/// `clusterName` (empty: the one in the secret).
pub async fn check_hub(
    spoke: &kube::Client,
    namespace: &str,
    cluster: &str,
) -> Result<(Check, HubSecret), kube::Error> {
    let Some(secret) = read(spoke, namespace, HUB_SECRET).await? else {
        return Ok((Check::SecretMissing, HubSecret::default()));
    };
    let stored_name = secret_text(&secret, "cluster-name").map(|n| n.trim().to_owned());
    let parts = (
        secret_text(&secret, "kubeconfig"),
        secret_text(&secret, "tls.crt"),
        secret_text(&secret, "tls.key"),
    );
    let (Some(yaml), Some(cert_pem), Some(key_pem)) = parts else {
        let info = HubSecret {
            cluster_name: stored_name,
            has_credentials: false,
        };
        return Ok((
            Check::KubeconfigMissing("no kubeconfig, tls.crt or tls.key".into()),
            info,
        ));
    };
    let info = HubSecret {
        cluster_name: stored_name.clone(),
        has_credentials: true,
    };
    let name = match cluster {
        "" => stored_name.unwrap_or_default(),
        name => name.to_owned(),
    };
    // Only the server and its CA are taken from this kubeconfig (the credentials are the
    // secret's tls.crt/tls.key, which its user entry names as files): the CA must be inline.
    let parsed = kubeconfig::parse(&yaml).and_then(|c| {
        let ca_file = c.clusters.iter().any(|n| {
            n.cluster
                .as_ref()
                .is_some_and(|cluster| cluster.certificate_authority.is_some())
        });
        if ca_file {
            Err(kubeconfig::KubeconfigError::Parse(
                "its cluster names a certificate-authority file; only inline CA data is accepted here"
                    .into(),
            ))
        } else {
            Ok(c)
        }
    });
    let server = match parsed.and_then(|c| kubeconfig::current_server(&c)) {
        Ok(server) => server,
        Err(err) => return Ok((Check::Error(err.to_string()), info)),
    };
    let auth = KubeconfigAuth::ClientCertData { cert_pem, key_pem };
    let client = match kubeconfig::client_for(&server, &auth).await {
        Ok(client) => client,
        Err(err) => return Ok((Check::Error(err.to_string()), info)),
    };
    let cluster_group = "cluster.open-cluster-management.io";
    let check = allowed(
        client,
        vec![
            access(cluster_group, "managedclusters", "", "get", "", &name),
            access(
                cluster_group,
                "managedclusters",
                "status",
                "update",
                "",
                &name,
            ),
            access(
                "work.open-cluster-management.io",
                "manifestworks",
                "",
                "list",
                &name,
                "",
            ),
        ],
    )
    .await;
    Ok((check, info))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_name_both_credentials_until_the_hub_kubeconfig_works() {
        let (status, reason, _) = degraded_condition(&Check::SecretMissing, &Check::SecretMissing);
        assert_eq!(
            (status, reason.as_str()),
            ("True", "BootstrapSecretMissing,HubKubeConfigSecretMissing")
        );
        let (_, reason, message) = degraded_condition(
            &Check::Functional,
            &Check::KubeconfigMissing("no tls.crt".into()),
        );
        assert_eq!(reason, "BootstrapSecretFunctional,HubKubeConfigMissing");
        assert!(message.contains("no tls.crt"));
        let (_, reason, message) = degraded_condition(
            &Check::Unauthorized("hub unreachable: connection refused".into()),
            &Check::SecretMissing,
        );
        assert_eq!(
            reason,
            "BootstrapSecretUnauthorized,HubKubeConfigSecretMissing"
        );
        assert!(message.contains("connection refused"));
        let (_, reason, _) = degraded_condition(
            &Check::Error("bad yaml".into()),
            &Check::Unauthorized("403".into()),
        );
        assert_eq!(reason, "BootstrapSecretError,HubKubeConfigUnauthorized");
        let (status, reason, _) = degraded_condition(&Check::SecretMissing, &Check::Functional);
        assert_eq!(
            (status, reason.as_str()),
            ("False", "HubConnectionFunctional")
        );
    }
}
