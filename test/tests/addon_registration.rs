//! Addon registration and Lease health end to end, through real TLS, real CSRs and the
//! embedded hub: the addon manager writes an addon's registrations, the registration agent of
//! each cluster gets the addon its certificates (approved by the manager, or signed by the
//! addon's own CA for a custom signer) and writes them into the install namespace, an addon
//! agent using exactly its mounted secret reaches its cluster namespace on the hub and nothing
//! else, and the agent judges the addon's Lease into `Available`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use ocm_addon_framework::agent::{Registration, RegistrationConfig};
use ocm_addon_framework::agent_helpers::{
    LeaseUpdater, RotatingHubClient, hub_client_from_dir, write_secret_to_dir,
};
use ocm_addon_framework::manager::AddonManager;
use ocm_addon_framework::registration::{
    agent_role_in_cluster_namespace, cluster_addon_group, default_approve, default_kube_client,
    default_user, registered_subjects,
};
use ocm_addon_framework::{AddonConfigs, AddonError, AddonOptions, AgentAddon, HealthProber};
use ocm_api::addon::names::DEFAULT_INSTALL_NAMESPACE;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_e2e::addon_condition as condition;
use ocm_e2e::{wait_for, wait_gone};
use ocm_registration::agent::AgentOptions;
use ocm_runtime::shutdown::Shutdown;
use rcgen::{
    BasicConstraints, CertificateParams, CertificateSigningRequestParams, DistinguishedName,
    DnType, IsCa, Issuer, KeyPair,
};
use serde_json::{Value, json};

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");
const SIGNER: &str = "example.com/reg-signer";
const CA_NAME: &str = "reg test addon CA";

/// A test addon: a ConfigMap in the install namespace; its registrations come from options.
struct TestAddon {
    options: AddonOptions,
}

#[async_trait::async_trait]
impl AgentAddon for TestAddon {
    fn options(&self) -> &AddonOptions {
        &self.options
    }

    async fn manifests(
        &self,
        _cluster: &ManagedCluster,
        _addon: &ManagedClusterAddOn,
        _configs: &AddonConfigs,
    ) -> Result<Vec<Value>, AddonError> {
        Ok(vec![
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": DEFAULT_INSTALL_NAMESPACE}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": format!("{}-agent", self.options.name),
                                "namespace": DEFAULT_INSTALL_NAMESPACE},
                   "data": {"addon": self.options.name}}),
        ])
    }
}

fn cluster_of(mca: &ManagedClusterAddOn) -> String {
    mca.metadata.namespace.clone().unwrap_or_default()
}

/// The kube-client addon `reg`: default subject and approval, configmaps readable in the
/// cluster namespace, Lease health.
fn kube_client_addon() -> TestAddon {
    kube_client_addon_reading("reg", "configmaps")
}

/// A kube-client addon `name` whose agent may read `resource` (core group) in its cluster
/// namespace.
fn kube_client_addon_reading(name: &'static str, resource: &'static str) -> TestAddon {
    let registration = Registration {
        configurations: Arc::new(move |_, mca| {
            Ok(vec![default_kube_client(&cluster_of(mca), name)])
        }),
        approve: Arc::new(move |_, mca, csr| default_approve(&cluster_of(mca), name, csr)),
        permissions: Some(Arc::new(move |_, mca| {
            Ok(agent_role_in_cluster_namespace(
                &cluster_of(mca),
                name,
                json!([{"apiGroups": [""], "resources": [resource],
                        "verbs": ["get", "list", "watch"]}]),
            ))
        })),
        sign: None,
    };
    TestAddon {
        options: AddonOptions {
            registration: Some(registration),
            health: HealthProber::Lease,
            ..AddonOptions::new(name)
        },
    }
}

/// The custom-signer addon `signed`, whose CSRs the addon signs with its own CA (for
/// `validity` from now, when given).
fn custom_signer_addon(
    issuer: Arc<Issuer<'static, KeyPair>>,
    validity: Option<Duration>,
) -> TestAddon {
    let registration = Registration {
        configurations: Arc::new(|_, _| {
            Ok(vec![RegistrationConfig::CustomSigner {
                signer_name: SIGNER.into(),
                user: "signed-agent".into(),
                groups: vec!["signed-group".into()],
                organization_units: vec!["signed-unit".into()],
            }])
        }),
        approve: Arc::new(|_, _, _| false),
        permissions: None,
        sign: Some(Arc::new(move |_, _, csr| {
            let mut params = CertificateSigningRequestParams::from_pem(&csr.request_pem)
                .map_err(|e| AddonError::new(e.to_string()))?;
            if let Some(validity) = validity {
                let now = std::time::SystemTime::now();
                params.params.not_before = now.into();
                params.params.not_after = (now + validity).into();
            }
            let cert = params
                .signed_by(&issuer)
                .map_err(|e| AddonError::new(e.to_string()))?;
            Ok(cert.pem())
        })),
    };
    TestAddon {
        options: AddonOptions {
            registration: Some(registration),
            health: HealthProber::None,
            ..AddonOptions::new("signed")
        },
    }
}

fn has_condition(mca: &ManagedClusterAddOn, type_: &str, status: &str, reason: &str) -> bool {
    condition(mca, type_).is_some_and(|(s, r, _)| s == status && r == reason)
}

async fn enable(client: &kube::Client, cluster: &str, addon: &str) {
    let mcas: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), cluster);
    mcas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
        "apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ManagedClusterAddOn",
        "metadata": {"name": addon, "namespace": cluster}, "spec": {}}))
        .unwrap(),
    )
    .await
    .unwrap();
}

/// A PEM request with `cn` and `org`.
fn request(cn: &str, org: &str) -> String {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    dn.push(DnType::OrganizationName, org);
    params.distinguished_name = dn;
    params.serialize_request(&key).unwrap().pem().unwrap()
}

fn addon_csr(cluster: &str, addon: &str, request_pem: &str) -> CertificateSigningRequest {
    serde_json::from_value(json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"generateName": format!("addon-{cluster}-{addon}-"),
                     "labels": {"open-cluster-management.io/cluster-name": cluster,
                                "open-cluster-management.io/addon-name": addon}},
        "spec": {"request": k8s_openapi::ByteString(request_pem.as_bytes().to_vec()),
                 "signerName": "kubernetes.io/kube-apiserver-client",
                 "usages": ["digital signature", "key encipherment", "client auth"]}}))
    .unwrap()
}

/// The addon's own CA.
fn test_ca() -> Arc<Issuer<'static, KeyPair>> {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::default();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, CA_NAME);
    Arc::new(Issuer::new(ca_params, ca_key))
}

fn approved(csr: &CertificateSigningRequest) -> bool {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Approved"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn addon_agents_get_hub_credentials_and_lease_health() {
    let dir = tempfile::tempdir().unwrap();
    let grace = Duration::from_secs(3);
    let (hub, names, agents) = ocm_e2e::fleet_with(dir.path(), 2, move |name| AgentOptions {
        addon_lease_check_period: Duration::from_millis(500),
        addon_lease_grace: grace,
        ..ocm_e2e::fast_agent_options(name)
    })
    .await
    .unwrap();
    let client = hub.admin_client();

    let issuer = test_ca();

    let stop = Shutdown::new();
    tokio::spawn(
        AddonManager::new(client.clone())
            .with_addon(Arc::new(kube_client_addon()))
            .with_addon(Arc::new(kube_client_addon_reading("peer", "secrets")))
            .with_addon(Arc::new(custom_signer_addon(issuer, None)))
            .run(stop.child()),
    );
    for name in &names {
        enable(&client, name, "reg").await;
    }
    enable(&client, "c01", "signed").await;
    enable(&client, "c01", "peer").await;

    // Each cluster's agent gets `reg` a certificate; a client built from exactly the secret
    // (mounted into a directory) reaches its own cluster namespace and nothing else.
    let mounts = tempfile::tempdir().unwrap();
    for name in &names {
        let mcas: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), name);
        let mca = wait_for(
            &mcas,
            "reg",
            "certificate rotated and permissions set",
            |m| {
                has_condition(
                    m,
                    "ClusterCertificateRotated",
                    "True",
                    "ClientCertificateUpdated",
                ) && has_condition(m, "RegistrationApplied", "True", "SetPermissionApplied")
            },
        )
        .await
        .unwrap();
        let (_, _, message) = condition(&mca, "ClusterCertificateRotated").unwrap();
        assert!(message.contains("reg-hub-kubeconfig"), "{message}");

        let spoke = ocm_e2e::simulated_spoke(&hub, name).await.unwrap();
        let secrets: Api<Secret> = Api::namespaced(spoke.clone(), DEFAULT_INSTALL_NAMESPACE);
        let secret = wait_for(&secrets, "reg-hub-kubeconfig", "the addon's secret", |_| {
            true
        })
        .await
        .unwrap();
        assert_eq!(
            secret.metadata.labels.as_ref().unwrap()["open-cluster-management.io/addon-name"],
            "reg"
        );
        let mut keys: Vec<_> = secret.data.as_ref().unwrap().keys().cloned().collect();
        keys.sort();
        assert_eq!(keys, ["kubeconfig", "tls.crt", "tls.key"]);
        let mount = mounts.path().join(name);
        write_secret_to_dir(&secret, &mount).unwrap();
        let addon_client = hub_client_from_dir(&mount).await.unwrap();
        let rotating = RotatingHubClient::new(&mount);
        Api::<ConfigMap>::namespaced(rotating.client().await.unwrap(), name)
            .list(&ListParams::default())
            .await
            .expect("the rotating client reads configmaps in its cluster namespace");
        Api::<ConfigMap>::namespaced(addon_client.clone(), name)
            .list(&ListParams::default())
            .await
            .expect("the addon agent reads configmaps in its cluster namespace");
        let other = names.iter().find(|n| *n != name).unwrap();
        match Api::<ConfigMap>::namespaced(addon_client, other)
            .list(&ListParams::default())
            .await
        {
            Err(kube::Error::Api(s)) => assert_eq!(s.code, 403, "{s:?}"),
            other => panic!("another cluster's namespace must be forbidden: {other:?}"),
        }
    }

    // One addon's credentials reach only what that addon was granted: on c01, `reg` reads
    // configmaps and `peer` secrets, and neither reads what only the other may.
    let c01_spoke = ocm_e2e::simulated_spoke(&hub, "c01").await.unwrap();
    let c01_secrets: Api<Secret> = Api::namespaced(c01_spoke, DEFAULT_INSTALL_NAMESPACE);
    let peer_secret = wait_for(&c01_secrets, "peer-hub-kubeconfig", "peer's secret", |_| {
        true
    })
    .await
    .unwrap();
    write_secret_to_dir(&peer_secret, &mounts.path().join("peer")).unwrap();
    let peer = hub_client_from_dir(&mounts.path().join("peer"))
        .await
        .unwrap();
    let reg = hub_client_from_dir(&mounts.path().join("c01"))
        .await
        .unwrap();
    let c01_addons: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), "c01");
    wait_for(&c01_addons, "peer", "peer's permissions", |m| {
        has_condition(m, "RegistrationApplied", "True", "SetPermissionApplied")
    })
    .await
    .unwrap();
    Api::<Secret>::namespaced(peer.clone(), "c01")
        .list(&ListParams::default())
        .await
        .expect("peer reads secrets in its cluster namespace");
    let forbidden = |result: Result<usize, kube::Error>, what: &str| match result {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 403, "{what}: {s:?}"),
        other => panic!("{what} must be forbidden: {other:?}"),
    };
    forbidden(
        Api::<ConfigMap>::namespaced(peer.clone(), "c01")
            .list(&ListParams::default())
            .await
            .map(|l| l.items.len()),
        "peer reading configmaps (reg's grant)",
    );
    forbidden(
        Api::<Secret>::namespaced(peer, "c02")
            .list(&ListParams::default())
            .await
            .map(|l| l.items.len()),
        "peer reading another cluster's secrets",
    );
    forbidden(
        Api::<Secret>::namespaced(reg, "c01")
            .list(&ListParams::default())
            .await
            .map(|l| l.items.len()),
        "reg reading secrets (peer's grant)",
    );

    // Lease health: c01's addon agent renews its lease, c02's never does.
    let c01 = ocm_e2e::simulated_spoke(&hub, "c01").await.unwrap();
    let c02_addons: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), "c02");
    let updater = LeaseUpdater::new(c01.clone(), DEFAULT_INSTALL_NAMESPACE, "reg")
        .with_period(Duration::from_millis(500));
    let renewing = Shutdown::new();
    tokio::spawn(updater.clone().run(renewing.clone()));
    let available = |m: &ManagedClusterAddOn| {
        has_condition(m, "Available", "True", "ManagedClusterAddOnLeaseUpdated")
    };
    let mca = wait_for(&c01_addons, "reg", "Available from the lease", available)
        .await
        .unwrap();
    assert_eq!(
        condition(&mca, "Available").unwrap().2,
        "reg add-on is available."
    );
    let mca = wait_for(&c02_addons, "reg", "no lease: Unknown", |m| {
        has_condition(
            m,
            "Available",
            "Unknown",
            "ManagedClusterAddOnLeaseNotFound",
        )
    })
    .await
    .unwrap();
    assert_eq!(
        condition(&mca, "Available").unwrap().2,
        "The status of reg add-on is unknown."
    );
    renewing.cancel();
    let stopped_at = std::time::Instant::now();
    wait_for(&c01_addons, "reg", "lease stopped: not available", |m| {
        has_condition(
            m,
            "Available",
            "False",
            "ManagedClusterAddOnLeaseUpdateStopped",
        )
    })
    .await
    .unwrap();
    assert!(
        stopped_at.elapsed() + Duration::from_secs(1) >= grace,
        "judged stale before the grace passed"
    );
    let renewing = Shutdown::new();
    tokio::spawn(updater.run(renewing.clone()));
    wait_for(&c01_addons, "reg", "lease renewed again", available)
        .await
        .unwrap();
    renewing.cancel();

    // The custom signer: the addon's own CA signed the certificate in the secret.
    let mca = wait_for(&c01_addons, "signed", "custom certificate rotated", |m| {
        has_condition(
            m,
            "ClusterCertificateRotated",
            "True",
            "ClientCertificateUpdated",
        )
    })
    .await
    .unwrap();
    let (_, _, message) = condition(&mca, "ClusterCertificateRotated").unwrap();
    let secret_name = "signed-example.com-reg-signer-client-cert";
    assert!(message.contains(secret_name), "{message}");
    let secrets: Api<Secret> = Api::namespaced(c01.clone(), DEFAULT_INSTALL_NAMESPACE);
    let secret = secrets.get(secret_name).await.unwrap();
    let data = secret.data.unwrap();
    let mut keys: Vec<_> = data.keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["tls.crt", "tls.key"]);
    let (_, pem) = x509_parser::pem::parse_x509_pem(&data["tls.crt"].0).unwrap();
    let cert = pem.parse_x509().unwrap();
    let cn = |name: &x509_parser::x509::X509Name| {
        name.iter_common_name()
            .next()
            .and_then(|a| a.as_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(cn(cert.issuer()), CA_NAME);
    assert_eq!(cn(cert.subject()), "signed-agent");
    let units: Vec<_> = cert
        .subject()
        .iter_organizational_unit()
        .filter_map(|a| a.as_str().ok())
        .collect();
    assert_eq!(units, ["signed-unit"]);

    // A CSR naming another cluster stays pending. c01's agent asks for c02's addon
    // credentials; then for its own. The manager handles CSRs in order, so once the second is
    // approved the first has been decided: refused, left pending.
    let c01_agent = ocm_e2e::hub_client_of_agent(&c01, &hub).await.unwrap();
    let csrs: Api<CertificateSigningRequest> = Api::all(c01_agent);
    // Then one labelled for c01's `reg` but asking to be `peer`'s agent: refused too.
    let ask = |label_cluster: &'static str, cluster: &'static str, addon: &'static str| {
        let csrs = csrs.clone();
        async move {
            csrs.create(
                &PostParams::default(),
                &addon_csr(
                    label_cluster,
                    "reg",
                    &request(
                        &default_user(cluster, addon, addon),
                        &cluster_addon_group(cluster, addon),
                    ),
                ),
            )
            .await
            .unwrap()
        }
    };
    let foreign = ask("c02", "c02", "reg").await;
    let impostor = ask("c01", "c01", "peer").await;
    let own = ask("c01", "c01", "reg").await;
    let admin_csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    wait_for(
        &admin_csrs,
        own.metadata.name.as_deref().unwrap(),
        "c01's own addon CSR approved",
        approved,
    )
    .await
    .unwrap();
    for refused in [&foreign, &impostor] {
        let refused = admin_csrs
            .get(refused.metadata.name.as_deref().unwrap())
            .await
            .unwrap();
        assert!(
            refused.status.as_ref().is_none_or(|s| s
                .conditions
                .as_ref()
                .is_none_or(|c| c.is_empty())
                && s.certificate.is_none()),
            "{:?}",
            refused.status
        );
    }

    // Disabling an addon deletes the secrets the agent wrote for it.
    c01_addons
        .delete("signed", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&secrets, secret_name).await.unwrap();
    assert!(
        secrets
            .get_opt("reg-hub-kubeconfig")
            .await
            .unwrap()
            .is_some()
    );

    stop.cancel();
    agents.cancel();
    hub.stop().await;
}

/// A 40 s certificate from the custom signer is renewed at 75–80 % of its life (the rule of
/// the cluster's own certificate): a second CSR, a new certificate in the same secret, and
/// `ClusterCertificateRotated` True again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn addon_certificates_rotate_at_their_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, _names, agents) = ocm_e2e::fleet(dir.path(), 1).await.unwrap();
    let client = hub.admin_client();
    let stop = Shutdown::new();
    let lifetime = Duration::from_secs(40);
    tokio::spawn(
        AddonManager::new(client.clone())
            .with_addon(Arc::new(custom_signer_addon(test_ca(), Some(lifetime))))
            .run(stop.child()),
    );
    let log = ocm_e2e::CsrLog::start(&client, "c01");
    enable(&client, "c01", "signed").await;
    let spoke = ocm_e2e::simulated_spoke(&hub, "c01").await.unwrap();
    let secrets: Api<Secret> = Api::namespaced(spoke, DEFAULT_INSTALL_NAMESPACE);
    let secret_name = "signed-example.com-reg-signer-client-cert";
    let cert = |s: &Secret| s.data.as_ref().and_then(|d| d.get("tls.crt")).cloned();
    let first = wait_for(&secrets, secret_name, "the first certificate", |s| {
        cert(s).is_some()
    })
    .await
    .unwrap();
    let first_cert = cert(&first).unwrap();
    let issued_at = std::time::Instant::now();
    let second = wait_for(&secrets, secret_name, "a renewed certificate", |s| {
        cert(s).is_some_and(|c| c != first_cert)
    })
    .await
    .unwrap();
    let renewed_after = issued_at.elapsed();
    // Due 30–32 s after receipt; allow for the wait's own latency.
    assert!(
        renewed_after >= Duration::from_secs(25) && renewed_after < lifetime,
        "renewed after {renewed_after:?}"
    );
    assert_ne!(
        second.data.as_ref().unwrap()["tls.key"],
        first.data.as_ref().unwrap()["tls.key"],
        "a renewal uses a fresh key"
    );
    let addon_csrs = log
        .snapshot()
        .into_keys()
        .filter(|n| n.starts_with("addon-c01-signed-"))
        .count();
    assert_eq!(addon_csrs, 2, "{:?}", log.snapshot());
    let mcas: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), "c01");
    let mca = mcas.get("signed").await.unwrap();
    assert!(has_condition(
        &mca,
        "ClusterCertificateRotated",
        "True",
        "ClientCertificateUpdated"
    ));
    stop.cancel();
    agents.cancel();
    hub.stop().await;
}

/// The kube-client addon `tok`, whose hub permissions bind the subject its registration
/// names (with the token driver: the agent's ServiceAccount).
fn token_addon() -> TestAddon {
    let registration = Registration {
        configurations: Arc::new(|_, mca| Ok(vec![default_kube_client(&cluster_of(mca), "tok")])),
        approve: Arc::new(|_, mca, csr| default_approve(&cluster_of(mca), "tok", csr)),
        permissions: Some(Arc::new(|_, mca| {
            let subjects = registered_subjects(mca);
            if subjects.is_empty() {
                return Err(ocm_addon_framework::agent::PermissionError::Pending(
                    "no subject registered yet".into(),
                ));
            }
            let mut objects = agent_role_in_cluster_namespace(
                &cluster_of(mca),
                "tok",
                json!([{"apiGroups": [""], "resources": ["configmaps"],
                        "verbs": ["get", "list", "watch"]}]),
            );
            objects[1]["subjects"] = Value::Array(subjects);
            Ok(objects)
        })),
        sign: None,
    };
    TestAddon {
        options: AddonOptions {
            registration: Some(registration),
            health: HealthProber::Lease,
            ..AddonOptions::new("tok")
        },
    }
}

/// The token driver (the Klusterlet's `addOnKubeClientRegistrationDriver: token`): the agent
/// declares it, the hub makes the addon agent's ServiceAccount, the agent keeps a token of it
/// in the addon's secret, and a client from exactly that secret reaches what the addon was
/// granted; the ServiceAccount goes with the addon, and its tokens stop working. A token
/// request that fails is reported (`TokenCreationFailed`) and recovers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn addon_agents_with_the_token_driver_get_service_account_tokens() {
    use ocm_registration::agent::addon_tokens::AddonKubeClientAuth;
    let dir = tempfile::tempdir().unwrap();
    let (hub, names, agents) = ocm_e2e::fleet_with(dir.path(), 2, |name| AgentOptions {
        addon_kube_client_auth: AddonKubeClientAuth::Token {
            expiration_seconds: 3600,
        },
        ..ocm_e2e::fast_agent_options(name)
    })
    .await
    .unwrap();
    let client = hub.admin_client();
    let stop = Shutdown::new();
    // The addon manager: its install controller (which keeps the token infrastructure) and
    // the addon's controller, stopped and started together.
    let start_manager = || {
        let manager = stop.child();
        let running = tokio::spawn({
            let client = client.clone();
            let manager = manager.clone();
            async move {
                tokio::join!(
                    ocm_addon_framework::manager::run_install_strategies(
                        client.clone(),
                        manager.child(),
                    ),
                    AddonManager::new(client)
                        .with_addon(Arc::new(token_addon()))
                        .run(manager.child()),
                );
            }
        });
        (manager, running)
    };
    let (manager, running) = start_manager();
    let spoke = ocm_e2e::simulated_spoke(&hub, "c01").await.unwrap();
    token_driver(&client, &hub.admin_kubeconfig, &spoke, "c01", &names[1]).await;

    // A token request that fails is reported and recovers: with the addon manager stopped,
    // the addon's ServiceAccount gone and its token secret deleted on the cluster, the agent's
    // request fails (`TokenRefreshed` False, `TokenCreationFailed`, naming the account); once
    // the manager is back and makes the account again the agent gets a token.
    enable(&client, "c01", "tok").await;
    let mcas: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), "c01");
    wait_for(&mcas, "tok", "the addon's token again", |m| {
        has_condition(m, "TokenRefreshed", "True", "AddonTokenRefreshed")
    })
    .await
    .unwrap();
    manager.cancel();
    running.await.unwrap();
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), "c01");
    accounts
        .delete("tok-agent", &DeleteParams::default())
        .await
        .unwrap();
    Api::<Secret>::namespaced(spoke.clone(), DEFAULT_INSTALL_NAMESPACE)
        .delete("tok-hub-kubeconfig", &DeleteParams::default())
        .await
        .unwrap();
    let failed = wait_for(&mcas, "tok", "the failed token request reported", |m| {
        has_condition(m, "TokenRefreshed", "False", "TokenCreationFailed")
    })
    .await
    .unwrap();
    let (_, _, message) = condition(&failed, "TokenRefreshed").unwrap();
    assert!(
        message.starts_with("Failed to create token: ") && message.contains("tok-agent"),
        "{message}"
    );
    let (_manager, _running) = start_manager();
    wait_for(&mcas, "tok", "a token once the account is back", |m| {
        has_condition(m, "TokenRefreshed", "True", "AddonTokenRefreshed")
    })
    .await
    .unwrap();
    let secret = Api::<Secret>::namespaced(spoke.clone(), DEFAULT_INSTALL_NAMESPACE)
        .get("tok-hub-kubeconfig")
        .await
        .unwrap();
    let mounts = tempfile::tempdir().unwrap();
    write_secret_to_dir(&secret, mounts.path()).unwrap();
    let addon_client = hub_client_from_dir(mounts.path()).await.unwrap();
    Api::<ConfigMap>::namespaced(addon_client, "c01")
        .list(&ListParams::default())
        .await
        .expect("the token got after the failure reads configmaps in its cluster namespace");
    stop.cancel();
    agents.cancel();
}

/// The same on a hub run by `ocm hub --kubeconfig` (which runs the token infrastructure) over
/// an `ocm apiserver`, with clusters joined by `ocm join --addon-kubeclient-registration-auth
/// token` processes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_driver_on_a_hub_run_with_a_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let hub = ocm_e2e::process::ManagedApiserver::start(OCM, home);
    let client = hub.admin_client().await;
    let token = ["--addon-kubeclient-registration-auth", "token"];
    // With --operator the Klusterlet says which driver; the flag is refused, naming that.
    let (code, _, stderr) = ocm_e2e::process::run_ocm(
        OCM,
        home,
        &[
            "join",
            "--operator",
            "--spoke-kubeconfig",
            hub.kubeconfig.to_str().unwrap(),
            "--hub-apiserver",
            "https://127.0.0.1:1",
            "--hub-token",
            "abcdef.0123456789abcdef",
            "--cluster-name",
            "t9",
            token[0],
            token[1],
        ],
    );
    assert_ne!(code, 0);
    assert!(
        stderr.contains("addOnKubeClientRegistrationDriver"),
        "{stderr}"
    );
    let (first, spoke) = ocm_e2e::process::join_simulated(OCM, home, &hub.kubeconfig, "t1", &token)
        .await
        .unwrap();
    let (second, _) = ocm_e2e::process::join_simulated(OCM, home, &hub.kubeconfig, "t2", &token)
        .await
        .unwrap();
    let stop = Shutdown::new();
    tokio::spawn(
        AddonManager::new(client.clone())
            .with_addon(Arc::new(token_addon()))
            .run(stop.child()),
    );
    token_driver(&client, &hub.kubeconfig, &spoke, "t1", "t2").await;
    stop.cancel();
    first.stop();
    second.stop();
    hub.stop();
}

/// The token driver scenario on a hub (admin `client` and `kubeconfig`) whose addon manager
/// runs `tok`, with `cluster` (managed cluster `spoke`) and `other` joined with the driver.
async fn token_driver(
    client: &kube::Client,
    kubeconfig: &std::path::Path,
    spoke: &kube::Client,
    cluster: &str,
    other: &str,
) {
    enable(client, cluster, "tok").await;
    let mcas: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), cluster);
    let mca = wait_for(&mcas, "tok", "a token and permissions", |m| {
        has_condition(
            m,
            "TokenInfrastructureReady",
            "True",
            "TokenInfrastructureReady",
        ) && has_condition(m, "TokenRefreshed", "True", "AddonTokenRefreshed")
            && has_condition(m, "RegistrationApplied", "True", "SetPermissionApplied")
    })
    .await
    .unwrap();
    let registration = serde_json::to_value(&mca.status.as_ref().unwrap().registrations).unwrap();
    assert_eq!(
        registration[0]["kubeClient"],
        json!({"driver": "token", "subject": {"user": format!("system:serviceaccount:{cluster}:tok-agent")}})
    );
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), cluster);
    let account = accounts.get("tok-agent").await.unwrap();
    let (_, _, message) = condition(&mca, "TokenInfrastructureReady").unwrap();
    assert!(
        message.contains(account.metadata.uid.as_deref().unwrap()),
        "{message}"
    );
    // No CSR: the token is the credential.
    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    let listed = csrs
        .list(&ListParams::default().labels("open-cluster-management.io/addon-name=tok"))
        .await
        .unwrap();
    assert!(listed.items.is_empty(), "{:?}", listed.items);

    let secrets: Api<Secret> = Api::namespaced(spoke.clone(), DEFAULT_INSTALL_NAMESPACE);
    let secret = wait_for(&secrets, "tok-hub-kubeconfig", "the addon's token", |s| {
        s.data.as_ref().is_some_and(|d| d.contains_key("token"))
    })
    .await
    .unwrap();
    let mounts = tempfile::tempdir().unwrap();
    write_secret_to_dir(&secret, mounts.path()).unwrap();
    let addon_client = hub_client_from_dir(mounts.path()).await.unwrap();
    Api::<ConfigMap>::namespaced(addon_client.clone(), cluster)
        .list(&ListParams::default())
        .await
        .expect("the ServiceAccount reads configmaps in its cluster namespace");
    match Api::<ConfigMap>::namespaced(addon_client.clone(), other)
        .list(&ListParams::default())
        .await
    {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 403, "{s:?}"),
        other => panic!("another cluster's namespace must be forbidden: {other:?}"),
    }

    token_rbac_repaired(client, kubeconfig, spoke, cluster).await;
    Api::<ConfigMap>::namespaced(addon_client.clone(), cluster)
        .list(&ListParams::default())
        .await
        .expect("the addon's token still works after its Role and RoleBinding were repaired");

    // Revoking a token by hand, as a user would: deleting the ServiceAccount stops its tokens
    // at once; the hub makes a new ServiceAccount, names its UID, and the agent rotates the
    // addon's token to it (the secret's token changes; the new one works).
    let old_uid = account.metadata.uid.clone().unwrap();
    let old_token = secret.data.as_ref().unwrap()["token"].clone();
    let (ok, _, err) = ocm_e2e::kubectl(
        kubeconfig,
        &["delete", "serviceaccount", "tok-agent", "-n", cluster],
        None,
    )
    .await
    .unwrap();
    assert!(ok, "{err}");
    match Api::<ConfigMap>::namespaced(addon_client.clone(), cluster)
        .list(&ListParams::default())
        .await
    {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 401, "{s:?}"),
        other => panic!("a token of the deleted ServiceAccount must not authenticate: {other:?}"),
    }
    let account = wait_for(&accounts, "tok-agent", "a new ServiceAccount", |a| {
        a.metadata.uid.as_deref() != Some(old_uid.as_str())
    })
    .await
    .unwrap();
    let new_uid = account.metadata.uid.clone().unwrap();
    wait_for(&mcas, "tok", "the new ServiceAccount named", |m| {
        condition(m, "TokenInfrastructureReady")
            .is_some_and(|(s, _, message)| s == "True" && message.contains(&new_uid))
    })
    .await
    .unwrap();
    let secret = wait_for(&secrets, "tok-hub-kubeconfig", "a rotated token", |s| {
        s.data
            .as_ref()
            .and_then(|d| d.get("token"))
            .is_some_and(|t| *t != old_token)
    })
    .await
    .unwrap();
    let token = String::from_utf8(secret.data.as_ref().unwrap()["token"].0.clone()).unwrap();
    let claims = ocm_registration::agent::addon_tokens::token_claims(&token).unwrap();
    assert_eq!(claims.service_account_uid, new_uid);
    let mounts = tempfile::tempdir().unwrap();
    write_secret_to_dir(&secret, mounts.path()).unwrap();
    let addon_client = hub_client_from_dir(mounts.path()).await.unwrap();
    Api::<ConfigMap>::namespaced(addon_client.clone(), cluster)
        .list(&ListParams::default())
        .await
        .expect("the rotated token reads configmaps in its cluster namespace");
    wait_for(&mcas, "tok", "the rotation reported", |m| {
        condition(m, "TokenRefreshed").is_some_and(|(s, _, message)| {
            s == "True" && message.contains(&claims_expiry(claims.expires_at))
        })
    })
    .await
    .unwrap();

    // The addon goes: so does its ServiceAccount, and with it every token of it — the addon
    // agent's hub access is revoked, not left until the token expires.
    mcas.delete("tok", &DeleteParams::default()).await.unwrap();
    wait_gone(&accounts, "tok-agent").await.unwrap();
    match Api::<ConfigMap>::namespaced(addon_client, cluster)
        .list(&ListParams::default())
        .await
    {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 401, "{s:?}"),
        other => panic!("a token of the deleted ServiceAccount must not authenticate: {other:?}"),
    }
    // A token request for the disabled addon, with the cluster agent's own hub credentials, is
    // refused, naming the ServiceAccount.
    let agent_mounts = tempfile::tempdir().unwrap();
    let agent_client = agent_hub_client(spoke, agent_mounts.path()).await;
    let request: k8s_openapi::api::authentication::v1::TokenRequest =
        serde_json::from_value(json!({"spec": {"audiences": [], "expirationSeconds": 3600}}))
            .unwrap();
    match Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(agent_client, cluster)
        .create_token_request("tok-agent", &PostParams::default(), &request)
        .await
    {
        Err(kube::Error::Api(s)) => {
            assert!(s.code == 403 || s.code == 404, "{s:?}");
            assert!(s.message.contains("tok-agent"), "{s:?}");
        }
        other => panic!("a token of a disabled addon must be refused: {other:?}"),
    }
}

/// Deletes the addon `tok`'s token Role and RoleBinding in `cluster` with kubectl, as a hub
/// admin would, and waits for the hub (admin `client`) to make both again (new UIDs) with
/// `TokenInfrastructureReady` True; through them the cluster's agent (of `spoke`) may request
/// a token of the addon's ServiceAccount again.
async fn token_rbac_repaired(
    client: &kube::Client,
    kubeconfig: &std::path::Path,
    spoke: &kube::Client,
    cluster: &str,
) {
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    let roles: Api<Role> = Api::namespaced(client.clone(), cluster);
    let bindings: Api<RoleBinding> = Api::namespaced(client.clone(), cluster);
    let role = roles.get("tok-token-role").await.unwrap();
    let binding = bindings.get("tok-token-role").await.unwrap();
    for kind in ["rolebinding", "role"] {
        let (ok, _, err) = ocm_e2e::kubectl(
            kubeconfig,
            &["delete", kind, "tok-token-role", "-n", cluster],
            None,
        )
        .await
        .unwrap();
        assert!(ok, "{err}");
    }
    let repaired_role = wait_for(&roles, "tok-token-role", "the Role made again", |r| {
        r.metadata.uid != role.metadata.uid
    })
    .await
    .unwrap();
    assert_eq!(repaired_role.rules, role.rules);
    let repaired_binding = wait_for(
        &bindings,
        "tok-token-role",
        "the RoleBinding made again",
        |b| b.metadata.uid != binding.metadata.uid,
    )
    .await
    .unwrap();
    assert_eq!(
        (repaired_binding.role_ref, repaired_binding.subjects),
        (binding.role_ref, binding.subjects)
    );
    let mcas: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), cluster);
    wait_for(&mcas, "tok", "the token infrastructure ready", |m| {
        has_condition(
            m,
            "TokenInfrastructureReady",
            "True",
            "TokenInfrastructureReady",
        )
    })
    .await
    .unwrap();
    let agent_mounts = tempfile::tempdir().unwrap();
    let agent_client = agent_hub_client(spoke, agent_mounts.path()).await;
    let request: k8s_openapi::api::authentication::v1::TokenRequest =
        serde_json::from_value(json!({"spec": {"audiences": [], "expirationSeconds": 3600}}))
            .unwrap();
    let granted = Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(
        agent_client,
        cluster,
    )
    .create_token_request("tok-agent", &PostParams::default(), &request)
    .await
    .expect("the repaired Role and RoleBinding let the cluster's agent request the addon's token");
    assert!(!granted.status.unwrap().token.is_empty());
}

/// A hub client with the cluster agent's own credentials, from its `hub-kubeconfig-secret`
/// (written into `mounts`).
async fn agent_hub_client(spoke: &kube::Client, mounts: &std::path::Path) -> kube::Client {
    let secret = Api::<Secret>::namespaced(spoke.clone(), "open-cluster-management-agent")
        .get("hub-kubeconfig-secret")
        .await
        .unwrap();
    write_secret_to_dir(&secret, mounts).unwrap();
    hub_client_from_dir(mounts).await.unwrap()
}

/// How the agent's `TokenRefreshed` message writes a token's expiry (Unix seconds).
fn claims_expiry(expires_at: i64) -> String {
    jiff::Timestamp::from_second(expires_at)
        .unwrap()
        .to_string()
}
