//! What the agent's addon tasks (certificates in [`super::addons`], tokens in
//! [`super::addon_tokens`], Lease health in [`super::addon_health`]) share: the environment
//! they run in, the credential an addon asks for and where it goes, and how they write its
//! secret and the addon's conditions.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use ocm_api::addon::names::DEFAULT_INSTALL_NAMESPACE;
use ocm_api::addon::names::annotations::{HOSTING_CLUSTER_NAME, V1ALPHA1_INSTALL_NAMESPACE};
use ocm_api::addon::names::labels::{ADDON_NAME, ADDON_NAMESPACE};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_runtime::conditions::{condition, set_condition};
use ocm_runtime::kubeconfig::ServerInfo;
use serde_json::json;
use tokio::sync::watch;

use super::{AgentOptions, CLIENT_SIGNER};

/// One certificate an addon agent needs on this cluster, as the agent acts on it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct AddonCredential {
    /// The addon (name of the ManagedClusterAddOn).
    pub addon: String,
    /// Install namespace on the managed cluster, where the secret goes.
    pub namespace: String,
    /// Signer of the certificate ([`CLIENT_SIGNER`] for a `kubeClient` registration).
    pub signer: String,
    /// Subject CN.
    pub user: String,
    /// Subject O.
    pub groups: Vec<String>,
    /// Subject OU (custom signers only).
    pub organization_units: Vec<String>,
    /// Name of the secret holding it.
    pub secret: String,
    /// The addon runs in hosted mode (its ManagedClusterAddOn names a hosting cluster): the
    /// secret goes to the cluster the agent runs on, not the managed cluster.
    pub hosted: bool,
    /// Token driver: the UID of the ServiceAccount whose tokens the secret holds (instead of
    /// a certificate); see [`super::addon_tokens`].
    pub token_of: Option<String>,
}

impl AddonCredential {
    /// Whether this is a `kubeClient` registration (its secret carries a kubeconfig).
    pub fn is_kube_client(&self) -> bool {
        self.signer == CLIENT_SIGNER
    }
}

/// Whether `mca` runs in hosted mode: it names a hosting cluster.
pub fn is_hosted(mca: &ManagedClusterAddOn) -> bool {
    mca.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(HOSTING_CLUSTER_NAME))
        .is_some_and(|h| !h.is_empty())
}

/// The install namespace of `mca` on the cluster, as upstream's agent finds it: the one the
/// hub wrote (`status.namespace`), else the one a v1alpha1 client asked for (kept in annotation
/// `addon.open-cluster-management.io/v1alpha1-install-namespace` of the v1beta1 object), else
/// `open-cluster-management-agent-addon`.
pub fn install_namespace(mca: &ManagedClusterAddOn) -> String {
    mca.status
        .as_ref()
        .map(|s| s.namespace.as_str())
        .filter(|ns| !ns.is_empty())
        .or_else(|| {
            mca.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(V1ALPHA1_INSTALL_NAMESPACE))
                .map(String::as_str)
                .filter(|ns| !ns.is_empty())
        })
        .unwrap_or(DEFAULT_INSTALL_NAMESPACE)
        .to_owned()
}

/// What the addon controllers share.
#[derive(Clone)]
pub(crate) struct AddonEnv {
    pub(crate) spoke: kube::Client,
    /// The cluster the agent runs on (the managed cluster, or in Hosted mode the management
    /// cluster): where hosted addons' agents run, so where their secrets and Leases are.
    pub(crate) management: kube::Client,
    pub(crate) hub: watch::Receiver<kube::Client>,
    pub(crate) cluster: String,
    pub(crate) server: ServerInfo,
    pub(crate) options: AgentOptions,
}

impl AddonEnv {
    pub(crate) fn hub(&self) -> kube::Client {
        self.hub.borrow().clone()
    }

    /// The cluster where an addon's agent runs: the management cluster for a hosted addon,
    /// else the managed cluster.
    pub(crate) fn agent_cluster(&self, hosted: bool) -> kube::Client {
        if hosted {
            self.management.clone()
        } else {
            self.spoke.clone()
        }
    }
}

/// The cluster's ManagedClusterAddOns by name; `None` until the first list arrived.
pub(crate) type SeenAddons = watch::Receiver<Option<BTreeMap<String, ManagedClusterAddOn>>>;

/// Writes `data` into the secret of `credential` (other keys kept), making it and its
/// namespace if missing.
pub(crate) async fn write_secret_data(
    env: &AddonEnv,
    credential: &AddonCredential,
    data: BTreeMap<String, ByteString>,
) -> Result<(), kube::Error> {
    let namespaces = Api::<Namespace>::all(env.agent_cluster(credential.hosted));
    if namespaces.get_opt(&credential.namespace).await?.is_none() {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(credential.namespace.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        match namespaces.create(&PostParams::default(), &ns).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(err) => return Err(err),
        }
    }
    let mut labels: BTreeMap<String, String> = [(ADDON_NAME.to_owned(), credential.addon.clone())]
        .into_iter()
        .collect();
    if credential.hosted {
        // On a cluster that may run other clusters' agents (and its own): whose secret it is.
        labels.insert(ADDON_NAMESPACE.to_owned(), env.cluster.clone());
    }
    let api =
        Api::<Secret>::namespaced(env.agent_cluster(credential.hosted), &credential.namespace);
    super::secrets::upsert_opaque_secret(
        &api,
        &credential.secret,
        &credential.namespace,
        &labels,
        data,
    )
    .await
}

/// Sets condition `type_` on the MCA of `credential`, logging a failure.
pub(crate) async fn report_condition(
    env: &AddonEnv,
    credential: &AddonCredential,
    type_: &str,
    state: &str,
    reason: &str,
    message: &str,
) {
    let wanted = condition(type_, state, reason, message, None);
    if let Err(err) = set_addon_condition(&env.hub(), &env.cluster, &credential.addon, wanted).await
    {
        tracing::warn!(error = %err, addon = credential.addon, condition = type_, "reporting an addon condition");
    }
}

/// Sets `wanted` among the conditions of MCA `addon` in `cluster`'s namespace: a merge patch
/// of `status.conditions` computed from the object read, conditional on its resourceVersion,
/// retried on conflict. Returns whether it wrote (`false`: unchanged or no such MCA).
pub(crate) async fn set_addon_condition(
    hub: &kube::Client,
    cluster: &str,
    addon: &str,
    wanted: Condition,
) -> Result<bool, kube::Error> {
    let api = Api::<ManagedClusterAddOn>::namespaced(hub.clone(), cluster);
    for _ in 0..5 {
        let Some(mca) = api.get_opt(addon).await? else {
            return Ok(false);
        };
        let mut list = mca
            .status
            .as_ref()
            .map(|s| s.conditions.clone())
            .unwrap_or_default();
        if !set_condition(&mut list, wanted.clone()) {
            return Ok(false);
        }
        let patch = json!({
            "metadata": {"resourceVersion": mca.metadata.resource_version},
            "status": {"conditions": list},
        });
        match api
            .patch_status(addon, &PatchParams::default(), &Patch::Merge(patch))
            .await
        {
            Ok(_) => return Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(err) => return Err(err),
        }
    }
    Ok(false)
}
