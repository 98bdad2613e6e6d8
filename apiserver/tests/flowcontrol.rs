//! `flowcontrol.apiserver.k8s.io/v1` FlowSchemas and PriorityLevelConfigurations: served as API
//! objects (cluster-scoped, with `/status`, kube's generation rule and `kubectl get` columns) so
//! tools that read or write them work; fairness itself is not enforced.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use k8s_openapi::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use common::kubectl;
use common::tls::TlsServer;

#[tokio::test]
async fn flow_schemas_and_priority_levels_are_served() {
    let server = TlsServer::start().await;
    let client = server.client().await;

    let group = client
        .list_api_group_resources("flowcontrol.apiserver.k8s.io/v1")
        .await
        .unwrap();
    for (plural, kind) in [
        ("flowschemas", "FlowSchema"),
        ("prioritylevelconfigurations", "PriorityLevelConfiguration"),
    ] {
        let listed = group.resources.iter().find(|r| r.name == plural).unwrap();
        assert_eq!((listed.kind.as_str(), listed.namespaced), (kind, false));
        assert!(
            group
                .resources
                .iter()
                .any(|r| r.name == format!("{plural}/status"))
        );
    }

    let levels: Api<PriorityLevelConfiguration> = Api::all(client.clone());
    let level: PriorityLevelConfiguration = serde_json::from_value(json!({
        "metadata": {"name": "workload"},
        "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": 30,
            "limitResponse": {"type": "Queue",
                              "queuing": {"queues": 64, "handSize": 6, "queueLengthLimit": 50}}}},
    }))
    .unwrap();
    let created = levels.create(&PostParams::default(), &level).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));

    let schemas: Api<FlowSchema> = Api::all(client.clone());
    let schema: FlowSchema = serde_json::from_value(json!({
        "metadata": {"name": "agents"},
        "spec": {"priorityLevelConfiguration": {"name": "workload"},
                 "matchingPrecedence": 500,
                 "distinguisherMethod": {"type": "ByUser"},
                 "rules": [{"subjects": [{"kind": "Group", "group": {"name": "system:nodes"}}],
                            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"],
                                               "resources": ["*"], "clusterScope": true,
                                               "namespaces": ["*"]}]}]},
    }))
    .unwrap();
    schemas
        .create(&PostParams::default(), &schema)
        .await
        .unwrap();

    // A spec change bumps the generation; a status write does not.
    let params = PatchParams::default();
    let patched = schemas
        .patch(
            "agents",
            &params,
            &Patch::Merge(json!({"spec": {"matchingPrecedence": 400}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.metadata.generation, Some(2));
    let status = json!({"status": {"conditions": [
        {"type": "Dangling", "status": "False", "reason": "Found",
         "message": "the priority level exists", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    let after = schemas
        .patch_status("agents", &params, &Patch::Merge(status))
        .await
        .unwrap();
    assert_eq!(after.metadata.generation, Some(2));

    if kubectl::available() {
        let (code, out, err) = kubectl::run(&server, &["get", "flowschemas"], None).await;
        assert_eq!(code, 0, "{err}");
        let rows = kubectl::rows(&out);
        assert_eq!(
            rows[0],
            [
                "NAME",
                "PRIORITYLEVEL",
                "MATCHINGPRECEDENCE",
                "DISTINGUISHERMETHOD",
                "AGE",
                "MISSINGPL"
            ]
        );
        let agents = rows.iter().find(|r| r[0] == "agents").unwrap();
        assert_eq!(&agents[1..4], ["workload", "400", "ByUser"]);
        assert_eq!(agents[5], "False");

        let (code, out, err) =
            kubectl::run(&server, &["get", "prioritylevelconfigurations"], None).await;
        assert_eq!(code, 0, "{err}");
        let rows = kubectl::rows(&out);
        let workload = rows.iter().find(|r| r[0] == "workload").unwrap();
        assert_eq!(&workload[1..6], ["Limited", "30", "64", "6", "50"]);
    }
}
