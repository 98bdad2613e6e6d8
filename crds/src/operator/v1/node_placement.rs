//! Scheduling constraints for the pods an operator deploys.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Toleration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where the deployed pods may be scheduled.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodePlacement {
    /// Node labels the pods require; empty means any node.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Taints the pods tolerate; empty means none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
}
