//! Certificate signing requests: parsing as kube-apiserver validates `spec.request`, and
//! signing as kube-controller-manager's `csrsigning` controller does for the
//! `kubernetes.io/kube-apiserver-client` signer.

use jiff::{SignedDuration, Timestamp};
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::FromDer;

use super::ca::CertificateAuthority;
use super::cert::{self, CertSpec, ExtKeyUsage, San, Subject, key_usage};

/// The signer for client certificates the API server accepts.
pub const KUBE_APISERVER_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";

/// kube-controller-manager's default `--cluster-signing-duration` (one year).
pub const DEFAULT_MAX_DURATION: SignedDuration = SignedDuration::from_hours(8760);

/// How far back `notBefore` is set, to tolerate clock skew.
pub const BACKDATE: SignedDuration = SignedDuration::from_mins(5);

/// Certificates shorter than this are not backdated at their end.
pub const SHORT: SignedDuration = SignedDuration::from_hours(8);

/// The shortest validity a requester can ask for through `expirationSeconds`.
pub const MIN_DURATION: SignedDuration = SignedDuration::from_mins(10);

/// A CSR that cannot be used; the message is what kube reports (in a 422 for `spec.request`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CsrError(pub String);

/// What a signed CSR asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedCsr {
    /// The subject Name, DER, exactly as requested.
    pub subject_der: Vec<u8>,
    /// The (last) subject CN; empty when absent.
    pub common_name: String,
    /// The subject O values, in order.
    pub organizations: Vec<String>,
    /// The requested DNS, IP, e-mail and URI SANs.
    pub sans: Vec<San>,
    /// The requester's public key, DER SubjectPublicKeyInfo.
    pub public_key_spki: Vec<u8>,
}

fn ip_from(octets: &[u8]) -> Option<std::net::IpAddr> {
    match octets.len() {
        4 => <[u8; 4]>::try_from(octets).ok().map(std::net::IpAddr::from),
        16 => <[u8; 16]>::try_from(octets)
            .ok()
            .map(std::net::IpAddr::from),
        _ => None,
    }
}

/// The CN (last one wins, as in Go) and the O values of a Name.
pub fn name_parts(name: &x509_parser::x509::X509Name<'_>) -> Result<(String, Vec<String>), String> {
    let mut cn = String::new();
    for attr in name.iter_common_name() {
        cn = attr.as_str().map_err(|e| format!("x509: {e}"))?.to_owned();
    }
    let mut orgs = Vec::new();
    for attr in name.iter_organization() {
        orgs.push(attr.as_str().map_err(|e| format!("x509: {e}"))?.to_owned());
    }
    Ok((cn, orgs))
}

/// Parses a PEM CSR as kube's `ParseCSR` + `CheckSignature`: the first PEM block must be a
/// `CERTIFICATE REQUEST` whose signature verifies with its own key.
pub fn parse_csr(request_pem: &[u8]) -> Result<ParsedCsr, CsrError> {
    let block = x509_parser::pem::Pem::iter_from_buffer(request_pem)
        .next()
        .and_then(Result::ok)
        .filter(|p| p.label == "CERTIFICATE REQUEST")
        .ok_or_else(|| CsrError("PEM block type must be CERTIFICATE REQUEST".into()))?;
    let (_, csr) = X509CertificationRequest::from_der(&block.contents)
        .map_err(|e| CsrError(format!("x509: malformed certificate request: {e}")))?;
    csr.verify_signature()
        .map_err(|e| CsrError(format!("x509: {e}")))?;
    let info = &csr.certification_request_info;
    let (common_name, organizations) = name_parts(&info.subject).map_err(CsrError)?;
    let mut sans = Vec::new();
    if let Some(exts) = csr.requested_extensions() {
        for ext in exts {
            if let ParsedExtension::SubjectAlternativeName(san) = ext {
                for name in &san.general_names {
                    match name {
                        GeneralName::DNSName(d) => sans.push(San::Dns((*d).to_owned())),
                        GeneralName::RFC822Name(e) => sans.push(San::Email((*e).to_owned())),
                        GeneralName::URI(u) => sans.push(San::Uri((*u).to_owned())),
                        GeneralName::IPAddress(ip) => {
                            let ip = ip_from(ip)
                                .ok_or_else(|| CsrError("x509: cannot parse IP address".into()))?;
                            sans.push(San::Ip(ip));
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    Ok(ParsedCsr {
        subject_der: info.subject.as_raw().to_vec(),
        common_name,
        organizations,
        sans,
        public_key_spki: info.subject_pki.raw.to_vec(),
    })
}

/// Maps CSR `usages` to key usage bits and extended key usages (kube's
/// `keyUsagesFromStrings`); unknown values are an error.
pub fn key_usages(usages: &[String]) -> Result<(u16, Vec<ExtKeyUsage>), String> {
    let mut bits = 0u16;
    let mut ekus: Vec<ExtKeyUsage> = Vec::new();
    let mut unrecognized = Vec::new();
    for u in usages {
        let bit = match u.as_str() {
            "signing" | "digital signature" => Some(key_usage::DIGITAL_SIGNATURE),
            "content commitment" => Some(key_usage::CONTENT_COMMITMENT),
            "key encipherment" => Some(key_usage::KEY_ENCIPHERMENT),
            "key agreement" => Some(key_usage::KEY_AGREEMENT),
            "data encipherment" => Some(key_usage::DATA_ENCIPHERMENT),
            "cert sign" => Some(key_usage::KEY_CERT_SIGN),
            "crl sign" => Some(key_usage::CRL_SIGN),
            "encipher only" => Some(key_usage::ENCIPHER_ONLY),
            "decipher only" => Some(key_usage::DECIPHER_ONLY),
            _ => None,
        };
        let eku = match u.as_str() {
            "any" => Some(ExtKeyUsage::Any),
            "server auth" => Some(ExtKeyUsage::ServerAuth),
            "client auth" => Some(ExtKeyUsage::ClientAuth),
            "code signing" => Some(ExtKeyUsage::CodeSigning),
            "email protection" | "s/mime" => Some(ExtKeyUsage::EmailProtection),
            "ipsec end system" => Some(ExtKeyUsage::IpsecEndSystem),
            "ipsec tunnel" => Some(ExtKeyUsage::IpsecTunnel),
            "ipsec user" => Some(ExtKeyUsage::IpsecUser),
            "timestamping" => Some(ExtKeyUsage::TimeStamping),
            "ocsp signing" => Some(ExtKeyUsage::OcspSigning),
            "microsoft sgc" => Some(ExtKeyUsage::MicrosoftSgc),
            "netscape sgc" => Some(ExtKeyUsage::NetscapeSgc),
            _ => None,
        };
        match (bit, eku) {
            (Some(b), _) => bits |= b,
            (None, Some(e)) => {
                if !ekus.contains(&e) {
                    ekus.push(e);
                }
            }
            (None, None) => unrecognized.push(ocm_apiserver_validation::go_quote(u)),
        }
    }
    if !unrecognized.is_empty() {
        return Err(format!(
            "unrecognized usage values: [{}]",
            unrecognized.join(" ")
        ));
    }
    // Go sorts by its ExtKeyUsage constant, which follows the enum order here.
    ekus.sort_by_key(|e| *e as u8);
    Ok((bits, ekus))
}

/// The usages the `kubernetes.io/kube-apiserver-client` signer accepts: `client auth`,
/// optionally `digital signature` and `key encipherment`. The error is kube's message.
pub fn validate_client_usages(usages: &[String]) -> Result<(), String> {
    let mut client_auth = false;
    for u in usages {
        match u.as_str() {
            "digital signature" | "key encipherment" => {}
            "client auth" => client_auth = true,
            other => return Err(format!("invalid usage for client certificate: {other}")),
        }
    }
    if !client_auth {
        return Err("missing required usage for client certificate: client auth".into());
    }
    Ok(())
}

/// The validity a signer grants: `max` unless `expirationSeconds` asks for less, never less
/// than ten minutes (kube's `signer.duration`).
pub fn signing_duration(expiration_seconds: Option<i64>, max: SignedDuration) -> SignedDuration {
    match expiration_seconds {
        None => max,
        Some(secs) => {
            let requested = SignedDuration::from_secs(secs);
            if requested > max {
                max
            } else if requested < MIN_DURATION {
                MIN_DURATION
            } else {
                requested
            }
        }
    }
}

/// Why a signer did not produce a certificate.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    /// The request is not acceptable for this signer: record a `Failed` condition with this
    /// reason and message (kube: reason `SignerValidationFailure`).
    #[error("{reason}: {message}")]
    Rejected {
        /// The condition reason.
        reason: String,
        /// The condition message.
        message: String,
    },
    /// Signing failed for a reason that may pass (kube logs and retries): unparsable request,
    /// expired CA, crypto failure.
    #[error("{0}")]
    Transient(String),
}

/// Signs a parsed CSR as kube's `PermissiveSigningPolicy` does: subject and SANs from the CSR,
/// key usages from `usages`, not a CA, `notBefore = now - 5m`, `notAfter = now + ttl` (minus
/// the backdate when `ttl >= 8h`), capped at the CA's own expiry. Returns the certificate PEM.
pub fn sign_parsed(
    ca: &CertificateAuthority,
    csr: &ParsedCsr,
    usages: &[String],
    ttl: SignedDuration,
    now: Timestamp,
) -> Result<String, SignError> {
    let (bits, ekus) = key_usages(usages).map_err(SignError::Transient)?;
    let arith = |e: jiff::Error| SignError::Transient(e.to_string());
    let not_before = now.checked_sub(BACKDATE).map_err(arith)?;
    let mut not_after = if ttl < SHORT {
        now.checked_add(ttl).map_err(arith)?
    } else {
        now.checked_add(ttl)
            .map_err(arith)?
            .checked_sub(BACKDATE)
            .map_err(arith)?
    };
    let ca_end = ca.not_after();
    if not_after >= ca_end {
        not_after = ca_end;
    }
    if not_before >= ca_end {
        return Err(SignError::Transient(format!(
            "the signer has expired: NotAfter={ca_end}"
        )));
    }
    if now >= ca_end {
        return Err(SignError::Transient(format!(
            "refusing to sign a certificate that expired in the past: NotAfter={ca_end}"
        )));
    }
    let spec = CertSpec {
        subject: Subject::Raw(csr.subject_der.clone()),
        public_key_spki: csr.public_key_spki.clone(),
        sans: csr.sans.clone(),
        key_usage: bits,
        ext_key_usages: ekus,
        is_ca: false,
        not_before,
        not_after,
    };
    let der = ca
        .sign(&spec)
        .map_err(|e| SignError::Transient(e.to_string()))?;
    Ok(cert::pem("CERTIFICATE", &der))
}

/// The `kubernetes.io/kube-apiserver-client` signer for one approved CSR: `request` is
/// `spec.request` (PEM), `usages` `spec.usages`, `expiration_seconds`
/// `spec.expirationSeconds`; `max_duration` the server's maximum (see
/// [`DEFAULT_MAX_DURATION`]). Disallowed usages give [`SignError::Rejected`] with reason
/// `SignerValidationFailure`.
pub fn sign_kube_apiserver_client(
    ca: &CertificateAuthority,
    request: &[u8],
    usages: &[String],
    expiration_seconds: Option<i64>,
    max_duration: SignedDuration,
    now: Timestamp,
) -> Result<String, SignError> {
    let csr = parse_csr(request)
        .map_err(|e| SignError::Transient(format!("unable to parse csr: {e}")))?;
    validate_client_usages(usages).map_err(|message| SignError::Rejected {
        reason: "SignerValidationFailure".into(),
        message,
    })?;
    let ttl = signing_duration(expiration_seconds, max_duration);
    sign_parsed(ca, &csr, usages, ttl, now)
}
