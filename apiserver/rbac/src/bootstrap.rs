//! The default ("bootstrap") RBAC policy kube-apiserver creates on start, as JSON objects with
//! kube's label `kubernetes.io/bootstrapping: rbac-defaults` and annotation
//! `rbac.authorization.kubernetes.io/autoupdate: "true"`.
//!
//! Included: `cluster-admin`; the aggregated `admin`, `edit`, `view` (with their
//! `aggregate-to-*` labels and the `system:aggregate-to-*` roles feeding them); the discovery
//! roles `system:discovery`, `system:basic-user`, `system:public-info-viewer`,
//! `system:monitoring`, `system:service-account-issuer-discovery`, `system:auth-delegator`;
//! the certificate roles `system:node-bootstrapper`, the CSR node-client roles and the four
//! `system:certificates.k8s.io:*-approver` roles; the ClusterRoleBindings kube makes for
//! them; and the Role `kube-system/extension-apiserver-authentication-reader` that extension
//! API servers and webhooks bind to read the client CA. Left out: roles for components that do not exist here (nodes, scheduler,
//! controller-manager controllers, kube-proxy, ...).
//!
//! The aggregated roles carry `rules: null`; run [`super::Policy::aggregate_to_fixed_point`]
//! (or the controller pass) to fill them, as kube-controller-manager would.

use serde_json::{Value, json};

const LABEL_KEY: &str = "kubernetes.io/bootstrapping";
const LABEL_VALUE: &str = "rbac-defaults";
const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn res(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

fn named(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> Value {
    json!({"apiGroups": groups, "resourceNames": names, "resources": resources, "verbs": verbs})
}

fn urls(verbs: &[&str], urls: &[&str]) -> Value {
    json!({"nonResourceURLs": urls, "verbs": verbs})
}

fn metadata(name: &str, extra_labels: &[(&str, &str)]) -> Value {
    let mut labels = serde_json::Map::new();
    labels.insert(LABEL_KEY.into(), LABEL_VALUE.into());
    for (k, v) in extra_labels {
        labels.insert((*k).into(), (*v).into());
    }
    json!({"annotations": {AUTOUPDATE: "true"}, "labels": labels, "name": name})
}

fn cluster_role(name: &str, rules: Vec<Value>) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata(name, &[]),
        "rules": rules,
    })
}

fn aggregated(name: &str, to: &str, labels: &[(&str, &str)]) -> Value {
    json!({
        "aggregationRule": {"clusterRoleSelectors": [
            {"matchLabels": {format!("rbac.authorization.k8s.io/aggregate-to-{to}"): "true"}}
        ]},
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata(name, labels),
        "rules": null,
    })
}

fn aggregate_to(name: &str, to: &str, rules: Vec<Value>) -> Value {
    let label = format!("rbac.authorization.k8s.io/aggregate-to-{to}");
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata(name, &[(&label, "true")]),
        "rules": rules,
    })
}

fn approver(signer: &str) -> Value {
    let short = signer.trim_start_matches("kubernetes.io/");
    cluster_role(
        &format!("system:certificates.k8s.io:{short}-approver"),
        vec![named(
            &["approve"],
            &["certificates.k8s.io"],
            &["signers"],
            &[signer],
        )],
    )
}

/// The default ClusterRoles, sorted by name.
pub fn cluster_roles() -> Vec<Value> {
    let mut roles = vec![
        aggregated("admin", "admin", &[]),
        cluster_role(
            "cluster-admin",
            vec![res(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])],
        ),
        aggregated(
            "edit",
            "edit",
            &[("rbac.authorization.k8s.io/aggregate-to-admin", "true")],
        ),
        aggregate_to(
            "system:aggregate-to-admin",
            "admin",
            vec![
                res(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews"],
                ),
                res(
                    READ_WRITE,
                    &["rbac.authorization.k8s.io"],
                    &["rolebindings", "roles"],
                ),
            ],
        ),
        aggregate_to(
            "system:aggregate-to-edit",
            "edit",
            aggregate_to_edit_rules(),
        ),
        aggregate_to(
            "system:aggregate-to-view",
            "view",
            aggregate_to_view_rules(),
        ),
        cluster_role(
            "system:auth-delegator",
            vec![
                res(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
                res(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                ),
            ],
        ),
        cluster_role(
            "system:basic-user",
            vec![
                res(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                res(
                    &["create"],
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                ),
            ],
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            vec![res(
                &["create"],
                &["certificates.k8s.io"],
                &["certificatesigningrequests/nodeclient"],
            )],
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            vec![res(
                &["create"],
                &["certificates.k8s.io"],
                &["certificatesigningrequests/selfnodeclient"],
            )],
        ),
        approver("kubernetes.io/kube-apiserver-client"),
        approver("kubernetes.io/kube-apiserver-client-kubelet"),
        approver("kubernetes.io/kubelet-serving"),
        approver("kubernetes.io/legacy-unknown"),
        cluster_role(
            "system:discovery",
            vec![urls(
                &["get"],
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
            )],
        ),
        cluster_role(
            "system:monitoring",
            vec![urls(
                &["get"],
                &[
                    "/healthz",
                    "/healthz/*",
                    "/livez",
                    "/livez/*",
                    "/metrics",
                    "/metrics/slis",
                    "/readyz",
                    "/readyz/*",
                ],
            )],
        ),
        cluster_role(
            "system:node-bootstrapper",
            vec![res(
                &["create", "get", "list", "watch"],
                &["certificates.k8s.io"],
                &["certificatesigningrequests"],
            )],
        ),
        cluster_role(
            "system:public-info-viewer",
            vec![urls(
                &["get"],
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
            )],
        ),
        cluster_role(
            "system:service-account-issuer-discovery",
            vec![urls(
                &["get"],
                &["/.well-known/openid-configuration", "/openid/v1/jwks"],
            )],
        ),
        aggregated(
            "view",
            "view",
            &[("rbac.authorization.k8s.io/aggregate-to-edit", "true")],
        ),
    ];
    roles.sort_by(|a, b| {
        let name = |v: &Value| v["metadata"]["name"].as_str().unwrap_or("").to_owned();
        name(a).cmp(&name(b))
    });
    roles
}

fn aggregate_to_edit_rules() -> Vec<Value> {
    vec![
        res(
            READ,
            &[""],
            &[
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy",
                "secrets",
                "services/proxy",
            ],
        ),
        res(&["impersonate"], &[""], &["serviceaccounts"]),
        res(
            WRITE,
            &[""],
            &[
                "pods",
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy",
            ],
        ),
        res(&["create"], &[""], &["pods/eviction"]),
        res(
            WRITE,
            &[""],
            &[
                "configmaps",
                "events",
                "persistentvolumeclaims",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "secrets",
                "serviceaccounts",
                "services",
                "services/proxy",
            ],
        ),
        res(&["create"], &[""], &["serviceaccounts/token"]),
        res(
            WRITE,
            &["apps"],
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "replicasets",
                "replicasets/scale",
                "statefulsets",
                "statefulsets/scale",
            ],
        ),
        res(WRITE, &["autoscaling"], &["horizontalpodautoscalers"]),
        res(WRITE, &["batch"], &["cronjobs", "jobs"]),
        res(
            WRITE,
            &["extensions"],
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "ingresses",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale",
            ],
        ),
        res(WRITE, &["policy"], &["poddisruptionbudgets"]),
        res(
            WRITE,
            &["networking.k8s.io"],
            &["ingresses", "networkpolicies"],
        ),
        res(READ_WRITE, &["coordination.k8s.io"], &["leases"]),
    ]
}

fn aggregate_to_view_rules() -> Vec<Value> {
    vec![
        res(
            READ,
            &[""],
            &[
                "configmaps",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
            ],
        ),
        res(
            READ,
            &[""],
            &[
                "bindings",
                "events",
                "limitranges",
                "namespaces/status",
                "pods/log",
                "pods/status",
                "replicationcontrollers/status",
                "resourcequotas",
                "resourcequotas/status",
            ],
        ),
        res(READ, &[""], &["namespaces"]),
        res(READ, &["discovery.k8s.io"], &["endpointslices"]),
        res(
            READ,
            &["apps"],
            &[
                "controllerrevisions",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status",
            ],
        ),
        res(
            READ,
            &["autoscaling"],
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ],
        ),
        res(
            READ,
            &["batch"],
            &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
        ),
        res(
            READ,
            &["extensions"],
            &[
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale",
            ],
        ),
        res(
            READ,
            &["policy"],
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
        res(
            READ,
            &["networking.k8s.io"],
            &["ingresses", "ingresses/status", "networkpolicies"],
        ),
    ]
}

fn binding(name: &str, role: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}))
        .collect();
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": metadata(name, &[]),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    })
}

/// The default ClusterRoleBindings, sorted by name.
pub fn cluster_role_bindings() -> Vec<Value> {
    vec![
        binding("cluster-admin", "cluster-admin", &["system:masters"]),
        binding(
            "system:basic-user",
            "system:basic-user",
            &["system:authenticated"],
        ),
        binding(
            "system:discovery",
            "system:discovery",
            &["system:authenticated"],
        ),
        binding(
            "system:monitoring",
            "system:monitoring",
            &["system:monitoring"],
        ),
        binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            &["system:authenticated", "system:unauthenticated"],
        ),
        binding(
            "system:service-account-issuer-discovery",
            "system:service-account-issuer-discovery",
            &["system:serviceaccounts"],
        ),
    ]
}

/// The default Roles (kube-system's `extension-apiserver-authentication-reader`).
pub fn roles() -> Vec<Value> {
    let name = "extension-apiserver-authentication-reader";
    let mut metadata = metadata(name, &[]);
    metadata["namespace"] = json!("kube-system");
    vec![json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": metadata,
        "rules": [named(READ, &[""], &["configmaps"], &["extension-apiserver-authentication"])],
    })]
}

/// Every default object: ClusterRoles, then ClusterRoleBindings, then Roles.
pub fn default_objects() -> Vec<Value> {
    let mut all = cluster_roles();
    all.extend(cluster_role_bindings());
    all.extend(roles());
    all
}
