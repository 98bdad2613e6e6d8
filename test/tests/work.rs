//! Work scenarios end to end: an embedded hub over real TLS, simulated managed clusters that
//! joined through real registration, work agents that reach the hub only with the
//! certificates registration gave them, and the workload simulator playing kubelet.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use ocm_api::work::v1::{AppliedManifestWork, ManifestWork};
use ocm_e2e::*;
use serde_json::{Value, json};

fn app_work(replicas: i64, with_config_map: bool) -> ManifestWork {
    let mut manifests = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "namespace": "shop"},
               "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": "runner", "namespace": "shop"},
               "automountServiceAccountToken": false}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "shop-reader"},
               "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
    ];
    if with_config_map {
        manifests.push(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "shop"},
            "data": {"greeting": "hello"}}));
    }
    serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": "app"},
        "spec": {
            "workload": {"manifests": manifests},
            "manifestConfigs": [
                {"resourceIdentifier": {"group": "apps", "resource": "deployments",
                                        "name": "web", "namespace": "shop"},
                 "feedbackRules": [
                    {"type": "WellKnownStatus"},
                    {"type": "JSONPaths", "jsonPaths": [
                        {"name": "specReplicas", "path": ".spec.replicas"},
                        {"name": "availableStatus",
                         "path": ".status.conditions[?(@.type==\"Available\")].status"},
                        {"name": "selector", "path": ".spec.selector"}]}],
                 "conditionRules": [
                    {"condition": "AllReplicasReady", "type": "CEL",
                     "celExpressions": ["object.status.readyReplicas == object.spec.replicas"],
                     "messageExpression": "result ? 'all ' + string(object.spec.replicas) + ' ready' : 'waiting'"}]},
                {"resourceIdentifier": {"resource": "serviceaccounts",
                                        "name": "runner", "namespace": "shop"},
                 "feedbackRules": [{"type": "JSONPaths", "jsonPaths": [
                    {"name": "automount", "path": ".automountServiceAccountToken"}]}]}
            ]
        }
    }))
    .unwrap()
}

/// Like `wait_for`, printing the work's status when it times out.
async fn wait_work(
    works: &Api<ManifestWork>,
    name: &str,
    what: &str,
    cond: impl Fn(&ManifestWork) -> bool,
) -> anyhow::Result<ManifestWork> {
    let result = wait_for(works, name, what, cond).await;
    if result.is_err() {
        let now = works.get(name).await;
        eprintln!(
            "work {name} now: {}",
            serde_json::to_string_pretty(&now.map(|w| w.status).ok()).unwrap_or_default()
        );
    }
    result
}

/// The feedback values of the manifest of `kind`, by name, as JSON `fieldValue`s.
fn feedback(work: &ManifestWork, kind: &str) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    for m in work
        .status
        .iter()
        .flat_map(|s| s.resource_status.iter())
        .flat_map(|r| r.manifests.iter())
    {
        if m.resource_meta.kind != kind {
            continue;
        }
        for v in m.status_feedback.iter().flat_map(|f| f.values.iter()) {
            out.insert(
                v.name.clone(),
                serde_json::to_value(&v.field_value).unwrap(),
            );
        }
    }
    out
}

fn condition(work: &ManifestWork, type_: &str) -> String {
    work.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
        .map(|c| c.status.clone())
        .unwrap_or_default()
}

async fn joined_hub(
    dir: &std::path::Path,
    names: &[&str],
) -> (
    ocm::embedded::EmbeddedHub,
    Vec<kube::Client>,
    Vec<RunningAgent>,
) {
    let hub = start_fast_hub(dir).await.unwrap();
    let bootstrap = bootstrap_kubeconfig(&hub).await.unwrap();
    let mut spokes = Vec::new();
    let mut agents = Vec::new();
    for name in names {
        let (spoke, agent) = join_and_accept(&hub, &bootstrap, name).await;
        spokes.push(spoke);
        agents.push(agent);
    }
    (hub, spokes, agents)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_work_reaches_its_cluster_reports_feedback_follows_changes_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, spokes, agents) = joined_hub(dir.path(), &["c1"]).await;
    let spoke = &spokes[0];
    let work_agent = RunningWorkAgent::start(spoke, "c1");
    let works: Api<ManifestWork> = Api::namespaced(hub.admin_client(), "c1");
    works
        .create(&PostParams::default(), &app_work(2, true))
        .await
        .unwrap();

    let work = wait_work(
        &works,
        "app",
        "Applied, Available, feedback 2/2, CEL rule true",
        |w: &ManifestWork| {
            condition(w, "Applied") == "True"
                && condition(w, "Available") == "True"
                && feedback(w, "Deployment").get("ReadyReplicas")
                    == Some(&json!({"type": "Integer", "integer": 2}))
                && manifest_condition(w, "Deployment", "web", "AllReplicasReady")
                    == ("True".to_owned(), "all 2 ready".to_owned())
        },
    )
    .await
    .unwrap();
    assert!(
        work.finalizers()
            .contains(&"cluster.open-cluster-management.io/manifest-work-cleanup".to_owned())
    );
    let deployment_feedback = feedback(&work, "Deployment");
    assert_eq!(
        deployment_feedback["Replicas"],
        json!({"type": "Integer", "integer": 2})
    );
    assert_eq!(
        deployment_feedback["AvailableReplicas"],
        json!({"type": "Integer", "integer": 2})
    );
    assert_eq!(
        deployment_feedback["specReplicas"],
        json!({"type": "Integer", "integer": 2})
    );
    assert_eq!(
        deployment_feedback["availableStatus"],
        json!({"type": "String", "string": "True"})
    );
    assert_eq!(deployment_feedback["selector"]["type"], "JsonRaw");
    assert_eq!(
        feedback(&work, "ServiceAccount")["automount"],
        json!({"type": "Boolean", "boolean": false})
    );
    let manifests = &work
        .status
        .as_ref()
        .unwrap()
        .resource_status
        .as_ref()
        .unwrap()
        .manifests;
    assert_eq!(manifests.len(), 5);
    let deployment_meta = &manifests
        .iter()
        .find(|m| m.resource_meta.kind == "Deployment")
        .unwrap()
        .resource_meta;
    assert_eq!(
        (
            deployment_meta.ordinal,
            deployment_meta.group.as_str(),
            deployment_meta.resource.as_str()
        ),
        (1, "apps", "deployments")
    );

    // On the managed cluster: the objects, owned by the AppliedManifestWork.
    let deployments: Api<Deployment> = Api::namespaced(spoke.clone(), "shop");
    let web = deployments.get("web").await.unwrap();
    let owner = &web.owner_references()[0];
    assert_eq!(owner.kind, "AppliedManifestWork");
    assert!(
        owner.name.ends_with("-app") && owner.name.len() == 64 + 4,
        "{}",
        owner.name
    );
    let applied: Api<AppliedManifestWork> = Api::all(spoke.clone());
    let amw = applied.get(&owner.name).await.unwrap();
    assert_eq!(amw.status.as_ref().unwrap().applied_resources.len(), 5);
    Api::<ClusterRole>::all(spoke.clone())
        .get("shop-reader")
        .await
        .unwrap();

    // An update reaches the cluster and comes back as feedback.
    works
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"workload": app_work(3, true).spec.workload}})),
        )
        .await
        .unwrap();
    wait_for(&works, "app", "feedback 3/3", |w: &ManifestWork| {
        feedback(w, "Deployment").get("ReadyReplicas")
            == Some(&json!({"type": "Integer", "integer": 3}))
    })
    .await
    .unwrap();
    assert_eq!(
        deployments.get("web").await.unwrap().spec.unwrap().replicas,
        Some(3)
    );

    // Drift: a deleted object and an edited one come back.
    let config_maps: Api<ConfigMap> = Api::namespaced(spoke.clone(), "shop");
    deployments
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    config_maps
        .patch(
            "settings",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"greeting": "changed by hand"}})),
        )
        .await
        .unwrap();
    wait_for(
        &config_maps,
        "settings",
        "greeting put back",
        |c: &ConfigMap| {
            c.data
                .as_ref()
                .and_then(|d| d.get("greeting"))
                .map(String::as_str)
                == Some("hello")
        },
    )
    .await
    .unwrap();
    wait_for(&deployments, "web", "deployment re-created", |_| true)
        .await
        .unwrap();

    // Removing a manifest deletes only that object.
    works
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"workload": app_work(3, false).spec.workload}})),
        )
        .await
        .unwrap();
    wait_gone(&config_maps, "settings").await.unwrap();
    deployments.get("web").await.unwrap();

    // Deleting the work removes everything it applied, then the work itself.
    works.delete("app", &DeleteParams::default()).await.unwrap();
    wait_gone(&works, "app").await.unwrap();
    wait_gone(&Api::<ClusterRole>::all(spoke.clone()), "shop-reader")
        .await
        .unwrap();
    wait_gone(
        &Api::<ServiceAccount>::namespaced(spoke.clone(), "shop"),
        "runner",
    )
    .await
    .unwrap();
    wait_gone(&applied, &owner.name).await.unwrap();

    work_agent.stop().await;
    for agent in agents {
        agent.stop().await.unwrap();
    }
    hub.stop().await;
}

fn work_of(name: &str, manifests: Value, extra_spec: Value) -> ManifestWork {
    let mut spec = json!({"workload": {"manifests": manifests}});
    json_patch::merge(&mut spec, &extra_spec);
    serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": name}, "spec": spec
    }))
    .unwrap()
}

fn config_map(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "default"}, "data": {"key": value}})
}

/// Creates work `name` (see [`work_of`]).
async fn create_work(works: &Api<ManifestWork>, name: &str, manifests: Value, extra_spec: Value) {
    works
        .create(
            &PostParams::default(),
            &work_of(name, manifests, extra_spec),
        )
        .await
        .unwrap();
}

/// Replaces the manifests of work `name`.
async fn set_manifests(works: &Api<ManifestWork>, name: &str, manifests: Value) {
    works
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"workload": {"manifests": manifests}}})),
        )
        .await
        .unwrap();
}

/// Waits until work `name` reports `Applied` for `generation`.
async fn wait_applied_generation(works: &Api<ManifestWork>, name: &str, generation: i64) {
    wait_work(
        works,
        name,
        &format!("generation {generation} applied"),
        move |w: &ManifestWork| {
            w.status.as_ref().is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.type_ == "Applied" && c.observed_generation == Some(generation))
            })
        },
    )
    .await
    .unwrap();
}

fn manifest_condition(
    work: &ManifestWork,
    kind: &str,
    name: &str,
    type_: &str,
) -> (String, String) {
    work.status
        .iter()
        .flat_map(|s| s.resource_status.iter())
        .flat_map(|r| r.manifests.iter())
        .filter(|m| m.resource_meta.kind == kind && m.resource_meta.name == name)
        .flat_map(|m| m.conditions.iter())
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.message.clone()))
        .unwrap_or_default()
}

async fn applied_and_available(works: &Api<ManifestWork>, name: &str) -> ManifestWork {
    wait_work(works, name, "Applied and Available", |w: &ManifestWork| {
        condition(w, "Applied") == "True" && condition(w, "Available") == "True"
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_strategies_crds_shared_objects_and_orphaning() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, spokes, agents) = joined_hub(dir.path(), &["c1"]).await;
    let spoke = &spokes[0];
    let work_agent = RunningWorkAgent::start(spoke, "c1");
    let works: Api<ManifestWork> = Api::namespaced(hub.admin_client(), "c1");
    let config_maps: Api<ConfigMap> = Api::namespaced(spoke.clone(), "default");
    let data = |c: &ConfigMap| {
        c.data
            .clone()
            .unwrap_or_default()
            .get("key")
            .cloned()
            .unwrap_or_default()
    };

    // A CRD and a custom resource of it in one work.
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                   "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default"}, "spec": {"size": 3}});
    create_work(&works, "crd", json!([widget, crd]), json!({})).await;
    applied_and_available(&works, "crd").await;

    // CreateOnly: created once, never changed; ReadOnly: never written, feedback reported.
    let strategies = json!({"manifestConfigs": [
        {"resourceIdentifier": {"resource": "configmaps", "name": "create-only", "namespace": "default"},
         "updateStrategy": {"type": "CreateOnly"}},
        {"resourceIdentifier": {"resource": "configmaps", "name": "read-only", "namespace": "default"},
         "updateStrategy": {"type": "ReadOnly"},
         "feedbackRules": [{"type": "JSONPaths", "jsonPaths": [{"name": "key", "path": ".data.key"}]}]}
    ]});
    config_maps
        .create(
            &PostParams::default(),
            &serde_json::from_value(config_map("read-only", "theirs")).unwrap(),
        )
        .await
        .unwrap();
    create_work(
        &works,
        "strategies",
        json!([
            config_map("create-only", "first"),
            config_map("read-only", "ours")
        ]),
        strategies.clone(),
    )
    .await;
    let w = wait_work(
        &works,
        "strategies",
        "read-only feedback",
        |w: &ManifestWork| {
            feedback(w, "ConfigMap").get("key")
                == Some(&json!({"type": "String", "string": "theirs"}))
        },
    )
    .await
    .unwrap();
    assert_eq!(condition(&w, "Applied"), "True");
    set_manifests(
        &works,
        "strategies",
        json!([
            config_map("create-only", "second"),
            config_map("read-only", "ours")
        ]),
    )
    .await;
    wait_applied_generation(&works, "strategies", 2).await;
    assert_eq!(
        data(&config_maps.get("create-only").await.unwrap()),
        "first"
    );
    assert_eq!(data(&config_maps.get("read-only").await.unwrap()), "theirs");

    // ServerSideApply: a field another manager owns conflicts until `force`.
    let apply = PatchParams::apply("someone-else");
    config_maps
        .patch("ssa", &apply, &Patch::Apply(config_map("ssa", "theirs")))
        .await
        .unwrap();
    let ssa = |force: bool| {
        json!({"manifestConfigs": [{"resourceIdentifier": {"resource": "configmaps", "name": "ssa", "namespace": "default"},
        "updateStrategy": {"type": "ServerSideApply", "serverSideApply": {"force": force, "fieldManager": "work-agent"}}}]})
    };
    create_work(
        &works,
        "ssa",
        json!([config_map("ssa", "ours")]),
        ssa(false),
    )
    .await;
    let w = wait_work(&works, "ssa", "conflict reported", |w: &ManifestWork| {
        manifest_condition(w, "ConfigMap", "ssa", "Applied").0 == "False"
    })
    .await
    .unwrap();
    let message = manifest_condition(&w, "ConfigMap", "ssa", "Applied").1;
    assert!(message.contains("conflict"), "{message}");
    assert_eq!(condition(&w, "Applied"), "False");
    works
        .patch(
            "ssa",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": ssa(true)})),
        )
        .await
        .unwrap();
    wait_for(&config_maps, "ssa", "forced", move |c: &ConfigMap| {
        data(c) == "ours"
    })
    .await
    .unwrap();

    // A field removed from a manifest leaves the object on the cluster (Update and SSA).
    let trimmed = |with_extra: bool| {
        let mut manifests = Vec::new();
        for name in ["trim-update", "trim-ssa"] {
            let mut cm = config_map(name, "kept");
            if with_extra {
                cm["data"]["extra"] = json!("dropped later");
            }
            manifests.push(cm);
        }
        json!(manifests)
    };
    let trim_ssa = json!({"manifestConfigs": [{"resourceIdentifier": {"resource": "configmaps", "name": "trim-ssa", "namespace": "default"},
        "updateStrategy": {"type": "ServerSideApply"}}]});
    create_work(&works, "trim", trimmed(true), trim_ssa).await;
    applied_and_available(&works, "trim").await;
    set_manifests(&works, "trim", trimmed(false)).await;
    for name in ["trim-update", "trim-ssa"] {
        wait_for(&config_maps, name, "extra removed", |c: &ConfigMap| {
            let data = c.data.clone().unwrap_or_default();
            data.get("key").map(String::as_str) == Some("kept") && !data.contains_key("extra")
        })
        .await
        .unwrap();
    }

    // ignoreFields: an OnSpokePresent field is set at creation only; an OnSpokeChange field
    // edited on the cluster stays until its manifest changes.
    let ignoring = |other: &str, k: &str| {
        let mut present = config_map("ign-present", "x");
        present["data"] = json!({"replicas": "3", "other": other});
        let mut change = config_map("ign-change", "x");
        change["data"] = json!({"k": k});
        json!([present, change])
    };
    let ignore_configs = json!({"manifestConfigs": [
        {"resourceIdentifier": {"resource": "configmaps", "name": "ign-present", "namespace": "default"},
         "updateStrategy": {"type": "ServerSideApply", "serverSideApply": {
             "ignoreFields": [{"condition": "OnSpokePresent", "jsonPaths": [".data.replicas"]}]}}},
        {"resourceIdentifier": {"resource": "configmaps", "name": "ign-change", "namespace": "default"},
         "updateStrategy": {"type": "ServerSideApply", "serverSideApply": {"force": true,
             "ignoreFields": [{"condition": "OnSpokeChange", "jsonPaths": [".data.k"]}]}}}]});
    create_work(&works, "ignore", ignoring("a", "v"), ignore_configs).await;
    applied_and_available(&works, "ignore").await;
    let value = |c: &ConfigMap, key: &str| {
        c.data
            .clone()
            .unwrap_or_default()
            .get(key)
            .cloned()
            .unwrap_or_default()
    };
    let present = config_maps.get("ign-present").await.unwrap();
    assert_eq!(value(&present, "replicas"), "3");
    assert!(
        present
            .annotations()
            .contains_key("open-cluster-management.io/config-spec-hash")
    );
    for (name, key, edited) in [
        ("ign-present", "replicas", "7"),
        ("ign-change", "k", "edited"),
    ] {
        config_maps
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {key: edited}})),
            )
            .await
            .unwrap();
    }
    set_manifests(&works, "ignore", ignoring("b", "v")).await;
    wait_applied_generation(&works, "ignore", 2).await;
    let present = config_maps.get("ign-present").await.unwrap();
    assert_eq!(
        (value(&present, "other"), value(&present, "replicas")),
        ("b".to_owned(), "7".to_owned())
    );
    assert_eq!(
        value(&config_maps.get("ign-change").await.unwrap(), "k"),
        "edited"
    );
    set_manifests(&works, "ignore", ignoring("b", "v2")).await;
    wait_for(
        &config_maps,
        "ign-change",
        "k from the new manifest",
        move |c: &ConfigMap| value(c, "k") == "v2",
    )
    .await
    .unwrap();
    // A malformed pointer fails the manifest with upstream's reason.
    create_work(&works, "ignore-bad",
                json!([config_map("ign-bad", "x")]),
                json!({"manifestConfigs": [{"resourceIdentifier": {"resource": "configmaps", "name": "ign-bad", "namespace": "default"},
                    "updateStrategy": {"type": "ServerSideApply", "serverSideApply": {
                        "ignoreFields": [{"condition": "OnSpokePresent", "jsonPointers": ["data/key"]}]}}}]})).await;
    let bad = wait_work(
        &works,
        "ignore-bad",
        "ignore field error",
        |w: &ManifestWork| manifest_condition(w, "ConfigMap", "ign-bad", "Applied").0 == "False",
    )
    .await
    .unwrap();
    let reason = bad
        .status
        .iter()
        .flat_map(|s| s.resource_status.iter())
        .flat_map(|r| r.manifests.iter())
        .flat_map(|m| m.conditions.iter())
        .find(|c| c.type_ == "Applied")
        .map(|c| (c.reason.clone(), c.message.clone()))
        .unwrap();
    assert_eq!(reason.0, "AppliedManifestSSAIgnoreFieldError");
    assert!(
        reason.1.starts_with("JSON Pointer error in 'data/key'"),
        "{}",
        reason.1
    );

    // A manifest a condition rule reports Complete is not applied again.
    let complete_rule = json!({"manifestConfigs": [{"resourceIdentifier": {"resource": "configmaps", "name": "done", "namespace": "default"},
        "conditionRules": [{"condition": "Complete", "type": "CEL", "celExpressions": ["true"]}]}]});
    create_work(
        &works,
        "done",
        json!([config_map("done", "first")]),
        complete_rule,
    )
    .await;
    wait_work(&works, "done", "Complete", |w: &ManifestWork| {
        condition(w, "Complete") == "True"
    })
    .await
    .unwrap();
    set_manifests(&works, "done", json!([config_map("done", "second")])).await;
    wait_applied_generation(&works, "done", 2).await;
    assert_eq!(data(&config_maps.get("done").await.unwrap()), "first");

    // A shared object survives deleting one of its works; Orphan and SelectivelyOrphan keep theirs.
    for name in ["share-a", "share-b"] {
        works
            .create(
                &PostParams::default(),
                &work_of(name, json!([config_map("shared", "same")]), json!({})),
            )
            .await
            .unwrap();
        applied_and_available(&works, name).await;
    }
    wait_for(
        &config_maps,
        "shared",
        "owned by both works",
        |c: &ConfigMap| c.owner_references().len() == 2,
    )
    .await
    .unwrap();
    works
        .delete("share-a", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&works, "share-a").await.unwrap();
    let shared = config_maps.get("shared").await.unwrap();
    assert_eq!(shared.owner_references().len(), 1);
    create_work(&works, "orphans", json!([config_map("kept", "x"), config_map("removed", "y")]), json!({"deleteOption": {
                "propagationPolicy": "SelectivelyOrphan",
                "selectivelyOrphans": {"orphaningRules": [{"group": "", "resource": "configmaps", "namespace": "default", "name": "kept"}]}}})).await;
    applied_and_available(&works, "orphans").await;
    assert!(
        config_maps
            .get("kept")
            .await
            .unwrap()
            .owner_references()
            .is_empty(),
        "orphaned objects are not owned"
    );
    works
        .delete("orphans", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&works, "orphans").await.unwrap();
    wait_gone(&config_maps, "removed").await.unwrap();
    config_maps.get("kept").await.unwrap();

    // Orphan: deleting the work leaves every object, without our owner reference.
    create_work(
        &works,
        "orphan-all",
        json!([config_map("left-behind", "z")]),
        json!({"deleteOption": {"propagationPolicy": "Orphan"}}),
    )
    .await;
    applied_and_available(&works, "orphan-all").await;
    works
        .delete("orphan-all", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&works, "orphan-all").await.unwrap();
    assert!(
        config_maps
            .get("left-behind")
            .await
            .unwrap()
            .owner_references()
            .is_empty()
    );

    work_agent.stop().await;
    for agent in agents {
        agent.stop().await.unwrap();
    }
    hub.stop().await;
}

/// A work that applies a CRD and a custom resource of it (as upstream's e2e does: two served
/// versions, the resource moved from v1 to v2, a ClusterRole aggregated to `admin` granting
/// it) finishes deleting. The agent runs with upstream's klusterlet work permissions (`admin`
/// plus what it needs besides), so once the aggregated role is gone a read of the custom
/// resource is Forbidden rather than NotFound; its type is no longer served once the CRD is
/// gone, and then it counts as gone, so the AppliedManifestWork and then the ManifestWork lose
/// their finalizers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_work_with_a_crd_and_its_resources_finishes_deleting() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, spokes, agents) = joined_hub(dir.path(), &["c1"]).await;
    let spoke = &spokes[0];
    let agent_sa = ("open-cluster-management-agent", "klusterlet-work-sa");
    Api::<ClusterRole>::all(spoke.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "work-agent"},
                "rules": [{"apiGroups": ["", "apps", "rbac.authorization.k8s.io",
                                         "apiextensions.k8s.io", "work.open-cluster-management.io",
                                         "authorization.k8s.io", "coordination.k8s.io",
                                         "events.k8s.io"],
                           "resources": ["*"], "verbs": ["*"]}]}))
            .unwrap(),
        )
        .await
        .unwrap();
    let bindings: Api<k8s_openapi::api::rbac::v1::ClusterRoleBinding> = Api::all(spoke.clone());
    for role in ["work-agent", "admin"] {
        bindings
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": format!("work-agent-{role}")},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                "name": role},
                    "subjects": [{"kind": "ServiceAccount", "namespace": agent_sa.0,
                                  "name": agent_sa.1}]}))
                .unwrap(),
            )
            .await
            .unwrap();
    }
    let agent_identity = ocm_apiserver::Identity {
        user: format!("system:serviceaccount:{}:{}", agent_sa.0, agent_sa.1),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{}", agent_sa.0),
            "system:authenticated".into(),
        ],
        ..Default::default()
    };
    let agent_client = kube::Client::new(
        hub.server
            .service_for_cluster(&ocm::simulated::logical_cluster_name("c1"))
            .with_identity(agent_identity),
        "default",
    );
    let work_agent = RunningWorkAgent::start(&agent_client, "c1");
    let works: Api<ManifestWork> = Api::namespaced(hub.admin_client(), "c1");
    Api::<k8s_openapi::api::core::v1::Namespace>::all(spoke.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "books"}})).unwrap(),
        )
        .await
        .unwrap();
    let version = |name: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage,
               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                   "spec": {"type": "object", "properties": {"foo": {"type": "string"}}},
                   "status": {"type": "object"}}}}})
    };
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "guestbooks.my.domain"},
        "spec": {"group": "my.domain", "scope": "Namespaced", "conversion": {"strategy": "None"},
                 "names": {"plural": "guestbooks", "singular": "guestbook", "kind": "Guestbook",
                           "listKind": "GuestbookList"},
                 "versions": [version("v1", false), version("v2", true)]}});
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "guestbook-editor",
                     "labels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}},
        "rules": [{"apiGroups": ["my.domain"], "resources": ["guestbooks"], "verbs": ["*"]}]});
    let book = |api_version: &str, foo: &str| {
        json!({"apiVersion": api_version, "kind": "Guestbook",
               "metadata": {"name": "cr1", "namespace": "books"}, "spec": {"foo": foo}})
    };
    create_work(
        &works,
        "books",
        json!([crd.clone(), role.clone(), book("my.domain/v1", "bar")]),
        json!({}),
    )
    .await;
    applied_and_available(&works, "books").await;
    set_manifests(
        &works,
        "books",
        json!([crd, role, book("my.domain/v2", "foo")]),
    )
    .await;
    wait_applied_generation(&works, "books", 2).await;

    works
        .delete("books", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&works, "books").await.unwrap();
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(spoke.clone());
    wait_gone(&crds, "guestbooks.my.domain").await.unwrap();
    let applied: Api<AppliedManifestWork> = Api::all(spoke.clone());
    assert!(
        applied
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .all(|a| a.spec.manifest_work_name != "books")
    );

    work_agent.stop().await;
    for agent in agents {
        agent.stop().await.unwrap();
    }
    hub.stop().await;
}

/// With the hub work gate `CleanUpCompletedManifestWork`, a work with
/// `ttlSecondsAfterFinished` whose condition rule says its Job completed is deleted by the hub
/// after the TTL, and the Job (and its pods, which the simulator made) go with it; a work
/// without TTL stays. As upstream's e2e "Should cleanup manifestwork with TTL after job
/// completion".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_work_with_a_ttl_is_deleted_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let hub = ocm::embedded::EmbeddedHub::start(ocm::embedded::EmbeddedHubOptions {
        listen: ([127, 0, 0, 1], 0).into(),
        hub: fast_hub_options(),
        work_gates: ocm_work::gates::HubWorkGates {
            clean_up_completed_manifest_work: true,
            ..Default::default()
        },
        ..ocm::embedded::EmbeddedHubOptions::new(dir.path())
    })
    .await
    .unwrap();
    let bootstrap = bootstrap_kubeconfig(&hub).await.unwrap();
    let (spoke, agent) = join_and_accept(&hub, &bootstrap, "c1").await;
    let work_agent = RunningWorkAgent::start(&spoke, "c1");
    let works: Api<ManifestWork> = Api::namespaced(hub.admin_client(), "c1");
    let job = |name: &str| {
        json!({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": name, "namespace": "default"},
               "spec": {"manualSelector": true, "selector": {"matchLabels": {"job": name}},
                        "template": {"metadata": {"labels": {"job": name}},
                                     "spec": {"restartPolicy": "Never",
                                              "containers": [{"name": "c", "image": "busybox",
                                                              "command": ["sleep", "1"]}]}}}})
    };
    let complete_rule = |name: &str| {
        json!({"resourceIdentifier": {"group": "batch", "resource": "jobs", "name": name,
                                      "namespace": "default"},
               "conditionRules": [{"condition": "Complete", "type": "CEL",
                   "celExpressions": ["object.status.conditions.exists(c, c.type == 'Complete' && c.status == 'True')"],
                   "message": "Job completed successfully"}]})
    };
    create_work(
        &works,
        "once",
        json!([job("once")]),
        json!({"deleteOption": {"propagationPolicy": "Foreground", "ttlSecondsAfterFinished": 1},
               "manifestConfigs": [complete_rule("once")]}),
    )
    .await;
    create_work(
        &works,
        "kept",
        json!([job("kept")]),
        json!({"manifestConfigs": [complete_rule("kept")]}),
    )
    .await;
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(spoke.clone(), "default");
    let kept = wait_work(&works, "kept", "Complete", |w: &ManifestWork| {
        condition(w, "Complete") == "True"
    })
    .await
    .unwrap();
    assert!(kept.metadata.deletion_timestamp.is_none());
    wait_gone(&works, "once").await.unwrap();
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = Api::namespaced(spoke.clone(), "default");
    wait_gone(&jobs, "once").await.unwrap();
    let kept_pods = pods
        .list(&kube::api::ListParams::default().labels("job=kept"))
        .await
        .unwrap()
        .items;
    assert_eq!(kept_pods.len(), 1);
    assert_eq!(
        kept_pods[0]
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref()),
        Some("Succeeded")
    );
    assert!(works.get_opt("kept").await.unwrap().is_some());

    work_agent.stop().await;
    agent.stop().await.unwrap();
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_manifests_executors_restarts_and_an_absent_hub() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, spokes, agents) = joined_hub(dir.path(), &["c1"]).await;
    let spoke = &spokes[0];
    let work_agent = RunningWorkAgent::start(spoke, "c1");
    let works: Api<ManifestWork> = Api::namespaced(hub.admin_client(), "c1");
    let config_maps: Api<ConfigMap> = Api::namespaced(spoke.clone(), "default");

    // The hub refuses empty, oversized and duplicate works with a message naming the problem.
    let refused = |w: ManifestWork| {
        let works = works.clone();
        async move {
            match works.create(&PostParams::default(), &w).await.unwrap_err() {
                kube::Error::Api(s) => (s.code, s.message),
                other => panic!("{other}"),
            }
        }
    };
    assert_eq!(
        refused(work_of("empty", json!([]), json!({}))).await,
        (400, "manifests should not be empty".to_owned())
    );
    let big = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "namespace": "default"},
                     "data": {"x": "y".repeat(520_000)}});
    let (code, message) = refused(work_of("big", json!([big]), json!({}))).await;
    assert_eq!(code, 400);
    assert!(message.contains("exceeds the 512000 limit"), "{message}");
    let (_, message) = refused(work_of(
        "dup",
        json!([config_map("a", "1"), config_map("a", "2")]),
        json!({}),
    ))
    .await;
    assert!(message.starts_with("duplicate manifest"), "{message}");

    // One manifest the cluster cannot apply does not stop the others.
    let unknown = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g", "namespace": "default"}});
    create_work(
        &works,
        "mixed",
        json!([config_map("good", "1"), unknown]),
        json!({}),
    )
    .await;
    let w = wait_work(
        &works,
        "mixed",
        "one failed, one applied",
        |w: &ManifestWork| {
            manifest_condition(w, "Gadget", "g", "Applied").0 == "False"
                && manifest_condition(w, "ConfigMap", "good", "Applied").0 == "True"
        },
    )
    .await
    .unwrap();
    assert!(
        manifest_condition(&w, "Gadget", "g", "Applied")
            .1
            .contains("Gadget")
    );
    assert_eq!(condition(&w, "Applied"), "False");
    config_maps.get("good").await.unwrap();

    // An executor without permission: a clear condition, nothing written.
    let executor = json!({"executor": {"subject": {"type": "ServiceAccount",
        "serviceAccount": {"namespace": "default", "name": "deployer"}}}});
    create_work(
        &works,
        "as-deployer",
        json!([config_map("by-deployer", "1")]),
        executor,
    )
    .await;
    let w = wait_work(&works, "as-deployer", "denied", |w: &ManifestWork| {
        manifest_condition(w, "ConfigMap", "by-deployer", "Applied").0 == "False"
    })
    .await
    .unwrap();
    let message = manifest_condition(&w, "ConfigMap", "by-deployer", "Applied").1;
    assert!(
        message.contains("default/deployer") && message.contains("create"),
        "{message}"
    );
    assert!(config_maps.get_opt("by-deployer").await.unwrap().is_none());

    // A restarted agent finds everything right and writes nothing.
    work_agent.stop().await;
    let agent = ocm_work::agent::WorkAgent::new(
        spoke.clone(),
        ocm_work::agent::WorkAgentOptions {
            cluster_name: "c1".into(),
            status_sync_interval: Duration::from_millis(500),
            ..Default::default()
        },
    );
    let mut stats = agent.stats();
    let shutdown = ocm_runtime::shutdown::Shutdown::new();
    let task = tokio::spawn(agent.run(shutdown.clone()));
    let settled = *tokio::time::timeout(WAIT, stats.wait_for(|s| s.passes >= 6))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        settled.writes, 0,
        "restart wrote to the cluster: {settled:?}"
    );

    // The hub goes away: the agent keeps the cluster as it is, and repairs drift meanwhile.
    let listen = hub
        .url
        .trim_start_matches("https://")
        .parse::<std::net::SocketAddr>()
        .unwrap();
    hub.stop().await;
    config_maps
        .delete("good", &DeleteParams::default())
        .await
        .unwrap();
    wait_for(&config_maps, "good", "re-created without the hub", |_| true)
        .await
        .unwrap();
    // Meanwhile the hub admin changes the work (the hub runs elsewhere, unseen by the agent).
    let elsewhere = ocm::embedded::EmbeddedHub::start(ocm::embedded::EmbeddedHubOptions {
        listen: ([127, 0, 0, 1], 0).into(),
        ..ocm::embedded::EmbeddedHubOptions::new(dir.path())
    })
    .await
    .unwrap();
    Api::<ManifestWork>::namespaced(elsewhere.admin_client(), "c1")
        .patch(
            "mixed",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"workload": {"manifests": [config_map("good", "changed")]}}}),
            ),
        )
        .await
        .unwrap();
    elsewhere.stop().await;
    // The hub returns at its address: the agent catches up.
    let back = ocm::embedded::EmbeddedHub::start(ocm::embedded::EmbeddedHubOptions {
        listen,
        ..ocm::embedded::EmbeddedHubOptions::new(dir.path())
    })
    .await
    .unwrap();
    wait_for(
        &config_maps,
        "good",
        "changed after the hub returned",
        |c: &ConfigMap| {
            c.data
                .as_ref()
                .and_then(|d| d.get("key"))
                .map(String::as_str)
                == Some("changed")
        },
    )
    .await
    .unwrap();

    shutdown.cancel();
    let _ = tokio::time::timeout(WAIT, task).await;
    for agent in agents {
        let _ = agent.stop().await;
    }
    back.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_applied_work_whose_work_vanished_is_evicted_after_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, spokes, agents) = joined_hub(dir.path(), &["c1"]).await;
    let spoke = &spokes[0];
    let works: Api<ManifestWork> = Api::namespaced(hub.admin_client(), "c1");
    let config_maps: Api<ConfigMap> = Api::namespaced(spoke.clone(), "default");
    let work_agent = RunningWorkAgent::start(spoke, "c1");
    create_work(
        &works,
        "evict",
        json!([config_map("evicted", "x")]),
        json!({}),
    )
    .await;
    applied_and_available(&works, "evict").await;
    let owner = config_maps.get("evicted").await.unwrap().owner_references()[0]
        .name
        .clone();

    // The record names the registration agent's id (kept in the hub kubeconfig secret, the
    // same on every hub); one recorded under another id (an earlier default) takes it again.
    let applied: Api<AppliedManifestWork> = Api::all(spoke.clone());
    let secret = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(
        spoke.clone(),
        "open-cluster-management-agent",
    )
    .get("hub-kubeconfig-secret")
    .await
    .unwrap();
    let agent_name = String::from_utf8(secret.data.unwrap()["agent-name"].0.clone()).unwrap();
    assert_eq!(applied.get(&owner).await.unwrap().spec.agent_id, agent_name);
    applied
        .patch(
            &owner,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"agentID": "older-id"}})),
        )
        .await
        .unwrap();
    wait_for(&applied, &owner, "the agent's id again", |a| {
        a.spec.agent_id == agent_name
    })
    .await
    .unwrap();

    // The work disappears from the hub while the agent is away (its finalizer removed by
    // force), so the agent never sees it being deleted.
    work_agent.stop().await;
    works
        .patch(
            "evict",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    works
        .delete("evict", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&works, "evict").await.unwrap();

    // Back, the agent marks the AppliedManifestWork for eviction, and after the grace (2 s
    // here) deletes it together with what it applied.
    let work_agent = RunningWorkAgent::start(spoke, "c1");
    wait_for(
        &applied,
        &owner,
        "eviction started",
        |a: &AppliedManifestWork| {
            a.status
                .as_ref()
                .is_some_and(|s| s.eviction_start_time.is_some())
        },
    )
    .await
    .unwrap();
    wait_gone(&applied, &owner).await.unwrap();
    wait_gone(&config_maps, "evicted").await.unwrap();

    work_agent.stop().await;
    for agent in agents {
        agent.stop().await.unwrap();
    }
    hub.stop().await;
}

/// `apiserver_request_total` of the hub for a verb and resource over namespaced requests (an
/// agent's: hub controllers list and watch across namespaces), whatever the code.
async fn namespaced_requests(hub: &ocm::embedded::EmbeddedHub, verb: &str, resource: &str) -> u64 {
    let metrics = hub
        .admin_client()
        .request_text(http::Request::get("/metrics").body(Vec::new()).unwrap())
        .await
        .unwrap();
    ocm_apiserver::metrics::sum_requests(&metrics, |c| {
        c.label("verb") == verb
            && c.label("resource") == resource
            && c.label("scope") == "namespace"
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_hub_resumes_the_agents_watches_without_a_relist() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, spokes, agents) = joined_hub(dir.path(), &["c1"]).await;
    let spoke = &spokes[0];
    let work_agent = RunningWorkAgent::start(spoke, "c1");
    let works: Api<ManifestWork> = Api::namespaced(hub.admin_client(), "c1");
    create_work(
        &works,
        "before",
        json!([config_map("before", "1")]),
        json!({}),
    )
    .await;
    wait_applied_generation(&works, "before", 1).await;

    let listen = hub
        .url
        .trim_start_matches("https://")
        .parse::<std::net::SocketAddr>()
        .unwrap();
    hub.stop().await;
    let hub = ocm::embedded::EmbeddedHub::start(ocm::embedded::EmbeddedHubOptions {
        listen,
        hub: fast_hub_options(),
        ..ocm::embedded::EmbeddedHubOptions::new(dir.path())
    })
    .await
    .unwrap();
    let restarted = std::time::Instant::now();
    let works: Api<ManifestWork> = Api::namespaced(hub.admin_client(), "c1");
    create_work(
        &works,
        "after",
        json!([config_map("after", "1")]),
        json!({}),
    )
    .await;
    wait_applied_generation(&works, "after", 1).await;
    eprintln!(
        "a work created right after the hub restart applied in {:?}",
        restarted.elapsed()
    );
    let config_maps: Api<ConfigMap> = Api::namespaced(spoke.clone(), "default");
    wait_for(&config_maps, "after", "on the cluster", |_| true)
        .await
        .unwrap();
    // The work agent resumed its watch at the revision it had seen; it did not list again.
    assert!(namespaced_requests(&hub, "WATCH", "manifestworks").await >= 1);
    assert_eq!(
        namespaced_requests(&hub, "LIST", "manifestworks").await,
        0,
        "the work agent relisted its works after the hub restart"
    );

    work_agent.stop().await;
    for agent in agents {
        let _ = agent.stop().await;
    }
    hub.stop().await;
}

/// A work carrying the kinds applications ship beside their Deployments — storage, a
/// disruption budget, ingress, network policy, an autoscaler, a device claim — is applied
/// on a simulated cluster, and the objects there carry kube's defaults.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_work_carrying_the_kinds_apps_ship_is_applied() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, spokes, agents) = joined_hub(dir.path(), &["c1"]).await;
    let spoke = &spokes[0];
    let work_agent = RunningWorkAgent::start(spoke, "c1");
    let works: Api<ManifestWork> = Api::namespaced(hub.admin_client(), "c1");
    let ns = |kind: &str, api: &str, name: &str, rest: Value| {
        let mut obj = json!({"apiVersion": api, "kind": kind,
                             "metadata": {"name": name, "namespace": "shop"}});
        json_patch::merge(&mut obj, &rest);
        obj
    };
    let manifests = json!([
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "shop-ssd"},
         "provisioner": "disk.example.com"},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "shop-disk"},
         "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"],
                  "storageClassName": "shop-ssd", "hostPath": {"path": "/srv/shop"}}},
        ns("PersistentVolumeClaim", "v1", "data", json!({"spec": {
            "accessModes": ["ReadWriteOnce"], "storageClassName": "shop-ssd",
            "resources": {"requests": {"storage": "1Gi"}}}})),
        ns("PodDisruptionBudget", "policy/v1", "web", json!({"spec": {
            "minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})),
        {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "shop"},
         "spec": {"controller": "example.com/ingress"}},
        ns("Ingress", "networking.k8s.io/v1", "web", json!({"spec": {"ingressClassName": "shop",
            "rules": [{"host": "shop.example.com", "http": {"paths": [{"path": "/",
                "pathType": "Prefix", "backend": {"service": {"name": "web",
                    "port": {"number": 80}}}}]}}]}})),
        ns("NetworkPolicy", "networking.k8s.io/v1", "web", json!({"spec": {
            "podSelector": {"matchLabels": {"app": "web"}},
            "ingress": [{"ports": [{"port": 8080}]}]}})),
        ns("HorizontalPodAutoscaler", "autoscaling/v2", "web", json!({"spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 3}})),
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "shop-gpu"},
         "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}},
        ns("ResourceClaim", "resource.k8s.io/v1", "gpu", json!({"spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "shop-gpu"}}]}}})),
    ]);
    create_work(&works, "kinds", manifests, json!({})).await;
    let work = applied_and_available(&works, "kinds").await;
    let applied = work
        .status
        .iter()
        .flat_map(|s| s.resource_status.iter())
        .flat_map(|r| r.manifests.iter())
        .filter(|m| {
            m.conditions
                .iter()
                .any(|c| c.type_ == "Applied" && c.status == "True")
        })
        .count();
    assert_eq!(applied, 11, "every manifest applied");

    let claims: Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> =
        Api::namespaced(spoke.clone(), "shop");
    let pvc = claims.get("data").await.unwrap();
    assert_eq!(
        pvc.spec.as_ref().and_then(|s| s.volume_mode.as_deref()),
        Some("Filesystem")
    );
    let policies: Api<k8s_openapi::api::networking::v1::NetworkPolicy> =
        Api::namespaced(spoke.clone(), "shop");
    let np = policies.get("web").await.unwrap();
    assert_eq!(
        np.spec.and_then(|s| s.policy_types),
        Some(vec!["Ingress".to_owned()])
    );
    let autoscalers: Api<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler> =
        Api::namespaced(spoke.clone(), "shop");
    let hpa = autoscalers.get("web").await.unwrap();
    assert_eq!(hpa.spec.and_then(|s| s.min_replicas), Some(1));

    work_agent.stop().await;
    for agent in agents {
        agent.stop().await.unwrap();
    }
    hub.stop().await;
}
