//! TokenReview (`authentication.k8s.io/v1`): what a token authenticates as, answered by the
//! same authenticators requests go through, as kube-apiserver does for delegated
//! authentication (a proxy or an aggregated server asking who a bearer is).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec, TokenReview};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, PostParams};
use serde_json::json;

use common::tls::TlsServer;

async fn review(client: kube::Client, token: &str) -> Result<TokenReview, kube::Error> {
    let review: TokenReview = serde_json::from_value(json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
        "spec": {"token": token}}))
    .unwrap();
    Api::<TokenReview>::all(client)
        .create(&PostParams::default(), &review)
        .await
}

async fn service_account_token(admin: &kube::Client, name: &str) -> String {
    let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default"}}))
            .unwrap();
    sas.create(&PostParams::default(), &sa).await.unwrap();
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(3600),
            ..Default::default()
        },
        ..Default::default()
    };
    sas.create_token_request(name, &PostParams::default(), &request)
        .await
        .unwrap()
        .status
        .unwrap()
        .token
}

/// A client of `srv` presenting `token`.
async fn token_client(srv: &TlsServer, token: &str) -> kube::Client {
    let text = std::fs::read_to_string(&srv.kubeconfig).unwrap();
    let mut kubeconfig = kube::config::Kubeconfig::from_yaml(&text).unwrap();
    for user in &mut kubeconfig.auth_infos {
        if let Some(auth) = user.auth_info.as_mut() {
            *auth = kube::config::AuthInfo {
                token: Some(token.to_owned().into()),
                ..Default::default()
            };
        }
    }
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    kube::Client::try_from(config).unwrap()
}

#[tokio::test]
async fn token_reviews_name_the_user_of_a_valid_token_and_refuse_others() {
    let srv = TlsServer::start().await;
    let admin = srv.client().await;
    let token = service_account_token(&admin, "robot").await;

    let answer = review(admin.clone(), &token).await.unwrap();
    let status = answer.status.unwrap();
    assert_eq!(status.authenticated, Some(true));
    let user = status.user.unwrap();
    assert_eq!(
        user.username.as_deref(),
        Some("system:serviceaccount:default:robot")
    );
    let groups = user.groups.unwrap_or_default();
    assert!(
        groups.contains(&"system:serviceaccounts".to_owned()),
        "{groups:?}"
    );
    assert!(
        groups.contains(&"system:serviceaccounts:default".to_owned()),
        "{groups:?}"
    );
    assert!(user.uid.is_some_and(|u| !u.is_empty()));

    let bogus = review(admin.clone(), "not-a-token")
        .await
        .unwrap()
        .status
        .unwrap();
    assert_ne!(bogus.authenticated, Some(true));
    assert!(bogus.error.is_some_and(|e| !e.is_empty()));

    match review(admin.clone(), "").await {
        Err(kube::Error::Api(s)) => assert_eq!((s.code, s.reason.as_str()), (400, "BadRequest")),
        other => panic!("an empty token must be a 400, got {other:?}"),
    }

    // Asking needs `create tokenreviews` (kube's system:auth-delegator grants it).
    let robot = token_client(&srv, &token).await;
    match review(robot, &token).await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 403),
        other => panic!("a plain service account must not review tokens, got {other:?}"),
    }
}
