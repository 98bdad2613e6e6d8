//! Certificate authorities: generated (ECDSA P-256, self-signed), loaded from PEM, kept in the
//! data directory as `<name>.crt` and `<name>.key` (the key file mode 0600), and used to issue
//! serving and client certificates.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use jiff::{SignedDuration, Timestamp};
use rcgen::{KeyPair, PublicKeyData};
use x509_parser::prelude::{FromDer, X509Certificate};

use super::PkiError;
use super::cert::{self, CertSpec, ExtKeyUsage, IssuerRef, San, Subject, key_usage};

/// How long generated CAs are valid (kube's self-signed CAs: ten years).
pub const CA_VALIDITY: SignedDuration = SignedDuration::from_hours(10 * 365 * 24);

/// A certificate and its private key, as PEM.
#[derive(Clone, Debug)]
pub struct CertAndKey {
    /// The certificate (PEM `CERTIFICATE`).
    pub cert_pem: String,
    /// The private key (PEM PKCS#8 `PRIVATE KEY`).
    pub key_pem: String,
}

/// A certificate authority that can sign certificates.
pub struct CertificateAuthority {
    cert_der: Vec<u8>,
    cert_pem: String,
    key: KeyPair,
    subject_der: Vec<u8>,
    key_id: Option<Vec<u8>>,
    not_after: Timestamp,
}

impl std::fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateAuthority")
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> PkiError + '_ {
    move |source| PkiError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `contents` to `path` through a temporary file renamed into place; `private` files get
/// mode 0600 from creation on.
pub fn write_file(path: &Path, contents: &[u8], private: bool) -> Result<(), PkiError> {
    let tmp = path.with_extension("tmp");
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        opts.mode(if private { 0o600 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = private;
    let mut file = opts.open(&tmp).map_err(io_err(&tmp))?;
    file.write_all(contents).map_err(io_err(&tmp))?;
    file.sync_all().map_err(io_err(&tmp))?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(io_err(path))
}

fn asn1_time(t: &x509_parser::time::ASN1Time) -> Timestamp {
    Timestamp::from_second(t.timestamp()).unwrap_or(Timestamp::MIN)
}

impl CertificateAuthority {
    /// A new self-signed CA: ECDSA P-256 key, subject `CN=<common_name>`, valid from `now` for
    /// `validity`, key usages digitalSignature + keyEncipherment + keyCertSign.
    pub fn generate(
        common_name: &str,
        now: Timestamp,
        validity: SignedDuration,
    ) -> Result<Self, PkiError> {
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .map_err(|e| PkiError::Crypto(e.to_string()))?;
        let subject = Subject::new(common_name, &[]);
        let subject_der = subject.to_der();
        let key_id = cert::key_identifier(&key);
        let not_after = now
            .checked_add(validity)
            .map_err(|e| PkiError::Parse(e.to_string()))?;
        let spec = CertSpec {
            subject,
            public_key_spki: key.subject_public_key_info(),
            sans: Vec::new(),
            key_usage: key_usage::DIGITAL_SIGNATURE
                | key_usage::KEY_ENCIPHERMENT
                | key_usage::KEY_CERT_SIGN,
            ext_key_usages: Vec::new(),
            is_ca: true,
            not_before: now,
            not_after,
        };
        let der = cert::sign(
            &spec,
            &IssuerRef {
                name_der: &subject_der,
                key: &key,
                key_id: Some(&key_id),
            },
        )?;
        Ok(CertificateAuthority {
            cert_pem: cert::pem("CERTIFICATE", &der),
            cert_der: der,
            key,
            subject_der,
            key_id: Some(key_id),
            not_after,
        })
    }

    /// A CA from its certificate and PKCS#8 private key (PEM). The key must match the
    /// certificate and be ECDSA P-256/P-384, Ed25519 or RSA.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, PkiError> {
        let der = cert::pem_blocks(cert_pem.as_bytes(), "CERTIFICATE")
            .into_iter()
            .next()
            .ok_or_else(|| PkiError::Parse("no CERTIFICATE block in the CA file".into()))?;
        let key =
            KeyPair::from_pem(key_pem).map_err(|e| PkiError::Parse(format!("CA key: {e}")))?;
        let (_, parsed) = X509Certificate::from_der(&der)
            .map_err(|e| PkiError::Parse(format!("CA certificate: {e}")))?;
        if parsed.public_key().raw != key.subject_public_key_info().as_slice() {
            return Err(PkiError::KeyMismatch);
        }
        let key_id = parsed
            .extensions()
            .iter()
            .find_map(|ext| match ext.parsed_extension() {
                x509_parser::extensions::ParsedExtension::SubjectKeyIdentifier(kid) => {
                    Some(kid.0.to_vec())
                }
                _ => None,
            });
        let subject_der = parsed.subject().as_raw().to_vec();
        let not_after = asn1_time(&parsed.validity().not_after);
        Ok(CertificateAuthority {
            cert_pem: cert::pem("CERTIFICATE", &der),
            cert_der: der.clone(),
            key,
            subject_der,
            key_id,
            not_after,
        })
    }

    /// Paths of the certificate and key files of CA `name` in `dir`.
    pub fn paths(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
        (
            dir.join(format!("{name}.crt")),
            dir.join(format!("{name}.key")),
        )
    }

    /// Loads CA `name` from `dir`; `None` when neither file exists (one without the other is
    /// an error).
    pub fn load(dir: &Path, name: &str) -> Result<Option<Self>, PkiError> {
        let (crt, key) = Self::paths(dir, name);
        match (crt.exists(), key.exists()) {
            (false, false) => Ok(None),
            (true, true) => {
                let cert_pem = std::fs::read_to_string(&crt).map_err(io_err(&crt))?;
                let key_pem = std::fs::read_to_string(&key).map_err(io_err(&key))?;
                Self::from_pem(&cert_pem, &key_pem).map(Some)
            }
            (true, false) => Err(PkiError::Incomplete(key)),
            (false, true) => Err(PkiError::Incomplete(crt)),
        }
    }

    /// Writes the CA to `dir` as `<name>.crt` (0644) and `<name>.key` (0600), creating `dir`.
    pub fn store(&self, dir: &Path, name: &str) -> Result<(), PkiError> {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        let (crt, key) = Self::paths(dir, name);
        write_file(&key, self.key_pem().as_bytes(), true)?;
        write_file(&crt, self.cert_pem.as_bytes(), false)
    }

    /// Loads CA `name` from `dir`, or generates (`CN=<common_name>`, ten years) and stores it.
    pub fn load_or_generate(
        dir: &Path,
        name: &str,
        common_name: &str,
        now: Timestamp,
    ) -> Result<Self, PkiError> {
        if let Some(ca) = Self::load(dir, name)? {
            return Ok(ca);
        }
        let ca = Self::generate(common_name, now, CA_VALIDITY)?;
        ca.store(dir, name)?;
        tracing::info!(dir = %dir.display(), name, "generated certificate authority");
        Ok(ca)
    }

    /// The CA certificate, PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA certificate, DER.
    pub fn cert_der(&self) -> &[u8] {
        &self.cert_der
    }

    /// The CA private key, PEM PKCS#8.
    pub fn key_pem(&self) -> String {
        self.key.serialize_pem()
    }

    /// When the CA certificate expires.
    pub fn not_after(&self) -> Timestamp {
        self.not_after
    }

    /// Signs a certificate described by `spec`; returns its DER.
    pub fn sign(&self, spec: &CertSpec) -> Result<Vec<u8>, PkiError> {
        cert::sign(
            spec,
            &IssuerRef {
                name_der: &self.subject_der,
                key: &self.key,
                key_id: self.key_id.as_deref(),
            },
        )
    }

    fn issue_leaf(
        &self,
        subject: Subject,
        sans: Vec<San>,
        eku: ExtKeyUsage,
        now: Timestamp,
        validity: SignedDuration,
    ) -> Result<CertAndKey, PkiError> {
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .map_err(|e| PkiError::Crypto(e.to_string()))?;
        let not_after = now
            .checked_add(validity)
            .map_err(|e| PkiError::Parse(e.to_string()))?
            .min(self.not_after);
        let spec = CertSpec {
            subject,
            public_key_spki: key.subject_public_key_info(),
            sans,
            key_usage: key_usage::DIGITAL_SIGNATURE | key_usage::KEY_ENCIPHERMENT,
            ext_key_usages: vec![eku],
            is_ca: false,
            not_before: now,
            not_after,
        };
        let der = self.sign(&spec)?;
        Ok(CertAndKey {
            cert_pem: cert::pem("CERTIFICATE", &der),
            key_pem: key.serialize_pem(),
        })
    }

    /// A serving certificate (fresh P-256 key, EKU serverAuth) for `hosts` (IP addresses become
    /// IP SANs, anything else DNS SANs); CN is the first host.
    pub fn issue_serving(
        &self,
        hosts: &[String],
        now: Timestamp,
        validity: SignedDuration,
    ) -> Result<CertAndKey, PkiError> {
        let cn = hosts.first().map_or("", String::as_str);
        let sans = hosts.iter().map(|h| San::parse(h)).collect();
        self.issue_leaf(
            Subject::new(cn, &[]),
            sans,
            ExtKeyUsage::ServerAuth,
            now,
            validity,
        )
    }

    /// A client certificate (fresh P-256 key, EKU clientAuth) for user `CN=<user>` in groups
    /// `O=<groups...>`.
    pub fn issue_client(
        &self,
        user: &str,
        groups: &[&str],
        now: Timestamp,
        validity: SignedDuration,
    ) -> Result<CertAndKey, PkiError> {
        self.issue_leaf(
            Subject::new(user, groups),
            Vec::new(),
            ExtKeyUsage::ClientAuth,
            now,
            validity,
        )
    }
}
