//! Several hubs to choose from (upstream's `MultipleHubs`): a Klusterlet's
//! `spec.registrationConfiguration.bootstrapKubeConfigs` of type `LocalSecrets` lists
//! bootstrap kubeconfig secrets, in order of preference, in the agent namespace (Hosted: the
//! namespace named after the Klusterlet on the management cluster, where the agents run and
//! read their secrets). The operator hands the list and the connection timeout to the
//! registration agent as flags ([`agent_args`]); the agent chooses the hub, copies its
//! kubeconfig into `bootstrap-hub-kubeconfig`, and moves to another one when its hub stays
//! lost. Pure.

use ocm_api::operator::v1::{BootstrapKubeConfigsType, Klusterlet};

/// `hubConnectionTimeoutSeconds` when the Klusterlet sets none (the API's default).
pub const DEFAULT_TIMEOUT_SECONDS: i32 = 600;

/// The least `hubConnectionTimeoutSeconds` the Klusterlet API takes.
pub const MIN_TIMEOUT_SECONDS: i32 = 180;

/// The LocalSecrets list of a Klusterlet, as the agent is told it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalSecrets {
    /// The secrets' names, first preferred (empty names left out).
    pub names: Vec<String>,
    /// The effective `hubConnectionTimeoutSeconds`: the Klusterlet's, else
    /// [`DEFAULT_TIMEOUT_SECONDS`]; never below [`MIN_TIMEOUT_SECONDS`] (the API refuses
    /// less; an object written past that check still gets a timeout the agent accepts).
    pub timeout_seconds: i32,
}

/// The LocalSecrets list, when the Klusterlet's `bootstrapKubeConfigs` asks for one.
pub fn local_secrets(klusterlet: &Klusterlet) -> Option<LocalSecrets> {
    let configs = klusterlet
        .spec
        .registration_configuration
        .as_ref()?
        .bootstrap_kube_configs
        .as_ref()?;
    if configs.r#type != BootstrapKubeConfigsType::LocalSecrets {
        return None;
    }
    let local = configs.local_secrets_config.as_ref();
    let names = local
        .map(|l| {
            l.kube_config_secrets
                .iter()
                .map(|s| s.name.clone())
                .filter(|n| !n.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let timeout_seconds = local
        .and_then(|l| l.hub_connection_timeout_seconds)
        .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
        .max(MIN_TIMEOUT_SECONDS);
    Some(LocalSecrets {
        names,
        timeout_seconds,
    })
}

/// The registration agent's flags for the list: `--bootstrap-kubeconfig-secrets=a,b` and
/// `--hub-connection-timeout-seconds=N`; none without a list (the agent then uses
/// `bootstrap-hub-kubeconfig` alone).
pub fn agent_args(klusterlet: &Klusterlet) -> Vec<String> {
    match local_secrets(klusterlet) {
        Some(list) if !list.names.is_empty() => vec![
            format!("--bootstrap-kubeconfig-secrets={}", list.names.join(",")),
            format!("--hub-connection-timeout-seconds={}", list.timeout_seconds),
        ],
        _ => Vec::new(),
    }
}

/// Whether the Klusterlet's LocalSecrets list names the secret `name` (read in its agent
/// namespace): a change of that secret is a change of what the Klusterlet reports.
pub fn lists(klusterlet: &Klusterlet, name: &str) -> bool {
    local_secrets(klusterlet).is_some_and(|list| list.names.iter().any(|n| n == name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn klusterlet(spec: serde_json::Value) -> Klusterlet {
        serde_json::from_value(json!({"metadata": {"name": "klusterlet"}, "spec": spec})).unwrap()
    }

    fn listing(local: serde_json::Value) -> Klusterlet {
        klusterlet(
            json!({"registrationConfiguration": {"bootstrapKubeConfigs": {
            "type": "LocalSecrets", "localSecretsConfig": local}}}),
        )
    }

    #[test]
    fn the_list_and_the_timeout_become_the_agents_flags() {
        let k = listing(
            json!({"kubeConfigSecrets": [{"name": "hub-a"}, {"name": "hub-b"}],
                               "hubConnectionTimeoutSeconds": 240}),
        );
        assert_eq!(
            agent_args(&k),
            [
                "--bootstrap-kubeconfig-secrets=hub-a,hub-b",
                "--hub-connection-timeout-seconds=240"
            ]
        );
    }

    #[test]
    fn the_timeout_defaults_to_600_and_never_goes_below_the_apis_minimum() {
        let unset = listing(json!({"kubeConfigSecrets": [{"name": "hub-a"}]}));
        assert_eq!(local_secrets(&unset).unwrap().timeout_seconds, 600);
        assert_eq!(
            agent_args(&unset)[1],
            "--hub-connection-timeout-seconds=600"
        );
        let below = listing(json!({"kubeConfigSecrets": [{"name": "hub-a"}],
                                   "hubConnectionTimeoutSeconds": 0}));
        assert_eq!(local_secrets(&below).unwrap().timeout_seconds, 180);
    }

    #[test]
    fn no_list_no_flags() {
        assert!(agent_args(&klusterlet(json!({}))).is_empty());
        let none = klusterlet(
            json!({"registrationConfiguration": {"bootstrapKubeConfigs": {
            "type": "None", "localSecretsConfig": {"kubeConfigSecrets": [{"name": "hub-a"}]}}}}),
        );
        assert!(local_secrets(&none).is_none());
        assert!(agent_args(&none).is_empty());
        // Asked for, but naming no secret: reported by the controller, nothing for the agent.
        let empty = listing(json!({"kubeConfigSecrets": [{"name": ""}]}));
        assert_eq!(local_secrets(&empty).unwrap().names, Vec::<String>::new());
        assert!(agent_args(&empty).is_empty());
    }

    #[test]
    fn a_klusterlet_lists_only_the_secrets_its_list_names() {
        let k = listing(json!({"kubeConfigSecrets": [{"name": "hub-a"}, {"name": "hub-b"}]}));
        assert!(lists(&k, "hub-a"));
        assert!(lists(&k, "hub-b"));
        assert!(!lists(&k, "hub-c"));
        assert!(!lists(&k, ""));
        assert!(!lists(&klusterlet(json!({})), "hub-a"));
    }
}
