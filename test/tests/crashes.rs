//! Crashes in the middle of the work: a hub `kill -9`ed during a ManifestWork rollout comes back
//! on its data dir and port, loses no acknowledged write and applies nothing twice; a work agent
//! `kill -9`ed while applying comes back to AppliedManifestWorks that match the works, and
//! leaves no object behind that no work prescribes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use ocm::simulated::SimulatedCluster;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::work::v1::{AppliedManifestWork, ManifestWork};
use ocm_e2e::process::{HubProcess, Process};
use ocm_e2e::*;
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::shutdown::Shutdown;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");

/// The namespace on the managed clusters that the works' ConfigMaps go to.
const NS: &str = "crash";

/// Waits (one watch, up to `timeout`) until `done` accepts the objects `api` sees, keyed
/// `namespace/name`, and returns them. `done` says what is still missing when it refuses; the
/// last such answer is in the failure.
async fn wait_all<K>(
    api: &Api<K>,
    what: &str,
    timeout: Duration,
    done: impl Fn(&BTreeMap<String, K>) -> Result<(), String>,
) -> BTreeMap<String, K>
where
    K: kube::Resource + Clone + Debug + DeserializeOwned + Send + 'static,
{
    let key = |o: &K| format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any());
    let mut events =
        std::pin::pin!(watcher(api.clone(), watcher::Config::default()).backoff_on_errors());
    let mut objects = BTreeMap::new();
    let mut listing = BTreeMap::new();
    let mut missing = "nothing listed yet".to_owned();
    let outcome = tokio::time::timeout(timeout, async {
        while let Some(event) = events.next().await {
            match event {
                Ok(watcher::Event::Init) => listing.clear(),
                Ok(watcher::Event::InitApply(o)) => {
                    listing.insert(key(&o), o);
                    continue;
                }
                Ok(watcher::Event::InitDone) => objects = std::mem::take(&mut listing),
                Ok(watcher::Event::Apply(o)) => {
                    objects.insert(key(&o), o);
                }
                Ok(watcher::Event::Delete(o)) => {
                    objects.remove(&key(&o));
                }
                Err(err) => {
                    missing = format!("watch error: {err}");
                    continue;
                }
            }
            match done(&objects) {
                Ok(()) => return true,
                Err(why) => missing = why,
            }
        }
        false
    })
    .await;
    assert_eq!(
        outcome,
        Ok(true),
        "{what}: not reached within {timeout:?}: {missing}"
    );
    objects
}

/// The status and observedGeneration of the work's `Applied` condition.
fn applied(work: &ManifestWork) -> Option<(&str, Option<i64>)> {
    work.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "Applied")
        .map(|c| (c.status.as_str(), c.observed_generation))
}

fn config_map(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": NS}, "data": {"key": value}})
}

fn work(name: &str, manifests: Vec<Value>) -> ManifestWork {
    serde_json::from_value(json!({
        "apiVersion": "work.open-cluster-management.io/v1", "kind": "ManifestWork",
        "metadata": {"name": name}, "spec": {"workload": {"manifests": manifests}}
    }))
    .unwrap()
}

fn data_of(cm: &ConfigMap) -> String {
    cm.data
        .as_ref()
        .and_then(|d| d.get("key"))
        .cloned()
        .unwrap_or_default()
}

/// A managed cluster in a server of its own (so it outlives the hub), joined to the hub and
/// accepted; returns it with its registration agent, the namespace [`NS`] created on it.
async fn joined_spoke(
    dir: &std::path::Path,
    hub: &kube::Client,
    bootstrap: &str,
    name: &str,
) -> (SimulatedCluster, RunningAgent) {
    let spoke = SimulatedCluster::start(&dir.join(name), ([127, 0, 0, 1], 0).into())
        .await
        .unwrap();
    let agent = join(&spoke.client(), bootstrap, fast_agent_options(name))
        .await
        .unwrap();
    tokio::time::timeout(WAIT, ocm::accept::accept_when_asked(hub, name, false))
        .await
        .expect("the cluster asks to join")
        .unwrap();
    wait_for(
        &Api::<ManagedCluster>::all(hub.clone()),
        name,
        "Joined and Available",
        joined_and_available,
    )
    .await
    .unwrap();
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": NS}})).unwrap();
    Api::<Namespace>::all(spoke.client())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    (spoke, agent)
}

// ---------------------------------------------------------------------------------------------
// 1. The hub killed mid-rollout.

/// Managed clusters of the rollout.
const CLUSTERS: usize = 4;
/// Works per cluster, one ConfigMap each: 1,000 in all. The test takes about 45 s on an idle
/// 2-core machine (60–70 s while other builds share it), most of it the rollout.
const WORKS_PER_CLUSTER: usize = 250;
/// Every `UPDATE_EVERY`-th work is updated to generation 2 (new ConfigMap data) while the
/// rollout runs.
const UPDATE_EVERY: usize = 5;
/// Writes the test keeps in flight at once.
const WRITERS: usize = 16;

fn rollout_work(i: usize) -> String {
    format!("w-{i:04}")
}

fn rollout_config_map(i: usize) -> String {
    format!("cm-{i:04}")
}

fn updated(i: usize) -> bool {
    i.is_multiple_of(UPDATE_EVERY)
}

/// One watch event of a ConfigMap: its type and the ConfigMap's `data.key`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seen {
    Added(String),
    Modified(String),
    Deleted,
}

/// Every watch event of the ConfigMaps in [`NS`] on one cluster, by name, from a
/// resourceVersion taken before any work existed: resumed at the last event seen whenever the
/// server ends the watch, so no event is missed or seen twice.
#[derive(Clone, Debug, Default)]
struct EventLog {
    events: BTreeMap<String, Vec<Seen>>,
    /// Why the log stopped, if it did (then it cannot be trusted).
    broken: Option<String>,
}

fn start_event_log(
    spoke: kube::Client,
    from: String,
) -> (
    tokio::sync::watch::Receiver<EventLog>,
    tokio::task::JoinHandle<()>,
) {
    let (tx, rx) = tokio::sync::watch::channel(EventLog::default());
    let api: Api<ConfigMap> = Api::namespaced(spoke, NS);
    let task = tokio::spawn(async move {
        let mut version = from;
        loop {
            let params = WatchParams::default().timeout(290);
            let stream = match api.watch(&params, &version).await {
                Ok(s) => s,
                Err(err) => {
                    tx.send_modify(|l| l.broken = Some(format!("watch: {err}")));
                    return;
                }
            };
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                let (name, seen, rv) = match event {
                    Ok(WatchEvent::Added(cm)) => (
                        cm.name_any(),
                        Seen::Added(data_of(&cm)),
                        cm.resource_version(),
                    ),
                    Ok(WatchEvent::Modified(cm)) => (
                        cm.name_any(),
                        Seen::Modified(data_of(&cm)),
                        cm.resource_version(),
                    ),
                    Ok(WatchEvent::Deleted(cm)) => {
                        (cm.name_any(), Seen::Deleted, cm.resource_version())
                    }
                    Ok(WatchEvent::Bookmark(b)) => {
                        version = b.metadata.resource_version;
                        continue;
                    }
                    Ok(WatchEvent::Error(status)) => {
                        tx.send_modify(|l| l.broken = Some(format!("watch: {status:?}")));
                        return;
                    }
                    Err(err) => {
                        tx.send_modify(|l| l.broken = Some(format!("watch stream: {err}")));
                        return;
                    }
                };
                version = rv.unwrap_or(version);
                tx.send_modify(|l| l.events.entry(name).or_default().push(seen));
            }
        }
    });
    (rx, task)
}

/// Waits until the event log satisfies `done`.
async fn wait_log(
    log: &mut tokio::sync::watch::Receiver<EventLog>,
    what: &str,
    timeout: Duration,
    done: impl Fn(&EventLog) -> bool,
) {
    let reached = tokio::time::timeout(timeout, log.wait_for(|l| l.broken.is_some() || done(l)))
        .await
        .is_ok();
    let log = log.borrow();
    assert!(log.broken.is_none(), "{what}: {:?}", log.broken);
    assert!(reached, "{what}: not reached within {timeout:?}");
}

/// The writes the hub acknowledged, as (cluster, work).
#[derive(Clone, Debug, Default)]
struct Acked {
    created: BTreeSet<(String, String)>,
    updated: BTreeSet<(String, String)>,
    /// Writes that failed because the hub was killed under them (retried once it was back).
    interrupted: usize,
}

/// What the writer needs to know about the hub's fate.
struct Fate {
    /// Set just before the hub is killed: from then on a write may fail.
    killing: AtomicBool,
    /// Becomes true once the hub is back.
    back: tokio::sync::watch::Receiver<bool>,
}

/// Runs `write` until the hub acknowledges it. A write may fail only once the hub is being
/// killed; it is then retried when the hub is back (a few times: connections the client pooled
/// before the kill may be dead). `write` is told whether it is a retry.
async fn until_acknowledged<F>(
    fate: &Fate,
    acked: &tokio::sync::watch::Sender<Acked>,
    what: &str,
    write: impl Fn(bool) -> F,
) where
    F: std::future::Future<Output = Result<(), kube::Error>>,
{
    let mut attempts_since_back = 0;
    let mut retry = false;
    loop {
        let err = match write(retry).await {
            Ok(()) => return,
            Err(err) => err,
        };
        assert!(
            fate.killing.load(Ordering::SeqCst),
            "{what} failed while the hub was up: {err}"
        );
        if !retry {
            acked.send_modify(|a| a.interrupted += 1);
        }
        retry = true;
        let mut back = fate.back.clone();
        if *back.borrow() {
            attempts_since_back += 1;
            assert!(
                attempts_since_back < 3,
                "{what} still fails after the hub came back: {err}"
            );
        }
        back.wait_for(|b| *b).await.unwrap();
    }
}

/// How far (in works per cluster) the updates trail the creates.
const UPDATE_LAG: usize = 25;

/// Creates work `i` of `cluster` (one ConfigMap, data `v1`) and records it acknowledged.
async fn create_rollout_work(
    works: &Api<ManifestWork>,
    cluster: &str,
    i: usize,
    fate: &Fate,
    acked: &tokio::sync::watch::Sender<Acked>,
) {
    let body = work(
        &rollout_work(i),
        vec![config_map(&rollout_config_map(i), "v1")],
    );
    let what = format!("creating {cluster}/{}", rollout_work(i));
    until_acknowledged(fate, acked, &what, |retry| {
        let (works, body) = (works.clone(), body.clone());
        async move {
            match works.create(&PostParams::default(), &body).await {
                Ok(_) => Ok(()),
                // Stored before the kill; only the answer was lost.
                Err(kube::Error::Api(s)) if retry && s.code == 409 => Ok(()),
                Err(e) => Err(e),
            }
        }
    })
    .await;
    acked.send_modify(|a| {
        a.created.insert((cluster.to_owned(), rollout_work(i)));
    });
}

/// Updates work `i` of `cluster` to data `v2` once its create is acknowledged, and records
/// the update acknowledged.
async fn update_rollout_work(
    works: &Api<ManifestWork>,
    cluster: &str,
    i: usize,
    fate: &Fate,
    acked: &tokio::sync::watch::Sender<Acked>,
) {
    let key = (cluster.to_owned(), rollout_work(i));
    acked
        .subscribe()
        .wait_for(|a| a.created.contains(&key))
        .await
        .unwrap();
    let patch = json!({"spec": {"workload": {"manifests":
        [config_map(&rollout_config_map(i), "v2")]}}});
    let what = format!("updating {cluster}/{}", rollout_work(i));
    until_acknowledged(fate, acked, &what, |_| {
        let (works, patch) = (works.clone(), patch.clone());
        async move {
            works
                .patch(
                    &rollout_work(i),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
                .map(|_| ())
        }
    })
    .await;
    acked.send_modify(|a| {
        a.updated.insert(key);
    });
}

/// Creates every work of every cluster (one ConfigMap each, data `v1`) and, [`UPDATE_LAG`]
/// works behind the creates, updates every [`UPDATE_EVERY`]-th to data `v2`; [`WRITERS`]
/// writes at a time, recording what the hub acknowledged.
async fn roll_out(
    hub: kube::Client,
    clusters: Vec<String>,
    fate: Arc<Fate>,
    acked: Arc<tokio::sync::watch::Sender<Acked>>,
) {
    let steps: Vec<(String, usize)> = (0..WORKS_PER_CLUSTER + UPDATE_LAG)
        .flat_map(|j| clusters.iter().map(move |c| (c.clone(), j)))
        .collect();
    futures::stream::iter(steps)
        .for_each_concurrent(WRITERS, |(cluster, j)| {
            let works: Api<ManifestWork> = Api::namespaced(hub.clone(), &cluster);
            let (fate, acked) = (fate.clone(), acked.clone());
            async move {
                if j < WORKS_PER_CLUSTER {
                    create_rollout_work(&works, &cluster, j, &fate, &acked).await;
                }
                if let Some(i) = j.checked_sub(UPDATE_LAG).filter(|i| updated(*i)) {
                    update_rollout_work(&works, &cluster, i, &fate, &acked).await;
                }
            }
        })
        .await;
}

/// `Ok` when every work of the rollout exists with its latest generation and reports it
/// `Applied`.
fn all_applied(works: &BTreeMap<String, ManifestWork>, clusters: &[String]) -> Result<(), String> {
    let mut behind = Vec::new();
    for cluster in clusters {
        for i in 0..WORKS_PER_CLUSTER {
            let key = format!("{cluster}/{}", rollout_work(i));
            let want = if updated(i) { 2 } else { 1 };
            match works.get(&key) {
                None => behind.push(format!("{key}: missing")),
                Some(w) if w.metadata.generation != Some(want) => {
                    behind.push(format!("{key}: generation {:?}", w.metadata.generation));
                }
                Some(w) if applied(w) != Some(("True", Some(want))) => {
                    behind.push(format!("{key}: Applied {:?}", applied(w)));
                }
                Some(_) => {}
            }
        }
    }
    if behind.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} behind, e.g. {:?}",
            behind.len(),
            &behind[..behind.len().min(5)]
        ))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_killed_mid_rollout_loses_no_work_and_applies_nothing_twice() {
    let home = tempfile::tempdir().unwrap();
    let data_dir = home.path().join("hub");
    let hub_started = Instant::now();
    let hub = HubProcess::start(OCM, home.path(), &data_dir, "127.0.0.1:0");
    let listen = hub.listen_address();
    let admin = hub.admin_client().await;
    let bootstrap = hub.bootstrap_kubeconfig(&admin).await;

    // The managed clusters, each with its registration agent, its work agent and a log of
    // every ConfigMap event in the works' namespace from before the first work.
    let clusters: Vec<String> = (1..=CLUSTERS).map(|n| format!("c{n}")).collect();
    let mut spokes = Vec::new();
    let mut logs = Vec::new();
    let mut log_tasks = Vec::new();
    let mut work_agents = Vec::new();
    let agents_shutdown = Shutdown::new();
    let joined = futures::future::join_all(
        clusters
            .iter()
            .map(|name| joined_spoke(home.path(), &admin, &bootstrap, name)),
    )
    .await;
    eprintln!(
        "{CLUSTERS} clusters joined {:?} after the hub started",
        hub_started.elapsed()
    );
    for (name, (spoke, agent)) in clusters.iter().zip(joined) {
        let from = Api::<ConfigMap>::namespaced(spoke.client(), NS)
            .list_metadata(&ListParams::default())
            .await
            .unwrap()
            .metadata
            .resource_version
            .unwrap();
        let (log, task) = start_event_log(spoke.client(), from);
        logs.push(log);
        log_tasks.push(task);
        let work_agent = ocm_work::agent::WorkAgent::new(
            spoke.client(),
            ocm_work::agent::WorkAgentOptions {
                cluster_name: name.clone(),
                status_sync_interval: Duration::from_secs(5),
                ..Default::default()
            },
        );
        let stats = work_agent.stats();
        tokio::spawn(work_agent.run(agents_shutdown.child()));
        work_agents.push(stats);
        spokes.push((spoke, agent));
    }

    // The rollout, and the kill once about half of it is applied.
    let (back_tx, back) = tokio::sync::watch::channel(false);
    let fate = Arc::new(Fate {
        killing: AtomicBool::new(false),
        back,
    });
    let acked = Arc::new(tokio::sync::watch::Sender::new(Acked::default()));
    let started = Instant::now();
    let writer = tokio::spawn(roll_out(
        admin.clone(),
        clusters.clone(),
        fate.clone(),
        acked.clone(),
    ));
    let total = CLUSTERS * WORKS_PER_CLUSTER;
    wait_all(
        &Api::<ManifestWork>::all(admin.clone()),
        "half of the works Applied",
        3 * WAIT,
        |works| {
            let n = works
                .values()
                .filter(|w| applied(w).is_some_and(|(s, _)| s == "True"))
                .count();
            if n * 2 >= total {
                Ok(())
            } else {
                Err(format!("{n} of {total} Applied"))
            }
        },
    )
    .await;
    fate.killing.store(true, Ordering::SeqCst);
    hub.process.kill_9();
    let before_kill = acked.borrow().clone();
    eprintln!(
        "hub killed {:?} after the first create: {} creates and {} updates acknowledged",
        started.elapsed(),
        before_kill.created.len(),
        before_kill.updated.len()
    );

    // Back on the same data dir and port; every acknowledged write is there.
    let hub = HubProcess::start(OCM, home.path(), &data_dir, &listen);
    eprintln!("hub back {:?} after the first create", started.elapsed());
    back_tx.send(true).unwrap();
    let admin = hub.admin_client().await;
    let mut lost = Vec::new();
    for cluster in &clusters {
        let works: BTreeMap<String, ManifestWork> =
            Api::<ManifestWork>::namespaced(admin.clone(), cluster)
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .map(|w| (w.name_any(), w))
                .collect();
        for (c, name) in before_kill.created.iter().filter(|(c, _)| c == cluster) {
            if !works.contains_key(name) {
                lost.push(format!("created {c}/{name}"));
            }
        }
        for (c, name) in before_kill.updated.iter().filter(|(c, _)| c == cluster) {
            if works.get(name).and_then(|w| w.metadata.generation) != Some(2) {
                lost.push(format!("updated {c}/{name}"));
            }
        }
    }
    assert_eq!(
        lost,
        Vec::<String>::new(),
        "acknowledged writes lost by the kill"
    );
    writer.await.unwrap();
    eprintln!(
        "{} writes were interrupted by the kill and retried",
        acked.borrow().interrupted
    );

    // Every work reports its latest generation Applied; every ConfigMap holds the latest data.
    wait_all(
        &Api::<ManifestWork>::all(admin.clone()),
        "every work Applied at its latest generation",
        3 * WAIT,
        |works| all_applied(works, &clusters),
    )
    .await;
    for (cluster, mut log) in clusters.iter().zip(logs.iter().cloned()) {
        wait_log(
            &mut log,
            &format!("{cluster}: every ConfigMap with its latest data"),
            WAIT,
            |l| {
                (0..WORKS_PER_CLUSTER).all(|i| {
                    let want = if updated(i) { "v2" } else { "v1" };
                    l.events
                        .get(&rollout_config_map(i))
                        .and_then(|e| e.last())
                        .is_some_and(
                            |s| matches!(s, Seen::Added(d) | Seen::Modified(d) if d == want),
                        )
                })
            },
        )
        .await;
    }
    eprintln!(
        "rollout converged {:?} after the first create",
        started.elapsed()
    );

    // Every work agent passes over all its works once more; then a last write on each cluster
    // marks the end of its event log.
    let settled = futures::future::join_all(work_agents.iter_mut().map(|stats| async move {
        let from = stats.borrow().passes;
        // (What `wait_for` returns holds the agent's counters locked: dropped at once.)
        tokio::time::timeout(
            WAIT,
            stats.wait_for(|s| s.passes >= from + WORKS_PER_CLUSTER as u64),
        )
        .await
        .is_ok_and(|r| r.is_ok())
    }))
    .await;
    assert!(
        settled.iter().all(|s| *s),
        "a work agent stopped passing over its works"
    );
    eprintln!(
        "agents settled {:?} after the hub started",
        hub_started.elapsed()
    );
    for ((spoke, _), log) in spokes.iter().zip(&logs) {
        let marker = ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some("zz-end".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<ConfigMap>::namespaced(spoke.client(), NS)
            .create(&PostParams::default(), &marker)
            .await
            .unwrap();
        wait_log(&mut log.clone(), "the end marker", WAIT, |l| {
            l.events.contains_key("zz-end")
        })
        .await;
    }

    // Nothing was applied twice: a ConfigMap whose work was never updated was written once
    // (created, never modified); one whose work was updated was created with the first data
    // and modified once to the second, or created with the second and never modified.
    let mut twice = Vec::new();
    for ((cluster, log), (spoke, _)) in clusters.iter().zip(&logs).zip(&spokes) {
        let log = log.borrow().clone();
        for i in 0..WORKS_PER_CLUSTER {
            let events = log
                .events
                .get(&rollout_config_map(i))
                .cloned()
                .unwrap_or_default();
            let added = |d: &str| Seen::Added(d.into());
            let ok = if updated(i) {
                events == [added("v1"), Seen::Modified("v2".into())] || events == [added("v2")]
            } else {
                events == [added("v1")]
            };
            if !ok {
                twice.push(format!("{cluster}/{}: {events:?}", rollout_config_map(i)));
            }
        }
        // The cluster holds every ConfigMap with its latest data, and exactly one
        // AppliedManifestWork per work.
        let data: BTreeMap<String, String> = Api::<ConfigMap>::namespaced(spoke.client(), NS)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .filter(|c| c.name_any().starts_with("cm-"))
            .map(|c| (c.name_any(), data_of(c)))
            .collect();
        let want: BTreeMap<String, String> = (0..WORKS_PER_CLUSTER)
            .map(|i| {
                let value = if updated(i) { "v2" } else { "v1" };
                (rollout_config_map(i), value.to_owned())
            })
            .collect();
        assert_eq!(data, want, "{cluster}");
        let applied_works = Api::<AppliedManifestWork>::all(spoke.client())
            .list(&ListParams::default())
            .await
            .unwrap()
            .items;
        assert_eq!(applied_works.len(), WORKS_PER_CLUSTER, "{cluster}");
    }
    assert!(
        twice.is_empty(),
        "{} ConfigMaps written more than their works asked, e.g. {:?}",
        twice.len(),
        &twice[..twice.len().min(10)]
    );
    eprintln!("checked {:?} after the hub started", hub_started.elapsed());

    agents_shutdown.cancel();
    for (spoke, agent) in spokes {
        let _ = agent.stop().await;
        spoke.stop().await;
    }
    for task in log_tasks {
        task.abort();
    }
    hub.process.stop();
}

// ---------------------------------------------------------------------------------------------
// 2. The work agent killed mid-apply.

/// ConfigMaps in each work of the agent crash: enough that a pass over one takes a while.
const MANIFESTS: usize = 50;

fn named(work: &str, j: usize) -> String {
    format!("{work}-{j:02}")
}

/// `ocm work agent` for cluster `c1` on the spoke behind `kubeconfig`.
fn start_work_agent(home: &std::path::Path, kubeconfig: &std::path::Path) -> Process {
    Process::spawn(
        OCM,
        home,
        &[
            "work",
            "agent",
            "--spoke-kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--cluster-name",
            "c1",
            "--status-sync-interval",
            "1s",
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_killed_mid_apply_leaves_matching_applied_works_and_no_orphans() {
    let home = tempfile::tempdir().unwrap();
    let hub = start_fast_hub(&home.path().join("hub")).await.unwrap();
    let admin = hub.admin_client();
    let bootstrap = bootstrap_kubeconfig(&hub).await.unwrap();
    let (spoke, agent) = joined_spoke(home.path(), &admin, &bootstrap, "c1").await;
    let config_maps: Api<ConfigMap> = Api::namespaced(spoke.client(), NS);
    let works: Api<ManifestWork> = Api::namespaced(admin.clone(), "c1");

    // Three works of many ConfigMaps; the agent dies as soon as the one that will change has
    // its first object on the cluster.
    let work_agent = start_work_agent(home.path(), &spoke.kubeconfig);
    for name in ["doomed", "changing", "steady"] {
        let manifests = (0..MANIFESTS)
            .map(|j| config_map(&named(name, j), "v1"))
            .collect();
        works
            .create(&PostParams::default(), &work(name, manifests))
            .await
            .unwrap();
    }
    let first = async {
        let mut events = std::pin::pin!(
            watcher(config_maps.clone(), watcher::Config::default()).applied_objects()
        );
        while let Some(cm) = events.next().await {
            if cm.unwrap().name_any().starts_with("changing-") {
                return;
            }
        }
    };
    tokio::time::timeout(WAIT, first)
        .await
        .expect("the agent starts applying");
    work_agent.kill_9();
    let on_cluster = config_maps
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    let ours = on_cluster
        .iter()
        .filter(|c| !c.owner_references().is_empty())
        .count();
    eprintln!("killed with {ours} of {} objects applied", 3 * MANIFESTS);
    assert!(
        ours < 3 * MANIFESTS,
        "the agent finished before it was killed: the works are too small for this machine"
    );

    // While it is down: one work deleted, one changed (half its ConfigMaps dropped, the rest
    // with new data, ten more).
    works.delete("doomed", &Default::default()).await.unwrap();
    let changed: Vec<Value> = (MANIFESTS / 2..MANIFESTS + 10)
        .map(|j| config_map(&named("changing", j), "v2"))
        .collect();
    works
        .patch(
            "changing",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"workload": {"manifests": changed}}})),
        )
        .await
        .unwrap();

    // Back: the works converge, and the cluster holds exactly what they prescribe.
    let work_agent = start_work_agent(home.path(), &spoke.kubeconfig);
    wait_gone(&works, "doomed").await.unwrap();
    for (name, generation) in [("changing", 2), ("steady", 1)] {
        wait_for(&works, name, "Applied at its generation", move |w| {
            w.metadata.generation == Some(generation)
                && applied(w) == Some(("True", Some(generation)))
        })
        .await
        .unwrap();
    }
    let mut expected: BTreeMap<String, &str> =
        (0..MANIFESTS).map(|j| (named("steady", j), "v1")).collect();
    expected.extend((MANIFESTS / 2..MANIFESTS + 10).map(|j| (named("changing", j), "v2")));
    let live = wait_all(
        &config_maps,
        "exactly the works' ConfigMaps, with their data",
        WAIT,
        |cms| {
            let have: BTreeMap<String, String> = cms
                .values()
                .filter(|c| c.name_any() != "kube-root-ca.crt")
                .map(|c| (c.name_any(), data_of(c)))
                .collect();
            let want: BTreeMap<String, String> = expected
                .iter()
                .map(|(k, v)| (k.clone(), (*v).to_owned()))
                .collect();
            if have == want {
                return Ok(());
            }
            let extra: Vec<_> = have.keys().filter(|k| !want.contains_key(*k)).collect();
            let wrong: Vec<_> = want
                .iter()
                .filter(|(k, v)| have.get(*k) != Some(v))
                .map(|(k, _)| k)
                .collect();
            Err(format!(
                "not prescribed: {extra:?}; missing or stale: {wrong:?}"
            ))
        },
    )
    .await;

    // One AppliedManifestWork per work, each naming exactly the objects of its work.
    let hash = ocm_work::agent::hub_hash(&hub.url);
    let uid_of = |name: &str| {
        live.values()
            .find(|c| c.name_any() == name)
            .and_then(|c| c.uid())
            .unwrap()
    };
    let mut want_applied: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    for name in expected.keys() {
        let work = name.rsplit_once('-').unwrap().0;
        want_applied
            .entry(ocm_work::agent::applied_work_name(&hash, work))
            .or_default()
            .insert((format!("configmaps/{NS}/{name}"), uid_of(name)));
    }
    wait_all(
        &Api::<AppliedManifestWork>::all(spoke.client()),
        "AppliedManifestWorks matching the works",
        WAIT,
        |amws| {
            let have: BTreeMap<String, BTreeSet<(String, String)>> = amws
                .values()
                .map(|a| {
                    let resources = a
                        .status
                        .iter()
                        .flat_map(|s| s.applied_resources.iter())
                        .map(|r| {
                            let id = format!("{}/{}/{}", r.resource, r.namespace, r.name);
                            (id, r.uid.clone())
                        })
                        .collect();
                    (a.name_any(), resources)
                })
                .collect();
            if have == want_applied {
                Ok(())
            } else {
                Err(format!("have {have:?}"))
            }
        },
    )
    .await;

    work_agent.stop();
    agent.stop().await.unwrap();
    spoke.stop().await;
    hub.stop().await;
}
