//! CSR approval and signing through real kube clients: a bootstrap token creates a CSR made
//! with rcgen, the admin approves it, the built-in signer signs it with the client CA, and the
//! certificate authenticates as its CN/O over TLS.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::discovery::ApiResource;
use ocm_apiserver::tls::base64;
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};
use serde_json::json;

use common::tls::TlsServer;

const SIGNER: &str = "kubernetes.io/kube-apiserver-client";

async fn client_with_user(srv: &TlsServer, user_yaml: &str) -> kube::Client {
    let ca = std::fs::read_to_string(srv.dir.path().join("pki/ca.crt")).unwrap();
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: ocm\n  cluster:\n    server: {}\n    certificate-authority-data: {}\nusers:\n- name: u\n  user:\n{user_yaml}\ncontexts:\n- name: ocm\n  context:\n    cluster: ocm\n    user: u\ncurrent-context: ocm\n",
        srv.url,
        base64(ca.as_bytes()),
    );
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&text).unwrap();
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    kube::Client::try_from(config).unwrap()
}

fn api_error<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> (u16, String) {
    match result {
        Err(kube::Error::Api(s)) => (s.code, s.message.clone()),
        other => panic!("expected an API error, got {other:?}"),
    }
}

async fn create_rbac(admin: &kube::Client, objects: serde_json::Value) {
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

/// A bootstrap token `abcdef.0123456789abcdef` in group `system:bootstrappers:ocm`, which may
/// create and read CSRs and nothing else.
async fn bootstrap_client(srv: &TlsServer, admin: &kube::Client) -> kube::Client {
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "bootstrap-token-abcdef", "namespace": "kube-system"},
        "type": "bootstrap.kubernetes.io/token",
        "data": {
            "token-id": base64(b"abcdef"),
            "token-secret": base64(b"0123456789abcdef"),
            "usage-bootstrap-authentication": base64(b"true"),
            "auth-extra-groups": base64(b"system:bootstrappers:ocm"),
        },
    }))
    .unwrap();
    Api::<Secret>::namespaced(admin.clone(), "kube-system")
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    create_rbac(
        admin,
        json!([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "csr-creator"},
             "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["create", "get", "list", "watch"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "csr-creator"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "csr-creator"},
             "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:bootstrappers:ocm"}]}
        ]),
    )
    .await;
    client_with_user(srv, "    token: abcdef.0123456789abcdef").await
}

/// A key and a PEM CSR for `cn`/`orgs`.
fn make_csr(cn: &str, orgs: &[&str]) -> (KeyPair, String) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    for o in orgs {
        dn.push(DnType::OrganizationName, *o);
    }
    params.distinguished_name = dn;
    let csr = params.serialize_request(&key).unwrap();
    (key, csr.pem().unwrap())
}

fn csr_object(name: &str, pem: &str, usages: &[&str]) -> CertificateSigningRequest {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "request": base64(pem.as_bytes()),
            "signerName": SIGNER,
            "usages": usages,
            "username": "forged", "groups": ["system:masters"],
        },
    }))
    .unwrap()
}

fn with_condition(mut csr: CertificateSigningRequest, ty: &str) -> CertificateSigningRequest {
    let condition = serde_json::from_value(json!({
        "type": ty, "status": "True", "reason": "Test", "message": "by the test",
    }))
    .unwrap();
    csr.status
        .get_or_insert_default()
        .conditions
        .get_or_insert_default()
        .push(condition);
    csr
}

async fn set_condition(
    api: &Api<CertificateSigningRequest>,
    name: &str,
    ty: &str,
) -> Result<CertificateSigningRequest, kube::Error> {
    let csr = with_condition(api.get(name).await.unwrap(), ty);
    api.replace_subresource("approval", name, &PostParams::default(), &csr)
        .await
}

async fn wait_for(
    api: &Api<CertificateSigningRequest>,
    name: &str,
    done: impl Fn(&CertificateSigningRequest) -> bool,
) -> CertificateSigningRequest {
    for _ in 0..400 {
        let csr = api.get(name).await.unwrap();
        if done(&csr) {
            return csr;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("CSR {name} never reached the expected state");
}

fn certificate(csr: &CertificateSigningRequest) -> Option<String> {
    csr.status
        .as_ref()
        .and_then(|s| s.certificate.as_ref())
        .map(|c| String::from_utf8(c.0.clone()).unwrap())
}

#[tokio::test]
async fn csr_round_trip_yields_a_working_client_certificate() {
    let srv = TlsServer::start().await;
    let admin = srv.client().await;
    let boot = bootstrap_client(&srv, &admin).await;
    let cn = "system:open-cluster-management:c1:agent";
    let group = "system:open-cluster-management:c1";
    let (key, pem) = make_csr(cn, &[group]);
    let boot_csrs: Api<CertificateSigningRequest> = Api::all(boot.clone());
    let created = boot_csrs
        .create(
            &PostParams::default(),
            &csr_object(
                "agent",
                &pem,
                &["client auth", "digital signature", "key encipherment"],
            ),
        )
        .await
        .unwrap();
    // Filled from the requester, whatever the body said.
    assert_eq!(
        created.spec.username.as_deref(),
        Some("system:bootstrap:abcdef")
    );
    let groups = created.spec.groups.clone().unwrap();
    assert!(
        groups.contains(&"system:bootstrappers:ocm".to_string()),
        "{groups:?}"
    );
    assert!(!groups.contains(&"system:masters".to_string()));
    // The bootstrap token cannot approve, nor read secrets.
    assert_eq!(
        api_error(set_condition(&boot_csrs, "agent", "Approved").await).0,
        403
    );
    assert_eq!(
        api_error(
            Api::<Secret>::namespaced(boot.clone(), "kube-system")
                .list(&ListParams::default())
                .await
        )
        .0,
        403
    );
    // The spec is immutable.
    let admin_csrs: Api<CertificateSigningRequest> = Api::all(admin.clone());
    let mut changed = admin_csrs.get("agent").await.unwrap();
    changed.spec.usages = Some(vec!["server auth".into()]);
    let after = admin_csrs
        .replace("agent", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(after.spec.usages.unwrap().len(), 3);

    set_condition(&admin_csrs, "agent", "Approved")
        .await
        .unwrap();
    let signed = wait_for(&boot_csrs, "agent", |c| certificate(c).is_some()).await;
    let cert_pem = certificate(&signed).unwrap();
    assert!(cert_pem.contains("BEGIN CERTIFICATE"));

    // A grant to the certificate's O group, then the certificate itself over TLS.
    create_rbac(
        &admin,
        json!([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
             "metadata": {"name": "cm", "namespace": "default"},
             "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "metadata": {"name": "cm", "namespace": "default"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm"},
             "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": group}]}
        ]),
    )
    .await;
    let agent = client_with_user(
        &srv,
        &format!(
            "    client-certificate-data: {}\n    client-key-data: {}",
            base64(cert_pem.as_bytes()),
            base64(key.serialize_pem().as_bytes())
        ),
    )
    .await;
    Api::<ConfigMap>::namespaced(agent.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap();
    let review: k8s_openapi::api::authentication::v1::SelfSubjectReview =
        serde_json::from_value(json!({})).unwrap();
    let me = Api::<k8s_openapi::api::authentication::v1::SelfSubjectReview>::all(agent.clone())
        .create(&PostParams::default(), &review)
        .await
        .unwrap()
        .status
        .unwrap()
        .user_info
        .unwrap();
    assert_eq!(me.username.as_deref(), Some(cn));
    assert_eq!(
        me.groups.unwrap(),
        [group.to_owned(), "system:authenticated".to_owned()]
    );
    let (code, message) = api_error(
        Api::<Namespace>::all(agent)
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(code, 403);
    assert_eq!(
        message,
        format!(
            "namespaces is forbidden: User \"{cn}\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
        )
    );
    // The certificate is set only once.
    let mut again = admin_csrs.get("agent").await.unwrap();
    again.status.as_mut().unwrap().certificate = Some(k8s_openapi::ByteString(b"other".to_vec()));
    let err = admin_csrs
        .replace_status("agent", &PostParams::default(), &again)
        .await;
    assert_eq!(
        api_error(err),
        (
            422,
            "CertificateSigningRequest.certificates.k8s.io \"agent\" is invalid: status.certificate: Forbidden: updates may not modify existing certificate content".to_owned()
        )
    );
}

#[tokio::test]
async fn denied_and_server_auth_csrs_get_no_certificate() {
    let srv = TlsServer::start().await;
    let admin = srv.client().await;
    let csrs: Api<CertificateSigningRequest> = Api::all(admin.clone());
    let (_, pem) = make_csr("someone", &[]);
    csrs.create(
        &PostParams::default(),
        &csr_object("denied", &pem, &["client auth"]),
    )
    .await
    .unwrap();
    csrs.create(
        &PostParams::default(),
        &csr_object("server", &pem, &["server auth", "digital signature"]),
    )
    .await
    .unwrap();
    csrs.create(
        &PostParams::default(),
        &csr_object("ok", &pem, &["client auth"]),
    )
    .await
    .unwrap();
    set_condition(&csrs, "denied", "Denied").await.unwrap();
    // Approved and Denied are exclusive and final.
    assert_eq!(
        api_error(set_condition(&csrs, "denied", "Approved").await),
        (
            422,
            "CertificateSigningRequest.certificates.k8s.io \"denied\" is invalid: status.conditions[1].type: Invalid value: \"Approved\": Approved and Denied conditions are mutually exclusive".to_owned()
        )
    );
    // A certificate cannot be put on an unapproved CSR, even by the admin.
    let mut forged = csrs.get("denied").await.unwrap();
    forged.status.get_or_insert_default().certificate =
        Some(k8s_openapi::ByteString(b"x".to_vec()));
    assert_eq!(
        api_error(
            csrs.replace_status("denied", &PostParams::default(), &forged)
                .await
        )
        .0,
        422
    );
    set_condition(&csrs, "server", "Approved").await.unwrap();
    set_condition(&csrs, "ok", "Approved").await.unwrap();
    let failed = wait_for(&csrs, "server", |c| {
        c.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Failed"))
    })
    .await;
    let condition = failed
        .status
        .as_ref()
        .unwrap()
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .find(|c| c.type_ == "Failed")
        .unwrap()
        .clone();
    assert_eq!(condition.reason.as_deref(), Some("SignerValidationFailure"));
    assert!(certificate(&failed).is_none());
    // The signer handles events in order: once "ok" is signed, "denied" was seen long ago.
    wait_for(&csrs, "ok", |c| certificate(c).is_some()).await;
    assert!(certificate(&csrs.get("denied").await.unwrap()).is_none());
}

#[tokio::test]
async fn approving_needs_approve_on_the_signer() {
    let srv = TlsServer::start().await;
    let admin = srv.client().await;
    create_rbac(
        &admin,
        json!([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "approver-no-signer"},
             "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests", "certificatesigningrequests/approval"], "verbs": ["get", "update"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "approver-no-signer"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "approver-no-signer"},
             "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "jane"}]}
        ]),
    )
    .await;
    let (_, pem) = make_csr("x", &[]);
    Api::<CertificateSigningRequest>::all(admin.clone())
        .create(
            &PostParams::default(),
            &csr_object("c", &pem, &["client auth"]),
        )
        .await
        .unwrap();
    let jane = kube::Client::new(
        srv.server.service_as(ocm_apiserver::Identity {
            user: "jane".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }),
        "default",
    );
    let (code, message) = api_error(set_condition(&Api::all(jane), "c", "Approved").await);
    assert_eq!(code, 403);
    assert_eq!(
        message,
        format!(
            "certificatesigningrequests.certificates.k8s.io \"c\" is forbidden: user not permitted to approve requests with signerName \"{SIGNER}\""
        )
    );
}

#[tokio::test]
async fn cleaner_removes_decided_csrs_after_their_ttl() {
    let srv = TlsServer::start_with(ocm_apiserver::ApiServerConfig {
        csr_decided_ttl: Duration::ZERO,
        resync_interval: Duration::from_millis(50),
        ..ocm_apiserver::ApiServerConfig::default()
    })
    .await;
    let admin = srv.client().await;
    let csrs: Api<CertificateSigningRequest> = Api::all(admin);
    let (_, pem) = make_csr("x", &[]);
    csrs.create(
        &PostParams::default(),
        &csr_object("pending", &pem, &["client auth"]),
    )
    .await
    .unwrap();
    csrs.create(
        &PostParams::default(),
        &csr_object("denied", &pem, &["client auth"]),
    )
    .await
    .unwrap();
    set_condition(&csrs, "denied", "Denied").await.unwrap();
    let mut gone = false;
    for _ in 0..400 {
        if csrs.get_opt("denied").await.unwrap().is_none() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(gone, "the denied CSR was never cleaned");
    // Pending ones live for a day.
    assert!(csrs.get_opt("pending").await.unwrap().is_some());
}

#[tokio::test]
async fn cleaner_removes_csrs_whose_certificate_expired() {
    // Certificates live one second; decided CSRs would otherwise stay an hour.
    let srv = TlsServer::start_with(ocm_apiserver::ApiServerConfig {
        csr_signing_duration: Duration::from_secs(1),
        resync_interval: Duration::from_millis(100),
        ..ocm_apiserver::ApiServerConfig::default()
    })
    .await;
    let admin = srv.client().await;
    let csrs: Api<CertificateSigningRequest> = Api::all(admin);
    let (_, pem) = make_csr("short", &[]);
    csrs.create(
        &PostParams::default(),
        &csr_object("short", &pem, &["client auth"]),
    )
    .await
    .unwrap();
    set_condition(&csrs, "short", "Approved").await.unwrap();
    // Watched, not polled: the CSR gets its certificate, then disappears once it expired.
    let issued = tokio::time::timeout(
        Duration::from_secs(30),
        kube::runtime::wait::await_condition(
            csrs.clone(),
            "short",
            |c: Option<&CertificateSigningRequest>| c.is_none_or(|c| certificate(c).is_some()),
        ),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(issued.is_some(), "the CSR was removed before it was signed");
    tokio::time::timeout(
        Duration::from_secs(30),
        kube::runtime::wait::await_condition(
            csrs.clone(),
            "short",
            |c: Option<&CertificateSigningRequest>| c.is_none(),
        ),
    )
    .await
    .expect("the CSR of an expired certificate is cleaned")
    .unwrap();
}
