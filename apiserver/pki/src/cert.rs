//! X.509 certificate building and signing: a TBSCertificate written with a small DER writer, signed
//! with an rcgen [`KeyPair`] (ECDSA P-256/P-384, Ed25519 or RSA-SHA256).

use std::net::IpAddr;

use jiff::Timestamp;
use rcgen::{KeyPair, PublicKeyData, SigningKey};
use ring::rand::{SecureRandom, SystemRandom};

use super::PkiError;
use super::der::{self, oid};

/// Key usage bits (RFC 5280 §4.2.1.3), combined with `|`.
pub mod key_usage {
    /// digitalSignature.
    pub const DIGITAL_SIGNATURE: u16 = 1 << 0;
    /// contentCommitment (nonRepudiation).
    pub const CONTENT_COMMITMENT: u16 = 1 << 1;
    /// keyEncipherment.
    pub const KEY_ENCIPHERMENT: u16 = 1 << 2;
    /// dataEncipherment.
    pub const DATA_ENCIPHERMENT: u16 = 1 << 3;
    /// keyAgreement.
    pub const KEY_AGREEMENT: u16 = 1 << 4;
    /// keyCertSign.
    pub const KEY_CERT_SIGN: u16 = 1 << 5;
    /// cRLSign.
    pub const CRL_SIGN: u16 = 1 << 6;
    /// encipherOnly.
    pub const ENCIPHER_ONLY: u16 = 1 << 7;
    /// decipherOnly.
    pub const DECIPHER_ONLY: u16 = 1 << 8;
}

/// An extended key usage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtKeyUsage {
    /// anyExtendedKeyUsage.
    Any,
    /// TLS server authentication.
    ServerAuth,
    /// TLS client authentication.
    ClientAuth,
    /// Code signing.
    CodeSigning,
    /// E-mail protection (S/MIME).
    EmailProtection,
    /// IPsec end system.
    IpsecEndSystem,
    /// IPsec tunnel.
    IpsecTunnel,
    /// IPsec user.
    IpsecUser,
    /// Time stamping.
    TimeStamping,
    /// OCSP signing.
    OcspSigning,
    /// Microsoft Server Gated Crypto.
    MicrosoftSgc,
    /// Netscape Server Gated Crypto.
    NetscapeSgc,
}

impl ExtKeyUsage {
    fn oid(self) -> Vec<u8> {
        let kp = |n| oid::eku_kp(n).to_vec();
        match self {
            ExtKeyUsage::Any => oid::EKU_ANY.to_vec(),
            ExtKeyUsage::ServerAuth => kp(1),
            ExtKeyUsage::ClientAuth => kp(2),
            ExtKeyUsage::CodeSigning => kp(3),
            ExtKeyUsage::EmailProtection => kp(4),
            ExtKeyUsage::IpsecEndSystem => kp(5),
            ExtKeyUsage::IpsecTunnel => kp(6),
            ExtKeyUsage::IpsecUser => kp(7),
            ExtKeyUsage::TimeStamping => kp(8),
            ExtKeyUsage::OcspSigning => kp(9),
            ExtKeyUsage::MicrosoftSgc => oid::EKU_MS_SGC.to_vec(),
            ExtKeyUsage::NetscapeSgc => oid::EKU_NS_SGC.to_vec(),
        }
    }
}

/// A subject alternative name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum San {
    /// A DNS name.
    Dns(String),
    /// An IP address.
    Ip(IpAddr),
    /// An e-mail address.
    Email(String),
    /// A URI.
    Uri(String),
}

impl San {
    /// An IP SAN when `s` parses as an address, else a DNS SAN.
    pub fn parse(s: &str) -> San {
        match s.parse::<IpAddr>() {
            Ok(ip) => San::Ip(ip),
            Err(_) => San::Dns(s.to_owned()),
        }
    }

    fn encode(&self) -> Vec<u8> {
        match self {
            San::Email(e) => der::implicit(1, e.as_bytes()),
            San::Dns(d) => der::implicit(2, d.as_bytes()),
            San::Uri(u) => der::implicit(6, u.as_bytes()),
            San::Ip(IpAddr::V4(v4)) => der::implicit(7, &v4.octets()),
            San::Ip(IpAddr::V6(v6)) => der::implicit(7, &v6.octets()),
        }
    }
}

/// A certificate subject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subject {
    /// Built from names: one RDN per organization, then the common name (Go's order).
    Names {
        /// CN; omitted when empty.
        common_name: String,
        /// O values, in order.
        organizations: Vec<String>,
    },
    /// An already-encoded Name (e.g. copied from a CSR).
    Raw(Vec<u8>),
}

impl Subject {
    /// `CN=<cn>, O=<orgs...>`.
    pub fn new(common_name: &str, organizations: &[&str]) -> Self {
        Subject::Names {
            common_name: common_name.to_owned(),
            organizations: organizations.iter().map(|o| (*o).to_owned()).collect(),
        }
    }

    /// The DER Name.
    pub fn to_der(&self) -> Vec<u8> {
        match self {
            Subject::Raw(raw) => raw.clone(),
            Subject::Names {
                common_name,
                organizations,
            } => {
                let rdn = |oid: &[u8], value: &str| {
                    let atv = der::seq(&[&der::oid(oid), &der::directory_string(value)]);
                    der::set(&[&atv])
                };
                let mut rdns: Vec<Vec<u8>> = organizations
                    .iter()
                    .map(|o| rdn(oid::ORGANIZATION, o))
                    .collect();
                if !common_name.is_empty() {
                    rdns.push(rdn(oid::COMMON_NAME, common_name));
                }
                let parts: Vec<&[u8]> = rdns.iter().map(Vec::as_slice).collect();
                der::seq(&parts)
            }
        }
    }
}

/// What to put in a certificate.
#[derive(Clone, Debug)]
pub struct CertSpec {
    /// Subject.
    pub subject: Subject,
    /// The subject's public key, DER SubjectPublicKeyInfo.
    pub public_key_spki: Vec<u8>,
    /// Subject alternative names.
    pub sans: Vec<San>,
    /// Key usage bits ([`key_usage`]); 0 omits the extension.
    pub key_usage: u16,
    /// Extended key usages; empty omits the extension.
    pub ext_key_usages: Vec<ExtKeyUsage>,
    /// Whether this is a CA certificate.
    pub is_ca: bool,
    /// Start of validity.
    pub not_before: Timestamp,
    /// End of validity.
    pub not_after: Timestamp,
}

/// The signature AlgorithmIdentifier for a signing key.
fn signature_algorithm(key: &KeyPair) -> Result<Vec<u8>, PkiError> {
    let alg = key.algorithm();
    if alg == &rcgen::PKCS_ECDSA_P256_SHA256 {
        Ok(der::seq(&[&der::oid(oid::ECDSA_SHA256)]))
    } else if alg == &rcgen::PKCS_ECDSA_P384_SHA384 {
        Ok(der::seq(&[&der::oid(oid::ECDSA_SHA384)]))
    } else if alg == &rcgen::PKCS_ED25519 {
        Ok(der::seq(&[&der::oid(oid::ED25519)]))
    } else if alg == &rcgen::PKCS_RSA_SHA256 {
        Ok(der::seq(&[&der::oid(oid::RSA_SHA256), &der::null()]))
    } else {
        Err(PkiError::UnsupportedKey(format!("{alg:?}")))
    }
}

/// A key identifier for a public key: the first 20 bytes of SHA-256 over the key bits.
pub fn key_identifier(key: &impl PublicKeyData) -> Vec<u8> {
    let digest = ring::digest::digest(&ring::digest::SHA256, key.der_bytes());
    digest.as_ref()[..20].to_vec()
}

/// A random positive serial number below 2^63, never zero.
fn serial() -> Result<Vec<u8>, PkiError> {
    let mut bytes = [0u8; 8];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| PkiError::Crypto("no randomness for a serial number".into()))?;
    bytes[0] &= 0x7F;
    if bytes.iter().all(|b| *b == 0) {
        bytes[7] = 1;
    }
    Ok(bytes.to_vec())
}

fn extension(oid: &[u8], critical: bool, value: &[u8]) -> Vec<u8> {
    if critical {
        der::seq(&[
            &der::oid(oid),
            &der::boolean(true),
            &der::octet_string(value),
        ])
    } else {
        der::seq(&[&der::oid(oid), &der::octet_string(value)])
    }
}

/// The issuer of a certificate: its Name, key and key identifier.
pub struct IssuerRef<'a> {
    /// The issuer's DER Name.
    pub name_der: &'a [u8],
    /// The issuer's private key.
    pub key: &'a KeyPair,
    /// The issuer's subject key identifier, copied into the authority key identifier.
    pub key_id: Option<&'a [u8]>,
}

/// Builds and signs a certificate; returns its DER.
pub fn sign(spec: &CertSpec, issuer: &IssuerRef<'_>) -> Result<Vec<u8>, PkiError> {
    let sig_alg = signature_algorithm(issuer.key)?;
    let mut extensions: Vec<Vec<u8>> = Vec::new();
    if spec.key_usage != 0 {
        extensions.push(extension(
            oid::KEY_USAGE,
            true,
            &der::named_bits(spec.key_usage),
        ));
    }
    if !spec.ext_key_usages.is_empty() {
        let oids: Vec<Vec<u8>> = spec
            .ext_key_usages
            .iter()
            .map(|e| der::oid(&e.oid()))
            .collect();
        let parts: Vec<&[u8]> = oids.iter().map(Vec::as_slice).collect();
        extensions.push(extension(oid::EXT_KEY_USAGE, false, &der::seq(&parts)));
    }
    let basic = if spec.is_ca {
        der::seq(&[&der::boolean(true)])
    } else {
        der::seq(&[])
    };
    extensions.push(extension(oid::BASIC_CONSTRAINTS, true, &basic));
    if spec.is_ca {
        let spki_key = rcgen::SubjectPublicKeyInfo::from_der(&spec.public_key_spki)
            .map_err(|e| PkiError::Parse(format!("public key: {e}")))?;
        let ski = key_identifier(&spki_key);
        extensions.push(extension(
            oid::SUBJECT_KEY_ID,
            false,
            &der::octet_string(&ski),
        ));
    }
    if let Some(kid) = issuer.key_id {
        let aki = der::seq(&[&der::implicit(0, kid)]);
        extensions.push(extension(oid::AUTHORITY_KEY_ID, false, &aki));
    }
    if !spec.sans.is_empty() {
        let names: Vec<Vec<u8>> = spec.sans.iter().map(San::encode).collect();
        let parts: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
        let subject = spec.subject.to_der();
        // The SAN extension is critical when the subject is empty (RFC 5280 §4.2.1.6).
        let critical = subject.len() <= 2;
        extensions.push(extension(
            oid::SUBJECT_ALT_NAME,
            critical,
            &der::seq(&parts),
        ));
    }
    let ext_parts: Vec<&[u8]> = extensions.iter().map(Vec::as_slice).collect();
    let tbs = der::seq(&[
        &der::explicit(0, &der::uint(&[2])),
        &der::uint(&serial()?),
        &sig_alg,
        issuer.name_der,
        &der::seq(&[&der::time(spec.not_before), &der::time(spec.not_after)]),
        &spec.subject.to_der(),
        &spec.public_key_spki,
        &der::explicit(3, &der::seq(&ext_parts)),
    ]);
    let signature = issuer
        .key
        .sign(&tbs)
        .map_err(|e| PkiError::Crypto(e.to_string()))?;
    Ok(der::seq(&[&tbs, &sig_alg, &der::bit_string(&signature)]))
}

/// PEM text of one DER block with `label` (64-column base64, LF line endings).
pub fn pem(label: &str, der: &[u8]) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// Every PEM block of `label` in `text`, decoded (other blocks and text are skipped).
pub fn pem_blocks(text: &[u8], label: &str) -> Vec<Vec<u8>> {
    x509_parser::pem::Pem::iter_from_buffer(text)
        .map_while(Result::ok)
        .filter(|p| p.label == label)
        .map(|p| p.contents)
        .collect()
}
