//! The cost limits of CEL, through real HTTPS clients: CRD rules estimated over kube's
//! per-rule or per-schema budget are refused at write with kube's messages; custom resources
//! and admission policies whose evaluation would go over the runtime limits get kube's
//! errors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use common::crd::{crd_from_json, install};
use common::tls::TlsServer;
use common::{cm, create_cm, status_of};

use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};

const HINT: &str = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";

/// A CRD `dials.<group>` whose `spec` has this schema.
fn crd(group: &str, spec: Value) -> CustomResourceDefinition {
    crd_from_json(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("dials.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": "dials", "singular": "dial", "kind": "Dial", "listKind": "DialList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]}
    }))
}

/// A list of strings, bounded or not, with rules.
fn strings(max_items: Option<u64>, max_length: Option<u64>) -> Value {
    let mut items = json!({"type": "string"});
    if let Some(n) = max_length {
        items["maxLength"] = json!(n);
    }
    let mut list = json!({"type": "array", "items": items});
    if let Some(n) = max_items {
        list["maxItems"] = json!(n);
    }
    list
}

fn values(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("v{i}")).collect()
}

fn dials(client: &kube::Client, group: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, "v1", "Dial");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "dials");
    Api::namespaced_with(client.clone(), "default", &ar)
}

fn dial(group: &str, name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1"), "kind": "Dial",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap()
}

/// Creates a Dial with `spec`: `Ok` when accepted, else the (code, reason, message) of the
/// refusal.
async fn create_dial(
    client: &kube::Client,
    group: &str,
    name: &str,
    spec: Value,
) -> Result<(), (u16, String, String)> {
    dials(client, group)
        .create(&PostParams::default(), &dial(group, name, spec))
        .await
        .map(drop)
        .map_err(status_of)
}

/// Installs the Dial CRD of `group` with `schema` for its spec, creates the Dial `fits`
/// (accepted) and then `over`, which must be a 422 Invalid: its message.
async fn over_the_limit(
    client: &kube::Client,
    group: &str,
    schema: Value,
    fits: (&str, Value),
    over: (&str, Value),
) -> String {
    install(client, crd(group, schema)).await;
    create_dial(client, group, fits.0, fits.1).await.unwrap();
    let (code, reason, message) = create_dial(client, group, over.0, over.1)
        .await
        .unwrap_err();
    assert_eq!((code, reason.as_str()), (422, "Invalid"), "{message}");
    message
}

#[tokio::test]
async fn rules_estimated_over_the_budget_are_refused_at_write() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let spec = |tags: Value| json!({"type": "object", "properties": {"tags": tags}});
    let with_rule = |mut list: Value, rule: &str| {
        list["x-kubernetes-validations"] = json!([{"rule": rule}]);
        list
    };
    let cases = [
        ("self.all(x, self.all(y, x != y))", Some(10), Some(10)),
        ("self.all(x, x.matches('^[a-z]+$'))", Some(100), Some(64)),
    ];
    for (i, (rule, max_items, max_length)) in cases.into_iter().enumerate() {
        let group = format!("c{i}.cost.test.ocm.io");
        let unbounded = crd(&group, spec(with_rule(strings(None, None), rule)));
        let (code, reason, message) = status_of(
            crds.create(&PostParams::default(), &unbounded)
                .await
                .unwrap_err(),
        );
        assert_eq!((code, reason.as_str()), (422, "Invalid"), "{message}");
        // So expensive a rule is over the schema's total as well, and kube says so too.
        let at = "spec.versions[0].schema.openAPIV3Schema";
        let rule_at =
            format!("{at}.properties[spec].properties[tags].x-kubernetes-validations[0].rule");
        assert_eq!(
            message,
            format!(
                "CustomResourceDefinition.apiextensions.k8s.io \"dials.{group}\" is invalid: [\
                 {rule_at}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {HINT}, \
                 {rule_at}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema, \
                 {at}: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {HINT}]"
            )
        );
        // Bounds make the same rule cheap enough.
        let bounded = crd(
            &group,
            spec(with_rule(strings(max_items, max_length), rule)),
        );
        install(&client, bounded).await;
    }
}

#[tokio::test]
async fn rules_over_the_schema_total_are_refused_at_write() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    // Each rule on an item: 3 + 1_000 * (3 + 402) = 405_003, times 20 items: 8_100_060, under
    // the per-rule limit; 13 of them are over the total (105_300_780).
    let group = "total.cost.test.ocm.io";
    let rules: Vec<Value> = (0..13)
        .map(|i| json!({"rule": format!("self.v.all(x, x.matches('a{i}'))")}))
        .collect();
    let item = json!({"type": "object", "properties": {"v": strings(Some(1000), Some(1000))},
        "x-kubernetes-validations": rules});
    let spec = json!({"type": "object", "properties": {
        "items": {"type": "array", "maxItems": 20, "items": item}}});
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let (code, reason, message) = status_of(
        crds.create(&PostParams::default(), &crd(group, spec))
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"), "{message}");
    let at = "spec.versions[0].schema.openAPIV3Schema";
    let contributor = |i: usize| {
        format!(
            "{at}.properties[spec].properties[items].items.x-kubernetes-validations[{i}].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
        )
    };
    let contributors: Vec<String> = (0..4).map(contributor).collect();
    assert_eq!(
        message,
        format!(
            "CustomResourceDefinition.apiextensions.k8s.io \"dials.{group}\" is invalid: [{}, {at}: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 1.053008x {HINT}]",
            contributors.join(", ")
        )
    );
}

#[tokio::test]
async fn custom_resources_over_the_runtime_limits_are_refused() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    // Every pair of values: kube estimates 5_512_515 for 500 values of 10 characters (under
    // the per-rule limit), and 500 values cost it about 3.8 million units to evaluate.
    let group = "runtime.cost.test.ocm.io";
    let pairs = "self.v.map(x, self.v.map(y, x + y)).size() >= 0";
    let spec = json!({"type": "object", "properties": {"v": strings(Some(500), Some(10))},
        "x-kubernetes-validations": [{"rule": pairs, "message": "pairs"}]});
    let message = over_the_limit(
        &client,
        group,
        spec,
        ("small", json!({"v": values(50)})),
        ("big", json!({"v": values(500)})),
    )
    .await;
    assert_eq!(
        message,
        format!(
            "Dial.{group} \"big\" is invalid: spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: pairs"
        )
    );

    // Two such rules on each of 20 items of 150 values: each evaluation is under the
    // per-call limit (about 340,000), all of them together over the object's budget.
    let group = "budget.cost.test.ocm.io";
    let item = json!({"type": "object", "properties": {"v": strings(Some(150), Some(10))},
        "x-kubernetes-validations": [{"rule": pairs},
            {"rule": "self.v.map(x, self.v.map(y, y + x)).size() >= 0"}]});
    let spec = json!({"type": "object", "properties": {
        "items": {"type": "array", "maxItems": 20, "items": item}}});
    let items = |n: usize| json!({"items": vec![json!({"v": values(150)}); n]});
    let message =
        over_the_limit(&client, group, spec, ("few", items(2)), ("many", items(20))).await;
    // Which item runs out depends on the exact cost of each evaluation.
    let prefix = format!("Dial.{group} \"many\" is invalid: spec.items[");
    let suffix = "]: Invalid value: \"object\": validation failed due to running out of cost budget, no further validation rules will be run";
    assert!(
        message.starts_with(&prefix) && message.ends_with(suffix),
        "{message}"
    );

    // Forty such rules on one object: the budget runs out there, whatever each costs, and kube
    // reports it at that object with nothing else.
    let group = "node.cost.test.ocm.io";
    let rules: Vec<Value> = (0..40)
        .map(|i| json!({"rule": format!("self.v.map(x, self.v.map(y, x + y)).size() >= {i}")}))
        .collect();
    let spec = json!({"type": "object", "properties": {"v": strings(Some(150), Some(10))},
        "x-kubernetes-validations": rules});
    let message = over_the_limit(
        &client,
        group,
        spec,
        ("few", json!({"v": values(50)})),
        ("many", json!({"v": values(150)})),
    )
    .await;
    assert_eq!(
        message,
        format!(
            "Dial.{group} \"many\" is invalid: spec: Invalid value: \"object\": validation failed due to running out of cost budget, no further validation rules will be run"
        )
    );
}

#[tokio::test]
async fn policy_expressions_over_the_call_limit_follow_the_failure_policy() {
    let server = TlsServer::start().await;
    let client = server.client().await;
    let expression = "object.data.map(k, object.data.map(j, k + j)).size() >= 0";
    // Bound to deny, on ConfigMap creates (and updates).
    common::vap::install_denying(
        &client,
        "cost",
        json!({"failurePolicy": "Fail", "validations": [{"expression": expression}]}),
    )
    .await;
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(client.clone());
    let data = |n: usize| {
        let map: serde_json::Map<String, Value> =
            values(n).into_iter().map(|v| (v, json!("x"))).collect();
        Value::Object(map)
    };
    create_cm(&client, "default", &cm("small", data(20)))
        .await
        .unwrap();
    let (code, reason, message) = status_of(
        create_cm(&client, "default", &cm("big", data(500)))
            .await
            .unwrap_err(),
    );
    assert_eq!((code, reason.as_str()), (422, "Invalid"), "{message}");
    assert_eq!(
        message,
        format!(
            "configmaps \"big\" is forbidden: ValidatingAdmissionPolicy 'cost' with binding 'cost' denied request: expression '{expression}' resulted in error: operation cancelled: actual cost limit exceeded"
        )
    );
    // Under `Ignore` the error admits the request.
    let mut p = policies.get("cost").await.unwrap();
    p.spec.as_mut().unwrap().failure_policy = Some("Ignore".to_owned());
    policies
        .replace("cost", &PostParams::default(), &p)
        .await
        .unwrap();
    create_cm(&client, "default", &cm("big", data(500)))
        .await
        .unwrap();
}
