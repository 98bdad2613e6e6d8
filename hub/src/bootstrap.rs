//! What `ocm init` creates on the hub so that clusters can ask to join: a bootstrap token
//! (a `kube-system/bootstrap-token-<id>` Secret whose holder is in the group
//! `system:bootstrappers:managedcluster`) and upstream's narrow bootstrap ClusterRole and
//! binding for that group — enough to create a CSR and its own ManagedCluster, nothing more.

use anyhow::Context;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// Group every bootstrap token made by `ocm init` carries.
pub const BOOTSTRAP_GROUP: &str = "system:bootstrappers:managedcluster";

/// Name of the ClusterRole that bootstrap identities get.
pub const BOOTSTRAP_CLUSTER_ROLE: &str = "open-cluster-management:bootstrap";

/// Name of the ClusterRoleBinding of [`BOOTSTRAP_CLUSTER_ROLE`] to [`BOOTSTRAP_GROUP`].
pub const BOOTSTRAP_BINDING: &str = "open-cluster-management:bootstrap:managedcluster";

/// Field manager of the objects `ocm init` writes.
pub const FIELD_MANAGER: &str = "ocm-init";

/// A bootstrap token: `<id>.<secret>`.
#[derive(Clone, PartialEq, Eq)]
pub struct BootstrapToken {
    /// Six characters `[a-z0-9]`, public (names the Secret).
    pub id: String,
    /// Sixteen characters `[a-z0-9]`, private.
    pub secret: String,
}

impl std::fmt::Debug for BootstrapToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BootstrapToken({}.****)", self.id)
    }
}

impl std::fmt::Display for BootstrapToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.id, self.secret)
    }
}

impl BootstrapToken {
    /// A new random token.
    pub fn generate() -> anyhow::Result<BootstrapToken> {
        Ok(BootstrapToken {
            id: random_token_chars(6)?,
            secret: random_token_chars(16)?,
        })
    }

    /// The Secret that makes the hub accept this token, valid for `ttl` (None: no expiry).
    pub fn secret(&self, ttl: Option<std::time::Duration>) -> anyhow::Result<Secret> {
        let mut data = json!({
            "token-id": self.id,
            "token-secret": self.secret,
            "usage-bootstrap-authentication": "true",
            "auth-extra-groups": BOOTSTRAP_GROUP,
            "description": "Bootstrap token for joining managed clusters (ocm init)",
        });
        if let Some(ttl) = ttl {
            let expires = jiff::Timestamp::now()
                .checked_add(jiff::SignedDuration::try_from(ttl)?)
                .context("token lifetime too long")?;
            data["expiration"] = json!(expires.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
        }
        Ok(serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "bootstrap.kubernetes.io/token",
            "metadata": {
                "name": format!("bootstrap-token-{}", self.id),
                "namespace": "kube-system",
                "labels": {"app": "cluster-manager"},
            },
            "stringData": data,
        }))?)
    }
}

/// `n` random characters from `[a-z0-9]`.
fn random_token_chars(n: usize) -> anyhow::Result<String> {
    use ring::rand::SecureRandom;
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let rng = ring::rand::SystemRandom::new();
    let mut out = String::with_capacity(n);
    while out.len() < n {
        let mut byte = [0u8; 1];
        rng.fill(&mut byte)
            .map_err(|_| anyhow::anyhow!("no randomness"))?;
        // 252 = 7 * 36: reject the tail to keep the choice uniform.
        if byte[0] < 252 {
            out.push(char::from(ALPHABET[usize::from(byte[0]) % ALPHABET.len()]));
        }
    }
    Ok(out)
}

/// Upstream's bootstrap ClusterRole: read configmaps; create and watch CSRs; get, create and
/// watch ManagedClusters; join cluster sets.
pub fn bootstrap_cluster_role() -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": BOOTSTRAP_CLUSTER_ROLE},
        "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
            {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"],
             "verbs": ["create", "get", "list", "watch"]},
            {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["managedclusters"],
             "verbs": ["get", "create", "list", "watch"]},
            {"apiGroups": ["cluster.open-cluster-management.io"],
             "resources": ["managedclustersets/join"], "verbs": ["create"]},
        ],
    })
}

/// The binding of the bootstrap ClusterRole to the bootstrap group.
pub fn bootstrap_binding() -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": BOOTSTRAP_BINDING},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": BOOTSTRAP_CLUSTER_ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                      "name": BOOTSTRAP_GROUP}],
    })
}

/// Applies the bootstrap RBAC and creates a new token; returns the token.
pub async fn init_hub(
    client: &kube::Client,
    ttl: Option<std::time::Duration>,
) -> anyhow::Result<BootstrapToken> {
    let token = BootstrapToken::generate()?;
    init_with_token(client, &token, ttl).await?;
    Ok(token)
}

/// Applies the bootstrap RBAC and creates the Secret of `token`.
pub async fn init_with_token(
    client: &kube::Client,
    token: &BootstrapToken,
    ttl: Option<std::time::Duration>,
) -> anyhow::Result<()> {
    apply_bootstrap_rbac(client).await?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "kube-system");
    secrets
        .create(&PostParams::default(), &token.secret(ttl)?)
        .await
        .context("creating the bootstrap token secret")?;
    Ok(())
}

/// Applies the bootstrap ClusterRole and its binding to the bootstrap group.
pub async fn apply_bootstrap_rbac(client: &kube::Client) -> anyhow::Result<()> {
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let roles: Api<ClusterRole> = Api::all(client.clone());
    let role: ClusterRole = serde_json::from_value(bootstrap_cluster_role())?;
    roles
        .patch(BOOTSTRAP_CLUSTER_ROLE, &params, &Patch::Apply(&role))
        .await
        .context("applying the bootstrap ClusterRole")?;
    let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
    let binding: ClusterRoleBinding = serde_json::from_value(bootstrap_binding())?;
    bindings
        .patch(BOOTSTRAP_BINDING, &params, &Patch::Apply(&binding))
        .await
        .context("applying the bootstrap ClusterRoleBinding")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn tokens_have_the_bootstrap_token_shape() {
        let token = BootstrapToken::generate().unwrap();
        let text = token.to_string();
        let re = regex_lite(&text);
        assert!(re, "{text}");
        assert!(!format!("{token:?}").contains(&token.secret));
        let secret = token.secret(None).unwrap();
        assert_eq!(
            secret.metadata.name.as_deref(),
            Some(format!("bootstrap-token-{}", token.id).as_str())
        );
        assert_eq!(
            secret.type_.as_deref(),
            Some("bootstrap.kubernetes.io/token")
        );
    }

    fn regex_lite(text: &str) -> bool {
        let Some((id, secret)) = text.split_once('.') else {
            return false;
        };
        let ok = |s: &str, n: usize| {
            s.len() == n
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        };
        ok(id, 6) && ok(secret, 16)
    }

    #[test]
    fn bootstrap_role_grants_exactly_upstreams_rules() {
        let role = bootstrap_cluster_role();
        let rules = role["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 4);
        assert!(!rules.iter().any(|r| {
            r["verbs"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v == "update" || v == "delete" || v == "patch")
        }));
    }
}
