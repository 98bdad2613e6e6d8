//! A minimal DER writer: just what an X.509 certificate needs (rcgen cannot write a subject
//! with several `O` attributes, which Kubernetes identities need).

use jiff::Timestamp;

/// Object identifiers, as DER content bytes (without tag and length).
pub(crate) mod oid {
    /// ecdsa-with-SHA256 (1.2.840.10045.4.3.2).
    pub const ECDSA_SHA256: &[u8] = &[0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02];
    /// ecdsa-with-SHA384 (1.2.840.10045.4.3.3).
    pub const ECDSA_SHA384: &[u8] = &[0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x03];
    /// sha256WithRSAEncryption (1.2.840.113549.1.1.11).
    pub const RSA_SHA256: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x0B];
    /// Ed25519 (1.3.101.112).
    pub const ED25519: &[u8] = &[0x2B, 0x65, 0x70];
    /// commonName (2.5.4.3).
    pub const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
    /// organizationName (2.5.4.10).
    pub const ORGANIZATION: &[u8] = &[0x55, 0x04, 0x0A];
    /// subjectKeyIdentifier (2.5.29.14).
    pub const SUBJECT_KEY_ID: &[u8] = &[0x55, 0x1D, 0x0E];
    /// keyUsage (2.5.29.15).
    pub const KEY_USAGE: &[u8] = &[0x55, 0x1D, 0x0F];
    /// subjectAltName (2.5.29.17).
    pub const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1D, 0x11];
    /// basicConstraints (2.5.29.19).
    pub const BASIC_CONSTRAINTS: &[u8] = &[0x55, 0x1D, 0x13];
    /// authorityKeyIdentifier (2.5.29.35).
    pub const AUTHORITY_KEY_ID: &[u8] = &[0x55, 0x1D, 0x23];
    /// extKeyUsage (2.5.29.37).
    pub const EXT_KEY_USAGE: &[u8] = &[0x55, 0x1D, 0x25];
    /// anyExtendedKeyUsage (2.5.29.37.0).
    pub const EKU_ANY: &[u8] = &[0x55, 0x1D, 0x25, 0x00];
    /// id-kp-* (1.3.6.1.5.5.7.3.n): serverAuth 1, clientAuth 2, codeSigning 3,
    /// emailProtection 4, ipsecEndSystem 5, ipsecTunnel 6, ipsecUser 7, timeStamping 8,
    /// OCSPSigning 9.
    pub const fn eku_kp(n: u8) -> [u8; 8] {
        [0x2B, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, n]
    }
    /// Microsoft Server Gated Crypto (1.3.6.1.4.1.311.10.3.3).
    pub const EKU_MS_SGC: &[u8] = &[0x2B, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x0A, 0x03, 0x03];
    /// Netscape Server Gated Crypto (2.16.840.1.113730.4.1).
    pub const EKU_NS_SGC: &[u8] = &[0x60, 0x86, 0x48, 0x01, 0x86, 0xF8, 0x42, 0x04, 0x01];
}

/// A tag-length-value.
pub(crate) fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(content.len() + 6);
    out.push(tag);
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

/// SEQUENCE of already-encoded parts.
pub(crate) fn seq(parts: &[&[u8]]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

/// SET of already-encoded parts (callers pass one element, so no sorting is needed).
pub(crate) fn set(parts: &[&[u8]]) -> Vec<u8> {
    tlv(0x31, &parts.concat())
}

/// INTEGER from unsigned big-endian bytes.
pub(crate) fn uint(bytes: &[u8]) -> Vec<u8> {
    let skip = bytes
        .iter()
        .take_while(|b| **b == 0)
        .count()
        .min(bytes.len().saturating_sub(1));
    let trimmed = &bytes[skip..];
    let mut content = Vec::with_capacity(trimmed.len() + 1);
    if trimmed.first().is_none_or(|b| b & 0x80 != 0) {
        content.push(0);
    }
    content.extend_from_slice(trimmed);
    tlv(0x02, &content)
}

/// OBJECT IDENTIFIER from its content bytes.
pub(crate) fn oid(content: &[u8]) -> Vec<u8> {
    tlv(0x06, content)
}

/// BOOLEAN.
pub(crate) fn boolean(v: bool) -> Vec<u8> {
    tlv(0x01, &[if v { 0xFF } else { 0x00 }])
}

/// NULL.
pub(crate) fn null() -> Vec<u8> {
    vec![0x05, 0x00]
}

/// BIT STRING of whole bytes (no unused bits).
pub(crate) fn bit_string(bytes: &[u8]) -> Vec<u8> {
    let mut content = Vec::with_capacity(bytes.len() + 1);
    content.push(0);
    content.extend_from_slice(bytes);
    tlv(0x03, &content)
}

/// A named BIT STRING (bit 0 is the most significant bit of the first byte), with trailing
/// zero bits removed as DER requires.
pub(crate) fn named_bits(bits: u16) -> Vec<u8> {
    // Bit i of `bits` is named bit i.
    let highest = (0..16).rev().find(|i| bits & (1 << i) != 0);
    let Some(highest) = highest else {
        return tlv(0x03, &[0]);
    };
    let nbytes = highest / 8 + 1;
    let mut bytes = vec![0u8; nbytes];
    for i in 0..=highest {
        if bits & (1 << i) != 0 {
            bytes[i / 8] |= 0x80 >> (i % 8);
        }
    }
    let unused = 7 - (highest % 8);
    let mut content = vec![unused as u8];
    content.extend_from_slice(&bytes);
    tlv(0x03, &content)
}

/// OCTET STRING.
pub(crate) fn octet_string(bytes: &[u8]) -> Vec<u8> {
    tlv(0x04, bytes)
}

/// A directory string: PrintableString when every character allows it (as Go chooses),
/// otherwise UTF8String.
pub(crate) fn directory_string(s: &str) -> Vec<u8> {
    let printable = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || " '()+,-./:=?".contains(c));
    tlv(if printable { 0x13 } else { 0x0C }, s.as_bytes())
}

/// Context-specific constructed tag `[n]` around content (EXPLICIT).
pub(crate) fn explicit(n: u8, content: &[u8]) -> Vec<u8> {
    tlv(0xA0 | n, content)
}

/// Context-specific primitive tag `[n]` (IMPLICIT) with raw content.
pub(crate) fn implicit(n: u8, content: &[u8]) -> Vec<u8> {
    tlv(0x80 | n, content)
}

/// UTCTime for years 1950–2049, GeneralizedTime otherwise (RFC 5280), to the second.
pub(crate) fn time(t: Timestamp) -> Vec<u8> {
    let dt = t.to_zoned(jiff::tz::TimeZone::UTC).datetime();
    let year = dt.year();
    let rest = format!(
        "{:02}{:02}{:02}{:02}{:02}Z",
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    );
    if (1950..2050).contains(&year) {
        tlv(0x17, format!("{:02}{rest}", year % 100).as_bytes())
    } else {
        tlv(0x18, format!("{year:04}{rest}").as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_and_integers() {
        assert_eq!(tlv(0x04, &[1, 2]), vec![0x04, 2, 1, 2]);
        let long = tlv(0x04, &[0; 200]);
        assert_eq!(&long[..3], &[0x04, 0x81, 200]);
        let longer = tlv(0x04, &[0; 300]);
        assert_eq!(&longer[..4], &[0x04, 0x82, 0x01, 0x2C]);
        assert_eq!(uint(&[0, 0, 5]), vec![0x02, 1, 5]);
        assert_eq!(uint(&[0x80]), vec![0x02, 2, 0, 0x80]);
        assert_eq!(uint(&[0]), vec![0x02, 1, 0]);
        assert_eq!(uint(&[]), vec![0x02, 1, 0]);
    }

    #[test]
    fn key_usage_bits() {
        // digitalSignature (0) + keyEncipherment (2): 0b1010_0000, 5 unused bits.
        assert_eq!(named_bits(0b101), vec![0x03, 2, 5, 0xA0]);
        // keyCertSign (5) + cRLSign (6): 0b0000_0110, 1 unused bit.
        assert_eq!(named_bits(0b110_0000), vec![0x03, 2, 1, 0x06]);
        // decipherOnly (8) spills into a second byte.
        assert_eq!(named_bits(1 << 8), vec![0x03, 3, 7, 0x00, 0x80]);
    }

    #[test]
    fn times() {
        let t: Timestamp = "2030-01-02T03:04:05Z".parse().expect("ts");
        assert_eq!(time(t), tlv(0x17, b"300102030405Z"));
        let t: Timestamp = "2051-01-02T03:04:05Z".parse().expect("ts");
        assert_eq!(time(t), tlv(0x18, b"20510102030405Z"));
    }

    #[test]
    fn strings() {
        assert_eq!(directory_string("system:masters")[0], 0x13);
        assert_eq!(directory_string("a_b")[0], 0x0C);
        assert_eq!(directory_string("ü")[0], 0x0C);
    }
}
