//! A test custom resource (`Widget`, group `test.ocm.io`) and helpers to install CRDs.

#![allow(dead_code)]

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::{Client, CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Spec of the test resource.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[kube(
    group = "test.ocm.io",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
#[kube(printcolumn = r#"{"name":"Color","type":"string","jsonPath":".spec.color"}"#)]
#[kube(printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#)]
pub struct WidgetSpec {
    pub color: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
}

/// Status of the test resource.
#[derive(Deserialize, Serialize, Clone, Debug, JsonSchema, PartialEq, Default)]
pub struct WidgetStatus {
    #[serde(default)]
    pub observed_generation: i64,
    #[serde(default)]
    pub ready: bool,
}

/// Creates a CRD and waits until it is Established.
pub async fn install(client: &Client, crd: CustomResourceDefinition) -> CustomResourceDefinition {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = crd.metadata.name.clone().unwrap();
    api.create(&PostParams::default(), &crd).await.unwrap();
    let established = kube::runtime::wait::await_condition(
        api.clone(),
        &name,
        kube::runtime::wait::conditions::is_crd_established(),
    );
    tokio::time::timeout(Duration::from_secs(10), established)
        .await
        .unwrap()
        .unwrap();
    api.get(&name).await.unwrap()
}

/// Installs the Widget CRD.
pub async fn install_widget(client: &Client) -> CustomResourceDefinition {
    install(client, Widget::crd()).await
}

/// A CRD from JSON.
pub fn crd_from_json(v: Value) -> CustomResourceDefinition {
    serde_json::from_value(v).unwrap()
}
