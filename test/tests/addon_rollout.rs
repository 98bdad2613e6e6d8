//! Addon config rollouts as a user drives them with kubectl, on an embedded hub and on a hub
//! run by `ocm hub --kubeconfig`: the user guide's template addon, AddOnDeploymentConfig and
//! Placement with two decision groups applied with `kubectl apply`, the config changed with `kubectl patch`, and the ManagedClusterAddOns and
//! the ClusterManagementAddOn watched throughout:
//! - `ProgressivePerGroup` with `minSuccessTime`: no cluster of the second group gets the new
//!   config before every cluster of the first applied it, and not before the soak after the
//!   first group's last success (as the hub recorded it);
//! - `progressDeadline` and `maxFailures`: a cluster whose agents never run times out, the
//!   rollout stops there (the second group is held, `installProgressions` says `Failed`) and
//!   goes on once the cluster leaves the placement;
//! - invalid values: a `maxConcurrency` or `progressDeadline` outside the schema is refused by
//!   the server and nothing changes; a `minSuccessTime` that is no duration is named in the
//!   install progression's condition and no cluster gets the new config until it is fixed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;
use kube::runtime::watcher::{self, Event};
use ocm_addon_framework::manager::run_install_strategies;
use ocm_addon_framework::template::run_template_addons;
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_e2e::WAIT;
use ocm_e2e::process::ManagedApiserver;
use ocm_runtime::shutdown::Shutdown;
use serde_json::json;

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");
const ADDON: &str = "greeter";
const MANAGER_NS: &str = "open-cluster-management-hub";
/// The soak of the first rollout strategy.
const SOAK_SECONDS: i64 = 3;

/// The user guide's example (docs/addons.md, "Rolling out a config change group by group"):
/// a namespace bound to the default cluster set, a Placement with the decision groups
/// `canary` and `main`, the addon's values, its template and the ClusterManagementAddOn
/// rolling configs out group by group with a soak — the test applies what the guide shows.
fn guide_yaml() -> &'static str {
    let guide = include_str!("../../docs/addons.md");
    let section = &guide[guide
        .find("## Rolling out a config change group by group")
        .expect("the guide's rollout section")..];
    let start = section.find("```yaml\n").expect("its YAML") + "```yaml\n".len();
    let end = start + section[start..].find("```").expect("the end of its YAML");
    &section[start..end]
}

/// Lets the placement choose clusters whose agents never run (tainted unreachable).
const TOLERATE_UNREACHABLE: &str = r#"{"spec": {"tolerations": [
    {"key": "cluster.open-cluster-management.io/unreachable", "operator": "Exists"},
    {"key": "cluster.open-cluster-management.io/unavailable", "operator": "Exists"}]}}"#;

/// `kubectl` as the hub's admin; (success, stdout, stderr).
async fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    ocm_e2e::kubectl(kubeconfig, args, stdin).await.unwrap()
}

/// `kubectl` that must succeed.
async fn kubectl_ok(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> String {
    let (ok, out, err) = kubectl(kubeconfig, args, stdin).await;
    assert!(ok, "kubectl {args:?} failed: {err}");
    out
}

/// `kubectl patch` of the greeting in the addon's AddOnDeploymentConfig.
async fn set_greeting(kubeconfig: &Path, greeting: &str) {
    let patch = json!({"spec": {"customizedVariables": [{"name": "GREETING", "value": greeting}]}});
    kubectl_ok(
        kubeconfig,
        &[
            "patch",
            "addondeploymentconfig",
            "greeter-values",
            "-n",
            "addons",
            "--type",
            "merge",
            "-p",
            &patch.to_string(),
        ],
        None,
    )
    .await;
}

/// The ClusterManagementAddOn's placement with `rollout` as its strategy, as a merge patch.
fn strategy_patch(rollout: serde_json::Value) -> String {
    json!({"spec": {"installStrategy": {"type": "Placements", "placements": [
        {"namespace": "addons", "name": "greeter", "rolloutStrategy": rollout}]}}})
    .to_string()
}

/// `kubectl patch clustermanagementaddon greeter` with the placement's strategy `rollout`.
async fn patch_strategy(kubeconfig: &Path, rollout: serde_json::Value) -> (bool, String, String) {
    kubectl(
        kubeconfig,
        &[
            "patch",
            "clustermanagementaddon",
            ADDON,
            "--type",
            "merge",
            "-p",
            &strategy_patch(rollout),
        ],
        None,
    )
    .await
}

/// The spec hash of the AddOnDeploymentConfig an addon is to run, and whether it applied it.
fn values(mca: &ManagedClusterAddOn) -> Option<(String, bool)> {
    let reference = mca
        .status
        .as_ref()?
        .config_references
        .iter()
        .find(|r| r.resource == "addondeploymentconfigs")?;
    let hash = reference.desired_config.as_ref()?.spec_hash.clone()?;
    Some((
        hash,
        reference.desired_config == reference.last_applied_config,
    ))
}

/// The placement's install progression: its `Progressing` condition (status, reason,
/// message) and the spec hash of its desired AddOnDeploymentConfig.
fn progression(cma: &ClusterManagementAddOn) -> Option<(String, String, String, Option<String>)> {
    let progression = cma.status.as_ref()?.install_progressions.first()?;
    let condition = progression
        .conditions
        .iter()
        .find(|c| c.type_ == "Progressing")?;
    let hash = progression
        .config_references
        .iter()
        .find(|r| r.resource == "addondeploymentconfigs")
        .and_then(|r| r.desired_config.as_ref())
        .and_then(|d| d.spec_hash.clone());
    Some((
        condition.status.clone(),
        condition.reason.clone(),
        condition.message.clone(),
        hash,
    ))
}

/// When the addon's `Progressing` condition last changed (as the hub recorded it).
fn progressing_since(mca: &ManagedClusterAddOn) -> Option<jiff::Timestamp> {
    mca.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "Progressing" && c.reason == "Completed")
        .map(|c| c.last_transition_time.0)
}

enum Seen {
    Addon(Result<Event<ManagedClusterAddOn>, watcher::Error>),
    Cma(Result<Event<ClusterManagementAddOn>, watcher::Error>),
}

/// What changed in the watched objects.
#[derive(Debug, PartialEq)]
enum Change {
    Addon,
    Cma,
}

/// One watch of the addon's ManagedClusterAddOns and one of its ClusterManagementAddOn,
/// merged, with the latest state of each.
struct Observer {
    events: BoxStream<'static, Seen>,
    addons: BTreeMap<String, ManagedClusterAddOn>,
    cma: Option<ClusterManagementAddOn>,
}

impl Observer {
    fn start(client: &kube::Client) -> Observer {
        let by_name = || watcher::Config::default().fields(&format!("metadata.name={ADDON}"));
        let addons = watcher::watcher(Api::<ManagedClusterAddOn>::all(client.clone()), by_name())
            .map(Seen::Addon);
        let cmas = watcher::watcher(
            Api::<ClusterManagementAddOn>::all(client.clone()),
            by_name(),
        )
        .map(Seen::Cma);
        Observer {
            events: futures::stream::select(addons, cmas).boxed(),
            addons: BTreeMap::new(),
            cma: None,
        }
    }

    /// The next change, in the order the server sent them.
    async fn next(&mut self) -> Change {
        loop {
            match self.events.next().await.expect("the watches ended") {
                Seen::Addon(Ok(Event::Apply(m) | Event::InitApply(m))) => {
                    self.addons.insert(m.metadata.namespace.clone().unwrap(), m);
                    return Change::Addon;
                }
                Seen::Addon(Ok(Event::Delete(m))) => {
                    self.addons.remove(m.metadata.namespace.as_deref().unwrap());
                    return Change::Addon;
                }
                Seen::Cma(Ok(Event::Apply(c) | Event::InitApply(c))) => {
                    self.cma = Some(c);
                    return Change::Cma;
                }
                Seen::Addon(Err(err)) => tracing::warn!(%err, "addon watch"),
                Seen::Cma(Err(err)) => tracing::warn!(%err, "cma watch"),
                _ => {}
            }
        }
    }

    /// The config hash cluster `name`'s addon is to run and whether it applied it.
    fn values_of(&self, name: &str) -> Option<(String, bool)> {
        self.addons.get(name).and_then(values)
    }

    /// Whether every one of `clusters` applied a config not in `old`.
    fn applied_new(&self, clusters: &[&str], old: &BTreeSet<String>) -> bool {
        clusters.iter().all(|c| {
            self.values_of(c)
                .is_some_and(|(hash, applied)| applied && !old.contains(&hash))
        })
    }

    /// Whether cluster `name` was handed a config not in `old`.
    fn handed_new(&self, name: &str, old: &BTreeSet<String>) -> bool {
        self.values_of(name)
            .is_some_and(|(hash, _)| !old.contains(&hash))
    }

    fn progression(&self) -> Option<(String, String, String, Option<String>)> {
        self.cma.as_ref().and_then(progression)
    }
}

/// Reads the addons of `clusters` afresh: none was handed a config outside `old`.
async fn assert_no_new_values(client: &kube::Client, clusters: &[&str], old: &BTreeSet<String>) {
    for cluster in clusters {
        let mca = Api::<ManagedClusterAddOn>::namespaced(client.clone(), cluster)
            .get(ADDON)
            .await
            .unwrap();
        let (hash, _) = values(&mca).unwrap();
        assert!(
            old.contains(&hash),
            "{cluster} was handed new values: {hash}"
        );
    }
}

/// Runs `body` until it returns true, failing the test after twice the scenario wait.
async fn until(what: &str, body: impl AsyncFnMut() -> bool) {
    let mut body = body;
    tokio::time::timeout(WAIT * 2, async { while !body().await {} })
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_driven_config_rollouts_go_group_by_group_soak_and_stop_past_max_failures() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, names, _agents) = ocm_e2e::fleet(dir.path(), 3).await.unwrap();
    let client = hub.admin_client();
    let stop = Shutdown::new();
    tokio::spawn(run_install_strategies(client.clone(), stop.child()));
    tokio::spawn(run_template_addons(
        client.clone(),
        MANAGER_NS.to_owned(),
        stop.child(),
    ));
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    rollouts(
        &client,
        &hub.admin_kubeconfig,
        [names[0], names[1], names[2]],
    )
    .await;
}

/// The same on a hub run by `ocm hub --kubeconfig` (its own addon controllers) over an
/// `ocm apiserver`, with clusters joined by `ocm join` processes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_driven_config_rollouts_on_a_hub_run_with_a_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let hub = ManagedApiserver::start(OCM, home);
    let client = hub.admin_client().await;
    let names = ["r1", "r2", "r3"];
    let mut joins = Vec::new();
    for name in names {
        let (join, _) = ocm_e2e::process::join_simulated(OCM, home, &hub.kubeconfig, name, &[])
            .await
            .unwrap();
        joins.push(join);
    }
    rollouts(&client, &hub.kubeconfig, names).await;
    for join in joins {
        join.stop();
    }
    hub.stop();
}

/// The scenario on a hub (admin `client`, admin kubeconfig `kc`) with the joined clusters
/// `clusters`, whose addon controllers run.
async fn rollouts(client: &kube::Client, kc: &Path, clusters: [&str; 3]) {
    let kc = kc.to_path_buf();
    ocm_e2e::create_or_keep(
        &Api::<Namespace>::all(client.clone()),
        json!({"metadata": {"name": MANAGER_NS}}),
    )
    .await
    .unwrap();
    let [first, second, third] = clusters;
    let mut seen = Observer::start(client);
    let canary = [first, second];
    let everyone = clusters;

    // The user labels the clusters into groups and applies the addon, back to back.
    kubectl_ok(
        &kc,
        &[
            "label",
            "managedcluster",
            first,
            second,
            "rollout-group=canary",
        ],
        None,
    )
    .await;
    kubectl_ok(
        &kc,
        &["label", "managedcluster", third, "rollout-group=main"],
        None,
    )
    .await;
    kubectl_ok(&kc, &["apply", "-f", "-"], Some(guide_yaml())).await;
    let mut old = BTreeSet::new();
    until(
        "the addon installed with its values everywhere",
        async || {
            seen.next().await;
            seen.applied_new(&everyone, &old)
        },
    )
    .await;
    let hello = seen.values_of(first).unwrap().0;
    assert!(
        everyone
            .iter()
            .all(|c| seen.values_of(c).unwrap().0 == hello)
    );
    old.insert(hello.clone());

    // ProgressivePerGroup with a soak: the canary group first, the main group only after
    // every canary applied the new values and the soak after the last of them passed.
    set_greeting(&kc, "hola").await;
    let mut canary_done_at = None;
    until("the new values applied group by group", async || {
        seen.next().await;
        if canary_done_at.is_none() && seen.applied_new(&canary, &old) {
            canary_done_at = canary
                .iter()
                .filter_map(|c| progressing_since(&seen.addons[*c]))
                .max();
        }
        if seen.handed_new(third, &old) {
            let done = canary_done_at
                .expect("the main group got the new values before the canary group applied them");
            let handed = jiff::Timestamp::now();
            assert!(
                handed >= done + jiff::SignedDuration::from_secs(SOAK_SECONDS),
                "the main group got the new values at {handed}, within the soak after the \
                 canary group's last success at {done}"
            );
        }
        seen.applied_new(&everyone, &old)
    })
    .await;
    let hola = seen.values_of(third).unwrap().0;
    until("a completed install progression", async || {
        let completed = seen.progression().is_some_and(|(_, reason, _, hash)| {
            reason == "Completed" && hash.as_ref() == Some(&hola)
        });
        if !completed {
            seen.next().await;
        }
        completed
    })
    .await;
    old.insert(hola);

    // progressDeadline and maxFailures: a cluster whose agents never run joins the canary
    // group; it times out, the rollout stops before the main group and says so, and goes on
    // once the cluster leaves the placement.
    ocm_e2e::accepted_cluster_without_agent(client, "c09")
        .await
        .unwrap();
    kubectl_ok(
        &kc,
        &[
            "patch",
            "placement",
            "greeter",
            "-n",
            "addons",
            "--type",
            "merge",
            "-p",
            TOLERATE_UNREACHABLE,
        ],
        None,
    )
    .await;
    let (ok, _, err) = patch_strategy(
        &kc,
        json!({"type": "ProgressivePerGroup",
               "progressivePerGroup": {"progressDeadline": "3s", "maxFailures": 0}}),
    )
    .await;
    assert!(ok, "{err}");
    kubectl_ok(
        &kc,
        &["label", "managedcluster", "c09", "rollout-group=canary"],
        None,
    )
    .await;
    set_greeting(&kc, "bonjour").await;
    let mut released = false;
    let mut stopped_message = None;
    until(
        "the rollout stopped at the timed-out cluster, then finished",
        async || {
            let change = seen.next().await;
            if seen.handed_new(third, &old) {
                assert!(
                    released,
                    "the main group got the new values while a canary had timed out"
                );
            }
            if change == Change::Cma && !released {
                let failed = seen.progression().filter(|(status, reason, message, _)| {
                    status == "True" && reason == "Failed" && !message.contains(" 0 timeout")
                });
                if let Some((_, _, message, _)) = failed {
                    assert_no_new_values(client, &[third], &old).await;
                    stopped_message = Some(message);
                    kubectl_ok(
                        &kc,
                        &["label", "managedcluster", "c09", "rollout-group-"],
                        None,
                    )
                    .await;
                    released = true;
                }
            }
            released && seen.applied_new(&everyone, &old)
        },
    )
    .await;
    let message = stopped_message.unwrap();
    assert!(message.contains("timeout"), "{message}");
    old.insert(seen.values_of(third).unwrap().0);

    // Invalid values: what the schema forbids is refused and changes nothing.
    for (rollout, field) in [
        (
            json!({"type": "Progressive", "progressive": {"maxConcurrency": "150%"}}),
            "maxConcurrency",
        ),
        (
            json!({"type": "Progressive", "progressive": {"maxConcurrency": "abc"}}),
            "maxConcurrency",
        ),
        (
            json!({"type": "ProgressivePerGroup",
                   "progressivePerGroup": {"progressDeadline": "soon"}}),
            "progressDeadline",
        ),
        (
            json!({"type": "ProgressivePerGroup",
                   "progressivePerGroup": {"maxFailures": "-1"}}),
            "maxFailures",
        ),
    ] {
        let (ok, _, err) = patch_strategy(&kc, rollout.clone()).await;
        assert!(!ok, "{rollout} was accepted");
        assert!(
            err.contains(field) && err.contains("Invalid"),
            "{rollout}: {err}"
        );
    }
    let strategy = kubectl_ok(
        &kc,
        &[
            "get",
            "clustermanagementaddon",
            ADDON,
            "-o",
            "jsonpath={.spec.installStrategy.placements[0].rolloutStrategy}",
        ],
        None,
    )
    .await;
    let strategy: serde_json::Value = serde_json::from_str(&strategy).unwrap();
    assert_eq!(strategy["progressivePerGroup"]["progressDeadline"], "3s");

    // A minSuccessTime that is no duration (the schema takes any string, as upstream's): the
    // install progression names it and no cluster gets the new values until it is fixed.
    let (ok, _, err) = patch_strategy(
        &kc,
        json!({"type": "ProgressivePerGroup",
               "progressivePerGroup": {"minSuccessTime": "soon"}}),
    )
    .await;
    assert!(ok, "{err}");
    set_greeting(&kc, "ciao").await;
    let mut fixed = false;
    until(
        "the invalid strategy named, then the fixed one rolled out",
        async || {
            let change = seen.next().await;
            for cluster in everyone {
                if seen.handed_new(cluster, &old) {
                    assert!(fixed, "{cluster} got new values under an invalid strategy");
                }
            }
            if change == Change::Cma && !fixed {
                let named = seen
                    .progression()
                    .filter(|(status, reason, message, hash)| {
                        status == "False"
                            && reason == "Failed"
                            && message.contains("minSuccessTime")
                            && hash.as_ref().is_some_and(|h| !old.contains(h))
                    });
                if named.is_some() {
                    assert_no_new_values(client, &everyone, &old).await;
                    let (ok, _, err) = patch_strategy(
                        &kc,
                        json!({"type": "ProgressivePerGroup",
                           "progressivePerGroup": {"minSuccessTime": "0s"}}),
                    )
                    .await;
                    assert!(ok, "{err}");
                    fixed = true;
                }
            }
            fixed && seen.applied_new(&everyone, &old)
        },
    )
    .await;
}
