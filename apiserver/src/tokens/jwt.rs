//! Compact JWS with ES256 (ECDSA P-256, SHA-256, fixed-size `r || s` signatures): the signing
//! key, signing, and signature verification. Claims are left to the caller.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rcgen::{KeyPair, PublicKeyData};
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, UnparsedPublicKey};
use serde_json::{Value, json};

/// A JWT that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    /// Not three base64url parts with a JSON header and payload.
    #[error("malformed token")]
    Malformed,
    /// The header names another algorithm than ES256 (including `none`).
    #[error("unsupported signing algorithm {0:?}")]
    Algorithm(String),
    /// The signature does not verify with any trusted key.
    #[error("invalid signature")]
    Signature,
    /// Signing failed.
    #[error("signing failed: {0}")]
    Sign(String),
}

/// An ES256 signing key with its key id (`kid`): base64url of SHA-256 over the DER public key,
/// as kube computes it.
pub struct SigningKey {
    pair: EcdsaKeyPair,
    key: KeyPair,
    kid: String,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A new random P-256 key.
    pub fn generate() -> Result<Self, JwtError> {
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .map_err(|e| JwtError::Sign(e.to_string()))?;
        Self::from_key_pair(key)
    }

    /// A key from PKCS#8 PEM (`PRIVATE KEY`); must be P-256.
    pub fn from_pem(pem: &str) -> Result<Self, JwtError> {
        let key = KeyPair::from_pem(pem).map_err(|e| JwtError::Sign(e.to_string()))?;
        Self::from_key_pair(key)
    }

    fn from_key_pair(key: KeyPair) -> Result<Self, JwtError> {
        let pair = EcdsaKeyPair::from_pkcs8(
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            key.serialized_der(),
            &SystemRandom::new(),
        )
        .map_err(|e| JwtError::Sign(format!("not a P-256 key: {e}")))?;
        let spki = key.subject_public_key_info();
        let kid = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, &spki));
        Ok(SigningKey { pair, key, kid })
    }

    /// The private key, PKCS#8 PEM.
    pub fn to_pem(&self) -> String {
        self.key.serialize_pem()
    }

    /// The key id.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The verifying half.
    pub fn verifying_key(&self) -> VerifyingKey {
        VerifyingKey {
            point: self.key.der_bytes().to_vec(),
            kid: self.kid.clone(),
        }
    }

    /// A signed compact JWT: header `{"alg":"ES256","kid":…}`, the given claims.
    pub fn sign(&self, claims: &Value) -> Result<String, JwtError> {
        let header = json!({"alg": "ES256", "kid": self.kid});
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let sig = self
            .pair
            .sign(&SystemRandom::new(), input.as_bytes())
            .map_err(|e| JwtError::Sign(e.to_string()))?;
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref())))
    }
}

/// A public key that verifies ES256 signatures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyingKey {
    point: Vec<u8>,
    kid: String,
}

impl VerifyingKey {
    /// The key id.
    pub fn kid(&self) -> &str {
        &self.kid
    }
}

fn decode_json(part: &str) -> Result<Value, JwtError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| JwtError::Malformed)?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| JwtError::Malformed)?;
    if v.is_object() {
        Ok(v)
    } else {
        Err(JwtError::Malformed)
    }
}

/// Whether `token` has the shape of a JWT (three dot-separated parts, a JSON object header).
pub fn looks_like_jwt(token: &str) -> bool {
    let mut parts = token.split('.');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(h), Some(_), Some(_), None) => decode_json(h).is_ok(),
        _ => false,
    }
}

/// The payload of `token` without checking the signature (to read `iss` and route the token).
pub fn unverified_claims(token: &str) -> Result<Value, JwtError> {
    let mut parts = token.split('.');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(h), Some(p), Some(_), None) => {
            decode_json(h)?;
            decode_json(p)
        }
        _ => Err(JwtError::Malformed),
    }
}

/// Verifies an ES256 compact JWT with any of `keys`; returns its claims.
pub fn verify(token: &str, keys: &[VerifyingKey]) -> Result<Value, JwtError> {
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JwtError::Malformed);
    };
    let header = decode_json(h)?;
    let alg = header.get("alg").and_then(Value::as_str).unwrap_or("");
    if alg != "ES256" {
        return Err(JwtError::Algorithm(alg.to_owned()));
    }
    let claims = decode_json(p)?;
    let sig = URL_SAFE_NO_PAD.decode(s).map_err(|_| JwtError::Malformed)?;
    let input = &token.as_bytes()[..h.len() + 1 + p.len()];
    let ok = keys.iter().any(|k| {
        UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, &k.point)
            .verify(input, &sig)
            .is_ok()
    });
    if ok {
        Ok(claims)
    } else {
        Err(JwtError::Signature)
    }
}
