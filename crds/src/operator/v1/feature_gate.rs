//! Feature-gate switches the operators pass on to the components they deploy.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One feature gate to turn on or off in a deployed component. Gates the component does not
/// know are dropped by the operator; an empty list keeps the component's own defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeatureGate {
    /// Gate name, e.g. `ManagedClusterAutoApproval`.
    pub feature: String,
    /// Whether the gate is switched on or off; absent means off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Disable"))]
    pub mode: Option<FeatureGateMode>,
}

/// Whether a feature gate is switched on (`--feature-gates=Foo=true`) or off.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum FeatureGateMode {
    /// Turn the gate on.
    Enable,
    /// Turn the gate off.
    #[default]
    Disable,
}
