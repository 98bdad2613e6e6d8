//! The hashes the work agent names things by: lowercase hex SHA-256, and the hub's (of its
//! API server URL, as upstream computes it), which prefixes AppliedManifestWork names.

use ring::digest;

/// Lowercase hex SHA-256 of the hub API server URL, as upstream computes it.
pub fn hub_hash(hub_url: &str) -> String {
    sha256_hex(hub_url.as_bytes())
}

/// Lowercase hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    digest::digest(&digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_hash_is_hex_sha256_of_the_url() {
        let h = hub_hash("https://127.0.0.1:6443");
        assert_eq!(h.len(), 64);
        assert!(
            h.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_eq!(h, hub_hash("https://127.0.0.1:6443"));
        assert_ne!(h, hub_hash("https://127.0.0.1:6444"));
    }
}
