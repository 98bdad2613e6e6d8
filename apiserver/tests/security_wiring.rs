//! Authentication and authorization wired into the request path, through real kube clients:
//! client certificates, bootstrap tokens and anonymous requests over TLS, RBAC on every route,
//! impersonation and access reviews.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use k8s_openapi::api::authorization::v1::{SelfSubjectAccessReview, SubjectAccessReview};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::discovery::{ApiResource, Discovery, Scope};
use ocm_apiserver::tls::base64;
use ocm_apiserver::{ApiServer, ApiServerConfig, Identity};
use rcgen::{CertificateParams, DistinguishedName, DnType, IsCa, KeyPair};
use serde_json::json;

use common::tls::TlsServer;

fn ca_pem(srv: &TlsServer) -> String {
    std::fs::read_to_string(srv.dir.path().join("pki/ca.crt")).unwrap()
}

/// A kube client for `srv` with the given `user:` section of a kubeconfig.
async fn client_with_user(srv: &TlsServer, user_yaml: &str) -> kube::Client {
    client_with_user_at(srv, &srv.url, user_yaml).await
}

/// Like [`client_with_user`] for another URL of the server (a `/clusters/{name}` prefix).
async fn client_with_user_at(srv: &TlsServer, url: &str, user_yaml: &str) -> kube::Client {
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: ocm\n  cluster:\n    server: {}\n    certificate-authority-data: {}\nusers:\n- name: u\n  user:\n{user_yaml}\ncontexts:\n- name: ocm\n  context:\n    cluster: ocm\n    user: u\ncurrent-context: ocm\n",
        url,
        base64(ca_pem(srv).as_bytes()),
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

async fn token_client(srv: &TlsServer, token: &str) -> kube::Client {
    client_with_user(srv, &format!("    token: {token}")).await
}

async fn anonymous_client(srv: &TlsServer) -> kube::Client {
    client_with_user(srv, "    {}").await
}

async fn cert_client(srv: &TlsServer, cert_pem: &str, key_pem: &str) -> kube::Client {
    client_with_user(
        srv,
        &format!(
            "    client-certificate-data: {}\n    client-key-data: {}",
            base64(cert_pem.as_bytes()),
            base64(key_pem.as_bytes())
        ),
    )
    .await
}

fn code<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> u16 {
    match result {
        Ok(_) => 200,
        Err(kube::Error::Api(s)) => s.code,
        Err(other) => panic!("not an API error: {other:?}"),
    }
}

fn message<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> String {
    match result {
        Err(kube::Error::Api(s)) => s.message.clone(),
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// A client certificate for `cn`/`orgs` signed by a CA the server does not trust.
/// `kubectl auth whoami`: a SelfSubjectReview.
async fn whoami(
    client: kube::Client,
) -> Result<k8s_openapi::api::authentication::v1::SelfSubjectReview, kube::Error> {
    let review = serde_json::from_value(json!({"apiVersion": "authentication.k8s.io/v1",
                                               "kind": "SelfSubjectReview"}))
    .unwrap();
    Api::<k8s_openapi::api::authentication::v1::SelfSubjectReview>::all(client)
        .create(&PostParams::default(), &review)
        .await
}

/// The user a client is, as the server reports it.
async fn user_info(client: kube::Client) -> k8s_openapi::api::authentication::v1::UserInfo {
    whoami(client)
        .await
        .unwrap()
        .status
        .unwrap()
        .user_info
        .unwrap()
}

/// A client certificate for `cn`/`orgs` signed by the server's own client CA.
fn trusted_cert(srv: &TlsServer, cn: &str, orgs: &[&str]) -> (String, String) {
    let ca_key = std::fs::read_to_string(srv.dir.path().join("pki/ca.key")).unwrap();
    let issuer =
        rcgen::Issuer::from_ca_cert_pem(&ca_pem(srv), KeyPair::from_pem(&ca_key).unwrap()).unwrap();
    client_cert(cn, orgs, &issuer)
}

fn client_cert(cn: &str, orgs: &[&str], issuer: &rcgen::Issuer<'_, KeyPair>) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    for o in orgs {
        dn.push(DnType::OrganizationName, *o);
    }
    params.distinguished_name = dn;
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

fn foreign_cert(cn: &str, orgs: &[&str]) -> (String, String) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "evil-ca");
    ca.distinguished_name = dn;
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    drop(ca_cert);
    client_cert(cn, orgs, &issuer)
}

async fn create_bootstrap_token(
    admin: &kube::Client,
    id: &str,
    secret: &str,
    extra: &[(&str, &str)],
) {
    let mut data = serde_json::Map::new();
    data.insert("token-id".into(), json!(base64(id.as_bytes())));
    data.insert("token-secret".into(), json!(base64(secret.as_bytes())));
    data.insert(
        "usage-bootstrap-authentication".into(),
        json!(base64(b"true")),
    );
    for (k, v) in extra {
        data.insert((*k).into(), json!(base64(v.as_bytes())));
    }
    let s: Secret = serde_json::from_value(json!({
        "metadata": {"name": format!("bootstrap-token-{id}"), "namespace": "kube-system"},
        "type": "bootstrap.kubernetes.io/token",
        "data": data,
    }))
    .unwrap();
    Api::<Secret>::namespaced(admin.clone(), "kube-system")
        .create(&PostParams::default(), &s)
        .await
        .unwrap();
}

async fn apply_rbac(admin: &kube::Client, objects: serde_json::Value) {
    for obj in objects.as_array().unwrap() {
        let kind = obj["kind"].as_str().unwrap();
        let plural = format!("{}s", kind.to_lowercase());
        let ar = ApiResource {
            group: "rbac.authorization.k8s.io".into(),
            version: "v1".into(),
            api_version: "rbac.authorization.k8s.io/v1".into(),
            kind: kind.into(),
            plural,
        };
        let dynobj: DynamicObject = serde_json::from_value(obj.clone()).unwrap();
        let api: Api<DynamicObject> =
            match obj.pointer("/metadata/namespace").and_then(|v| v.as_str()) {
                Some(ns) => Api::namespaced_with(admin.clone(), ns, &ar),
                None => Api::all_with(admin.clone(), &ar),
            };
        api.create(&PostParams::default(), &dynobj).await.unwrap();
    }
}

#[tokio::test]
async fn admin_certificate_is_system_masters_over_tls() {
    let srv = TlsServer::start().await;
    let admin = srv.client().await;
    let ssar: SelfSubjectAccessReview = serde_json::from_value(json!({
        "spec": {"resourceAttributes": {"verb": "delete", "resource": "nodes"}}
    }))
    .unwrap();
    let got = Api::<SelfSubjectAccessReview>::all(admin)
        .create(&PostParams::default(), &ssar)
        .await
        .unwrap();
    assert!(got.status.unwrap().allowed);
}

#[tokio::test]
async fn untrusted_client_certificate_gets_401_not_handshake_failure() {
    let srv = TlsServer::start().await;
    let (cert, key) = foreign_cert("admin", &["system:masters"]);
    let client = cert_client(&srv, &cert, &key).await;
    let ns: Api<Namespace> = Api::all(client.clone());
    assert_eq!(code(ns.list(&ListParams::default()).await), 401);
    // Even discovery is refused: bad credentials never fall back to anonymous.
    assert_eq!(code(client.apiserver_version().await), 401);
}

#[tokio::test]
async fn anonymous_reaches_discovery_only() {
    let srv = TlsServer::start().await;
    let anon = anonymous_client(&srv).await;
    assert_eq!(anon.apiserver_version().await.unwrap().major, "1");
    let ns: Api<Namespace> = Api::all(anon.clone());
    let msg = message(ns.list(&ListParams::default()).await);
    assert_eq!(
        msg,
        "namespaces is forbidden: User \"system:anonymous\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
    );
    let cms: Api<ConfigMap> = Api::namespaced(anon, "default");
    assert_eq!(code(cms.get("x").await), 403);
}

#[tokio::test]
async fn anonymous_auth_off_gives_401() {
    let srv = TlsServer::start_with(ApiServerConfig {
        anonymous_auth: false,
        ..ApiServerConfig::default()
    })
    .await;
    let anon = anonymous_client(&srv).await;
    assert_eq!(code(anon.apiserver_version().await), 401);
    // The admin is unaffected.
    assert!(srv.client().await.apiserver_version().await.is_ok());
}

#[tokio::test]
async fn bootstrap_token_is_limited_to_its_bindings() {
    let srv = TlsServer::start().await;
    let admin = srv.client().await;
    create_bootstrap_token(
        &admin,
        "abcdef",
        "0123456789abcdef",
        &[("auth-extra-groups", "system:bootstrappers:ocm")],
    )
    .await;
    apply_rbac(
        &admin,
        json!([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "csr-creator"},
             "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["create", "get"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "csr-creator"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "csr-creator"},
             "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:bootstrappers:ocm"}]}
        ]),
    )
    .await;
    let boot = token_client(&srv, "abcdef.0123456789abcdef").await;
    let ssar: SelfSubjectAccessReview = serde_json::from_value(json!({
        "spec": {"resourceAttributes": {"verb": "create", "group": "certificates.k8s.io", "resource": "certificatesigningrequests"}}
    }))
    .unwrap();
    let got = Api::<SelfSubjectAccessReview>::all(boot.clone())
        .create(&PostParams::default(), &ssar)
        .await
        .unwrap();
    assert!(got.status.unwrap().allowed);
    let secrets: Api<Secret> = Api::namespaced(boot.clone(), "kube-system");
    assert_eq!(
        message(secrets.list(&ListParams::default()).await),
        "secrets is forbidden: User \"system:bootstrap:abcdef\" cannot list resource \"secrets\" in API group \"\" in the namespace \"kube-system\""
    );
    let cms: Api<ConfigMap> = Api::namespaced(boot.clone(), "other");
    assert_eq!(code(cms.list(&ListParams::default()).await), 403);
    // Wrong secret, unknown id, garbage: 401.
    for bad in [
        "abcdef.0123456789abcdeX",
        "zzzzzz.0123456789abcdef",
        "garbage",
        "a.b.c",
    ] {
        let c = token_client(&srv, bad).await;
        assert_eq!(code(c.apiserver_version().await), 401, "{bad}");
    }
}

#[tokio::test]
async fn expired_bootstrap_token_gets_401() {
    let srv = TlsServer::start().await;
    let admin = srv.client().await;
    create_bootstrap_token(
        &admin,
        "expird",
        "0123456789abcdef",
        &[("expiration", "2001-01-01T00:00:00Z")],
    )
    .await;
    let c = token_client(&srv, "expird.0123456789abcdef").await;
    assert_eq!(code(c.apiserver_version().await), 401);
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb() {
    let server = ApiServer::in_memory().await.unwrap();
    let admin = kube::Client::new(server.service(), "default");
    // The admin may impersonate; the impersonated user gets only its own rights.
    let mut config = kube::Config::new("http://localhost".parse().unwrap());
    config.auth_info.impersonate = Some("jane".into());
    let svc = server.service();
    let as_jane = kube::Client::new(
        tower::ServiceBuilder::new()
            .map_request(|mut req: http::Request<kube::client::Body>| {
                req.headers_mut()
                    .insert("impersonate-user", "jane".parse().unwrap());
                req
            })
            .service(svc),
        "default",
    );
    let cms: Api<ConfigMap> = Api::namespaced(as_jane, "default");
    assert_eq!(
        message(cms.list(&ListParams::default()).await),
        "configmaps is forbidden: User \"jane\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    // A powerless user may not impersonate.
    let bob = server.service_as(Identity {
        user: "bob".into(),
        groups: vec!["system:authenticated".into()],
        ..Default::default()
    });
    let bob_as_admin = kube::Client::new(
        tower::ServiceBuilder::new()
            .map_request(|mut req: http::Request<kube::client::Body>| {
                req.headers_mut()
                    .insert("impersonate-user", "admin".parse().unwrap());
                req.headers_mut()
                    .insert("impersonate-group", "system:masters".parse().unwrap());
                req
            })
            .service(bob),
        "default",
    );
    let ns: Api<Namespace> = Api::all(bob_as_admin);
    assert_eq!(
        message(ns.list(&ListParams::default()).await),
        "users \"admin\" is forbidden: User \"bob\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    drop(admin);
}

#[tokio::test]
async fn subject_access_review_answers_from_the_policy() {
    let server = ApiServer::in_memory().await.unwrap();
    let admin = kube::Client::new(server.service(), "default");
    apply_rbac(
        &admin,
        json!([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
             "metadata": {"name": "cm-reader", "namespace": "default"},
             "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "metadata": {"name": "cm-reader", "namespace": "default"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
             "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "jane"}]}
        ]),
    )
    .await;
    let review = |verb: &str, ns: &str| -> SubjectAccessReview {
        serde_json::from_value(json!({
            "spec": {"user": "jane", "resourceAttributes": {"verb": verb, "resource": "configmaps", "namespace": ns}}
        }))
        .unwrap()
    };
    let sars: Api<SubjectAccessReview> = Api::all(admin);
    let yes = sars
        .create(&PostParams::default(), &review("list", "default"))
        .await
        .unwrap();
    assert!(yes.status.unwrap().allowed);
    let no = sars
        .create(&PostParams::default(), &review("delete", "default"))
        .await
        .unwrap();
    assert!(!no.status.unwrap().allowed);
    let other = sars
        .create(&PostParams::default(), &review("list", "kube-system"))
        .await
        .unwrap();
    assert!(!other.status.unwrap().allowed);
    // Jane herself: reads configmaps in default, nothing else; and cannot ask about others.
    let jane = kube::Client::new(
        server.service_as(Identity {
            user: "jane".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }),
        "default",
    );
    assert_eq!(
        code(
            Api::<ConfigMap>::namespaced(jane.clone(), "default")
                .list(&ListParams::default())
                .await
        ),
        200
    );
    assert_eq!(
        code(
            Api::<ConfigMap>::namespaced(jane.clone(), "kube-system")
                .list(&ListParams::default())
                .await
        ),
        403
    );
    assert_eq!(
        code(
            Api::<SubjectAccessReview>::all(jane)
                .create(&PostParams::default(), &review("list", "default"))
                .await
        ),
        403
    );
}

/// Every served resource, listed and fetched, with no credentials and as a powerless user:
/// all 403 (only discovery, version and health answer).
#[tokio::test]
async fn no_route_is_reachable_without_rights() {
    let srv = TlsServer::start().await;
    let admin = srv.client().await;
    let discovery = Discovery::new(admin.clone()).run().await.unwrap();
    let anon = anonymous_client(&srv).await;
    let powerless = kube::Client::new(
        srv.server.service_as(Identity {
            user: "nobody".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }),
        "default",
    );
    let mut checked = 0;
    for group in discovery.groups() {
        for (ar, caps) in group.recommended_resources() {
            for client in [&anon, &powerless] {
                let api: Api<DynamicObject> = match caps.scope {
                    Scope::Namespaced => Api::namespaced_with(client.clone(), "default", &ar),
                    Scope::Cluster => Api::all_with(client.clone(), &ar),
                };
                let list = api.list(&ListParams::default()).await;
                let get = api.get("x").await;
                let del = api.delete("x", &Default::default()).await;
                if ar.plural.ends_with("reviews") {
                    // Create-only virtual resources.
                    continue;
                }
                assert_eq!(code(list), 403, "list {}", ar.plural);
                assert_eq!(code(get), 403, "get {}", ar.plural);
                assert_eq!(code(del), 403, "delete {}", ar.plural);
                checked += 1;
            }
        }
    }
    assert!(checked > 40, "only {checked} resources checked");
    for client in [&anon, &powerless] {
        assert!(client.apiserver_version().await.is_ok());
        let health: Result<String, _> = client
            .request_text(http::Request::get("/readyz").body(Vec::new()).unwrap())
            .await;
        assert_eq!(health.unwrap(), "ok");
    }
}

#[tokio::test]
async fn token_request_round_trip_and_revocation() {
    use k8s_openapi::api::authentication::v1::TokenRequest;
    use k8s_openapi::api::core::v1::ServiceAccount;
    let srv = TlsServer::start().await;
    let admin = srv.client().await;
    let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");
    let sa: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "bot"}})).unwrap();
    sas.create(&PostParams::default(), &sa).await.unwrap();
    apply_rbac(
        &admin,
        json!([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
             "metadata": {"name": "cm", "namespace": "default"},
             "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "metadata": {"name": "cm", "namespace": "default"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm"},
             "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "default"}]}
        ]),
    )
    .await;
    let request: TokenRequest =
        serde_json::from_value(json!({"spec": {"audiences": [], "expirationSeconds": 600}}))
            .unwrap();
    let issued = sas
        .create_token_request("bot", &PostParams::default(), &request)
        .await
        .unwrap();
    let token = issued.status.unwrap().token;
    let bot = token_client(&srv, &token).await;
    Api::<ConfigMap>::namespaced(bot.clone(), "default")
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(
        message(
            Api::<Secret>::namespaced(bot.clone(), "default")
                .list(&ListParams::default())
                .await
        ),
        "secrets is forbidden: User \"system:serviceaccount:default:bot\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\""
    );
    // Who the bot is, as kube-apiserver reports it: the service account's uid and the token's
    // credential id; a CSR it creates carries both.
    let sa_uid = sas.get("bot").await.unwrap().metadata.uid.unwrap();
    let me = user_info(bot.clone()).await;
    assert_eq!(me.uid.as_deref(), Some(sa_uid.as_str()));
    let credential = me.extra.unwrap()["authentication.kubernetes.io/credential-id"].clone();
    assert!(credential[0].starts_with("JTI="), "{credential:?}");
    apply_rbac(
        &admin,
        json!([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "csr-creator"},
             "rules": [{"apiGroups": ["certificates.k8s.io"],
                        "resources": ["certificatesigningrequests"], "verbs": ["create"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "csr-creator"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "csr-creator"},
             "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "default"}]}
        ]),
    )
    .await;
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "bot");
    params.distinguished_name = dn;
    let csr_pem = params.serialize_request(&key).unwrap().pem().unwrap();
    let csr: k8s_openapi::api::certificates::v1::CertificateSigningRequest =
        serde_json::from_value(json!({"metadata": {"name": "from-bot"},
            "spec": {"request": base64(csr_pem.as_bytes()),
                     "signerName": "kubernetes.io/kube-apiserver-client",
                     "usages": ["client auth"], "uid": "forged", "extra": {"x": ["y"]}}}))
        .unwrap();
    let created =
        Api::<k8s_openapi::api::certificates::v1::CertificateSigningRequest>::all(bot.clone())
            .create(&PostParams::default(), &csr)
            .await
            .unwrap();
    assert_eq!(created.spec.uid.as_deref(), Some(sa_uid.as_str()));
    let extra = created.spec.extra.unwrap();
    assert!(extra.contains_key("authentication.kubernetes.io/credential-id"));
    assert!(
        !extra.contains_key("x"),
        "the requester's claims are the server's to fill"
    );
    // The bot itself may not mint tokens for itself.
    assert_eq!(
        code(
            Api::<ServiceAccount>::namespaced(bot.clone(), "default")
                .create_token_request("bot", &PostParams::default(), &request)
                .await
        ),
        403
    );
    // A token for a missing service account is 404.
    assert_eq!(
        code(
            sas.create_token_request("ghost", &PostParams::default(), &request)
                .await
        ),
        404
    );
    sas.delete("bot", &Default::default()).await.unwrap();
    assert_eq!(code(bot.apiserver_version().await), 401);
}

#[tokio::test]
async fn default_policy_is_stored_and_aggregated_in_every_cluster() {
    let server = ApiServer::in_memory().await.unwrap();
    let c1 = kube::Client::new(server.service_for_cluster("c1"), "default");
    let ar = ApiResource {
        group: "rbac.authorization.k8s.io".into(),
        version: "v1".into(),
        api_version: "rbac.authorization.k8s.io/v1".into(),
        kind: "ClusterRole".into(),
        plural: "clusterroles".into(),
    };
    let roles: Api<DynamicObject> = Api::all_with(c1.clone(), &ar);
    // Touch the cluster, then wait for the aggregation controller to fill "admin".
    let mut rules = 0;
    for _ in 0..400 {
        let admin_role = roles.get("admin").await.unwrap();
        rules = admin_role.data["rules"].as_array().map_or(0, Vec::len);
        if rules > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(rules > 0, "admin ClusterRole never aggregated");
    roles.get("system:discovery").await.unwrap();
    // A new role labelled for aggregation into "view" shows up in it.
    let extra: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "widgets-view", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}],
    }))
    .unwrap();
    roles.create(&PostParams::default(), &extra).await.unwrap();
    let mut found = false;
    for _ in 0..400 {
        let view = roles.get("view").await.unwrap();
        found = view.data["rules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["resources"] == json!(["widgets"]));
        if found {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(found, "view never picked up widgets-view");
}

#[tokio::test]
async fn rbac_writes_cannot_escalate() {
    let server = ApiServer::in_memory().await.unwrap();
    let admin = kube::Client::new(server.service(), "default");
    // Jane may manage Roles and RoleBindings in default, and read configmaps there.
    apply_rbac(
        &admin,
        json!([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
             "metadata": {"name": "rbac-manager", "namespace": "default"},
             "rules": [
                {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"], "verbs": ["create", "get"]},
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "metadata": {"name": "rbac-manager", "namespace": "default"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "rbac-manager"},
             "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "jane"}]}
        ]),
    )
    .await;
    let jane = kube::Client::new(
        server.service_as(Identity {
            user: "jane".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }),
        "default",
    );
    let ar = |kind: &str, plural: &str| ApiResource {
        group: "rbac.authorization.k8s.io".into(),
        version: "v1".into(),
        api_version: "rbac.authorization.k8s.io/v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    };
    let roles: Api<DynamicObject> =
        Api::namespaced_with(jane.clone(), "default", &ar("Role", "roles"));
    let held: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "cm-get"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
    }))
    .unwrap();
    roles.create(&PostParams::default(), &held).await.unwrap();
    let more: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "secrets"},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
    }))
    .unwrap();
    let msg = message(roles.create(&PostParams::default(), &more).await);
    assert!(
        msg.starts_with("roles.rbac.authorization.k8s.io \"secrets\" is forbidden: user \"jane\""),
        "{msg}"
    );
    // Binding a ClusterRole she does not hold is refused too.
    let bindings: Api<DynamicObject> =
        Api::namespaced_with(jane, "default", &ar("RoleBinding", "rolebindings"));
    let bind_admin: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "me-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "jane"}],
    }))
    .unwrap();
    assert_eq!(
        code(bindings.create(&PostParams::default(), &bind_admin).await),
        403
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, .. proptest::prelude::ProptestConfig::default() })]

    /// Random client certificates, bearer tokens and impersonation headers on a network
    /// request: always 401, 403 or a success, never a 500 or a panic.
    #[test]
    fn random_credentials_never_give_500(
        cert in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
        token in "[ -~]{0,60}",
        user in "[ -~]{0,20}",
        group in "[ -~]{0,20}",
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let server = ApiServer::in_memory().await.unwrap();
            let chain = if cert.is_empty() { Vec::new() } else { vec![cert.clone()] };
            let mut builder = http::Request::get("/api/v1/namespaces/default/configmaps");
            builder = builder.extension(ocm_apiserver::authn::PeerCertificates::new(chain));
            if let Ok(v) = http::HeaderValue::from_str(&format!("Bearer {token}")) {
                builder = builder.header("authorization", v);
            }
            if let Ok(v) = http::HeaderValue::from_str(&user) {
                builder = builder.header("impersonate-user", v);
            }
            if let Ok(v) = http::HeaderValue::from_str(&group) {
                builder = builder.header("impersonate-group", v);
            }
            let req = builder.body(http_body_util::Empty::<bytes::Bytes>::new()).unwrap();
            let resp = tower::ServiceExt::oneshot(server.service(), req).await.unwrap();
            let status = resp.status().as_u16();
            assert!(matches!(status, 200 | 400 | 401 | 403), "status {status}");
            server.shutdown();
        });
    }
}

#[tokio::test]
async fn unauthorized_requests_do_not_create_logical_clusters() {
    let srv = TlsServer::start().await;
    let anon_kc = {
        // A client of /clusters/never without credentials.
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: ocm\n  cluster:\n    server: {}/clusters/never\n    certificate-authority-data: {}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: ocm\n  context:\n    cluster: ocm\n    user: u\ncurrent-context: ocm\n",
            srv.url,
            base64(ca_pem(&srv).as_bytes()),
        );
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&text).unwrap();
        let config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .unwrap();
        kube::Client::try_from(config).unwrap()
    };
    let ns: Api<Namespace> = Api::all(anon_kc.clone());
    assert_eq!(code(ns.list(&ListParams::default()).await), 404);
    // What the default policy grants (version for anyone, discovery for any authenticated
    // user, here an agent-like certificate from the server's CA) finds no such cluster.
    let get = |path: &str| http::Request::get(path).body(Vec::new()).unwrap();
    let err = anon_kc.request_text(get("/version")).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 404),
        "version of an unknown cluster: {err:?}"
    );
    let (cert, key) = trusted_cert(
        &srv,
        "system:open-cluster-management:c1:agent",
        &["system:open-cluster-management:c1"],
    );
    let agent = client_with_user_at(
        &srv,
        &format!("{}/clusters/never", srv.url),
        &format!(
            "    client-certificate-data: {}\n    client-key-data: {}",
            base64(cert.as_bytes()),
            base64(key.as_bytes())
        ),
    )
    .await;
    let err = agent.request_text(get("/api")).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 404),
        "discovery of an unknown cluster: {err:?}"
    );
    assert!(
        !srv.server
            .store()
            .buckets()
            .iter()
            .any(|b| &*b.cluster == "never"),
        "a forbidden request created the cluster"
    );
}

#[tokio::test]
async fn impersonating_a_uid_and_extras_needs_their_own_rights() {
    let server = ApiServer::in_memory().await.unwrap();
    let headers = |pairs: Vec<(&'static str, &'static str)>, svc: ocm_apiserver::ApiService| {
        kube::Client::new(
            tower::ServiceBuilder::new()
                .map_request(move |mut req: http::Request<kube::client::Body>| {
                    for (k, v) in &pairs {
                        req.headers_mut().append(*k, v.parse().unwrap());
                    }
                    req
                })
                .service(svc),
            "default",
        )
    };
    // The admin may impersonate all of it; the identity carries the uid and the extras (key
    // lowercased and percent-decoded).
    let as_jane = headers(
        vec![
            ("impersonate-user", "jane"),
            ("impersonate-uid", "1234"),
            ("impersonate-extra-Scopes", "view"),
            ("impersonate-extra-scopes", "edit"),
            ("impersonate-extra-example.com%2fteam", "blue"),
            ("impersonate-extra-half%2", "kept"),
        ],
        server.service(),
    );
    let me = user_info(as_jane).await;
    assert_eq!(me.username.as_deref(), Some("jane"));
    assert_eq!(me.uid.as_deref(), Some("1234"));
    let extra = me.extra.unwrap();
    assert_eq!(extra["scopes"], vec!["view".to_owned(), "edit".to_owned()]);
    assert_eq!(extra["example.com/team"], vec!["blue".to_owned()]);
    // An escape that does not decode leaves the key as sent.
    assert_eq!(extra["half%2"], vec!["kept".to_owned()]);

    // Without a user: 400. With the right to impersonate users only: the uid is refused.
    let no_user = headers(vec![("impersonate-uid", "1234")], server.service());
    assert_eq!(code(whoami(no_user).await), 400);
    let admin = kube::Client::new(server.service(), "default");
    apply_rbac(
        &admin,
        json!([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "impersonate-users"},
             "rules": [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": "impersonate-users"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "impersonate-users"},
             "subjects": [{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}]}
        ]),
    )
    .await;
    let bob = || {
        server.service_as(Identity {
            user: "bob".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        })
    };
    let bob_as_jane = headers(vec![("impersonate-user", "jane")], bob());
    assert_eq!(code(whoami(bob_as_jane).await), 200);
    let with_uid = headers(
        vec![("impersonate-user", "jane"), ("impersonate-uid", "1234")],
        bob(),
    );
    assert_eq!(
        message(whoami(with_uid).await),
        "uids.authentication.k8s.io \"1234\" is forbidden: User \"bob\" cannot impersonate resource \"uids\" in API group \"authentication.k8s.io\" at the cluster scope"
    );
    let with_extra = headers(
        vec![
            ("impersonate-user", "jane"),
            ("impersonate-extra-scopes", "view"),
        ],
        bob(),
    );
    assert_eq!(
        message(whoami(with_extra).await),
        "userextras.authentication.k8s.io \"view\" is forbidden: User \"bob\" cannot impersonate resource \"userextras/scopes\" in API group \"authentication.k8s.io\" at the cluster scope"
    );
}

#[tokio::test]
async fn a_deleted_default_role_grants_nothing_until_the_server_starts_again() {
    use k8s_openapi::api::rbac::v1::ClusterRole;
    let dir = tempfile::tempdir().unwrap();
    let config = || ApiServerConfig {
        data_dir: Some(dir.path().to_path_buf()),
        ..ApiServerConfig::default()
    };
    let server = ApiServer::start(config()).await.unwrap();
    let admin = kube::Client::new(server.service(), "default");
    apply_rbac(
        &admin,
        json!([{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "viewer"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                "subjects": [{"kind": "User", "name": "viewer", "apiGroup": "rbac.authorization.k8s.io"}]}]),
    )
    .await;
    let viewer = |server: &ApiServer| {
        let svc = server.service_as(Identity {
            user: "viewer".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        });
        Api::<ConfigMap>::namespaced(kube::Client::new(svc, "default"), "default")
    };
    assert_eq!(
        code(viewer(&server).list(&ListParams::default()).await),
        200
    );
    Api::<ClusterRole>::all(admin.clone())
        .delete("view", &Default::default())
        .await
        .unwrap();
    assert_eq!(
        message(viewer(&server).list(&ListParams::default()).await),
        "configmaps is forbidden: User \"viewer\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\": RBAC: clusterrole.rbac.authorization.k8s.io \"view\" not found"
    );
    // As kube-apiserver does on start, the server puts the missing defaults back.
    server.shutdown();
    drop(server);
    let server = ApiServer::start(config()).await.unwrap();
    assert_eq!(
        code(viewer(&server).list(&ListParams::default()).await),
        200
    );
    server.shutdown();
}
