//! The addon framework end to end on a fleet of three simulated clusters with their
//! registration and work agents: a ClusterManagementAddOn installed through a Placements
//! strategy gets a ManagedClusterAddOn per selected cluster, its manifests arrive as works and
//! land on the clusters, Deployment availability makes it Available; a cluster leaving the
//! placement loses its addon, its works and the agent's objects. Bad input ends in a condition
//! naming the problem and no works.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::WatchStreamExt;
use ocm_addon_framework::manager::{AddonManager, run_install_strategies};
use ocm_addon_framework::{AddonConfigs, AddonError, AddonOptions, AgentAddon, HealthProber};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta1::Placement;
use ocm_api::work::v1::ManifestWork;
use ocm_e2e::addon_condition as condition;
use ocm_e2e::process::{ManagedApiserver, join_simulated};
use ocm_e2e::{bind_namespace, wait_for, wait_gone};
use serde_json::{Value, json};

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");

/// A small addon: a namespace, a Deployment and a ConfigMap naming the cluster.
struct Hello {
    options: AddonOptions,
}

#[async_trait::async_trait]
impl AgentAddon for Hello {
    fn options(&self) -> &AddonOptions {
        &self.options
    }

    async fn manifests(
        &self,
        cluster: &ManagedCluster,
        _addon: &ManagedClusterAddOn,
        configs: &AddonConfigs,
    ) -> Result<Vec<Value>, AddonError> {
        let name = cluster.metadata.name.clone().unwrap_or_default();
        let greeting = configs.variable("greeting").unwrap_or("hello");
        Ok(vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "hello-agent"}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "hello-agent", "namespace": "hello-agent"},
                   "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "hello"}},
                            "template": {"metadata": {"labels": {"app": "hello"}},
                                         "spec": {"containers": [{"name": "agent", "image": "hello:1"}]}}}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "hello-config", "namespace": "hello-agent"},
                   "data": {"cluster": name, "greeting": greeting}}),
            // Runs when the addon is removed, before its agent goes.
            json!({"apiVersion": "batch/v1", "kind": "Job",
                   "metadata": {"name": "hello-cleanup", "namespace": "hello-agent",
                                "annotations": {"addon.open-cluster-management.io/addon-pre-delete": ""}},
                   "spec": {"template": {"spec": {"restartPolicy": "Never",
                            "containers": [{"name": "cleanup", "image": "hello:1"}]}}}}),
        ])
    }
}

/// An addon whose manifests cannot be built.
struct Broken {
    options: AddonOptions,
}

#[async_trait::async_trait]
impl AgentAddon for Broken {
    fn options(&self) -> &AddonOptions {
        &self.options
    }

    async fn manifests(
        &self,
        _cluster: &ManagedCluster,
        _addon: &ManagedClusterAddOn,
        _configs: &AddonConfigs,
    ) -> Result<Vec<Value>, AddonError> {
        Err(AddonError::new("the image registry is not configured"))
    }
}

/// An addon of one ConfigMap holding its configured greeting, deployed only once it is
/// configured (`config_check_enabled`).
struct Greeter {
    options: AddonOptions,
}

#[async_trait::async_trait]
impl AgentAddon for Greeter {
    fn options(&self) -> &AddonOptions {
        &self.options
    }

    async fn manifests(
        &self,
        _cluster: &ManagedCluster,
        _addon: &ManagedClusterAddOn,
        configs: &AddonConfigs,
    ) -> Result<Vec<Value>, AddonError> {
        let greeting = configs.variable("greeting").unwrap_or("hello");
        Ok(vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "greeter-agent"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "greeter-config", "namespace": "greeter-agent"},
                   "data": {"greeting": greeting}}),
        ])
    }
}

/// The `greeting` of the ConfigMap a work carries.
fn work_greeting(work: &ManifestWork) -> Option<String> {
    let work = serde_json::to_value(work).ok()?;
    work.pointer("/spec/workload/manifests")?
        .as_array()?
        .iter()
        .find(|m| m["kind"] == "ConfigMap")?
        .pointer("/data/greeting")?
        .as_str()
        .map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_addon_installed_by_placement_reaches_available_and_follows_the_placement() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, names, agents) = ocm_e2e::fleet(dir.path(), 3).await.unwrap();
    let client = hub.admin_client();
    let apply = PatchParams::apply("addon-test").force();
    let clusters: Api<ManagedCluster> = Api::all(client.clone());
    for name in &names {
        clusters
            .patch(
                name,
                &apply,
                &Patch::Apply(json!({
                "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
                "metadata": {"name": name, "labels": {"hello": "yes"}}})),
            )
            .await
            .unwrap();
    }
    bind_namespace(&client, "addons", "default").await.unwrap();
    let placements: Api<Placement> = Api::namespaced(client.clone(), "addons");
    placements
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "Placement",
            "metadata": {"name": "hello", "namespace": "addons"},
            "spec": {"predicates": [{"requiredClusterSelector": {
                "labelSelector": {"matchLabels": {"hello": "yes"}}}}]}}))
            .unwrap(),
        )
        .await
        .unwrap();
    let configs: Api<ocm_api::addon::v1alpha1::AddOnDeploymentConfig> =
        Api::namespaced(client.clone(), "addons");
    let config = |greeting: &str| {
        serde_json::from_value::<ocm_api::addon::v1alpha1::AddOnDeploymentConfig>(json!({
            "apiVersion": "addon.open-cluster-management.io/v1alpha1",
            "kind": "AddOnDeploymentConfig",
            "metadata": {"name": "hello-config", "namespace": "addons"},
            "spec": {"customizedVariables": [{"name": "greeting", "value": greeting}]}}))
        .unwrap()
    };
    configs
        .create(&PostParams::default(), &config("hi"))
        .await
        .unwrap();
    let cmas: Api<ocm_api::addon::v1beta1::ClusterManagementAddOn> = Api::all(client.clone());
    // An addon configured by hello-config, installed through the placement one cluster at a
    // time.
    let rolled_out = |name: &str| {
        serde_json::from_value::<ocm_api::addon::v1beta1::ClusterManagementAddOn>(json!({
        "apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ClusterManagementAddOn",
        "metadata": {"name": name},
        "spec": {
            "defaultConfigs": [{"group": "addon.open-cluster-management.io",
                                "resource": "addondeploymentconfigs",
                                "namespace": "addons", "name": "hello-config"}],
            "installStrategy": {"type": "Placements",
                 "placements": [{"namespace": "addons", "name": "hello",
                                 "rolloutStrategy": {"type": "Progressive",
                                                     "progressive": {"maxConcurrency": 1}}}]}}}))
        .unwrap()
    };
    cmas.create(&PostParams::default(), &rolled_out("hello"))
        .await
        .unwrap();

    let stop = ocm_runtime::shutdown::Shutdown::new();
    tokio::spawn(run_install_strategies(client.clone(), stop.child()));
    let hello = Hello {
        options: AddonOptions {
            health: HealthProber::DeploymentAvailability,
            install_namespace: Some("hello-agent".into()),
            supported_configs: vec![(
                "addon.open-cluster-management.io".into(),
                "addondeploymentconfigs".into(),
            )],
            ..AddonOptions::new("hello")
        },
    };
    let broken = Broken {
        options: AddonOptions {
            health: HealthProber::DeploymentAvailability,
            ..AddonOptions::new("broken")
        },
    };
    let greeter = Greeter {
        options: AddonOptions {
            health: HealthProber::None,
            install_namespace: Some("greeter-agent".into()),
            supported_configs: vec![(
                "addon.open-cluster-management.io".into(),
                "addondeploymentconfigs".into(),
            )],
            config_check_enabled: true,
            ..AddonOptions::new("greeter")
        },
    };
    tokio::spawn(
        AddonManager::new(client.clone())
            .with_addon(Arc::new(hello))
            .with_addon(Arc::new(broken))
            .with_addon(Arc::new(greeter))
            .run(stop.child()),
    );

    // Installed and available everywhere the placement selects.
    for name in &names {
        let mcas: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), name);
        let mca = wait_for(&mcas, "hello", "hello Available", |m| {
            condition(m, "Available").is_some_and(|(s, _, _)| s == "True")
        })
        .await
        .unwrap();
        assert_eq!(condition(&mca, "Available").unwrap().1, "ProbeAvailable");
        assert_eq!(condition(&mca, "ManifestApplied").unwrap().0, "True");
        let status = mca.status.clone().unwrap();
        assert_eq!(status.namespace, "hello-agent");
        assert_eq!(
            status
                .health_check
                .map(|h| serde_json::to_value(h).unwrap()["mode"].clone()),
            Some(json!("Customized"))
        );
        let works: Api<ManifestWork> = Api::namespaced(client.clone(), name);
        let work = works.get("addon-hello-deploy-0").await.unwrap();
        assert_eq!(
            work.metadata.owner_references.unwrap()[0].uid,
            mca.metadata.uid.clone().unwrap()
        );
        let spoke = ocm_e2e::simulated_spoke(&hub, name).await.unwrap();
        let cm: Api<ConfigMap> = Api::namespaced(spoke, "hello-agent");
        // The agent may first run without its config (the addon opts into no config check,
        // as upstream's default): its ConfigMap then says "hello" until the config reaches it.
        let cm = wait_for(
            &cm,
            "hello-config",
            "the addon's ConfigMap on the cluster, with the config's greeting",
            |cm| {
                cm.data
                    .as_ref()
                    .is_some_and(|d| d.get("greeting").map(String::as_str) == Some("hi"))
            },
        )
        .await
        .unwrap();
        let data = cm.data.unwrap();
        assert_eq!(data["cluster"], *name);
        assert_eq!(data["greeting"], "hi");
    }

    // A config change rolls out one cluster at a time (Progressive, maxConcurrency 1): the
    // spec hashes change, and no two addons ever run an unapplied new config together.
    let all_addons: Api<ManagedClusterAddOn> = Api::all(client.clone());
    let mut events = std::pin::pin!(kube::runtime::watcher(
        all_addons.clone(),
        kube::runtime::watcher::Config::default().fields("metadata.name=hello"),
    ));
    use futures::StreamExt;
    // Drain the initial list.
    let mut seen = std::collections::BTreeMap::new();
    while let Some(event) = events.next().await {
        match event.unwrap() {
            kube::runtime::watcher::Event::InitApply(m) => {
                seen.insert(m.metadata.namespace.clone().unwrap(), m);
            }
            kube::runtime::watcher::Event::InitDone => break,
            _ => {}
        }
    }
    let old_hash = |m: &ManagedClusterAddOn| {
        m.status
            .as_ref()
            .and_then(|s| s.config_references.first())
            .and_then(|r| r.desired_config.as_ref())
            .and_then(|d| d.spec_hash.clone())
    };
    let before = old_hash(&seen["c01"]).unwrap();
    configs
        .replace("hello-config", &PostParams::default(), &{
            let mut c = configs.get("hello-config").await.unwrap();
            c.spec = config("hola").spec;
            c
        })
        .await
        .unwrap();
    let in_flight = |m: &ManagedClusterAddOn| {
        m.status
            .as_ref()
            .and_then(|s| s.config_references.first())
            .is_some_and(|r| {
                r.desired_config.as_ref().and_then(|d| d.spec_hash.as_ref()) != Some(&before)
                    && r.desired_config != r.last_applied_config
            })
    };
    let done = |m: &ManagedClusterAddOn| {
        m.status
            .as_ref()
            .and_then(|s| s.config_references.first())
            .is_some_and(|r| {
                r.desired_config.as_ref().and_then(|d| d.spec_hash.as_ref()) != Some(&before)
                    && r.desired_config == r.last_applied_config
            })
    };
    let configured = |m: &ManagedClusterAddOn| condition(m, "Configured").map(|(s, r, _)| (s, r));
    let is_configured = |m: &ManagedClusterAddOn| {
        configured(m) == Some(("True".into(), "ConfigurationsConfigured".into()))
    };
    let mut max_in_flight = 0;
    let mut max_held_back = 0;
    tokio::time::timeout(ocm_e2e::WAIT, async {
        while let Some(event) = events.next().await {
            if let kube::runtime::watcher::Event::Apply(m) = event.unwrap() {
                seen.insert(m.metadata.namespace.clone().unwrap(), m);
            }
            max_in_flight = max_in_flight.max(seen.values().filter(|m| in_flight(m)).count());
            // Handed the new config: Configured in the same write.
            for m in seen.values().filter(|m| in_flight(m)) {
                assert!(is_configured(m), "{:?}", m.status);
            }
            // Held back by maxConcurrency: not configured yet.
            let held_back = seen.values().filter(|m| {
                old_hash(m).as_ref() == Some(&before)
                    && configured(m) == Some(("False".into(), "ConfigurationsNotConfigured".into()))
            });
            max_held_back = max_held_back.max(held_back.count());
            if seen.len() == names.len() && seen.values().all(done) {
                break;
            }
        }
    })
    .await
    .expect("every addon applied the new config");
    assert_eq!(
        max_in_flight, 1,
        "more than one cluster ran an unapplied new config at once"
    );
    assert_eq!(
        max_held_back,
        names.len() - 1,
        "the clusters waiting for the rollout were not marked ConfigurationsNotConfigured"
    );
    assert!(seen.values().all(is_configured), "{seen:?}");
    for name in &names {
        let spoke = ocm_e2e::simulated_spoke(&hub, name).await.unwrap();
        let cm: Api<ConfigMap> = Api::namespaced(spoke, "hello-agent");
        wait_for(&cm, "hello-config", "the new greeting", |c| {
            c.data.as_ref().is_some_and(|d| d["greeting"] == "hola")
        })
        .await
        .unwrap();
        let works: Api<ManifestWork> = Api::namespaced(client.clone(), name);
        let work = works.get("addon-hello-deploy-0").await.unwrap();
        let annotation =
            work.metadata.annotations.unwrap()["open-cluster-management.io/config-spec-hash"]
                .clone();
        assert!(
            annotation.contains(
                "addondeploymentconfigs.addon.open-cluster-management.io/addons/hello-config"
            ),
            "{annotation}"
        );
        assert!(!annotation.contains(&before), "{annotation}");
    }
    // The placement's install progression: completed, the new config applied everywhere.
    let cma = wait_for(&cmas, "hello", "a completed install progression", |c| {
        c.status
            .as_ref()
            .and_then(|s| s.install_progressions.first())
            .is_some_and(|p| {
                p.conditions
                    .iter()
                    .any(|c| c.type_ == "Progressing" && c.reason == "Completed")
                    && p.config_references.first().is_some_and(|r| {
                        r.last_applied_config == r.desired_config
                            && r.desired_config.as_ref().and_then(|d| d.spec_hash.as_ref())
                                != Some(&before)
                    })
            })
    })
    .await
    .unwrap();
    let progression = &cma.status.unwrap().install_progressions[0];
    assert_eq!(
        (progression.namespace.as_str(), progression.name.as_str()),
        ("addons", "hello")
    );

    // A writer of the status that replaces the conditions with its own (as an addon agent
    // might) drops `Configured`: the hub puts it back, without waiting for a full pass.
    let c01: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), "c01");
    loop {
        let mut mca = c01.get("hello").await.unwrap();
        let status = mca.status.as_mut().unwrap();
        status.conditions.retain(|c| c.type_ != "Configured");
        match c01
            .replace_status("hello", &PostParams::default(), &mca)
            .await
        {
            Ok(written) => {
                assert_eq!(configured(&written), None);
                break;
            }
            // The agent wrote meanwhile: again on the newer version.
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(err) => panic!("{err}"),
        }
    }
    wait_for(&c01, "hello", "Configured put back", is_configured)
        .await
        .unwrap();

    // c03 leaves the placement: its pre-delete hook Job runs first, then its addon, works and
    // the agent's objects go.
    let mca = Api::<ManagedClusterAddOn>::namespaced(client.clone(), "c03")
        .get("hello")
        .await
        .unwrap();
    assert!(
        mca.metadata
            .finalizers
            .unwrap_or_default()
            .contains(&"addon.open-cluster-management.io/addon-pre-delete".to_owned())
    );
    let c03 = ocm_e2e::simulated_spoke(&hub, "c03").await.unwrap();
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = Api::namespaced(c03, "hello-agent");
    let hook_ran = tokio::spawn(async move {
        wait_for(&jobs, "hello-cleanup", "the pre-delete Job on c03", |job| {
            job.status.as_ref().and_then(|s| s.succeeded).unwrap_or(0) >= 1
        })
        .await
        .is_ok()
    });
    clusters
        .patch(
            "c03",
            &apply,
            &Patch::Apply(json!({
            "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
            "metadata": {"name": "c03", "labels": {}}})),
        )
        .await
        .unwrap();
    let mcas: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), "c03");
    wait_gone(&mcas, "hello").await.unwrap();
    assert!(
        hook_ran.await.unwrap(),
        "the pre-delete hook Job never completed on c03"
    );
    let works: Api<ManifestWork> = Api::namespaced(client.clone(), "c03");
    wait_gone(&works, "addon-hello-deploy-0").await.unwrap();
    let spoke = ocm_e2e::simulated_spoke(&hub, "c03").await.unwrap();
    wait_gone(
        &Api::<ConfigMap>::namespaced(spoke, "hello-agent"),
        "hello-config",
    )
    .await
    .unwrap();
    let still: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), "c01");
    assert!(still.get_opt("hello").await.unwrap().is_some());

    // Bad input: an addon outside a cluster namespace, an addon whose manifests fail.
    let ns: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    ns.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
        "metadata": {"name": "not-a-cluster"}}))
        .unwrap(),
    )
    .await
    .unwrap();
    let stray: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), "not-a-cluster");
    stray
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
            "apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ManagedClusterAddOn",
            "metadata": {"name": "hello", "namespace": "not-a-cluster"}, "spec": {}}))
            .unwrap(),
        )
        .await
        .unwrap();
    let stray = wait_for(&stray, "hello", "a condition on the stray addon", |m| {
        condition(m, "ManifestApplied").is_some()
    })
    .await
    .unwrap();
    let (status, reason, message) = condition(&stray, "ManifestApplied").unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "ManagedClusterNotFound")
    );
    assert!(message.contains("not a cluster namespace"), "{message}");

    let c01: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), "c01");
    c01.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
        "apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ManagedClusterAddOn",
        "metadata": {"name": "broken", "namespace": "c01"}, "spec": {}}))
        .unwrap(),
    )
    .await
    .unwrap();
    let broken = wait_for(&c01, "broken", "a condition on the broken addon", |m| {
        condition(m, "ManifestApplied").is_some()
    })
    .await
    .unwrap();
    let (status, reason, message) = condition(&broken, "ManifestApplied").unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "AddonManifestAppliedFailed")
    );
    assert!(
        message.contains("the image registry is not configured"),
        "{message}"
    );
    let works: Api<ManifestWork> = Api::namespaced(client.clone(), "c01");
    let broken_works = works
        .list(&ListParams::default().labels("open-cluster-management.io/addon-name=broken"))
        .await
        .unwrap();
    assert!(broken_works.items.is_empty());

    // A config of a kind hello does not read: said so on c02's addon; gone, all is well again.
    let c02: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), "c02");
    let widgets = |configs: Value| Patch::Merge(json!({"spec": {"configs": configs}}));
    c02.patch(
        "hello",
        &PatchParams::default(),
        &widgets(json!([{"group": "example.com", "resource": "widgets", "name": "w"}])),
    )
    .await
    .unwrap();
    let unsupported = wait_for(&c02, "hello", "the unsupported config named", |m| {
        condition(m, "Progressing").is_some_and(|(_, r, _)| r == "ConfigurationUnsupported")
    })
    .await
    .unwrap();
    let (status, _, message) = condition(&unsupported, "Progressing").unwrap();
    assert_eq!(status, "False");
    assert!(message.contains("widgets.example.com"), "{message}");
    c02.patch("hello", &PatchParams::default(), &widgets(json!([])))
        .await
        .unwrap();
    wait_for(&c02, "hello", "back to a supported config", |m| {
        condition(m, "Progressing").is_some_and(|(_, r, _)| r == "Completed")
    })
    .await
    .unwrap();

    // An addon this hub does not know: said so on the addon, until it becomes known.
    c01.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
        "apiVersion": "addon.open-cluster-management.io/v1beta1", "kind": "ManagedClusterAddOn",
        "metadata": {"name": "nobody", "namespace": "c01"}, "spec": {}}))
        .unwrap(),
    )
    .await
    .unwrap();
    // Said as a Warning Event on the addon (not a condition: upstream's clients expect the
    // first condition of such an addon to be the agent's Available).
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), "c01");
    let told = tokio::time::timeout(
        ocm_e2e::WAIT,
        kube::runtime::watcher(events, kube::runtime::watcher::Config::default())
            .applied_objects()
            .try_filter(|e| {
                futures::future::ready(
                    e.reason.as_deref() == Some("ClusterManagementAddOnNotFound")
                        && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("nobody"),
                )
            })
            .boxed()
            .try_next(),
    )
    .await
    .unwrap()
    .unwrap()
    .unwrap();
    assert_eq!(told.type_.as_deref(), Some("Warning"));
    assert!(
        told.note
            .as_deref()
            .unwrap_or_default()
            .contains("no ClusterManagementAddOn nobody"),
        "{told:?}"
    );
    let nobody = c01.get("nobody").await.unwrap();
    assert!(condition(&nobody, "Configured").is_none());

    // Config check: an addon that waits for Configured gets its first ManifestWork on a
    // cluster only once its configs are handed out there (one cluster at a time), rendered
    // with them from the start.
    let greeter_works: Api<ManifestWork> = Api::all(client.clone());
    let mut work_events = std::pin::pin!(kube::runtime::watcher(
        greeter_works,
        kube::runtime::watcher::Config::default()
            .labels("open-cluster-management.io/addon-name=greeter"),
    ));
    while let Some(event) = work_events.next().await {
        if let kube::runtime::watcher::Event::InitDone = event.unwrap() {
            break;
        }
    }
    cmas.create(&PostParams::default(), &rolled_out("greeter"))
        .await
        .unwrap();
    let mut deployed = std::collections::BTreeSet::new();
    tokio::time::timeout(ocm_e2e::WAIT, async {
        while deployed.len() < 2 {
            let Some(event) = work_events.next().await else {
                break;
            };
            let kube::runtime::watcher::Event::Apply(work) = event.unwrap() else {
                continue;
            };
            let cluster = work.metadata.namespace.clone().unwrap();
            if !deployed.insert(cluster.clone()) {
                continue;
            }
            assert_eq!(work_greeting(&work).as_deref(), Some("hola"), "{work:?}");
            let mca = Api::<ManagedClusterAddOn>::namespaced(client.clone(), &cluster)
                .get("greeter")
                .await
                .unwrap();
            assert!(is_configured(&mca), "{:?}", mca.status);
        }
    })
    .await
    .expect("the greeter addon deployed on both clusters");
    assert_eq!(
        deployed,
        ["c01", "c02"].map(str::to_owned).into(),
        "the greeter's works"
    );

    stop.cancel();
    agents.cancel();
    hub.stop().await;
}

/// An addon of one Deployment whose pods need a node labelled `node_selector`.
struct Pinned {
    options: AddonOptions,
    node_selector: Value,
}

#[async_trait::async_trait]
impl AgentAddon for Pinned {
    fn options(&self) -> &AddonOptions {
        &self.options
    }

    async fn manifests(
        &self,
        _cluster: &ManagedCluster,
        _addon: &ManagedClusterAddOn,
        _configs: &AddonConfigs,
    ) -> Result<Vec<Value>, AddonError> {
        let ns = format!("{}-agent", self.options.name);
        Ok(vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "agent", "namespace": ns},
                   "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "agent"}},
                            "template": {"metadata": {"labels": {"app": "agent"}},
                                         "spec": {"nodeSelector": self.node_selector,
                                                  "containers": [{"name": "agent", "image": "agent:1"}]}}}}),
        ])
    }
}

/// A Work prober whose check wants at least `wanted` ready replicas of `<addon>-agent/agent`.
fn ready_at_least(addon: &str, wanted: i64) -> HealthProber {
    HealthProber::Work {
        probes: vec![json!({
            "resourceIdentifier": {"group": "apps", "resource": "deployments",
                                   "namespace": format!("{addon}-agent"), "name": "agent"},
            "feedbackRules": [{"type": "WellKnownStatus"}]})],
        check: Some(ocm_addon_framework::WorkHealthCheck::new(
            move |_, values| {
                let ready = values
                    .iter()
                    .find(|(name, _)| name == "ReadyReplicas")
                    .and_then(|(_, v)| v["integer"].as_i64())
                    .unwrap_or(0);
                if ready >= wanted {
                    Ok(())
                } else {
                    Err(format!("{ready} of {wanted} replicas ready"))
                }
            },
        )),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_probes_and_deployment_availability_judge_addons_on_simulated_clusters() {
    let dir = tempfile::tempdir().unwrap();
    let (hub, names, _agents) = ocm_e2e::fleet(dir.path(), 1).await.unwrap();
    let spoke = ocm_e2e::simulated_spoke(&hub, &names[0]).await.unwrap();
    work_probes(hub.admin_client(), &names[0], spoke).await;
}

/// The same on a plain `ocm apiserver` run by `ocm hub --kubeconfig`, the cluster joined by
/// `ocm join --simulated` (a process).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_probes_judge_addons_on_a_hub_run_with_a_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let hub = ManagedApiserver::start(OCM, home);
    let client = hub.admin_client().await;
    let (join, spoke) = join_simulated(OCM, home, &hub.kubeconfig, "p1", &[])
        .await
        .unwrap();
    work_probes(client, "p1", spoke).await;
    join.stop();
    hub.stop();
}

/// Three addons on `cluster` (whose own API server `spoke` serves), judged by a Work prober
/// with a custom check or by their Deployment's availability: one available, one whose pods
/// fit no node, one whose check wants more ready replicas than run.
async fn work_probes(client: kube::Client, cluster: &str, spoke: kube::Client) {
    let cluster = cluster.to_owned();
    let cmas: Api<ocm_api::addon::v1beta1::ClusterManagementAddOn> = Api::all(client.clone());
    let mcas: Api<ManagedClusterAddOn> = Api::namespaced(client.clone(), &cluster);
    let addons = [
        // Runs, and its check accepts one ready replica.
        ("runs", ready_at_least("runs", 1), json!({})),
        // Its pods need a node no node is: never available.
        (
            "stuck",
            HealthProber::DeploymentAvailability,
            json!({"disktype": "nvme"}),
        ),
        // Runs, but its check wants two ready replicas.
        ("strict", ready_at_least("strict", 2), json!({})),
    ];
    let mut manager = AddonManager::new(client.clone());
    for (name, health, node_selector) in addons {
        cmas.create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "addon.open-cluster-management.io/v1beta1",
                "kind": "ClusterManagementAddOn", "metadata": {"name": name}, "spec": {}}))
            .unwrap(),
        )
        .await
        .unwrap();
        mcas.create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "addon.open-cluster-management.io/v1beta1",
                "kind": "ManagedClusterAddOn",
                "metadata": {"name": name, "namespace": cluster}, "spec": {}}))
            .unwrap(),
        )
        .await
        .unwrap();
        manager = manager.with_addon(Arc::new(Pinned {
            options: AddonOptions {
                health,
                install_namespace: Some(format!("{name}-agent")),
                ..AddonOptions::new(name)
            },
            node_selector,
        }));
    }
    let stop = ocm_runtime::shutdown::Shutdown::new();
    tokio::spawn(manager.run(stop.child()));

    let judged = |name: &'static str, status: &'static str| {
        let mcas = mcas.clone();
        async move {
            let mca = wait_for(&mcas, name, "a health judgement", move |m| {
                condition(m, "Available").is_some_and(|(s, _, _)| s == status)
            })
            .await
            .unwrap();
            condition(&mca, "Available").unwrap()
        }
    };
    let (_, reason, _) = judged("runs", "True").await;
    assert_eq!(reason, "ProbeAvailable");
    let (_, reason, message) = judged("stuck", "False").await;
    assert_eq!(reason, "ProbeUnavailable");
    assert!(
        message.contains("no available replicas of deployments stuck-agent/agent"),
        "{message}"
    );
    let (_, reason, message) = judged("strict", "False").await;
    assert_eq!(reason, "ProbeUnavailable");
    assert!(message.contains("1 of 2 replicas ready"), "{message}");
    // The stuck Deployment is what its cluster reports.
    let deployment =
        Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(spoke, "stuck-agent")
            .get("agent")
            .await
            .unwrap();
    let status = deployment.status.unwrap();
    assert_eq!(status.unavailable_replicas, Some(1));
    assert_eq!(status.available_replicas, None);
    stop.cancel();
}
