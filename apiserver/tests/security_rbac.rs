//! RBAC evaluation, table-driven: every rule field, every subject kind, aggregation, the
//! bootstrap policy, escalation prevention, Forbidden messages and access reviews.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ocm_apiserver::Identity;
use ocm_apiserver_rbac::{
    Attributes, Forbidden, Policy, RbacWrite, ResourceAttributes, Target, authorized_for_signer,
    bootstrap, check_escalation, local_subject_access_review, self_subject_access_review,
    self_subject_rules_review, signer_forbidden, subject_access_review,
};
use serde_json::{Value, json};

fn user(name: &str, groups: &[&str]) -> Identity {
    Identity {
        user: name.into(),
        groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        ..Default::default()
    }
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
           "metadata": {"name": name}, "rules": rules})
}

fn role(ns: &str, name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
           "metadata": {"name": name, "namespace": ns}, "rules": rules})
}

fn crb(name: &str, role: &str, subjects: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
           "metadata": {"name": name},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
           "subjects": subjects})
}

fn rb(ns: &str, name: &str, kind: &str, role: &str, subjects: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
           "metadata": {"name": name, "namespace": ns},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
           "subjects": subjects})
}

/// The shared RBAC table (`tests/data/rbac_cases.json`): objects exercising every rule field
/// and subject kind, and the cases asked of them — here of the evaluator directly, in
/// `cli/tests/apiserver_process.rs` through the API with real `kubectl auth can-i`.
fn table() -> Value {
    serde_json::from_str(include_str!("data/rbac_cases.json")).expect("valid table")
}

/// The policy of the shared table, including the objects only the evaluator sees.
fn policy() -> Policy {
    let t = table();
    let objects: Vec<Value> = ["objects", "unitOnlyObjects"]
        .iter()
        .flat_map(|k| t[*k].as_array().cloned().unwrap_or_default())
        .collect();
    Policy::from_values(&objects).expect("valid policy")
}

const SA_ROBOT: &str = "system:serviceaccount:ops:robot";
const SA_WORKER: &str = "system:serviceaccount:team:worker";
const SA_OTHER: &str = "system:serviceaccount:team:other";

fn text<'a>(case: &'a Value, key: &str) -> &'a str {
    case[key].as_str().unwrap_or_default()
}

fn groups_of(case: &Value) -> Vec<&str> {
    case["groups"]
        .as_array()
        .map(|g| g.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[test]
fn resource_rules_table() {
    let p = policy();
    let t = table();
    let cases = t["resource"].as_array().expect("cases");
    assert!(cases.len() >= 40);
    for c in cases {
        let attrs = Attributes {
            user: user(text(c, "user"), &groups_of(c)),
            verb: text(c, "verb").into(),
            target: Target::Resource(ResourceAttributes {
                namespace: text(c, "namespace").into(),
                group: text(c, "group").into(),
                resource: text(c, "resource").into(),
                subresource: text(c, "subresource").into(),
                name: text(c, "name").into(),
                ..ResourceAttributes::default()
            }),
        };
        assert_eq!(
            p.authorize(&attrs).allowed,
            c["allowed"].as_bool().expect("allowed"),
            "case: {}",
            text(c, "what")
        );
    }
}

#[test]
fn non_resource_rules_table() {
    let p = policy();
    let t = table();
    for c in t["nonResource"].as_array().expect("cases") {
        let (name, verb, path) = (text(c, "user"), text(c, "verb"), text(c, "path"));
        let attrs = Attributes::non_resource(user(name, &groups_of(c)), verb, path);
        assert_eq!(
            p.authorize(&attrs).allowed,
            c["allowed"].as_bool().expect("allowed"),
            "{name} {verb} {path}"
        );
    }
    // A resource rule never grants a path and vice versa.
    let attrs = Attributes::non_resource(user("alice", &[]), "get", "/api/v1/pods");
    assert!(!p.allows(&attrs));
}

#[test]
fn allow_reasons_name_binding_role_and_subject() {
    let p = policy();
    let d = p.authorize(&Attributes::resource(
        user("alice", &[]),
        "get",
        "",
        "pods",
        "ns",
    ));
    assert_eq!(
        d.reason,
        r#"RBAC: allowed by ClusterRoleBinding "u-pods" of ClusterRole "pod-reader" to User "alice""#
    );
    let d = p.authorize(&Attributes::resource(
        user("x", &["deployers"]),
        "get",
        "apps",
        "deployments",
        "",
    ));
    assert_eq!(
        d.reason,
        r#"RBAC: allowed by ClusterRoleBinding "g-deploy" of ClusterRole "any-verb-deploy" to Group "deployers""#
    );
    let d = p.authorize(
        &Attributes::resource(
            user(SA_WORKER, &[]),
            "get",
            "coordination.k8s.io",
            "leases",
            "team",
        )
        .with_name("l"),
    );
    assert_eq!(
        d.reason,
        r#"RBAC: allowed by RoleBinding "rb-lease/team" of Role "lease-holder" to ServiceAccount "worker/team""#
    );
    let d = p.authorize(&Attributes::resource(
        user(SA_ROBOT, &[]),
        "get",
        "",
        "configmaps",
        "x",
    ));
    assert_eq!(
        d.reason,
        r#"RBAC: allowed by ClusterRoleBinding "sa-cm" of ClusterRole "cm-editor" to ServiceAccount "robot/ops""#
    );
    let d = p.authorize(&Attributes::resource(
        user("root", &["system:masters"]),
        "get",
        "",
        "pods",
        "",
    ));
    assert!(d.allowed);
    assert_eq!(d.reason, "");
}

#[test]
fn denial_reason_lists_resolution_errors() {
    let p = policy();
    let attrs = Attributes::resource(user("gina", &[]), "get", "", "pods", "team").with_name("p");
    let d = p.authorize(&attrs);
    assert!(!d.allowed);
    assert_eq!(
        d.reason,
        r#"RBAC: [unsupported role reference kind: "Thing", clusterrole.rbac.authorization.k8s.io "does-not-exist" not found]"#
    );
    let f = Forbidden::for_request(&attrs, &d.reason);
    assert_eq!(
        f.message,
        r#"pods "p" is forbidden: User "gina" cannot get resource "pods" in API group "" in the namespace "team": RBAC: [unsupported role reference kind: "Thing", clusterrole.rbac.authorization.k8s.io "does-not-exist" not found]"#
    );
    // Outside that namespace the bindings are not visited: no reason.
    let d = p.authorize(&Attributes::resource(
        user("gina", &[]),
        "get",
        "",
        "pods",
        "other",
    ));
    assert_eq!(d.reason, "");
}

#[test]
fn forbidden_messages_match_kube() {
    let u = user("bob", &["system:authenticated"]);
    let cases = [
        (
            Attributes::resource(u.clone(), "list", "", "secrets", "ns"),
            r#"secrets is forbidden: User "bob" cannot list resource "secrets" in API group "" in the namespace "ns""#,
        ),
        (
            Attributes::resource(u.clone(), "list", "", "nodes", ""),
            r#"nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at the cluster scope"#,
        ),
        (
            Attributes::resource(u.clone(), "get", "apps", "deployments", "ns")
                .with_name("web")
                .with_subresource("scale"),
            r#"deployments.apps "web" is forbidden: User "bob" cannot get resource "deployments/scale" in API group "apps" in the namespace "ns""#,
        ),
        (
            Attributes::resource(
                u.clone(),
                "create",
                "certificates.k8s.io",
                "certificatesigningrequests",
                "",
            ),
            r#"certificatesigningrequests.certificates.k8s.io is forbidden: User "bob" cannot create resource "certificatesigningrequests" in API group "certificates.k8s.io" at the cluster scope"#,
        ),
        (
            Attributes::non_resource(u.clone(), "get", "/metrics"),
            r#"forbidden: User "bob" cannot get path "/metrics""#,
        ),
        (
            Attributes::resource(u, "impersonate", "", "users", "").with_name("admin"),
            r#"users "admin" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope"#,
        ),
    ];
    for (attrs, want) in cases {
        assert_eq!(Forbidden::for_request(&attrs, "").message, want);
    }
    // Status shape.
    let attrs =
        Attributes::resource(user("bob", &[]), "get", "apps", "deployments", "ns").with_name("web");
    let status = Forbidden::for_request(&attrs, "")
        .to_api_error()
        .to_status();
    assert_eq!(status["code"], 403);
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["details"],
        json!({"name": "web", "group": "apps", "kind": "deployments"})
    );
    let status =
        Forbidden::for_request(&Attributes::non_resource(user("bob", &[]), "get", "/x"), "")
            .to_api_error()
            .to_status();
    assert_eq!(status["details"], json!({}));
}

#[test]
fn aggregation_follows_selectors_and_chains() {
    let objects = vec![
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "top"},
               "aggregationRule": {"clusterRoleSelectors": [
                   {"matchLabels": {"agg": "top"}},
                   {"matchExpressions": [{"key": "extra", "operator": "Exists"}]}]},
               "rules": [{"apiGroups": [""], "resources": ["stale"], "verbs": ["get"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "middle", "labels": {"agg": "top"}},
               "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "middle"}}]}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "b-leaf", "labels": {"agg": "middle"}},
               "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "a-leaf", "labels": {"agg": "middle"}},
               "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
                         {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "other", "labels": {"extra": "x"}},
               "rules": [{"nonResourceURLs": ["/x"], "verbs": ["get"]}]}),
        crb(
            "top-to-tom",
            "top",
            json!([{"kind": "User", "name": "tom"}]),
        ),
    ];
    let mut p = Policy::from_values(&objects).expect("policy");
    // One controller pass: "middle" gathers its leaves (by name: a-leaf first, duplicates
    // dropped); "top" gathers middle's current (empty) rules plus "other", dropping "stale".
    let pending = p.pending_aggregations();
    let names: Vec<&str> = pending.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["middle", "top"]);
    let middle = &pending[0].1;
    assert_eq!(middle.len(), 2);
    assert_eq!(
        middle[0].resources.as_deref(),
        Some(&["configmaps".to_owned()][..])
    );
    let changed = p.aggregate_to_fixed_point();
    assert_eq!(changed, ["middle", "top"]);
    assert!(p.pending_aggregations().is_empty());
    let tom = user("tom", &[]);
    assert!(p.allows(&Attributes::resource(tom.clone(), "get", "", "pods", "ns")));
    assert!(p.allows(&Attributes::resource(
        tom.clone(),
        "get",
        "",
        "configmaps",
        "ns"
    )));
    assert!(p.allows(&Attributes::non_resource(tom.clone(), "get", "/x")));
    assert!(!p.allows(&Attributes::resource(tom, "get", "", "stale", "ns")));
}

#[test]
fn bootstrap_policy_grants_what_kube_grants() {
    let p = Policy::bootstrap();
    let anon = user("system:anonymous", &["system:unauthenticated"]);
    let authed = user("someone", &["system:authenticated"]);
    for path in ["/version", "/version/", "/healthz", "/livez", "/readyz"] {
        assert!(
            p.allows(&Attributes::non_resource(anon.clone(), "get", path)),
            "{path}"
        );
    }
    for path in ["/api", "/apis/apps/v1", "/openapi/v3", "/metrics"] {
        assert!(
            !p.allows(&Attributes::non_resource(anon.clone(), "get", path)),
            "anon {path}"
        );
    }
    for path in [
        "/api",
        "/api/v1",
        "/apis",
        "/apis/apps",
        "/openapi/v3/apis/apps/v1",
        "/version",
    ] {
        assert!(
            p.allows(&Attributes::non_resource(authed.clone(), "get", path)),
            "{path}"
        );
    }
    assert!(!p.allows(&Attributes::non_resource(authed.clone(), "get", "/metrics")));
    for r in ["selfsubjectaccessreviews", "selfsubjectrulesreviews"] {
        assert!(p.allows(&Attributes::resource(
            authed.clone(),
            "create",
            "authorization.k8s.io",
            r,
            ""
        )));
        assert!(!p.allows(&Attributes::resource(
            anon.clone(),
            "create",
            "authorization.k8s.io",
            r,
            ""
        )));
    }
    assert!(!p.allows(&Attributes::resource(
        authed.clone(),
        "list",
        "",
        "pods",
        "default"
    )));

    // Aggregated roles got their rules, with kube's labels and annotations on the objects.
    let view = p.cluster_role("view").expect("view");
    assert!(view.rules.as_ref().is_some_and(|r| !r.is_empty()));
    let admin_obj = bootstrap::cluster_roles()
        .into_iter()
        .find(|r| r["metadata"]["name"] == "admin")
        .expect("admin");
    assert_eq!(
        admin_obj["metadata"]["labels"]["kubernetes.io/bootstrapping"],
        "rbac-defaults"
    );
    assert_eq!(
        admin_obj["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
        "true"
    );
    assert_eq!(
        admin_obj["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"]["rbac.authorization.k8s.io/aggregate-to-admin"],
        "true"
    );

    // view < edit < admin, each bound in a namespace.
    let mut p = p;
    for (who, r) in [("v", "view"), ("e", "edit"), ("a", "admin")] {
        p.upsert(&rb(
            "ns",
            who,
            "ClusterRole",
            r,
            json!([{"kind": "User", "name": who}]),
        ))
        .expect("binding");
    }
    let can = |who: &str, verb: &str, group: &str, res: &str| {
        p.allows(&Attributes::resource(
            user(who, &["system:authenticated"]),
            verb,
            group,
            res,
            "ns",
        ))
    };
    assert!(can("v", "list", "", "pods"));
    assert!(!can("v", "get", "", "secrets"));
    assert!(!can("v", "create", "", "pods"));
    assert!(can("e", "get", "", "secrets"));
    assert!(can("e", "create", "apps", "deployments"));
    assert!(can("e", "list", "", "pods"));
    assert!(!can("e", "create", "rbac.authorization.k8s.io", "roles"));
    assert!(can("a", "create", "rbac.authorization.k8s.io", "roles"));
    assert!(can("a", "get", "", "secrets"));
    assert!(!can("a", "list", "", "nodes"));

    // Signer approval roles use resourceNames.
    let mut p = Policy::bootstrap();
    p.upsert(&crb(
        "approvers",
        "system:certificates.k8s.io:kube-apiserver-client-approver",
        json!([{"kind": "User", "name": "approver"}]),
    ))
    .expect("crb");
    let approve = |signer: &str| {
        Attributes::resource(
            user("approver", &[]),
            "approve",
            "certificates.k8s.io",
            "signers",
            "",
        )
        .with_name(signer)
    };
    assert!(p.allows(&approve("kubernetes.io/kube-apiserver-client")));
    assert!(!p.allows(&approve("kubernetes.io/kubelet-serving")));
    assert!(!p.allows(&approve("example.com/custom")));
    // The bootstrapper role lets a bootstrap token create CSRs and nothing else.
    p.upsert(&crb(
        "bootstrappers",
        "system:node-bootstrapper",
        json!([{"kind": "Group", "name": "system:bootstrappers"}]),
    ))
    .expect("crb");
    let token = user(
        "system:bootstrap:abcdef",
        &["system:bootstrappers", "system:authenticated"],
    );
    assert!(p.allows(&Attributes::resource(
        token.clone(),
        "create",
        "certificates.k8s.io",
        "certificatesigningrequests",
        ""
    )));
    assert!(
        !p.allows(
            &Attributes::resource(
                token.clone(),
                "update",
                "certificates.k8s.io",
                "certificatesigningrequests",
                ""
            )
            .with_subresource("approval")
        )
    );
    assert!(!p.allows(&Attributes::resource(
        token,
        "get",
        "",
        "secrets",
        "kube-system"
    )));
}

fn write<'a>(
    resource: &'a str,
    ns: &'a str,
    obj: &'a Value,
    old: Option<&'a Value>,
) -> RbacWrite<'a> {
    RbacWrite {
        resource,
        namespace: ns,
        request_name: if old.is_some() {
            obj["metadata"]["name"].as_str().unwrap_or("")
        } else {
            ""
        },
        object: obj,
        old_object: old,
    }
}

#[test]
fn role_escalation_is_refused_unless_held_or_escalate() {
    let mut p = policy();
    // frank holds cm-editor in "team" and may write roles there.
    p.upsert(&cluster_role("role-writer", json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"], "verbs": ["create", "update"]}])))
        .expect("role");
    p.upsert(&rb(
        "team",
        "rw",
        "ClusterRole",
        "role-writer",
        json!([{"kind": "User", "name": "frank"}]),
    ))
    .expect("rb");
    let frank = user("frank", &["system:authenticated"]);

    let held = role(
        "team",
        "ok",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "update"]}]),
    );
    assert_eq!(
        check_escalation(&p, &frank, &write("roles", "team", &held, None)),
        Ok(())
    );

    let not_held = role(
        "team",
        "sneaky",
        json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]},
                                                  {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "delete"]}]),
    );
    let err = check_escalation(&p, &frank, &write("roles", "team", &not_held, None))
        .expect_err("escalation");
    assert_eq!(
        err.message,
        "roles.rbac.authorization.k8s.io \"sneaky\" is forbidden: user \"frank\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
         {APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"delete\"]}\n\
         {APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}"
    );
    let status = err.to_api_error().to_status();
    assert_eq!(status["code"], 403);
    assert_eq!(
        status["details"],
        json!({"name": "sneaky", "group": "rbac.authorization.k8s.io", "kind": "roles"})
    );

    // What frank holds in "team" he does not hold in "other".
    let elsewhere = role(
        "other",
        "ok",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]),
    );
    assert!(check_escalation(&p, &frank, &write("roles", "other", &elsewhere, None)).is_err());

    // escalate on roles lifts the check.
    p.upsert(&cluster_role("escalator", json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]}])))
        .expect("role");
    p.upsert(&rb(
        "team",
        "esc",
        "ClusterRole",
        "escalator",
        json!([{"kind": "User", "name": "frank"}]),
    ))
    .expect("rb");
    assert_eq!(
        check_escalation(&p, &frank, &write("roles", "team", &not_held, None)),
        Ok(())
    );

    // system:masters is never checked.
    let root = user("root", &["system:masters"]);
    let cluster_wide = cluster_role(
        "big",
        json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
    );
    assert_eq!(
        check_escalation(&p, &root, &write("clusterroles", "", &cluster_wide, None)),
        Ok(())
    );

    // Other resources are not checked.
    assert_eq!(
        check_escalation(&p, &frank, &write("configmaps", "team", &not_held, None)),
        Ok(())
    );
}

#[test]
fn escalate_restricted_by_name_helps_only_updates() {
    let mut p = Policy::new();
    p.upsert(&cluster_role("esc-one", json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "resourceNames": ["target"], "verbs": ["escalate"]}])))
        .expect("role");
    p.upsert(&crb(
        "esc-one",
        "esc-one",
        json!([{"kind": "User", "name": "ivy"}]),
    ))
    .expect("crb");
    let ivy = user("ivy", &[]);
    let new = cluster_role(
        "target",
        json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]),
    );
    let old = cluster_role("target", json!([]));
    assert!(check_escalation(&p, &ivy, &write("clusterroles", "", &new, None)).is_err());
    assert_eq!(
        check_escalation(&p, &ivy, &write("clusterroles", "", &new, Some(&old))),
        Ok(())
    );
}

#[test]
fn gc_only_updates_are_not_checked() {
    let p = Policy::new();
    let nobody = user("gc", &[]);
    let old = cluster_role(
        "r",
        json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]),
    );
    let mut new = old.clone();
    new["metadata"]["finalizers"] = json!(["x/y"]);
    new["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "1"}]);
    assert_eq!(
        check_escalation(&p, &nobody, &write("clusterroles", "", &new, Some(&old))),
        Ok(())
    );
    new["metadata"]["labels"] = json!({"a": "b"});
    assert!(check_escalation(&p, &nobody, &write("clusterroles", "", &new, Some(&old))).is_err());
}

#[test]
fn aggregation_rule_needs_full_authority() {
    let mut p = Policy::new();
    p.upsert(&cluster_role("cr-writer", json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["create"]}])))
        .expect("role");
    p.upsert(&crb(
        "w",
        "cr-writer",
        json!([{"kind": "User", "name": "jo"}]),
    ))
    .expect("crb");
    let jo = user("jo", &[]);
    let agg = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                     "metadata": {"name": "agg"},
                     "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}});
    let err =
        check_escalation(&p, &jo, &write("clusterroles", "", &agg, None)).expect_err("refused");
    assert_eq!(
        err.message,
        r#"clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule"#
    );
    p.upsert(&cluster_role(
        "everything",
        json!([
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
    ))
    .expect("role");
    p.upsert(&crb(
        "jo-all",
        "everything",
        json!([{"kind": "User", "name": "jo"}]),
    ))
    .expect("crb");
    assert_eq!(
        check_escalation(&p, &jo, &write("clusterroles", "", &agg, None)),
        Ok(())
    );
}

#[test]
fn binding_escalation_needs_held_rules_or_bind() {
    let mut p = Policy::bootstrap();
    p.upsert(&cluster_role("binder", json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings", "clusterrolebindings"], "verbs": ["create"]}])))
        .expect("role");
    p.upsert(&rb(
        "team",
        "b",
        "ClusterRole",
        "binder",
        json!([{"kind": "User", "name": "kim"}]),
    ))
    .expect("rb");
    p.upsert(&rb(
        "team",
        "kim-edit",
        "ClusterRole",
        "edit",
        json!([{"kind": "User", "name": "kim"}]),
    ))
    .expect("rb");
    let kim = user("kim", &["system:authenticated"]);

    // kim holds edit in team: may bind view (a subset) and edit, not admin.
    let bind_view = rb(
        "team",
        "v",
        "ClusterRole",
        "view",
        json!([{"kind": "User", "name": "x"}]),
    );
    assert_eq!(
        check_escalation(&p, &kim, &write("rolebindings", "team", &bind_view, None)),
        Ok(())
    );
    let bind_admin = rb(
        "team",
        "alice-escalate",
        "ClusterRole",
        "admin",
        json!([{"kind": "User", "name": "kim"}]),
    );
    let err = check_escalation(&p, &kim, &write("rolebindings", "team", &bind_admin, None))
        .expect_err("refused");
    assert!(
        err.message.starts_with(
            "rolebindings.rbac.authorization.k8s.io \"alice-escalate\" is forbidden: user \"kim\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n"
        ),
        "{}",
        err.message
    );
    // kim already holds `create` on rolebindings (through "binder"), so only the rest is missing.
    assert!(err.message.ends_with(
        "{APIGroups:[\"authorization.k8s.io\"], Resources:[\"localsubjectaccessreviews\"], Verbs:[\"create\"]}\n\
         {APIGroups:[\"rbac.authorization.k8s.io\"], Resources:[\"rolebindings\"], Verbs:[\"delete\" \"deletecollection\" \"get\" \"list\" \"patch\" \"update\" \"watch\"]}\n\
         {APIGroups:[\"rbac.authorization.k8s.io\"], Resources:[\"roles\"], Verbs:[\"create\" \"delete\" \"deletecollection\" \"get\" \"list\" \"patch\" \"update\" \"watch\"]}"
    ), "{}", err.message);
    // Not in another namespace, and not cluster-wide.
    let bind_view_other = rb(
        "other",
        "v",
        "ClusterRole",
        "view",
        json!([{"kind": "User", "name": "x"}]),
    );
    assert!(
        check_escalation(
            &p,
            &kim,
            &write("rolebindings", "other", &bind_view_other, None)
        )
        .is_err()
    );
    let crb_view = crb("v", "view", json!([{"kind": "User", "name": "x"}]));
    assert!(
        check_escalation(&p, &kim, &write("clusterrolebindings", "", &crb_view, None)).is_err()
    );

    // A missing role: the resolution error is the message.
    let missing = rb(
        "team",
        "m",
        "Role",
        "nope",
        json!([{"kind": "User", "name": "x"}]),
    );
    let err = check_escalation(&p, &kim, &write("rolebindings", "team", &missing, None))
        .expect_err("refused");
    assert_eq!(
        err.message,
        r#"rolebindings.rbac.authorization.k8s.io "m" is forbidden: role.rbac.authorization.k8s.io "nope" not found"#
    );

    // bind on the named ClusterRole in that namespace lifts the check (even for missing rules).
    p.upsert(&cluster_role("admin-binder", json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "resourceNames": ["admin"], "verbs": ["bind"]}])))
        .expect("role");
    p.upsert(&rb(
        "team",
        "ab",
        "ClusterRole",
        "admin-binder",
        json!([{"kind": "User", "name": "kim"}]),
    ))
    .expect("rb");
    assert_eq!(
        check_escalation(&p, &kim, &write("rolebindings", "team", &bind_admin, None)),
        Ok(())
    );
    let bind_cluster_admin = rb(
        "team",
        "ca",
        "ClusterRole",
        "cluster-admin",
        json!([{"kind": "User", "name": "kim"}]),
    );
    assert!(
        check_escalation(
            &p,
            &kim,
            &write("rolebindings", "team", &bind_cluster_admin, None)
        )
        .is_err()
    );
}

#[test]
fn self_subject_access_review_answers_can_i() {
    let p = policy();
    let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                      "metadata": {},
                      "spec": {"resourceAttributes": {"namespace": "ns", "verb": "list", "resource": "pods"}}});
    let out = self_subject_access_review(&p, &user("alice", &["system:authenticated"]), &body)
        .expect("ok");
    assert_eq!(
        out,
        json!({"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
               "metadata": {"creationTimestamp": null},
               "spec": {"resourceAttributes": {"namespace": "ns", "verb": "list", "resource": "pods"}},
               "status": {"allowed": true,
                          "reason": "RBAC: allowed by ClusterRoleBinding \"u-pods\" of ClusterRole \"pod-reader\" to User \"alice\""}})
    );
    let out = self_subject_access_review(&p, &user("mallory", &[]), &body).expect("ok");
    assert_eq!(out["status"], json!({"allowed": false}));
    let non = json!({"spec": {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}});
    let out = self_subject_access_review(&p, &user("erin", &[]), &non).expect("ok");
    assert_eq!(out["status"]["allowed"], true);

    let empty = json!({"spec": {}});
    let err = self_subject_access_review(&p, &user("a", &[]), &empty).expect_err("invalid");
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        r#"SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified"#
    );
}

#[test]
fn subject_access_review_uses_spec_user_and_groups() {
    let p = policy();
    let body = json!({"spec": {"user": SA_OTHER, "groups": ["system:serviceaccounts:team"],
                               "resourceAttributes": {"namespace": "team", "verb": "watch", "resource": "pods"}}});
    let out = subject_access_review(&p, &body).expect("ok");
    assert_eq!(out["kind"], "SubjectAccessReview");
    assert_eq!(out["status"]["allowed"], true);
    assert_eq!(
        out["status"]["reason"],
        r#"RBAC: allowed by RoleBinding "rb-sa-group/team" of ClusterRole "pod-reader" to Group "system:serviceaccounts:team""#
    );
    assert_eq!(out["spec"], body["spec"]);
    let nobody = json!({"spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}});
    let err = subject_access_review(&p, &nobody).expect_err("invalid");
    assert_eq!(
        err.message,
        r#"SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be specified"#
    );
    let both = json!({"spec": {"user": "u", "resourceAttributes": {}, "nonResourceAttributes": {"path": "/x", "verb": "get"}}});
    let err = subject_access_review(&p, &both).expect_err("invalid");
    assert!(
        err.message
            .contains("spec.nonResourceAttributes: Invalid value:"),
        "{}",
        err.message
    );
    assert!(
        err.message
            .ends_with("cannot be specified in combination with resourceAttributes")
    );
}

#[test]
fn local_subject_access_review_checks_namespace() {
    let p = policy();
    let body = json!({"metadata": {"namespace": "team"},
                      "spec": {"user": "frank", "resourceAttributes": {"namespace": "team", "verb": "create", "resource": "configmaps"}}});
    let out = local_subject_access_review(&p, "team", &body).expect("ok");
    assert_eq!(out["status"]["allowed"], true);
    assert_eq!(out["metadata"]["namespace"], "team");
    let err = local_subject_access_review(&p, "other", &body).expect_err("mismatch");
    assert_eq!(err.code, 400);
    assert_eq!(
        err.message,
        "spec.resourceAttributes.namespace must match namespace: other"
    );
}

#[test]
fn self_subject_rules_review_lists_rules() {
    let p = policy();
    let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                      "spec": {"namespace": "team"}});
    let out = self_subject_rules_review(&p, &user("frank", &[]), &body).expect("ok");
    assert_eq!(
        out["status"],
        json!({"resourceRules": [{"verbs": ["get", "create", "update"], "apiGroups": [""], "resources": ["configmaps"]}],
               "nonResourceRules": [], "incomplete": false})
    );
    let out = self_subject_rules_review(&p, &user("gina", &[]), &body).expect("ok");
    assert_eq!(out["status"]["resourceRules"], json!([]));
    assert_eq!(
        out["status"]["evaluationError"],
        r#"[unsupported role reference kind: "Thing", clusterrole.rbac.authorization.k8s.io "does-not-exist" not found]"#
    );
    let out = self_subject_rules_review(&p, &user("erin", &[]), &body).expect("ok");
    assert_eq!(
        out["status"]["nonResourceRules"],
        json!([{"verbs": ["get"], "nonResourceURLs": ["/metrics", "/logs/*"]}])
    );
    let dave = self_subject_rules_review(&p, &user("dave", &[]), &body).expect("ok");
    assert_eq!(
        dave["status"]["resourceRules"][0]["resourceNames"],
        json!(["s1"])
    );
    let err =
        self_subject_rules_review(&p, &user("x", &[]), &json!({"spec": {}})).expect_err("bad");
    assert_eq!(
        (err.code, err.message.as_str()),
        (400, "no namespace on request")
    );
}

#[test]
fn policy_tracks_upserts_and_removals() {
    let mut p = policy();
    let alice = Attributes::resource(user("alice", &[]), "get", "", "pods", "ns");
    assert!(p.allows(&alice));
    p.remove("ClusterRoleBinding", "", "u-pods");
    assert!(!p.allows(&alice));
    p.upsert(&crb(
        "u-pods",
        "pod-reader",
        json!([{"kind": "User", "name": "alice"}]),
    ))
    .expect("crb");
    assert!(p.allows(&alice));
    p.remove("ClusterRole", "", "pod-reader");
    assert!(!p.allows(&alice));
    assert!(
        p.upsert(&json!({"apiVersion": "v1", "kind": "ConfigMap"}))
            .is_err()
    );
    assert!(
        p.upsert(
            &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "rules": "nope"})
        )
        .is_err()
    );
}

#[test]
fn signer_authorization_checks_name_then_domain_wildcard() {
    let mut p = Policy::bootstrap();
    p.upsert(&crb(
        "kube-approver",
        "system:certificates.k8s.io:kube-apiserver-client-approver",
        json!([{"kind": "User", "name": "approver"}]),
    ))
    .unwrap();
    p.upsert(&cluster_role(
        "all-kube-signers",
        json!([{"apiGroups": ["certificates.k8s.io"], "resources": ["signers"], "resourceNames": ["kubernetes.io/*"], "verbs": ["sign"]}]),
    ))
    .unwrap();
    p.upsert(&crb(
        "signer",
        "all-kube-signers",
        json!([{"kind": "User", "name": "signer"}]),
    ))
    .unwrap();
    let approver = user("approver", &["system:authenticated"]);
    let signer = user("signer", &["system:authenticated"]);
    assert!(authorized_for_signer(
        &p,
        &approver,
        "approve",
        "kubernetes.io/kube-apiserver-client"
    ));
    assert!(!authorized_for_signer(
        &p,
        &approver,
        "approve",
        "kubernetes.io/kubelet-serving"
    ));
    assert!(!authorized_for_signer(
        &p,
        &approver,
        "sign",
        "kubernetes.io/kube-apiserver-client"
    ));
    assert!(authorized_for_signer(
        &p,
        &signer,
        "sign",
        "kubernetes.io/kubelet-serving"
    ));
    assert!(authorized_for_signer(
        &p,
        &signer,
        "sign",
        "kubernetes.io/anything"
    ));
    assert!(!authorized_for_signer(
        &p,
        &signer,
        "sign",
        "example.com/custom"
    ));
    assert!(!authorized_for_signer(
        &p,
        &signer,
        "approve",
        "kubernetes.io/kubelet-serving"
    ));
    assert!(authorized_for_signer(
        &p,
        &user("root", &["system:masters"]),
        "approve",
        "x/y"
    ));
    assert_eq!(
        signer_forbidden("csr-1", "approve", "kubernetes.io/kube-apiserver-client").message,
        r#"certificatesigningrequests.certificates.k8s.io "csr-1" is forbidden: user not permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client""#
    );
}
