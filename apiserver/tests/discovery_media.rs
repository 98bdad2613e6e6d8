//! Discovery documents negotiated as kube-apiserver negotiates them: the legacy documents
//! (`/api`, `/apis`, `/apis/{g}`, `/api/v1`, `/apis/{g}/{v}`) in JSON, YAML or protobuf per
//! `Accept` (406 otherwise), and aggregated discovery chosen by the first clause, in
//! goautoneg's order, that asks for `apidiscovery.k8s.io/v2`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use serde_json::Value;

const PB: &str = "application/vnd.kubernetes.protobuf";
const YAML: &str = "application/yaml";
const V2: &str = "g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

async fn get(client: &kube::Client, uri: &str, accept: &str) -> common::Answer {
    common::send_accept(client, "GET", uri, accept, None).await
}

#[tokio::test]
async fn legacy_documents_answer_json_yaml_and_protobuf() {
    let (_server, client) = common::server().await;
    for (uri, kind) in [
        ("/api", "APIVersions"),
        ("/apis", "APIGroupList"),
        ("/apis/apps", "APIGroup"),
        ("/api/v1", "APIResourceList"),
        ("/apis/apps/v1", "APIResourceList"),
    ] {
        let json = get(&client, uri, "application/json").await;
        assert_eq!(
            (json.code, json.content_type.as_str()),
            (200, "application/json"),
            "{uri}"
        );
        let doc: Value = serde_json::from_slice(&json.body).unwrap();
        assert_eq!(doc["kind"], kind, "{uri}");

        let yaml = get(&client, uri, YAML).await;
        assert_eq!(
            (yaml.code, yaml.content_type.as_str()),
            (200, YAML),
            "{uri}"
        );
        assert!(
            yaml.text().contains(&format!("kind: {kind}\n")),
            "{uri}: {}",
            yaml.text()
        );

        let pb = get(&client, uri, PB).await;
        assert_eq!((pb.code, pb.content_type.as_str()), (200, PB), "{uri}");
        let decoded = ocm_apiserver_protobuf::decode_body(&pb.body).unwrap();
        assert_eq!(decoded["kind"], kind, "{uri}");
        // The protobuf document carries what the JSON one does.
        for field in ["versions", "groups", "name", "groupVersion"] {
            assert_eq!(decoded.get(field), doc.get(field), "{uri} {field}");
        }
        if let Some(resources) = doc.get("resources").and_then(Value::as_array) {
            let names = |v: &Value| -> Vec<Value> {
                v["resources"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["name"].clone())
                    .collect()
            };
            assert!(!resources.is_empty());
            assert_eq!(names(&decoded), names(&doc), "{uri}");
        }
    }
}

#[tokio::test]
async fn legacy_documents_follow_kubes_negotiation() {
    let (_server, client) = common::server().await;
    // q values first, then concrete types before wildcards.
    let answer = get(
        &client,
        "/api/v1",
        "application/json;q=0.5, application/yaml",
    )
    .await;
    assert_eq!(answer.content_type, YAML);
    let answer = get(&client, "/api/v1", "*/*, application/yaml").await;
    assert_eq!(answer.content_type, YAML);
    // A Table clause is accepted and answers the document as it is.
    let table = "application/json;as=Table;g=meta.k8s.io;v=v1";
    let answer = get(&client, "/apis/apps/v1", table).await;
    assert_eq!(
        (answer.code, answer.content_type.as_str()),
        (200, "application/json")
    );
    assert!(answer.text().contains("\"kind\":\"APIResourceList\""));
    // Nothing acceptable: kube's 406.
    let answer = get(&client, "/apis", "text/html").await;
    assert_eq!(answer.code, 406, "{}", answer.text());
    let status: Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(status["reason"], "NotAcceptable");
    // The core group's resource list has no apiVersion (kube keeps release 1.1's form).
    let core: Value =
        serde_json::from_slice(&get(&client, "/api/v1", "application/json").await.body).unwrap();
    assert!(core.get("apiVersion").is_none(), "{core}");
    let apps: Value =
        serde_json::from_slice(&get(&client, "/apis/apps/v1", "application/json").await.body)
            .unwrap();
    assert_eq!(apps["apiVersion"], "v1");
}

#[tokio::test]
async fn aggregated_discovery_is_picked_by_kubes_clause_order() {
    let (_server, client) = common::server().await;
    let aggregated_json = format!("application/json;{V2}");
    // A plain clause does not stop the aggregated one behind it (kube passes it over).
    let accept = format!("application/json, application/json;{V2}");
    let answer = get(&client, "/apis", &accept).await;
    assert_eq!(answer.content_type, aggregated_json);
    // By q: the plain JSON clause's q does not matter; the YAML one outranks the JSON one.
    let accept = format!("application/json;{V2};q=0.5, application/yaml;{V2};q=0.8");
    let answer = get(&client, "/api", &accept).await;
    assert_eq!(answer.code, 200);
    assert_eq!(answer.content_type, format!("application/yaml;{V2}"));
    assert!(
        answer
            .text()
            .starts_with("apiVersion: apidiscovery.k8s.io/v2\n"),
        "{}",
        answer.text()
    );
    // v2beta1 is not served by kube 1.35: alone it is a 406, with a plain clause behind it
    // the legacy document answers.
    let beta = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
    let answer = get(&client, "/apis", beta).await;
    assert_eq!(answer.code, 406, "{}", answer.text());
    let answer = get(&client, "/apis", &format!("{beta}, application/json")).await;
    assert_eq!(answer.content_type, "application/json");
    assert!(answer.text().contains("\"kind\":\"APIGroupList\""));
}
