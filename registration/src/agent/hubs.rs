//! Several hubs to choose from (upstream's `MultipleHubs`): the agent is given an ordered list
//! of bootstrap kubeconfig secrets in its namespace ([`AgentOptions::bootstrap_kubeconfig_secrets`]).
//!
//! - With no bootstrap kubeconfig yet, it copies the first listed one whose hub answers into
//!   [`BOOTSTRAP_KUBECONFIG_SECRET`] and registers there.
//! - Once joined, every renewal of the cluster lease counts as contact with the hub
//!   ([`HubContact`]). When renewing fails and the hub has not been reached for
//!   [`AgentOptions::hub_connection_timeout`] since the last renewal, the agent copies the
//!   next listed kubeconfig whose hub answers (any but the current one) into the bootstrap
//!   secret; its stored hub credentials then name another hub, so it registers again there
//!   (a new CSR and ManagedCluster for that hub's admin to accept).
//! - A cluster waiting to be accepted has no working connection to lose: the clock stops
//!   while the hub has not accepted the cluster, and starts again at the next renewal. A hub
//!   seen withdrawing its acceptance (`hubAcceptsClient` false on the watched ManagedCluster
//!   after the cluster was accepted) is left at once, as upstream; a hub that takes the
//!   agent's access away before that is seen is left after the timeout like an unreachable one.
//! - A hub holding the cluster's ManagedCluster unaccepted does not count as answering.
//! - When no other hub answers, the agent says so and asks again, staying with the current one;
//!   coming back, the old hub is not chosen again on its own (nothing flaps).
//!
//! "Answers" means the hub is reached and lets the bootstrap credentials read ManagedClusters,
//! what `ocm join` checks before it writes anything.
//!
//! [`AgentOptions::bootstrap_kubeconfig_secrets`]: super::AgentOptions::bootstrap_kubeconfig_secrets
//! [`AgentOptions::hub_connection_timeout`]: super::AgentOptions::hub_connection_timeout

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use ocm_api::cluster::v1::ManagedCluster;
use tokio::time::Instant;

use super::{AgentError, AgentProgress, BOOTSTRAP_KUBECONFIG_SECRET, Ctx, keys, secrets};

/// How long one question to a candidate hub may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// When the agent last reached its hub (renewed the cluster lease), whether it has failed to
/// since, and whether the hub withdrew its acceptance; no clock while the agent has no working
/// connection to lose (not joined yet, or waiting for a first acceptance).
#[derive(Debug, Default)]
pub(crate) struct HubContact {
    state: Mutex<Contact>,
}

#[derive(Debug, Default)]
struct Contact {
    last: Option<Instant>,
    failing: bool,
    /// The hub accepted the cluster (a lease renewal succeeded) since the last move.
    accepted: bool,
    /// After that, the hub stopped accepting it (`hubAcceptsClient` false).
    denied: bool,
}

impl HubContact {
    fn with<T>(&self, f: impl FnOnce(&mut Contact) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The hub was reached now (the cluster lease renewed, so the cluster is accepted).
    pub(crate) fn reached(&self) {
        self.with(|c| {
            *c = Contact {
                last: Some(Instant::now()),
                accepted: true,
                ..Contact::default()
            }
        });
    }

    /// Reaching the hub failed (counts only after a contact).
    pub(crate) fn failed(&self) {
        self.with(|c| c.failing = c.last.is_some());
    }

    /// Starting with credentials of an earlier run: the hub counts as reached now, and lost
    /// unless it is reached again before the timeout.
    pub(crate) fn resumed(&self) {
        self.with(|c| {
            *c = Contact {
                last: Some(Instant::now()),
                failing: true,
                ..Contact::default()
            }
        });
    }

    /// The hub does not accept the cluster: it withdrew its acceptance (after having given
    /// it), or the cluster waits for a first one and there is no connection to lose.
    pub(crate) fn not_accepted(&self) {
        self.with(|c| {
            if c.accepted {
                c.denied = true;
            } else {
                *c = Contact::default();
            }
        });
    }

    /// Stops the clock, returning it as it was (for [`Self::restore`]).
    fn take(&self) -> Contact {
        self.with(std::mem::take)
    }

    /// Puts back a clock [`Self::take`] returned.
    fn restore(&self, contact: Contact) {
        self.with(|c| *c = contact);
    }

    /// Why the agent should leave its hub, at `now`, if it should: the hub withdrew its
    /// acceptance, or reaching it failed and the last contact is `timeout` old.
    fn why_leave(&self, timeout: Duration, now: Instant) -> Option<String> {
        self.with(|c| {
            if c.denied {
                return Some(
                    "the hub no longer accepts the cluster (hubAcceptsClient false)".into(),
                );
            }
            let last = c.last.filter(|_| c.failing)?;
            (last + timeout <= now).then(|| {
                format!(
                    "the hub was out of reach or refused the agent for {} s or more",
                    timeout.as_secs()
                )
            })
        })
    }
}

/// One listed bootstrap kubeconfig secret as probed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// Name of the secret.
    pub(crate) secret: String,
    /// Its kubeconfig (`None`: the secret or its key is missing).
    pub(crate) kubeconfig: Option<Vec<u8>>,
    /// Why its hub does not answer (`None`: it answers).
    pub(crate) problem: Option<String>,
}

/// Which candidate to use: the first whose hub answers and whose kubeconfig is not `current`
/// (the one in use).
pub(crate) fn choose(current: Option<&[u8]>, candidates: &[Candidate]) -> Option<usize> {
    candidates.iter().position(|c| {
        c.problem.is_none() && c.kubeconfig.is_some() && c.kubeconfig.as_deref() != current
    })
}

/// "secret a: why; secret b: why" for the candidates that were not chosen.
pub(crate) fn problems(current: Option<&[u8]>, candidates: &[Candidate]) -> String {
    candidates
        .iter()
        .map(|c| {
            let why = match &c.problem {
                _ if c.kubeconfig.is_some() && c.kubeconfig.as_deref() == current => {
                    "the hub in use"
                }
                Some(problem) => problem.as_str(),
                None => "answers",
            };
            format!("secret {}: {why}", c.secret)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Whether the hub of bootstrap kubeconfig `raw` answers and does not refuse `cluster` (its
/// ManagedCluster, if there is one, accepted); the error says why not.
async fn answers(raw: &[u8], cluster: &str) -> Result<(), String> {
    let bootstrap = secrets::parse_bootstrap(raw)
        .map_err(|reason| format!("the kubeconfig is malformed: {reason}"))?;
    let client = ocm_runtime::kubeconfig::client_from_yaml(&bootstrap.raw)
        .await
        .map_err(|e| format!("the kubeconfig is not usable: {e}"))?;
    let clusters = Api::<ManagedCluster>::all(client);
    match tokio::time::timeout(PROBE_TIMEOUT, clusters.get_opt(cluster)).await {
        Ok(Ok(Some(found))) if !found.spec.hub_accepts_client => Err(format!(
            "hub {} does not accept cluster {cluster} (hubAcceptsClient false)",
            bootstrap.server.server
        )),
        Ok(Ok(_)) => Ok(()),
        Ok(Err(kube::Error::Api(status))) => Err(format!(
            "hub {} refused the bootstrap credentials ({} {})",
            bootstrap.server.server, status.code, status.reason
        )),
        Ok(Err(err)) => Err(format!(
            "hub {} unreachable: {err}",
            bootstrap.server.server
        )),
        Err(_) => Err(format!(
            "hub {} did not answer within {} s",
            bootstrap.server.server,
            PROBE_TIMEOUT.as_secs()
        )),
    }
}

/// Reads and probes the listed secrets, in order; those equal to `current` are not probed.
async fn probe_all(ctx: &Ctx, current: Option<&[u8]>) -> Result<Vec<Candidate>, AgentError> {
    let ns = &ctx.options.agent_namespace;
    let mut candidates = Vec::new();
    for name in &ctx.options.bootstrap_kubeconfig_secrets {
        let secret = secrets::read_secret(&ctx.secrets, ns, name)
            .await
            .map_err(AgentError::Spoke)?;
        let kubeconfig = secret
            .as_ref()
            .and_then(|s| secrets::data(s, keys::KUBECONFIG));
        let problem = match &kubeconfig {
            None if secret.is_none() => Some("not found".to_owned()),
            None => Some(format!("no {} key", keys::KUBECONFIG)),
            Some(raw) if Some(raw.as_slice()) == current => None,
            Some(raw) => answers(raw, &ctx.cluster_name()).await.err(),
        };
        candidates.push(Candidate {
            secret: name.clone(),
            kubeconfig,
            problem,
        });
    }
    Ok(candidates)
}

/// Copies the first listed kubeconfig whose hub answers (other than `current`) into the
/// bootstrap secret, saying why (`why`) and where to as the agent's progress first; returns
/// that reason, or [`AgentError::NoHubAnswers`].
pub(crate) async fn switch_bootstrap(
    ctx: &Ctx,
    current: Option<&[u8]>,
    why: &str,
) -> Result<String, AgentError> {
    let candidates = probe_all(ctx, current).await?;
    let Some(index) = choose(current, &candidates) else {
        return Err(AgentError::NoHubAnswers {
            details: problems(current, &candidates),
        });
    };
    let chosen = &candidates[index];
    let raw = chosen.kubeconfig.clone().unwrap_or_default();
    let server = secrets::parse_bootstrap(&raw)
        .map(|b| b.server.server)
        .unwrap_or_default();
    let reason = format!(
        "{why}using the bootstrap kubeconfig of secret {} (hub {server})",
        chosen.secret
    );
    // Said and the clock stopped before the write: the write itself ends the current pass.
    tracing::info!(%reason, "multiple hubs");
    ctx.set_progress(AgentProgress::Rebootstrapping {
        reason: reason.clone(),
    });
    let contact = ctx.hub_contact.take();
    let ns = &ctx.options.agent_namespace;
    let api = Api::<Secret>::namespaced(ctx.secrets.clone(), ns);
    let data = BTreeMap::from([(keys::KUBECONFIG.to_owned(), ByteString(raw))]);
    if let Err(err) = secrets::upsert_opaque_secret(
        &api,
        BOOTSTRAP_KUBECONFIG_SECRET,
        ns,
        &BTreeMap::new(),
        data,
    )
    .await
    {
        ctx.hub_contact.restore(contact);
        return Err(AgentError::Spoke(err));
    }
    Ok(reason)
}

/// Completes once the hub has been out of reach for the connection timeout and another listed
/// hub answers, after moving the agent there; returns why, in words. Never completes without
/// a list of bootstrap kubeconfig secrets.
pub(crate) async fn switch_when_lost(ctx: &Ctx) -> String {
    if ctx.options.bootstrap_kubeconfig_secrets.is_empty() {
        return std::future::pending().await;
    }
    let timeout = ctx.options.hub_connection_timeout;
    // How often the clock is looked at, and how often other hubs are asked once it ran out.
    let period = (timeout / 4).clamp(Duration::from_secs(1), Duration::from_secs(30));
    loop {
        if let Some(why) = ctx.hub_contact.why_leave(timeout, Instant::now()) {
            let ns = &ctx.options.agent_namespace;
            let current =
                match secrets::read_secret(&ctx.secrets, ns, BOOTSTRAP_KUBECONFIG_SECRET).await {
                    Ok(secret) => secret.and_then(|s| secrets::data(&s, keys::KUBECONFIG)),
                    Err(err) => {
                        tracing::warn!(error = %err, "reading the bootstrap kubeconfig secret");
                        tokio::time::sleep(period).await;
                        continue;
                    }
                };
            match switch_bootstrap(ctx, current.as_deref(), &format!("{why}; ")).await {
                Ok(reason) => return reason,
                Err(err) => {
                    let error = format!("{why}, and {err}");
                    tracing::warn!(%error, "multiple hubs");
                    ctx.set_progress(AgentProgress::Retrying { error });
                }
            }
        }
        tokio::time::sleep(period).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(kubeconfig: &str, problem: Option<&str>) -> Candidate {
        Candidate {
            secret: format!("hub-{kubeconfig}"),
            kubeconfig: Some(kubeconfig.as_bytes().to_vec()),
            problem: problem.map(str::to_owned),
        }
    }

    #[test]
    fn the_first_hub_that_answers_wins_and_the_current_one_is_skipped() {
        let list = [
            candidate("a", Some("hub https://a unreachable")),
            candidate("b", None),
            candidate("c", None),
        ];
        assert_eq!(choose(None, &list), Some(1));
        assert_eq!(choose(Some(b"b"), &list), Some(2));
        assert_eq!(choose(Some(b"c"), &list), Some(1));
        let alone = [candidate("a", Some("unreachable")), candidate("b", None)];
        assert_eq!(choose(Some(b"b"), &alone), None);
        let missing = [Candidate {
            secret: "gone".into(),
            kubeconfig: None,
            problem: Some("not found".into()),
        }];
        assert_eq!(choose(None, &missing), None);
    }

    #[test]
    fn problems_name_each_secret() {
        let list = [
            candidate("a", Some("hub https://a unreachable")),
            candidate("b", None),
        ];
        assert_eq!(
            problems(Some(b"b"), &list),
            "secret hub-a: hub https://a unreachable; secret hub-b: the hub in use"
        );
    }

    #[test]
    fn the_clock_runs_only_after_a_contact() {
        let contact = HubContact::default();
        let timeout = Duration::from_secs(5);
        let later = Instant::now() + timeout;
        contact.failed();
        assert_eq!(
            contact.why_leave(timeout, later),
            None,
            "never reached: no clock"
        );
        contact.reached();
        assert_eq!(
            contact.why_leave(timeout, later),
            None,
            "reached: nothing lost"
        );
        contact.failed();
        assert_eq!(contact.why_leave(timeout, Instant::now()), None, "not yet");
        assert!(
            contact
                .why_leave(timeout, later + timeout)
                .is_some_and(|w| w.contains("out of reach"))
        );
        contact.reached();
        assert_eq!(contact.why_leave(timeout, later + timeout), None);
        contact.resumed();
        assert!(contact.why_leave(timeout, later + timeout).is_some());
        contact.not_accepted();
        assert_eq!(
            contact.why_leave(timeout, later + timeout),
            None,
            "waiting for a first acceptance"
        );
    }

    #[test]
    fn a_hub_that_withdraws_its_acceptance_is_left_at_once() {
        let contact = HubContact::default();
        let timeout = Duration::from_secs(600);
        contact.reached();
        contact.not_accepted();
        assert!(
            contact
                .why_leave(timeout, Instant::now())
                .is_some_and(|w| w.contains("no longer accepts"))
        );
        let before = contact.take();
        assert_eq!(
            contact.why_leave(timeout, Instant::now()),
            None,
            "moved: no clock"
        );
        contact.restore(before);
        assert!(contact.why_leave(timeout, Instant::now()).is_some());
    }
}
