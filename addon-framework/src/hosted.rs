//! Hosted mode — pure: an addon whose ManagedClusterAddOn carries
//! `addon.open-cluster-management.io/hosting-cluster-name` runs its agent on that hosting
//! cluster instead of the managed one.
//!
//! Manifests annotated `addon.open-cluster-management.io/hosted-manifest-location: hosting`
//! go to the hosting cluster, in works `addon-<addon>-deploy-hosting-<cluster>-<i>` in the
//! hosting cluster's namespace (labelled with the addon's cluster, not owned: the manager
//! removes them behind the `hosting-manifests-cleanup` finalizer), their pre-delete hooks in
//! `addon-<addon>-pre-delete-hosting-<cluster>` (run behind `hosting-addon-pre-delete`
//! before anything goes); `none` goes nowhere;
//! everything else (`managed`, or no annotation) to the managed cluster as usual.
//!
//! The hosting cluster must be a managed cluster of the hub and, when the target's klusterlet
//! reports where it runs (the `hosting-cluster.open-cluster-management.io` cluster claim), the
//! cluster it names: only the target's own registration agent can observe the addon's Lease,
//! so an agent hosted anywhere else would stay `Unknown` forever. Anything else is refused
//! with the `HostingClusterValidity` condition and nothing is deployed.

use ocm_api::addon::names::annotations::{
    HOSTED_MANIFEST_LOCATION, HOSTED_MANIFEST_LOCATION_HOSTING, HOSTED_MANIFEST_LOCATION_MANAGED,
    HOSTED_MANIFEST_LOCATION_NONE, HOSTING_CLUSTER_NAME,
};
use ocm_api::addon::names::conditions::hosting_cluster_validity;
use ocm_api::addon::names::labels::{ADDON_NAMESPACE, DEPRECATED_HOSTED_MANIFEST_LOCATION};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use serde_json::{Value, json};

use crate::agent::AddonError;
use crate::works::WorkPlan;

/// The cluster claim a klusterlet reports the cluster its agents run on with.
pub const HOSTING_CLUSTER_CLAIM: &str = ocm_api::cluster::names::claims::HOSTING_CLUSTER;

/// The hosting cluster `mca` asks for, when the addon supports hosted mode.
pub fn hosting_cluster(mca: &ManagedClusterAddOn, supported: bool) -> Option<String> {
    if !supported {
        return None;
    }
    mca.metadata
        .annotations
        .as_ref()?
        .get(HOSTING_CLUSTER_NAME)
        .filter(|h| !h.is_empty())
        .cloned()
}

/// Where the target's klusterlet says its agents run, if it says.
pub fn reported_hosting_cluster(target: &ManagedCluster) -> Option<&str> {
    target
        .status
        .as_ref()?
        .cluster_claims
        .iter()
        .find(|c| c.name == HOSTING_CLUSTER_CLAIM)
        .map(|c| c.value.as_str())
        .filter(|v| !v.is_empty())
}

/// The `HostingClusterValidity` verdict: `Ok(message)` when `hosting` may host the addon of
/// `target`, else `Err((reason, message))`. `hosting_cluster` is the hosting cluster's
/// ManagedCluster, if there is one.
pub fn validity(
    target: &ManagedCluster,
    hosting: &str,
    hosting_cluster: Option<&ManagedCluster>,
) -> Result<String, (&'static str, String)> {
    let target_name = target.metadata.name.as_deref().unwrap_or_default();
    if hosting_cluster.is_none_or(|c| c.metadata.deletion_timestamp.is_some()) {
        return Err((
            hosting_cluster_validity::INVALID,
            format!("hosting cluster {hosting} is not a managed cluster of the hub"),
        ));
    }
    match reported_hosting_cluster(target) {
        Some(reported) if reported != hosting => Err((
            hosting_cluster_validity::MISMATCH,
            format!(
                "the klusterlet of cluster {target_name} runs on cluster {reported} (its \
                 {HOSTING_CLUSTER_CLAIM} claim), not on {hosting}: an agent hosted on \
                 {hosting} could not be observed by it; host the addon on {reported}"
            ),
        )),
        Some(_) => Ok(format!(
            "hosting cluster {hosting} is where the klusterlet of cluster {target_name} runs"
        )),
        None => Ok(format!(
            "hosting cluster {hosting} is a managed cluster of the hub"
        )),
    }
}

/// Where a manifest goes in hosted mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// The managed cluster.
    Managed,
    /// The hosting cluster.
    Hosting,
    /// Nowhere.
    None,
}

/// The location a manifest asks for (annotation, else upstream's deprecated label).
pub fn location(manifest: &Value) -> Result<Location, AddonError> {
    let value = manifest
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(HOSTED_MANIFEST_LOCATION))
        .or_else(|| {
            manifest
                .pointer("/metadata/labels")
                .and_then(|l| l.get(DEPRECATED_HOSTED_MANIFEST_LOCATION))
        })
        .and_then(Value::as_str);
    match value {
        None | Some(HOSTED_MANIFEST_LOCATION_MANAGED) => Ok(Location::Managed),
        Some(HOSTED_MANIFEST_LOCATION_HOSTING) => Ok(Location::Hosting),
        Some(HOSTED_MANIFEST_LOCATION_NONE) => Ok(Location::None),
        Some(other) => Err(AddonError::new(format!(
            "manifest {} {} has {HOSTED_MANIFEST_LOCATION} {other:?}: it must be managed, hosting or none",
            manifest["kind"].as_str().unwrap_or_default(),
            manifest
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
        ))),
    }
}

/// The manifests for the managed cluster and for the hosting cluster.
pub fn split(manifests: Vec<Value>) -> Result<(Vec<Value>, Vec<Value>), AddonError> {
    let mut managed = Vec::new();
    let mut hosting = Vec::new();
    for manifest in manifests {
        match location(&manifest)? {
            Location::Managed => managed.push(manifest),
            Location::Hosting => hosting.push(manifest),
            Location::None => {}
        }
    }
    Ok((managed, hosting))
}

/// Prefix of the hosting works of `addon` on `cluster`.
pub fn hosting_work_prefix(addon: &str, cluster: &str) -> String {
    format!("addon-{addon}-deploy-hosting-{cluster}-")
}

/// Name of the pre-delete hook work of `addon` on `cluster`, on its hosting cluster.
pub fn hosting_hook_work_name(addon: &str, cluster: &str) -> String {
    format!("addon-{addon}-pre-delete-hosting-{cluster}")
}

/// The works of a hosted addon on its hosting cluster.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostingWorks {
    /// `addon-<addon>-deploy-hosting-<cluster>-<i>`.
    pub deploy: Vec<Value>,
    /// `addon-<addon>-pre-delete-hosting-<cluster>`, when hook objects go to the hosting
    /// cluster.
    pub pre_delete: Option<Value>,
}

/// `plan` (made for the hosting manifests) moved to the hosting cluster: renamed, in
/// `hosting`'s namespace, labelled with the addon's cluster and owned by no one.
pub fn to_hosting(plan: WorkPlan, addon: &str, cluster: &str, hosting: &str) -> HostingWorks {
    let relocate = |mut work: Value, name: String| {
        let meta = &mut work["metadata"];
        meta["name"] = json!(name);
        meta["namespace"] = json!(hosting);
        meta["labels"][ADDON_NAMESPACE] = json!(cluster);
        if let Some(meta) = meta.as_object_mut() {
            meta.remove("ownerReferences");
        }
        work
    };
    HostingWorks {
        deploy: plan
            .deploy
            .into_iter()
            .enumerate()
            .map(|(i, work)| relocate(work, format!("{}{i}", hosting_work_prefix(addon, cluster))))
            .collect(),
        pre_delete: plan
            .pre_delete
            .map(|work| relocate(work, hosting_hook_work_name(addon, cluster))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::works::{WorkInput, plan};

    fn cluster(name: &str, claim: Option<&str>) -> ManagedCluster {
        let claims: Vec<Value> = claim
            .map(|c| json!({"name": HOSTING_CLUSTER_CLAIM, "value": c}))
            .into_iter()
            .collect();
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": {},
            "status": {"clusterClaims": claims}}))
        .unwrap()
    }

    #[test]
    fn the_hosting_cluster_must_be_where_the_klusterlet_runs() {
        let hosting = cluster("h", None);
        assert!(validity(&cluster("t", None), "h", Some(&hosting)).is_ok());
        assert!(
            validity(&cluster("t", Some("h")), "h", Some(&hosting))
                .unwrap()
                .contains("is where")
        );
        let (reason, message) =
            validity(&cluster("t", Some("other")), "h", Some(&hosting)).unwrap_err();
        assert_eq!(reason, "HostingClusterMismatch");
        assert!(message.contains("runs on cluster other"), "{message}");
        let (reason, _) = validity(&cluster("t", None), "ghost", None).unwrap_err();
        assert_eq!(reason, "HostingClusterInvalid");
    }

    #[test]
    fn manifests_go_where_their_location_says() {
        let m = |loc: Option<&str>, name: &str| {
            let mut v =
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
            if let Some(loc) = loc {
                v["metadata"]["annotations"] = json!({HOSTED_MANIFEST_LOCATION: loc});
            }
            v
        };
        let (managed, hosting) = split(vec![
            m(None, "a"),
            m(Some("managed"), "b"),
            m(Some("hosting"), "c"),
            m(Some("none"), "d"),
        ])
        .unwrap();
        assert_eq!(managed.len(), 2);
        assert_eq!(hosting[0]["metadata"]["name"], "c");
        assert!(
            split(vec![m(Some("elsewhere"), "e")])
                .unwrap_err()
                .0
                .contains("must be managed")
        );
        let planned = plan(&WorkInput {
            addon: "hello",
            cluster: "t",
            owner_uid: "u",
            manifests: &hosting,
            manifest_configs: &[],
            config_hash: None,
            limit: WorkInput::DEFAULT_LIMIT,
        })
        .unwrap();
        let works = to_hosting(planned, "hello", "t", "h");
        let work = &works.deploy[0];
        assert_eq!(work["metadata"]["name"], "addon-hello-deploy-hosting-t-0");
        assert_eq!(work["metadata"]["namespace"], "h");
        assert_eq!(work["metadata"]["labels"][ADDON_NAMESPACE], "t");
        assert!(work["metadata"].get("ownerReferences").is_none());
        assert!(works.pre_delete.is_none());
        let hook = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "bye",
            "annotations": {"addon.open-cluster-management.io/addon-pre-delete": ""}}});
        let planned = plan(&WorkInput {
            addon: "hello",
            cluster: "t",
            owner_uid: "u",
            manifests: &[hook],
            manifest_configs: &[],
            config_hash: None,
            limit: WorkInput::DEFAULT_LIMIT,
        })
        .unwrap();
        let hook = to_hosting(planned, "hello", "t", "h").pre_delete.unwrap();
        assert_eq!(hook["metadata"]["name"], "addon-hello-pre-delete-hosting-t");
        assert_eq!(hook["metadata"]["namespace"], "h");
    }
}
