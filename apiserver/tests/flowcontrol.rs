//! `flowcontrol.apiserver.k8s.io/v1` FlowSchemas and PriorityLevelConfigurations: served as API
//! objects (cluster-scoped, with `/status`, kube's generation rule and `kubectl get` columns) so
//! tools that read or write them work; fairness itself is not enforced. Every cluster has
//! kube-apiserver 1.35's bootstrap configuration (mandatory `exempt` and `catch-all`, and the
//! suggested objects), kept as kube's ensurer keeps it; FlowSchemas carry kube's `Dangling`
//! condition; both kinds are defaulted and validated as kube does.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use k8s_openapi::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use serde_json::{Value, json};

use common::tls::TlsServer;
use common::{kubectl, status_of};

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

/// Waits (watching) until the object `name` of `api` satisfies `cond`; returns it.
async fn until<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    cond: impl Fn(Option<&K>) -> bool + Send + 'static,
) -> Option<K>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    tokio::time::timeout(
        std::time::Duration::from_secs(20),
        await_condition(api.clone(), name, cond),
    )
    .await
    .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
    .unwrap()
}

/// Deletes `name` and waits (watching) until the server has made it again; returns the new one.
async fn delete_and_await_remade<K>(api: &Api<K>, name: &str) -> K
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let old_uid = api.get(name).await.unwrap().meta().uid.clone();
    api.delete(name, &DeleteParams::default()).await.unwrap();
    until(
        api,
        name,
        &format!("{name} made again"),
        move |o: Option<&K>| o.is_some_and(|o| o.meta().uid != old_uid),
    )
    .await
    .unwrap()
}

fn dangling(fs: Option<&FlowSchema>) -> Option<(String, String, String)> {
    let c = fs?
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_.as_deref() == Some("Dangling"))?;
    Some((
        c.status.clone().unwrap_or_default(),
        c.reason.clone().unwrap_or_default(),
        c.message.clone().unwrap_or_default(),
    ))
}

fn autoupdate<K: kube::Resource>(o: &K) -> Option<String> {
    o.meta()
        .annotations
        .as_ref()?
        .get("apf.kubernetes.io/autoupdate-spec")
        .cloned()
}

/// The names of every object of `api`, sorted.
async fn sorted_names<K>(api: &Api<K>) -> Vec<String>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    let mut names: Vec<String> = api
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|o| o.meta().name.clone().unwrap())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn every_cluster_has_kubes_bootstrap_configuration() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let levels: Api<PriorityLevelConfiguration> = Api::all(client.clone());
    let schemas: Api<FlowSchema> = Api::all(client.clone());

    assert_eq!(
        sorted_names(&levels).await,
        [
            "catch-all",
            "exempt",
            "global-default",
            "leader-election",
            "node-high",
            "system",
            "workload-high",
            "workload-low"
        ]
    );
    assert_eq!(
        sorted_names(&schemas).await,
        [
            "catch-all",
            "exempt",
            "global-default",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-system-service-accounts",
            "probes",
            "service-accounts",
            "system-leader-election",
            "system-node-high",
            "system-nodes"
        ]
    );

    // kube's values, as kube-apiserver 1.35 writes them.
    let catch_all = serde_json::to_value(levels.get("catch-all").await.unwrap()).unwrap();
    assert_eq!(
        catch_all["spec"],
        json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
               "limitResponse": {"type": "Reject"}, "lendablePercent": 0}})
    );
    assert_eq!(
        catch_all["metadata"]["annotations"],
        json!({"apf.kubernetes.io/autoupdate-spec": "true"})
    );
    let workload_low = levels.get("workload-low").await.unwrap();
    let limited = workload_low.spec.unwrap().limited.unwrap();
    assert_eq!(
        (limited.nominal_concurrency_shares, limited.lendable_percent),
        (Some(100), Some(90))
    );
    let probes = serde_json::to_value(schemas.get("probes").await.unwrap()).unwrap();
    assert_eq!(probes["spec"]["matchingPrecedence"], 2);
    assert_eq!(
        probes["spec"]["priorityLevelConfiguration"]["name"],
        "exempt"
    );
    assert_eq!(
        probes["spec"]["rules"][0]["nonResourceRules"],
        json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}])
    );

    // Every bootstrap FlowSchema's priority level exists.
    let found = until(
        &schemas,
        "global-default",
        "Dangling on global-default",
        |fs| dangling(fs).is_some(),
    )
    .await;
    assert_eq!(
        dangling(found.as_ref()).unwrap(),
        (
            "False".to_owned(),
            "Found".to_owned(),
            "This FlowSchema references the PriorityLevelConfiguration object named \"global-default\" and it exists".to_owned()
        )
    );
}

#[tokio::test]
async fn mandatory_objects_are_put_back() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let levels: Api<PriorityLevelConfiguration> = Api::all(client.clone());
    let schemas: Api<FlowSchema> = Api::all(client.clone());

    // Deleted: made again.
    let again = delete_and_await_remade(&levels, "catch-all").await;
    assert_eq!(autoupdate(&again).as_deref(), Some("true"));

    // Their autoupdate annotation cannot be turned off.
    let off = json!({"metadata": {"annotations": {"apf.kubernetes.io/autoupdate-spec": "false"}}});
    let params = PatchParams::default();
    let patched = schemas
        .patch("catch-all", &params, &Patch::Merge(&off))
        .await
        .unwrap();
    assert_eq!(autoupdate(&patched).as_deref(), Some("false"));
    until(&schemas, "catch-all", "the annotation put back", |fs| {
        fs.and_then(autoupdate).as_deref() == Some("true")
    })
    .await;

    // Their spec is fixed: the exempt level may tune only `spec.exempt`.
    let (code, reason, message) = status_of(
        schemas
            .patch(
                "catch-all",
                &params,
                &Patch::Merge(json!({"spec": {"matchingPrecedence": 9000}})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert_eq!(
        message,
        "FlowSchema.flowcontrol.apiserver.k8s.io \"catch-all\" is invalid: spec: Invalid value: \
         {\"PriorityLevelConfiguration\":{\"Name\":\"catch-all\"},\"MatchingPrecedence\":9000,\
         \"DistinguisherMethod\":{\"Type\":\"ByUser\"},\"Rules\":[{\"Subjects\":[\
         {\"Kind\":\"Group\",\"User\":null,\"Group\":{\"Name\":\"system:unauthenticated\"},\"ServiceAccount\":null},\
         {\"Kind\":\"Group\",\"User\":null,\"Group\":{\"Name\":\"system:authenticated\"},\"ServiceAccount\":null}],\
         \"ResourceRules\":[{\"Verbs\":[\"*\"],\"APIGroups\":[\"*\"],\"Resources\":[\"*\"],\"ClusterScope\":true,\"Namespaces\":[\"*\"]}],\
         \"NonResourceRules\":[{\"Verbs\":[\"*\"],\"NonResourceURLs\":[\"*\"]}]}]}: \
         spec of 'catch-all' must equal the fixed value"
    );
    let tuned = levels
        .patch(
            "exempt",
            &params,
            &Patch::Merge(json!({"spec": {"exempt": {"nominalConcurrencyShares": 7}}})),
        )
        .await
        .unwrap();
    assert_eq!(
        tuned
            .spec
            .unwrap()
            .exempt
            .unwrap()
            .nominal_concurrency_shares,
        Some(7)
    );
    let (code, _, message) = status_of(
        levels
            .patch(
                "exempt",
                &params,
                &Patch::Merge(json!({"spec": {"type": "Limited"}})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert!(
        message.starts_with("PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io \"exempt\" is invalid: [spec.type: Invalid value: \"Limited\": type must be 'Exempt' if and only if name is 'exempt', spec.exempt: Forbidden: must be nil if the type is Limited, spec.limited: Required value: must not be empty when type is Limited, spec: Invalid value: "),
        "{message}"
    );
    assert!(
        message.ends_with(
            "spec of 'exempt' except the 'spec.exempt' field must equal the fixed value]"
        ),
        "{message}"
    );
}

#[tokio::test]
async fn suggested_objects_follow_their_autoupdate_annotation() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let levels: Api<PriorityLevelConfiguration> = Api::all(client.clone());
    let params = PatchParams::default();
    let shares = |l: Option<&PriorityLevelConfiguration>| {
        l.and_then(|l| l.spec.as_ref())
            .and_then(|s| s.limited.as_ref())
            .and_then(|l| l.nominal_concurrency_shares)
    };

    // While the annotation is "true", a changed spec is put back.
    let changed = levels
        .patch(
            "global-default",
            &params,
            &Patch::Merge(json!({"spec": {"limited": {"nominalConcurrencyShares": 21}}})),
        )
        .await
        .unwrap();
    assert_eq!(shares(Some(&changed)), Some(21));
    until(&levels, "global-default", "the spec put back", move |l| {
        shares(l) == Some(20)
    })
    .await;

    // With "false", the administrator's spec stays.
    let mine = json!({
        "metadata": {"annotations": {"apf.kubernetes.io/autoupdate-spec": "false"}},
        "spec": {"limited": {"nominalConcurrencyShares": 22}},
    });
    levels
        .patch("global-default", &params, &Patch::Merge(&mine))
        .await
        .unwrap();
    // Proof that the controller has passed over the cluster since: a FlowSchema it makes again
    // after this deletion (it keeps priority levels before FlowSchemas, in one pass).
    let schemas: Api<FlowSchema> = Api::all(client.clone());
    delete_and_await_remade(&schemas, "global-default").await;
    let kept = levels.get("global-default").await.unwrap();
    assert_eq!(shares(Some(&kept)), Some(22));
    assert_eq!(autoupdate(&kept).as_deref(), Some("false"));

    // A deleted suggested object is made again, as kube's ensurer does.
    delete_and_await_remade(&levels, "workload-low").await;

    // An annotated object kube's bootstrap no longer has (1.33's endpoint-controller) goes.
    let retired: FlowSchema = serde_json::from_value(json!({
        "metadata": {"name": "endpoint-controller",
                     "annotations": {"apf.kubernetes.io/autoupdate-spec": "true"}},
        "spec": {"priorityLevelConfiguration": {"name": "workload-high"},
                 "matchingPrecedence": 150,
                 "rules": [{"subjects": [{"kind": "User", "user": {"name": "x"}}],
                            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]},
    }))
    .unwrap();
    schemas
        .create(&PostParams::default(), &retired)
        .await
        .unwrap();
    until(
        &schemas,
        "endpoint-controller",
        "the retired schema deleted",
        |fs| fs.is_none(),
    )
    .await;
}

#[tokio::test]
async fn dangling_follows_priority_levels() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let levels: Api<PriorityLevelConfiguration> = Api::all(client.clone());
    let schemas: Api<FlowSchema> = Api::all(client.clone());
    let schema: FlowSchema = serde_json::from_value(json!({
        "metadata": {"name": "agents"},
        "spec": {"priorityLevelConfiguration": {"name": "agents-level"},
                 "rules": [{"subjects": [{"kind": "Group", "group": {"name": "agents"}}],
                            "resourceRules": [{"verbs": ["get", "list"], "apiGroups": [""],
                                               "resources": ["pods"], "namespaces": ["*"]}]}]},
    }))
    .unwrap();
    let created = schemas
        .create(&PostParams::default(), &schema)
        .await
        .unwrap();
    // Defaulted as kube does, with Go's empty status.
    assert_eq!(
        created.spec.as_ref().unwrap().matching_precedence,
        Some(1000)
    );
    assert!(created.status.is_some());

    let missing = until(&schemas, "agents", "Dangling True", |fs| {
        dangling(fs).is_some_and(|d| d.0 == "True")
    })
    .await;
    assert_eq!(
        dangling(missing.as_ref()).unwrap(),
        (
            "True".to_owned(),
            "NotFound".to_owned(),
            "This FlowSchema references the PriorityLevelConfiguration object named \"agents-level\" but there is no such object".to_owned()
        )
    );

    let level: PriorityLevelConfiguration = serde_json::from_value(json!({
        "metadata": {"name": "agents-level"},
        "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}},
    }))
    .unwrap();
    let created = levels.create(&PostParams::default(), &level).await.unwrap();
    let raw = serde_json::to_value(&created).unwrap();
    assert_eq!(
        raw["spec"]["limited"],
        json!({"nominalConcurrencyShares": 30, "limitResponse": {"type": "Queue",
               "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}},
               "lendablePercent": 0})
    );
    assert_eq!(raw["status"], json!({}));
    until(&schemas, "agents", "Dangling False", |fs| {
        dangling(fs).is_some_and(|d| d.0 == "False" && d.1 == "Found")
    })
    .await;

    levels
        .delete("agents-level", &DeleteParams::default())
        .await
        .unwrap();
    until(&schemas, "agents", "Dangling True again", |fs| {
        dangling(fs).is_some_and(|d| d.1 == "NotFound")
    })
    .await;
}

/// Creates `obj` as `kind` and returns the 422's message.
async fn invalid<K>(api: &Api<K>, obj: Value) -> String
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + serde::Serialize,
{
    let obj: K = serde_json::from_value(obj).unwrap();
    let (code, reason, message) =
        status_of(api.create(&PostParams::default(), &obj).await.unwrap_err());
    assert_eq!((code, reason.as_str()), (422, "Invalid"), "{message}");
    message
}

#[tokio::test]
async fn specs_are_validated_as_kube_does() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let levels: Api<PriorityLevelConfiguration> = Api::all(client.clone());
    let schemas: Api<FlowSchema> = Api::all(client.clone());

    let message = invalid(
        &levels,
        json!({"metadata": {"name": "bad"}, "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": -1, "lendablePercent": 101,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 10}}}}}),
    )
    .await;
    assert_eq!(
        message,
        "PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io \"bad\" is invalid: [\
         spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer, \
         spec.limited.limitResponse.queuing.handSize: Invalid value: 10: required entropy bits of deckSize 128 and handSize 10 should not be greater than 60, \
         spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive]"
    );
    let message = invalid(
        &levels,
        json!({"metadata": {"name": "bad"}, "spec": {"type": "Limited", "limited": {
            "limitResponse": {"type": "Reject", "queuing": {"queues": 2, "handSize": 3}}}}}),
    )
    .await;
    assert_eq!(
        message,
        "PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io \"bad\" is invalid: \
         spec.limited.limitResponse.queuing: Forbidden: must be nil if limited.limitResponse.type is not Limited"
    );
    let message = invalid(
        &levels,
        json!({"metadata": {"name": "bad"}, "spec": {"type": "Exempt"}}),
    )
    .await;
    assert_eq!(
        message,
        "PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io \"bad\" is invalid: \
         spec.type: Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is 'exempt'"
    );

    let message = invalid(
        &schemas,
        json!({"metadata": {"name": "bad"}, "spec": {
            "priorityLevelConfiguration": {"name": ""}, "matchingPrecedence": 1,
            "distinguisherMethod": {"type": "ByGroup"},
            "rules": [{"subjects": [{"kind": "ServiceAccount", "serviceAccount": {"name": "x"}}],
                       "resourceRules": [{"verbs": ["*", "get"], "apiGroups": ["*"],
                                          "resources": ["pods"]}]}]}}),
    )
    .await;
    assert_eq!(
        message,
        "FlowSchema.flowcontrol.apiserver.k8s.io \"bad\" is invalid: [\
         spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1, \
         spec.distinguisherMethod.type: Unsupported value: {\"Type\":\"ByGroup\"}: supported values: \"ByNamespace\", \"ByUser\", \
         spec.priorityLevelConfiguration.name: Required value: must reference a priority level, \
         spec.rules[0].subjects[0].serviceAccount.namespace: Required value: must specify namespace for service account, \
         spec.rules[0].resourceRules[0].verbs: Invalid value: [\"*\",\"get\"]: if '*' is present, must not specify other verbs, \
         spec.rules[0].resourceRules[0].namespaces: Required value: resource rules that are not cluster scoped must supply at least one namespace]"
    );

    // A /status write is checked for its conditions only.
    let (code, _, message) = status_of(
        schemas
            .patch_status(
                "global-default",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"conditions": [
                    {"type": "Dangling", "status": "False"}, {"type": "Dangling", "status": "True"}]}})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert_eq!(
        message,
        "FlowSchema.flowcontrol.apiserver.k8s.io \"global-default\" is invalid: \
         status.conditions[1].type: Duplicate value: \"Dangling\""
    );
}

#[tokio::test]
async fn a_new_logical_cluster_gets_the_configuration_at_once() {
    let (server, _) = common::server().await;
    server.ensure_cluster("tenant").await.unwrap();
    let client = kube::Client::new(server.service_for_cluster("tenant"), "default");
    let levels: Api<PriorityLevelConfiguration> = Api::all(client.clone());
    let schemas: Api<FlowSchema> = Api::all(client);
    assert_eq!(sorted_names(&levels).await.len(), 8);
    assert_eq!(sorted_names(&schemas).await.len(), 11);
    // Kept there too.
    delete_and_await_remade(&levels, "exempt").await;
}

#[tokio::test]
async fn many_logical_clusters_made_at_once_all_get_the_configuration() {
    // On SQLite, where every commit is an fsync: the writes of the clusters' passes must be
    // made durable together, not one commit after another.
    let dir = tempfile::tempdir().unwrap();
    let config = ocm_apiserver::ApiServerConfig {
        data_dir: Some(dir.path().to_path_buf()),
        ..Default::default()
    };
    let (server, _) = common::server_with(config).await;
    let names: Vec<String> = (0..50).map(|i| format!("tenant-{i}")).collect();
    let started = std::time::Instant::now();
    let made = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        futures::future::join_all(names.iter().map(|name| server.ensure_cluster(name))),
    )
    .await
    .expect("50 logical clusters made within a minute");
    for result in made {
        result.unwrap();
    }
    let made_in = started.elapsed();
    let waits = names.iter().map(|name| {
        let client = kube::Client::new(server.service_for_cluster(name), "default");
        let schemas: Api<FlowSchema> = Api::all(client);
        async move {
            until(
                &schemas,
                "catch-all",
                &format!("catch-all Dangling False in {name}"),
                |fs| dangling(fs).is_some_and(|d| d.0 == "False" && d.1 == "Found"),
            )
            .await
        }
    });
    futures::future::join_all(waits).await;
    eprintln!(
        "50 logical clusters made in {made_in:?}, all with catch-all not Dangling after {:?}",
        started.elapsed()
    );
}

/// The value of one `/metrics` sample (`name{labels}`), if the document has it.
fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let rest = line.strip_prefix(series)?;
        rest.trim().parse().ok()
    })
}

/// As Kubernetes' e2e "should ensure that requests can be classified by adding FlowSchema and
/// PriorityLevelConfiguration": a new priority level shows its nominal seats in `/metrics`
/// (kube's `ceil(600 × shares / Σ shares)`), and a request of the user its FlowSchema names
/// carries both objects' uids in `X-Kubernetes-PF-*` headers; another user's request lands in
/// a bootstrap schema and is counted as dispatched there.
#[tokio::test]
async fn requests_are_classified_by_the_flow_schemas() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let levels: Api<PriorityLevelConfiguration> = Api::all(client.clone());
    let schemas: Api<FlowSchema> = Api::all(client.clone());
    let level: PriorityLevelConfiguration = serde_json::from_value(json!({
        "metadata": {"name": "e2e-testing-prioritylevel"},
        "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1,
                                                "limitResponse": {"type": "Reject"}}}}))
    .unwrap();
    let level = levels.create(&PostParams::default(), &level).await.unwrap();
    let schema: FlowSchema = serde_json::from_value(json!({
        "metadata": {"name": "e2e-testing-flowschema"},
        "spec": {"matchingPrecedence": 1000,
                 "priorityLevelConfiguration": {"name": "e2e-testing-prioritylevel"},
                 "distinguisherMethod": {"type": "ByUser"},
                 "rules": [{"subjects": [{"kind": "User", "user": {"name": "noxu"}}],
                            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}}))
    .unwrap();
    let schema = schemas
        .create(&PostParams::default(), &schema)
        .await
        .unwrap();
    until(&schemas, "e2e-testing-flowschema", "Dangling False", |fs| {
        dangling(fs).is_some_and(|(status, _, _)| status == "False")
    })
    .await;
    let metrics = |client: kube::Client| async move {
        client
            .request_text(http::Request::get("/metrics").body(Vec::new()).unwrap())
            .await
            .unwrap()
    };
    let text = metrics(client.clone()).await;
    // Σ shares of kube's bootstrap levels is 245; with this level's 1, ceil(600 / 246) = 3.
    assert_eq!(
        sample(
            &text,
            "apiserver_flowcontrol_nominal_limit_seats{priority_level=\"e2e-testing-prioritylevel\"}"
        ),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "apiserver_flowcontrol_nominal_limit_seats{priority_level=\"workload-low\"}"
        ),
        Some(244.0)
    );

    let version_as = |user: &'static str| {
        let server = &server;
        async move {
            let client = server.client_as(user).await;
            let (code, headers, _) = common::send_raw(
                &client,
                http::Request::get("/version")
                    .body(kube::client::Body::empty())
                    .unwrap(),
            )
            .await;
            assert_eq!(code, 200);
            let header = |name: &str| {
                headers
                    .get(name)
                    .map(|v| v.to_str().unwrap().to_owned())
                    .unwrap_or_default()
            };
            (
                header("x-kubernetes-pf-flowschema-uid"),
                header("x-kubernetes-pf-prioritylevel-uid"),
            )
        }
    };
    assert_eq!(
        version_as("noxu").await,
        (
            schema.metadata.uid.clone().unwrap(),
            level.metadata.uid.clone().unwrap()
        )
    );
    let (fs_uid, pl_uid) = version_as("foo").await;
    assert!(!fs_uid.is_empty() && !pl_uid.is_empty());
    assert_ne!(fs_uid, schema.metadata.uid.unwrap());
    let text = metrics(client.clone()).await;
    assert!(
        sample(&text, "apiserver_flowcontrol_dispatched_requests_total{priority_level=\"e2e-testing-prioritylevel\",flow_schema=\"e2e-testing-flowschema\"}")
            .is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert!(text.contains("# TYPE apiserver_flowcontrol_current_executing_requests gauge"));
}
