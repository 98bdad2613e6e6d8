//! Bootstrap tokens and service-account tokens (TokenRequest issue and verification).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use base64::Engine as _;
use jiff::Timestamp;
use ocm_apiserver::Identity;
use ocm_apiserver::tokens::authenticate_bootstrap_token as auth_bootstrap;
use ocm_apiserver::tokens::{
    BearerKind, BootstrapTokenError, JwtError, ServiceAccountTokenConfig, ServiceAccountTokenError,
    SigningKey, check_token_objects, classify_bearer, issue_token, load_or_generate_signing_key,
    parse_token_request, verify_service_account_token,
};
use serde_json::{Value, json};

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn secret(data: &[(&str, &str)]) -> Value {
    let data: serde_json::Map<String, Value> = data
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::String(b64(v))))
        .collect();
    json!({"apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
           "metadata": {"name": "bootstrap-token-abcdef", "namespace": "kube-system"},
           "data": data})
}

const TOKEN: &str = "abcdef.0123456789abcdef";

fn good_secret() -> Value {
    secret(&[
        ("token-id", "abcdef"),
        ("token-secret", "0123456789abcdef"),
        ("expiration", "2099-01-01T00:00:00Z"),
        ("usage-bootstrap-authentication", "true"),
        ("usage-bootstrap-signing", "true"),
        (
            "auth-extra-groups",
            "system:bootstrappers:managedcluster,system:bootstrappers:a-b:c1",
        ),
    ])
}

#[test]
fn bootstrap_token_cases() {
    let now = Timestamp::now();
    let id = auth_bootstrap(TOKEN, Some(&good_secret()), now).expect("authenticates");
    assert_eq!(
        id,
        Identity {
            user: "system:bootstrap:abcdef".into(),
            groups: vec![
                "system:bootstrappers".into(),
                "system:bootstrappers:a-b:c1".into(),
                "system:bootstrappers:managedcluster".into(),
                "system:authenticated".into(),
            ],
            ..Default::default()
        }
    );

    let with = |k: &str, v: Option<&str>| {
        let mut s = good_secret();
        match v {
            Some(v) => s["data"][k] = Value::String(b64(v)),
            None => {
                s["data"].as_object_mut().expect("data").remove(k);
            }
        }
        s
    };
    let cases: Vec<(&str, &str, Option<Value>, BootstrapTokenError)> = vec![
        (
            "expired",
            TOKEN,
            Some(with("expiration", Some("2000-01-01T00:00:00Z"))),
            BootstrapTokenError::Expired,
        ),
        (
            "unparsable expiration",
            TOKEN,
            Some(with("expiration", Some("tomorrow"))),
            BootstrapTokenError::Expired,
        ),
        (
            "wrong secret",
            "abcdef.0123456789abcdee",
            Some(good_secret()),
            BootstrapTokenError::WrongSecret,
        ),
        (
            "missing usage",
            TOKEN,
            Some(with("usage-bootstrap-authentication", None)),
            BootstrapTokenError::NotForAuthentication,
        ),
        (
            "usage not true",
            TOKEN,
            Some(with("usage-bootstrap-authentication", Some("yes"))),
            BootstrapTokenError::NotForAuthentication,
        ),
        (
            "id mismatch",
            TOKEN,
            Some(with("token-id", Some("zzzzzz"))),
            BootstrapTokenError::WrongId,
        ),
        (
            "not found",
            TOKEN,
            None,
            BootstrapTokenError::NotFound("bootstrap-token-abcdef".into()),
        ),
        (
            "malformed: uppercase",
            "ABCDEF.0123456789abcdef",
            Some(good_secret()),
            BootstrapTokenError::Malformed,
        ),
        (
            "malformed: short secret",
            "abcdef.0123456789",
            Some(good_secret()),
            BootstrapTokenError::Malformed,
        ),
        (
            "malformed: no dot",
            "abcdef0123456789abcdef",
            Some(good_secret()),
            BootstrapTokenError::Malformed,
        ),
        (
            "malformed: extra part",
            "abcdef.0123456789abcdef.x",
            Some(good_secret()),
            BootstrapTokenError::Malformed,
        ),
    ];
    for (what, token, secret, want) in cases {
        assert_eq!(
            auth_bootstrap(token, secret.as_ref(), now),
            Err(want),
            "{what}"
        );
    }

    // A group outside system:bootstrappers:*.
    let err = auth_bootstrap(
        TOKEN,
        Some(&with("auth-extra-groups", Some("system:masters"))),
        now,
    )
    .expect_err("refused");
    assert!(
        matches!(err, BootstrapTokenError::InvalidGroup(ref m) if m.contains("\"system:masters\"")),
        "{err}"
    );
    assert!(matches!(
        auth_bootstrap(
            TOKEN,
            Some(&with("auth-extra-groups", Some("system:bootstrappers:"))),
            now
        ),
        Err(BootstrapTokenError::InvalidGroup(_))
    ));
    // Wrong type, no data, being deleted.
    let mut s = good_secret();
    s["type"] = json!("Opaque");
    assert_eq!(
        auth_bootstrap(TOKEN, Some(&s), now),
        Err(BootstrapTokenError::WrongType)
    );
    let mut s = good_secret();
    s.as_object_mut().expect("obj").remove("data");
    assert_eq!(
        auth_bootstrap(TOKEN, Some(&s), now),
        Err(BootstrapTokenError::WrongType)
    );
    let mut s = good_secret();
    s["metadata"]["deletionTimestamp"] = json!("2020-01-01T00:00:00Z");
    assert_eq!(
        auth_bootstrap(TOKEN, Some(&s), now),
        Err(BootstrapTokenError::Deleted)
    );
    // No expiration: never expires. No extra groups: just the default group.
    let s = with("expiration", None);
    assert!(auth_bootstrap(TOKEN, Some(&s), now).is_ok());
    let s = with("auth-extra-groups", None);
    assert_eq!(
        auth_bootstrap(TOKEN, Some(&s), now).expect("ok").groups,
        ["system:bootstrappers", "system:authenticated"]
    );
    // Expiry is exclusive: at the instant it is expired.
    let at: Timestamp = "2099-01-01T00:00:00Z".parse().expect("ts");
    assert_eq!(
        auth_bootstrap(TOKEN, Some(&good_secret()), at),
        Err(BootstrapTokenError::Expired)
    );
}

#[test]
fn bearer_classification() {
    assert!(matches!(classify_bearer(TOKEN), BearerKind::Bootstrap(t) if t.id == "abcdef"));
    let key = SigningKey::generate().expect("key");
    let jwt = key.sign(&json!({"iss": "x"})).expect("jwt");
    assert_eq!(classify_bearer(&jwt), BearerKind::Jwt);
    assert_eq!(classify_bearer("opaque-token"), BearerKind::Unknown);
    assert_eq!(classify_bearer("a.b.c"), BearerKind::Unknown);
    assert_eq!(classify_bearer(""), BearerKind::Unknown);
}

fn sa(uid: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ServiceAccount",
           "metadata": {"name": "agent", "namespace": "ocm", "uid": uid}})
}

struct Setup {
    config: ServiceAccountTokenConfig,
    key: SigningKey,
    now: Timestamp,
}

fn setup() -> Setup {
    Setup {
        config: ServiceAccountTokenConfig::default(),
        key: SigningKey::generate().expect("key"),
        now: Timestamp::from_second(1_800_000_000).expect("ts"),
    }
}

fn issue(s: &Setup, body: &Value, bound: Option<&Value>) -> (String, Value) {
    let spec = parse_token_request(&s.config, "ocm", "agent", body).expect("valid");
    let issued = issue_token(&s.config, &s.key, &spec, &sa("uid-1"), bound, s.now).expect("issued");
    (issued.token, issued.response)
}

#[test]
fn token_request_round_trip() {
    let s = setup();
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                      "spec": {"audiences": ["https://kubernetes.default.svc.cluster.local", "other"],
                               "expirationSeconds": 7200}});
    let (token, response) = issue(&s, &body, None);
    assert_eq!(response["kind"], "TokenRequest");
    assert_eq!(response["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(response["metadata"]["name"], "agent");
    assert_eq!(response["metadata"]["namespace"], "ocm");
    assert_eq!(
        response["metadata"]["creationTimestamp"],
        "2027-01-15T08:00:00Z"
    );
    assert_eq!(response["spec"]["expirationSeconds"], 7200);
    assert_eq!(response["spec"]["boundObjectRef"], Value::Null);
    assert_eq!(response["status"]["token"], token.as_str());
    assert_eq!(
        response["status"]["expirationTimestamp"],
        "2027-01-15T10:00:00Z"
    );

    let keys = [s.key.verifying_key()];
    let claims = verify_service_account_token(&s.config, &keys, &token, s.now).expect("valid");
    assert_eq!(
        (
            claims.namespace.as_str(),
            claims.name.as_str(),
            claims.uid.as_str()
        ),
        ("ocm", "agent", "uid-1")
    );
    assert_eq!(claims.expires_at, 1_800_007_200);
    let identity = check_token_objects(&claims, Some(&sa("uid-1")), None, s.now).expect("identity");
    assert_eq!(
        identity,
        Identity {
            user: "system:serviceaccount:ocm:agent".into(),
            groups: vec![
                "system:serviceaccounts".into(),
                "system:serviceaccounts:ocm".into(),
                "system:authenticated".into()
            ],
            uid: "uid-1".into(),
            extra: claims.extra().into_iter().collect(),
        }
    );
    assert_eq!(
        claims.extra()[0].0,
        "authentication.kubernetes.io/credential-id"
    );
    assert!(claims.extra()[0].1[0].starts_with("JTI="));

    // The claims carry kube's shape.
    let payload = token.split('.').nth(1).expect("payload");
    let payload: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .expect("b64"),
    )
    .expect("json");
    assert_eq!(payload["sub"], "system:serviceaccount:ocm:agent");
    assert_eq!(
        payload["kubernetes.io"]["serviceaccount"],
        json!({"name": "agent", "uid": "uid-1"})
    );
    assert_eq!(payload["iat"], payload["nbf"]);
    let header = token.split('.').next().expect("header");
    let header: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(header)
            .expect("b64"),
    )
    .expect("json");
    assert_eq!(header, json!({"alg": "ES256", "kid": s.key.kid()}));
}

#[test]
fn token_verification_failures() {
    let s = setup();
    let (token, _) = issue(&s, &json!({"spec": {}}), None);
    let keys = [s.key.verifying_key()];
    let verify = |t: &str, now: Timestamp| verify_service_account_token(&s.config, &keys, t, now);
    let secs = |n: i64| Timestamp::from_second(1_800_000_000 + n).expect("ts");

    // Default expiration is an hour; a minute of leeway on both sides.
    assert!(verify(&token, secs(3600 + 59)).is_ok());
    assert_eq!(
        verify(&token, secs(3600 + 60)),
        Err(ServiceAccountTokenError::Expired)
    );
    assert!(verify(&token, secs(-60)).is_ok());
    assert_eq!(
        verify(&token, secs(-61)),
        Err(ServiceAccountTokenError::NotYetValid)
    );

    // Tampered payload, tampered signature, another key.
    let parts: Vec<&str> = token.split('.').collect();
    let evil_claims = {
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(parts[1])
            .expect("b64");
        let mut v: Value = serde_json::from_slice(&raw).expect("json");
        v["kubernetes.io"]["serviceaccount"]["name"] = json!("admin");
        v["sub"] = json!("system:serviceaccount:ocm:admin");
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let tampered = format!("{}.{}.{}", parts[0], evil_claims, parts[2]);
    assert_eq!(
        verify(&tampered, s.now),
        Err(ServiceAccountTokenError::Jwt(JwtError::Signature))
    );
    let mut sig = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(parts[2])
        .expect("b64");
    sig[0] ^= 1;
    let bad_sig = format!(
        "{}.{}.{}",
        parts[0],
        parts[1],
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&sig)
    );
    assert_eq!(
        verify(&bad_sig, s.now),
        Err(ServiceAccountTokenError::Jwt(JwtError::Signature))
    );
    let other = SigningKey::generate().expect("key");
    assert_eq!(
        verify_service_account_token(&s.config, &[other.verifying_key()], &token, s.now),
        Err(ServiceAccountTokenError::Jwt(JwtError::Signature))
    );
    // alg=none with the original payload.
    let none_header = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#);
    let unsigned = format!("{none_header}.{}.", parts[1]);
    assert_eq!(
        verify(&unsigned, s.now),
        Err(ServiceAccountTokenError::Jwt(JwtError::Algorithm(
            "none".into()
        )))
    );

    // Wrong audience.
    let (aud_token, _) = issue(&s, &json!({"spec": {"audiences": ["vault"]}}), None);
    assert!(matches!(
        verify(&aud_token, s.now),
        Err(ServiceAccountTokenError::Audience { .. })
    ));
    // Another issuer's token is not ours (other authenticators may try it).
    let foreign = s
        .key
        .sign(&json!({"iss": "https://elsewhere", "sub": "x"}))
        .expect("jwt");
    assert_eq!(
        verify(&foreign, s.now),
        Err(ServiceAccountTokenError::NotOurs)
    );
    assert_eq!(
        verify("garbage", s.now),
        Err(ServiceAccountTokenError::NotOurs)
    );

    // Deleted or recreated service account.
    let claims = verify(&token, s.now).expect("valid");
    assert!(matches!(
        check_token_objects(&claims, None, None, s.now),
        Err(ServiceAccountTokenError::Revoked(_))
    ));
    let err = check_token_objects(&claims, Some(&sa("uid-2")), None, s.now).expect_err("recreated");
    assert_eq!(
        err,
        ServiceAccountTokenError::Revoked(
            "service account UID (uid-2) does not match claim (uid-1)".into()
        )
    );
    let mut deleting = sa("uid-1");
    deleting["metadata"]["deletionTimestamp"] = json!("2027-01-15T07:58:00Z");
    assert!(check_token_objects(&claims, Some(&deleting), None, s.now).is_err());
    // Within the minute of grace the deleting account still works.
    deleting["metadata"]["deletionTimestamp"] = json!("2027-01-15T07:59:30Z");
    assert!(check_token_objects(&claims, Some(&deleting), None, s.now).is_ok());
}

#[test]
fn bound_tokens_follow_their_object() {
    let s = setup();
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bound", "namespace": "ocm", "uid": "sec-1"}});
    let body = json!({"spec": {"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "bound", "uid": "sec-1"}}});
    let spec = parse_token_request(&s.config, "ocm", "agent", &body).expect("valid");
    let bound_ref = spec.bound_object_ref.clone().expect("bound");
    assert_eq!(
        (bound_ref.resource(), bound_ref.namespaced()),
        ("secrets", true)
    );
    let issued =
        issue_token(&s.config, &s.key, &spec, &sa("uid-1"), Some(&secret), s.now).expect("issued");
    assert_eq!(issued.response["spec"]["boundObjectRef"]["name"], "bound");
    let claims =
        verify_service_account_token(&s.config, &[s.key.verifying_key()], &issued.token, s.now)
            .expect("valid");
    assert_eq!(
        claims.bound,
        Some(("Secret".into(), "bound".into(), "sec-1".into()))
    );
    assert!(check_token_objects(&claims, Some(&sa("uid-1")), Some(&secret), s.now).is_ok());
    assert!(check_token_objects(&claims, Some(&sa("uid-1")), None, s.now).is_err());
    let recreated = json!({"metadata": {"name": "bound", "uid": "sec-2"}});
    assert!(check_token_objects(&claims, Some(&sa("uid-1")), Some(&recreated), s.now).is_err());

    // The request's UID must match the object.
    let err = issue_token(
        &s.config,
        &s.key,
        &spec,
        &sa("uid-1"),
        Some(&recreated),
        s.now,
    )
    .expect_err("conflict");
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on Secret \"bound\": the UID in the bound object reference (sec-1) does not match the UID in record. The object might have been deleted and then recreated"
    );
    // A pod must run as the service account.
    let pod_body =
        json!({"spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p"}}});
    let pod_spec = parse_token_request(&s.config, "ocm", "agent", &pod_body).expect("valid");
    let pod = json!({"metadata": {"name": "p", "uid": "pod-1"}, "spec": {"serviceAccountName": "default"}});
    let err = issue_token(
        &s.config,
        &s.key,
        &pod_spec,
        &sa("uid-1"),
        Some(&pod),
        s.now,
    )
    .expect_err("bad");
    assert_eq!(err.code, 400);
    assert_eq!(
        err.message,
        "cannot bind token for serviceaccount \"agent\" to pod running with different serviceaccount name."
    );
    let pod =
        json!({"metadata": {"name": "p", "uid": "pod-1"}, "spec": {"serviceAccountName": "agent"}});
    let issued = issue_token(
        &s.config,
        &s.key,
        &pod_spec,
        &sa("uid-1"),
        Some(&pod),
        s.now,
    )
    .expect("ok");
    let claims =
        verify_service_account_token(&s.config, &[s.key.verifying_key()], &issued.token, s.now)
            .expect("valid");
    let extra = claims.extra();
    assert!(extra.contains(&(
        "authentication.kubernetes.io/pod-name".into(),
        vec!["p".into()]
    )));
    // Unsupported kinds.
    let cm =
        json!({"spec": {"boundObjectRef": {"kind": "ConfigMap", "apiVersion": "v1", "name": "c"}}});
    let err = parse_token_request(&s.config, "ocm", "agent", &cm).expect_err("bad");
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            400,
            "cannot bind token to object of type /v1, Kind=ConfigMap"
        )
    );
}

#[test]
fn token_request_validation() {
    let config = ServiceAccountTokenConfig {
        max_expiration_seconds: Some(86400),
        ..ServiceAccountTokenConfig::default()
    };
    let err = parse_token_request(
        &config,
        "ocm",
        "agent",
        &json!({"spec": {"expirationSeconds": 300}}),
    )
    .expect_err("short");
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "TokenRequest.authentication.k8s.io \"agent\" is invalid: spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes"
    );
    let err = parse_token_request(
        &config,
        "ocm",
        "agent",
        &json!({"spec": {"expirationSeconds": 4294967297_i64}}),
    )
    .expect_err("long");
    assert!(
        err.message
            .ends_with("may not specify a duration larger than 2^32 seconds")
    );
    let err = parse_token_request(
        &config,
        "ocm",
        "agent",
        &json!({"metadata": {"name": "other"}, "spec": {}}),
    )
    .expect_err("name");
    assert_eq!(
        err.message,
        "TokenRequest.authentication.k8s.io \"agent\" is invalid: metadata.name: Invalid value: \"other\": must match the service account name if specified"
    );
    let spec = parse_token_request(
        &config,
        "ocm",
        "agent",
        &json!({"spec": {"expirationSeconds": 172800}}),
    )
    .expect("ok");
    assert_eq!(spec.expiration_seconds, 86400);
    assert_eq!(
        spec.warnings,
        ["requested expiration of 172800 seconds shortened to 86400 seconds"]
    );
    assert_eq!(
        spec.audiences,
        ["https://kubernetes.default.svc.cluster.local"]
    );
    let spec = parse_token_request(&config, "ocm", "agent", &json!({})).expect("ok");
    assert_eq!(spec.expiration_seconds, 3600);
}

#[test]
fn signing_key_is_persisted_privately() {
    let dir = tempfile::tempdir().expect("tmp");
    let key = load_or_generate_signing_key(dir.path()).expect("key");
    let again = load_or_generate_signing_key(dir.path()).expect("key");
    assert_eq!(key.kid(), again.kid());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(dir.path().join("service-account.key"))
            .expect("file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // Tokens from the first survive a restart.
    let token = key.sign(&json!({"x": 1})).expect("jwt");
    assert!(ocm_apiserver::tokens::jwt::verify(&token, &[again.verifying_key()]).is_ok());
}
