//! Random input at every security entry point: certificate and CSR parsing, token parsing and
//! verification, the authorizer, access reviews and escalation checks. Nothing may panic.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::OnceLock;

use jiff::{SignedDuration, Timestamp};
use ocm_apiserver::Identity;
use ocm_apiserver::pki::{ClientCaBundle, authenticate_client_chain};
use ocm_apiserver::request_info::request_attributes;
use ocm_apiserver::tokens::{
    ServiceAccountTokenConfig, SigningKey, authenticate_bootstrap_token, classify_bearer,
    issue_token, jwt, parse_token_request, verify_service_account_token,
};
use ocm_apiserver_pki::{
    CertificateAuthority, DEFAULT_MAX_DURATION, cert::pem_blocks, parse_csr,
    sign_kube_apiserver_client,
};
use ocm_apiserver_rbac::{
    Attributes, Forbidden, Policy, RbacWrite, ResourceAttributes, Target, check_escalation,
    local_subject_access_review, self_subject_access_review, self_subject_rules_review,
    subject_access_review,
};
use proptest::prelude::*;
use serde_json::{Value, json};

struct Fixtures {
    ca: CertificateAuthority,
    bundle: ClientCaBundle,
    client_der: Vec<u8>,
    csr_pem: String,
    key: SigningKey,
    token: String,
    policy: Policy,
}

fn fixtures() -> &'static Fixtures {
    static F: OnceLock<Fixtures> = OnceLock::new();
    F.get_or_init(|| {
        let now = Timestamp::now();
        let ca = CertificateAuthority::generate("fuzz", now, SignedDuration::from_hours(24))
            .expect("ca");
        let bundle = ClientCaBundle::from_pem(ca.cert_pem());
        let client = ca
            .issue_client("u", &["g"], now, SignedDuration::from_hours(1))
            .expect("cert");
        let client_der = pem_blocks(client.cert_pem.as_bytes(), "CERTIFICATE").remove(0);
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key");
        let mut params = rcgen::CertificateParams::default();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "fuzz");
        let csr_pem = params
            .serialize_request(&key)
            .expect("csr")
            .pem()
            .expect("pem");
        let signing = SigningKey::generate().expect("key");
        let config = ServiceAccountTokenConfig::default();
        let spec = parse_token_request(&config, "ns", "sa", &json!({})).expect("spec");
        let sa = json!({"metadata": {"name": "sa", "namespace": "ns", "uid": "u1"}});
        let token = issue_token(&config, &signing, &spec, &sa, None, now)
            .expect("token")
            .token;
        Fixtures {
            ca,
            bundle,
            client_der,
            csr_pem,
            key: signing,
            token,
            policy: Policy::bootstrap(),
        }
    })
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-zA-Z0-9:/*._-]{0,12}".prop_map(Value::String),
        prop::sample::select(vec![
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "Role",
            "RoleBinding",
            "ClusterRoleBinding",
            "User",
            "Group",
            "ServiceAccount",
            "*",
            "",
            "get",
            "resourceAttributes",
            "nonResourceAttributes",
            "Pod",
            "Secret",
            "v1",
        ])
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop::sample::select(vec![
                        "apiVersion",
                        "kind",
                        "metadata",
                        "name",
                        "namespace",
                        "rules",
                        "verbs",
                        "apiGroups",
                        "resources",
                        "resourceNames",
                        "nonResourceURLs",
                        "subjects",
                        "roleRef",
                        "aggregationRule",
                        "clusterRoleSelectors",
                        "matchLabels",
                        "matchExpressions",
                        "spec",
                        "user",
                        "groups",
                        "resourceAttributes",
                        "nonResourceAttributes",
                        "path",
                        "verb",
                        "boundObjectRef",
                        "audiences",
                        "expirationSeconds",
                        "uid",
                        "labels",
                        "data",
                        "type",
                        "deletionTimestamp",
                        "x",
                    ]),
                    inner,
                ),
                0..6,
            )
            .prop_map(|kvs| Value::Object(
                kvs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
            )),
        ]
    })
}

fn identity() -> impl Strategy<Value = Identity> {
    (
        "[a-z:]{0,20}",
        prop::collection::vec(
            prop::sample::select(vec![
                "system:authenticated",
                "system:unauthenticated",
                "system:masters",
                "system:serviceaccounts",
                "g",
                "",
            ]),
            0..3,
        ),
    )
        .prop_map(|(user, groups)| Identity {
            user,
            groups: groups.into_iter().map(str::to_owned).collect(),
            ..Default::default()
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn certificate_parsing_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..600), text in ".{0,300}") {
        let f = fixtures();
        let now = Timestamp::now();
        let _ = authenticate_client_chain(&[&bytes], &f.bundle, now);
        let _ = authenticate_client_chain(&[&f.client_der, &bytes], &f.bundle, now);
        let _ = parse_csr(&bytes);
        let _ = parse_csr(text.as_bytes());
        let wrapped = format!("-----BEGIN CERTIFICATE REQUEST-----\n{text}\n-----END CERTIFICATE REQUEST-----\n");
        let _ = parse_csr(wrapped.as_bytes());
        let _ = ClientCaBundle::from_pem(&text);
        let _ = CertificateAuthority::from_pem(&text, &text);
        let _ = sign_kube_apiserver_client(&f.ca, &bytes, std::slice::from_ref(&text), Some(i64::from(bytes.len() as u32)), DEFAULT_MAX_DURATION, now);
    }

    #[test]
    fn mutated_certificates_and_csrs_never_panic(flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6)) {
        let f = fixtures();
        let now = Timestamp::now();
        let mut der = f.client_der.clone();
        for (i, b) in &flips {
            let at = i.index(der.len());
            der[at] ^= b | 1;
        }
        let result = authenticate_client_chain(&[&der], &f.bundle, now);
        // A changed certificate can never be accepted as is.
        prop_assert!(result.is_err() || der == f.client_der);
        let mut csr = pem_blocks(f.csr_pem.as_bytes(), "CERTIFICATE REQUEST").remove(0);
        for (i, b) in &flips {
            let at = i.index(csr.len());
            csr[at] ^= b | 1;
        }
        let pem = ocm_apiserver_pki::cert::pem("CERTIFICATE REQUEST", &csr);
        let _ = parse_csr(pem.as_bytes());
        let _ = sign_kube_apiserver_client(&f.ca, pem.as_bytes(), &["client auth".to_owned()], None, DEFAULT_MAX_DURATION, now);
    }

    #[test]
    fn token_parsing_never_panics(token in ".{0,80}", secret in json_value(), ts in any::<i64>()) {
        let f = fixtures();
        let now = Timestamp::from_second(ts.rem_euclid(4_000_000_000)).unwrap_or(Timestamp::UNIX_EPOCH);
        let _ = classify_bearer(&token);
        let _ = authenticate_bootstrap_token(&token, Some(&secret), now);
        let _ = authenticate_bootstrap_token("abcdef.0123456789abcdef", Some(&secret), now);
        let config = ServiceAccountTokenConfig::default();
        let keys = [f.key.verifying_key()];
        let _ = verify_service_account_token(&config, &keys, &token, now);
        let _ = jwt::verify(&token, &keys);
        let _ = jwt::unverified_claims(&token);
        let _ = parse_token_request(&config, "ns", "sa", &secret);
        if let Ok(spec) = parse_token_request(&config, "ns", "sa", &secret) {
            let _ = issue_token(&config, &f.key, &spec, &secret, Some(&secret), now);
        }
    }

    #[test]
    fn mutated_tokens_never_verify(at in any::<prop::sample::Index>(), c in "[A-Za-z0-9_.-]") {
        let f = fixtures();
        let mut bytes = f.token.clone().into_bytes();
        let i = at.index(bytes.len());
        let replacement = c.as_bytes()[0];
        prop_assume!(bytes[i] != replacement);
        bytes[i] = replacement;
        let token = String::from_utf8(bytes).unwrap_or_default();
        let result = verify_service_account_token(&ServiceAccountTokenConfig::default(), &[f.key.verifying_key()], &token, Timestamp::now());
        // Non-canonical base64url (changed padding bits) is refused too: any change fails.
        prop_assert!(result.is_err(), "accepted a modified token: {}", token);
    }

    #[test]
    fn authorizer_never_panics(
        user in identity(),
        verb in "[a-z*]{0,8}",
        parts in prop::collection::vec("[a-z/*.:-]{0,10}", 5),
        non_resource in any::<bool>(),
        objects in prop::collection::vec(json_value(), 0..8),
        body in json_value(),
    ) {
        let f = fixtures();
        let mut policy = f.policy.clone();
        for o in &objects {
            let _ = policy.upsert(o);
        }
        let _ = policy.pending_aggregations();
        let target = if non_resource {
            Target::NonResource { path: parts[0].clone() }
        } else {
            Target::Resource(ResourceAttributes {
                namespace: parts[0].clone(),
                group: parts[1].clone(),
                resource: parts[2].clone(),
                subresource: parts[3].clone(),
                name: parts[4].clone(),
                ..ResourceAttributes::default()
            })
        };
        let attrs = Attributes { user: user.clone(), verb, target };
        let decision = policy.authorize(&attrs);
        let _ = Forbidden::for_request(&attrs, &decision.reason).to_api_error().to_status();
        if user.groups.iter().any(|g| g == "system:masters") {
            prop_assert!(decision.allowed);
        }
        let _ = subject_access_review(&policy, &body);
        let _ = self_subject_access_review(&policy, &user, &body);
        let _ = local_subject_access_review(&policy, &parts[0], &body);
        let _ = self_subject_rules_review(&policy, &user, &body);
        for resource in ["roles", "clusterroles", "rolebindings", "clusterrolebindings"] {
            let write = RbacWrite {
                resource,
                namespace: &parts[0],
                request_name: &parts[4],
                object: &body,
                old_object: objects.first(),
            };
            let _ = check_escalation(&policy, &user, &write);
        }
    }
}

proptest! {
    #[test]
    fn request_attributes_never_panic(
        method in prop::sample::select(vec!["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "X"]),
        segments in prop::collection::vec(prop::sample::select(vec![
            "api", "apis", "v1", "apps", "namespaces", "ns", "pods", "watch", "proxy", "status",
            "finalize", "", ".", "..", "%", "x/y",
        ]), 0..8),
        query in "[a-zA-Z=&%.!,0-9]{0,40}",
    ) {
        let path = format!("/{}", segments.join("/"));
        let attrs = request_attributes(Identity::admin(), method, &path, Some(&query));
        prop_assert!(fixtures().policy.allows(&attrs));
        let _ = Forbidden::for_request(&attrs, "");
    }
}
