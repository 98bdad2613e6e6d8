//! What a Klusterlet (Default or Singleton mode) puts on its managed cluster — pure.
//!
//! The managed-cluster CRDs (AppliedManifestWork, ClusterClaim, … — not the Klusterlet's own,
//! which the operator installs), the agent namespace (`spec.namespace`, default
//! `open-cluster-management-agent`), ServiceAccounts and RBAC
//! ([`super::rbac`]), and the agents as Deployments of the `ocm` image: in Default mode
//! `<klusterlet>-registration-agent` (`ocm agent --registration-only`, ServiceAccount
//! `klusterlet-registration-sa`) and `<klusterlet>-work-agent` (`ocm work agent`,
//! `klusterlet-work-sa`); in Singleton mode one `<klusterlet>-agent` (`ocm agent`, running
//! both, as `klusterlet-work-sa`).
//!
//! Every mode also makes the addon namespace [`ADDON_NAMESPACE`] on the managed cluster
//! ([`addon_namespace`]), whatever the agent namespace: addon agents go there unless told
//! otherwise. Klusterlets of several hubs share it, so it is not among what one Klusterlet
//! prunes; it goes when the last Klusterlet of the cluster goes (as upstream).
//!
//! In the Hosted modes the agents run on the management cluster, in the namespace named after
//! the Klusterlet, which also holds their secrets; they reach the managed cluster through the
//! kubeconfig in Secret `external-managed-kubeconfig` there (mounted, `--hosted
//! --spoke-kubeconfig`), and on the management cluster they may only use their secrets.
//!
//! With `bootstrapKubeConfigs` of type LocalSecrets the registering agent is given the list of
//! bootstrap kubeconfig secrets and the hub connection timeout ([`super::hub_list`]).
//!
//! The work agent needs the cluster's name: `spec.clusterName`, else the name the registration
//! agent stored in the hub kubeconfig secret. Until that secret holds credentials the work
//! agent runs no replicas (upstream does the same).

use ocm_api::operator::v1::{AddOnRegistrationAuthType, FeatureGateMode, Klusterlet};
use serde_json::{Value, json};

/// Default agent namespace (`spec.namespace` empty).
pub const DEFAULT_AGENT_NAMESPACE: &str = "open-cluster-management-agent";

/// The addon namespace on every managed cluster, shared by its Klusterlets (upstream's name,
/// also the default install namespace of addons).
pub const ADDON_NAMESPACE: &str = ocm_api::operator::names::namespaces::AGENT_ADDON;

/// Label on the addon namespace: the Klusterlet that last applied it (upstream's label; not
/// [`KLUSTERLET_LABEL`], which marks a Klusterlet's own agent namespace).
pub const CREATED_BY_KLUSTERLET: &str = ocm_api::operator::names::labels::CREATED_BY_KLUSTERLET;

pub use super::agents::{Agent, Mode, REGISTRATION_SA, WORK_SA};

/// Port of the agents' /metrics, /healthz and /readyz endpoint inside their pods.
pub const METRICS_PORT: i32 = 8080;

/// Label on everything a Klusterlet installs: the Klusterlet's name.
pub const KLUSTERLET_LABEL: &str = "operator.open-cluster-management.io/klusterlet";

/// The images the Klusterlet CRD defaults its image fields to (upstream's): "not chosen".
const UPSTREAM_DEFAULT_IMAGES: [&str; 3] = [
    "quay.io/open-cluster-management/registration",
    "quay.io/open-cluster-management/work",
    "quay.io/open-cluster-management/registration-operator",
];

/// What the managed cluster's hub kubeconfig secret holds, as far as rendering cares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HubSecret {
    /// The cluster name the registration agent stored (`cluster-name`).
    pub cluster_name: Option<String>,
    /// Whether it holds a kubeconfig with a client certificate.
    pub has_credentials: bool,
}

/// What the rendering needs besides the Klusterlet.
#[derive(Clone, Debug)]
pub struct RenderInput<'a> {
    /// The Klusterlet.
    pub klusterlet: &'a Klusterlet,
    /// The `ocm` image, used where the Klusterlet names no image of its own.
    pub image: &'a str,
    /// Control-plane nodes of the managed cluster (the replica rule).
    pub control_plane_nodes: usize,
    /// The hub kubeconfig secret, as read.
    pub hub_secret: &'a HubSecret,
}

/// The agent namespace: where the agents and their secrets are — on the managed cluster
/// `spec.namespace` (default [`DEFAULT_AGENT_NAMESPACE`]); in the Hosted modes, on the
/// management cluster, the namespace named after the Klusterlet.
pub fn agent_namespace(klusterlet: &Klusterlet) -> String {
    if Mode::of(klusterlet).hosted() {
        return klusterlet_name(klusterlet).to_owned();
    }
    match klusterlet.spec.namespace.as_str() {
        "" => DEFAULT_AGENT_NAMESPACE.to_owned(),
        ns => ns.to_owned(),
    }
}

/// Secret (key `kubeconfig`) through which Hosted agents reach their managed cluster, in the
/// agent namespace on the management cluster.
pub const EXTERNAL_MANAGED_KUBECONFIG: &str = "external-managed-kubeconfig";

/// Where Hosted agents see [`EXTERNAL_MANAGED_KUBECONFIG`].
const MANAGED_KUBECONFIG_DIR: &str = "/spoke/config";

/// The Klusterlet's name (default `klusterlet`).
pub fn klusterlet_name(klusterlet: &Klusterlet) -> &str {
    klusterlet.metadata.name.as_deref().unwrap_or("klusterlet")
}

/// The cluster's name: `spec.clusterName`, else what the hub kubeconfig secret says.
pub fn cluster_name(input: &RenderInput<'_>) -> Option<String> {
    Some(input.klusterlet.spec.cluster_name.clone())
        .filter(|n| !n.is_empty())
        .or_else(|| input.hub_secret.cluster_name.clone())
}

/// The image an agent runs.
fn image_of(input: &RenderInput<'_>, agent: Agent) -> String {
    let spec = &input.klusterlet.spec;
    let named = match agent {
        Agent::Registration => &spec.registration_image_pull_spec,
        Agent::Work => &spec.work_image_pull_spec,
        Agent::Singleton => &spec.image_pull_spec,
    };
    crate::pod::chosen_image(Some(named.as_str()), &UPSTREAM_DEFAULT_IMAGES, input.image)
}

/// The agent's container arguments.
fn args(input: &RenderInput<'_>, agent: Agent, namespace: &str) -> Vec<String> {
    let spec = &input.klusterlet.spec;
    let mut args: Vec<String> = match agent {
        Agent::Registration => vec!["agent".into(), "--registration-only".into()],
        Agent::Work => vec!["work".into(), "agent".into()],
        Agent::Singleton => vec!["agent".into()],
    };
    args.push(format!("--agent-namespace={namespace}"));
    if Mode::of(input.klusterlet).hosted() {
        args.push("--hosted".into());
        args.push(format!(
            "--spoke-kubeconfig={MANAGED_KUBECONFIG_DIR}/kubeconfig"
        ));
    }
    if let Some(name) = cluster_name(input) {
        args.push(format!("--cluster-name={name}"));
    }
    if agent.registers() {
        args.push(format!("--metrics-addr=0.0.0.0:{METRICS_PORT}"));
        // Several hubs: the agent chooses among the listed bootstrap kubeconfig secrets.
        args.extend(super::hub_list::agent_args(input.klusterlet));
        if let Some(registration) = &spec.registration_configuration {
            if let Some(seconds) = registration.client_cert_expiration_seconds {
                args.push(format!("--client-cert-expiration-seconds={seconds}"));
            }
            for (key, value) in &registration.cluster_labels {
                args.push(format!("--cluster-label={key}={value}"));
            }
            for (key, value) in &registration.cluster_annotations {
                args.push(format!("--cluster-annotation={key}={value}"));
            }
            if let Some(claims) = &registration.cluster_claim_configuration {
                args.push(format!(
                    "--max-custom-cluster-claims={}",
                    claims.max_custom_cluster_claims
                ));
            }
            for gate in &registration.feature_gates {
                let on = gate.mode == Some(FeatureGateMode::Enable);
                args.push(format!("--feature-gates={}={on}", gate.feature));
            }
            if let Some(driver) = &registration.add_on_kube_client_registration_driver
                && driver.auth_type == Some(AddOnRegistrationAuthType::Token)
            {
                args.push("--addon-kubeclient-registration-auth=token".into());
                if let Some(seconds) = driver
                    .token
                    .as_ref()
                    .and_then(|t| t.expiration_seconds)
                    .filter(|s| *s > 0)
                {
                    args.push(format!("--addon-token-expiration-seconds={seconds}"));
                }
            }
        }
    }
    if agent.works()
        && let Some(work) = &spec.work_configuration
    {
        if let Some(interval) = &work.status_sync_interval {
            args.push(format!("--status-sync-interval={interval}"));
        }
        if let Some(grace) = &work.applied_manifest_work_eviction_grace_period {
            args.push(format!(
                "--appliedmanifestwork-eviction-grace-period={grace}"
            ));
        }
    }
    args
}

/// Replicas of an agent: none for the work agent until it has a cluster name and the hub
/// kubeconfig secret holds credentials; else the replica rule.
fn replicas(input: &RenderInput<'_>, agent: Agent) -> i64 {
    if agent == Agent::Work && (cluster_name(input).is_none() || !input.hub_secret.has_credentials)
    {
        return 0;
    }
    crate::pod::replicas(input.control_plane_nodes)
}

/// The Deployment of one agent.
fn deployment(input: &RenderInput<'_>, agent: Agent, namespace: &str) -> Value {
    let klusterlet = input.klusterlet;
    let spec = &klusterlet.spec;
    let owner = klusterlet_name(klusterlet);
    let name = agent.deployment_name(owner);
    let placement = spec.node_placement.clone().unwrap_or_default();
    let mut container = json!({
        "name": name,
        "image": image_of(input, agent),
        // The image's small agent-only executable, not its `ocm` entrypoint (same commands).
        "command": [ocm_api::operator::names::klusterlet::AGENT_EXECUTABLE],
        "args": args(input, agent, namespace),
        "resources": crate::pod::container_resources(spec.resource_requirement.as_ref()),
        "securityContext": crate::pod::restricted_security_context(),
    });
    if agent.registers() {
        container["ports"] = json!([{"name": "metrics", "containerPort": METRICS_PORT}]);
        container["livenessProbe"] = json!({"httpGet": {"path": "/healthz", "port": METRICS_PORT}});
    }
    let hosted = Mode::of(klusterlet).hosted();
    if hosted {
        container["volumeMounts"] = json!([{"name": "managed-kubeconfig",
            "mountPath": MANAGED_KUBECONFIG_DIR, "readOnly": true}]);
    }
    let mut pod = json!({
        "serviceAccountName": agent.service_account(),
        "nodeSelector": placement.node_selector,
        "tolerations": placement.tolerations,
        "containers": [container],
    });
    if !spec.priority_class_name.is_empty() {
        pod["priorityClassName"] = json!(spec.priority_class_name);
    }
    if let Some(alias) = &spec.hub_api_server_host_alias {
        pod["hostAliases"] = json!([{"ip": alias.ip, "hostnames": [alias.hostname]}]);
    }
    if hosted {
        pod["volumes"] = json!([{"name": "managed-kubeconfig",
            "secret": {"secretName": EXTERNAL_MANAGED_KUBECONFIG}}]);
    }
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"app": name, KLUSTERLET_LABEL: owner}},
        "spec": {
            "replicas": replicas(input, agent),
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod},
        },
    })
}

/// Whether the Klusterlet turns on the registration feature gate `feature` (upstream's
/// registration gates are off unless enabled, but for `ClusterClaim` and `AddonManagement`).
pub fn registration_gate(klusterlet: &Klusterlet, feature: &str) -> bool {
    let default = matches!(feature, "ClusterClaim" | "AddonManagement");
    klusterlet
        .spec
        .registration_configuration
        .as_ref()
        .and_then(|r| r.feature_gates.iter().rev().find(|g| g.feature == feature))
        .map_or(default, |g| g.mode == Some(FeatureGateMode::Enable))
}

/// The managed-cluster CRDs a Klusterlet installs (all but the Klusterlet's own), and with
/// the registration `ClusterProperty` gate the About API's ClusterProperty (as upstream).
pub fn crds(klusterlet: &Klusterlet) -> Vec<Value> {
    let mut crds = ocm_api::crds::klusterlet();
    if registration_gate(klusterlet, "ClusterProperty") {
        crds.extend(ocm_api::crds::about());
    }
    crds.into_iter()
        .filter(|crd| crd.spec.group != "operator.open-cluster-management.io")
        .filter_map(|crd| serde_json::to_value(crd).ok())
        .collect()
}

/// The addon namespace [`ADDON_NAMESPACE`] the Klusterlet makes on its managed cluster (in
/// every mode; in the Hosted modes through the external managed kubeconfig).
pub fn addon_namespace(klusterlet: &Klusterlet) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
           "metadata": {"name": ADDON_NAMESPACE,
                        "labels": {CREATED_BY_KLUSTERLET: klusterlet_name(klusterlet)}}})
}

/// The namespace `spec.namespace` (default [`DEFAULT_AGENT_NAMESPACE`]) a Hosted Klusterlet
/// makes on its managed cluster, labelled [`KLUSTERLET_LABEL`] as its own (upstream makes it
/// in every mode; outside the Hosted modes it is the agent namespace [`render`] holds).
pub fn hosted_managed_namespace(klusterlet: &Klusterlet) -> Option<Value> {
    if !Mode::of(klusterlet).hosted() {
        return None;
    }
    let name = match klusterlet.spec.namespace.as_str() {
        "" => DEFAULT_AGENT_NAMESPACE,
        ns => ns,
    };
    Some(json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name,
                             "labels": {KLUSTERLET_LABEL: klusterlet_name(klusterlet)}}}))
}

/// Of the namespaces on a Klusterlet's managed cluster labelled [`KLUSTERLET_LABEL`]
/// (`labelled`: name and the label's value), those this Klusterlet made and no longer wants
/// there: its own (the label's value is its name) but its agent namespace (the managed cluster
/// may be the management cluster too) and, Hosted, its current [`hosted_managed_namespace`].
/// With `keep_current` false (the Klusterlet is going) the current one goes too.
pub fn unwanted_managed_namespaces(
    klusterlet: &Klusterlet,
    labelled: &[(String, String)],
    keep_current: bool,
) -> Vec<String> {
    let owner = klusterlet_name(klusterlet);
    let agent = agent_namespace(klusterlet);
    let current = hosted_managed_namespace(klusterlet)
        .filter(|_| keep_current)
        .and_then(|ns| ns["metadata"]["name"].as_str().map(str::to_owned));
    labelled
        .iter()
        .filter(|(name, value)| {
            value == owner && *name != agent && Some(name.as_str()) != current.as_deref()
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// Whether the addon namespace may go with the Klusterlet `owner`: no other Klusterlet's agent
/// namespace (a namespace labelled [`KLUSTERLET_LABEL`] with another value) is on the managed
/// cluster. `labelled` holds the [`KLUSTERLET_LABEL`] values of the namespaces carrying it.
pub fn addon_namespace_unused<'a>(
    owner: &str,
    labelled: impl IntoIterator<Item = &'a str>,
) -> bool {
    labelled.into_iter().all(|value| value == owner)
}

/// Everything the Klusterlet installs but its CRDs (those stay when it goes: other
/// Klusterlets and users' ClusterClaims depend on them). Order: namespaces, then per agent
/// ServiceAccount and RBAC, then the Deployments.
pub fn render(input: &RenderInput<'_>) -> Vec<Value> {
    let klusterlet = input.klusterlet;
    let owner = klusterlet_name(klusterlet);
    let namespace = agent_namespace(klusterlet);
    let label = json!({KLUSTERLET_LABEL: owner});
    let mode = Mode::of(klusterlet);
    let mut out = vec![json!({"apiVersion": "v1", "kind": "Namespace",
                              "metadata": {"name": namespace, "labels": label}})];
    let agents = Agent::of(mode);
    let mut accounts: Vec<&str> = agents.iter().map(|a| a.service_account()).collect();
    accounts.dedup();
    for account in accounts {
        out.push(json!({"apiVersion": "v1", "kind": "ServiceAccount",
                        "metadata": {"name": account, "namespace": namespace,
                                     "labels": label}}));
    }
    for agent in agents {
        if mode.hosted() {
            out.extend(super::rbac::hosted_objects(
                owner, &namespace, *agent, &label,
            ));
        } else {
            out.extend(super::rbac::objects(owner, &namespace, *agent, &label));
        }
    }
    for agent in agents {
        out.push(deployment(input, *agent, &namespace));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn klusterlet(spec: Value) -> Klusterlet {
        serde_json::from_value(json!({
            "apiVersion": "operator.open-cluster-management.io/v1", "kind": "Klusterlet",
            "metadata": {"name": "klusterlet"}, "spec": spec}))
        .unwrap()
    }

    fn deployments(objects: &[Value]) -> Vec<&Value> {
        objects
            .iter()
            .filter(|o| o["kind"] == "Deployment")
            .collect()
    }

    /// The container args of each rendered Deployment, by Deployment name.
    fn args_by_deployment(k: &Klusterlet) -> Vec<(String, Vec<String>)> {
        let objects = render(&RenderInput {
            klusterlet: k,
            image: "ocm:1",
            control_plane_nodes: 1,
            hub_secret: &HubSecret::default(),
        });
        deployments(&objects)
            .iter()
            .map(|d| {
                let args = d["spec"]["template"]["spec"]["containers"][0]["args"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|a| a.as_str().map(str::to_owned))
                    .collect();
                (d["metadata"]["name"].as_str().unwrap().to_owned(), args)
            })
            .collect()
    }

    #[test]
    fn the_registering_agent_gets_the_list_of_hubs_in_every_mode() {
        let list = json!({"bootstrapKubeConfigs": {"type": "LocalSecrets",
            "localSecretsConfig": {"kubeConfigSecrets": [{"name": "hub-a"}, {"name": "hub-b"}],
                                   "hubConnectionTimeoutSeconds": 300}}});
        let flags = [
            "--bootstrap-kubeconfig-secrets=hub-a,hub-b",
            "--hub-connection-timeout-seconds=300",
        ];
        for (mode, namespace, registering) in [
            (
                "Default",
                "--agent-namespace=open-cluster-management-agent",
                "klusterlet-registration-agent",
            ),
            (
                "Singleton",
                "--agent-namespace=open-cluster-management-agent",
                "klusterlet-agent",
            ),
            // Hosted: the agent runs on the management cluster and reads the listed secrets
            // in the namespace named after the Klusterlet, there.
            (
                "Hosted",
                "--agent-namespace=klusterlet",
                "klusterlet-registration-agent",
            ),
            (
                "SingletonHosted",
                "--agent-namespace=klusterlet",
                "klusterlet-agent",
            ),
        ] {
            let k = klusterlet(json!({"clusterName": "c1", "deployOption": {"mode": mode},
                                      "registrationConfiguration": list}));
            for (name, args) in args_by_deployment(&k) {
                assert!(
                    args.contains(&namespace.to_owned()),
                    "{mode} {name}: {args:?}"
                );
                let has = flags.map(|f| args.contains(&f.to_owned()));
                if name == registering {
                    assert_eq!(has, [true, true], "{mode} {name}: {args:?}");
                } else {
                    assert_eq!(has, [false, false], "{mode} {name}: {args:?}");
                }
            }
        }
        // Without a list: none of these flags.
        let plain = klusterlet(json!({"clusterName": "c1"}));
        for (name, args) in args_by_deployment(&plain) {
            assert!(
                !args
                    .iter()
                    .any(|a| a.starts_with("--bootstrap-kubeconfig-secrets")
                        || a.starts_with("--hub-connection-timeout-seconds")),
                "{name}: {args:?}"
            );
        }
    }

    #[test]
    fn a_hosted_klusterlet_keeps_only_its_current_namespace_on_the_managed_cluster() {
        let hosted = klusterlet(json!({"namespace": "open-cluster-management-agent-new",
                                       "deployOption": {"mode": "Hosted"}}));
        let made = hosted_managed_namespace(&hosted).unwrap();
        assert_eq!(
            made["metadata"]["name"],
            "open-cluster-management-agent-new"
        );
        assert_eq!(made["metadata"]["labels"][KLUSTERLET_LABEL], "klusterlet");
        // Its agent namespace (named after it) may be on the same cluster: never unwanted;
        // another Klusterlet's namespaces are never its to remove.
        let labelled: Vec<(String, String)> = [
            ("open-cluster-management-agent-old", "klusterlet"),
            ("open-cluster-management-agent-new", "klusterlet"),
            ("klusterlet", "klusterlet"),
            ("other-agent", "other"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
        assert_eq!(
            unwanted_managed_namespaces(&hosted, &labelled, true),
            ["open-cluster-management-agent-old"]
        );
        assert_eq!(
            unwanted_managed_namespaces(&hosted, &labelled, false),
            [
                "open-cluster-management-agent-old",
                "open-cluster-management-agent-new"
            ]
        );
        // Outside the Hosted modes the agent namespace is the one on the managed cluster.
        let default = klusterlet(json!({"namespace": "open-cluster-management-agent-new"}));
        assert!(hosted_managed_namespace(&default).is_none());
        assert!(
            unwanted_managed_namespaces(
                &default,
                &[(
                    "open-cluster-management-agent-new".to_string(),
                    "klusterlet".to_string()
                )],
                false
            )
            .is_empty()
        );
    }

    #[test]
    fn default_mode_runs_registration_and_work_agents_with_upstream_names() {
        let k = klusterlet(json!({"clusterName": "cluster1",
            "registrationImagePullSpec": "quay.io/open-cluster-management/registration",
            "registrationConfiguration": {"clusterLabels": {"env": "dev"},
                                          "clientCertExpirationSeconds": 3600},
            "workConfiguration": {"statusSyncInterval": "30s",
                                  "appliedManifestWorkEvictionGracePeriod": "10m"},
            "hubApiServerHostAlias": {"ip": "10.0.0.1", "hostname": "hub.example"},
            "priorityClassName": "system-cluster-critical"}));
        let secret = HubSecret {
            cluster_name: Some("cluster1".into()),
            has_credentials: true,
        };
        let objects = render(&RenderInput {
            klusterlet: &k,
            image: "ghcr.io/example/ocm:1",
            control_plane_nodes: 1,
            hub_secret: &secret,
        });
        assert_eq!(objects[0]["metadata"]["name"], DEFAULT_AGENT_NAMESPACE);
        // The addon namespace is not among what one Klusterlet renders: it is shared.
        assert_eq!(
            objects.iter().filter(|o| o["kind"] == "Namespace").count(),
            1
        );
        let found = deployments(&objects);
        assert_eq!(found.len(), 2);
        let registration = found[0];
        assert_eq!(
            registration["metadata"]["name"],
            "klusterlet-registration-agent"
        );
        let pod = &registration["spec"]["template"]["spec"];
        assert_eq!(pod["serviceAccountName"], REGISTRATION_SA);
        assert_eq!(pod["containers"][0]["image"], "ghcr.io/example/ocm:1");
        assert_eq!(pod["priorityClassName"], "system-cluster-critical");
        assert_eq!(pod["hostAliases"][0]["hostnames"][0], "hub.example");
        assert_eq!(
            pod["containers"][0]["args"],
            json!([
                "agent",
                "--registration-only",
                "--agent-namespace=open-cluster-management-agent",
                "--cluster-name=cluster1",
                "--metrics-addr=0.0.0.0:8080",
                "--client-cert-expiration-seconds=3600",
                "--cluster-label=env=dev"
            ])
        );
        let work = found[1];
        assert_eq!(work["metadata"]["name"], "klusterlet-work-agent");
        assert_eq!(work["spec"]["replicas"], 1);
        assert_eq!(
            work["spec"]["template"]["spec"]["containers"][0]["args"],
            json!([
                "work",
                "agent",
                "--agent-namespace=open-cluster-management-agent",
                "--cluster-name=cluster1",
                "--status-sync-interval=30s",
                "--appliedmanifestwork-eviction-grace-period=10m"
            ])
        );
        // Every object carries the Klusterlet's label; none is a CRD.
        assert!(
            objects
                .iter()
                .all(|o| o["metadata"]["labels"][KLUSTERLET_LABEL] == "klusterlet")
        );
        assert!(!crds(&k).is_empty());
        assert!(
            crds(&k)
                .iter()
                .all(|c| c["spec"]["group"] != "operator.open-cluster-management.io")
        );
    }

    #[test]
    fn the_cluster_property_gate_reaches_the_agent_and_installs_the_about_api() {
        let crd_names = |k: &Klusterlet| -> Vec<String> {
            crds(k)
                .iter()
                .map(|c| {
                    c["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        };
        let plain = klusterlet(json!({"clusterName": "c1"}));
        assert!(!registration_gate(&plain, "ClusterProperty"));
        assert!(registration_gate(&plain, "ClusterClaim"));
        assert!(!crd_names(&plain).contains(&"clusterproperties.about.k8s.io".to_owned()));
        let gated = klusterlet(json!({"clusterName": "c1", "registrationConfiguration": {
            "featureGates": [{"feature": "ClusterProperty", "mode": "Enable"},
                             {"feature": "ClusterClaim", "mode": "Disable"}]}}));
        assert!(registration_gate(&gated, "ClusterProperty"));
        assert!(crd_names(&gated).contains(&"clusterproperties.about.k8s.io".to_owned()));
        let objects = render(&RenderInput {
            klusterlet: &gated,
            image: "ocm:1",
            control_plane_nodes: 1,
            hub_secret: &HubSecret::default(),
        });
        let args = &deployments(&objects)[0]["spec"]["template"]["spec"]["containers"][0]["args"];
        let args: Vec<&str> = args
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            args.contains(&"--feature-gates=ClusterProperty=true"),
            "{args:?}"
        );
        assert!(
            args.contains(&"--feature-gates=ClusterClaim=false"),
            "{args:?}"
        );
    }

    #[test]
    fn the_work_agent_waits_for_a_name_and_hub_credentials() {
        let k = klusterlet(json!({"namespace": "open-cluster-management-agent-x"}));
        let none = HubSecret::default();
        let input = RenderInput {
            klusterlet: &k,
            image: "ocm:1",
            control_plane_nodes: 3,
            hub_secret: &none,
        };
        let objects = render(&input);
        let found = deployments(&objects);
        assert_eq!(found[0]["spec"]["replicas"], 3);
        assert_eq!(found[1]["spec"]["replicas"], 0);
        assert_eq!(
            found[0]["metadata"]["namespace"],
            "open-cluster-management-agent-x"
        );
        // No cluster name anywhere: the registration agent picks one.
        let args = &found[0]["spec"]["template"]["spec"]["containers"][0]["args"];
        assert!(!args.to_string().contains("--cluster-name"));
        let named = HubSecret {
            cluster_name: Some("generated-1".into()),
            has_credentials: true,
        };
        let input = RenderInput {
            hub_secret: &named,
            ..input
        };
        let objects = render(&input);
        let work = deployments(&objects)[1];
        assert_eq!(work["spec"]["replicas"], 3);
        assert!(
            work["spec"]["template"]["spec"]["containers"][0]["args"]
                .to_string()
                .contains("--cluster-name=generated-1")
        );
    }

    #[test]
    fn hosted_agents_run_in_the_klusterlets_namespace_with_the_external_kubeconfig() {
        let k = klusterlet(json!({"clusterName": "c1", "deployOption": {"mode": "Hosted"}}));
        let secret = HubSecret::default();
        let objects = render(&RenderInput {
            klusterlet: &k,
            image: "ocm:1",
            control_plane_nodes: 1,
            hub_secret: &secret,
        });
        assert_eq!(agent_namespace(&k), "klusterlet");
        let namespaces = objects.iter().filter(|o| o["kind"] == "Namespace").count();
        assert_eq!(namespaces, 1);
        // On the management cluster only the registration agent's hosted-addon role is
        // cluster-wide: addon credentials and Leases.
        let cluster_roles: Vec<&Value> = objects
            .iter()
            .filter(|o| o["kind"] == "ClusterRole")
            .collect();
        assert_eq!(cluster_roles.len(), 1);
        assert!(
            cluster_roles[0]["metadata"]["name"]
                .as_str()
                .unwrap()
                .ends_with("-registration:addon-management")
        );
        let found = deployments(&objects);
        assert_eq!(found.len(), 2);
        let pod = &found[0]["spec"]["template"]["spec"];
        assert_eq!(found[0]["metadata"]["namespace"], "klusterlet");
        assert_eq!(
            pod["volumes"][0]["secret"]["secretName"],
            EXTERNAL_MANAGED_KUBECONFIG
        );
        let args = pod["containers"][0]["args"].to_string();
        assert!(args.contains("--hosted"), "{args}");
        assert!(
            args.contains("--spoke-kubeconfig=/spoke/config/kubeconfig"),
            "{args}"
        );
        assert!(args.contains("--agent-namespace=klusterlet"), "{args}");
    }

    #[test]
    fn singleton_mode_runs_one_agent_as_the_work_account() {
        let k = klusterlet(
            json!({"clusterName": "c1", "deployOption": {"mode": "Singleton"},
                   "imagePullSpec": "example.com/ocm:2",
                   "workConfiguration": {"appliedManifestWorkEvictionGracePeriod": "2h"}}),
        );
        let secret = HubSecret::default();
        let objects = render(&RenderInput {
            klusterlet: &k,
            image: "ocm:1",
            control_plane_nodes: 1,
            hub_secret: &secret,
        });
        let found = deployments(&objects);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0]["metadata"]["name"], "klusterlet-agent");
        let pod = &found[0]["spec"]["template"]["spec"];
        assert_eq!(pod["serviceAccountName"], WORK_SA);
        assert_eq!(pod["containers"][0]["image"], "example.com/ocm:2");
        assert_eq!(pod["containers"][0]["command"], json!(["ocm-agent"]));
        assert_eq!(pod["containers"][0]["args"][0], "agent");
        // The one agent evicts too, after the Klusterlet's grace.
        assert!(
            pod["containers"][0]["args"]
                .as_array()
                .unwrap()
                .contains(&json!("--appliedmanifestwork-eviction-grace-period=2h")),
            "{}",
            pod["containers"][0]["args"]
        );
        assert_eq!(found[0]["spec"]["replicas"], 1);
        let accounts = objects
            .iter()
            .filter(|o| o["kind"] == "ServiceAccount")
            .count();
        assert_eq!(accounts, 1);
        // The one account holds both agents' permissions.
        let bound: Vec<&str> = objects
            .iter()
            .filter(|o| o["kind"] == "ClusterRoleBinding")
            .filter_map(|o| o["roleRef"]["name"].as_str())
            .collect();
        assert!(bound.contains(&"open-cluster-management:klusterlet-registration:agent"));
        assert!(bound.contains(&"open-cluster-management:klusterlet-work:agent"));
    }

    #[test]
    fn the_addon_namespace_is_upstreams_whatever_the_agent_namespace() {
        for spec in [
            json!({"namespace": "open-cluster-management-agent-x1"}),
            json!({}),
            json!({"deployOption": {"mode": "Hosted"}}),
        ] {
            let k = klusterlet(spec);
            let namespace = addon_namespace(&k);
            assert_eq!(
                namespace,
                json!({"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": "open-cluster-management-agent-addon",
                                    "labels": {"open-cluster-management.io/created-by-klusterlet":
                                               "klusterlet"}}})
            );
        }
    }

    #[test]
    fn the_addon_namespace_goes_with_the_last_klusterlet() {
        assert!(addon_namespace_unused("k1", []));
        assert!(addon_namespace_unused("k1", ["k1", "k1"]));
        assert!(!addon_namespace_unused("k1", ["k1", "k2"]));
    }

    #[test]
    fn the_token_addon_driver_reaches_the_registration_agent() {
        let k = klusterlet(json!({"clusterName": "c1", "registrationConfiguration": {
            "addOnKubeClientRegistrationDriver": {"authType": "token",
                                                  "token": {"expirationSeconds": 3600}}}}));
        let secret = HubSecret::default();
        let objects = render(&RenderInput {
            klusterlet: &k,
            image: "ocm:1",
            control_plane_nodes: 1,
            hub_secret: &secret,
        });
        let found = deployments(&objects);
        let args = |d: &Value| d["spec"]["template"]["spec"]["containers"][0]["args"].clone();
        let registration = args(found[0]);
        for wanted in [
            "--addon-kubeclient-registration-auth=token",
            "--addon-token-expiration-seconds=3600",
        ] {
            assert!(
                registration.as_array().unwrap().contains(&json!(wanted)),
                "{registration}"
            );
        }
        assert!(!args(found[1]).to_string().contains("addon-kubeclient"));
        // csr, the default, needs no flag.
        let csr = klusterlet(json!({"clusterName": "c1", "registrationConfiguration": {
            "addOnKubeClientRegistrationDriver": {"authType": "csr"}}}));
        let objects = render(&RenderInput {
            klusterlet: &csr,
            image: "ocm:1",
            control_plane_nodes: 1,
            hub_secret: &secret,
        });
        assert!(
            !args(deployments(&objects)[0])
                .to_string()
                .contains("addon-kubeclient")
        );
    }
}
