//! Cluster sets against the embedded server: `default` and `global` created, recreated and
//! reset; clusters put into `default`; `ClusterSetEmpty` for both selector types; bindings
//! `Bound` / `ClusterSetNotFound`; clusters listing their sets' managed namespaces.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Resource, ResourceExt};
use ocm_api::cluster::names::labels::CLUSTER_SET;
use ocm_api::cluster::v1::{ManagedCluster, ManagedClusterSpec};
use ocm_api::cluster::v1beta2::{
    ManagedClusterSet, ManagedClusterSetBinding, ManagedClusterSetBindingSpec,
    ManagedClusterSetSpec,
};
use ocm_apiserver::ApiServer;
use ocm_registration::hub::{HubContext, HubOptions};
use ocm_runtime::metrics::ControllerMetrics;
use ocm_runtime::shutdown::Shutdown;
use serde::de::DeserializeOwned;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(15);

struct Hub {
    _server: ApiServer,
    client: kube::Client,
    ctx: Arc<HubContext>,
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.ctx.shutdown.cancel();
    }
}

async fn start_hub(default_cluster_sets: bool) -> Hub {
    let server = ApiServer::in_memory().await.unwrap();
    let client = kube::Client::new(server.service(), "default");
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in ocm_api::crds::hub() {
        crds.create(&PostParams::default(), &crd).await.unwrap();
    }
    for crd in ocm_api::crds::hub() {
        tokio::time::timeout(
            WAIT,
            await_condition(
                crds.clone(),
                &crd.name_any(),
                conditions::is_crd_established(),
            ),
        )
        .await
        .unwrap()
        .unwrap();
    }
    let ctx = Arc::new(HubContext {
        client: client.clone(),
        options: HubOptions {
            default_cluster_sets,
            ..HubOptions::default()
        },
        metrics: ControllerMetrics::new("ocm"),
        shutdown: Shutdown::new(),
    });
    tokio::spawn(ocm_registration::hub::run(ctx.clone()));
    Hub {
        _server: server,
        client,
        ctx,
    }
}

async fn wait_for<K>(
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
        other => panic!(
            "timed out waiting for {what}: {other:?}; now {:?}",
            api.get_opt(name).await
        ),
    }
}

fn find<'a>(conds: Option<&'a Vec<Condition>>, type_: &str) -> Option<&'a Condition> {
    conds?.iter().find(|c| c.type_ == type_)
}

fn set_condition(set: &ManagedClusterSet, type_: &str) -> Option<(String, String, String)> {
    find(set.status.as_ref().map(|s| &s.conditions), type_)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

fn selector_json(set: &ManagedClusterSet) -> serde_json::Value {
    serde_json::to_value(&set.spec).unwrap()
}

#[tokio::test]
async fn default_and_global_sets_are_kept_and_clusters_join_default() {
    let hub = start_hub(true).await;
    let sets: Api<ManagedClusterSet> = Api::all(hub.client.clone());
    let default = wait_for(&sets, "default", "the default set", |_| true).await;
    assert_eq!(
        selector_json(&default),
        json!({"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}})
    );
    let global = wait_for(&sets, "global", "the global set", |_| true).await;
    assert_eq!(
        selector_json(&global),
        json!({"clusterSelector": {"selectorType": "LabelSelector", "labelSelector": {}}})
    );
    // Both empty at first.
    for name in ["default", "global"] {
        let set = wait_for(&sets, name, "ClusterSetEmpty", |s| {
            set_condition(s, "ClusterSetEmpty").is_some()
        })
        .await;
        assert_eq!(
            set_condition(&set, "ClusterSetEmpty").unwrap(),
            (
                "True".to_owned(),
                "NoClusterMatched".to_owned(),
                "No ManagedCluster selected".to_owned()
            )
        );
    }

    // Deleted → recreated.
    let old_uid = default.uid();
    sets.delete("default", &DeleteParams::default())
        .await
        .unwrap();
    wait_for(&sets, "default", "default recreated", move |s| {
        s.uid() != old_uid
    })
    .await;

    // Spec changed → reset, unless autoupdate is "false".
    sets.patch(
        "global",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"spec": {"clusterSelector": {"labelSelector": {"matchLabels": {"a": "b"}}}}}),
        ),
    )
    .await
    .unwrap();
    wait_for(&sets, "global", "global reset", |s| {
        s.spec
            .cluster_selector
            .as_ref()
            .and_then(|c| c.label_selector.as_ref())
            .is_some_and(|l| l.match_labels.is_none())
    })
    .await;
    sets.patch(
        "global",
        &PatchParams::default(),
        &Patch::Merge(json!({
            "metadata": {"annotations": {"cluster.open-cluster-management.io/autoupdate": "false"}},
            "spec": {"clusterSelector": {"labelSelector": {"matchLabels": {"a": "b"}}}}})),
    )
    .await
    .unwrap();

    // A cluster without a set label is put into default; both sets now select it.
    let clusters: Api<ManagedCluster> = Api::all(hub.client.clone());
    let mut cluster = ManagedCluster::new("c1", ManagedClusterSpec::default());
    cluster.metadata.labels = Some([("a".to_owned(), "b".to_owned())].into());
    clusters
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap();
    wait_for(&clusters, "c1", "the default label", |c| {
        c.labels().get(CLUSTER_SET).map(String::as_str) == Some("default")
    })
    .await;
    for name in ["default", "global"] {
        wait_for(&sets, name, "one cluster selected", |s| {
            set_condition(s, "ClusterSetEmpty")
                == Some((
                    "False".to_owned(),
                    "ClustersSelected".to_owned(),
                    "1 ManagedClusters selected".to_owned(),
                ))
        })
        .await;
    }
    // The global set kept its custom selector (autoupdate off) and it selects c1 (a=b).
    let global = sets.get("global").await.unwrap();
    assert_eq!(
        selector_json(&global)["clusterSelector"]["labelSelector"],
        json!({"matchLabels": {"a": "b"}})
    );

    // Moving the cluster to another set empties default.
    clusters
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {CLUSTER_SET: "dev"}}})),
        )
        .await
        .unwrap();
    sets.create(
        &PostParams::default(),
        &ManagedClusterSet::new("dev", ManagedClusterSetSpec::default()),
    )
    .await
    .unwrap();
    wait_for(&sets, "dev", "dev selects c1", |s| {
        set_condition(s, "ClusterSetEmpty").is_some_and(|c| c.0 == "False")
    })
    .await;
    wait_for(&sets, "default", "default empty again", |s| {
        set_condition(s, "ClusterSetEmpty").is_some_and(|c| c.0 == "True")
    })
    .await;

    // Deleting the cluster empties dev.
    clusters
        .delete("c1", &DeleteParams::default())
        .await
        .unwrap();
    wait_for(&sets, "dev", "dev empty after the cluster left", |s| {
        set_condition(s, "ClusterSetEmpty").is_some_and(|c| c.0 == "True")
    })
    .await;
}

#[tokio::test]
async fn bindings_are_bound_while_their_set_exists() {
    let hub = start_hub(false).await;
    let namespaces: Api<Namespace> = Api::all(hub.client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "apps"}})).unwrap(),
        )
        .await
        .unwrap();
    let bindings: Api<ManagedClusterSetBinding> = Api::namespaced(hub.client.clone(), "apps");
    bindings
        .create(
            &PostParams::default(),
            &ManagedClusterSetBinding::new(
                "prod",
                ManagedClusterSetBindingSpec {
                    cluster_set: "prod".into(),
                },
            ),
        )
        .await
        .unwrap();
    let bound = |b: &ManagedClusterSetBinding| {
        find(b.status.as_ref().map(|s| &s.conditions), "Bound")
            .map(|c| (c.status.clone(), c.reason.clone()))
    };
    wait_for(&bindings, "prod", "Bound=False", move |b| {
        bound(b) == Some(("False".into(), "ClusterSetNotFound".into()))
    })
    .await;
    let sets: Api<ManagedClusterSet> = Api::all(hub.client.clone());
    sets.create(
        &PostParams::default(),
        &ManagedClusterSet::new("prod", ManagedClusterSetSpec::default()),
    )
    .await
    .unwrap();
    wait_for(&bindings, "prod", "Bound=True", move |b| {
        bound(b) == Some(("True".into(), "ClusterSetBound".into()))
    })
    .await;
    sets.delete("prod", &DeleteParams::default()).await.unwrap();
    wait_for(&bindings, "prod", "Bound=False again", move |b| {
        bound(b) == Some(("False".into(), "ClusterSetNotFound".into()))
    })
    .await;
    // Without the DefaultClusterSet option no built-in set is created.
    assert!(sets.get_opt("default").await.unwrap().is_none());
    assert!(sets.get_opt("global").await.unwrap().is_none());
}

fn managed(cluster: &ManagedCluster) -> Vec<(String, String)> {
    cluster
        .status
        .iter()
        .flat_map(|s| &s.managed_namespaces)
        .map(|e| (e.cluster_set.clone(), e.name.clone()))
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(s, n)| ((*s).to_owned(), (*n).to_owned()))
        .collect()
}

#[tokio::test]
async fn member_clusters_list_their_sets_managed_namespaces() {
    let hub = start_hub(true).await;
    let sets: Api<ManagedClusterSet> = Api::all(hub.client.clone());
    let clusters: Api<ManagedCluster> = Api::all(hub.client.clone());
    let mut cluster = ManagedCluster::new("c1", ManagedClusterSpec::default());
    cluster.metadata.labels = Some(
        [
            (CLUSTER_SET.to_owned(), "universal".to_owned()),
            ("env".to_owned(), "dev".to_owned()),
        ]
        .into(),
    );
    clusters
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap();
    let set = |name: &str, spec: serde_json::Value| -> ManagedClusterSet {
        serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSet", "metadata": {"name": name}, "spec": spec}))
        .unwrap()
    };
    sets.create(
        &PostParams::default(),
        &set(
            "universal",
            json!({"managedNamespaces": [{"name": "ns-b"}, {"name": "ns-a"}]}),
        ),
    )
    .await
    .unwrap();
    sets.create(
        &PostParams::default(),
        &set(
            "by-env",
            json!({"clusterSelector": {"selectorType": "LabelSelector",
                      "labelSelector": {"matchLabels": {"env": "dev"}}},
                   "managedNamespaces": [{"name": "ns-c"}]}),
        ),
    )
    .await
    .unwrap();
    wait_for(&clusters, "c1", "namespaces of both sets", |c| {
        managed(c)
            == pairs(&[
                ("by-env", "ns-c"),
                ("universal", "ns-a"),
                ("universal", "ns-b"),
            ])
    })
    .await;

    // The agent's conditions survive a change of the list.
    clusters
        .patch_status(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"managedNamespaces": [
                {"name": "ns-c", "clusterSet": "by-env", "conditions": [{
                    "type": "NamespaceAvailable", "status": "True", "reason": "NamespaceApplied",
                    "message": "ok", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
                {"name": "ns-a", "clusterSet": "universal"},
                {"name": "ns-b", "clusterSet": "universal"}]}})),
        )
        .await
        .unwrap();
    sets.patch(
        "universal",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"managedNamespaces": [{"name": "ns-b"}]}})),
    )
    .await
    .unwrap();
    let c = wait_for(&clusters, "c1", "ns-a dropped", |c| {
        managed(c) == pairs(&[("by-env", "ns-c"), ("universal", "ns-b")])
    })
    .await;
    let kept = &c.status.unwrap().managed_namespaces[0];
    assert_eq!(kept.conditions[0].reason, "NamespaceApplied");

    // Leaving a set drops its namespaces; the built-in global set's namespaces are the
    // admin's (not reset) and reach every cluster.
    clusters
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"env": "prod"}}})),
        )
        .await
        .unwrap();
    wait_for(&sets, "global", "the global set", |_| true).await;
    sets.patch(
        "global",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"managedNamespaces": [{"name": "everywhere"}]}})),
    )
    .await
    .unwrap();
    wait_for(&clusters, "c1", "by-env left, global joined", |c| {
        managed(c) == pairs(&[("global", "everywhere"), ("universal", "ns-b")])
    })
    .await;
    let global = sets.get("global").await.unwrap();
    assert_eq!(global.spec.managed_namespaces.len(), 1);
}

#[tokio::test]
async fn every_hub_controller_stops_when_asked() {
    // A leader that loses or hands over its lease cancels the controllers; `run` must return
    // (a controller that keeps running would hold the handover until the lease expires).
    let hub = start_hub(true).await;
    let ctx = Arc::new(HubContext {
        client: hub.client.clone(),
        options: HubOptions::default(),
        metrics: ControllerMetrics::new("ocm"),
        shutdown: Shutdown::new(),
    });
    let running = tokio::spawn(ocm_registration::hub::run(ctx.clone()));
    let sets: Api<ManagedClusterSet> = Api::all(hub.client.clone());
    wait_for(&sets, "default", "the controllers at work", |_| true).await;
    ctx.shutdown.cancel();
    tokio::time::timeout(WAIT, running)
        .await
        .expect("the hub controllers stop")
        .unwrap();
}
