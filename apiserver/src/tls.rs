//! TLS material: a self-signed serving CA, the serving certificate (SANs localhost, 127.0.0.1
//! and every extra name), and an admin client certificate (CN=admin, O=system:masters), all
//! generated on first start and kept in the data directory (private keys mode 0600); plus the
//! rustls server configuration (ring only) and the admin kubeconfig.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};

/// Errors creating or loading TLS material.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Certificate generation failed.
    #[error("generating certificates: {0}")]
    Generate(#[from] rcgen::Error),
    /// The rustls configuration was rejected.
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    /// A PEM file could not be parsed.
    #[error("parsing {path}: {message}")]
    Pem {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// The PEM texts of the server's TLS material.
#[derive(Clone, Debug)]
pub struct TlsMaterial {
    /// The CA certificate (trust anchor for clients and for client certificates).
    pub ca_cert: String,
    /// The CA private key (signs client certificates for approved CSRs).
    pub ca_key: String,
    /// The serving certificate.
    pub serving_cert: String,
    /// The serving key.
    pub serving_key: String,
    /// The admin client certificate.
    pub admin_cert: String,
    /// The admin client key.
    pub admin_key: String,
}

fn read(path: &Path) -> Result<Option<String>, TlsError> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(TlsError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Writes `contents` to `path`, with mode 0600 when `secret`.
pub fn write_file(path: &Path, contents: &str, secret: bool) -> Result<(), TlsError> {
    let io = |source| TlsError::Io {
        path: path.to_owned(),
        source,
    };
    let tmp = path.with_extension("tmp");
    {
        use std::io::Write;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(if secret { 0o600 } else { 0o644 });
        }
        let mut file = options.open(&tmp).map_err(io)?;
        file.write_all(contents.as_bytes()).map_err(io)?;
        file.sync_all().map_err(io)?;
    }
    std::fs::rename(&tmp, path).map_err(io)
}

fn validity(params: &mut CertificateParams, years: i32) {
    // UTC: the local time zone database is not needed for a year (and stays unloaded).
    let now = jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::UTC);
    let year = i32::from(now.year());
    params.not_before = rcgen::date_time_ymd(year - 1, 1, 1);
    params.not_after = rcgen::date_time_ymd(year + years, 1, 1);
}

fn subject(cn: &str, orgs: &[&str]) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    for o in orgs {
        dn.push(DnType::OrganizationName, *o);
    }
    dn
}

fn serving_sans(extra: &[String]) -> Vec<SanType> {
    let mut names: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    for n in extra {
        if !names.contains(n) {
            names.push(n.clone());
        }
    }
    names
        .into_iter()
        .filter_map(|n| match n.parse::<IpAddr>() {
            Ok(ip) => Some(SanType::IpAddress(ip)),
            Err(_) => n.clone().try_into().ok().map(SanType::DnsName),
        })
        .collect()
}

impl TlsMaterial {
    /// Loads the material from `dir`, generating what is missing. The serving certificate is
    /// re-issued on every start so that it carries the current SANs.
    pub fn load_or_create(dir: &Path, extra_sans: &[String]) -> Result<TlsMaterial, TlsError> {
        std::fs::create_dir_all(dir).map_err(|source| TlsError::Io {
            path: dir.to_owned(),
            source,
        })?;
        let ca_cert_path = dir.join("ca.crt");
        let ca_key_path = dir.join("ca.key");
        let (ca_cert, ca_key) = match (read(&ca_cert_path)?, read(&ca_key_path)?) {
            (Some(c), Some(k)) => (c, k),
            _ => {
                let key = KeyPair::generate()?;
                let mut params = CertificateParams::default();
                params.distinguished_name = subject("ocm-apiserver-ca", &[]);
                params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
                params.key_usages = vec![
                    KeyUsagePurpose::KeyCertSign,
                    KeyUsagePurpose::CrlSign,
                    KeyUsagePurpose::DigitalSignature,
                ];
                validity(&mut params, 10);
                let cert = params.self_signed(&key)?;
                let (c, k) = (cert.pem(), key.serialize_pem());
                write_file(&ca_key_path, &k, true)?;
                write_file(&ca_cert_path, &c, false)?;
                (c, k)
            }
        };
        let ca_key_pair = KeyPair::from_pem(&ca_key)?;
        let issuer = Issuer::from_ca_cert_pem(&ca_cert, ca_key_pair)?;

        let serving_key = KeyPair::generate()?;
        let mut params = CertificateParams::default();
        params.distinguished_name = subject("ocm-apiserver", &[]);
        params.subject_alt_names = serving_sans(extra_sans);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        validity(&mut params, 10);
        let serving_cert = params.signed_by(&serving_key, &issuer)?.pem();
        let serving_key = serving_key.serialize_pem();
        write_file(&dir.join("serving.key"), &serving_key, true)?;
        write_file(&dir.join("serving.crt"), &serving_cert, false)?;

        let admin_cert_path = dir.join("admin.crt");
        let admin_key_path = dir.join("admin.key");
        let (admin_cert, admin_key) = match (read(&admin_cert_path)?, read(&admin_key_path)?) {
            (Some(c), Some(k)) => (c, k),
            _ => {
                let key = KeyPair::generate()?;
                let mut params = CertificateParams::default();
                params.distinguished_name = subject("admin", &["system:masters"]);
                params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
                params.key_usages = vec![
                    KeyUsagePurpose::DigitalSignature,
                    KeyUsagePurpose::KeyEncipherment,
                ];
                validity(&mut params, 10);
                let cert = params.signed_by(&key, &issuer)?;
                let (c, k) = (cert.pem(), key.serialize_pem());
                write_file(&admin_key_path, &k, true)?;
                write_file(&admin_cert_path, &c, false)?;
                (c, k)
            }
        };
        Ok(TlsMaterial {
            ca_cert,
            ca_key,
            serving_cert,
            serving_key,
            admin_cert,
            admin_key,
        })
    }

    /// A rustls server configuration (ring provider) that serves the serving certificate and
    /// asks for, but does not require, a client certificate. Any presented chain passes the
    /// handshake (the client must still prove it holds the key); the chain is verified against
    /// the client CA per request, so a bad certificate gets a 401 Status as with kube.
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let pem_err = |what: &str, e: rustls::pki_types::pem::Error| TlsError::Pem {
            path: PathBuf::from(what),
            message: e.to_string(),
        };
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(self.serving_cert.as_bytes())
                .collect::<Result<_, _>>()
                .map_err(|e| pem_err("serving.crt", e))?;
        let key = PrivateKeyDer::from_pem_slice(self.serving_key.as_bytes())
            .map_err(|e| pem_err("serving.key", e))?;
        let mut hints = Vec::new();
        for cert in CertificateDer::pem_slice_iter(self.ca_cert.as_bytes()) {
            let cert = cert.map_err(|e| pem_err("ca.crt", e))?;
            if let Ok((_, parsed)) = x509_parser::parse_x509_certificate(&cert) {
                hints.push(rustls::DistinguishedName::from(
                    parsed.subject().as_raw().to_vec(),
                ));
            }
        }
        let verifier = Arc::new(AnyClientCert {
            provider: provider.clone(),
            hints,
        });
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain, key)?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    /// An admin kubeconfig for `server` (e.g. `https://127.0.0.1:6443`).
    pub fn admin_kubeconfig(&self, server: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: ocm\n  cluster:\n    server: {server}\n    certificate-authority-data: {}\nusers:\n- name: admin\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\ncontexts:\n- name: ocm\n  context:\n    cluster: ocm\n    user: admin\ncurrent-context: ocm\npreferences: {{}}\n",
            base64(self.ca_cert.as_bytes()),
            base64(self.admin_cert.as_bytes()),
            base64(self.admin_key.as_bytes()),
        )
    }
}

/// Client-certificate verification at the TLS layer: proves possession of the key, leaves the
/// chain to request authentication ([`crate::authn`]).
#[derive(Debug)]
struct AnyClientCert {
    provider: Arc<rustls::crypto::CryptoProvider>,
    hints: Vec<rustls::DistinguishedName>,
}

impl rustls::server::danger::ClientCertVerifier for AnyClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::server::danger::ClientCertVerified, rustls::Error> {
        Ok(rustls::server::danger::ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Standard base64 with padding.
pub fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        out.push(ALPHABET[(n >> 18) as usize & 63] as char);
        out.push(ALPHABET[(n >> 12) as usize & 63] as char);
        out.push(if chunk.len() > 1 {
            ALPHABET[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        out.push(if chunk.len() > 2 {
            ALPHABET[n as usize & 63] as char
        } else {
            '='
        });
    }
    out
}

/// The identity in a verified client certificate: CN is the user, each O a group.
pub fn identity_from_cert(der: &[u8]) -> Option<crate::auth::Identity> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let user = subject.iter_common_name().next()?.as_str().ok()?.to_owned();
    let mut groups: Vec<String> = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_owned))
        .collect();
    groups.push("system:authenticated".into());
    Some(crate::auth::Identity {
        user,
        groups,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_known() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn material_is_created_once_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let first = TlsMaterial::load_or_create(dir.path(), &["example.test".into()]).unwrap();
        let second = TlsMaterial::load_or_create(dir.path(), &[]).unwrap();
        assert_eq!(first.ca_cert, second.ca_cert);
        assert_eq!(first.admin_cert, second.admin_cert);
        first.server_config().unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("admin.key"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let pem =
            rustls::pki_types::CertificateDer::from_pem_slice(first.admin_cert.as_bytes()).unwrap();
        let id = identity_from_cert(&pem).unwrap();
        assert_eq!(id.user, "admin");
        assert!(id.groups.contains(&"system:masters".to_string()));
    }
}
