//! The webhook server's serving certificate.
//!
//! Either the hub makes its own — a CA kept for ten years (its PEM is the `caBundle` the webhook
//! configurations carry) and a serving certificate signed by it, valid for
//! [`SERVING_LIFETIME`] and re-issued by [`ServingCerts::rotate_if_due`] once less than a fifth
//! of its lifetime remains, so the `caBundle` never changes — or an admin provides `tls.crt`,
//! `tls.key` and optionally `ca.crt` in a directory (`--webhook-cert-dir`), which is read again
//! when the files change.
//!
//! The rustls configuration resolves the certificate per handshake from
//! [`ServingCerts`], so a rotation takes effect for the next connection without a restart.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// How long a serving certificate the hub makes itself is valid.
pub const SERVING_LIFETIME: Duration = Duration::from_secs(30 * 24 * 3600);

/// Why the serving certificate cannot be made or loaded.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// Reading or writing a file.
    #[error("{path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Generating or signing.
    #[error("generating the serving certificate")]
    Generate(#[from] rcgen::Error),
    /// A PEM file or key that does not parse.
    #[error("{0}")]
    Invalid(String),
    /// rustls refused the configuration.
    #[error("TLS configuration")]
    Tls(#[from] rustls::Error),
}

/// Where the certificate comes from.
#[derive(Clone, Debug)]
enum Source {
    /// Made by the hub under this directory (`ca.crt`, `ca.key`, `tls.crt`, `tls.key`).
    Managed { dir: PathBuf, hosts: Vec<String> },
    /// Provided by an admin in this directory (`tls.crt`, `tls.key`, optional `ca.crt`).
    Provided { dir: PathBuf },
}

#[derive(Debug)]
struct Current {
    key: Arc<CertifiedKey>,
    ca_bundle: String,
    /// Seconds since the epoch: issued / expires (managed), or file mtime (provided).
    not_before: i64,
    not_after: i64,
    stamp: Option<std::time::SystemTime>,
}

/// The serving certificate in use, shared with the TLS acceptor.
#[derive(Clone, Debug)]
pub struct ServingCerts {
    source: Source,
    current: Arc<RwLock<Current>>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CertError + '_ {
    move |source| CertError::Io {
        path: path.to_owned(),
        source,
    }
}

fn write(path: &Path, text: &str, secret: bool) -> Result<(), CertError> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if secret { 0o600 } else { 0o644 });
    }
    let mut file = options.open(&tmp).map_err(io(&tmp))?;
    file.write_all(text.as_bytes()).map_err(io(&tmp))?;
    file.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}

fn read_opt(path: &Path) -> Result<Option<String>, CertError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(io(path)(err)),
    }
}

fn now_secs() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// Sets validity from `from_days` to `to_days` relative to today (UTC, whole days:
/// certificates here live for weeks or years).
fn set_validity(params: &mut CertificateParams, from_days: i64, to_days: i64) {
    let today = jiff::Zoned::now()
        .with_time_zone(jiff::tz::TimeZone::UTC)
        .date();
    let ymd = |days: i64| {
        let date = today
            .checked_add(jiff::Span::new().days(days))
            .unwrap_or(today);
        rcgen::date_time_ymd(
            i32::from(date.year()),
            u8::try_from(date.month()).unwrap_or(1),
            u8::try_from(date.day()).unwrap_or(1),
        )
    };
    params.not_before = ymd(from_days);
    params.not_after = ymd(to_days);
}

fn subject(cn: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    dn
}

fn sans(hosts: &[String]) -> Vec<SanType> {
    let mut names: Vec<String> = vec!["localhost".into(), "127.0.0.1".into()];
    for host in hosts {
        if !names.contains(host) {
            names.push(host.clone());
        }
    }
    names
        .into_iter()
        .filter_map(|n| match n.trim_matches(['[', ']']).parse::<IpAddr>() {
            Ok(ip) => Some(SanType::IpAddress(ip)),
            Err(_) => n.clone().try_into().ok().map(SanType::DnsName),
        })
        .collect()
}

/// The DER of the first certificate in `pem`.
fn first_der(pem: &str) -> Result<CertificateDer<'static>, CertError> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()
        .ok_or_else(|| CertError::Invalid("no certificate in PEM".into()))?
        .map_err(|e| CertError::Invalid(e.to_string()))
}

/// Validity (seconds since the epoch) of the first certificate in `pem`.
fn validity(pem: &str) -> Result<(i64, i64), CertError> {
    let der = first_der(pem)?;
    let (_, cert) =
        x509_parser::parse_x509_certificate(&der).map_err(|e| CertError::Invalid(e.to_string()))?;
    Ok((
        cert.validity().not_before.timestamp(),
        cert.validity().not_after.timestamp(),
    ))
}

/// Whether the first certificate in `pem` names `host` among its subject alternative names:
/// an IP address as an IP SAN, anything else as a DNS name (exactly, case-insensitively).
/// `false` when the certificate cannot be read.
pub fn covers(pem: &str, host: &str) -> bool {
    use x509_parser::extensions::GeneralName;
    let Ok(der) = first_der(pem) else {
        return false;
    };
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(&der) else {
        return false;
    };
    let Ok(Some(names)) = cert.subject_alternative_name() else {
        return false;
    };
    let ip = host.trim_matches(['[', ']']).parse::<IpAddr>().ok();
    names
        .value
        .general_names
        .iter()
        .any(|name| match (name, ip) {
            (GeneralName::IPAddress(bytes), Some(IpAddr::V4(v4))) => *bytes == v4.octets(),
            (GeneralName::IPAddress(bytes), Some(IpAddr::V6(v6))) => *bytes == v6.octets(),
            (GeneralName::DNSName(dns), None) => dns.eq_ignore_ascii_case(host),
            _ => false,
        })
}

fn certified_key(cert_pem: &str, key_pem: &str) -> Result<Arc<CertifiedKey>, CertError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| CertError::Invalid(format!("serving certificate: {e}")))?;
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
        .map_err(|e| CertError::Invalid(format!("serving key: {e}")))?;
    let signing = rustls::crypto::ring::sign::any_supported_type(&key)?;
    Ok(Arc::new(CertifiedKey::new(chain, signing)))
}

/// A CA and a serving certificate it signed, as PEM.
#[derive(Clone)]
pub struct IssuedCerts {
    /// The CA certificate (what clients trust: `caBundle`).
    pub ca_cert: String,
    /// The CA's private key.
    pub ca_key: String,
    /// The serving certificate.
    pub cert: String,
    /// The serving certificate's private key.
    pub key: String,
}

impl std::fmt::Debug for IssuedCerts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedCerts").finish_non_exhaustive()
    }
}

/// Issues a serving certificate for `hosts` (besides localhost) valid for
/// [`SERVING_LIFETIME`], signed by `ca` (certificate and key PEM), or by a new ten-year CA.
pub fn issue_serving(ca: Option<(&str, &str)>, hosts: &[String]) -> Result<IssuedCerts, CertError> {
    let (ca_cert, ca_key) = match ca {
        Some((cert, key)) => (cert.to_owned(), key.to_owned()),
        None => {
            let key = KeyPair::generate()?;
            let mut params = CertificateParams::default();
            params.distinguished_name = subject("ocm-hub-webhook-ca");
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            params.key_usages = vec![
                KeyUsagePurpose::KeyCertSign,
                KeyUsagePurpose::CrlSign,
                KeyUsagePurpose::DigitalSignature,
            ];
            set_validity(&mut params, -1, 3650);
            let cert = params.self_signed(&key)?;
            (cert.pem(), key.serialize_pem())
        }
    };
    let issuer = Issuer::from_ca_cert_pem(&ca_cert, KeyPair::from_pem(&ca_key)?)?;
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    params.distinguished_name = subject("ocm-hub-webhook");
    params.subject_alt_names = sans(hosts);
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let lifetime_days = i64::try_from(SERVING_LIFETIME.as_secs() / 86_400).unwrap_or(30);
    set_validity(&mut params, -1, lifetime_days);
    let cert = params.signed_by(&key, &issuer)?.pem();
    Ok(IssuedCerts {
        ca_cert,
        ca_key,
        cert,
        key: key.serialize_pem(),
    })
}

/// Seconds since the epoch when the first certificate in `pem` expires.
pub fn expires_at(pem: &str) -> Result<i64, CertError> {
    validity(pem).map(|(_, not_after)| not_after)
}

/// Makes (or reuses) the CA under `dir` and issues a fresh serving certificate for `hosts`.
fn issue(dir: &Path, hosts: &[String]) -> Result<Current, CertError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let (ca_cert_path, ca_key_path) = (dir.join("ca.crt"), dir.join("ca.key"));
    let kept = match (read_opt(&ca_cert_path)?, read_opt(&ca_key_path)?) {
        (Some(cert), Some(key)) => Some((cert, key)),
        _ => None,
    };
    let issued = issue_serving(kept.as_ref().map(|(c, k)| (c.as_str(), k.as_str())), hosts)?;
    if kept.is_none() {
        write(&ca_key_path, &issued.ca_key, true)?;
        write(&ca_cert_path, &issued.ca_cert, false)?;
    }
    write(&dir.join("tls.key"), &issued.key, true)?;
    write(&dir.join("tls.crt"), &issued.cert, false)?;
    let (not_before, not_after) = validity(&issued.cert)?;
    Ok(Current {
        key: certified_key(&issued.cert, &issued.key)?,
        ca_bundle: issued.ca_cert,
        not_before,
        not_after,
        stamp: None,
    })
}

fn modified(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Loads an admin-provided `tls.crt` / `tls.key` (and `ca.crt`, else the chain itself is the
/// bundle) from `dir`.
fn load(dir: &Path) -> Result<Current, CertError> {
    let cert_path = dir.join("tls.crt");
    let key_path = dir.join("tls.key");
    let cert = std::fs::read_to_string(&cert_path).map_err(io(&cert_path))?;
    let key = std::fs::read_to_string(&key_path).map_err(io(&key_path))?;
    let ca_bundle = read_opt(&dir.join("ca.crt"))?.unwrap_or_else(|| cert.clone());
    let (not_before, not_after) = validity(&cert)?;
    Ok(Current {
        key: certified_key(&cert, &key)?,
        ca_bundle,
        not_before,
        not_after,
        stamp: modified(&cert_path).max(modified(&key_path)),
    })
}

impl ServingCerts {
    /// Certificates the hub makes itself under `dir`, valid for `hosts` (names or IPs the
    /// API server dials) besides localhost. A fresh serving certificate is issued on every
    /// start; the CA is kept.
    pub fn managed(dir: &Path, hosts: &[String]) -> Result<ServingCerts, CertError> {
        let current = issue(dir, hosts)?;
        Ok(ServingCerts {
            source: Source::Managed {
                dir: dir.to_owned(),
                hosts: hosts.to_vec(),
            },
            current: Arc::new(RwLock::new(current)),
        })
    }

    /// Certificates an admin provides in `dir` (`tls.crt`, `tls.key`, optional `ca.crt`).
    pub fn provided(dir: &Path) -> Result<ServingCerts, CertError> {
        let current = load(dir)?;
        Ok(ServingCerts {
            source: Source::Provided {
                dir: dir.to_owned(),
            },
            current: Arc::new(RwLock::new(current)),
        })
    }

    /// PEM of the CA that webhook configurations must trust (`caBundle`).
    pub fn ca_bundle(&self) -> String {
        self.read(|c| c.ca_bundle.clone())
    }

    /// Seconds since the epoch when the serving certificate expires.
    pub fn not_after(&self) -> i64 {
        self.read(|c| c.not_after)
    }

    fn read<T>(&self, f: impl FnOnce(&Current) -> T) -> T {
        f(&self.current.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Re-issues a managed certificate once less than a fifth of its lifetime remains, or
    /// reloads provided files that changed. Returns whether the certificate changed.
    pub fn rotate_if_due(&self) -> Result<bool, CertError> {
        let replacement = match &self.source {
            Source::Managed { dir, hosts } => {
                let (not_before, not_after) = self.read(|c| (c.not_before, c.not_after));
                let remaining = not_after - now_secs();
                if remaining * 5 > not_after - not_before {
                    return Ok(false);
                }
                issue(dir, hosts)?
            }
            Source::Provided { dir } => {
                let stamp = modified(&dir.join("tls.crt")).max(modified(&dir.join("tls.key")));
                if stamp == self.read(|c| c.stamp) {
                    return Ok(false);
                }
                load(dir)?
            }
        };
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = replacement;
        Ok(true)
    }

    /// A rustls server configuration that serves the current certificate (HTTP/2 and 1.1).
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, CertError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(self.clone()));
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

impl ResolvesServerCert for ServingCerts {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.read(|c| c.key.clone()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_certificate_covers_the_names_and_addresses_it_was_issued_for() {
        let issued =
            issue_serving(None, &["webhooks.example.com".into(), "10.1.2.3".into()]).unwrap();
        assert!(covers(&issued.cert, "webhooks.example.com"));
        assert!(covers(&issued.cert, "WEBHOOKS.example.com"));
        assert!(covers(&issued.cert, "10.1.2.3"));
        assert!(covers(&issued.cert, "127.0.0.1"));
        assert!(!covers(&issued.cert, "10.1.2.4"));
        assert!(!covers(&issued.cert, "other.example.com"));
        assert!(!covers("not a certificate", "10.1.2.3"));
    }

    #[test]
    fn managed_certificates_keep_their_ca_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let first = ServingCerts::managed(dir.path(), &["hub.example".into()]).unwrap();
        let second = ServingCerts::managed(dir.path(), &[]).unwrap();
        assert_eq!(first.ca_bundle(), second.ca_bundle());
        assert!(first.not_after() > now_secs() + 20 * 86_400);
        // Not due: nothing changes.
        assert!(!first.rotate_if_due().unwrap());
        let provided = ServingCerts::provided(dir.path()).unwrap();
        assert_eq!(provided.ca_bundle(), first.ca_bundle());
        assert!(!provided.rotate_if_due().unwrap());
    }
}
