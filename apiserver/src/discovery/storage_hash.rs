//! kube's `storageVersionHash`: an opaque value in legacy discovery (`APIResource`) that
//! changes exactly when the group, version or kind a resource is stored as changes, so storage
//! migrators can tell when stored objects need rewriting. kube computes it as the standard
//! base64 of the first 8 bytes of the SHA-256 of `<group>/<version>/<kind>` (empty group for
//! core), over the *storage* version; clients may only compare values for equality.
//!
//! Only resources that are stored carry one: kube leaves it out for subresources and for
//! create-only kinds such as the access reviews, and aggregated discovery
//! (`apidiscovery.k8s.io/v2`) has no such field at all.

use base64::Engine;

use crate::registry::ResourceInfo;

/// The hash of one storage group, version and kind.
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{group}/{version}/{kind}").as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(&digest.as_ref()[..8])
}

/// The `storageVersionHash` of a resource's discovery entry; `None` for resources that are
/// never stored.
pub fn resource_storage_hash(res: &ResourceInfo) -> Option<String> {
    if res.builtin().is_some_and(|kind| kind.is_virtual()) {
        return None;
    }
    // Events of events.k8s.io are stored as core Events, so both share one hash, as in kube.
    let api_version = res.storage_api_version();
    let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
    Some(storage_version_hash(group, version, &res.kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_match_kube_apiserver() {
        // Values a kube-apiserver publishes for these kinds.
        assert_eq!(storage_version_hash("", "v1", "Pod"), "xPOwRZ+Yhw8=");
        assert_eq!(storage_version_hash("", "v1", "Namespace"), "Q3oi5N2YM8M=");
        assert_eq!(storage_version_hash("", "v1", "Event"), "r2yiGXH7wu8=");
        assert_eq!(
            storage_version_hash("apps", "v1", "Deployment"),
            "8aSe+NMegvE="
        );
    }

    #[test]
    fn stored_resources_only() {
        let all = crate::registry::builtin_resources();
        let find = |group: &str, plural: &str| {
            all.iter()
                .find(|r| r.group == group && r.plural == plural)
                .cloned()
        };
        let review = find("authorization.k8s.io", "selfsubjectaccessreviews");
        assert_eq!(review.as_ref().and_then(resource_storage_hash), None);
        let events = find("events.k8s.io", "events");
        assert_eq!(
            events.as_ref().and_then(resource_storage_hash).as_deref(),
            Some("r2yiGXH7wu8=")
        );
        let configmaps = find("", "configmaps");
        assert_eq!(
            configmaps
                .as_ref()
                .and_then(resource_storage_hash)
                .as_deref(),
            Some("qFsyl6wFWjQ=")
        );
    }
}
