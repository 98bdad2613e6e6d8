//! What a ClusterManager (Default mode) puts on the hub cluster — pure.
//!
//! One namespace, `open-cluster-management-hub`; per hub component a ServiceAccount, a
//! ClusterRole and its binding, and a Deployment running the same `ocm` image with the
//! component's subcommand (`ocm hub controllers --only <component>`, `ocm hub webhook`); a
//! Service in front of each webhook server. Names follow upstream's (`<cm>-registration-controller`,
//! `<cm>-placement-controller`, `<cm>-work-controller`, `<cm>-addon-manager-controller`, and the
//! webhook servers `<cm>-registration-webhook`, `<cm>-work-webhook`, `<cm>-addon-webhook`, each
//! sent the admission reviews of its API group, the addon one also the addon CRDs'
//! conversions — [`WebhookKind::of_group`]). Upstream's
//! gates decide which components run: the work controller with the work configuration's
//! `ManifestWorkReplicaSet` or `CleanUpCompletedManifestWork` gate, the addon manager unless
//! `AddonManagement` is disabled; the work gates reach the work controller and the work
//! webhook as `--feature-gates=<name>=<bool>` flags.
//! Replicas: 1 when the hub has at most one control-plane node, else 3. Images: the
//! ClusterManager's image fields when set to something other than the CRD's defaults
//! (upstream's quay.io images), else the `ocm` image the operator runs with. The placement
//! configuration's `PlacementDebugServer` gate makes the placement pods serve the placement
//! debugger on port 9443 behind the Service `<cm>-placement` (upstream's names and port).
//!
//! A webhook server listens on its `bindConfiguration` port (default 9443; the Service's
//! target port follows) and with `hostNetwork: true` runs in the host's network
//! ([`super::hosted`]). In Hosted mode there is no addon webhook server (its webhooks go to
//! the registration server, the one address upstream's Hosted API has for them).
//!
//! An ocm-rs addition, off by default: the annotation `operator.open-cluster-management.io/dashboard:
//! "enabled"` on the ClusterManager ([`dashboard_enabled`]; an annotation, not a spec field, so
//! that the ClusterManager's schema stays upstream's) adds the web dashboard — ServiceAccount
//! `dashboard-sa`, its ClusterRole and binding ([`super::rbac`]: what the pages watch, and
//! accepting and denying join requests), one replica of `<cm>-dashboard` running `ocm dashboard
//! --in-cluster` on port 8090 (one: each process signs its forms with its own token), and the
//! Service `<cm>-dashboard` on that port. Without the annotation none of it is rendered, so
//! the controller removes what an earlier pass installed.

use ocm_api::cluster::names::hub_feature_gates as registration_gate_names;
use ocm_api::operator::names::annotations as operator_annotations;
use ocm_api::operator::v1::{ClusterManager, FeatureGate, FeatureGateMode};
use ocm_api::work::names::hub_feature_gates as work_gate_names;
use serde_json::{Value, json};

pub use super::component::{Component, WebhookKind};

/// Namespace of the hub components in Default mode.
pub const HUB_NAMESPACE: &str = "open-cluster-management-hub";

/// Secret (key `kubeconfig`) through which a Hosted ClusterManager's components reach their
/// hub, in the namespace named after the ClusterManager on the management cluster.
pub const EXTERNAL_HUB_KUBECONFIG: &str = "external-hub-kubeconfig";

/// Where Hosted components see [`EXTERNAL_HUB_KUBECONFIG`].
const HUB_KUBECONFIG_DIR: &str = "/var/run/ocm/hub-kubeconfig";

pub use super::hosted::{WEBHOOK_PORT, hosted};

/// Where the components run: `open-cluster-management-hub` on the hub, or in Hosted mode the
/// namespace named after the ClusterManager on the management cluster.
pub fn components_namespace(cm: &ClusterManager) -> String {
    if hosted(cm) {
        cm.metadata
            .name
            .clone()
            .unwrap_or_else(|| "cluster-manager".to_owned())
    } else {
        HUB_NAMESPACE.to_owned()
    }
}

/// Port of the components' /metrics, /healthz and /readyz endpoint inside their pods.
pub const METRICS_PORT: i32 = 8080;

/// Port of the placement debugger inside the placement controller's pods (and of its
/// Service `<cm>-placement`), as upstream.
pub const PLACEMENT_DEBUG_PORT: i32 = 9443;

/// Port of the dashboard inside its pod and of its Service `<cm>-dashboard`.
pub const DASHBOARD_PORT: i32 = 8090;

/// Whether the ClusterManager asks for the web dashboard: annotation
/// `operator.open-cluster-management.io/dashboard` set to `enabled`.
pub fn dashboard_enabled(cm: &ClusterManager) -> bool {
    cm.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(operator_annotations::DASHBOARD))
        .is_some_and(|v| v == operator_annotations::DASHBOARD_ENABLED)
}

/// Whether the placement configuration turns on `PlacementDebugServer` (upstream's gate, off
/// by default): the placement pods then serve the debugger and the Service
/// `<cm>-placement` leads to it.
pub fn placement_debug_server(cm: &ClusterManager) -> bool {
    let gates = cm
        .spec
        .placement_configuration
        .as_ref()
        .map(|p| p.feature_gates.as_slice())
        .unwrap_or_default();
    gate(gates, "PlacementDebugServer") == Some(FeatureGateMode::Enable)
}

/// The registration configuration's feature gates.
fn registration_gates(cm: &ClusterManager) -> &[FeatureGate] {
    cm.spec
        .registration_configuration
        .as_ref()
        .map(|r| r.feature_gates.as_slice())
        .unwrap_or_default()
}

/// Whether the registration configuration turns on `ClusterProfile` (upstream's hub gate,
/// off by default): the registration controller then keeps ClusterProfiles, the
/// ClusterProfile CRD is installed and the controller's ClusterRole covers it.
pub fn cluster_profiles(cm: &ClusterManager) -> bool {
    gate(
        registration_gates(cm),
        registration_gate_names::CLUSTER_PROFILE,
    ) == Some(FeatureGateMode::Enable)
}

/// The registration configuration's `ClusterProfile` gate as the registration controller's flag.
fn registration_gate_flags(cm: &ClusterManager) -> Vec<String> {
    let gates = registration_gates(cm);
    // DefaultClusterSet stays on: the registration webhook labels clusters into `default`
    // whatever the gate says, so the set must exist.
    [registration_gate_names::CLUSTER_PROFILE]
        .into_iter()
        .filter_map(|name| {
            gate(gates, name)
                .map(|mode| format!("--feature-gates={name}={}", mode == FeatureGateMode::Enable))
        })
        .collect()
}

/// What the rendering needs besides the ClusterManager.
#[derive(Debug, Clone)]
pub struct RenderInput<'a> {
    /// The ClusterManager.
    pub cluster_manager: &'a ClusterManager,
    /// The `ocm` image, used where the ClusterManager names no image of its own.
    pub image: &'a str,
    /// Control-plane nodes of the hub cluster (the replica rule).
    pub control_plane_nodes: usize,
}

/// Whether `feature` is set to `mode` among `gates`.
fn gate(gates: &[FeatureGate], feature: &str) -> Option<FeatureGateMode> {
    gates
        .iter()
        .rev()
        .find(|g| g.feature == feature)
        .map(|g| g.mode.unwrap_or_default())
}

/// The components this ClusterManager runs, in start order.
pub fn components(cm: &ClusterManager) -> Vec<Component> {
    let spec = &cm.spec;
    let work_gates = spec
        .work_configuration
        .as_ref()
        .map(|w| w.feature_gates.as_slice())
        .unwrap_or_default();
    let addon_gates = spec
        .add_on_manager_configuration
        .as_ref()
        .map(|a| a.feature_gates.as_slice())
        .unwrap_or_default();
    let mut out = vec![Component::Registration, Component::Placement];
    let enabled = |feature| gate(work_gates, feature) == Some(FeatureGateMode::Enable);
    if enabled(work_gate_names::MANIFEST_WORK_REPLICA_SET)
        || enabled(work_gate_names::CLEAN_UP_COMPLETED_MANIFEST_WORK)
    {
        out.push(Component::Work);
    }
    if gate(addon_gates, "AddonManagement") != Some(FeatureGateMode::Disable) {
        out.push(Component::AddonManager);
    }
    out.extend(
        super::hosted::webhook_kinds(cm)
            .into_iter()
            .map(Component::Webhook),
    );
    if dashboard_enabled(cm) {
        out.push(Component::Dashboard);
    }
    out
}

/// The work configuration's gates as the work components' flags, upstream's way: one
/// `--feature-gates=<name>=<true|false>` per gate a hub work component knows (others are
/// left out).
fn work_gate_flags(cm: &ClusterManager) -> Vec<String> {
    let gates = cm
        .spec
        .work_configuration
        .as_ref()
        .map(|w| w.feature_gates.as_slice())
        .unwrap_or_default();
    let mut flags = Vec::new();
    for name in work_gate_names::ALL {
        if let Some(mode) = gate(gates, name) {
            let on = mode == FeatureGateMode::Enable;
            flags.push(format!("--feature-gates={name}={on}"));
        }
    }
    flags
}

/// The images the ClusterManager CRD defaults its image fields to (upstream's): they mean
/// "not chosen", so the component runs the `ocm` image.
const UPSTREAM_DEFAULT_IMAGES: [&str; 4] = [
    "quay.io/open-cluster-management/registration",
    "quay.io/open-cluster-management/work",
    "quay.io/open-cluster-management/placement",
    "quay.io/open-cluster-management/addon-manager",
];

/// The image a component runs: the ClusterManager's image for it when it names one (other
/// than the CRD's default), else the `ocm` image.
fn image_of(input: &RenderInput<'_>, component: Component) -> String {
    let spec = &input.cluster_manager.spec;
    let named = match component {
        Component::Registration | Component::Webhook(WebhookKind::Registration) => {
            spec.registration_image_pull_spec.as_ref()
        }
        Component::Placement => spec.placement_image_pull_spec.as_ref(),
        Component::Work | Component::Webhook(WebhookKind::Work) => {
            spec.work_image_pull_spec.as_ref()
        }
        Component::AddonManager | Component::Webhook(WebhookKind::Addon) => {
            spec.add_on_manager_image_pull_spec.as_ref()
        }
        // No upstream image field stands for it: always the `ocm` image.
        Component::Dashboard => None,
    };
    crate::pod::chosen_image(
        named.map(String::as_str),
        &UPSTREAM_DEFAULT_IMAGES,
        input.image,
    )
}

/// Users whose clusters the registration controller accepts automatically: the deprecated
/// `autoApproveUsers` and the csr driver's `autoApprovedIdentities`.
fn auto_approved_users(cm: &ClusterManager) -> Vec<String> {
    let Some(registration) = cm.spec.registration_configuration.as_ref() else {
        return Vec::new();
    };
    let mut users = registration.auto_approve_users.clone();
    for driver in &registration.registration_drivers {
        if let Some(csr) = &driver.csr {
            users.extend(csr.auto_approved_identities.iter().cloned());
        }
    }
    users.sort();
    users.dedup();
    users
}

/// The component's container arguments (in Hosted mode, pointed at the hub through the
/// mounted external kubeconfig).
fn args(cm: &ClusterManager, component: Component) -> Vec<String> {
    let mut args = local_args(cm, component);
    if hosted(cm) {
        args.push(format!("--kubeconfig={HUB_KUBECONFIG_DIR}/kubeconfig"));
    }
    args
}

fn local_args(cm: &ClusterManager, component: Component) -> Vec<String> {
    if component == Component::Dashboard {
        // Every address of the pod (its Service leads there), as the pod's service account;
        // in Hosted mode as the external kubeconfig's user ([`args`] adds it).
        let mut args = vec![
            "dashboard".into(),
            format!("--listen=0.0.0.0:{DASHBOARD_PORT}"),
        ];
        if !hosted(cm) {
            args.push("--in-cluster".into());
        }
        return args;
    }
    let metrics = format!("0.0.0.0:{METRICS_PORT}");
    let Some(name) = component.controllers_name() else {
        let port = match component {
            Component::Webhook(kind) => super::hosted::webhook_port(cm, kind),
            _ => WEBHOOK_PORT,
        };
        let mut args = vec![
            "hub".into(),
            "webhook".into(),
            format!("--webhook-listen=0.0.0.0:{port}"),
            "--webhook-cert-dir=/var/run/ocm/webhook-serving-cert".into(),
        ];
        if component == Component::Webhook(WebhookKind::Work) {
            args.extend(work_gate_flags(cm));
        }
        return args;
    };
    let mut args = vec![
        "hub".into(),
        "controllers".into(),
        format!("--only={name}"),
        format!("--metrics-addr={metrics}"),
    ];
    if component == Component::Work {
        args.extend(work_gate_flags(cm));
    }
    if component == Component::Registration {
        args.extend(registration_gate_flags(cm));
        let users = auto_approved_users(cm);
        if !users.is_empty() {
            args.push(format!("--auto-approved-users={}", users.join(",")));
        }
    }
    if component == Component::Placement && placement_debug_server(cm) {
        args.push(format!(
            "--placement-debug-listen=0.0.0.0:{PLACEMENT_DEBUG_PORT}"
        ));
    }
    args
}

/// Name of the ClusterRole (and binding) of a component.
pub fn cluster_role_name(cm_name: &str, component: Component) -> String {
    match (component, component.controllers_name()) {
        (Component::Webhook(kind), _) => {
            format!("open-cluster-management:{cm_name}-{}:webhook", kind.name())
        }
        (Component::Dashboard, _) => format!("open-cluster-management:{cm_name}-dashboard"),
        (_, Some(name)) => format!("open-cluster-management:{cm_name}-{name}:controller"),
        (_, None) => format!("open-cluster-management:{cm_name}-webhook"),
    }
}

/// The Deployment of one component.
fn deployment(input: &RenderInput<'_>, component: Component) -> Value {
    let cm = input.cluster_manager;
    let cm_name = cm.metadata.name.as_deref().unwrap_or("cluster-manager");
    let name = format!("{cm_name}-{}", component.deployment_suffix());
    // Upstream runs one replica of each in Hosted mode; the dashboard runs one anywhere (a
    // form signed by one process would be refused by another).
    let replicas = if hosted(cm) || component == Component::Dashboard {
        1
    } else {
        crate::pod::replicas(input.control_plane_nodes)
    };
    let namespace = components_namespace(cm);
    let placement = cm.spec.node_placement.clone().unwrap_or_default();
    let mut container = json!({
        "name": component.deployment_suffix(),
        "image": image_of(input, component),
        "args": args(cm, component),
        "resources": crate::pod::container_resources(cm.spec.resource_requirement.as_ref()),
        "securityContext": crate::pod::restricted_security_context(),
    });
    let mut volumes = json!([]);
    let mut host_network = false;
    if let Component::Webhook(kind) = component {
        let port = super::hosted::webhook_port(cm, kind);
        host_network = super::hosted::webhook_host_network(cm, kind);
        container["ports"] = json!([{"name": "webhook", "containerPort": port}]);
        container["volumeMounts"] = json!([{"name": "serving-cert",
            "mountPath": "/var/run/ocm/webhook-serving-cert", "readOnly": true}]);
        volumes = json!([{"name": "serving-cert",
            "secret": {"secretName": kind.serving_secret()}}]);
    } else if component == Component::Dashboard {
        container["ports"] = json!([{"name": "http", "containerPort": DASHBOARD_PORT}]);
        container["livenessProbe"] =
            json!({"httpGet": {"path": "/healthz", "port": DASHBOARD_PORT}});
        container["readinessProbe"] =
            json!({"httpGet": {"path": "/healthz", "port": DASHBOARD_PORT}});
    } else {
        container["ports"] = json!([{"name": "metrics", "containerPort": METRICS_PORT}]);
        if component == Component::Placement && placement_debug_server(cm) {
            // The debugger's port first: where a pod listens first is when it is ready.
            container["ports"] = json!([{"name": "https", "containerPort": PLACEMENT_DEBUG_PORT},
                                        {"name": "metrics", "containerPort": METRICS_PORT}]);
        }
        container["livenessProbe"] = json!({"httpGet": {"path": "/healthz", "port": METRICS_PORT}});
        container["readinessProbe"] = json!({"httpGet": {"path": "/readyz", "port": METRICS_PORT}});
    }
    if hosted(cm) {
        let mounts = container["volumeMounts"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut mounts = mounts;
        mounts.push(
            json!({"name": "hub-kubeconfig", "mountPath": HUB_KUBECONFIG_DIR,
                           "readOnly": true}),
        );
        container["volumeMounts"] = json!(mounts);
        if let Some(list) = volumes.as_array_mut() {
            list.push(json!({"name": "hub-kubeconfig",
                             "secret": {"secretName": EXTERNAL_HUB_KUBECONFIG}}));
        }
    }
    let mut pod = json!({
        "serviceAccountName": component.service_account(),
        "nodeSelector": placement.node_selector,
        "tolerations": placement.tolerations,
        "containers": [container],
        "volumes": volumes,
    });
    if host_network {
        pod["hostNetwork"] = json!(true);
    }
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"app": name, "clustermanager.operator.open-cluster-management.io/name": cm_name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": pod,
            },
        },
    })
}

/// The hub CRDs a ClusterManager installs (all but its own; the ClusterProfile CRD with the
/// `ClusterProfile` gate). They stay when it goes, or the gate is turned off: they hold every
/// cluster's, work's and addon's data, and other tools may use ClusterProfiles.
pub fn crds(cm: &ClusterManager) -> Vec<Value> {
    let mut crds = ocm_api::crds::hub();
    if cluster_profiles(cm) {
        crds.extend(ocm_api::crds::multicluster());
    }
    crds.into_iter()
        .filter(|crd| crd.spec.group != "operator.open-cluster-management.io")
        .filter_map(|crd| serde_json::to_value(crd).ok())
        .collect()
}

/// The Lease a controller component elects its leader on (as `ocm hub controllers` names
/// them: `ocm_hub::embedded::HubComponent::leader_lease`).
pub fn leader_lease(component: Component) -> Option<String> {
    component
        .controllers_name()
        .map(|name| format!("cluster-manager-{name}-controller-lock"))
}

/// A component's ClusterRole rules: [`super::rbac::cluster_rules`], and for registration with
/// the `ClusterProfile` gate the ClusterProfile rules.
fn rules_of(cm: &ClusterManager, component: Component) -> Value {
    let mut rules = super::rbac::cluster_rules(component);
    if component == Component::Registration
        && cluster_profiles(cm)
        && let Value::Array(list) = &mut rules
    {
        list.extend(super::rbac::cluster_profile_rules());
    }
    rules
}

/// Every object of the ClusterManager. Order: namespace, then per component ServiceAccount,
/// ClusterRole and binding ([`super::rbac::cluster_rules`]), leader-election Role and binding
/// in the hub namespace (controllers), Deployment; then the webhook Services, with
/// `PlacementDebugServer` the placement debugger's Service, and with the dashboard annotation
/// the dashboard's Service.
pub fn render(input: &RenderInput<'_>) -> Vec<Value> {
    let cm = input.cluster_manager;
    let cm_name = cm.metadata.name.as_deref().unwrap_or("cluster-manager");
    let label = json!({"clustermanager.operator.open-cluster-management.io/name": cm_name});
    let namespace = components_namespace(cm);
    let hosted = hosted(cm);
    let mut out = vec![json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": namespace, "labels": label},
    })];
    for component in components(cm) {
        let role = cluster_role_name(cm_name, component);
        out.push(json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": component.service_account(), "namespace": namespace,
                         "labels": label},
        }));
        if hosted {
            // The components act on the hub as the external kubeconfig's user; here they
            // need nothing.
            out.push(deployment(input, component));
            continue;
        }
        out.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": role, "labels": label},
            "rules": rules_of(cm, component),
        }));
        out.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": role, "labels": label},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": component.service_account(),
                          "namespace": HUB_NAMESPACE}],
        }));
        if let Some(lease) = leader_lease(component)
            && let Some(rules) = super::rbac::lease_rules(component, &lease)
        {
            let election = format!("{role}:leader-election");
            out.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": election, "namespace": HUB_NAMESPACE, "labels": label},
                "rules": rules,
            }));
            out.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": election, "namespace": HUB_NAMESPACE, "labels": label},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                            "name": election},
                "subjects": [{"kind": "ServiceAccount", "name": component.service_account(),
                              "namespace": HUB_NAMESPACE}],
            }));
        }
        out.push(deployment(input, component));
    }
    for kind in super::hosted::webhook_kinds(cm) {
        let port = super::hosted::webhook_port(cm, kind);
        out.push(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": kind.service(cm_name), "namespace": namespace,
                         "labels": label},
            "spec": {"selector": {"app": kind.service(cm_name)},
                     "ports": [{"name": "webhook", "port": 443, "targetPort": port}]},
        }));
    }
    if placement_debug_server(cm) {
        let placement = format!("{cm_name}-{}", Component::Placement.deployment_suffix());
        out.push(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("{cm_name}-placement"), "namespace": namespace,
                         "labels": label},
            "spec": {"selector": {"app": placement}, "type": "ClusterIP",
                     "ports": [{"name": "https", "protocol": "TCP",
                                "port": PLACEMENT_DEBUG_PORT,
                                "targetPort": PLACEMENT_DEBUG_PORT}]},
        }));
    }
    if dashboard_enabled(cm) {
        let dashboard = format!("{cm_name}-{}", Component::Dashboard.deployment_suffix());
        out.push(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": dashboard, "namespace": namespace, "labels": label},
            "spec": {"selector": {"app": dashboard}, "type": "ClusterIP",
                     "ports": [{"name": "http", "protocol": "TCP", "port": DASHBOARD_PORT,
                                "targetPort": DASHBOARD_PORT}]},
        }));
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A ClusterManager `cluster-manager` with `spec`.
    pub(crate) fn cm(spec: Value) -> ClusterManager {
        serde_json::from_value(json!({
            "apiVersion": "operator.open-cluster-management.io/v1", "kind": "ClusterManager",
            "metadata": {"name": "cluster-manager"}, "spec": spec}))
        .unwrap()
    }

    fn rendered(cm: &ClusterManager, nodes: usize) -> Vec<Value> {
        render(&RenderInput {
            cluster_manager: cm,
            image: "ghcr.io/example/ocm:1",
            control_plane_nodes: nodes,
        })
    }

    fn deployment_named<'a>(objects: &'a [Value], name: &str) -> Option<&'a Value> {
        objects
            .iter()
            .find(|o| o["kind"] == "Deployment" && o["metadata"]["name"] == name)
    }

    #[test]
    fn default_components_with_upstream_names_and_the_ocm_image() {
        let cm = cm(json!({}));
        let objects = rendered(&cm, 1);
        assert_eq!(objects[0]["kind"], "Namespace");
        assert_eq!(objects[0]["metadata"]["name"], HUB_NAMESPACE);
        let names: Vec<&str> = objects
            .iter()
            .filter(|o| o["kind"] == "Deployment")
            .filter_map(|o| o["metadata"]["name"].as_str())
            .collect();
        assert_eq!(
            names,
            [
                "cluster-manager-registration-controller",
                "cluster-manager-placement-controller",
                "cluster-manager-addon-manager-controller",
                "cluster-manager-registration-webhook",
                "cluster-manager-work-webhook",
                "cluster-manager-addon-webhook",
            ]
        );
        let registration =
            deployment_named(&objects, "cluster-manager-registration-controller").unwrap();
        let container = &registration["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["image"], "ghcr.io/example/ocm:1");
        assert_eq!(
            container["args"],
            json!([
                "hub",
                "controllers",
                "--only=registration",
                "--metrics-addr=0.0.0.0:8080"
            ])
        );
        assert_eq!(container["resources"]["requests"]["cpu"], "2m");
        assert_eq!(registration["spec"]["replicas"], 1);
        assert_eq!(
            registration["spec"]["template"]["spec"]["serviceAccountName"],
            "registration-controller-sa"
        );
        let binding = objects
            .iter()
            .find(|o| {
                o["kind"] == "ClusterRoleBinding"
                    && o["metadata"]["name"]
                        == "open-cluster-management:cluster-manager-registration:controller"
            })
            .unwrap();
        assert_eq!(binding["subjects"][0]["name"], "registration-controller-sa");
        let election = objects
            .iter()
            .find(|o| {
                o["kind"] == "Role"
                    && o["metadata"]["name"]
                        == "open-cluster-management:cluster-manager-placement:controller:leader-election"
            })
            .unwrap();
        assert_eq!(election["metadata"]["namespace"], HUB_NAMESPACE);
        assert_eq!(
            election["rules"][1]["resourceNames"][0],
            "cluster-manager-placement-controller-lock"
        );
        // The webhook server elects no leader.
        assert!(!objects.iter().any(|o| {
            o["kind"] == "Role"
                && o["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.contains("webhook"))
        }));
        assert_eq!(objects.last().unwrap()["kind"], "Service");
    }

    #[test]
    fn hosted_components_run_in_the_cluster_managers_namespace_pointed_at_the_hub() {
        let cm = cm(json!({"deployOption": {"mode": "Hosted"}}));
        let objects = rendered(&cm, 3);
        assert_eq!(objects[0]["metadata"]["name"], "cluster-manager");
        assert!(
            !objects
                .iter()
                .any(|o| o["kind"] == "ClusterRole" || o["kind"] == "Role")
        );
        let registration =
            deployment_named(&objects, "cluster-manager-registration-controller").unwrap();
        assert_eq!(registration["metadata"]["namespace"], "cluster-manager");
        assert_eq!(registration["spec"]["replicas"], 1);
        let pod = &registration["spec"]["template"]["spec"];
        assert_eq!(
            pod["volumes"][0]["secret"]["secretName"],
            EXTERNAL_HUB_KUBECONFIG
        );
        assert!(
            pod["containers"][0]["args"]
                .to_string()
                .contains("--kubeconfig=/var/run/ocm/hub-kubeconfig/kubeconfig")
        );
        let webhook = deployment_named(&objects, "cluster-manager-work-webhook").unwrap();
        assert_eq!(
            webhook["spec"]["template"]["spec"]["volumes"][1]["secret"]["secretName"],
            EXTERNAL_HUB_KUBECONFIG
        );
    }

    #[test]
    fn hosted_webhook_servers_listen_where_their_bind_configuration_says() {
        let cm = cm(json!({"deployOption": {"mode": "Hosted", "hosted": {
            "registrationWebhookConfiguration": {"address": "10.0.0.5", "port": 30443,
                "bindConfiguration": {"port": 30443, "hostNetwork": true}},
            "workWebhookConfiguration": {"address": "10.0.0.5", "port": 31443}}}}));
        let objects = rendered(&cm, 1);
        // No addon webhook server: its webhooks go to the registration one.
        assert!(deployment_named(&objects, "cluster-manager-addon-webhook").is_none());
        assert!(
            !objects
                .iter()
                .any(|o| o["metadata"]["name"] == "cluster-manager-addon-webhook")
        );
        let registration =
            deployment_named(&objects, "cluster-manager-registration-webhook").unwrap();
        let pod = &registration["spec"]["template"]["spec"];
        assert_eq!(pod["hostNetwork"], true);
        assert_eq!(pod["containers"][0]["ports"][0]["containerPort"], 30443);
        assert!(
            pod["containers"][0]["args"]
                .to_string()
                .contains("--webhook-listen=0.0.0.0:30443")
        );
        let service = objects
            .iter()
            .find(|o| {
                o["kind"] == "Service"
                    && o["metadata"]["name"] == "cluster-manager-registration-webhook"
            })
            .unwrap();
        assert_eq!(service["spec"]["ports"][0]["targetPort"], 30443);
        // The work server: the defaults (the API server port is not the listening port).
        let work = deployment_named(&objects, "cluster-manager-work-webhook").unwrap();
        let pod = &work["spec"]["template"]["spec"];
        assert!(pod.get("hostNetwork").is_none());
        assert_eq!(
            pod["containers"][0]["ports"][0]["containerPort"],
            WEBHOOK_PORT
        );
    }

    #[test]
    fn the_cluster_profile_gate_reaches_registration_its_role_and_the_crds() {
        let has_profiles = |objects: &[Value]| {
            objects.iter().any(|o| {
                o["kind"] == "ClusterRole" && o["rules"].to_string().contains("clusterprofiles")
            })
        };
        let profile_crd = |cm: &ClusterManager| {
            crds(cm)
                .iter()
                .any(|c| c["metadata"]["name"] == "clusterprofiles.multicluster.x-k8s.io")
        };
        let off = cm(json!({}));
        assert!(!has_profiles(&rendered(&off, 1)));
        assert!(!profile_crd(&off));
        let on = cm(json!({"registrationConfiguration": {"featureGates": [
            {"feature": "ClusterProfile", "mode": "Enable"}]}}));
        let objects = rendered(&on, 1);
        assert!(has_profiles(&objects));
        assert!(profile_crd(&on));
        let registration =
            deployment_named(&objects, "cluster-manager-registration-controller").unwrap();
        let args = registration["spec"]["template"]["spec"]["containers"][0]["args"].to_string();
        assert!(
            args.contains("--feature-gates=ClusterProfile=true"),
            "{args}"
        );
        // The operator may grant what the gate needs.
        let held = crate::manifests::hub_operator_rules();
        for rule in super::super::rbac::cluster_profile_rules() {
            assert!(held.as_array().unwrap().contains(&rule), "{rule}");
        }
    }

    #[test]
    fn work_gates_reach_the_work_webhook_and_controller_as_flags() {
        let args = |objects: &[Value], name: &str| -> Vec<String> {
            deployment_named(objects, name).map_or_else(Vec::new, |d| {
                serde_json::from_value(
                    d["spec"]["template"]["spec"]["containers"][0]["args"].clone(),
                )
                .unwrap()
            })
        };
        // Only the cleanup gate: the work controller runs for it.
        let cm = cm(json!({"workConfiguration": {"featureGates": [
            {"feature": "NilExecutorValidating", "mode": "Enable"},
            {"feature": "CleanUpCompletedManifestWork", "mode": "Enable"},
            {"feature": "ManifestWorkReplicaSet", "mode": "Disable"},
            {"feature": "SomethingElse", "mode": "Enable"}]}}));
        let objects = rendered(&cm, 1);
        let expected = vec![
            "--feature-gates=NilExecutorValidating=true".to_owned(),
            "--feature-gates=ManifestWorkReplicaSet=false".to_owned(),
            "--feature-gates=CleanUpCompletedManifestWork=true".to_owned(),
        ];
        let webhook = args(&objects, "cluster-manager-work-webhook");
        assert!(webhook.starts_with(&["hub".to_owned(), "webhook".to_owned()]));
        assert!(webhook.ends_with(&expected), "{webhook:?}");
        let controller = args(&objects, "cluster-manager-work-controller");
        assert!(controller.ends_with(&expected), "{controller:?}");
        // The other webhooks get none.
        assert!(
            !args(&objects, "cluster-manager-registration-webhook")
                .iter()
                .any(|a| a.starts_with("--feature-gates"))
        );
        // No work gate enabled: no work controller.
        let objects = rendered(&self::cm(json!({})), 1);
        assert!(deployment_named(&objects, "cluster-manager-work-controller").is_none());
    }

    #[test]
    fn gates_images_placement_resources_and_replicas_follow_the_spec() {
        let cm = cm(json!({
            "registrationImagePullSpec": "quay.io/open-cluster-management/registration",
            "placementImagePullSpec": "example.com/placement:2",
            "nodePlacement": {"nodeSelector": {"role": "infra"},
                              "tolerations": [{"key": "infra", "operator": "Exists"}]},
            "resourceRequirement": {"type": "BestEffort"},
            "registrationConfiguration": {"autoApproveUsers": ["alice"],
                "registrationDrivers": [{"authType": "csr",
                                         "csr": {"autoApprovedIdentities": ["bob", "alice"]}}]},
            "workConfiguration": {"featureGates": [{"feature": "ManifestWorkReplicaSet", "mode": "Enable"}]},
            "addOnManagerConfiguration": {"featureGates": [{"feature": "AddonManagement", "mode": "Disable"}]},
        }));
        let objects = rendered(&cm, 3);
        assert!(deployment_named(&objects, "cluster-manager-work-controller").is_some());
        assert!(deployment_named(&objects, "cluster-manager-addon-manager-controller").is_none());
        let placement = deployment_named(&objects, "cluster-manager-placement-controller").unwrap();
        let pod = &placement["spec"]["template"]["spec"];
        assert_eq!(pod["containers"][0]["image"], "example.com/placement:2");
        assert_eq!(pod["containers"][0]["resources"], json!({}));
        assert_eq!(pod["nodeSelector"]["role"], "infra");
        assert_eq!(pod["tolerations"][0]["key"], "infra");
        assert_eq!(placement["spec"]["replicas"], 3);
        let registration =
            deployment_named(&objects, "cluster-manager-registration-controller").unwrap();
        // The CRD's default image means "not chosen": the ocm image.
        assert_eq!(
            registration["spec"]["template"]["spec"]["containers"][0]["image"],
            "ghcr.io/example/ocm:1"
        );
        let args = &registration["spec"]["template"]["spec"]["containers"][0]["args"];
        assert!(
            args.as_array()
                .unwrap()
                .contains(&json!("--auto-approved-users=alice,bob"))
        );
        for (name, secret) in [
            (
                "cluster-manager-registration-webhook",
                "registration-webhook-serving-cert",
            ),
            ("cluster-manager-work-webhook", "work-webhook-serving-cert"),
            (
                "cluster-manager-addon-webhook",
                "addon-webhook-serving-cert",
            ),
        ] {
            let webhook = deployment_named(&objects, name).unwrap();
            assert_eq!(
                webhook["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"],
                secret
            );
            assert_eq!(
                webhook["spec"]["template"]["spec"]["serviceAccountName"],
                format!("{}-sa", name.trim_start_matches("cluster-manager-"))
            );
        }
        let services: Vec<&str> = objects
            .iter()
            .filter(|o| o["kind"] == "Service")
            .filter_map(|o| o["metadata"]["name"].as_str())
            .collect();
        assert_eq!(
            services,
            [
                "cluster-manager-registration-webhook",
                "cluster-manager-work-webhook",
                "cluster-manager-addon-webhook"
            ]
        );
    }

    #[test]
    fn the_placement_debug_server_gate_adds_its_port_and_service() {
        let service_of = |objects: &[Value]| {
            objects
                .iter()
                .find(|o| {
                    o["kind"] == "Service" && o["metadata"]["name"] == "cluster-manager-placement"
                })
                .cloned()
        };
        let plain = rendered(&cm(json!({})), 1);
        assert!(service_of(&plain).is_none());
        let placement = deployment_named(&plain, "cluster-manager-placement-controller").unwrap();
        let args = placement["spec"]["template"]["spec"]["containers"][0]["args"].to_string();
        assert!(!args.contains("placement-debug-listen"), "{args}");

        let gated = rendered(
            &cm(json!({"placementConfiguration": {"featureGates": [
                {"feature": "PlacementDebugServer", "mode": "Enable"}]}})),
            1,
        );
        let service = service_of(&gated).unwrap();
        assert_eq!(service["metadata"]["namespace"], HUB_NAMESPACE);
        assert_eq!(service["spec"]["ports"][0]["port"], 9443);
        assert_eq!(service["spec"]["ports"][0]["targetPort"], 9443);
        assert_eq!(
            service["spec"]["selector"]["app"],
            "cluster-manager-placement-controller"
        );
        let placement = deployment_named(&gated, "cluster-manager-placement-controller").unwrap();
        let container = &placement["spec"]["template"]["spec"]["containers"][0];
        assert!(
            container["args"]
                .as_array()
                .unwrap()
                .contains(&json!("--placement-debug-listen=0.0.0.0:9443"))
        );
        assert_eq!(container["ports"][0]["containerPort"], 9443);
        assert_eq!(
            placement["spec"]["template"]["metadata"]["labels"]["app"],
            "cluster-manager-placement-controller"
        );
    }

    /// A ClusterManager with `spec` and the dashboard annotation set to `value`.
    fn annotated(spec: Value, value: &str) -> ClusterManager {
        let mut cm = cm(spec);
        cm.metadata.annotations = Some(
            [(operator_annotations::DASHBOARD.to_owned(), value.to_owned())]
                .into_iter()
                .collect(),
        );
        cm
    }

    fn mentions_the_dashboard(objects: &[Value]) -> bool {
        objects.iter().any(|o| {
            o["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.contains("dashboard"))
        })
    }

    #[test]
    fn no_dashboard_unless_the_annotation_says_enabled() {
        assert!(!mentions_the_dashboard(&rendered(&cm(json!({})), 1)));
        let other = annotated(json!({}), "true");
        assert!(!dashboard_enabled(&other));
        assert!(!mentions_the_dashboard(&rendered(&other, 1)));
    }

    #[test]
    fn the_dashboard_annotation_adds_its_account_role_deployment_and_service() {
        let cm = annotated(json!({}), "enabled");
        assert!(dashboard_enabled(&cm));
        let objects = rendered(&cm, 3);
        let find = |kind: &str, name: &str| {
            objects
                .iter()
                .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
                .unwrap_or_else(|| panic!("no {kind} {name}"))
        };
        let account = find("ServiceAccount", "dashboard-sa");
        assert_eq!(account["metadata"]["namespace"], HUB_NAMESPACE);
        let role = find(
            "ClusterRole",
            "open-cluster-management:cluster-manager-dashboard",
        );
        assert_eq!(
            role["rules"],
            super::super::rbac::cluster_rules(Component::Dashboard)
        );
        let binding = find(
            "ClusterRoleBinding",
            "open-cluster-management:cluster-manager-dashboard",
        );
        assert_eq!(binding["subjects"][0]["name"], "dashboard-sa");
        assert_eq!(binding["subjects"][0]["namespace"], HUB_NAMESPACE);
        // It elects no leader.
        assert!(!objects.iter().any(|o| {
            o["kind"] == "Role"
                && o["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.contains("dashboard"))
        }));
        let deployment = find("Deployment", "cluster-manager-dashboard");
        assert_eq!(deployment["metadata"]["namespace"], HUB_NAMESPACE);
        // One replica whatever the control plane: each process signs its own forms.
        assert_eq!(deployment["spec"]["replicas"], 1);
        let pod = &deployment["spec"]["template"]["spec"];
        assert_eq!(pod["serviceAccountName"], "dashboard-sa");
        let container = &pod["containers"][0];
        assert_eq!(container["image"], "ghcr.io/example/ocm:1");
        assert_eq!(
            container["args"],
            json!(["dashboard", "--listen=0.0.0.0:8090", "--in-cluster"])
        );
        assert_eq!(container["ports"][0]["containerPort"], DASHBOARD_PORT);
        assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/healthz");
        assert_eq!(
            container["livenessProbe"]["httpGet"]["port"],
            DASHBOARD_PORT
        );
        let service = find("Service", "cluster-manager-dashboard");
        assert_eq!(service["metadata"]["namespace"], HUB_NAMESPACE);
        assert_eq!(
            service["spec"]["selector"]["app"],
            "cluster-manager-dashboard"
        );
        assert_eq!(service["spec"]["ports"][0]["port"], 8090);
        assert_eq!(service["spec"]["ports"][0]["targetPort"], 8090);
        // Applied after everything the hub needs: last.
        assert_eq!(objects.last(), Some(service));
    }

    #[test]
    fn a_hosted_dashboard_reaches_the_hub_through_the_external_kubeconfig() {
        let objects = rendered(
            &annotated(json!({"deployOption": {"mode": "Hosted"}}), "enabled"),
            1,
        );
        let deployment = deployment_named(&objects, "cluster-manager-dashboard").unwrap();
        assert_eq!(deployment["metadata"]["namespace"], "cluster-manager");
        let pod = &deployment["spec"]["template"]["spec"];
        assert_eq!(
            pod["containers"][0]["args"],
            json!([
                "dashboard",
                "--listen=0.0.0.0:8090",
                "--kubeconfig=/var/run/ocm/hub-kubeconfig/kubeconfig"
            ])
        );
        assert_eq!(
            pod["volumes"][0]["secret"]["secretName"],
            EXTERNAL_HUB_KUBECONFIG
        );
        assert!(!objects.iter().any(|o| o["kind"] == "ClusterRole"));
    }
}
