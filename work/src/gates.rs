//! The hub's work feature gates, parsed from upstream's flag syntax
//! (`--feature-gates=NilExecutorValidating=true,CleanUpCompletedManifestWork=true`).

use ocm_api::work::names::hub_feature_gates as names;

/// Which hub work feature gates are on. `Default`: all off, as upstream's defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HubWorkGates {
    /// `NilExecutorValidating`: the webhook checks works without an executor against the
    /// default executor.
    pub nil_executor_validating: bool,
    /// `ManifestWorkReplicaSet`: the hub work controller fans replica sets out.
    pub manifest_work_replica_set: bool,
    /// `CleanUpCompletedManifestWork`: completed works with a TTL are deleted after it.
    pub clean_up_completed_manifest_work: bool,
}

/// A `--feature-gates` entry that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    /// Not `<name>=<bool>`.
    #[error("invalid feature gate {0:?}: expected <name>=<true|false>")]
    Malformed(String),
    /// A name no hub work component knows.
    #[error("unrecognized feature gate: {0}")]
    Unknown(String),
}

impl HubWorkGates {
    /// Parses `--feature-gates` values: each a comma-separated list of `<name>=<bool>` (later
    /// entries win). Unknown names are refused, as upstream's components refuse them.
    pub fn parse<S: AsRef<str>>(values: &[S]) -> Result<HubWorkGates, GateError> {
        let mut gates = HubWorkGates::default();
        for entry in values
            .iter()
            .flat_map(|v| v.as_ref().split(','))
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let (name, value) = entry
                .split_once('=')
                .ok_or_else(|| GateError::Malformed(entry.to_owned()))?;
            let on = match value.trim().to_ascii_lowercase().as_str() {
                "true" => true,
                "false" => false,
                _ => return Err(GateError::Malformed(entry.to_owned())),
            };
            match name.trim() {
                names::NIL_EXECUTOR_VALIDATING => gates.nil_executor_validating = on,
                names::MANIFEST_WORK_REPLICA_SET => gates.manifest_work_replica_set = on,
                names::CLEAN_UP_COMPLETED_MANIFEST_WORK => {
                    gates.clean_up_completed_manifest_work = on;
                }
                names::CLOUD_EVENTS_DRIVERS => {}
                other => return Err(GateError::Unknown(other.to_owned())),
            }
        }
        Ok(gates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_parse_from_upstreams_flag_syntax() {
        assert_eq!(
            HubWorkGates::parse::<&str>(&[]).unwrap(),
            HubWorkGates::default()
        );
        let gates = HubWorkGates::parse(&[
            "NilExecutorValidating=true,ManifestWorkReplicaSet=true",
            "CleanUpCompletedManifestWork=True,ManifestWorkReplicaSet=false",
            "CloudEventsDrivers=false",
        ])
        .unwrap();
        assert_eq!(
            gates,
            HubWorkGates {
                nil_executor_validating: true,
                manifest_work_replica_set: false,
                clean_up_completed_manifest_work: true,
            }
        );
        assert_eq!(
            HubWorkGates::parse(&["Nope=true"]),
            Err(GateError::Unknown("Nope".into()))
        );
        assert_eq!(
            HubWorkGates::parse(&["NilExecutorValidating"]),
            Err(GateError::Malformed("NilExecutorValidating".into()))
        );
        assert_eq!(
            HubWorkGates::parse(&["NilExecutorValidating=yes"]),
            Err(GateError::Malformed("NilExecutorValidating=yes".into()))
        );
    }
}
