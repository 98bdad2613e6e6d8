//! Certificate authorities, CSR signing as the kube-apiserver-client signer, and x509
//! client-certificate authentication.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use ocm_apiserver::Identity;
use ocm_apiserver::pki::{
    CertAuthError, ClientCaBundle, authenticate_client_chain, authenticate_client_chain_for,
};
use ocm_apiserver_pki::{
    CertificateAuthority, DEFAULT_MAX_DURATION, SignError, cert::pem_blocks, parse_csr,
    sign_kube_apiserver_client,
};
use rcgen::{CertificateParams, DnType, KeyPair, SanType};
use x509_parser::prelude::{FromDer, X509Certificate};

fn now() -> Timestamp {
    Timestamp::now()
}

fn ca() -> CertificateAuthority {
    CertificateAuthority::generate(
        "test-client-ca",
        now(),
        SignedDuration::from_hours(24 * 365),
    )
    .expect("ca")
}

/// What an OCM agent sends: P-256 key, CN and two O values (rcgen keeps one value per
/// attribute type, so the second O goes in as a custom type with the O OID).
fn agent_csr(cn: &str, orgs: &[&str], sans: Vec<SanType>) -> (KeyPair, String) {
    let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key");
    let mut params = CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, cn);
    if let Some(first) = orgs.first() {
        params
            .distinguished_name
            .push(DnType::OrganizationName, *first);
    }
    if let Some(second) = orgs.get(1) {
        params
            .distinguished_name
            .push(DnType::CustomDnType(vec![2, 5, 4, 10]), *second);
    }
    params.subject_alt_names = sans;
    let csr = params.serialize_request(&key).expect("csr");
    (key, csr.pem().expect("pem"))
}

fn usages(u: &[&str]) -> Vec<String> {
    u.iter().map(|s| (*s).to_owned()).collect()
}

fn der_of(pem: &str) -> Vec<u8> {
    pem_blocks(pem.as_bytes(), "CERTIFICATE")
        .into_iter()
        .next()
        .expect("a certificate")
}

#[test]
fn csr_round_trip_yields_the_requested_identity() {
    let ca = ca();
    let t = now();
    let cn = "system:open-cluster-management:cluster1:agent1";
    let orgs = [
        "system:open-cluster-management:cluster1",
        "system:open-cluster-management:managed-clusters",
    ];
    let (_key, csr) = agent_csr(cn, &orgs, Vec::new());
    let parsed = parse_csr(csr.as_bytes()).expect("valid csr");
    assert_eq!(parsed.common_name, cn);
    assert_eq!(parsed.organizations, orgs);

    let pem = sign_kube_apiserver_client(
        &ca,
        csr.as_bytes(),
        &usages(&["digital signature", "key encipherment", "client auth"]),
        None,
        DEFAULT_MAX_DURATION,
        t,
    )
    .expect("signed");
    let der = der_of(&pem);
    let (_, cert) = X509Certificate::from_der(&der).expect("parses");
    // Subject copied from the CSR; usages as requested; not a CA; issued by the CA.
    assert_eq!(cert.subject().as_raw(), parsed.subject_der.as_slice());
    let eku = cert
        .extended_key_usage()
        .expect("eku")
        .expect("present")
        .value;
    assert!(eku.client_auth && !eku.server_auth);
    let ku = cert.key_usage().expect("ku").expect("present").value;
    assert!(ku.digital_signature() && ku.key_encipherment() && !ku.key_cert_sign());
    assert!(!cert.is_ca());
    assert_eq!(cert.public_key().raw, parsed.public_key_spki.as_slice());
    // One year (the default maximum), backdated five minutes at both ends.
    let nb = cert.validity().not_before.timestamp();
    let na = cert.validity().not_after.timestamp();
    assert_eq!(nb, t.as_second() - 300);
    assert_eq!(na, t.as_second() + 8760 * 3600 - 300);

    let bundle = ClientCaBundle::from_pem(ca.cert_pem());
    let identity = authenticate_client_chain(&[&der], &bundle, t)
        .expect("verifies")
        .expect("has a CN");
    assert_eq!(
        identity,
        Identity {
            user: cn.into(),
            groups: vec![
                orgs[0].into(),
                orgs[1].into(),
                "system:authenticated".into()
            ],
            ..Default::default()
        }
    );
}

#[test]
fn expiration_seconds_bounds_validity() {
    let ca = ca();
    let t = now();
    let (_k, csr) = agent_csr("u", &[], Vec::new());
    let sign = |secs: Option<i64>, max: SignedDuration| {
        let pem = sign_kube_apiserver_client(
            &ca,
            csr.as_bytes(),
            &usages(&["client auth"]),
            secs,
            max,
            t,
        )
        .expect("signed");
        let der = der_of(&pem);
        let (_, c) = X509Certificate::from_der(&der).expect("cert");
        (
            c.validity().not_before.timestamp(),
            c.validity().not_after.timestamp(),
        )
    };
    let s = t.as_second();
    // Short (< 8h): the end is not backdated.
    assert_eq!(sign(Some(3600), DEFAULT_MAX_DURATION), (s - 300, s + 3600));
    // Below ten minutes: ten minutes.
    assert_eq!(sign(Some(60), DEFAULT_MAX_DURATION), (s - 300, s + 600));
    // Above the server maximum: the maximum.
    assert_eq!(
        sign(Some(10 * 86400), SignedDuration::from_hours(24)),
        (s - 300, s + 86400 - 300)
    );
    // Never beyond the CA.
    let short_ca =
        CertificateAuthority::generate("short", t, SignedDuration::from_hours(2)).expect("ca");
    let pem = sign_kube_apiserver_client(
        &short_ca,
        csr.as_bytes(),
        &usages(&["client auth"]),
        None,
        DEFAULT_MAX_DURATION,
        t,
    )
    .expect("signed");
    let der = der_of(&pem);
    let (_, c) = X509Certificate::from_der(&der).expect("cert");
    assert_eq!(c.validity().not_after.timestamp(), s + 7200);
}

#[test]
fn disallowed_usages_are_rejected_with_a_reason() {
    let ca = ca();
    let (_k, csr) = agent_csr(
        "web",
        &[],
        vec![SanType::DnsName("web.example".try_into().expect("dns"))],
    );
    let cases = [
        (
            vec!["digital signature", "key encipherment", "server auth"],
            "invalid usage for client certificate: server auth",
        ),
        (
            vec!["digital signature"],
            "missing required usage for client certificate: client auth",
        ),
        (
            vec!["client auth", "cert sign"],
            "invalid usage for client certificate: cert sign",
        ),
    ];
    for (u, message) in cases {
        let err = sign_kube_apiserver_client(
            &ca,
            csr.as_bytes(),
            &usages(&u),
            None,
            DEFAULT_MAX_DURATION,
            now(),
        )
        .expect_err("rejected");
        assert_eq!(
            err,
            SignError::Rejected {
                reason: "SignerValidationFailure".into(),
                message: message.into()
            }
        );
    }
}

#[test]
fn sans_are_copied_from_the_csr() {
    let ca = ca();
    let (_k, csr) = agent_csr(
        "u",
        &[],
        vec![
            SanType::DnsName("a.example".try_into().expect("dns")),
            SanType::IpAddress("10.0.0.1".parse().expect("ip")),
        ],
    );
    let pem = sign_kube_apiserver_client(
        &ca,
        csr.as_bytes(),
        &usages(&["client auth"]),
        None,
        DEFAULT_MAX_DURATION,
        now(),
    )
    .expect("signed");
    let der = der_of(&pem);
    let (_, c) = X509Certificate::from_der(&der).expect("cert");
    let san = c
        .subject_alternative_name()
        .expect("san")
        .expect("present")
        .value;
    let names: Vec<String> = san.general_names.iter().map(|g| format!("{g}")).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names[0].contains("a.example"), "{names:?}");
}

#[test]
fn malformed_csrs_are_refused_with_kubes_message() {
    assert_eq!(
        parse_csr(b"not pem").expect_err("bad").0,
        "PEM block type must be CERTIFICATE REQUEST"
    );
    let ca = ca();
    assert_eq!(
        parse_csr(ca.cert_pem().as_bytes()).expect_err("bad").0,
        "PEM block type must be CERTIFICATE REQUEST"
    );
    let garbage = "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n";
    assert!(parse_csr(garbage.as_bytes()).is_err());
    // A tampered request: its signature no longer verifies.
    let (_k, csr) = agent_csr("alice", &["x"], Vec::new());
    let mut der = pem_blocks(csr.as_bytes(), "CERTIFICATE REQUEST").remove(0);
    let pos = der
        .windows(5)
        .position(|w| w == b"alice")
        .expect("cn bytes");
    der[pos] = b'm';
    let tampered = ocm_apiserver_pki::cert::pem("CERTIFICATE REQUEST", &der);
    assert!(parse_csr(tampered.as_bytes()).is_err());
    assert!(matches!(
        sign_kube_apiserver_client(
            &ca,
            tampered.as_bytes(),
            &usages(&["client auth"]),
            None,
            DEFAULT_MAX_DURATION,
            now()
        ),
        Err(SignError::Transient(_))
    ));
}

#[test]
fn client_certificates_are_verified() {
    let ca = ca();
    let other = self::ca();
    let t = now();
    let bundle = ClientCaBundle::from_pem(ca.cert_pem());
    let day = SignedDuration::from_hours(24);

    let good = ca
        .issue_client("admin", &["system:masters"], t, day)
        .expect("cert");
    let der = der_of(&good.cert_pem);
    let id = authenticate_client_chain(&[&der], &bundle, t)
        .expect("ok")
        .expect("cn");
    assert_eq!(id, Identity::admin());

    // Expired and not yet valid.
    let later = t.checked_add(SignedDuration::from_hours(48)).expect("ts");
    assert!(matches!(
        authenticate_client_chain(&[&der], &bundle, later),
        Err(CertAuthError::Expired { .. })
    ));
    let earlier = t.checked_sub(SignedDuration::from_hours(1)).expect("ts");
    assert!(matches!(
        authenticate_client_chain(&[&der], &bundle, earlier),
        Err(CertAuthError::Expired { .. })
    ));

    // Signed by an untrusted CA, or the untrusted CA itself.
    let foreign = other
        .issue_client("admin", &["system:masters"], t, day)
        .expect("cert");
    let foreign_der = der_of(&foreign.cert_pem);
    assert_eq!(
        authenticate_client_chain(&[&foreign_der], &bundle, t),
        Err(CertAuthError::UnknownAuthority)
    );
    // Presenting the foreign CA as an "intermediate" does not help.
    assert_eq!(
        authenticate_client_chain(&[&foreign_der, other.cert_der()], &bundle, t),
        Err(CertAuthError::UnknownAuthority)
    );
    // Trusting both CAs accepts both.
    let mut both = bundle.clone();
    both.push(other.cert_der().to_vec());
    assert!(authenticate_client_chain(&[&foreign_der], &both, t).is_ok());

    // A serving certificate is not a client certificate.
    let serving = ca
        .issue_serving(&["localhost".into()], t, day)
        .expect("cert");
    let serving_der = der_of(&serving.cert_pem);
    assert_eq!(
        authenticate_client_chain(&[&serving_der], &bundle, t),
        Err(CertAuthError::Usage)
    );

    // No CN: not authenticated by x509 (falls through).
    let no_cn = ca.issue_client("", &["g"], t, day).expect("cert");
    assert_eq!(
        authenticate_client_chain(&[&der_of(&no_cn.cert_pem)], &bundle, t),
        Ok(None)
    );

    // O=system:unauthenticated suppresses system:authenticated, as kube's group adder does.
    let odd = ca
        .issue_client("u", &["system:unauthenticated"], t, day)
        .expect("cert");
    let id = authenticate_client_chain(&[&der_of(&odd.cert_pem)], &bundle, t)
        .expect("ok")
        .expect("cn");
    assert_eq!(id.groups, ["system:unauthenticated"]);

    assert_eq!(
        authenticate_client_chain(&[], &bundle, t),
        Err(CertAuthError::Empty)
    );
    assert!(matches!(
        authenticate_client_chain(&[b"junk"], &bundle, t),
        Err(CertAuthError::Malformed(_))
    ));
}

#[test]
fn intermediate_cas_are_followed() {
    let root = self::ca();
    let t = now();
    // An intermediate CA signed by the root.
    let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key");
    let spec = ocm_apiserver_pki::CertSpec {
        subject: ocm_apiserver_pki::Subject::new("intermediate", &[]),
        public_key_spki: rcgen::PublicKeyData::subject_public_key_info(&key),
        sans: Vec::new(),
        key_usage: ocm_apiserver_pki::key_usage::KEY_CERT_SIGN,
        ext_key_usages: Vec::new(),
        is_ca: true,
        not_before: t,
        not_after: t.checked_add(SignedDuration::from_hours(24)).expect("ts"),
    };
    let inter_der = root.sign(&spec).expect("intermediate");
    let inter_pem = ocm_apiserver_pki::cert::pem("CERTIFICATE", &inter_der);
    let inter = CertificateAuthority::from_pem(&inter_pem, &key.serialize_pem()).expect("ca");
    let leaf = inter
        .issue_client("deep", &[], t, SignedDuration::from_hours(1))
        .expect("leaf");
    let leaf_der = der_of(&leaf.cert_pem);
    let bundle = ClientCaBundle::from_pem(root.cert_pem());
    assert_eq!(
        authenticate_client_chain(&[&leaf_der], &bundle, t),
        Err(CertAuthError::UnknownAuthority)
    );
    let id = authenticate_client_chain(&[&leaf_der, &inter_der], &bundle, t)
        .expect("ok")
        .expect("cn");
    assert_eq!(id.user, "deep");
    // The answer holds while every certificate on the path is valid: here until the leaf
    // (one hour) expires, before the intermediate (a day) and the root (a year).
    let (_, valid) =
        authenticate_client_chain_for(&[&leaf_der, &inter_der], &bundle, t).expect("ok");
    let leaf_until = X509Certificate::from_der(&leaf_der)
        .expect("leaf")
        .1
        .validity()
        .not_after
        .timestamp();
    assert_eq!(valid.until.as_second(), leaf_until);
    assert!(valid.contains(t));
    let after = t.checked_add(SignedDuration::from_hours(2)).expect("ts");
    assert!(!valid.contains(after));
}

#[test]
fn ca_material_is_stored_with_private_keys_0600() {
    let dir = tempfile::tempdir().expect("tmp");
    let t = now();
    let ca = CertificateAuthority::load_or_generate(dir.path(), "client-ca", "ocm-client-ca", t)
        .expect("ca");
    let (crt, key) = CertificateAuthority::paths(dir.path(), "client-ca");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&key).expect("key").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    assert!(crt.exists());
    let again =
        CertificateAuthority::load_or_generate(dir.path(), "client-ca", "ignored", t).expect("ca");
    assert_eq!(again.cert_pem(), ca.cert_pem());
    // A client certificate from the reloaded CA verifies against the original bundle.
    let c = again
        .issue_client("u", &[], t, SignedDuration::from_hours(1))
        .expect("cert");
    let bundle = ClientCaBundle::from_pem(ca.cert_pem());
    assert!(authenticate_client_chain(&[&der_of(&c.cert_pem)], &bundle, t).is_ok());
    // Half a pair is an error, a mismatched key too.
    std::fs::remove_file(&key).expect("rm");
    assert!(CertificateAuthority::load(dir.path(), "client-ca").is_err());
    let other = CertificateAuthority::generate("x", t, SignedDuration::from_hours(1)).expect("ca");
    assert!(CertificateAuthority::from_pem(ca.cert_pem(), &other.key_pem()).is_err());
}

#[test]
fn rustls_webpki_accepts_issued_certificates() {
    use rustls::client::danger::ServerCertVerifier as _;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    let ca = ca();
    let t = now();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from(ca.cert_der().to_vec()))
        .expect("root");
    let roots = Arc::new(roots);
    let unix = UnixTime::since_unix_epoch(std::time::Duration::from_secs(t.as_second() as u64));

    let client = ca
        .issue_client(
            "admin",
            &["system:masters", "b"],
            t,
            SignedDuration::from_hours(1),
        )
        .expect("cert");
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        roots.clone(),
        provider.clone(),
    )
    .build()
    .expect("verifier");
    verifier
        .verify_client_cert(&CertificateDer::from(der_of(&client.cert_pem)), &[], unix)
        .expect("client cert accepted by webpki");

    let (_k, csr) = agent_csr("agent", &["o1", "o2"], Vec::new());
    let signed = sign_kube_apiserver_client(
        &ca,
        csr.as_bytes(),
        &usages(&["digital signature", "key encipherment", "client auth"]),
        None,
        DEFAULT_MAX_DURATION,
        t,
    )
    .expect("signed");
    verifier
        .verify_client_cert(&CertificateDer::from(der_of(&signed)), &[], unix)
        .expect("signed CSR accepted by webpki");

    let serving = ca
        .issue_serving(
            &["localhost".into(), "127.0.0.1".into(), "hub.example".into()],
            t,
            SignedDuration::from_hours(1),
        )
        .expect("cert");
    let server_verifier =
        rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider)
            .build()
            .expect("verifier");
    let ee = CertificateDer::from(der_of(&serving.cert_pem));
    for name in ["localhost", "127.0.0.1", "hub.example"] {
        let sn = ServerName::try_from(name).expect("name");
        server_verifier
            .verify_server_cert(&ee, &[], &sn, &[], unix)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let wrong = ServerName::try_from("other.example").expect("name");
    assert!(
        server_verifier
            .verify_server_cert(&ee, &[], &wrong, &[], unix)
            .is_err()
    );
}
