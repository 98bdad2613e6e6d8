//! Test bench for the registration agent: an embedded hub served over real TLS with the hub
//! CRDs, a bootstrap token and upstream's bootstrap RBAC, and a simulated managed cluster
//! (`spoke1`, an in-process logical cluster) with the klusterlet CRDs and a few nodes. The
//! test plays the hub admin: it approves CSRs and accepts clusters itself.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Node, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Resource, ResourceExt};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1alpha1::ClusterClaim;
use ocm_apiserver::serve::{Serving, serve_tls};
use ocm_apiserver::tls::TlsMaterial;
use ocm_apiserver::{ApiServer, ApiServerConfig};
use ocm_registration::agent::{
    Agent, AgentError, AgentOptions, AgentProgress, BOOTSTRAP_KUBECONFIG_SECRET,
    DEFAULT_AGENT_NAMESPACE,
};
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::kubeconfig::{KubeconfigAuth, KubeconfigSpec, ServerInfo, render};
use ocm_runtime::shutdown::Shutdown;
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio::task::JoinHandle;

/// Longest wait for anything in these tests.
pub const WAIT: Duration = Duration::from_secs(60);
/// Name of the simulated managed cluster.
pub const SPOKE: &str = "spoke1";
/// The bootstrap token.
pub const TOKEN_ID: &str = "ocmhub";
/// The bootstrap token secret.
pub const TOKEN_SECRET: &str = "0123456789abcdef";
/// Extra group of the bootstrap token.
pub const BOOTSTRAP_GROUP: &str = "system:bootstrappers:managedcluster";

/// Hub, spoke and the TLS material tying them together.
pub struct Bench {
    pub server: ApiServer,
    pub serving: Serving,
    pub dir: tempfile::TempDir,
    pub url: String,
    pub ca_pem: String,
    /// Hub admin (in-process).
    pub hub: kube::Client,
    /// Spoke admin (in-process logical cluster `spoke1`).
    pub spoke: kube::Client,
}

impl Bench {
    /// Starts a hub whose signer issues certificates of at most `signing` lifetime.
    pub async fn start(signing: Duration) -> Bench {
        Bench::start_with(signing, true).await
    }

    /// Like [`Bench::start`]; `klusterlet_crds` false leaves the spoke without the
    /// ClusterClaim API.
    pub async fn start_with(signing: Duration, klusterlet_crds: bool) -> Bench {
        let dir = tempfile::tempdir().unwrap();
        let tls = TlsMaterial::load_or_create(&dir.path().join("pki"), &[]).unwrap();
        let server = ApiServer::start(ApiServerConfig {
            client_ca: Some(tls.ca_cert.clone()),
            client_ca_key: Some(tls.ca_key.clone()),
            csr_signing_duration: signing,
            ..ApiServerConfig::default()
        })
        .await
        .unwrap();
        let serving = serve_tls(
            server.clone(),
            "127.0.0.1:0".parse().unwrap(),
            tls.server_config().unwrap(),
        )
        .await
        .unwrap();
        let url = format!("https://127.0.0.1:{}", serving.local_addr.port());
        server.ensure_cluster(SPOKE).await.unwrap();
        let hub = kube::Client::new(server.service(), "default");
        let spoke = kube::Client::new(server.service_for_cluster(SPOKE), "default");
        install_crds(&hub, ocm_api::crds::hub()).await;
        if klusterlet_crds {
            install_crds(&spoke, ocm_api::crds::klusterlet()).await;
        }
        let bench = Bench {
            server,
            serving,
            dir,
            url,
            ca_pem: tls.ca_cert.clone(),
            hub,
            spoke,
        };
        bench.create_bootstrap_token().await;
        bench.create_bootstrap_rbac().await;
        create(
            &Api::<Namespace>::all(bench.spoke.clone()),
            json!({"metadata": {"name": DEFAULT_AGENT_NAMESPACE}}),
        )
        .await;
        bench
            .write_bootstrap_secret(&bench.bootstrap_kubeconfig())
            .await;
        bench
    }

    async fn create_bootstrap_token(&self) {
        let b = |s: &str| ByteString(s.as_bytes().to_vec());
        let secret = Secret {
            metadata: kube::api::ObjectMeta {
                name: Some(format!("bootstrap-token-{TOKEN_ID}")),
                namespace: Some("kube-system".into()),
                ..Default::default()
            },
            type_: Some("bootstrap.kubernetes.io/token".into()),
            data: Some(BTreeMap::from([
                ("token-id".into(), b(TOKEN_ID)),
                ("token-secret".into(), b(TOKEN_SECRET)),
                ("usage-bootstrap-authentication".into(), b("true")),
                ("auth-extra-groups".into(), b(BOOTSTRAP_GROUP)),
            ])),
            ..Default::default()
        };
        Api::<Secret>::namespaced(self.hub.clone(), "kube-system")
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();
    }

    /// Upstream's bootstrap ClusterRole and its binding to the bootstrap token group.
    async fn create_bootstrap_rbac(&self) {
        create_rbac(
            &self.hub,
            json!([
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                 "metadata": {"name": "open-cluster-management:bootstrap"},
                 "rules": [
                    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
                    {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["create", "get", "list", "watch"]},
                    {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["managedclusters"], "verbs": ["get", "create", "list", "watch"]},
                    {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["managedclustersets/join"], "verbs": ["create"]},
                 ]},
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                 "metadata": {"name": "open-cluster-management:bootstrap:managedcluster"},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "open-cluster-management:bootstrap"},
                 "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": BOOTSTRAP_GROUP}]},
            ]),
        )
        .await;
    }

    /// A kubeconfig with the bootstrap token and the hub CA.
    pub fn bootstrap_kubeconfig(&self) -> String {
        render(&KubeconfigSpec {
            server: ServerInfo {
                server: self.url.clone(),
                ca_pem: Some(self.ca_pem.clone()),
                proxy_url: None,
            },
            auth: KubeconfigAuth::Token(format!("{TOKEN_ID}.{TOKEN_SECRET}")),
            context: "bootstrap".into(),
            user: "bootstrap".into(),
            namespace: None,
        })
    }

    /// Creates or overwrites the bootstrap kubeconfig secret on the spoke.
    pub async fn write_bootstrap_secret(&self, kubeconfig: &str) {
        let api = Api::<Secret>::namespaced(self.spoke.clone(), DEFAULT_AGENT_NAMESPACE);
        let secret = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": BOOTSTRAP_KUBECONFIG_SECRET, "namespace": DEFAULT_AGENT_NAMESPACE},
            "data": {"kubeconfig": ocm_apiserver::tls::base64(kubeconfig.as_bytes())},
        });
        api.patch(
            BOOTSTRAP_KUBECONFIG_SECRET,
            &PatchParams::apply("test").force(),
            &Patch::Apply(secret),
        )
        .await
        .unwrap();
    }

    /// Deletes the bootstrap kubeconfig secret on the spoke.
    pub async fn delete_bootstrap_secret(&self) {
        Api::<Secret>::namespaced(self.spoke.clone(), DEFAULT_AGENT_NAMESPACE)
            .delete(BOOTSTRAP_KUBECONFIG_SECRET, &DeleteParams::default())
            .await
            .unwrap();
    }

    /// Agent options with short periods.
    pub fn options(&self, cluster: &str) -> AgentOptions {
        AgentOptions {
            cluster_name: cluster.into(),
            status_sync_period: Duration::from_secs(2),
            cert_check_period: Duration::from_secs(60),
            external_server_urls: vec![("https://spoke1.example:6443".into(), None)],
            ..AgentOptions::default()
        }
    }

    /// Starts an agent for the spoke.
    pub fn spawn_agent(&self, options: AgentOptions) -> RunningAgent {
        let agent = Agent::new(self.spoke.clone(), options);
        let progress = agent.progress();
        let shutdown = Shutdown::new();
        let task = tokio::spawn(agent.run(shutdown.clone()));
        RunningAgent {
            shutdown,
            task,
            progress,
        }
    }

    /// Creates spoke nodes with the given (cpu, memory, unschedulable).
    pub async fn create_nodes(&self, nodes: &[(&str, &str, &str, bool)]) {
        let api = Api::<Node>::all(self.spoke.clone());
        for (name, cpu, memory, unschedulable) in nodes {
            let node: Node = serde_json::from_value(json!({
                "metadata": {"name": name},
                "spec": {"unschedulable": unschedulable},
            }))
            .unwrap();
            api.create(&PostParams::default(), &node).await.unwrap();
            let status = json!({"status": {
                "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            }});
            api.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
                .await
                .unwrap();
        }
    }

    /// Creates a ClusterClaim on the spoke.
    pub async fn create_claim(&self, name: &str, value: &str, spoke_only: bool) {
        let labels = if spoke_only {
            json!({"open-cluster-management.io/spoke-only": ""})
        } else {
            json!({})
        };
        create(
            &Api::<ClusterClaim>::all(self.spoke.clone()),
            json!({"metadata": {"name": name, "labels": labels}, "spec": {"value": value}}),
        )
        .await;
    }

    /// CSRs of `cluster` on the hub.
    pub async fn csrs(&self, cluster: &str) -> Vec<CertificateSigningRequest> {
        Api::<CertificateSigningRequest>::all(self.hub.clone())
            .list(&ListParams::default().labels(&format!(
                "open-cluster-management.io/cluster-name={cluster}"
            )))
            .await
            .unwrap()
            .items
    }

    /// Waits for a pending CSR of `cluster` that is not in `except`, approves it and returns
    /// its name.
    pub async fn approve_next_csr(&self, cluster: &str, except: &[String]) -> String {
        let api = Api::<CertificateSigningRequest>::all(self.hub.clone());
        let except = except.to_vec();
        let found = wait_list(
            &api,
            watcher::Config::default().labels(&format!(
                "open-cluster-management.io/cluster-name={cluster}"
            )),
            "a new pending CSR",
            move |csrs| {
                csrs.iter()
                    .find(|c| pending(c) && !except.contains(&c.name_any()))
                    .map(|c| c.name_any())
            },
        )
        .await;
        approve(&api, &found).await;
        found
    }

    /// Waits for a pending CSR of `cluster` requested by a user starting with `user_prefix`
    /// and not in `except`, approves it and returns its name.
    pub async fn approve_next_csr_from(
        &self,
        cluster: &str,
        user_prefix: &str,
        except: &[String],
    ) -> String {
        let api = Api::<CertificateSigningRequest>::all(self.hub.clone());
        let except = except.to_vec();
        let prefix = user_prefix.to_owned();
        let found = wait_list(
            &api,
            watcher::Config::default().labels(&format!(
                "open-cluster-management.io/cluster-name={cluster}"
            )),
            "a new pending CSR from the given user",
            move |csrs| {
                csrs.iter()
                    .find(|c| {
                        pending(c)
                            && !except.contains(&c.name_any())
                            && c.spec
                                .username
                                .as_deref()
                                .is_some_and(|u| u.starts_with(&prefix))
                    })
                    .map(|c| c.name_any())
            },
        )
        .await;
        approve(&api, &found).await;
        found
    }

    /// Accepts `cluster` the way the hub would: hubAcceptsClient, cluster namespace, RBAC,
    /// lease, and the HubAccepted condition.
    pub async fn accept(&self, cluster: &str, lease_seconds: i32) {
        let clusters = Api::<ManagedCluster>::all(self.hub.clone());
        wait_for(&clusters, cluster, "the ManagedCluster", |_| true).await;
        clusters
            .patch(
                cluster,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"hubAcceptsClient": true, "leaseDurationSeconds": lease_seconds}})),
            )
            .await
            .unwrap();
        create(
            &Api::<Namespace>::all(self.hub.clone()),
            json!({"metadata": {"name": cluster, "labels": {"open-cluster-management.io/cluster-name": cluster}}}),
        )
        .await;
        self.create_cluster_rbac(cluster).await;
        create(
            &Api::<Lease>::namespaced(self.hub.clone(), cluster),
            json!({"metadata": {"name": "managed-cluster-lease", "namespace": cluster,
                                "labels": {"open-cluster-management.io/cluster-name": cluster}},
                   "spec": {"holderIdentity": "managed-cluster-lease", "leaseDurationSeconds": lease_seconds}}),
        )
        .await;
        self.set_hub_accepted(cluster).await;
    }

    /// Sets HubAcceptedManagedCluster=True (as the hub controller would).
    pub async fn set_hub_accepted(&self, cluster: &str) {
        self.set_hub_accepted_status(cluster, "True").await;
    }

    /// Sets HubAcceptedManagedCluster to `status` (`False` = denied by the hub admin).
    pub async fn set_hub_accepted_status(&self, cluster: &str, status: &str) {
        let reason = if status == "True" {
            "HubClusterAdminAccepted"
        } else {
            "HubClusterAdminDenied"
        };
        let clusters = Api::<ManagedCluster>::all(self.hub.clone());
        for _ in 0..10 {
            let mc = clusters.get(cluster).await.unwrap();
            let mut list = mc.status.clone().unwrap_or_default().conditions;
            ocm_runtime::conditions::set_condition(
                &mut list,
                ocm_runtime::conditions::condition(
                    "HubAcceptedManagedCluster",
                    status,
                    reason,
                    "set by the test",
                    None,
                ),
            );
            let patch = json!({"metadata": {"resourceVersion": mc.resource_version()},
                               "status": {"conditions": list}});
            match clusters
                .patch_status(cluster, &PatchParams::default(), &Patch::Merge(patch))
                .await
            {
                Ok(_) => return,
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(err) => panic!("accepting {cluster}: {err}"),
            }
        }
        panic!("accepting {cluster}: conflicts");
    }

    /// The per-cluster RBAC the hub creates on acceptance (ocm-spec §2.3).
    pub async fn create_cluster_rbac(&self, cluster: &str) {
        let name = format!("open-cluster-management:managedcluster:{cluster}");
        let groups = json!([
            {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": format!("system:open-cluster-management:{cluster}")},
            {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": format!("open-cluster-management:{cluster}")},
        ]);
        create_rbac(
            &self.hub,
            json!([
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                 "metadata": {"name": name, "labels": {"open-cluster-management.io/cluster-name": cluster}},
                 "rules": [
                    {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["create", "get", "list", "watch"]},
                    {"apiGroups": ["register.open-cluster-management.io"], "resources": ["managedclusters/clientcertificates"], "verbs": ["renew"]},
                    {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["managedclusters"], "resourceNames": [cluster], "verbs": ["get", "list", "update", "watch"]},
                    {"apiGroups": ["cluster.open-cluster-management.io"], "resources": ["managedclusters/status"], "resourceNames": [cluster], "verbs": ["patch", "update"]},
                 ]},
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                 "metadata": {"name": name},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                 "subjects": groups},
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                 "metadata": {"name": format!("open-cluster-management:managedcluster:{cluster}:registration"), "namespace": cluster},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "open-cluster-management:managedcluster:registration"},
                 "subjects": groups},
            ]),
        )
        .await;
        let registration = json!([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "open-cluster-management:managedcluster:registration"},
             "rules": [
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "list", "watch", "update"]},
                {"apiGroups": ["addon.open-cluster-management.io"], "resources": ["managedclusteraddons"], "verbs": ["get", "list", "watch"]},
                {"apiGroups": ["addon.open-cluster-management.io"], "resources": ["managedclusteraddons/status"], "verbs": ["patch", "update"]},
                {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create"]},
             ]},
        ]);
        let roles = Api::<k8s_openapi::api::rbac::v1::ClusterRole>::all(self.hub.clone());
        if roles
            .get_opt("open-cluster-management:managedcluster:registration")
            .await
            .unwrap()
            .is_none()
        {
            create_rbac(&self.hub, registration).await;
        }
    }

    /// Waits until the ManagedCluster satisfies `pred`.
    pub async fn wait_cluster(
        &self,
        cluster: &str,
        what: &str,
        pred: impl Fn(&ManagedCluster) -> bool + Send + 'static,
    ) -> ManagedCluster {
        wait_for(
            &Api::<ManagedCluster>::all(self.hub.clone()),
            cluster,
            what,
            pred,
        )
        .await
    }

    /// Waits until the cluster lease was renewed after `after`.
    pub async fn wait_lease_renewed_after(&self, cluster: &str, after: jiff::Timestamp) -> Lease {
        wait_for(
            &Api::<Lease>::namespaced(self.hub.clone(), cluster),
            "managed-cluster-lease",
            "a lease renewal",
            move |l: &Lease| {
                l.spec
                    .as_ref()
                    .and_then(|s| s.renew_time.as_ref())
                    .is_some_and(|t| t.0 > after)
            },
        )
        .await
    }

    /// The hub kubeconfig secret on the spoke.
    pub async fn hub_secret(&self) -> Option<Secret> {
        Api::<Secret>::namespaced(self.spoke.clone(), DEFAULT_AGENT_NAMESPACE)
            .get_opt(ocm_registration::agent::HUB_KUBECONFIG_SECRET)
            .await
            .unwrap()
    }

    /// Approves every new pending CSR of `cluster` until aborted, and deletes issued CSRs
    /// older than the newest one so the per-cluster CSR limit is never reached.
    pub fn spawn_approver(&self, cluster: &str) -> JoinHandle<()> {
        let api = Api::<CertificateSigningRequest>::all(self.hub.clone());
        let selector = format!("open-cluster-management.io/cluster-name={cluster}");
        tokio::spawn(async move {
            let (reader, writer) = reflector::store();
            let mut events = std::pin::pin!(
                watcher(api.clone(), watcher::Config::default().labels(&selector))
                    .backoff_on_errors()
                    .reflect(writer)
                    .touched_objects()
            );
            while events.next().await.is_some() {
                let mut csrs = reader.state();
                csrs.sort_by_key(|c| c.metadata.creation_timestamp.clone().map(|t| t.0));
                for csr in csrs.iter().filter(|c| pending(c)) {
                    approve(&api, &csr.name_any()).await;
                }
                let issued: Vec<_> = csrs.iter().filter(|c| has_certificate(c)).collect();
                if issued.len() > 2 {
                    for old in &issued[..issued.len() - 2] {
                        let _ = api.delete(&old.name_any(), &DeleteParams::default()).await;
                    }
                }
            }
        })
    }
}

/// A running agent.
pub struct RunningAgent {
    pub shutdown: Shutdown,
    pub task: JoinHandle<Result<(), AgentError>>,
    pub progress: tokio::sync::watch::Receiver<AgentProgress>,
}

impl RunningAgent {
    /// Waits until the progress satisfies `pred`.
    pub async fn wait_progress(&mut self, what: &str, pred: impl Fn(&AgentProgress) -> bool) {
        let result = tokio::time::timeout(WAIT, self.progress.wait_for(|p| pred(p)))
            .await
            .map(|r| r.is_ok());
        match result {
            Ok(true) => {}
            _ => panic!(
                "timed out waiting for agent progress {what}; now: {}",
                *self.progress.borrow()
            ),
        }
    }

    /// Stops the agent and checks it returned Ok.
    pub async fn stop(self) {
        self.shutdown.cancel();
        tokio::time::timeout(WAIT, self.task)
            .await
            .expect("agent stops")
            .expect("agent task")
            .expect("agent returns Ok on shutdown");
    }
}

/// Whether the CSR is neither decided nor issued.
pub fn pending(csr: &CertificateSigningRequest) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_none_or(|c| c.is_empty())
}

/// Whether the CSR carries a certificate.
pub fn has_certificate(csr: &CertificateSigningRequest) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.certificate.as_ref())
        .is_some_and(|c| !c.0.is_empty())
}

/// Approves CSR `name` through the approval subresource.
pub async fn approve(api: &Api<CertificateSigningRequest>, name: &str) {
    for _ in 0..10 {
        let Ok(mut csr) = api.get(name).await else {
            return;
        };
        if !pending(&csr) {
            return;
        }
        let condition = serde_json::from_value(json!({
            "type": "Approved", "status": "True", "reason": "test Approve", "message": "approved by the test",
        }))
        .unwrap();
        csr.status
            .get_or_insert_default()
            .conditions
            .get_or_insert_default()
            .push(condition);
        match api
            .replace_subresource("approval", name, &PostParams::default(), &csr)
            .await
        {
            Ok(_) => return,
            // Someone else (another approver, the signer) changed it first: look again.
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(err) => panic!("approving {name}: {err}"),
        }
    }
    panic!("approving {name}: conflicts");
}

/// Creates an object from JSON.
pub async fn create<K>(api: &Api<K>, value: serde_json::Value)
where
    K: Resource + Clone + DeserializeOwned + serde::Serialize + Debug,
{
    let obj: K = serde_json::from_value(value).unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();
}

/// Creates RBAC objects from JSON.
pub async fn create_rbac(admin: &kube::Client, objects: serde_json::Value) {
    for obj in objects.as_array().unwrap() {
        let kind = obj["kind"].as_str().unwrap();
        let ar = ApiResource {
            group: "rbac.authorization.k8s.io".into(),
            version: "v1".into(),
            api_version: "rbac.authorization.k8s.io/v1".into(),
            kind: kind.into(),
            plural: format!("{}s", kind.to_lowercase()),
        };
        let o: DynamicObject = serde_json::from_value(obj.clone()).unwrap();
        let api: Api<DynamicObject> =
            match obj.pointer("/metadata/namespace").and_then(|v| v.as_str()) {
                Some(ns) => Api::namespaced_with(admin.clone(), ns, &ar),
                None => Api::all_with(admin.clone(), &ar),
            };
        api.create(&PostParams::default(), &o).await.unwrap();
    }
}

/// Creates `crds` and waits until they are established.
pub async fn install_crds(client: &kube::Client, crds: Vec<CustomResourceDefinition>) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in &crds {
        api.create(&PostParams::default(), crd).await.unwrap();
    }
    for crd in &crds {
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

/// Waits until `find` returns something for the objects matched by `config`.
pub async fn wait_list<K, T>(
    api: &Api<K>,
    config: watcher::Config,
    what: &str,
    find: impl Fn(&[Arc<K>]) -> Option<T>,
) -> T
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (reader, writer) = reflector::store();
    let mut events = std::pin::pin!(
        watcher(api.clone(), config)
            .backoff_on_errors()
            .reflect(writer)
            .touched_objects()
    );
    let search = async {
        loop {
            if let Some(found) = find(&reader.state()) {
                return found;
            }
            if events.next().await.is_none() {
                panic!("watch ended while waiting for {what}");
            }
        }
    };
    match tokio::time::timeout(WAIT, search).await {
        Ok(found) => found,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// Joins the spoke as `cluster`: starts an agent, approves its CSR, accepts the cluster, and
/// waits until the agent reports the cluster available.
pub async fn join(bench: &Bench, options: AgentOptions, lease_seconds: i32) -> RunningAgent {
    let cluster = options.cluster_name.clone();
    let mut agent = bench.spawn_agent(options);
    bench.approve_next_csr(&cluster, &[]).await;
    bench.accept(&cluster, lease_seconds).await;
    agent
        .wait_progress("Available", |p| *p == AgentProgress::Available)
        .await;
    agent
}
