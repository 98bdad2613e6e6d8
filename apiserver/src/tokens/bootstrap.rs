//! Bootstrap tokens (`<id>.<secret>`), authenticated against their
//! `kube-system/bootstrap-token-<id>` Secret as kube-apiserver's bootstrap token authenticator
//! does.

use base64::Engine as _;
use jiff::Timestamp;
use serde_json::Value;

use crate::auth::Identity;
use crate::pki::with_authenticated_group;

/// The namespace of bootstrap token Secrets.
pub const BOOTSTRAP_TOKEN_NAMESPACE: &str = "kube-system";
/// The Secret type of bootstrap tokens.
pub const BOOTSTRAP_TOKEN_SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
/// Every bootstrap token user is in this group.
pub const BOOTSTRAPPERS_GROUP: &str = "system:bootstrappers";
/// Bootstrap token users are named `system:bootstrap:<id>`.
pub const BOOTSTRAP_USER_PREFIX: &str = "system:bootstrap:";

/// Why a bootstrap token does not authenticate (the core answers 401 `Unauthorized`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BootstrapTokenError {
    /// The token is not `[a-z0-9]{6}.[a-z0-9]{16}`.
    #[error("token is not a bootstrap token")]
    Malformed,
    /// No Secret `kube-system/bootstrap-token-<id>`.
    #[error("no bootstrap token secret {0}")]
    NotFound(String),
    /// The Secret is being deleted.
    #[error("bootstrap token secret is deleted and awaiting removal")]
    Deleted,
    /// The Secret is not of type `bootstrap.kubernetes.io/token` or has no data.
    #[error("bootstrap token secret has invalid type, expected bootstrap.kubernetes.io/token")]
    WrongType,
    /// `token-secret` does not match.
    #[error("bootstrap token secret has invalid value for key token-secret")]
    WrongSecret,
    /// `token-id` does not match.
    #[error("bootstrap token secret has invalid value for key token-id")]
    WrongId,
    /// `expiration` is in the past or unparsable.
    #[error("bootstrap token has expired")]
    Expired,
    /// `usage-bootstrap-authentication` is not `"true"`.
    #[error("bootstrap token secret not marked usage-bootstrap-authentication=true")]
    NotForAuthentication,
    /// An `auth-extra-groups` entry is not `system:bootstrappers:<name>`.
    #[error("bootstrap token secret has invalid value for key auth-extra-groups: {0}")]
    InvalidGroup(String),
}

/// A token split into its parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootstrapToken {
    /// The public id (6 characters).
    pub id: String,
    /// The secret (16 characters).
    pub secret: String,
}

fn lower_alnum(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// Splits `<id>.<secret>` (`[a-z0-9]{6}\.[a-z0-9]{16}`); `None` for anything else.
pub fn parse_bootstrap_token(token: &str) -> Option<BootstrapToken> {
    let (id, secret) = token.split_once('.')?;
    (lower_alnum(id, 6) && lower_alnum(secret, 16)).then(|| BootstrapToken {
        id: id.to_owned(),
        secret: secret.to_owned(),
    })
}

/// The name of the Secret holding token `id`: `bootstrap-token-<id>`.
pub fn bootstrap_token_secret_name(id: &str) -> String {
    format!("bootstrap-token-{id}")
}

/// `secret.data[key]` decoded (missing or undecodable: empty).
fn data(secret: &Value, key: &str) -> String {
    secret
        .pointer(&format!("/data/{key}"))
        .and_then(Value::as_str)
        .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .unwrap_or_default()
}

/// Constant-time equality of two byte strings of any length.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        let y = b.get(i).copied().unwrap_or(0);
        diff |= usize::from(x ^ y);
    }
    diff == 0
}

/// Whether a bootstrap group name is valid: `system:bootstrappers:` then `[a-z0-9:-]{0,255}`
/// ending in `[a-z0-9]`.
pub fn is_valid_bootstrap_group(group: &str) -> bool {
    let Some(rest) = group.strip_prefix("system:bootstrappers:") else {
        return false;
    };
    let valid_char = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match rest.as_bytes().split_last() {
        Some((last, body)) => {
            valid_char(*last)
                && body.len() <= 255
                && body
                    .iter()
                    .all(|b| valid_char(*b) || *b == b':' || *b == b'-')
        }
        None => false,
    }
}

/// Whether the token Secret has expired at `now` (an unparsable `expiration` counts as
/// expired; none means never).
pub fn bootstrap_token_expired(secret: &Value, now: Timestamp) -> bool {
    let expiration = data(secret, "expiration");
    if expiration.is_empty() {
        return false;
    }
    match expiration.parse::<Timestamp>() {
        Ok(t) => t <= now,
        Err(_) => true,
    }
}

/// Authenticates `token` against its Secret (`None`: not found): user
/// `system:bootstrap:<id>`, groups `system:bootstrappers` plus `auth-extra-groups` (sorted,
/// deduplicated) plus `system:authenticated`.
pub fn authenticate_bootstrap_token(
    token: &str,
    secret: Option<&Value>,
    now: Timestamp,
) -> Result<Identity, BootstrapTokenError> {
    let parsed = parse_bootstrap_token(token).ok_or(BootstrapTokenError::Malformed)?;
    let secret = secret
        .ok_or_else(|| BootstrapTokenError::NotFound(bootstrap_token_secret_name(&parsed.id)))?;
    if secret
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|d| !d.is_null())
    {
        return Err(BootstrapTokenError::Deleted);
    }
    let typed = secret.get("type").and_then(Value::as_str) == Some(BOOTSTRAP_TOKEN_SECRET_TYPE);
    if !typed || !secret.get("data").is_some_and(Value::is_object) {
        return Err(BootstrapTokenError::WrongType);
    }
    if !constant_time_eq(
        data(secret, "token-secret").as_bytes(),
        parsed.secret.as_bytes(),
    ) {
        return Err(BootstrapTokenError::WrongSecret);
    }
    let id = data(secret, "token-id");
    if id != parsed.id {
        return Err(BootstrapTokenError::WrongId);
    }
    if bootstrap_token_expired(secret, now) {
        return Err(BootstrapTokenError::Expired);
    }
    if data(secret, "usage-bootstrap-authentication") != "true" {
        return Err(BootstrapTokenError::NotForAuthentication);
    }
    let mut groups = vec![BOOTSTRAPPERS_GROUP.to_owned()];
    let extra = data(secret, "auth-extra-groups");
    if !extra.is_empty() {
        for g in extra.split(',') {
            if !is_valid_bootstrap_group(g) {
                return Err(BootstrapTokenError::InvalidGroup(format!(
                    "bootstrap group {} is invalid (must match ^system:bootstrappers:[a-z0-9:-]{{0,255}}[a-z0-9]$)",
                    crate::validation::go_quote(g)
                )));
            }
            groups.push(g.to_owned());
        }
    }
    groups.sort();
    groups.dedup();
    Ok(with_authenticated_group(Identity {
        user: format!("{BOOTSTRAP_USER_PREFIX}{id}"),
        groups,
        ..Default::default()
    }))
}
