//! Client certificate of the agent: its subject, key and request generation, and the pure
//! checks deciding whether a certificate is still usable (when it is due for rotation is
//! [`super::rotation`]'s business).

use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair, PKCS_ECDSA_P256_SHA256};

use super::AgentError;

/// Group every managed cluster agent certificate carries.
pub const MANAGED_CLUSTERS_GROUP: &str = "system:open-cluster-management:managed-clusters";

/// Prefix of agent user and group names.
const SUBJECT_PREFIX: &str = "system:open-cluster-management:";

/// Common name of the agent certificate: `system:open-cluster-management:<cluster>:<agent>`.
pub fn common_name(cluster: &str, agent: &str) -> String {
    format!("{SUBJECT_PREFIX}{cluster}:{agent}")
}

/// The cluster's own group: `system:open-cluster-management:<cluster>`.
pub fn cluster_group(cluster: &str) -> String {
    format!("{SUBJECT_PREFIX}{cluster}")
}

/// A fresh ECDSA P-256 key and a PEM certificate request for `cluster`/`agent`.
pub fn new_key_and_request(cluster: &str, agent: &str) -> Result<(KeyPair, String), AgentError> {
    let crypto = |e: rcgen::Error| AgentError::Certificate(e.to_string());
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(crypto)?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name(cluster, agent));
    dn.push(DnType::OrganizationName, cluster_group(cluster));
    // rcgen keeps one value per attribute type; the second O goes in under the same OID
    // (2.5.4.10) spelled as a custom type.
    dn.push(organization_again(), MANAGED_CLUSTERS_GROUP);
    params.distinguished_name = dn;
    let request = params.serialize_request(&key).map_err(crypto)?;
    let pem = request.pem().map_err(crypto)?;
    Ok((key, pem))
}

/// The organizationName attribute type as a distinct rcgen key.
fn organization_again() -> DnType {
    DnType::CustomDnType(vec![2, 5, 4, 10])
}

/// What the agent needs to know about a PEM client certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertInfo {
    /// Subject common name.
    pub common_name: String,
    /// Subject organizations.
    pub organizations: Vec<String>,
    /// Start of validity (Unix seconds).
    pub not_before: i64,
    /// End of validity (Unix seconds).
    pub not_after: i64,
    /// Raw public key bytes (the SubjectPublicKeyInfo bit string).
    pub public_key: Vec<u8>,
}

/// Parses the first certificate of a PEM bundle.
pub fn parse_cert(pem: &[u8]) -> Result<CertInfo, AgentError> {
    let bad = |m: String| AgentError::Certificate(m);
    let (_, block) =
        x509_parser::pem::parse_x509_pem(pem).map_err(|e| bad(format!("not PEM: {e}")))?;
    let cert = block
        .parse_x509()
        .map_err(|e| bad(format!("not an X.509 certificate: {e}")))?;
    let subject = cert.subject();
    let common_name = subject
        .iter_common_name()
        .next()
        .and_then(|a| a.as_str().ok())
        .unwrap_or_default()
        .to_owned();
    let organizations = subject
        .iter_organization()
        .filter_map(|a| a.as_str().ok())
        .map(str::to_owned)
        .collect();
    Ok(CertInfo {
        common_name,
        organizations,
        not_before: cert.validity().not_before.timestamp(),
        not_after: cert.validity().not_after.timestamp(),
        public_key: cert.public_key().subject_public_key.data.to_vec(),
    })
}

/// Whether `cert` was issued for `key`.
pub fn matches_key(cert: &CertInfo, key: &KeyPair) -> bool {
    cert.public_key == key.public_key_raw()
}

/// Why a stored certificate cannot be used, or `None` when it can: it must be issued for
/// `cluster`/`agent` (CN and the cluster group) and be valid at `now` (Unix seconds).
pub fn unusable_reason(cert: &CertInfo, cluster: &str, agent: &str, now: i64) -> Option<String> {
    let cn = common_name(cluster, agent);
    if cert.common_name != cn {
        return Some(format!(
            "certificate is issued to {:?}, not {cn:?}",
            cert.common_name
        ));
    }
    let group = cluster_group(cluster);
    if !cert.organizations.contains(&group) {
        return Some(format!("certificate lacks the group {group:?}"));
    }
    if now >= cert.not_after {
        return Some("certificate has expired".into());
    }
    if now < cert.not_before {
        return Some("certificate is not valid yet".into());
    }
    None
}

/// A random number in `[low, high]` (a rotation threshold).
pub fn random_in(range: (f64, f64)) -> f64 {
    let (low, high) = if range.0 <= range.1 {
        range
    } else {
        (range.1, range.0)
    };
    let mut bytes = [0u8; 4];
    let fraction =
        match ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes) {
            Ok(()) => f64::from(u32::from_le_bytes(bytes)) / f64::from(u32::MAX),
            Err(_) => 0.5,
        };
    low + (high - low) * fraction
}

/// A random string of `len` lowercase letters and digits (agent ids).
pub fn random_name(len: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut bytes = vec![0u8; len];
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes);
    bytes
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect()
}

/// A random version-4 UUID (cluster names when none is given or stored).
pub fn random_uuid() -> String {
    let mut b = [0u8; 16];
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn self_signed(cn: &str, orgs: &[&str], key: &KeyPair, days: u8) -> Vec<u8> {
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, cn);
        dn.push(DnType::OrganizationName, orgs[0]);
        dn.push(organization_again(), orgs[1]);
        params.distinguished_name = dn;
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2020, 1, 1 + days);
        params.self_signed(key).unwrap().pem().into_bytes()
    }

    #[test]
    fn request_carries_the_upstream_subject() {
        let (key, pem) = new_key_and_request("c1", "abcde").unwrap();
        let (_, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).unwrap();
        let (_, csr) = <x509_parser::certification_request::X509CertificationRequest as x509_parser::prelude::FromDer<_>>::from_der(&block.contents).unwrap();
        let subject = &csr.certification_request_info.subject;
        let cn: Vec<_> = subject
            .iter_common_name()
            .map(|a| a.as_str().unwrap())
            .collect();
        let orgs: Vec<_> = subject
            .iter_organization()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(cn, ["system:open-cluster-management:c1:abcde"]);
        assert_eq!(
            orgs,
            [
                "system:open-cluster-management:c1",
                "system:open-cluster-management:managed-clusters"
            ]
        );
        assert!(key.serialize_pem().contains("PRIVATE KEY"));
    }

    #[test]
    fn certificate_checks_subject_expiry_and_key() {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let other = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let pem = self_signed(
            &common_name("c1", "a1"),
            &[&cluster_group("c1"), MANAGED_CLUSTERS_GROUP],
            &key,
            10,
        );
        let info = parse_cert(&pem).unwrap();
        assert!(matches_key(&info, &key));
        assert!(!matches_key(&info, &other));
        let mid = info.not_before + 3600;
        assert_eq!(unusable_reason(&info, "c1", "a1", mid), None);
        assert!(unusable_reason(&info, "c2", "a1", mid).is_some());
        assert!(unusable_reason(&info, "c1", "a2", mid).is_some());
        assert!(
            unusable_reason(&info, "c1", "a1", info.not_after)
                .unwrap()
                .contains("expired")
        );
        assert!(parse_cert(b"garbage").is_err());
    }

    #[test]
    fn random_thresholds_stay_in_their_range() {
        for _ in 0..100 {
            let t = random_in((0.2, 0.25));
            assert!((0.2..=0.25).contains(&t));
        }
        assert_eq!(random_in((0.3, 0.3)), 0.3);
    }

    #[test]
    fn random_names_have_the_requested_shape() {
        let id = random_name(5);
        assert_eq!(id.len(), 5);
        assert!(
            id.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        );
        let uuid = random_uuid();
        assert_eq!(uuid.len(), 36);
        assert_eq!(&uuid[14..15], "4");
    }
}
