//! Signing the custom-signer CSRs of template addons with the CA their template names: a hub
//! Secret with `tls.crt` and `tls.key` (PEM; PKCS#8 keys). Certificates are client
//! certificates valid for 24 hours, as upstream's template addons issue them (the registration
//! agent renews them well before).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rcgen::{
    CertificateSigningRequestParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, Issuer,
    KeyPair, KeyUsagePurpose,
};
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::prelude::FromDer;

use crate::agent::AddonError;

/// How long a certificate signed for a template addon's agent is valid.
pub const VALIDITY: Duration = Duration::from_secs(24 * 60 * 60);

/// A signing CA as PEM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SigningCa {
    /// The CA certificate (`tls.crt`).
    pub cert_pem: String,
    /// Its private key (`tls.key`).
    pub key_pem: String,
}

impl SigningCa {
    /// The CA from a Secret's `data`, checked to be usable; `Err` says what is wrong.
    pub fn from_secret_data(
        data: &std::collections::BTreeMap<String, k8s_openapi::ByteString>,
    ) -> Result<SigningCa, String> {
        let text = |key: &str| -> Result<String, String> {
            let bytes = data.get(key).ok_or_else(|| format!("it has no {key}"))?;
            String::from_utf8(bytes.0.clone()).map_err(|_| format!("its {key} is not PEM text"))
        };
        let ca = SigningCa {
            cert_pem: text("tls.crt")?,
            key_pem: text("tls.key")?,
        };
        ca.issuer()?;
        Ok(ca)
    }

    fn issuer(&self) -> Result<Issuer<'static, KeyPair>, String> {
        let key = KeyPair::from_pem(&self.key_pem)
            .map_err(|e| format!("its tls.key is not a PKCS#8 PEM private key: {e}"))?;
        Issuer::from_ca_cert_pem(&self.cert_pem, key)
            .map_err(|e| format!("its tls.crt is not a PEM CA certificate: {e}"))
    }

    /// A client certificate (PEM) for the PEM request `request_pem`, valid for [`VALIDITY`].
    pub fn sign(&self, request_pem: &str) -> Result<String, AddonError> {
        let issuer = self.issuer().map_err(AddonError::new)?;
        let mut request = CertificateSigningRequestParams::from_pem(request_pem)
            .map_err(|e| AddonError::new(format!("the CSR's request is not valid: {e}")))?;
        // rcgen keeps one value per attribute type: the subject is taken from the request
        // itself, every attribute in order (a second O stays a second O).
        request.params.distinguished_name = requested_subject(request_pem)?;
        let now = std::time::SystemTime::now();
        request.params.not_before = now.into();
        request.params.not_after = (now + VALIDITY).into();
        request.params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        request.params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = request
            .signed_by(&issuer)
            .map_err(|e| AddonError::new(format!("signing failed: {e}")))?;
        Ok(cert.pem())
    }
}

/// The subject of the PEM request `request_pem`, every attribute in order: the first of each
/// type under its type, later ones of the same type under their OID (which rcgen writes as
/// given).
fn requested_subject(request_pem: &str) -> Result<DistinguishedName, AddonError> {
    let invalid = |e: String| AddonError::new(format!("the CSR's request is not valid: {e}"));
    let (_, pem) = x509_parser::pem::parse_x509_pem(request_pem.as_bytes())
        .map_err(|e| invalid(e.to_string()))?;
    let (_, csr) =
        X509CertificationRequest::from_der(&pem.contents).map_err(|e| invalid(e.to_string()))?;
    let mut dn = DistinguishedName::new();
    let mut seen: Vec<DnType> = Vec::new();
    for attribute in csr.certification_request_info.subject.iter_attributes() {
        let oid: Vec<u64> = attribute
            .attr_type()
            .iter()
            .map(|arcs| arcs.collect())
            .unwrap_or_default();
        let value = attribute
            .as_str()
            .map_err(|e| invalid(format!("a subject attribute is not text: {e}")))?
            .to_owned();
        let ty = DnType::from_oid(&oid);
        if seen.contains(&ty) {
            dn.push(DnType::CustomDnType(oid), value);
        } else {
            seen.push(ty.clone());
            dn.push(ty, value);
        }
    }
    Ok(dn)
}

/// The signing CAs last read from the hub, by (namespace, name) of their Secret: what the
/// (synchronous) CSR signer signs with. The template addon refreshes it on every reconcile.
#[derive(Clone, Debug, Default)]
pub struct SigningCas(Arc<Mutex<HashMap<(String, String), SigningCa>>>);

impl SigningCas {
    /// Remembers the CA read from Secret `namespace/name`.
    pub fn insert(&self, namespace: &str, name: &str, ca: SigningCa) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.insert((namespace.to_owned(), name.to_owned()), ca);
    }

    /// Forgets Secret `namespace/name` (it is gone or no longer valid).
    pub fn remove(&self, namespace: &str, name: &str) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.remove(&(namespace.to_owned(), name.to_owned()));
    }

    /// The CA of Secret `namespace/name`, if it was read and valid.
    pub fn get(&self, namespace: &str, name: &str) -> Option<SigningCa> {
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&(namespace.to_owned(), name.to_owned())).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{BasicConstraints, CertificateParams, IsCa};

    fn ca() -> SigningCa {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "test-ca");
        let cert = params.self_signed(&key).unwrap();
        SigningCa {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    #[test]
    fn signs_client_certificates_for_requests() {
        let ca = ca();
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "agent-user");
        params.distinguished_name = dn;
        let request = params.serialize_request(&key).unwrap().pem().unwrap();
        let pem = ca.sign(&request).unwrap();
        let (_, der) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).unwrap();
        let cert = der.parse_x509().unwrap();
        assert_eq!(
            cert.subject()
                .iter_common_name()
                .next()
                .unwrap()
                .as_str()
                .unwrap(),
            "agent-user"
        );
        assert_eq!(
            cert.issuer()
                .iter_common_name()
                .next()
                .unwrap()
                .as_str()
                .unwrap(),
            "test-ca"
        );
        let eku = cert.extended_key_usage().unwrap().unwrap().value;
        assert!(eku.client_auth);
        assert!(
            ca.sign("not a request")
                .unwrap_err()
                .0
                .contains("not valid")
        );
    }

    #[test]
    fn every_group_and_unit_of_the_request_is_signed() {
        let ca = ca();
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "user1");
        dn.push(DnType::OrganizationName, "g1");
        dn.push(DnType::CustomDnType(vec![2, 5, 4, 10]), "g2");
        dn.push(DnType::OrganizationalUnitName, "o1");
        dn.push(DnType::CustomDnType(vec![2, 5, 4, 11]), "o2");
        params.distinguished_name = dn;
        let request = params.serialize_request(&key).unwrap().pem().unwrap();
        let pem = ca.sign(&request).unwrap();
        let (_, der) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).unwrap();
        let cert = der.parse_x509().unwrap();
        let texts = |it: &mut dyn Iterator<Item = &x509_parser::x509::AttributeTypeAndValue>| {
            it.map(|a| a.as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(texts(&mut cert.subject().iter_organization()), ["g1", "g2"]);
        assert_eq!(
            texts(&mut cert.subject().iter_organizational_unit()),
            ["o1", "o2"]
        );
        assert_eq!(texts(&mut cert.subject().iter_common_name()), ["user1"]);
    }

    #[test]
    fn secrets_are_checked_when_read() {
        let ca = ca();
        let mut data = std::collections::BTreeMap::new();
        assert_eq!(
            SigningCa::from_secret_data(&data).unwrap_err(),
            "it has no tls.crt"
        );
        data.insert(
            "tls.crt".to_owned(),
            k8s_openapi::ByteString(ca.cert_pem.clone().into_bytes()),
        );
        data.insert(
            "tls.key".to_owned(),
            k8s_openapi::ByteString(b"garbage".to_vec()),
        );
        assert!(
            SigningCa::from_secret_data(&data)
                .unwrap_err()
                .contains("tls.key is not")
        );
        data.insert(
            "tls.key".to_owned(),
            k8s_openapi::ByteString(ca.key_pem.clone().into_bytes()),
        );
        assert_eq!(SigningCa::from_secret_data(&data).unwrap(), ca);
    }
}
