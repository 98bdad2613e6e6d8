//! Bearer tokens: bootstrap tokens (`<id>.<secret>` backed by kube-system Secrets) and
//! service-account JWTs (issued through TokenRequest, ES256). Pure: callers look up the
//! Secrets, ServiceAccounts and bound objects and pass them in, with the current time.
//!
//! The request path, for `Authorization: Bearer <token>`:
//! 1. [`classify_bearer`]; a [`BearerKind::Bootstrap`] token is checked with
//!    [`authenticate_bootstrap_token`] against `kube-system/bootstrap-token-<id>`;
//! 2. a [`BearerKind::Jwt`] with [`verify_service_account_token`], then
//!    [`check_token_objects`] with the ServiceAccount (and bound object) it names;
//! 3. any failure, or an unrecognised token, is 401 `Unauthorized` (a presented token never
//!    falls back to anonymous).

mod bootstrap;
pub mod jwt;
mod service_account;

use std::path::Path;

pub use bootstrap::{
    BOOTSTRAP_TOKEN_NAMESPACE, BOOTSTRAP_TOKEN_SECRET_TYPE, BOOTSTRAP_USER_PREFIX,
    BOOTSTRAPPERS_GROUP, BootstrapToken, BootstrapTokenError, authenticate_bootstrap_token,
    bootstrap_token_expired, bootstrap_token_secret_name, is_valid_bootstrap_group,
    parse_bootstrap_token,
};
pub use jwt::{JwtError, SigningKey, VerifyingKey};
pub use service_account::{
    BoundObjectRef, CREDENTIAL_ID_EXTRA, DEFAULT_EXPIRATION_SECONDS, DEFAULT_ISSUER, IssuedToken,
    LEEWAY, ServiceAccountClaims, ServiceAccountTokenConfig, ServiceAccountTokenError,
    TokenRequestSpec, check_token_objects, issue_token, parse_token_request,
    verify_service_account_token,
};

use crate::pki::{PkiError, write_file};

/// What a bearer token looks like.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BearerKind {
    /// A bootstrap token.
    Bootstrap(BootstrapToken),
    /// A JWT (possibly a service-account token).
    Jwt,
    /// Neither: always 401.
    Unknown,
}

/// Sorts a bearer token into the authenticator that can check it.
pub fn classify_bearer(token: &str) -> BearerKind {
    if let Some(t) = parse_bootstrap_token(token) {
        BearerKind::Bootstrap(t)
    } else if jwt::looks_like_jwt(token) {
        BearerKind::Jwt
    } else {
        BearerKind::Unknown
    }
}

/// Loads the service-account signing key from `<dir>/service-account.key`, or generates a
/// P-256 key and writes it there (mode 0600).
pub fn load_or_generate_signing_key(dir: &Path) -> Result<SigningKey, PkiError> {
    let path = dir.join("service-account.key");
    if path.exists() {
        let pem = std::fs::read_to_string(&path).map_err(|source| PkiError::Io {
            path: path.clone(),
            source,
        })?;
        return SigningKey::from_pem(&pem).map_err(|e| PkiError::Parse(e.to_string()));
    }
    let key = SigningKey::generate().map_err(|e| PkiError::Crypto(e.to_string()))?;
    std::fs::create_dir_all(dir).map_err(|source| PkiError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    write_file(&path, key.to_pem().as_bytes(), true)?;
    Ok(key)
}
