//! ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding
//! (`admissionregistration.k8s.io/v1`) through real HTTPS clients: served with kube's
//! defaults, validated at write (CEL compiled), and enforced on writes with kube's codes,
//! reasons, messages and warnings.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use common::{cm, create_cm, status_of};

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};

use common::kubectl;
use common::tls::TlsServer;
use common::vap::{binding, install, install_denying, policy};

/// (code, reason, message) of a ConfigMap create that must fail.
async fn refused(client: &kube::Client, ns: &str, obj: &ConfigMap) -> (u16, String, String) {
    status_of(create_cm(client, ns, obj).await.unwrap_err())
}

async fn namespace(client: &kube::Client, name: &str, labels: Value) {
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

#[tokio::test]
async fn policies_are_served_defaulted_and_observed() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let group = client
        .list_api_group_resources("admissionregistration.k8s.io/v1")
        .await
        .unwrap();
    for (plural, kind) in [
        ("validatingadmissionpolicies", "ValidatingAdmissionPolicy"),
        (
            "validatingadmissionpolicybindings",
            "ValidatingAdmissionPolicyBinding",
        ),
    ] {
        let listed = group.resources.iter().find(|r| r.name == plural).unwrap();
        assert_eq!((listed.kind.as_str(), listed.namespaced), (kind, false));
        assert!(listed.short_names.as_ref().is_none_or(Vec::is_empty));
        assert_eq!(listed.categories, Some(vec!["api-extensions".to_owned()]));
    }
    assert!(
        group
            .resources
            .iter()
            .any(|r| r.name == "validatingadmissionpolicies/status")
    );
    let discovery = kube::Discovery::new(client.clone())
        .run_aggregated()
        .await
        .unwrap();
    assert!(discovery.groups().any(|g| {
        g.name() == "admissionregistration.k8s.io"
            && g.recommended_resources()
                .iter()
                .any(|(r, _)| r.plural == "validatingadmissionpolicybindings")
    }));

    let v2 = client
        .request_text(
            http::Request::get("/openapi/v2")
                .header("accept", "application/json")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap();
    assert!(
        v2.contains("\"io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding\"")
    );
    let v3 = client
        .request_text(
            http::Request::get("/openapi/v3/apis/admissionregistration.k8s.io/v1")
                .body(Vec::new())
                .unwrap(),
        )
        .await
        .unwrap();
    assert!(v3.contains(
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{name}/status"
    ));

    install(
        &client,
        policy(
            "p",
            json!({"validations": [{"expression": "true"}], "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}),
        ),
        binding(
            "b",
            json!({"policyName": "p", "validationActions": ["Deny"], "paramRef": {"name": "x"}, "matchResources": {}}),
        ),
    )
    .await;
    let stored = Api::<ValidatingAdmissionPolicy>::all(client.clone())
        .get("p")
        .await
        .unwrap();
    let v = serde_json::to_value(&stored).unwrap();
    assert_eq!(v["spec"]["failurePolicy"], "Fail");
    assert_eq!(v["spec"]["matchConstraints"]["matchPolicy"], "Equivalent");
    assert_eq!(
        v["spec"]["matchConstraints"]["namespaceSelector"],
        json!({})
    );
    assert_eq!(v["spec"]["matchConstraints"]["objectSelector"], json!({}));
    assert_eq!(
        v["spec"]["matchConstraints"]["resourceRules"][0]["scope"],
        "*"
    );
    assert_eq!(v["metadata"]["generation"], 1);
    assert_eq!(
        v["status"],
        json!({"observedGeneration": 1, "typeChecking": {}})
    );
    let b = Api::<ValidatingAdmissionPolicyBinding>::all(client.clone())
        .get("b")
        .await
        .unwrap();
    let b = serde_json::to_value(&b).unwrap();
    assert_eq!(b["spec"]["paramRef"]["parameterNotFoundAction"], "Deny");
    assert_eq!(b["spec"]["matchResources"]["matchPolicy"], "Equivalent");
}

#[tokio::test]
async fn deny_refuses_a_violating_configmap_and_allows_a_good_one() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    install_denying(
        &client,
        "small",
        json!({"validations": [
            {"expression": "size(object.data) <= 2"},
            {"expression": "!('forbidden' in object.data)", "reason": "Forbidden",
             "messageExpression": "'key forbidden is not allowed in ' + object.metadata.name"},
        ]}),
    )
    .await;
    create_cm(&client, "default", &cm("good", json!({"a": "1"})))
        .await
        .unwrap();

    let err = create_cm(
        &client,
        "default",
        &cm("big", json!({"a": "1", "b": "2", "c": "3"})),
    )
    .await
    .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("not an API error");
    };
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    let text = "ValidatingAdmissionPolicy 'small' with binding 'small' denied request: failed expression: size(object.data) <= 2";
    assert_eq!(
        status.message,
        format!("configmaps \"big\" is forbidden: {text}")
    );
    let details = status.details.clone().unwrap();
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("big", "configmaps")
    );
    assert_eq!(details.causes[0].message, text);

    let (code, reason, message) =
        refused(&client, "default", &cm("f", json!({"forbidden": "x"}))).await;
    assert_eq!((code, reason.as_str()), (403, "Forbidden"));
    assert!(
        message.ends_with("denied request: key forbidden is not allowed in f"),
        "{message}"
    );

    // Dry runs are checked too, and updates.
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let (code, _, _) = status_of(
        api.create(&dry, &cm("dry", json!({"a": "1", "b": "2", "c": "3"})))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    let mut good = api.get("good").await.unwrap();
    good.data = Some(
        [("forbidden".to_owned(), "1".to_owned())]
            .into_iter()
            .collect(),
    );
    let (code, _, _) = status_of(
        api.replace("good", &PostParams::default(), &good)
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 403);

    // Admission configuration is exempt: a policy on every resource cannot lock itself in.
    install(
        &client,
        serde_json::from_value(json!({"metadata": {"name": "nothing"}, "spec": {
            "matchConstraints": {"resourceRules": [{"operations": ["*"], "apiGroups": ["*"],
                                                    "apiVersions": ["*"], "resources": ["*"]}]},
            "validations": [{"expression": "false"}]}}))
        .unwrap(),
        binding(
            "nothing",
            json!({"policyName": "nothing", "validationActions": ["Deny"]}),
        ),
    )
    .await;
    Api::<ValidatingAdmissionPolicyBinding>::all(client.clone())
        .delete("nothing", &Default::default())
        .await
        .unwrap();

    // Each logical cluster has its own policies.
    let c1 = server
        .client_for(&format!("{}/clusters/c1", server.url))
        .await;
    create_cm(
        &c1,
        "default",
        &cm("big", json!({"a": "1", "b": "2", "c": "3"})),
    )
    .await
    .unwrap();
    install(
        &c1,
        policy(
            "no-x",
            json!({"validations": [{"expression": "!('x' in object.data)"}]}),
        ),
        binding(
            "no-x",
            json!({"policyName": "no-x", "validationActions": ["Deny"]}),
        ),
    )
    .await;
    let (code, _, _) = refused(&c1, "default", &cm("x", json!({"x": "1"}))).await;
    assert_eq!(code, 422);
    create_cm(&client, "default", &cm("x", json!({"x": "1"})))
        .await
        .unwrap();
}

#[tokio::test]
async fn warn_gives_a_warning_header() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    install(
        &client,
        policy(
            "warned",
            json!({"validations": [{"expression": "has(object.data) && 'owner' in object.data", "message": "every ConfigMap needs an owner"}]}),
        ),
        binding(
            "warned",
            json!({"policyName": "warned", "validationActions": ["Warn", "Audit"]}),
        ),
    )
    .await;
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w"}});
    let answer = common::send_json(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        Some(&body),
    )
    .await;
    assert_eq!(answer.code, 201);
    let warnings = answer.warnings;
    assert_eq!(
        warnings,
        [
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'warned' with binding 'warned': every ConfigMap needs an owner\""
        ]
    );
}

#[tokio::test]
async fn params_come_from_a_configmap() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    namespace(&client, "team-a", json!({})).await;
    namespace(&client, "team-b", json!({})).await;
    // Params are looked up before match conditions run, so the params themselves are
    // excluded by name.
    let mut limited = policy(
        "limited",
        json!({
                "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "variables": [{"name": "max", "expression": "int(params.data.maxKeys)"}],
                "validations": [{"expression": "size(object.data) <= variables.max",
                                 "messageExpression": "'at most ' + params.data.maxKeys + ' keys'"}],
        }),
    );
    let constraints = limited
        .spec
        .as_mut()
        .unwrap()
        .match_constraints
        .as_mut()
        .unwrap();
    constraints.exclude_resource_rules = Some(vec![
        serde_json::from_value(json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "resourceNames": ["limits", "strict"]})).unwrap(),
    ]);
    install(
        &client,
        limited,
        binding(
            "limited",
            json!({"policyName": "limited", "validationActions": ["Deny"],
                   "paramRef": {"name": "limits", "parameterNotFoundAction": "Deny"}}),
        ),
    )
    .await;
    // Without params in the request's namespace, the binding cannot be configured.
    let (code, reason, message) = refused(&client, "team-a", &cm("a", json!({"k": "v"}))).await;
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert_eq!(
        message,
        "configmaps \"a\" is forbidden: ValidatingAdmissionPolicy 'limited' with binding 'limited' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    );
    create_cm(&client, "team-a", &cm("limits", json!({"maxKeys": "1"})))
        .await
        .unwrap();
    create_cm(&client, "team-b", &cm("limits", json!({"maxKeys": "2"})))
        .await
        .unwrap();
    create_cm(&client, "team-a", &cm("one", json!({"k": "v"})))
        .await
        .unwrap();
    let (code, _, message) =
        refused(&client, "team-a", &cm("two", json!({"k": "v", "l": "w"}))).await;
    assert_eq!(code, 422);
    assert!(
        message.ends_with("denied request: at most 1 keys"),
        "{message}"
    );
    // Each namespace reads its own params.
    create_cm(&client, "team-b", &cm("two", json!({"k": "v", "l": "w"})))
        .await
        .unwrap();

    // A selector picks params in a fixed namespace; Allow with none found lets writes through.
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(client.clone());
    bindings
        .delete("limited", &Default::default())
        .await
        .unwrap();
    bindings
        .create(
            &PostParams::default(),
            &binding(
                "selected",
                json!({"policyName": "limited", "validationActions": ["Deny"],
                       "paramRef": {"namespace": "team-a", "selector": {"matchLabels": {"limits": "strict"}},
                                    "parameterNotFoundAction": "Allow"}}),
            ),
        )
        .await
        .unwrap();
    create_cm(
        &client,
        "team-b",
        &cm("three", json!({"k": "v", "l": "w", "m": "x"})),
    )
    .await
    .unwrap();
    let strict: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "strict", "labels": {"limits": "strict"}}, "data": {"maxKeys": "1"}})).unwrap();
    create_cm(&client, "team-a", &strict).await.unwrap();
    let (code, _, _) = refused(&client, "team-b", &cm("four", json!({"k": "v", "l": "w"}))).await;
    assert_eq!(code, 422);
}

#[tokio::test]
async fn match_conditions_exclusions_and_namespace_selectors_skip_requests() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    namespace(&client, "prod", json!({"env": "prod"})).await;
    namespace(&client, "dev", json!({"env": "dev"})).await;
    let mut p = policy(
        "no-debug",
        json!({
            "matchConditions": [{"name": "unexempt", "expression": "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"}],
            "validations": [{"expression": "!('debug' in object.data)", "message": "no debug keys"}],
        }),
    );
    let mc = p.spec.as_mut().unwrap().match_constraints.as_mut().unwrap();
    mc.namespace_selector =
        Some(serde_json::from_value(json!({"matchLabels": {"env": "prod"}})).unwrap());
    mc.exclude_resource_rules = Some(vec![
        serde_json::from_value(json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "resourceNames": ["allowed"]})).unwrap(),
    ]);
    install(
        &client,
        p,
        binding(
            "no-debug",
            json!({"policyName": "no-debug", "validationActions": ["Deny"]}),
        ),
    )
    .await;
    let debug = json!({"debug": "1"});
    let (code, _, message) = refused(&client, "prod", &cm("a", debug.clone())).await;
    assert_eq!(code, 422);
    assert!(
        message.ends_with("denied request: no debug keys"),
        "{message}"
    );
    // Another namespace is not selected.
    create_cm(&client, "dev", &cm("a", debug.clone()))
        .await
        .unwrap();
    // An excluded name is not checked.
    create_cm(&client, "prod", &cm("allowed", debug.clone()))
        .await
        .unwrap();
    // A false match condition skips the policy.
    let exempt: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "b", "labels": {"exempt": "yes"}}, "data": debug}),
    )
    .unwrap();
    create_cm(&client, "prod", &exempt).await.unwrap();
}

#[tokio::test]
async fn invalid_policies_and_bindings_are_refused_with_422() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(client.clone());
    let (code, reason, message) = status_of(
        policies
            .create(
                &PostParams::default(),
                &policy(
                    "bad",
                    json!({"validations": [{"expression": "object.data.size( >"}]}),
                ),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    // A syntax error's column and text are the parser's own (cel-go's ANTLR grammar words
    // them otherwise, see Known gaps): only the start is kube's.
    assert!(
        message.starts_with("ValidatingAdmissionPolicy.admissionregistration.k8s.io \"bad\" is invalid: spec.validations[0].expression: Invalid value: \"object.data.size( >\": compilation failed: ERROR: <input>:1:"),
        "{message}"
    );
    // A checker error is cel-go's whole text, with its source line and caret: `params` is
    // declared only with a paramKind.
    let (code, reason, message) = status_of(
        policies
            .create(
                &PostParams::default(),
                &policy(
                    "noparams",
                    json!({"validations": [{"expression": "object.n > 1 && params.x == 1"}]}),
                ),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert_eq!(
        message,
        "ValidatingAdmissionPolicy.admissionregistration.k8s.io \"noparams\" is invalid: \
         spec.validations[0].expression: Invalid value: \"object.n > 1 && params.x == 1\": \
         compilation failed: ERROR: <input>:1:17: undeclared reference to 'params' (in container '')\n\
         \x20| object.n > 1 && params.x == 1\n\
         \x20| ................^"
    );
    let no_rules: ValidatingAdmissionPolicy = serde_json::from_value(
        json!({"metadata": {"name": "empty"}, "spec": {"matchConstraints": {}}}),
    )
    .unwrap();
    let (code, _, message) = status_of(
        policies
            .create(&PostParams::default(), &no_rules)
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert_eq!(
        message,
        "ValidatingAdmissionPolicy.admissionregistration.k8s.io \"empty\" is invalid: [spec.matchConstraints.resourceRules: Required value, spec.validations: Required value: validations or auditAnnotations must contain at least one item, spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item]"
    );
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(client.clone());
    let (code, _, message) = status_of(
        bindings
            .create(
                &PostParams::default(),
                &binding(
                    "b",
                    json!({"policyName": "p", "validationActions": ["Deny", "Warn"]}),
                ),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert!(
        message.ends_with("must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"),
        "{message}"
    );
    let (code, _, message) = status_of(
        bindings
            .create(&PostParams::default(), &binding("b", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert_eq!(
        message,
        "ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io \"b\" is invalid: [spec.policyName: Required value, spec.validationActions: Required value: at least one validation action is required]"
    );
}

#[tokio::test]
async fn evaluation_errors_follow_the_failure_policy() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    install_denying(&client, "strict", json!({"failurePolicy": "Fail", "validations": [{"expression": "object.data.mode == 'on'"}]})).await;
    let (code, reason, message) =
        refused(&client, "default", &cm("a", json!({"other": "x"}))).await;
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert_eq!(
        message,
        "configmaps \"a\" is forbidden: ValidatingAdmissionPolicy 'strict' with binding 'strict' denied request: expression 'object.data.mode == 'on'' resulted in error: no such key: mode"
    );
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(client.clone());
    let mut p = policies.get("strict").await.unwrap();
    p.spec.as_mut().unwrap().failure_policy = Some("Ignore".to_owned());
    let updated = policies
        .replace("strict", &PostParams::default(), &p)
        .await
        .unwrap();
    assert_eq!(updated.metadata.generation, Some(2));
    assert_eq!(updated.status.unwrap().observed_generation, Some(2));
    create_cm(&client, "default", &cm("a", json!({"other": "x"})))
        .await
        .unwrap();
    // A false result is still a denial under Ignore.
    let (code, _, _) = refused(&client, "default", &cm("b", json!({"mode": "off"}))).await;
    assert_eq!(code, 422);
    Api::<ValidatingAdmissionPolicyBinding>::all(client.clone())
        .delete("strict", &Default::default())
        .await
        .unwrap();

    // A paramKind that is not served is a configuration error, under Fail a denial.
    install(
        &client,
        policy(
            "unknown-params",
            json!({"paramKind": {"apiVersion": "example.com/v1", "kind": "Missing"},
                   "validations": [{"expression": "true"}]}),
        ),
        binding(
            "unknown-params",
            json!({"policyName": "unknown-params", "validationActions": ["Deny"], "paramRef": {"name": "x"}}),
        ),
    )
    .await;
    let (code, _, message) = refused(&client, "default", &cm("c", json!({}))).await;
    assert_eq!(code, 422);
    assert!(
        message.ends_with("ValidatingAdmissionPolicy 'unknown-params' with binding 'unknown-params' denied request: failed to configure policy: failed to find resource referenced by paramKind: 'example.com/v1, Kind=Missing'"),
        "{message}"
    );
}

#[tokio::test]
async fn custom_resources_are_matched() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    common::crd::install_widget(&client).await;
    let p: ValidatingAdmissionPolicy = serde_json::from_value(json!({
        "metadata": {"name": "no-red"},
        "spec": {
            "matchConstraints": {"resourceRules": [{"operations": ["*"], "apiGroups": ["test.ocm.io"], "apiVersions": ["*"], "resources": ["widgets"]}]},
            "validations": [{"expression": "object.spec.color != 'red'", "message": "red widgets are not allowed", "reason": "Forbidden"}],
        }
    }))
    .unwrap();
    install(
        &client,
        p,
        binding(
            "no-red",
            json!({"policyName": "no-red", "validationActions": ["Deny"]}),
        ),
    )
    .await;
    let gvk = GroupVersionKind::gvk("test.ocm.io", "v1", "Widget");
    let ar = kube::api::ApiResource::from_gvk(&gvk);
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let widget = |name: &str, color: &str| -> DynamicObject {
        serde_json::from_value(json!({"apiVersion": "test.ocm.io/v1", "kind": "Widget",
            "metadata": {"name": name}, "spec": {"color": color}}))
        .unwrap()
    };
    widgets
        .create(&PostParams::default(), &widget("blue", "blue"))
        .await
        .unwrap();
    let (code, reason, message) = status_of(
        widgets
            .create(&PostParams::default(), &widget("red", "red"))
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        message,
        "widgets.test.ocm.io \"red\" is forbidden: ValidatingAdmissionPolicy 'no-red' with binding 'no-red' denied request: red widgets are not allowed"
    );
}

#[tokio::test]
async fn a_binding_to_a_missing_policy_has_no_effect() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(client.clone());
    bindings
        .create(
            &PostParams::default(),
            &binding(
                "orphan",
                json!({"policyName": "absent", "validationActions": ["Deny"]}),
            ),
        )
        .await
        .unwrap();
    create_cm(&client, "default", &cm("a", json!({"x": "1"})))
        .await
        .unwrap();
    // The policy arriving later takes effect on the next request.
    Api::<ValidatingAdmissionPolicy>::all(client.clone())
        .create(
            &PostParams::default(),
            &policy("absent", json!({"validations": [{"expression": "false"}]})),
        )
        .await
        .unwrap();
    let (code, _, message) = refused(&client, "default", &cm("b", json!({}))).await;
    assert_eq!(code, 422);
    assert!(
        message.ends_with("denied request: failed expression: false"),
        "{message}"
    );
}

#[tokio::test]
async fn writers_must_be_able_to_read_the_params() {
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    let server = TlsServer::start().await;
    let admin = server.client().await;
    // bob may manage policies and bindings, but read no ConfigMaps.
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "policy-author"},
        "rules": [{"apiGroups": ["admissionregistration.k8s.io"], "verbs": ["*"],
                   "resources": ["validatingadmissionpolicies", "validatingadmissionpolicybindings"]}],
    }))
    .unwrap();
    Api::<ClusterRole>::all(admin.clone())
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let grant: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "bob-policy-author"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "policy-author"},
        "subjects": [{"kind": "User", "name": "bob"}],
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &grant)
        .await
        .unwrap();
    let bob = kube::Client::new(
        server.server.service_as(ocm_apiserver::Identity {
            user: "bob".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }),
        "default",
    );
    let with_params = policy(
        "with-params",
        json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}, "validations": [{"expression": "true"}]}),
    );
    let (code, reason, message) = status_of(
        Api::<ValidatingAdmissionPolicy>::all(bob.clone())
            .create(&PostParams::default(), &with_params)
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert_eq!(
        message,
        "ValidatingAdmissionPolicy.admissionregistration.k8s.io \"with-params\" is invalid: spec.paramKind: Forbidden: user &{bob  [system:authenticated] map[]} must have \"get\" permission on all objects of the referenced paramKind (kind=ConfigMap, apiVersion=v1)"
    );
    // Written by an admin, the policy can be bound by bob only without a paramRef.
    Api::<ValidatingAdmissionPolicy>::all(admin.clone())
        .create(&PostParams::default(), &with_params)
        .await
        .unwrap();
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(bob.clone());
    let (code, _, message) = status_of(
        bindings
            .create(
                &PostParams::default(),
                &binding(
                    "with-params",
                    json!({"policyName": "with-params", "validationActions": ["Deny"], "paramRef": {"name": "limits"}}),
                ),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert!(
        message.ends_with("spec.paramRef: Forbidden: user &{bob  [system:authenticated] map[]} does not have \"get\" permission on the object referenced by paramRef"),
        "{message}"
    );
    bindings
        .create(
            &PostParams::default(),
            &binding(
                "plain",
                json!({"policyName": "with-params", "validationActions": ["Deny"]}),
            ),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn kubectl_shows_the_denial() {
    if !kubectl::available() {
        return;
    }
    let server = TlsServer::start().await;
    let manifest = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: require-owner
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  validations:
  - expression: "has(object.data) && 'owner' in object.data"
    message: "ConfigMaps must name an owner"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: require-owner
spec:
  policyName: require-owner
  validationActions: [Deny]
"#;
    let (code, out, err) = kubectl::run(&server, &["apply", "-f", "-"], Some(manifest)).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(
            "validatingadmissionpolicy.admissionregistration.k8s.io/require-owner created"
        ),
        "{out}"
    );
    let (code, out, err) = kubectl::run(
        &server,
        &["create", "configmap", "orphan", "--from-literal=a=b"],
        None,
    )
    .await;
    assert_ne!(code, 0, "{out}");
    assert_eq!(
        err.trim(),
        "error: failed to create configmap: configmaps \"orphan\" is forbidden: ValidatingAdmissionPolicy 'require-owner' with binding 'require-owner' denied request: ConfigMaps must name an owner"
    );
    let (code, out, err) = kubectl::run(
        &server,
        &["create", "configmap", "owned", "--from-literal=owner=me"],
        None,
    )
    .await;
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, _) = kubectl::run(&server, &["get", "validatingadmissionpolicies"], None).await;
    assert_eq!(code, 0);
    let rows = kubectl::rows(&out);
    assert_eq!(rows[0][..3], ["NAME", "VALIDATIONS", "PARAMKIND"]);
    assert_eq!(rows[1][..3], ["require-owner", "1", "<unset>"]);
}

#[tokio::test]
async fn equivalent_match_policy_sees_the_request_in_the_rules_version() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let group = "vap-equiv.example.com";
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"color": {"type": "string"}}}}}});
    common::crd::install(
        &client,
        common::crd::crd_from_json(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("dials.{group}")},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"plural": "dials", "singular": "dial", "kind": "Dial", "listKind": "DialList"},
                "versions": [
                    {"name": "v1", "served": true, "storage": true, "schema": schema},
                    {"name": "v2", "served": true, "storage": false, "schema": schema},
                ],
            }
        })),
    )
    .await;
    let rules = json!([{"operations": ["CREATE"], "apiGroups": [group],
        "apiVersions": ["v1"], "resources": ["dials"]}]);
    // Default matchPolicy (Equivalent): a v2 create is evaluated as v1.
    let equivalent: ValidatingAdmissionPolicy = serde_json::from_value(json!({
        "metadata": {"name": "no-red"},
        "spec": {
            "matchConstraints": {"resourceRules": rules},
            "validations": [{"expression": "object.spec.color != 'red'",
                "messageExpression": "'seen ' + object.apiVersion + ' as ' + request.kind.version + ' from ' + request.requestKind.version + ' ' + request.resource.version"}],
        }
    }))
    .unwrap();
    install(
        &client,
        equivalent,
        binding(
            "no-red",
            json!({"policyName": "no-red", "validationActions": ["Deny"]}),
        ),
    )
    .await;
    // matchPolicy Exact: refuses every v1 create, never sees v2 ones.
    let exact: ValidatingAdmissionPolicy = serde_json::from_value(json!({
        "metadata": {"name": "v1-only"},
        "spec": {
            "matchConstraints": {"resourceRules": rules, "matchPolicy": "Exact"},
            "validations": [{"expression": "false", "message": "no v1 writes"}],
        }
    }))
    .unwrap();
    install(
        &client,
        exact,
        binding(
            "v1-only",
            json!({"policyName": "v1-only", "validationActions": ["Deny"]}),
        ),
    )
    .await;
    let dials = |version: &str| {
        let gvk = GroupVersionKind::gvk(group, version, "Dial");
        let ar = kube::api::ApiResource::from_gvk_with_plural(&gvk, "dials");
        Api::<DynamicObject>::namespaced_with(client.clone(), "default", &ar)
    };
    let dial = |version: &str, name: &str, color: &str| -> DynamicObject {
        serde_json::from_value(
            json!({"apiVersion": format!("{group}/{version}"), "kind": "Dial",
            "metadata": {"name": name}, "spec": {"color": color}}),
        )
        .unwrap()
    };
    dials("v2")
        .create(&PostParams::default(), &dial("v2", "blue", "blue"))
        .await
        .unwrap();
    let (code, _, message) = status_of(
        dials("v2")
            .create(&PostParams::default(), &dial("v2", "red", "red"))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert_eq!(
        message,
        format!(
            "dials.{group} \"red\" is forbidden: ValidatingAdmissionPolicy 'no-red' with binding 'no-red' denied request: seen {group}/v1 as v1 from v2 v1"
        )
    );
    let (code, _, message) = status_of(
        dials("v1")
            .create(&PostParams::default(), &dial("v1", "green", "green"))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert!(
        message.ends_with("denied request: no v1 writes"),
        "{message}"
    );
}

#[tokio::test]
async fn validations_can_ask_the_authorizer() {
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    let server = TlsServer::start().await;
    let admin = server.client().await;
    let role = |name: &str, resources: &[&str], verbs: &[&str]| -> ClusterRole {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "rules": [{"apiGroups": [""], "verbs": verbs, "resources": resources}],
        }))
        .unwrap()
    };
    let grant = |name: &str, role: &str| -> ClusterRoleBinding {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "User", "name": "carol"}],
        }))
        .unwrap()
    };
    let roles = Api::<ClusterRole>::all(admin.clone());
    let grants = Api::<ClusterRoleBinding>::all(admin.clone());
    roles
        .create(
            &PostParams::default(),
            &role("cm-writer", &["configmaps"], &["create"]),
        )
        .await
        .unwrap();
    roles
        .create(
            &PostParams::default(),
            &role("secret-reader", &["secrets"], &["get"]),
        )
        .await
        .unwrap();
    grants
        .create(&PostParams::default(), &grant("carol-cm", "cm-writer"))
        .await
        .unwrap();
    install(
        &admin,
        policy(
            "secret-readers-only",
            json!({"validations": [{
                "expression": "authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('get').allowed()",
                "message": "only those who may read secrets write configmaps here"}]}),
        ),
        binding(
            "secret-readers-only",
            json!({"policyName": "secret-readers-only", "validationActions": ["Deny"]}),
        ),
    )
    .await;
    let carol = kube::Client::new(
        server.server.service_as(ocm_apiserver::Identity {
            user: "carol".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }),
        "default",
    );
    let (code, _, message) = refused(&carol, "default", &cm("c1", json!({}))).await;
    assert_eq!(code, 422);
    assert!(
        message.ends_with("denied request: only those who may read secrets write configmaps here"),
        "{message}"
    );
    // The admin (system:masters) may read anything.
    create_cm(&admin, "default", &cm("a1", json!({})))
        .await
        .unwrap();
    // Once carol may read secrets, her write passes: the check asks RBAC as it is now.
    grants
        .create(
            &PostParams::default(),
            &grant("carol-secrets", "secret-reader"),
        )
        .await
        .unwrap();
    create_cm(&carol, "default", &cm("c2", json!({})))
        .await
        .unwrap();
}

/// Grants user `dave` the cluster-wide `verb` on core `resource` (role and binding `name`).
async fn grant_dave(admin: &kube::Client, name: &str, resource: &str, verb: &str) {
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": name},
        "rules": [{"apiGroups": [""], "verbs": [verb], "resources": [resource]}],
    }))
    .unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "User", "name": "dave"}],
    }))
    .unwrap();
    Api::<ClusterRole>::all(admin.clone())
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

#[tokio::test]
async fn authorizer_checks_can_carry_field_and_label_selectors() {
    let server = TlsServer::start().await;
    let admin = server.client().await;
    grant_dave(&admin, "dave-cm", "configmaps", "create").await;
    install_denying(
        &admin,
        "pod-listers-only",
        json!({"validations": [
            {"expression": "authorizer.group('').resource('pods').namespace(object.metadata.namespace).fieldSelector('spec.nodeName=' + object.metadata.name).labelSelector('app in (web,db),!canary').check('list').allowed()",
             "message": "only those who may list the node's pods write configmaps here"},
            // Selectors that do not parse are handed to the authorizer, not check errors.
            {"expression": "!authorizer.group('').resource('pods').fieldSelector('spec.nodeName').labelSelector('app in (').check('list').errored() && authorizer.requestResource.fieldSelector('').labelSelector('x=').check('create').error() == ''",
             "message": "a selector that does not parse failed the check"},
        ]}),
    )
    .await;
    let dave = server.client_as("dave").await;
    let (code, _, message) = refused(&dave, "default", &cm("node-1", json!({}))).await;
    assert_eq!(code, 422);
    assert!(
        message.ends_with(
            "denied request: only those who may list the node's pods write configmaps here"
        ),
        "{message}"
    );
    // RBAC ignores selectors, as kube's does: listing pods at all is what the check needs.
    grant_dave(&admin, "dave-pods", "pods", "list").await;
    create_cm(&dave, "default", &cm("node-1", json!({})))
        .await
        .unwrap();
    create_cm(&admin, "default", &cm("node-2", json!({})))
        .await
        .unwrap();
}

/// The `status.typeChecking` a new policy with `spec` gets (with the Widget CRD installed).
async fn type_checking_of(name: &str, spec: Value) -> Value {
    let server = TlsServer::start().await;
    let client = server.client().await;
    common::crd::install_widget(&client).await;
    let p: ValidatingAdmissionPolicy =
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap();
    let created = Api::<ValidatingAdmissionPolicy>::all(client)
        .create(&PostParams::default(), &p)
        .await
        .unwrap();
    serde_json::to_value(created.status.unwrap()).unwrap()["typeChecking"].clone()
}

#[tokio::test]
async fn type_checking_reports_fields_the_matched_kinds_do_not_have() {
    let type_checking = type_checking_of(
        "typos",
        json!({
            "matchConstraints": {"resourceRules": [
                {"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]},
                {"operations": ["CREATE"], "apiGroups": ["test.ocm.io"], "apiVersions": ["v1"], "resources": ["widgets"]},
                {"operations": ["CREATE"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["configmaps"]},
            ]},
            "validations": [
                {"expression": "object.metadata.name != '' && has(object.spec)"},
                {"expression": "object.replicas > 1"},
                {"expression": "object.spec.template.spec.containers.all(c, !has(c.securityContext) || !has(c.securityContext.Privileged))"},
            ],
        }),
    )
    .await;
    assert_eq!(
        type_checking,
        json!({"expressionWarnings": [
            {"fieldRef": "spec.validations[1].expression", "warning":
                "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n | ......^\n\ntest.ocm.io/v1, Kind=Widget: ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n | ......^\n"},
            {"fieldRef": "spec.validations[2].expression", "warning":
                "apps/v1, Kind=Deployment: ERROR: <input>:1:76: undefined field 'Privileged'\n | object.spec.template.spec.containers.all(c, !has(c.securityContext) || !has(c.securityContext.Privileged))\n | ...........................................................................^\n\ntest.ocm.io/v1, Kind=Widget: ERROR: <input>:1:12: undefined field 'template'\n | object.spec.template.spec.containers.all(c, !has(c.securityContext) || !has(c.securityContext.Privileged))\n | ...........^\n"},
        ]})
    );
}

#[tokio::test]
async fn type_checking_reports_operands_of_the_wrong_type() {
    let type_checking = type_checking_of(
        "types",
        json!({
            "matchConstraints": {"resourceRules": [
                {"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]},
                {"operations": ["CREATE"], "apiGroups": ["test.ocm.io"], "apiVersions": ["v1"], "resources": ["widgets"]},
            ]},
            // Match conditions and variables are not type-checked, as in kube.
            "matchConditions": [{"name": "any", "expression": "object.metadata.name > 1"}],
            "variables": [{"name": "n", "expression": "object.metadata.name > 1"}],
            "validations": [
                {"expression": "object.spec.replicas == 'three'"},
                {"expression": "object.metadata.name.startsWith(1)"},
                {"expression": "object.spec.color.size() > 0", "messageExpression": "object.metadata.name + 1"},
                // What is dyn is never an error.
                {"expression": "variables.n == 'x' && object.metadata.labels.all(k, k.startsWith('a')) && dyn(object.metadata.name) > 1"},
            ],
        }),
    )
    .await;
    let both = |error: &str| {
        format!("apps/v1, Kind=Deployment: {error}\n\ntest.ocm.io/v1, Kind=Widget: {error}\n")
    };
    assert_eq!(
        type_checking,
        json!({"expressionWarnings": [
            {"fieldRef": "spec.validations[0].expression", "warning":
                "apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for '_==_' applied to '(int, string)'\n | object.spec.replicas == 'three'\n | .....................^\n\ntest.ocm.io/v1, Kind=Widget: ERROR: <input>:1:12: undefined field 'replicas'\n | object.spec.replicas == 'three'\n | ...........^\n"},
            {"fieldRef": "spec.validations[1].expression", "warning": both(
                "ERROR: <input>:1:32: found no matching overload for 'startsWith' applied to 'string.(int)'\n | object.metadata.name.startsWith(1)\n | ...............................^")},
            {"fieldRef": "spec.validations[2].expression", "warning":
                "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'color'\n | object.spec.color.size() > 0\n | ...........^\n"},
            {"fieldRef": "spec.validations[2].messageExpression", "warning": both(
                "ERROR: <input>:1:22: found no matching overload for '_+_' applied to '(string, int)'\n | object.metadata.name + 1\n | .....................^")},
        ]})
    );
}

/// kube's namespace storage answers a DELETE of a namespace already terminating before
/// validating admission runs: a policy that would refuse the DELETE is not asked then (it is
/// for a namespace not yet terminating).
#[tokio::test]
async fn deleting_a_terminating_namespace_again_skips_validating_admission() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    install_denying(
        &client,
        "no-locked-deletes",
        json!({"matchConstraints": {"resourceRules": [{
                  "operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"],
                  "resources": ["namespaces"]}]},
               "validations": [{"expression":
                  "!has(oldObject.metadata.labels) || !('locked' in oldObject.metadata.labels)"}]}),
    )
    .await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespace(&client, "guarded", json!({"locked": "yes"})).await;
    let (code, _, _) = status_of(
        namespaces
            .delete("guarded", &Default::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);

    namespace(&client, "doomed", json!({})).await;
    let held: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
    )
    .unwrap();
    create_cm(&client, "doomed", &held).await.unwrap();
    namespaces
        .delete("doomed", &Default::default())
        .await
        .unwrap();
    namespaces
        .patch(
            "doomed",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"labels": {"locked": "yes"}}})),
        )
        .await
        .unwrap();
    let again = namespaces
        .delete("doomed", &Default::default())
        .await
        .expect("a terminating namespace is answered without validating admission")
        .left()
        .unwrap();
    assert!(again.metadata.deletion_timestamp.is_some());
}
