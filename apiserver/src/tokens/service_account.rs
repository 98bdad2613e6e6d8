//! Service-account tokens: the TokenRequest subresource (`POST
//! /api/v1/namespaces/{ns}/serviceaccounts/{name}/token`) issuing JWTs with kube's claims, and
//! their verification (signature, issuer, audience, `exp`/`nbf`/`iat` with kube's one-minute
//! leeway, then the service account and bound object still existing with the same UID).

use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value, json};

use super::jwt::{self, JwtError, SigningKey, VerifyingKey};
use crate::auth::Identity;
use crate::pki::with_authenticated_group;
use crate::validation::go_quote;
use ocm_apiserver_status::{ApiError, Cause, Gr};

/// kube's usual issuer (and default API audience).
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// `spec.expirationSeconds` when the request leaves it out.
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// Clock-skew allowance on `exp`, `nbf` and `iat` (go-jose's default leeway).
pub const LEEWAY: SignedDuration = SignedDuration::from_secs(60);
/// Extra key holding `JTI=<jti>`.
pub const CREDENTIAL_ID_EXTRA: &str = "authentication.kubernetes.io/credential-id";

/// How the server issues and accepts service-account tokens.
#[derive(Clone, Debug)]
pub struct ServiceAccountTokenConfig {
    /// `iss` of issued tokens; only tokens with this issuer are accepted.
    pub issuer: String,
    /// The API audiences: the default `aud` of issued tokens, and what a presented token must
    /// name (at least one of).
    pub api_audiences: Vec<String>,
    /// `--service-account-max-token-expiration` (seconds); longer requests are shortened.
    pub max_expiration_seconds: Option<i64>,
}

impl Default for ServiceAccountTokenConfig {
    fn default() -> Self {
        ServiceAccountTokenConfig {
            issuer: DEFAULT_ISSUER.to_owned(),
            api_audiences: vec![DEFAULT_ISSUER.to_owned()],
            max_expiration_seconds: None,
        }
    }
}

/// The object a token is bound to (`spec.boundObjectRef`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundObjectRef {
    /// `Pod`, `Secret` or `Node`.
    pub kind: String,
    /// `v1`.
    pub api_version: String,
    /// Object name.
    pub name: String,
    /// Expected UID; empty for any.
    pub uid: String,
}

impl BoundObjectRef {
    /// The resource to look up (`pods`, `secrets` — in the request's namespace — or `nodes`).
    pub fn resource(&self) -> &'static str {
        match self.kind.as_str() {
            "Pod" => "pods",
            "Secret" => "secrets",
            _ => "nodes",
        }
    }

    /// Whether the bound object lives in the token's namespace (pods, secrets) or is cluster
    /// scoped (nodes).
    pub fn namespaced(&self) -> bool {
        self.kind != "Node"
    }
}

/// A validated TokenRequest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenRequestSpec {
    /// Namespace of the service account.
    pub namespace: String,
    /// Name of the service account.
    pub service_account: String,
    /// `aud` of the token (defaulted to the API audiences).
    pub audiences: Vec<String>,
    /// Validity (defaulted to 3600, shortened to the server maximum).
    pub expiration_seconds: i64,
    /// The bound object, if any.
    pub bound_object_ref: Option<BoundObjectRef>,
    /// Warnings to return (`Warning` headers), e.g. a shortened expiration.
    pub warnings: Vec<String>,
    body: Value,
}

fn invalid(name: &str, field: &str, value: String, detail: &str) -> ApiError {
    ApiError::invalid(
        "TokenRequest.authentication.k8s.io",
        "authentication.k8s.io",
        "TokenRequest",
        name,
        vec![Cause::new(
            "FieldValueInvalid",
            format!("Invalid value: {value}: {detail}"),
            field,
        )],
    )
}

/// Validates a TokenRequest body for service account `namespace/name` (kube's REST checks and
/// `ValidateTokenRequest`), applying defaults and the server maximum. The caller then looks up
/// the service account (404 if missing) and the bound object, and calls [`issue_token`].
pub fn parse_token_request(
    config: &ServiceAccountTokenConfig,
    namespace: &str,
    name: &str,
    body: &Value,
) -> Result<TokenRequestSpec, ApiError> {
    let meta_str = |k: &str| {
        body.pointer(&format!("/metadata/{k}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let (req_name, req_ns) = (meta_str("name"), meta_str("namespace"));
    if !req_name.is_empty() && req_name != name {
        return Err(invalid(
            name,
            "metadata.name",
            go_quote(&req_name),
            "must match the service account name if specified",
        ));
    }
    if !req_ns.is_empty() && req_ns != namespace {
        return Err(invalid(
            name,
            "metadata.namespace",
            go_quote(&req_ns),
            "must match the service account namespace if specified",
        ));
    }
    let spec = body.get("spec").cloned().unwrap_or(Value::Null);
    let expiration = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| ApiError::bad_request("spec.expirationSeconds must be an integer"))?,
    };
    if expiration < 600 {
        return Err(invalid(
            name,
            "spec.expirationSeconds",
            expiration.to_string(),
            "may not specify a duration less than 10 minutes",
        ));
    }
    if expiration > 1 << 32 {
        return Err(invalid(
            name,
            "spec.expirationSeconds",
            expiration.to_string(),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    let mut audiences: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if audiences.is_empty() {
        audiences.clone_from(&config.api_audiences);
    }
    let mut warnings = Vec::new();
    let mut expiration_seconds = expiration;
    if let Some(max) = config.max_expiration_seconds.filter(|m| *m > 0)
        && expiration > max
    {
        warnings.push(format!(
            "requested expiration of {expiration} seconds shortened to {max} seconds"
        ));
        expiration_seconds = max;
    }
    let bound_object_ref = match spec.get("boundObjectRef") {
        None | Some(Value::Null) => None,
        Some(r) => {
            let f = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
            let bound = BoundObjectRef {
                kind: f("kind"),
                api_version: f("apiVersion"),
                name: f("name"),
                uid: f("uid"),
            };
            let (group, version) = match bound.api_version.split_once('/') {
                Some((g, v)) => (g.to_owned(), v.to_owned()),
                None => (String::new(), bound.api_version.clone()),
            };
            let supported =
                group.is_empty() && matches!(bound.kind.as_str(), "Pod" | "Secret" | "Node");
            if !supported {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token to object of type {group}/{version}, Kind={}",
                    bound.kind
                )));
            }
            Some(bound)
        }
    };
    Ok(TokenRequestSpec {
        namespace: namespace.to_owned(),
        service_account: name.to_owned(),
        audiences,
        expiration_seconds,
        bound_object_ref,
        warnings,
        body: body.clone(),
    })
}

fn meta<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.pointer(&format!("/metadata/{key}"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn rfc3339(t: Timestamp) -> String {
    Timestamp::from_second(t.as_second())
        .unwrap_or(t)
        .to_string()
}

/// An issued token: the JWT and the TokenRequest response body.
#[derive(Clone, Debug)]
pub struct IssuedToken {
    /// The JWT.
    pub token: String,
    /// The response: the request with `metadata` filled and `status.token`,
    /// `status.expirationTimestamp`.
    pub response: Value,
}

/// Issues a token for a validated request: `service_account` is the stored ServiceAccount,
/// `bound` the stored object named by `boundObjectRef` (the caller answers 404 when it is
/// missing). A UID mismatch is kube's 409; a pod running as another service account is 400.
pub fn issue_token(
    config: &ServiceAccountTokenConfig,
    key: &SigningKey,
    spec: &TokenRequestSpec,
    service_account: &Value,
    bound: Option<&Value>,
    now: Timestamp,
) -> Result<IssuedToken, ApiError> {
    let sa_uid = meta(service_account, "uid");
    let mut private = Map::new();
    private.insert("namespace".into(), json!(spec.namespace));
    if let (Some(r), Some(obj)) = (&spec.bound_object_ref, bound) {
        let uid = meta(obj, "uid");
        if r.kind == "Pod" {
            let pod_sa = obj
                .pointer("/spec/serviceAccountName")
                .and_then(Value::as_str)
                .unwrap_or("");
            if pod_sa != spec.service_account {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount {} to pod running with different serviceaccount name.",
                    go_quote(&spec.service_account)
                )));
            }
        }
        if !r.uid.is_empty() && r.uid != uid {
            return Err(ApiError::conflict_because(
                Gr {
                    group: "",
                    resource: &r.kind,
                },
                &r.name,
                &format!(
                    "the UID in the bound object reference ({}) does not match the UID in record. The object might have been deleted and then recreated",
                    r.uid
                ),
            ));
        }
        let claim = match r.kind.as_str() {
            "Pod" => "pod",
            "Secret" => "secret",
            _ => "node",
        };
        private.insert(claim.into(), json!({"name": r.name, "uid": uid}));
    }
    private.insert(
        "serviceaccount".into(),
        json!({"name": spec.service_account, "uid": sa_uid}),
    );
    let exp = now
        .checked_add(SignedDuration::from_secs(spec.expiration_seconds))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let claims = json!({
        "aud": spec.audiences,
        "exp": exp.as_second(),
        "iat": now.as_second(),
        "iss": config.issuer,
        "jti": uuid::Uuid::new_v4().to_string(),
        "kubernetes.io": Value::Object(private),
        "nbf": now.as_second(),
        "sub": ocm_apiserver_rbac::service_account_username(&spec.namespace, &spec.service_account),
    });
    let token = key.sign(&claims).map_err(ApiError::internal)?;
    let mut metadata = spec
        .body
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    metadata.insert("name".into(), json!(spec.service_account));
    metadata.insert("namespace".into(), json!(spec.namespace));
    metadata.insert("creationTimestamp".into(), json!(rfc3339(now)));
    let mut out_spec = Map::new();
    out_spec.insert("audiences".into(), json!(spec.audiences));
    out_spec.insert("expirationSeconds".into(), json!(spec.expiration_seconds));
    out_spec.insert(
        "boundObjectRef".into(),
        spec.body
            .pointer("/spec/boundObjectRef")
            .cloned()
            .unwrap_or(Value::Null),
    );
    let response = json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": metadata,
        "spec": out_spec,
        "status": {"token": token, "expirationTimestamp": rfc3339(exp)},
    });
    Ok(IssuedToken { token, response })
}

/// Why a service-account token does not authenticate (the core answers 401).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ServiceAccountTokenError {
    /// Not a JWT, or not one of ours (another issuer): other authenticators may try it.
    #[error("not a service account token of this issuer")]
    NotOurs,
    /// Bad signature or algorithm, or unreadable claims.
    #[error("{0}")]
    Jwt(#[from] JwtError),
    /// Missing or malformed claims.
    #[error("service account token claims are invalid: {0}")]
    Claims(String),
    /// `exp` has passed.
    #[error("service account token has expired")]
    Expired,
    /// `nbf` is in the future.
    #[error("service account token is not valid yet")]
    NotYetValid,
    /// `iat` is in the future.
    #[error("service account token is issued in the future")]
    IssuedInFuture,
    /// No audience in common with the API audiences.
    #[error("token audiences {token:?} is invalid for the target audiences {api:?}")]
    Audience {
        /// The token's audiences.
        token: Vec<String>,
        /// The accepted audiences.
        api: Vec<String>,
    },
    /// The service account or bound object is gone, being deleted, or was recreated.
    #[error("{0}")]
    Revoked(String),
}

/// The verified claims of a service-account token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceAccountClaims {
    /// Namespace of the service account.
    pub namespace: String,
    /// Name of the service account.
    pub name: String,
    /// UID the token was issued for.
    pub uid: String,
    /// `jti`.
    pub jti: String,
    /// `aud`.
    pub audiences: Vec<String>,
    /// `exp` (seconds since the epoch).
    pub expires_at: i64,
    /// The bound object: kind (`Pod`, `Secret`, `Node`), name, UID.
    pub bound: Option<(String, String, String)>,
}

impl ServiceAccountClaims {
    /// The identity: `system:serviceaccount:<ns>:<name>`, groups `system:serviceaccounts`,
    /// `system:serviceaccounts:<ns>`, `system:authenticated`; uid the service account's; extra
    /// as kube-apiserver sets it: `authentication.kubernetes.io/credential-id` (`JTI=<jti>`)
    /// and, for a token bound to a pod or node, its name and uid.
    pub fn identity(&self) -> Identity {
        with_authenticated_group(Identity {
            user: ocm_apiserver_rbac::service_account_username(&self.namespace, &self.name),
            groups: vec![
                "system:serviceaccounts".to_owned(),
                format!("system:serviceaccounts:{}", self.namespace),
            ],
            uid: self.uid.clone(),
            extra: self.extra().into_iter().collect(),
        })
    }

    /// kube's user extras: `authentication.kubernetes.io/credential-id: ["JTI=<jti>"]` and,
    /// for bound tokens, `authentication.kubernetes.io/pod-name`/`pod-uid` (or `node-*`).
    pub fn extra(&self) -> Vec<(String, Vec<String>)> {
        let mut out = Vec::new();
        if !self.jti.is_empty() {
            out.push((
                CREDENTIAL_ID_EXTRA.to_owned(),
                vec![format!("JTI={}", self.jti)],
            ));
        }
        if let Some((kind, name, uid)) = &self.bound {
            let prefix = match kind.as_str() {
                "Pod" => Some("pod"),
                "Node" => Some("node"),
                _ => None,
            };
            if let Some(p) = prefix {
                out.push((
                    format!("authentication.kubernetes.io/{p}-name"),
                    vec![name.clone()],
                ));
                out.push((
                    format!("authentication.kubernetes.io/{p}-uid"),
                    vec![uid.clone()],
                ));
            }
        }
        out
    }
}

fn str_claim(v: &Value, pointer: &str) -> Result<String, ServiceAccountTokenError> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ServiceAccountTokenError::Claims(format!("missing {pointer}")))
}

fn time_claim(v: &Value, key: &str) -> Result<Option<i64>, ServiceAccountTokenError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(n) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map(Some)
            .ok_or_else(|| ServiceAccountTokenError::Claims(format!("{key} is not a number"))),
    }
}

/// Verifies a presented token: issuer (another issuer is [`ServiceAccountTokenError::NotOurs`]),
/// ES256 signature by one of `keys`, `exp`/`nbf`/`iat` against `now` with a minute of leeway,
/// and an audience in common with the API audiences. Then call [`check_token_objects`].
pub fn verify_service_account_token(
    config: &ServiceAccountTokenConfig,
    keys: &[VerifyingKey],
    token: &str,
    now: Timestamp,
) -> Result<ServiceAccountClaims, ServiceAccountTokenError> {
    let unverified =
        jwt::unverified_claims(token).map_err(|_| ServiceAccountTokenError::NotOurs)?;
    if unverified.get("iss").and_then(Value::as_str) != Some(config.issuer.as_str()) {
        return Err(ServiceAccountTokenError::NotOurs);
    }
    let claims = jwt::verify(token, keys)?;
    let now_s = now.as_second();
    let leeway = LEEWAY.as_secs();
    let exp = time_claim(&claims, "exp")?;
    if let Some(exp) = exp
        && now_s >= exp.saturating_add(leeway)
    {
        return Err(ServiceAccountTokenError::Expired);
    }
    if let Some(nbf) = time_claim(&claims, "nbf")?
        && now_s.saturating_add(leeway) < nbf
    {
        return Err(ServiceAccountTokenError::NotYetValid);
    }
    if let Some(iat) = time_claim(&claims, "iat")?
        && now_s.saturating_add(leeway) < iat
    {
        return Err(ServiceAccountTokenError::IssuedInFuture);
    }
    let audiences: Vec<String> = match claims.get("aud") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let token_auds = if audiences.is_empty() {
        config.api_audiences.clone()
    } else {
        audiences.clone()
    };
    if !config.api_audiences.is_empty()
        && !token_auds.iter().any(|a| config.api_audiences.contains(a))
    {
        return Err(ServiceAccountTokenError::Audience {
            token: token_auds,
            api: config.api_audiences.clone(),
        });
    }
    let namespace = str_claim(&claims, "/kubernetes.io/namespace")?;
    let name = str_claim(&claims, "/kubernetes.io/serviceaccount/name")?;
    let uid = str_claim(&claims, "/kubernetes.io/serviceaccount/uid")?;
    let sub = str_claim(&claims, "/sub")?;
    if sub != ocm_apiserver_rbac::service_account_username(&namespace, &name) {
        return Err(ServiceAccountTokenError::Claims(
            "sub does not name the service account".into(),
        ));
    }
    let mut bound = None;
    for (claim, kind) in [("pod", "Pod"), ("secret", "Secret"), ("node", "Node")] {
        if claims.pointer(&format!("/kubernetes.io/{claim}")).is_some() {
            bound = Some((
                kind.to_owned(),
                str_claim(&claims, &format!("/kubernetes.io/{claim}/name"))?,
                str_claim(&claims, &format!("/kubernetes.io/{claim}/uid"))?,
            ));
            break;
        }
    }
    Ok(ServiceAccountClaims {
        namespace,
        name,
        uid,
        jti: claims
            .get("jti")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        audiences,
        expires_at: exp.unwrap_or(i64::MAX),
        bound,
    })
}

/// Whether an object is being deleted for longer than the one-minute grace kube allows.
fn deleted_before_grace(obj: &Value, now: Timestamp) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<Timestamp>().ok())
        .is_some_and(|t| t.as_second() < now.as_second() - LEEWAY.as_secs())
}

/// The second half of verification: the service account (`None`: not found) must still exist
/// with the token's UID, and so must the bound object (looked up by the caller from
/// [`ServiceAccountClaims::bound`]). Returns the identity.
pub fn check_token_objects(
    claims: &ServiceAccountClaims,
    service_account: Option<&Value>,
    bound: Option<&Value>,
    now: Timestamp,
) -> Result<Identity, ServiceAccountTokenError> {
    let sa_ref = format!("{}/{}", claims.namespace, claims.name);
    let sa = service_account.ok_or_else(|| {
        ServiceAccountTokenError::Revoked(format!(
            "serviceaccounts {} not found",
            go_quote(&claims.name)
        ))
    })?;
    if deleted_before_grace(sa, now) {
        return Err(ServiceAccountTokenError::Revoked(format!(
            "service account {sa_ref} has been deleted"
        )));
    }
    let uid = meta(sa, "uid");
    if uid != claims.uid {
        return Err(ServiceAccountTokenError::Revoked(format!(
            "service account UID ({uid}) does not match claim ({})",
            claims.uid
        )));
    }
    if let Some((kind, name, want_uid)) = &claims.bound {
        let lower = kind.to_lowercase();
        let obj = bound.ok_or_else(|| {
            ServiceAccountTokenError::Revoked(format!("{lower}s {} not found", go_quote(name)))
        })?;
        if deleted_before_grace(obj, now) {
            return Err(ServiceAccountTokenError::Revoked(
                "service account token has been invalidated".into(),
            ));
        }
        let got = meta(obj, "uid");
        if got != want_uid {
            return Err(ServiceAccountTokenError::Revoked(format!(
                "{lower} UID ({got}) does not match service account {lower} ref claim ({want_uid})"
            )));
        }
    }
    Ok(claims.identity())
}
