//! ClusterProfiles (SIG-Multicluster's Cluster Inventory API) end to end, on the embedded hub
//! and on a hub run by `ocm hub --kubeconfig` against a plain API server: three clusters in two
//! sets bound into two namespaces get the profiles upstream OCM would make, kept in line with
//! the clusters' claims, availability and version and removed when a cluster or binding goes;
//! the cluster-proxy publishes itself as their access provider, and a consumer following the
//! access protocol — `ocm clusterprofile kubeconfig`, then real kubectl running
//! `ocm clusterprofile credentials` as its exec plugin — lists the nodes of its cluster, while
//! one without `managedclusters/proxy` is refused.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Node, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::{reflector, watcher};
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta2::{ManagedClusterSet, ManagedClusterSetBinding};
use ocm_api::multicluster::v1alpha1::ClusterProfile;
use ocm_e2e::WAIT;
use ocm_e2e::process::{ManagedApiserver, run_ocm};
use ocm_runtime::shutdown::Shutdown;
use serde_json::json;

const OCM: &str = env!("CARGO_BIN_EXE_ocm-e2e-ocm");
const CLUSTERSET_LABEL: &str = "cluster.open-cluster-management.io/clusterset";

use ocm_e2e::create_or_keep as create;

/// Waits (watching every ClusterProfile, up to [`WAIT`]) until `done` holds for the OCM
/// profiles, as `namespace/name` keys, and the profiles themselves.
async fn wait_profiles(
    admin: &kube::Client,
    what: &str,
    done: impl Fn(&BTreeSet<String>, &[Arc<ClusterProfile>]) -> bool,
) -> anyhow::Result<Vec<Arc<ClusterProfile>>> {
    let (store, writer) = reflector::store();
    let mut events = reflector(
        writer,
        watcher(
            Api::<ClusterProfile>::all(admin.clone()),
            watcher::Config::default(),
        ),
    )
    .boxed();
    let mut last = BTreeSet::new();
    let mut listed = false;
    let result = tokio::time::timeout(WAIT, async {
        while let Some(event) = events.next().await {
            if matches!(event?, watcher::Event::InitDone) {
                listed = true;
            }
            if !listed {
                continue;
            }
            let profiles = store.state();
            let keys: BTreeSet<String> = profiles
                .iter()
                .filter(|p| {
                    p.metadata
                        .labels
                        .as_ref()
                        .is_some_and(|l| l.contains_key("x-k8s.io/cluster-manager"))
                })
                .map(|p| {
                    format!(
                        "{}/{}",
                        p.metadata.namespace.as_deref().unwrap_or_default(),
                        p.metadata.name.as_deref().unwrap_or_default()
                    )
                })
                .collect();
            if done(&keys, &profiles) {
                return Ok::<_, anyhow::Error>(profiles);
            }
            last = keys;
        }
        bail!("the watch ended")
    })
    .await;
    match result {
        Ok(r) => r,
        Err(_) => bail!("timed out waiting for {what}; OCM profiles last seen: {last:?}"),
    }
}

fn find<'a>(
    profiles: &'a [Arc<ClusterProfile>],
    ns: &str,
    name: &str,
) -> Option<&'a ClusterProfile> {
    profiles
        .iter()
        .find(|p| {
            p.metadata.namespace.as_deref() == Some(ns) && p.metadata.name.as_deref() == Some(name)
        })
        .map(|p| &**p)
}

fn keys(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// The profile's condition of `type_` as (status, reason).
fn condition(profile: &ClusterProfile, type_: &str) -> Option<(String, String)> {
    profile
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone()))
}

fn property(profile: &ClusterProfile, name: &str) -> Option<String> {
    profile
        .status
        .as_ref()?
        .properties
        .iter()
        .find(|p| p.name == name)
        .map(|p| p.value.clone())
}

/// Sets `east` = {c1, c2} and `west` = {c3}; `team-a` binds both, `team-b` binds `west`.
async fn arrange_sets(admin: &kube::Client, clusters: &[String]) -> anyhow::Result<()> {
    for set in ["east", "west"] {
        create(
            &Api::<ManagedClusterSet>::all(admin.clone()),
            json!({"metadata": {"name": set}, "spec": {}}),
        )
        .await?;
    }
    let mc: Api<ManagedCluster> = Api::all(admin.clone());
    for (cluster, set) in clusters.iter().zip(["east", "east", "west"]) {
        mc.patch(
            cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {CLUSTERSET_LABEL: set}}})),
        )
        .await?;
    }
    for (ns, sets) in [("team-a", &["east", "west"][..]), ("team-b", &["west"][..])] {
        create(
            &Api::<Namespace>::all(admin.clone()),
            json!({"metadata": {"name": ns}}),
        )
        .await?;
        for set in sets {
            create(
                &Api::<ManagedClusterSetBinding>::namespaced(admin.clone(), ns),
                json!({"metadata": {"name": set, "namespace": ns}, "spec": {"clusterSet": set}}),
            )
            .await?;
        }
    }
    Ok(())
}

/// The profiles appear where upstream puts them, as upstream makes them; a foreign profile
/// is left alone.
async fn profiles_are_made_as_upstream(
    admin: &kube::Client,
    clusters: &[String],
) -> anyhow::Result<()> {
    let (c1, c3) = (&clusters[0], &clusters[2]);
    // Someone else's profile for c1 in team-b: never touched, never deleted.
    create(
        &Api::<Namespace>::all(admin.clone()),
        json!({"metadata": {"name": "team-b"}}),
    )
    .await?;
    create(
        &Api::<ClusterProfile>::namespaced(admin.clone(), "team-b"),
        json!({"metadata": {"name": c1, "namespace": "team-b", "labels": {"owner": "other"}},
               "spec": {"clusterManager": {"name": "another-fleet-manager"}}}),
    )
    .await?;
    arrange_sets(admin, clusters).await?;
    let want = keys(&[
        &format!("team-a/{}", clusters[0]),
        &format!("team-a/{}", clusters[1]),
        &format!("team-a/{c3}"),
        &format!("team-b/{c3}"),
    ]);
    let profiles = wait_profiles(admin, "a profile per bound cluster, with status", |k, p| {
        *k == want
            && find(p, "team-a", c1).is_some_and(|p| {
                condition(p, "Joined").is_some()
                    && p.metadata
                        .labels
                        .as_ref()
                        .is_some_and(|l| l.contains_key("multicluster.x-k8s.io/clusterset"))
            })
    })
    .await?;

    // Field by field, as upstream's example (`team-a/<c1>`).
    let profile = find(&profiles, "team-a", c1).context("team-a profile of c1")?;
    let cluster = Api::<ManagedCluster>::all(admin.clone()).get(c1).await?;
    let labels = profile.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels,
        [
            ("multicluster.x-k8s.io/clusterset", "east"),
            ("open-cluster-management.io/cluster-name", c1.as_str()),
            ("x-k8s.io/cluster-manager", "open-cluster-management"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    );
    assert_eq!(
        serde_json::to_value(&profile.spec)?,
        json!({"displayName": c1, "clusterManager": {"name": "open-cluster-management"}})
    );
    let status = profile.status.clone().context("status")?;
    let cluster_status = cluster.status.clone().context("cluster status")?;
    assert_eq!(
        status.version.and_then(|v| v.kubernetes),
        cluster_status.version.map(|v| v.kubernetes)
    );
    let properties: Vec<(String, String)> = status
        .properties
        .iter()
        .map(|p| (p.name.clone(), p.value.clone()))
        .collect();
    let claims: Vec<(String, String)> = cluster_status
        .cluster_claims
        .iter()
        .filter(|c| !c.value.is_empty())
        .map(|c| (c.name.clone(), c.value.clone()))
        .collect();
    assert_eq!(properties, claims);
    assert_eq!(
        condition(profile, "ControlPlaneHealthy"),
        Some(("True".to_owned(), "ManagedClusterAvailable".to_owned()))
    );
    assert_eq!(
        condition(profile, "Joined").map(|c| c.0),
        Some("True".to_owned())
    );

    let foreign = Api::<ClusterProfile>::namespaced(admin.clone(), "team-b")
        .get(c1)
        .await?;
    assert_eq!(
        foreign.metadata.labels.unwrap_or_default(),
        [("owner".to_owned(), "other".to_owned())].into()
    );
    assert!(foreign.status.is_none(), "a foreign profile got a status");
    Ok(())
}

/// A claim created on c1 shows in its profiles' properties.
async fn claims_reach_the_profiles(
    admin: &kube::Client,
    spoke: &kube::Client,
    c1: &str,
) -> anyhow::Result<()> {
    create(
        &Api::<ocm_api::cluster::v1alpha1::ClusterClaim>::all(spoke.clone()),
        json!({"metadata": {"name": "region.example.com"}, "spec": {"value": "eu-west"}}),
    )
    .await?;
    wait_profiles(admin, "the new claim as a property", |_, p| {
        find(p, "team-a", c1)
            .is_some_and(|p| property(p, "region.example.com").as_deref() == Some("eu-west"))
    })
    .await?;
    Ok(())
}

/// A ClusterProperty (About API) created on c1, then changed, shows in its profiles (the
/// agent has the `ClusterProperty` gate).
async fn properties_reach_the_profiles(
    admin: &kube::Client,
    spoke: &kube::Client,
    c1: &str,
) -> anyhow::Result<()> {
    use ocm_api::about::v1alpha1::ClusterProperty;
    ocm::embedded::install_crds(spoke, &ocm_api::crds::about()).await?;
    let properties: Api<ClusterProperty> = Api::all(spoke.clone());
    create(
        &properties,
        json!({"metadata": {"name": "cluster.clusterset.k8s.io"}, "spec": {"value": "v1"}}),
    )
    .await?;
    wait_profiles(admin, "the ClusterProperty as a property", |_, p| {
        find(p, "team-a", c1)
            .is_some_and(|p| property(p, "cluster.clusterset.k8s.io").as_deref() == Some("v1"))
    })
    .await?;
    properties
        .patch(
            "cluster.clusterset.k8s.io",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"value": "v2"}})),
        )
        .await?;
    wait_profiles(admin, "the changed ClusterProperty", |_, p| {
        find(p, "team-a", c1)
            .is_some_and(|p| property(p, "cluster.clusterset.k8s.io").as_deref() == Some("v2"))
    })
    .await?;
    Ok(())
}

/// With the agents gone: availability and a version change reach the profiles; an
/// unaccepted cluster, a deleted cluster and a deleted binding take their profiles with them,
/// the foreign one stays.
async fn profiles_follow_the_clusters(
    admin: &kube::Client,
    clusters: &[String],
) -> anyhow::Result<()> {
    let (c1, c2, c3) = (&clusters[0], &clusters[1], &clusters[2]);
    wait_profiles(admin, "c1 unhealthy once its agent is gone", |_, p| {
        find(p, "team-a", c1).is_some_and(|p| {
            condition(p, "ControlPlaneHealthy").is_some_and(|(status, _)| status == "Unknown")
        })
    })
    .await?;
    // No agent writes c2's status any more: a version set on the hub is what its profile shows.
    Api::<ManagedCluster>::all(admin.clone())
        .patch_status(
            c2,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"version": {"kubernetes": "v1.99.0"}}})),
        )
        .await?;
    wait_profiles(admin, "c2's new version", |_, p| {
        find(p, "team-a", c2).is_some_and(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.version.as_ref())
                .and_then(|v| v.kubernetes.as_deref())
                == Some("v1.99.0")
        })
    })
    .await?;
    // The hub no longer accepts c2: its profile goes.
    Api::<ManagedCluster>::all(admin.clone())
        .patch(
            c2,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"hubAcceptsClient": false}})),
        )
        .await?;
    let want = keys(&[
        &format!("team-a/{c1}"),
        &format!("team-a/{c3}"),
        &format!("team-b/{c3}"),
    ]);
    wait_profiles(admin, "c2's profile gone once unaccepted", |k, _| {
        *k == want
    })
    .await?;
    Api::<ManagedCluster>::all(admin.clone())
        .delete(c3, &DeleteParams::default())
        .await?;
    let want = keys(&[&format!("team-a/{c1}")]);
    wait_profiles(admin, "c3's profiles gone", |k, _| *k == want).await?;
    Api::<ManagedClusterSetBinding>::namespaced(admin.clone(), "team-a")
        .delete("east", &DeleteParams::default())
        .await?;
    wait_profiles(admin, "team-a's profiles gone with its binding", |k, _| {
        k.is_empty()
    })
    .await?;
    Api::<ClusterProfile>::namespaced(admin.clone(), "team-b")
        .get(c1)
        .await
        .context("the foreign profile must stay")?;
    Ok(())
}

/// A hub user `team-a/<name>` (a service account) and its hub kubeconfig.
async fn hub_user(
    admin: &kube::Client,
    admin_kubeconfig: &Path,
    name: &str,
) -> anyhow::Result<PathBuf> {
    create(
        &Api::<ServiceAccount>::namespaced(admin.clone(), "team-a"),
        json!({"metadata": {"name": name, "namespace": "team-a"}}),
    )
    .await?;
    // Consumers read the profiles of their namespace.
    create(
        &Api::<ClusterRole>::all(admin.clone()),
        json!({"metadata": {"name": "profile-reader"},
               "rules": [{"apiGroups": ["multicluster.x-k8s.io"],
                          "resources": ["clusterprofiles"], "verbs": ["get", "list", "watch"]}]}),
    )
    .await?;
    create(
        &Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(admin.clone(), "team-a"),
        json!({"metadata": {"name": format!("{name}-profiles"), "namespace": "team-a"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "profile-reader"},
               "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "team-a"}]}),
    )
    .await?;
    ocm_e2e::service_account_kubeconfig(admin, admin_kubeconfig, "team-a", name).await
}

/// The proxy's access provider appears on c1's profile; alice, who may use the proxy for c1
/// on the hub and list nodes on c1, lists them through a kubeconfig made from the profile;
/// bob, who may read the profile but not use the proxy, is refused.
async fn consumers_reach_their_cluster(
    admin: &kube::Client,
    admin_kubeconfig: &Path,
    c1: &str,
    spoke: &kube::Client,
    proxy_url: &str,
    dir: &Path,
) -> anyhow::Result<()> {
    let server = format!("{proxy_url}/clusters/{c1}");
    wait_profiles(
        admin,
        "the proxy's access provider on c1's profile",
        |_, p| {
            find(p, "team-a", c1).is_some_and(|p| {
                p.status.as_ref().is_some_and(|s| {
                    s.access_providers.iter().any(|a| {
                        a.name == "open-cluster-management"
                            && a.cluster.as_ref().is_some_and(|c| {
                                c.server == server
                                    && c.certificate_authority_data.is_some()
                                    && c.extensions.iter().any(|e| {
                                        e.name == "client.authentication.k8s.io/exec"
                                            && e.extension.0 == json!({"clusterName": c1})
                                    })
                            })
                    })
                })
            })
        },
    )
    .await?;

    let alice = hub_user(admin, admin_kubeconfig, "alice").await?;
    let bob = hub_user(admin, admin_kubeconfig, "bob").await?;
    ocm_e2e::allow_proxy(
        admin,
        ("proxy-c1", "alice-proxy-c1"),
        c1,
        ("team-a", "alice"),
        &["get"],
    )
    .await?;
    // On c1, alice's mapped identity may list nodes.
    let alice_on_c1 = "ocm:hub:system:serviceaccount:team-a:alice";
    create(
        &Api::<ClusterRole>::all(spoke.clone()),
        json!({"metadata": {"name": "node-reader"},
               "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}]}),
    )
    .await?;
    create(
        &Api::<ClusterRoleBinding>::all(spoke.clone()),
        json!({"metadata": {"name": "alice-node-reader"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "node-reader"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                             "name": alice_on_c1},
                            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                             "name": "ocm:hub:system:serviceaccount:team-a:bob"}]}),
    )
    .await?;

    let kubeconfig_for = |user: &Path, who: &str| {
        let out = dir.join(format!("{who}-{c1}.kubeconfig"));
        let (code, stdout, stderr) = run_ocm(
            OCM,
            dir,
            &[
                "clusterprofile",
                "kubeconfig",
                c1,
                "-n",
                "team-a",
                "--kubeconfig",
                user.to_str().unwrap_or_default(),
                "-o",
                out.to_str().unwrap_or_default(),
            ],
        );
        anyhow::ensure!(code == 0, "ocm clusterprofile kubeconfig: {stdout}{stderr}");
        Ok(out)
    };
    let alice_c1 = kubeconfig_for(&alice, "alice")?;
    let (ok, out, err) = ocm_e2e::kubectl(&alice_c1, &["get", "nodes", "-o", "name"], None).await?;
    assert!(ok, "alice lists c1's nodes through the proxy: {err}");
    let mut want: Vec<String> = Api::<Node>::all(spoke.clone())
        .list(&Default::default())
        .await?
        .items
        .iter()
        .map(|n| format!("node/{}", n.metadata.name.as_deref().unwrap_or_default()))
        .collect();
    want.sort();
    let mut got: Vec<String> = out.lines().map(str::to_owned).collect();
    got.sort();
    assert!(!want.is_empty());
    assert_eq!(got, want);

    let bob_c1 = kubeconfig_for(&bob, "bob")?;
    let (ok, _, err) = ocm_e2e::kubectl(&bob_c1, &["get", "nodes"], None).await?;
    assert!(!ok, "bob has no managedclusters/proxy on the hub");
    assert!(
        err.contains("cannot get resource \"managedclusters/proxy\""),
        "{err}"
    );
    Ok(())
}

/// Starts the proxy server, enables cluster-proxy on `cluster` and runs its agent here with
/// its pod credentials; returns the proxy URL once the tunnel is open.
async fn start_proxy(
    admin: &kube::Client,
    cluster: &str,
    spoke: kube::Client,
    dir: &Path,
    stop: &Shutdown,
) -> anyhow::Result<String> {
    let proxy = ocm_cluster_proxy::server::start(
        admin.clone(),
        ocm_cluster_proxy::server::ProxyServerOptions::default(),
        stop.child(),
    )
    .await?;
    ocm_cluster_proxy::access::ensure_cluster_management_addon(admin).await?;
    tokio::spawn(
        ocm_addon_framework::manager::AddonManager::new(admin.clone())
            .with_addon(Arc::new(ocm_cluster_proxy::addon::ClusterProxy::new(
                "ocm:test",
                proxy.endpoint.clone(),
            )))
            .run(stop.child()),
    );
    create(
        &Api::<ManagedClusterAddOn>::namespaced(admin.clone(), cluster),
        json!({"metadata": {"name": "cluster-proxy", "namespace": cluster}, "spec": {}}),
    )
    .await?;
    ocm_cluster_proxy::run_agent_in_process(
        admin,
        spoke,
        cluster,
        &proxy.endpoint,
        &dir.join("proxy-agent"),
        Duration::from_millis(500),
        stop.child(),
    )
    .await?;
    tokio::time::timeout(WAIT, proxy.tunnels.wait_for(cluster, |t| t.is_some()))
        .await
        .context("no tunnel")?;
    let url = proxy.endpoint.url.clone();
    // Runs until `stop`.
    let stopped = stop.clone();
    tokio::spawn(async move {
        stopped.cancelled().await;
        proxy.stop().await;
    });
    Ok(url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_profiles_on_the_embedded_hub() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let fleet = ocm::fleet::Fleet::start(
        dir.path(),
        ocm::fleet::FleetOptions {
            hub: ocm_registration::hub::HubOptions {
                cluster_profiles: true,
                ..ocm_e2e::fast_hub_options()
            },
            agent_options: Arc::new(|name: &str| {
                let mut options = ocm_e2e::fast_agent_options(name);
                options.cluster_properties = true;
                options
            }),
            join_timeout: WAIT,
            ..ocm::fleet::FleetOptions::new(3)
        },
    )
    .await?;
    let admin = fleet.hub.admin_client();
    let clusters = fleet.clusters.clone();
    profiles_are_made_as_upstream(&admin, &clusters).await?;
    let spoke = fleet.spoke(&clusters[0]).await?;
    claims_reach_the_profiles(&admin, &spoke, &clusters[0]).await?;
    properties_reach_the_profiles(&admin, &spoke, &clusters[0]).await?;

    let proxy_stop = Shutdown::new();
    let url = start_proxy(&admin, &clusters[0], spoke.clone(), dir.path(), &proxy_stop).await?;
    consumers_reach_their_cluster(
        &admin,
        &fleet.hub.admin_kubeconfig,
        &clusters[0],
        &spoke,
        &url,
        dir.path(),
    )
    .await?;
    proxy_stop.cancel();

    for cluster in &clusters {
        ocm_e2e::set_lease_duration(&fleet.hub, cluster, 1).await?;
    }
    fleet.agents().cancel();
    profiles_follow_the_clusters(&admin, &clusters).await?;
    fleet.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_profiles_on_a_hub_run_with_a_kubeconfig() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let home = dir.path();
    let hub = ManagedApiserver::start_with(
        OCM,
        home,
        &[
            "--feature-gates",
            "ClusterProfile=true",
            "--lease-grace-multiplier",
            "1",
        ],
    );
    let admin = ocm_runtime::kubeconfig::client_from_file(&hub.kubeconfig).await?;
    let clusters: Vec<String> = ["p1", "p2", "p3"].map(str::to_owned).to_vec();
    let mut joins = Vec::new();
    let mut spokes = Vec::new();
    for name in &clusters {
        let (join, spoke) =
            ocm_e2e::process::join_simulated(OCM, home, &hub.kubeconfig, name, &[]).await?;
        joins.push(join);
        spokes.push(spoke);
    }
    let mc: Api<ManagedCluster> = Api::all(admin.clone());
    for name in &clusters {
        ocm_e2e::wait_for(
            &mc,
            name,
            "Joined and Available",
            ocm::fleet::joined_and_available,
        )
        .await?;
    }
    profiles_are_made_as_upstream(&admin, &clusters).await?;
    claims_reach_the_profiles(&admin, &spokes[0], &clusters[0]).await?;

    let proxy_stop = Shutdown::new();
    let url = start_proxy(&admin, &clusters[0], spokes[0].clone(), home, &proxy_stop).await?;
    consumers_reach_their_cluster(
        &admin,
        &hub.kubeconfig,
        &clusters[0],
        &spokes[0],
        &url,
        home,
    )
    .await?;
    proxy_stop.cancel();

    for name in &clusters {
        mc.patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"leaseDurationSeconds": 1}})),
        )
        .await?;
    }
    for join in joins {
        join.stop();
    }
    profiles_follow_the_clusters(&admin, &clusters).await?;
    hub.stop();
    Ok(())
}
