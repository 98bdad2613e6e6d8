//! Writing a ManagedClusterAddOn's conditions from the hub's controllers.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, Patch, PatchParams};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use serde_json::json;

/// Replaces `mca`'s `status.conditions` with `conditions`, conditionally on the
/// resourceVersion it was read at: a newer version is a conflict (409), to be read again.
pub(crate) async fn patch_conditions(
    client: &kube::Client,
    mca: &ManagedClusterAddOn,
    conditions: &[Condition],
) -> Result<(), kube::Error> {
    let api: Api<ManagedClusterAddOn> = Api::namespaced(
        client.clone(),
        mca.metadata.namespace.as_deref().unwrap_or_default(),
    );
    let patch = json!({"metadata": {"resourceVersion": mca.metadata.resource_version},
                       "status": {"conditions": conditions}});
    api.patch_status(
        mca.metadata.name.as_deref().unwrap_or_default(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .map(drop)
}
