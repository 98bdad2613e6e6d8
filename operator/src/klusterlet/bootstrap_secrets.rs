//! `bootstrapKubeConfigs` of type LocalSecrets: an ordered list of bootstrap kubeconfig
//! secrets in the agent namespace. The operator copies the first one that works (the hub
//! lets it register) into `bootstrap-hub-kubeconfig`, and when the agent has lost its hub
//! (its hub kubeconfig refused or unreachable) for `hubConnectionTimeoutSeconds` (default
//! 600), switches to the next one that works and removes the hub kubeconfig secret, so the
//! agent registers again with the other hub. "Lost" counts from when a connection that worked
//! started failing ([`HUB_LOST_ANNOTATION`]): a cluster still waiting to be accepted is never
//! moved.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use ocm_api::operator::v1::{BootstrapKubeConfigsType, Klusterlet};

use super::hub_connection::{
    BOOTSTRAP_SECRET, Check, HUB_SECRET, check_bootstrap_kubeconfig, read_kubeconfig,
};

/// Default `hubConnectionTimeoutSeconds`.
const DEFAULT_TIMEOUT_SECONDS: i32 = 600;

/// The LocalSecrets list and timeout, when the Klusterlet asks for them.
pub fn local_secrets(klusterlet: &Klusterlet) -> Option<(Vec<String>, Duration)> {
    let configs = klusterlet
        .spec
        .registration_configuration
        .as_ref()?
        .bootstrap_kube_configs
        .as_ref()?;
    if configs.r#type != BootstrapKubeConfigsType::LocalSecrets {
        return None;
    }
    let local = configs.local_secrets_config.as_ref()?;
    let names: Vec<String> = local
        .kube_config_secrets
        .iter()
        .map(|s| s.name.clone())
        .filter(|n| !n.is_empty())
        .collect();
    let seconds = local
        .hub_connection_timeout_seconds
        .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
        .max(0);
    Some((
        names,
        Duration::from_secs(u64::try_from(seconds).unwrap_or(600)),
    ))
}

/// One listed secret as found: its kubeconfig, and whether its hub lets it register.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The kubeconfig (`None`: the secret or its key is missing).
    pub kubeconfig: Option<String>,
    /// Whether it works.
    pub works: bool,
}

/// Which candidate to copy into `bootstrap-hub-kubeconfig`, if any: the first working one
/// when there is no bootstrap kubeconfig yet; the first working one other than the current
/// once the hub has been lost for `timeout` (`lost_for`); else none (keep the current one).
pub fn choose(
    current: Option<&str>,
    candidates: &[Candidate],
    lost_for: Option<Duration>,
    timeout: Duration,
) -> Option<usize> {
    let working = |c: &Candidate| c.works && c.kubeconfig.is_some();
    match current {
        None => candidates.iter().position(working),
        Some(current) if lost_for.is_some_and(|d| d >= timeout) => candidates
            .iter()
            .position(|c| working(c) && c.kubeconfig.as_deref() != Some(current)),
        Some(_) => None,
    }
}

/// Annotation on the Klusterlet: since when the agent has been without the hub it was
/// connected to (set when a working hub connection starts failing, removed when it works
/// again or the operator moves the agent to another hub).
pub const HUB_LOST_ANNOTATION: &str =
    "operator.open-cluster-management.io/hub-connection-lost-since";

/// What [`HUB_LOST_ANNOTATION`] should become: `Some(Some(t))` set to `t`, `Some(None)`
/// removed, `None` left as it is. `was_connected`: the last status said the hub connection
/// worked.
pub fn lost_marker(
    current: Option<&str>,
    hub: &Check,
    was_connected: bool,
    now: jiff::Timestamp,
) -> Option<Option<String>> {
    let failing = matches!(hub, Check::Unauthorized(_) | Check::Error(_));
    match (current, failing) {
        (Some(_), false) if *hub == Check::Functional => Some(None),
        (None, true) if was_connected => Some(Some(now.to_string())),
        _ => None,
    }
}

/// How long the agent has been without its hub, per [`HUB_LOST_ANNOTATION`].
pub fn lost_for(klusterlet: &Klusterlet, now: jiff::Timestamp) -> Option<Duration> {
    let since: jiff::Timestamp = klusterlet
        .metadata
        .annotations
        .as_ref()?
        .get(HUB_LOST_ANNOTATION)?
        .parse()
        .ok()?;
    Some(now.duration_since(since).unsigned_abs())
}

/// Keeps [`HUB_LOST_ANNOTATION`] up to date; `value` as [`lost_marker`] says.
async fn mark_lost(
    client: &kube::Client,
    klusterlet: &Klusterlet,
    value: Option<String>,
) -> Result<(), kube::Error> {
    let name = klusterlet.metadata.name.clone().unwrap_or_default();
    let patch = serde_json::json!({"metadata": {"annotations": {HUB_LOST_ANNOTATION: value}}});
    Api::<Klusterlet>::all(client.clone())
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// What [`select`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// Nothing to do (no LocalSecrets, or the current bootstrap kubeconfig stays).
    Kept,
    /// A listed secret was copied into `bootstrap-hub-kubeconfig`.
    Switched,
    /// A listed secret was needed (no bootstrap kubeconfig yet, or the hub lost for the
    /// timeout) and none works: each secret and why, for the Klusterlet's condition.
    NoneWorks(String),
}

/// "secret a: why; secret b: why" of the listed secrets that were probed and not chosen.
pub fn describe(names: &[String], problems: &[Option<String>]) -> String {
    names
        .iter()
        .zip(problems)
        .map(|(name, problem)| {
            format!(
                "secret {name}: {}",
                problem.as_deref().unwrap_or("the one in use")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Applies the LocalSecrets choice in `namespace`.
pub async fn select(
    client: &kube::Client,
    namespace: &str,
    klusterlet: &Klusterlet,
    hub: &Check,
) -> Result<Selection, kube::Error> {
    let Some((names, timeout)) = local_secrets(klusterlet) else {
        return Ok(Selection::Kept);
    };
    let now = jiff::Timestamp::now();
    let was_connected = klusterlet.status.as_ref().is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == "HubConnectionDegraded" && c.status == "False")
    });
    let marker = klusterlet
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(HUB_LOST_ANNOTATION))
        .map(String::as_str);
    if let Some(value) = lost_marker(marker, hub, was_connected, now) {
        // The change comes back as a new reconcile.
        mark_lost(client, klusterlet, value).await?;
        return Ok(Selection::Kept);
    }
    let current = read_kubeconfig(client, namespace, BOOTSTRAP_SECRET).await?;
    let lost = lost_for(klusterlet, now);
    if current.is_some() && lost.is_none_or(|d| d < timeout) {
        return Ok(Selection::Kept);
    }
    let mut candidates = Vec::new();
    let mut problems = Vec::new();
    for name in &names {
        let kubeconfig = read_kubeconfig(client, namespace, name).await?;
        let problem = match &kubeconfig {
            Some(yaml) if Some(yaml) == current.as_ref() => None,
            Some(yaml) => match check_bootstrap_kubeconfig(yaml).await {
                Check::Functional => None,
                Check::Error(m) | Check::Unauthorized(m) | Check::KubeconfigMissing(m) => Some(m),
                Check::SecretMissing => Some("not found".to_owned()),
            },
            None => Some("not found, or no kubeconfig key".to_owned()),
        };
        let works = kubeconfig.is_some() && problem.is_none();
        candidates.push(Candidate { kubeconfig, works });
        problems.push(problem);
    }
    let Some(chosen) = choose(current.as_deref(), &candidates, lost, timeout) else {
        return Ok(Selection::NoneWorks(describe(&names, &problems)));
    };
    let Some(kubeconfig) = candidates[chosen].kubeconfig.clone() else {
        return Ok(Selection::Kept);
    };
    tracing::info!(secret = %names[chosen], namespace, "using bootstrap kubeconfig");
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(BOOTSTRAP_SECRET.to_owned()),
            namespace: Some(namespace.to_owned()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "kubeconfig".to_owned(),
            ByteString(kubeconfig.into_bytes()),
        )])),
        ..Default::default()
    };
    let mut value = serde_json::to_value(&secret).unwrap_or_default();
    value["apiVersion"] = "v1".into();
    value["kind"] = "Secret".into();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    secrets
        .patch(
            BOOTSTRAP_SECRET,
            &PatchParams::apply("klusterlet-operator").force(),
            &Patch::Apply(&value),
        )
        .await?;
    if current.is_some() {
        match secrets.delete(HUB_SECRET, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(err) => return Err(err),
        }
        // The clock restarts once the agent has connected to the new hub.
        mark_lost(client, klusterlet, None).await?;
    }
    Ok(Selection::Switched)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(kubeconfig: &str, works: bool) -> Candidate {
        Candidate {
            kubeconfig: Some(kubeconfig.to_owned()),
            works,
        }
    }

    #[test]
    fn the_clock_starts_only_when_a_working_connection_fails() {
        let now = jiff::Timestamp::now();
        let refused = Check::Unauthorized("403".into());
        // Never connected (waiting for acceptance): no clock.
        assert_eq!(lost_marker(None, &refused, false, now), None);
        assert_eq!(
            lost_marker(None, &refused, true, now),
            Some(Some(now.to_string()))
        );
        // Already running: left alone while failing, removed once it works again.
        assert_eq!(lost_marker(Some("t"), &refused, true, now), None);
        assert_eq!(
            lost_marker(Some("t"), &Check::Functional, true, now),
            Some(None)
        );
        assert_eq!(lost_marker(None, &Check::Functional, true, now), None);
    }

    #[test]
    fn every_listed_secret_is_described() {
        let names = ["a".to_owned(), "b".to_owned()];
        assert_eq!(
            describe(&names, &[Some("not found".into()), None]),
            "secret a: not found; secret b: the one in use"
        );
    }

    #[test]
    fn the_first_working_secret_wins_and_a_lost_hub_moves_to_the_next() {
        let list = [
            candidate("a", false),
            candidate("b", true),
            candidate("c", true),
        ];
        let timeout = Duration::from_secs(600);
        assert_eq!(choose(None, &list, None, timeout), Some(1));
        // Joined with b: kept while the hub answers or was lost for less than the timeout.
        assert_eq!(choose(Some("b"), &list, None, timeout), None);
        assert_eq!(
            choose(Some("b"), &list, Some(Duration::from_secs(599)), timeout),
            None
        );
        assert_eq!(
            choose(Some("b"), &list, Some(Duration::from_secs(600)), timeout),
            Some(2)
        );
        // Nothing else works: keep the current one.
        let alone = [candidate("a", false), candidate("b", true)];
        assert_eq!(
            choose(Some("b"), &alone, Some(Duration::from_secs(900)), timeout),
            None
        );
        let missing = [Candidate {
            kubeconfig: None,
            works: false,
        }];
        assert_eq!(choose(None, &missing, None, timeout), None);
    }
}
