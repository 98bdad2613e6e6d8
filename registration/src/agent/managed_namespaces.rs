//! Managed namespaces on the managed cluster (upstream's managed-namespace reconcile of the
//! status sync).
//!
//! The hub lists in the ManagedCluster's `status.managedNamespaces` the namespaces the
//! cluster's sets ask for. The agent applies each one on the managed cluster with the label
//! `clusterset.open-cluster-management.io/<hub hash>: "true"` — the hub hash being the SHA-256
//! (hex) of the hub URL of the bootstrap kubeconfig, cut to 63 characters — and reports the
//! condition `NamespaceAvailable` (True/`NamespaceApplied`, or False/`NamespaceApplyFailed`
//! with the error) on each entry. A namespace that carries the label as `"true"` but is no
//! longer listed (its set dropped it, the cluster left the set, or the ManagedCluster is being
//! deleted) gets the label `"false"`; namespaces are never deleted, as upstream.

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams, Patch, PatchParams};
use ocm_api::cluster::names::conditions::{NAMESPACE_AVAILABLE, namespace_available};
use ocm_api::cluster::names::labels::MANAGED_NAMESPACE_PREFIX;
use ocm_api::cluster::v1::ClusterSetManagedNamespaceConfig;
use ocm_runtime::conditions::{condition, set_condition};
use serde_json::json;

/// Field manager of the agent's namespace applies.
const FIELD_MANAGER: &str = "registration-agent";

/// Longest name part of a prefixed label key.
const MAX_LABEL_NAME: usize = 63;

/// The label the agent puts on the namespaces it manages for the hub at `hub_url`:
/// `clusterset.open-cluster-management.io/` + hex SHA-256 of the URL, cut to 63 characters.
pub fn hub_cluster_set_label(hub_url: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, hub_url.as_bytes());
    let mut hash: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    hash.truncate(MAX_LABEL_NAME);
    format!("{MANAGED_NAMESPACE_PREFIX}{hash}")
}

/// `entries` with each one's `NamespaceAvailable` condition set from the outcome of applying
/// it (`Err` carries the error text). Returns whether anything but timestamps changed.
pub fn with_conditions(
    entries: &mut [ClusterSetManagedNamespaceConfig],
    outcomes: &[Result<(), String>],
) -> bool {
    let mut changed = false;
    for (entry, outcome) in entries.iter_mut().zip(outcomes) {
        let new = match outcome {
            Ok(()) => condition(
                NAMESPACE_AVAILABLE,
                "True",
                namespace_available::APPLIED,
                "Namespace successfully applied and managed",
                None,
            ),
            Err(err) => condition(
                NAMESPACE_AVAILABLE,
                "False",
                namespace_available::APPLY_FAILED,
                &format!("Failed to apply namespace: {err}"),
                None,
            ),
        };
        changed |= set_condition(&mut entry.conditions, new);
    }
    changed
}

/// The namespaces labelled as managed (`"true"`) that `entries` no longer lists.
pub fn no_longer_managed(
    labelled: &[String],
    entries: &[ClusterSetManagedNamespaceConfig],
) -> Vec<String> {
    labelled
        .iter()
        .filter(|ns| !entries.iter().any(|e| &e.name == *ns))
        .cloned()
        .collect()
}

/// Applies the label `label: value` on namespace `name` (creating it if missing).
async fn apply(spoke: &kube::Client, name: &str, label: &str, value: &str) -> Result<(), String> {
    let patch = json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": {label: value}},
    });
    Api::<Namespace>::all(spoke.clone())
        .patch(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Makes the managed cluster's namespaces match `entries` (all of them dropped when
/// `deleting`), setting each entry's condition. Returns whether the entries changed.
pub async fn reconcile(
    spoke: &kube::Client,
    label: &str,
    entries: &mut [ClusterSetManagedNamespaceConfig],
    deleting: bool,
) -> bool {
    let mut changed = false;
    if !deleting {
        let mut outcomes = Vec::with_capacity(entries.len());
        for entry in entries.iter() {
            let outcome = apply(spoke, &entry.name, label, "true").await;
            if let Err(err) = &outcome {
                tracing::warn!(namespace = %entry.name, cluster_set = %entry.cluster_set, error = %err, "applying a managed namespace");
            }
            outcomes.push(outcome);
        }
        changed = with_conditions(entries, &outcomes);
    }
    let keep: &[ClusterSetManagedNamespaceConfig] = if deleting { &[] } else { entries };
    let labelled = match Api::<Namespace>::all(spoke.clone())
        .list(&ListParams::default().labels(&format!("{label}=true")))
        .await
    {
        Ok(list) => list
            .items
            .into_iter()
            .filter_map(|ns| ns.metadata.name)
            .collect::<Vec<_>>(),
        Err(err) => {
            tracing::warn!(error = %err, "listing managed namespaces");
            return changed;
        }
    };
    for name in no_longer_managed(&labelled, keep) {
        match apply(spoke, &name, label, "false").await {
            Ok(()) => tracing::info!(namespace = %name, "namespace no longer managed"),
            Err(err) => {
                tracing::warn!(namespace = %name, error = %err, "marking a namespace as no longer managed");
            }
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn entry(name: &str) -> ClusterSetManagedNamespaceConfig {
        ClusterSetManagedNamespaceConfig {
            name: name.into(),
            cluster_set: "universal".into(),
            conditions: Vec::new(),
        }
    }

    #[test]
    fn the_label_is_keyed_by_the_hubs_url_hash_cut_to_63_characters() {
        let label = hub_cluster_set_label("https://127.0.0.1:6443");
        let (prefix, hash) = label.split_at(MANAGED_NAMESPACE_PREFIX.len());
        assert_eq!(prefix, "clusterset.open-cluster-management.io/");
        assert_eq!(hash.len(), 63);
        assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()));
        // sha256("abc"), as `printf abc | sha256sum` gives it, cut to 63.
        assert_eq!(
            hub_cluster_set_label("abc"),
            "clusterset.open-cluster-management.io/ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015a"
        );
    }

    #[test]
    fn conditions_say_whether_each_namespace_was_applied() {
        let mut entries = vec![entry("a"), entry("b")];
        let outcomes = vec![Ok(()), Err("forbidden".to_owned())];
        assert!(with_conditions(&mut entries, &outcomes));
        let a = &entries[0].conditions[0];
        assert_eq!(
            (a.type_.as_str(), a.status.as_str(), a.reason.as_str()),
            ("NamespaceAvailable", "True", "NamespaceApplied")
        );
        let b = &entries[1].conditions[0];
        assert_eq!(
            (b.status.as_str(), b.reason.as_str()),
            ("False", "NamespaceApplyFailed")
        );
        assert!(b.message.contains("forbidden"));
        // The same outcome again changes nothing.
        assert!(!with_conditions(&mut entries, &outcomes));
    }

    #[test]
    fn labelled_namespaces_no_longer_listed_are_released() {
        let labelled = vec!["a".to_owned(), "b".to_owned(), "c".to_owned()];
        assert_eq!(
            no_longer_managed(&labelled, &[entry("b")]),
            vec!["a".to_owned(), "c".to_owned()]
        );
        assert_eq!(no_longer_managed(&labelled, &[]), labelled);
    }
}
