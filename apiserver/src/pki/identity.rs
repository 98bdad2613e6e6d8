//! x509 client-certificate authentication, as kube-apiserver's x509 authenticator does it: the
//! presented chain must verify against the client-CA bundle at the current time (clientAuth
//! usage), then CN is the user and every O a group, plus `system:authenticated`.

use jiff::Timestamp;
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::ParsedExtension;
use x509_parser::prelude::FromDer;

use crate::auth::Identity;
use ocm_apiserver_pki::cert;
use ocm_apiserver_pki::name_parts;

/// The group every authenticated user gets.
pub const AUTHENTICATED: &str = "system:authenticated";
/// The group of anonymous requests.
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The anonymous user.
pub const ANONYMOUS: &str = "system:anonymous";

/// Chains longer than this are refused.
const MAX_DEPTH: usize = 8;

/// Why a presented client certificate was refused (the core answers 401 `Unauthorized`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CertAuthError {
    /// No certificate was presented.
    #[error("no client certificate")]
    Empty,
    /// A certificate does not parse.
    #[error("x509: malformed certificate: {0}")]
    Malformed(String),
    /// The leaf is outside its validity window.
    #[error(
        "x509: certificate has expired or is not yet valid: current time {now} is outside [{not_before}, {not_after}]"
    )]
    Expired {
        /// The time checked.
        now: Timestamp,
        /// Start of validity.
        not_before: Timestamp,
        /// End of validity.
        not_after: Timestamp,
    },
    /// The leaf may not be used for client authentication.
    #[error("x509: certificate specifies an incompatible key usage")]
    Usage,
    /// No path to a trusted CA.
    #[error("x509: certificate signed by unknown authority")]
    UnknownAuthority,
}

/// A client-CA bundle: the trust anchors for client certificates.
#[derive(Clone, Debug, Default)]
pub struct ClientCaBundle {
    roots: Vec<Vec<u8>>,
}

impl ClientCaBundle {
    /// A bundle of every `CERTIFICATE` in the PEM text (unparsable certificates are dropped).
    pub fn from_pem(pem: &str) -> Self {
        let roots = cert::pem_blocks(pem.as_bytes(), "CERTIFICATE")
            .into_iter()
            .filter(|der| X509Certificate::from_der(der).is_ok())
            .collect();
        ClientCaBundle { roots }
    }

    /// A bundle from DER certificates.
    pub fn from_der(roots: Vec<Vec<u8>>) -> Self {
        ClientCaBundle { roots }
    }

    /// Adds a DER certificate.
    pub fn push(&mut self, der: Vec<u8>) {
        self.roots.push(der);
    }

    /// Whether the bundle is empty.
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    /// The bundle as PEM.
    pub fn to_pem(&self) -> String {
        self.roots
            .iter()
            .map(|d| cert::pem("CERTIFICATE", d))
            .collect()
    }
}

fn ts(t: &x509_parser::time::ASN1Time) -> Timestamp {
    Timestamp::from_second(t.timestamp()).unwrap_or(Timestamp::MIN)
}

fn within_validity(c: &X509Certificate<'_>, now: Timestamp) -> Result<(), CertAuthError> {
    let not_before = ts(&c.validity().not_before);
    let not_after = ts(&c.validity().not_after);
    if now < not_before || now > not_after {
        return Err(CertAuthError::Expired {
            now,
            not_before,
            not_after,
        });
    }
    Ok(())
}

/// Whether the certificate's EKU (if any) allows client authentication.
fn allows_client_auth(c: &X509Certificate<'_>) -> bool {
    c.extensions()
        .iter()
        .find_map(|e| match e.parsed_extension() {
            ParsedExtension::ExtendedKeyUsage(eku) => Some(eku.any || eku.client_auth),
            _ => None,
        })
        .unwrap_or(true)
}

/// Parses a DER certificate as strictly as Go's `x509.ParseCertificate`: one complete
/// SEQUENCE and nothing after it, the same signature algorithm inside and outside the signed
/// part, and a signature with no unused bits. The unsigned outer bytes are thus fixed by the
/// signed ones, so no altered encoding of a valid certificate is accepted.
fn parse(der: &[u8]) -> Result<X509Certificate<'_>, CertAuthError> {
    let malformed = |m: &str| CertAuthError::Malformed(m.to_owned());
    if der.first() != Some(&0x30) {
        return Err(malformed("certificate is not a DER SEQUENCE"));
    }
    let (rest, cert) =
        X509Certificate::from_der(der).map_err(|e| CertAuthError::Malformed(e.to_string()))?;
    if !rest.is_empty() {
        return Err(malformed("trailing data after certificate"));
    }
    if !outer_encoding_is_exact(der) {
        return Err(malformed(
            "certificate envelope is malformed or its inner and outer signature algorithms differ",
        ));
    }
    Ok(cert)
}

/// One DER tag-length-value: `(tag, whole element, rest after it)`. Only definite lengths.
fn read_tlv(bytes: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let tag = *bytes.first()?;
    let first = *bytes.get(1)? as usize;
    let (len, header) = if first < 0x80 {
        (first, 2)
    } else {
        let n = first & 0x7f;
        if n == 0 || n > 4 {
            return None;
        }
        let mut len = 0usize;
        for b in bytes.get(2..2 + n)? {
            len = (len << 8) | *b as usize;
        }
        (len, 2 + n)
    };
    let end = header.checked_add(len)?;
    let whole = bytes.get(..end)?;
    Some((tag, whole, &bytes[end..]))
}

/// Content octets of a DER element returned by [`read_tlv`].
fn content(element: &[u8]) -> &[u8] {
    let header = match element.get(1) {
        Some(b) if *b < 0x80 => 2,
        Some(b) => 2 + (*b & 0x7f) as usize,
        None => element.len(),
    };
    element.get(header..).unwrap_or_default()
}

/// Checks the bytes the signature does not cover: `SEQUENCE { tbs, algorithm, BIT STRING }`
/// with nothing else, the outer algorithm byte-for-byte the one inside the signed part, and a
/// signature with no unused bits.
fn outer_encoding_is_exact(der: &[u8]) -> bool {
    let Some((0x30, outer, [])) = read_tlv(der) else {
        return false;
    };
    let Some((0x30, tbs, rest)) = read_tlv(content(outer)) else {
        return false;
    };
    let Some((0x30, outer_alg, rest)) = read_tlv(rest) else {
        return false;
    };
    let Some((0x03, signature, [])) = read_tlv(rest) else {
        return false;
    };
    if content(signature).first() != Some(&0) {
        return false;
    }
    // Inside the signed part: optional [0] version, serial number, then the algorithm.
    let mut fields = content(tbs);
    if let Some((0xa0, _, rest)) = read_tlv(fields) {
        fields = rest;
    }
    let Some((0x02, _, rest)) = read_tlv(fields) else {
        return false;
    };
    matches!(read_tlv(rest), Some((0x30, inner_alg, _)) if inner_alg == outer_alg)
}

fn signed_by(child: &X509Certificate<'_>, parent: &X509Certificate<'_>) -> bool {
    child.issuer().as_raw() == parent.subject().as_raw()
        && child.verify_signature(Some(parent.public_key())).is_ok()
}

/// The span in which a verified chain stays valid: from the latest `notBefore` to the earliest
/// `notAfter` of the certificates on the path that verified it (both ends included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValidFor {
    /// The latest start of validity on the path.
    pub from: Timestamp,
    /// The earliest end of validity on the path.
    pub until: Timestamp,
}

impl ValidFor {
    fn of(c: &X509Certificate<'_>) -> ValidFor {
        ValidFor {
            from: ts(&c.validity().not_before),
            until: ts(&c.validity().not_after),
        }
    }

    fn and(self, c: &X509Certificate<'_>) -> ValidFor {
        let other = ValidFor::of(c);
        ValidFor {
            from: self.from.max(other.from),
            until: self.until.min(other.until),
        }
    }

    /// Whether `now` is inside the span.
    pub fn contains(&self, now: Timestamp) -> bool {
        self.from <= now && now <= self.until
    }
}

/// Verifies `chain` (leaf first, then intermediates, DER) against `roots` at `now`, as Go's
/// `x509.Verify` with `ExtKeyUsageClientAuth` does. Answers how long the verified path stays
/// valid.
pub fn verify_client_chain(
    chain: &[&[u8]],
    roots: &ClientCaBundle,
    now: Timestamp,
) -> Result<ValidFor, CertAuthError> {
    let Some(leaf_der) = chain.first() else {
        return Err(CertAuthError::Empty);
    };
    let leaf = parse(leaf_der)?;
    within_validity(&leaf, now)?;
    if !allows_client_auth(&leaf) {
        return Err(CertAuthError::Usage);
    }
    let intermediates: Vec<X509Certificate<'_>> =
        chain[1..].iter().filter_map(|d| parse(d).ok()).collect();
    let anchors: Vec<X509Certificate<'_>> =
        roots.roots.iter().filter_map(|d| parse(d).ok()).collect();
    let mut valid = ValidFor::of(&leaf);
    let mut current = leaf;
    for _ in 0..MAX_DEPTH {
        if let Some(root) = anchors
            .iter()
            .find(|root| signed_by(&current, root) && within_validity(root, now).is_ok())
        {
            return Ok(valid.and(root));
        }
        let next = intermediates.iter().find(|i| {
            i.is_ca()
                && allows_client_auth(i)
                && within_validity(i, now).is_ok()
                && signed_by(&current, i)
        });
        match next {
            Some(i) => {
                valid = valid.and(i);
                current = i.clone();
            }
            None => break,
        }
    }
    Err(CertAuthError::UnknownAuthority)
}

/// kube's `AuthenticatedGroupAdder`: adds `system:authenticated` unless the user is
/// `system:anonymous` or already in `system:authenticated` or `system:unauthenticated`.
pub fn with_authenticated_group(mut identity: Identity) -> Identity {
    let marked = identity
        .groups
        .iter()
        .any(|g| g == AUTHENTICATED || g == UNAUTHENTICATED);
    if identity.user != ANONYMOUS && !marked {
        identity.groups.push(AUTHENTICATED.to_owned());
    }
    identity
}

/// The identity of a presented client-certificate chain (leaf first, DER): verified against
/// `roots` at `now`; CN is the user, the O values the groups, then `system:authenticated`.
/// `Ok(None)` when the leaf has no CN (kube: not authenticated by this authenticator; the
/// request falls through to the others).
pub fn authenticate_client_chain(
    chain: &[&[u8]],
    roots: &ClientCaBundle,
    now: Timestamp,
) -> Result<Option<Identity>, CertAuthError> {
    authenticate_client_chain_for(chain, roots, now).map(|(identity, _)| identity)
}

/// [`authenticate_client_chain`], and how long its answer holds: the same chain and roots give
/// the same identity at any time inside the returned span.
pub fn authenticate_client_chain_for(
    chain: &[&[u8]],
    roots: &ClientCaBundle,
    now: Timestamp,
) -> Result<(Option<Identity>, ValidFor), CertAuthError> {
    let valid = verify_client_chain(chain, roots, now)?;
    let Some(leaf_der) = chain.first() else {
        return Err(CertAuthError::Empty);
    };
    let leaf = parse(leaf_der)?;
    let (cn, orgs) = name_parts(leaf.subject()).map_err(CertAuthError::Malformed)?;
    if cn.is_empty() {
        return Ok((None, valid));
    }
    let identity = with_authenticated_group(Identity {
        user: cn,
        groups: orgs,
        ..Default::default()
    });
    Ok((Some(identity), valid))
}
