//! The placement controller on the embedded hub, driven through the API as a user would:
//! more than 100 clusters split over decision pages, a cluster moving between pages never
//! missing from all of them (upstream issue #1346), numberOfClusters down and up, a deleted
//! decision re-created, a misconfiguration fixed, and a cluster moving between sets reaching
//! the placements of both sets' namespaces.
//!
//! The clusters here never join (no agents): the placements tolerate the taints the hub gives
//! such clusters, so every cluster is a candidate.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta1::{Placement, PlacementDecision};
use ocm_e2e::*;
use serde_json::{Value, json};

const PLACEMENT_LABEL: &str = "cluster.open-cluster-management.io/placement";
const SET_LABEL: &str = "cluster.open-cluster-management.io/clusterset";

fn tolerations() -> Value {
    json!([
        {"key": "cluster.open-cluster-management.io/unavailable", "operator": "Exists"},
        {"key": "cluster.open-cluster-management.io/unreachable", "operator": "Exists"}
    ])
}

async fn create<K>(api: &Api<K>, object: Value)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    let object: K = serde_json::from_value(object).unwrap();
    api.create(&PostParams::default(), &object).await.unwrap();
}

async fn create_clusters(client: &kube::Client, names: impl IntoIterator<Item = String>) {
    let api: Api<ManagedCluster> = Api::all(client.clone());
    futures::stream::iter(names)
        .map(|name| {
            let api = api.clone();
            async move {
                create(
                    &api,
                    json!({"apiVersion": "cluster.open-cluster-management.io/v1",
                           "kind": "ManagedCluster", "metadata": {"name": name},
                           "spec": {"hubAcceptsClient": false}}),
                )
                .await;
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<()>>()
        .await;
}

/// The decisions of placement `name`, page name → clusters, as the server has them now.
async fn pages(client: &kube::Client, ns: &str, name: &str) -> BTreeMap<String, Vec<String>> {
    Api::<PlacementDecision>::namespaced(client.clone(), ns)
        .list(&kube::api::ListParams::default().labels(&format!("{PLACEMENT_LABEL}={name}")))
        .await
        .unwrap()
        .items
        .iter()
        .map(|d| (d.metadata.name.clone().unwrap(), decided_clusters(d)))
        .collect()
}

/// Waits until the placement's pages are exactly `want` (each page's clusters in order).
async fn wait_pages(client: &kube::Client, ns: &str, name: &str, want: &[Vec<String>]) {
    let want: BTreeMap<String, Vec<String>> = want
        .iter()
        .enumerate()
        .map(|(i, clusters)| (format!("{name}-decision-{}", i + 1), clusters.clone()))
        .collect();
    let api: Api<PlacementDecision> = Api::namespaced(client.clone(), ns);
    let stream = watcher(
        api,
        watcher::Config::default().labels(&format!("{PLACEMENT_LABEL}={name}")),
    );
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut ready = false;
    let waited = tokio::time::timeout(WAIT, async {
        let mut stream = std::pin::pin!(stream);
        let mut init: BTreeMap<String, Vec<String>> = BTreeMap::new();
        while let Some(event) = stream.try_next().await.unwrap() {
            match event {
                watcher::Event::Init => init.clear(),
                watcher::Event::InitApply(d) => {
                    init.insert(d.metadata.name.clone().unwrap(), decided_clusters(&d));
                }
                watcher::Event::InitDone => {
                    seen = std::mem::take(&mut init);
                    ready = true;
                }
                watcher::Event::Apply(d) => {
                    seen.insert(d.metadata.name.clone().unwrap(), decided_clusters(&d));
                }
                watcher::Event::Delete(d) => {
                    seen.remove(d.metadata.name.as_deref().unwrap());
                }
            }
            if ready && seen == want {
                return;
            }
        }
    })
    .await;
    assert!(
        waited.is_ok(),
        "decisions of {ns}/{name}: wanted {want:?}, last seen {seen:?}"
    );
}

/// Waits until an Event about placement `name` with `reason` and a note containing `note`
/// exists in `ns`.
async fn wait_event(client: &kube::Client, ns: &str, name: &str, reason: &str, note: &str) {
    let api: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), ns);
    let found = tokio::time::timeout(WAIT, async {
        let stream = watcher(api, watcher::Config::default());
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.try_next().await.unwrap() {
            let (watcher::Event::Apply(e) | watcher::Event::InitApply(e)) = event else {
                continue;
            };
            if e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                && e.regarding.as_ref().and_then(|r| r.kind.as_deref()) == Some("Placement")
                && e.note.as_deref().is_some_and(|n| n.contains(note))
            {
                return;
            }
        }
    })
    .await;
    assert!(
        found.is_ok(),
        "no {reason} event for {ns}/{name} with {note:?}"
    );
}

/// Five clusters, ranked by one built-in prioritizer only.
fn five_by(prioritizer: &str) -> Value {
    json!({"tolerations": tolerations(), "numberOfClusters": 5,
           "prioritizerPolicy": {"mode": "Exact", "configurations": [
               {"scoreCoordinate": {"type": "BuiltIn", "builtIn": prioritizer}}]}})
}

fn names(range: std::ops::RangeInclusive<usize>) -> Vec<String> {
    range.map(|i| format!("c{i:03}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_count_changes_recreation_and_misconfiguration() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start_fast_hub(dir.path()).await.unwrap();
    let client = hub.admin_client();
    bind_namespace(&client, "apps", "default").await.unwrap();
    create_clusters(&client, names(1..=150)).await;
    // Every cluster is put into the default set by the hub.
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    wait_for(
        &clusters,
        "c150",
        "in the default set",
        |c: &ManagedCluster| {
            c.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(SET_LABEL))
                .is_some_and(|s| s == "default")
        },
    )
    .await
    .unwrap();

    apply_placement(&client, "apps", "p", json!({"tolerations": tolerations()}))
        .await
        .unwrap();
    wait_pages(&client, "apps", "p", &[names(1..=100), names(101..=150)]).await;

    // A cluster that sorts first joins: c100 moves from page 1 to page 2. Every write is
    // watched; at no moment may a cluster selected before and after be in no page.
    let decisions: Api<PlacementDecision> = Api::namespaced(client.clone(), "apps");
    let gaps: Arc<Mutex<Vec<String>>> = Arc::default();
    let (synced_tx, synced_rx) = tokio::sync::oneshot::channel();
    let observer = {
        let gaps = gaps.clone();
        let kept: BTreeSet<String> = names(1..=150).into_iter().collect();
        tokio::spawn(async move {
            let mut synced_tx = Some(synced_tx);
            let mut state: BTreeMap<String, Vec<String>> = BTreeMap::new();
            let mut ready = false;
            let stream = watcher(
                decisions,
                watcher::Config::default().labels(&format!("{PLACEMENT_LABEL}=p")),
            );
            let mut stream = std::pin::pin!(stream);
            while let Some(Ok(event)) = stream.next().await {
                match event {
                    watcher::Event::InitApply(d) | watcher::Event::Apply(d) => {
                        state.insert(d.metadata.name.clone().unwrap(), decided_clusters(&d));
                    }
                    watcher::Event::Delete(d) => {
                        state.remove(d.metadata.name.as_deref().unwrap());
                    }
                    watcher::Event::Init => state.clear(),
                    watcher::Event::InitDone => {
                        ready = true;
                        if let Some(tx) = synced_tx.take() {
                            let _ = tx.send(());
                        }
                    }
                }
                if ready {
                    let present: BTreeSet<&String> = state.values().flatten().collect();
                    let missing: Vec<&String> =
                        kept.iter().filter(|c| !present.contains(c)).collect();
                    if !missing.is_empty() {
                        gaps.lock().unwrap().push(format!("missing {missing:?}"));
                    }
                }
            }
        })
    };
    synced_rx.await.unwrap();
    create_clusters(&client, ["c000".to_string()]).await;
    wait_pages(&client, "apps", "p", &[names(0..=99), names(100..=150)]).await;
    observer.abort();
    assert_eq!(*gaps.lock().unwrap(), Vec::<String>::new());

    // numberOfClusters down: one page, the surplus page deleted; then up again.
    apply_placement(
        &client,
        "apps",
        "p",
        json!({"tolerations": tolerations(), "numberOfClusters": 20}),
    )
    .await
    .unwrap();
    let placements: Api<Placement> = Api::namespaced(client.clone(), "apps");
    wait_for(&placements, "p", "20 selected", |p: &Placement| {
        p.status
            .as_ref()
            .is_some_and(|s| s.number_of_selected_clusters == 20)
    })
    .await
    .unwrap();
    let now = pages(&client, "apps", "p").await;
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now["p-decision-1"].len(), 20);
    wait_event(
        &client,
        "apps",
        "p",
        "DecisionDelete",
        "Decision p-decision-2 is deleted with placement p in namespace apps",
    )
    .await;
    apply_placement(
        &client,
        "apps",
        "p",
        json!({"tolerations": tolerations(), "numberOfClusters": 120}),
    )
    .await
    .unwrap();
    wait_for(&placements, "p", "120 selected", |p: &Placement| {
        p.status
            .as_ref()
            .is_some_and(|s| s.number_of_selected_clusters == 120)
    })
    .await
    .unwrap();
    let now = pages(&client, "apps", "p").await;
    assert_eq!(
        now.values().map(Vec::len).collect::<Vec<_>>(),
        vec![100, 20],
        "{now:?}"
    );

    // A deleted decision is re-created with the same clusters.
    let before = now["p-decision-2"].clone();
    let decisions: Api<PlacementDecision> = Api::namespaced(client.clone(), "apps");
    decisions
        .delete("p-decision-2", &DeleteParams::default())
        .await
        .unwrap();
    wait_for(&decisions, "p-decision-2", "re-created", move |d| {
        decided_clusters(d) == before
    })
    .await
    .unwrap();

    // An unknown prioritizer: Misconfigured, nothing selected; fixed: selected again.
    apply_placement(&client, "apps", "p", five_by("NoSuchPrioritizer"))
        .await
        .unwrap();
    let misconfigured = wait_for(&placements, "p", "misconfigured", |p: &Placement| {
        placement_condition(p, "PlacementMisconfigured").is_some_and(|c| c.status == "True")
    })
    .await
    .unwrap();
    let condition = placement_condition(&misconfigured, "PlacementMisconfigured").unwrap();
    assert_eq!(condition.reason, "Misconfigured");
    assert!(
        condition.message.contains("NoSuchPrioritizer"),
        "{}",
        condition.message
    );
    wait_pages(&client, "apps", "p", &[vec![]]).await;
    apply_placement(&client, "apps", "p", five_by("Steady"))
        .await
        .unwrap();
    wait_for(&placements, "p", "configured again", |p: &Placement| {
        p.status
            .as_ref()
            .is_some_and(|s| s.number_of_selected_clusters == 5)
            && placement_condition(p, "PlacementMisconfigured").is_some_and(|c| c.status == "False")
    })
    .await
    .unwrap();
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_moving_between_sets_reaches_both_namespaces() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start_fast_hub(dir.path()).await.unwrap();
    let client = hub.admin_client();
    create(
        &Api::<ocm_api::cluster::v1beta2::ManagedClusterSet>::all(client.clone()),
        json!({"apiVersion": "cluster.open-cluster-management.io/v1beta2",
               "kind": "ManagedClusterSet", "metadata": {"name": "red"}, "spec": {}}),
    )
    .await;
    bind_namespace(&client, "default-apps", "default")
        .await
        .unwrap();
    bind_namespace(&client, "red-apps", "red").await.unwrap();
    create_clusters(&client, names(1..=3)).await;
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    clusters
        .patch(
            "c003",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {SET_LABEL: "red"}}})),
        )
        .await
        .unwrap();
    apply_placement(
        &client,
        "default-apps",
        "p",
        json!({"tolerations": tolerations()}),
    )
    .await
    .unwrap();
    apply_placement(
        &client,
        "red-apps",
        "p",
        json!({"tolerations": tolerations()}),
    )
    .await
    .unwrap();
    wait_pages(&client, "default-apps", "p", &[names(1..=2)]).await;
    wait_pages(&client, "red-apps", "p", &[names(3..=3)]).await;

    // c001 moves to red: the default namespace's placement drops it (the set it left), the
    // red namespace's placement takes it (the set it joined).
    clusters
        .patch(
            "c001",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {SET_LABEL: "red"}}})),
        )
        .await
        .unwrap();
    wait_pages(&client, "default-apps", "p", &[names(2..=2)]).await;
    wait_pages(
        &client,
        "red-apps",
        "p",
        &[vec!["c001".to_string(), "c003".to_string()]],
    )
    .await;

    // The binding of red-apps goes away: its placement has no bindings left.
    Api::<ocm_api::cluster::v1beta2::ManagedClusterSetBinding>::namespaced(
        client.clone(),
        "red-apps",
    )
    .delete("red", &DeleteParams::default())
    .await
    .unwrap();
    let placements: Api<Placement> = Api::namespaced(client.clone(), "red-apps");
    wait_for(&placements, "p", "no bindings", |p: &Placement| {
        placement_condition(p, "PlacementSatisfied")
            .is_some_and(|c| c.status == "False" && c.reason == "NoManagedClusterSetBindings")
    })
    .await
    .unwrap();
    wait_pages(&client, "red-apps", "p", &[vec![]]).await;
    hub.stop().await;
}
