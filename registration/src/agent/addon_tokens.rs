//! Token-based addon registration on the agent (the Klusterlet's
//! `registrationConfiguration.addOnKubeClientRegistrationDriver: {authType: token}`, upstream's
//! token driver).
//!
//! The agent says which driver its `kubeClient` registrations use: it writes the `driver`
//! (`csr` or `token`) into every `kubeClient` entry of each ManagedClusterAddOn's
//! `status.registrations`, and with `token` the subject its agent will have, the
//! ServiceAccount `system:serviceaccount:<cluster>:<addon>-agent` ([`driver_changes`]). The
//! hub's addon manager then makes that ServiceAccount in the cluster namespace, lets the
//! cluster's agent request its tokens and says so in `TokenInfrastructureReady` (with the
//! ServiceAccount's UID). The agent then keeps a ServiceAccount token of `<addon>-agent` in
//! the addon's `<addon>-hub-kubeconfig` Secret (keys `token` and `kubeconfig`, the kubeconfig
//! reading `tokenFile: token`), requested through the TokenRequest API with the configured
//! lifetime and requested again when 20 % of its life is left, when it belongs to another
//! ServiceAccount UID, or when it is missing or unreadable ([`token_valid`]). The outcome is
//! the ManagedClusterAddOn condition `TokenRefreshed` (`AddonTokenRefreshed` with the expiry,
//! or `TokenCreationFailed`).

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use jiff::Timestamp;
use k8s_openapi::ByteString;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::api::{Api, PostParams};
use ocm_api::addon::names::conditions::{TOKEN_INFRASTRUCTURE_READY, TOKEN_REFRESHED};
use ocm_api::addon::v1beta1::{
    KubeClientConfig, KubeClientDriver, KubeClientSubject, ManagedClusterAddOn, RegistrationConfig,
    RegistrationType,
};
use ocm_runtime::conditions::find_condition;
use ocm_runtime::kubeconfig::{KubeconfigAuth, KubeconfigSpec, ServerInfo};
use serde::Deserialize;

use super::addon_env::{AddonCredential, AddonEnv, report_condition};
use super::{Backoff, keys, secrets};

/// The Secret key of the token (also the `tokenFile` of the kubeconfig beside it).
pub const TOKEN_KEY: &str = "token";

/// A token is requested again once this fraction of its lifetime is left (upstream's).
const REFRESH_THRESHOLD: f64 = 0.2;

/// How the agent's `kubeClient` addon registrations get hub credentials.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AddonKubeClientAuth {
    /// Client certificates through CSRs (the default).
    #[default]
    Csr,
    /// ServiceAccount tokens of `<addon>-agent` in the cluster namespace on the hub.
    Token {
        /// Requested token lifetime in seconds (upstream's default: a year).
        expiration_seconds: i64,
    },
}

impl AddonKubeClientAuth {
    /// Upstream's default token lifetime: a year.
    pub const DEFAULT_TOKEN_EXPIRATION_SECONDS: i64 = 31_536_000;

    /// The driver this agent declares in `status.registrations`.
    pub fn driver(self) -> KubeClientDriver {
        match self {
            AddonKubeClientAuth::Csr => KubeClientDriver::Csr,
            AddonKubeClientAuth::Token { .. } => KubeClientDriver::Token,
        }
    }
}

/// `<addon>-agent`: the ServiceAccount an addon's agent is on the hub with the token driver.
pub fn service_account_name(addon: &str) -> String {
    format!("{addon}-agent")
}

/// The user of that ServiceAccount: `system:serviceaccount:<cluster>:<addon>-agent`.
pub fn token_user(cluster: &str, addon: &str) -> String {
    format!(
        "system:serviceaccount:{cluster}:{}",
        service_account_name(addon)
    )
}

/// The `status.registrations` of `mca` with this agent's driver declared on every
/// `kubeClient` entry (and, for `token`, the ServiceAccount subject); `None` when they already
/// say so or there is no `kubeClient` entry.
pub fn driver_changes(
    cluster: &str,
    mca: &ManagedClusterAddOn,
    auth: AddonKubeClientAuth,
) -> Option<Vec<RegistrationConfig>> {
    let addon = mca.metadata.name.as_deref()?;
    let mut registrations = mca.status.as_ref()?.registrations.clone();
    let mut changed = false;
    for entry in registrations
        .iter_mut()
        .filter(|r| r.type_ == RegistrationType::KubeClient)
    {
        let config = entry
            .kube_client
            .get_or_insert_with(KubeClientConfig::default);
        if config.driver != Some(auth.driver()) {
            config.driver = Some(auth.driver());
            changed = true;
        }
        if auth.driver() == KubeClientDriver::Token {
            let subject = Some(KubeClientSubject {
                user: Some(token_user(cluster, addon)),
                groups: Vec::new(),
            });
            if config.subject != subject {
                config.subject = subject;
                changed = true;
            }
        }
    }
    changed.then_some(registrations)
}

/// The UID of the addon agent's ServiceAccount, once the hub says its token infrastructure
/// is ready (condition `TokenInfrastructureReady` True, message
/// `ServiceAccount <ns>/<name> (UID: <uid>) is ready`).
pub fn service_account_uid(mca: &ManagedClusterAddOn) -> Option<String> {
    let conditions = mca.status.as_ref()?.conditions.as_slice();
    let ready = find_condition(conditions, TOKEN_INFRASTRUCTURE_READY)?;
    if ready.status != "True" {
        return None;
    }
    let start = ready.message.find("UID: ")? + "UID: ".len();
    let rest = &ready.message[start..];
    let uid = &rest[..rest.find(')')?];
    (!uid.is_empty()).then(|| uid.to_owned())
}

/// What the agent reads of a ServiceAccount token (a JWT): issued, expires, ServiceAccount UID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenClaims {
    /// `iat`, Unix seconds.
    pub issued_at: i64,
    /// `exp`, Unix seconds.
    pub expires_at: i64,
    /// `kubernetes.io.serviceaccount.uid`.
    pub service_account_uid: String,
}

/// The claims of `token`, or why it cannot be read.
pub fn token_claims(token: &str) -> Result<TokenClaims, String> {
    #[derive(Deserialize)]
    struct Claims {
        #[serde(default)]
        exp: i64,
        #[serde(default)]
        iat: i64,
        #[serde(default, rename = "kubernetes.io")]
        kubernetes: Option<Kubernetes>,
    }
    #[derive(Deserialize)]
    struct Kubernetes {
        #[serde(default)]
        serviceaccount: Option<Account>,
    }
    #[derive(Deserialize)]
    struct Account {
        #[serde(default)]
        uid: String,
    }
    let parts: Vec<&str> = token.trim().split('.').collect();
    let [_, payload, _] = parts.as_slice() else {
        return Err(format!("not a JWT: {} parts instead of 3", parts.len()));
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|e| format!("the JWT payload is not base64url: {e}"))?;
    let claims: Claims = serde_json::from_slice(&bytes)
        .map_err(|e| format!("the JWT payload is not JSON claims: {e}"))?;
    if claims.exp == 0 {
        return Err("the token has no expiration".into());
    }
    if claims.iat == 0 {
        return Err("the token has no issue time".into());
    }
    Ok(TokenClaims {
        issued_at: claims.iat,
        expires_at: claims.exp,
        service_account_uid: claims
            .kubernetes
            .and_then(|k| k.serviceaccount)
            .map(|a| a.uid)
            .unwrap_or_default(),
    })
}

/// Whether `token` still serves at `now` (Unix seconds) for ServiceAccount `uid`: readable,
/// of that ServiceAccount, and with more than a fifth of its life left. The error says why
/// not.
pub fn token_valid(token: &str, uid: &str, now: i64) -> Result<TokenClaims, String> {
    let claims = token_claims(token)?;
    if !uid.is_empty() && claims.service_account_uid != uid {
        return Err(format!(
            "the token is of ServiceAccount UID {:?}, not {uid:?}",
            claims.service_account_uid
        ));
    }
    if now >= claims.expires_at {
        return Err("the token has expired".into());
    }
    let life = claims.expires_at - claims.issued_at;
    if life <= 0 {
        return Err("the token's lifetime is not positive".into());
    }
    let left = (claims.expires_at - now) as f64 / life as f64;
    if left <= REFRESH_THRESHOLD {
        return Err(format!(
            "{:.0} % of the token's lifetime is left",
            left * 100.0
        ));
    }
    Ok(claims)
}

/// When a token with `claims` is to be requested again (Unix seconds).
fn refresh_at(claims: &TokenClaims) -> i64 {
    let life = (claims.expires_at - claims.issued_at).max(0) as f64;
    claims.expires_at - (life * REFRESH_THRESHOLD).ceil() as i64
}

/// The kubeconfig of a token secret: the hub, and the token read from the file beside it.
pub fn token_kubeconfig(server: &ServerInfo) -> String {
    ocm_runtime::kubeconfig::render(&KubeconfigSpec {
        server: server.clone(),
        auth: KubeconfigAuth::TokenFile(TOKEN_KEY.to_owned()),
        context: secrets::HUB_CONTEXT.to_owned(),
        user: secrets::HUB_USER.to_owned(),
        namespace: Some(secrets::HUB_NAMESPACE.to_owned()),
    })
}

/// Keeps a valid token of the addon agent's ServiceAccount in `credential`'s secret.
pub(crate) async fn keep_token(env: AddonEnv, credential: AddonCredential, uid: String) {
    let mut backoff = Backoff::default();
    let secrets_api =
        Api::<Secret>::namespaced(env.agent_cluster(credential.hosted), &credential.namespace);
    let expiration = match env.options.addon_kube_client_auth {
        AddonKubeClientAuth::Token { expiration_seconds } => expiration_seconds,
        AddonKubeClientAuth::Csr => AddonKubeClientAuth::DEFAULT_TOKEN_EXPIRATION_SECONDS,
    };
    loop {
        let stored = match secrets_api.get_opt(&credential.secret).await {
            Ok(stored) => stored,
            Err(err) => {
                let delay = backoff.next_delay();
                tracing::warn!(error = %err, retry_in = ?delay, secret = credential.secret, "reading an addon secret");
                tokio::time::sleep(delay).await;
                continue;
            }
        };
        let now = Timestamp::now().as_second();
        let token = stored
            .as_ref()
            .and_then(|s| secrets::text(s, TOKEN_KEY))
            .unwrap_or_default();
        let kubeconfig = token_kubeconfig(&env.server);
        let verdict = token_valid(&token, &uid, now);
        if let Ok(claims) = &verdict {
            let current = stored
                .as_ref()
                .and_then(|s| secrets::data(s, keys::KUBECONFIG))
                .is_some_and(|k| k == kubeconfig.as_bytes());
            if current {
                backoff.reset();
                let wait = Duration::from_secs((refresh_at(claims) - now).max(0) as u64)
                    .min(env.options.cert_check_period);
                tokio::time::sleep(wait).await;
                continue;
            }
        }
        let reason = verdict
            .err()
            .unwrap_or_else(|| "the kubeconfig is not current".into());
        tracing::info!(addon = credential.addon, secret = credential.secret, %reason, "requesting an addon agent token");
        match request_token(&env, &credential, expiration).await {
            Ok(token) => {
                let expires = token_claims(&token)
                    .ok()
                    .and_then(|c| Timestamp::from_second(c.expires_at).ok())
                    .map(|t| t.to_string())
                    .unwrap_or_default();
                let data: BTreeMap<String, ByteString> = [
                    (TOKEN_KEY.to_owned(), ByteString(token.into_bytes())),
                    (
                        keys::KUBECONFIG.to_owned(),
                        ByteString(kubeconfig.into_bytes()),
                    ),
                ]
                .into_iter()
                .collect();
                if let Err(err) = super::addon_env::write_secret_data(&env, &credential, data).await
                {
                    let delay = backoff.next_delay();
                    tracing::warn!(error = %err, retry_in = ?delay, secret = credential.secret, "writing an addon token secret");
                    tokio::time::sleep(delay).await;
                    continue;
                }
                backoff.reset();
                report_condition(
                    &env,
                    &credential,
                    TOKEN_REFRESHED,
                    "True",
                    "AddonTokenRefreshed",
                    &format!("Addon token refreshed, expires at {expires}"),
                )
                .await;
            }
            Err(err) => {
                let delay = backoff.next_delay();
                tracing::warn!(error = %err, retry_in = ?delay, addon = credential.addon, "requesting an addon agent token");
                report_condition(
                    &env,
                    &credential,
                    TOKEN_REFRESHED,
                    "False",
                    "TokenCreationFailed",
                    &format!("Failed to create token: {err}"),
                )
                .await;
                tokio::time::sleep(delay).await;
            }
        }
    }
}

/// A new token of the addon agent's ServiceAccount, from the hub's TokenRequest API.
async fn request_token(
    env: &AddonEnv,
    credential: &AddonCredential,
    expiration_seconds: i64,
) -> Result<String, kube::Error> {
    let accounts = Api::<ServiceAccount>::namespaced(env.hub(), &env.cluster);
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(expiration_seconds),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = accounts
        .create_token_request(
            &service_account_name(&credential.addon),
            &PostParams::default(),
            &request,
        )
        .await?;
    Ok(answer.status.map(|s| s.token).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use ocm_api::addon::v1beta1::ManagedClusterAddOnStatus;
    use serde_json::json;

    fn jwt(claims: serde_json::Value) -> String {
        let b64 = |v: &serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
        };
        format!("{}.{}.sig", b64(&json!({"alg": "RS256"})), b64(&claims))
    }

    fn mca(registrations: serde_json::Value, conditions: serde_json::Value) -> ManagedClusterAddOn {
        let mut mca = ManagedClusterAddOn::new("hello", Default::default());
        mca.status = Some(
            serde_json::from_value::<ManagedClusterAddOnStatus>(
                json!({"registrations": registrations, "conditions": conditions}),
            )
            .unwrap(),
        );
        mca
    }

    #[test]
    fn the_agent_declares_its_driver_and_the_token_subject() {
        let kube_client = json!([
            {"type": "kubeClient", "kubeClient": {"subject": {"user": "u", "groups": ["g"]}}},
            {"type": "customSigner", "customSigner": {"signerName": "example.com/s"}}
        ]);
        let m = mca(kube_client, json!([]));
        let token = driver_changes(
            "c1",
            &m,
            AddonKubeClientAuth::Token {
                expiration_seconds: 3600,
            },
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&token).unwrap(),
            json!([
                {"type": "kubeClient", "kubeClient": {"driver": "token",
                    "subject": {"user": "system:serviceaccount:c1:hello-agent"}}},
                {"type": "customSigner", "customSigner": {"signerName": "example.com/s"}}
            ])
        );
        let csr = driver_changes("c1", &m, AddonKubeClientAuth::Csr).unwrap();
        assert_eq!(
            serde_json::to_value(&csr).unwrap()[0],
            json!({"type": "kubeClient", "kubeClient": {"driver": "csr",
                   "subject": {"user": "u", "groups": ["g"]}}})
        );
        // Said already: nothing to write.
        let mut said = m.clone();
        said.status.as_mut().unwrap().registrations = token;
        assert_eq!(
            driver_changes(
                "c1",
                &said,
                AddonKubeClientAuth::Token {
                    expiration_seconds: 1
                }
            ),
            None
        );
        let none = mca(json!([]), json!([]));
        assert_eq!(driver_changes("c1", &none, AddonKubeClientAuth::Csr), None);
    }

    #[test]
    fn the_service_account_uid_comes_from_the_hubs_condition() {
        let ready = |status: &str, message: &str| {
            mca(
                json!([]),
                json!([{"type": "TokenInfrastructureReady", "status": status,
                        "reason": "TokenInfrastructureReady", "message": message,
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}]),
            )
        };
        assert_eq!(
            service_account_uid(&ready(
                "True",
                "ServiceAccount c1/hello-agent (UID: 1234-abcd) is ready"
            ))
            .as_deref(),
            Some("1234-abcd")
        );
        assert_eq!(service_account_uid(&ready("False", "x (UID: 1) y")), None);
        assert_eq!(service_account_uid(&ready("True", "no uid")), None);
        assert_eq!(service_account_uid(&mca(json!([]), json!([]))), None);
    }

    #[test]
    fn tokens_are_renewed_with_a_fifth_of_their_life_left_or_for_another_account() {
        let token = jwt(json!({"iat": 1000, "exp": 2000,
            "kubernetes.io": {"serviceaccount": {"name": "hello-agent", "uid": "u1"}}}));
        assert_eq!(token_valid(&token, "u1", 1500).unwrap().expires_at, 2000);
        assert_eq!(refresh_at(&token_claims(&token).unwrap()), 1800);
        assert!(
            token_valid(&token, "u1", 1800)
                .unwrap_err()
                .contains("20 %")
        );
        assert!(
            token_valid(&token, "u1", 2000)
                .unwrap_err()
                .contains("expired")
        );
        assert!(token_valid(&token, "u2", 1500).unwrap_err().contains("UID"));
        assert!(token_valid(&token, "", 1500).is_ok());
        assert!(token_valid("", "u1", 1500).is_err());
        assert!(token_valid("a.b", "u1", 1500).unwrap_err().contains("3"));
        let no_exp = jwt(json!({"iat": 1000}));
        assert!(
            token_valid(&no_exp, "", 1500)
                .unwrap_err()
                .contains("expiration")
        );
    }

    #[test]
    fn the_token_kubeconfig_reads_the_token_file() {
        let yaml = token_kubeconfig(&ServerInfo {
            server: "https://hub:6443".into(),
            ca_pem: None,
            proxy_url: None,
        });
        assert!(yaml.contains("tokenFile: token"), "{yaml}");
        assert!(yaml.contains("server: https://hub:6443"), "{yaml}");
    }
}
