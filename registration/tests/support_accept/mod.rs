//! Shared set-up of the hub acceptance / CSR tests: an embedded hub with a signing CA, the
//! hub CRDs installed, and the hub controllers running.

#![allow(dead_code)]

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Resource, ResourceExt};
use ocm_api::cluster::v1::{ManagedCluster, ManagedClusterSpec};
use ocm_apiserver::tls::TlsMaterial;
use ocm_apiserver::{ApiServer, ApiServerConfig, Identity};
use ocm_registration::hub::{HubContext, HubOptions};
use ocm_runtime::metrics::ControllerMetrics;
use ocm_runtime::shutdown::Shutdown;
use serde::de::DeserializeOwned;

/// How long any wait may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(30);

/// An embedded hub with the registration hub controllers running.
pub struct Hub {
    pub server: ApiServer,
    pub admin: kube::Client,
    pub metrics: ControllerMetrics,
    pub shutdown: Shutdown,
    _dir: tempfile::TempDir,
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Hub {
    /// Starts a hub with `options` (cleanup requeue forced short).
    pub async fn start(options: HubOptions) -> Hub {
        let dir = tempfile::tempdir().unwrap();
        let tls = TlsMaterial::load_or_create(&dir.path().join("pki"), &[]).unwrap();
        let server = ApiServer::start(ApiServerConfig {
            client_ca: Some(tls.ca_cert.clone()),
            client_ca_key: Some(tls.ca_key.clone()),
            ..ApiServerConfig::default()
        })
        .await
        .unwrap();
        let admin = kube::Client::new(server.service(), "default");
        install_crds(&admin).await;
        let metrics = ControllerMetrics::new("test");
        let shutdown = Shutdown::new();
        let ctx = Arc::new(HubContext {
            client: admin.clone(),
            options: HubOptions {
                cleanup_requeue: Duration::from_millis(300),
                ..options
            },
            metrics: metrics.clone(),
            shutdown: shutdown.clone(),
        });
        tokio::spawn(ocm_registration::hub::run(ctx));
        Hub {
            server,
            admin,
            metrics,
            shutdown,
            _dir: dir,
        }
    }

    /// A client acting as `user` in `groups` (RBAC applies).
    pub fn client_as(&self, user: &str, groups: &[&str]) -> kube::Client {
        kube::Client::new(
            self.server.service_as(Identity {
                user: user.to_owned(),
                groups: groups.iter().map(|g| (*g).to_owned()).collect(),
                ..Default::default()
            }),
            "default",
        )
    }

    /// A client acting as agent `agent` of `cluster`.
    pub fn agent(&self, cluster: &str, agent: &str) -> kube::Client {
        let user = format!("system:open-cluster-management:{cluster}:{agent}");
        let group = format!("system:open-cluster-management:{cluster}");
        self.client_as(&user, &[&group, "system:authenticated"])
    }

    /// How many reconciles `controller` ran.
    pub fn reconciles(&self, controller: &str) -> u64 {
        let needle = format!("reconciles_total{{controller=\"{controller}\"}}");
        self.metrics
            .encode()
            .lines()
            .find(|l| l.contains(&needle))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }

    /// Waits until `controller` ran at least `n` reconciles.
    pub async fn wait_reconciles(&self, controller: &str, n: u64) {
        tokio::time::timeout(WAIT, async {
            while self.reconciles(controller) < n {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{controller} did not reach {n} reconciles"));
    }

    /// Creates a ManagedCluster.
    pub async fn create_cluster(&self, name: &str, accepts: bool) -> ManagedCluster {
        let api: Api<ManagedCluster> = Api::all(self.admin.clone());
        api.create(
            &PostParams::default(),
            &ManagedCluster::new(
                name,
                ManagedClusterSpec {
                    hub_accepts_client: accepts,
                    ..ManagedClusterSpec::default()
                },
            ),
        )
        .await
        .unwrap()
    }

    /// Whether `client` may do `verb` on `resource` (`group`, optional `subresource`,
    /// `namespace`, `name`), asked as admin with a SubjectAccessReview for `user`/`groups`.
    #[allow(clippy::too_many_arguments)]
    pub async fn can(
        &self,
        user: &str,
        groups: &[&str],
        verb: &str,
        group: &str,
        resource: &str,
        subresource: Option<&str>,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> bool {
        let api: Api<SubjectAccessReview> = Api::all(self.admin.clone());
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.to_owned()),
                groups: Some(groups.iter().map(|g| (*g).to_owned()).collect()),
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(verb.to_owned()),
                    group: Some(group.to_owned()),
                    resource: Some(resource.to_owned()),
                    subresource: subresource.map(str::to_owned),
                    namespace: namespace.map(str::to_owned),
                    name: name.map(str::to_owned),
                    ..ResourceAttributes::default()
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let out = api.create(&PostParams::default(), &review).await.unwrap();
        out.status.is_some_and(|s| s.allowed)
    }
}

async fn install_crds(client: &kube::Client) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in ocm_api::crds::hub() {
        api.create(&PostParams::default(), &crd).await.unwrap();
    }
    for crd in ocm_api::crds::hub() {
        let name = crd.name_any();
        tokio::time::timeout(
            WAIT,
            await_condition(api.clone(), &name, conditions::is_crd_established()),
        )
        .await
        .unwrap()
        .unwrap();
    }
}

/// Waits until the object `name` of `api` satisfies `pred`; returns it.
pub async fn wait_for<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    pred: impl Fn(&K) -> bool + Send + 'static,
) -> K
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let cond = move |o: Option<&K>| o.is_some_and(&pred);
    match tokio::time::timeout(WAIT, await_condition(api.clone(), name, cond)).await {
        Ok(Ok(Some(obj))) => obj,
        Ok(other) => panic!("waiting for {what}: {other:?}"),
        Err(_) => panic!(
            "timed out waiting for {what}; last seen: {:#?}",
            api.get_opt(name).await
        ),
    }
}

/// Waits until `name` is gone from `api`.
pub async fn wait_gone<K>(api: &Api<K>, name: &str, what: &str)
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let cond = |o: Option<&K>| o.is_none();
    match tokio::time::timeout(WAIT, await_condition(api.clone(), name, cond)).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => panic!("waiting for {what} to be gone: {e}"),
        Err(_) => panic!(
            "timed out waiting for {what} to be gone; last seen: {:#?}",
            api.get_opt(name).await
        ),
    }
}

/// The condition `type_` of a ManagedCluster, as (status, reason, message).
pub fn cluster_condition(c: &ManagedCluster, type_: &str) -> Option<(String, String, String)> {
    c.status
        .as_ref()?
        .conditions
        .iter()
        .find(|x| x.type_ == type_)
        .map(|x| (x.status.clone(), x.reason.clone(), x.message.clone()))
}
