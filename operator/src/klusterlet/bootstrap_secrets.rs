//! What the Klusterlet says about its `bootstrapKubeConfigs` LocalSecrets list
//! ([`super::hub_list`]). The registration agent chooses among the listed secrets and moves
//! between their hubs; the operator only checks the list so that a bad one shows on the
//! Klusterlet, in `HubConnectionDegraded`:
//!
//! - while the hub kubeconfig does not work, each listed secret is read and its hub asked
//!   whether its credentials may register (as for `bootstrap-hub-kubeconfig` without a
//!   list); the bootstrap half of the reason is `BootstrapSecretFunctional` when one works,
//!   else `BootstrapSecretMissing` (none found), `BootstrapSecretUnauthorized` (a hub refused
//!   or did not answer) or `BootstrapSecretError`, and the message names every listed secret
//!   and what was found ("no secret of bootstrapKubeConfigs.localSecretsConfig works (secret
//!   a: …; secret b: not found)");
//! - once the hub kubeconfig works (`HubConnectionFunctional`), no hub is asked; listed
//!   secrets that are missing are still named in the message.

use super::hub_connection::{
    Check, check_bootstrap_kubeconfig, degraded_condition_with, read_kubeconfig,
};

/// Where the list is, in words.
const LIST: &str = "bootstrapKubeConfigs.localSecretsConfig";

/// One listed secret as found: `None` when it holds a kubeconfig whose hub was not asked.
pub type Listed = (String, Option<Check>);

/// Reads the listed secrets `names` in `namespace`; with `probe`, asks each one's hub whether
/// it lets its credentials register.
pub async fn check_list(
    client: &kube::Client,
    namespace: &str,
    names: &[String],
    probe: bool,
) -> Result<Vec<Listed>, kube::Error> {
    let mut found = Vec::new();
    for name in names {
        let check = match read_kubeconfig(client, namespace, name).await? {
            None => Some(Check::SecretMissing),
            Some(yaml) if probe => Some(check_bootstrap_kubeconfig(&yaml).await),
            Some(_) => None,
        };
        found.push((name.clone(), check));
    }
    Ok(found)
}

/// What was found about one listed secret, in words.
fn describe(check: Option<&Check>) -> &str {
    match check {
        None => "present",
        Some(Check::SecretMissing) => "not found, or no kubeconfig key",
        Some(Check::KubeconfigMissing(m) | Check::Error(m) | Check::Unauthorized(m)) => m,
        Some(Check::Functional) => "works",
    }
}

/// "secret a: …; secret b: …" for every listed secret.
fn details(listed: &[Listed]) -> String {
    listed
        .iter()
        .map(|(name, check)| format!("secret {name}: {}", describe(check.as_ref())))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The bootstrap half of `HubConnectionDegraded` for a probed list: `(reason, message)`.
pub fn list_verdict(listed: &[Listed]) -> (&'static str, String) {
    let checks: Vec<&Check> = listed.iter().filter_map(|(_, c)| c.as_ref()).collect();
    if checks.contains(&&Check::Functional) {
        return (
            "BootstrapSecretFunctional",
            format!("a secret of {LIST} works ({})", details(listed)),
        );
    }
    let reason = if checks.iter().all(|c| **c == Check::SecretMissing) {
        "BootstrapSecretMissing"
    } else if checks.iter().any(|c| matches!(c, Check::Unauthorized(_))) {
        "BootstrapSecretUnauthorized"
    } else {
        "BootstrapSecretError"
    };
    let message = if listed.is_empty() {
        format!("no secret of {LIST} works: the list names no secret")
    } else {
        format!("no secret of {LIST} works ({})", details(listed))
    };
    (reason, message)
}

/// `HubConnectionDegraded` for a Klusterlet with a list: `listed` as [`check_list`] found it
/// (probed unless `hub` is functional). `(status, reason, message)`.
pub fn degraded_condition(listed: &[Listed], hub: &Check) -> (&'static str, String, String) {
    let (status, reason, mut message) = degraded_condition_with(list_verdict(listed), hub);
    let missing: Vec<&str> = listed
        .iter()
        .filter(|(_, check)| *check == Some(Check::SecretMissing))
        .map(|(name, _)| name.as_str())
        .collect();
    if status == "False" && !missing.is_empty() {
        message = format!(
            "{message}; listed in {LIST} but not found: {}",
            missing.join(", ")
        );
    }
    (status, reason, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(name: &str, check: Option<Check>) -> Listed {
        (name.to_owned(), check)
    }

    #[test]
    fn none_usable_names_every_listed_secret() {
        let list = [
            listed(
                "hub-a",
                Some(Check::Unauthorized("hub unreachable: refused".into())),
            ),
            listed("hub-b", Some(Check::SecretMissing)),
        ];
        let (status, reason, message) = degraded_condition(&list, &Check::SecretMissing);
        assert_eq!(status, "True");
        assert_eq!(
            reason,
            "BootstrapSecretUnauthorized,HubKubeConfigSecretMissing"
        );
        assert!(
            message.starts_with(
                "no secret of bootstrapKubeConfigs.localSecretsConfig works (secret hub-a: hub \
                 unreachable: refused; secret hub-b: not found"
            ),
            "{message}"
        );
        let gone = [listed("hub-a", Some(Check::SecretMissing))];
        assert_eq!(
            degraded_condition(&gone, &Check::SecretMissing).1,
            "BootstrapSecretMissing,HubKubeConfigSecretMissing"
        );
        let malformed = [listed("hub-a", Some(Check::Error("bad yaml".into())))];
        assert_eq!(list_verdict(&malformed).0, "BootstrapSecretError");
        let (reason, message) = list_verdict(&[]);
        assert_eq!(reason, "BootstrapSecretMissing");
        assert!(message.contains("names no secret"), "{message}");
    }

    #[test]
    fn one_working_secret_is_enough_and_missing_ones_are_still_named() {
        let list = [
            listed("hub-a", Some(Check::SecretMissing)),
            listed("hub-b", Some(Check::Functional)),
        ];
        let (status, reason, message) = degraded_condition(&list, &Check::SecretMissing);
        assert_eq!(
            (status, reason.as_str()),
            (
                "True",
                "BootstrapSecretFunctional,HubKubeConfigSecretMissing"
            )
        );
        assert!(message.contains("secret hub-b: works"), "{message}");
        // Joined: no hub asked, the connection works, a missing listed secret is named.
        let joined = [
            listed("hub-a", Some(Check::SecretMissing)),
            listed("hub-b", None),
        ];
        let (status, reason, message) = degraded_condition(&joined, &Check::Functional);
        assert_eq!(
            (status, reason.as_str()),
            ("False", "HubConnectionFunctional")
        );
        assert!(
            message.ends_with(
                "listed in bootstrapKubeConfigs.localSecretsConfig but not found: hub-a"
            ),
            "{message}"
        );
        let all_there = [listed("hub-b", None)];
        assert_eq!(
            degraded_condition(&all_there, &Check::Functional).2,
            "Hub kubeconfig secret works"
        );
    }
}
