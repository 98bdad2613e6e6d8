//! Lease-based leader election on a `coordination.k8s.io/v1` Lease, with the semantics of
//! client-go's `leaderelection` package: a candidate takes the Lease when it is free, released
//! or not renewed for `leaseDurationSeconds` (measured on the candidate's own clock from the
//! moment it last saw the record change, so clock skew between processes does not matter);
//! the leader renews every `retry_period` and gives up when no renewal succeeded for
//! `renew_deadline`. Writes use optimistic concurrency (`resourceVersion`), so two candidates
//! can never both win the same round.
//!
//! [`LeaderElection::run_as_leader`] starts the caller's work when leadership is acquired,
//! cancels it (through the token it gets) when leadership is lost, and competes again
//! afterwards. On shutdown it releases the Lease; waiting candidates watch the Lease by name,
//! so one of them takes over at once rather than at its next retry.

use std::future::Future;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::{PostParams, WatchEvent, WatchParams};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::shutdown::Shutdown;

/// Upstream OCM's (and client-go's usual) lease duration: 137 s.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(137);
/// Upstream OCM's renew deadline: 107 s.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(107);
/// Upstream OCM's retry period: 26 s.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(26);

/// Errors of one election round.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    /// The API server refused or failed a Lease request.
    #[error("lease {namespace}/{name}: {source}")]
    Api {
        /// Lease namespace.
        namespace: String,
        /// Lease name.
        name: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
}

/// A candidate for leadership of one Lease.
#[derive(Clone)]
pub struct LeaderElection {
    /// Client used to read and write the Lease.
    pub client: kube::Client,
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// This candidate's identity (`holderIdentity`); must be unique among candidates.
    pub identity: String,
    /// How long a Lease that is not renewed keeps others away (`leaseDurationSeconds`).
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up leadership.
    pub renew_deadline: Duration,
    /// Pause between attempts to acquire or renew.
    pub retry_period: Duration,
    leading: Option<watch::Sender<bool>>,
}

impl std::fmt::Debug for LeaderElection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElection")
            .field("namespace", &self.namespace)
            .field("name", &self.name)
            .field("identity", &self.identity)
            .field("lease_duration", &self.lease_duration)
            .field("renew_deadline", &self.renew_deadline)
            .field("retry_period", &self.retry_period)
            .finish_non_exhaustive()
    }
}

/// What the candidate last saw of the Lease, and when (its own clock).
struct Observed {
    record: Option<LeaseSpec>,
    at: Instant,
}

/// Outcome of one acquire-or-renew attempt.
#[derive(Debug, PartialEq, Eq)]
enum Round {
    /// We hold the Lease now.
    Held,
    /// Someone else (the holder) holds a fresh Lease, as of resourceVersion `.1`.
    HeldByOther(String, String),
    /// A concurrent writer won the race; try again later.
    Lost,
}

impl LeaderElection {
    /// A candidate with upstream's timings (137 s / 107 s / 26 s).
    pub fn new(
        client: kube::Client,
        namespace: &str,
        name: &str,
        identity: &str,
    ) -> LeaderElection {
        LeaderElection {
            client,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            identity: identity.to_owned(),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            leading: None,
        }
    }

    /// Sets the three timings.
    pub fn with_timings(
        mut self,
        lease_duration: Duration,
        renew_deadline: Duration,
        retry_period: Duration,
    ) -> LeaderElection {
        self.lease_duration = lease_duration;
        self.renew_deadline = renew_deadline;
        self.retry_period = retry_period;
        self
    }

    /// Publishes whether this candidate leads (e.g. for a readiness probe).
    pub fn report_to(mut self, leading: watch::Sender<bool>) -> LeaderElection {
        self.leading = Some(leading);
        self
    }

    /// Competes for the Lease until `shutdown` is cancelled. Each time leadership is
    /// acquired, `work(token)` is spawned; `token` is cancelled when leadership is lost (or on
    /// shutdown), and the next round starts only after that work has finished. On shutdown
    /// the Lease is released if held.
    pub async fn run_as_leader<F, Fut>(self, shutdown: Shutdown, mut work: F)
    where
        F: FnMut(Shutdown) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let api: Api<Lease> = Api::namespaced(self.client.clone(), &self.namespace);
        let mut observed = Observed {
            record: None,
            at: Instant::now(),
        };
        while !shutdown.is_cancelled() {
            // Follower: try until we hold the Lease.
            match self.try_acquire_or_renew(&api, &mut observed).await {
                Ok(Round::Held) => {}
                Ok(Round::HeldByOther(holder, resource_version)) => {
                    tracing::trace!(lease = %self.name, %holder, "lease held by another candidate");
                    self.wait_for_change(&api, &shutdown, &resource_version)
                        .await;
                    continue;
                }
                Ok(Round::Lost) => {
                    self.pause(&shutdown, self.retry_period).await;
                    continue;
                }
                Err(err) => {
                    tracing::warn!(%err, "cannot acquire leader lease");
                    self.pause(&shutdown, self.retry_period).await;
                    continue;
                }
            }
            if shutdown.is_cancelled() {
                self.release(&api).await;
                break;
            }
            // Leader: run the work and renew until we cannot.
            tracing::info!(lease = %self.name, identity = %self.identity, "became leader");
            self.set_leading(true);
            let token = shutdown.child();
            let task = tokio::spawn(work(token.clone()));
            let mut last_renew = Instant::now();
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep(self.retry_period) => {}
                }
                match self.try_acquire_or_renew(&api, &mut observed).await {
                    Ok(Round::Held) => last_renew = Instant::now(),
                    Ok(Round::HeldByOther(holder, _)) => {
                        tracing::warn!(lease = %self.name, %holder, "leadership taken over");
                        break;
                    }
                    Ok(Round::Lost) => {}
                    Err(err) => tracing::warn!(%err, "cannot renew leader lease"),
                }
                if last_renew.elapsed() >= self.renew_deadline {
                    tracing::warn!(lease = %self.name, "renew deadline passed, stepping down");
                    break;
                }
            }
            token.cancel();
            self.set_leading(false);
            if let Err(err) = task.await {
                tracing::warn!(%err, "leader work ended abnormally");
            }
            if shutdown.is_cancelled() {
                self.release(&api).await;
                break;
            }
            tracing::info!(lease = %self.name, identity = %self.identity, "lost leadership");
        }
        self.set_leading(false);
    }

    fn set_leading(&self, leading: bool) {
        if let Some(tx) = &self.leading {
            tx.send_replace(leading);
        }
    }

    async fn pause(&self, shutdown: &Shutdown, d: Duration) {
        tokio::select! {
            _ = shutdown.cancelled() => {}
            _ = tokio::time::sleep(d) => {}
        }
    }

    /// Waits up to `retry_period` for the Lease to change after `resource_version`, watching
    /// it by name: a Lease its holder released (on shutdown, as in a rolling upgrade) is taken
    /// at once instead of at the next retry. Without permission to watch it (the watch is
    /// authorized as `watch` on the Lease's name) this is a plain wait.
    async fn wait_for_change(&self, api: &Api<Lease>, shutdown: &Shutdown, resource_version: &str) {
        let params = WatchParams::default()
            .fields(&format!("metadata.name={}", self.name))
            .timeout(u32::try_from(self.retry_period.as_secs().max(1)).unwrap_or(u32::MAX));
        let changed = async {
            match api.watch(&params, resource_version).await {
                Ok(events) => {
                    let mut events = std::pin::pin!(events);
                    while let Some(event) = events.next().await {
                        if matches!(
                            event,
                            Ok(WatchEvent::Added(_)
                                | WatchEvent::Modified(_)
                                | WatchEvent::Deleted(_))
                        ) {
                            return;
                        }
                    }
                }
                Err(err) => {
                    tracing::debug!(%err, lease = %self.name, "cannot watch the leader lease")
                }
            }
            // Ended or refused: the rest of the period is a plain wait.
            std::future::pending::<()>().await;
        };
        tokio::select! {
            _ = shutdown.cancelled() => {}
            _ = tokio::time::sleep(self.retry_period) => {}
            _ = changed => {}
        }
    }

    fn api_err(&self, source: kube::Error) -> LeaderError {
        LeaderError::Api {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            source,
        }
    }

    fn duration_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs().max(1)).unwrap_or(i32::MAX)
    }

    /// One round: create the Lease, renew it, or take it over when free or expired.
    async fn try_acquire_or_renew(
        &self,
        api: &Api<Lease>,
        observed: &mut Observed,
    ) -> Result<Round, LeaderError> {
        let now = MicroTime(jiff::Timestamp::now());
        let Some(current) = api.get_opt(&self.name).await.map_err(|e| self.api_err(e))? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    namespace: Some(self.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    lease_duration_seconds: Some(self.duration_seconds()),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    observed.record = created.spec;
                    observed.at = Instant::now();
                    Ok(Round::Held)
                }
                Err(kube::Error::Api(s)) if s.is_already_exists() || s.is_conflict() => {
                    Ok(Round::Lost)
                }
                Err(e) => Err(self.api_err(e)),
            };
        };
        let spec = current.spec.clone().unwrap_or_default();
        if observed.record.as_ref() != Some(&spec) {
            observed.record = Some(spec.clone());
            observed.at = Instant::now();
        }
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let ours = holder == self.identity;
        if !ours && !holder.is_empty() {
            let duration = Duration::from_secs(
                u64::try_from(spec.lease_duration_seconds.unwrap_or(0).max(0)).unwrap_or(0),
            );
            if observed.at + duration > Instant::now() {
                let resource_version = current.metadata.resource_version.clone();
                return Ok(Round::HeldByOther(
                    holder,
                    resource_version.unwrap_or_default(),
                ));
            }
        }
        let mut next = spec.clone();
        if !ours {
            next.acquire_time = Some(now.clone());
            next.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
        next.holder_identity = Some(self.identity.clone());
        next.lease_duration_seconds = Some(self.duration_seconds());
        next.renew_time = Some(now);
        let mut lease = current;
        lease.spec = Some(next);
        match api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(updated) => {
                observed.record = updated.spec;
                observed.at = Instant::now();
                Ok(Round::Held)
            }
            Err(kube::Error::Api(s)) if s.is_conflict() => Ok(Round::Lost),
            Err(e) => Err(self.api_err(e)),
        }
    }

    /// Clears `holderIdentity` if we still hold the Lease, so others need not wait for it to
    /// expire.
    async fn release(&self, api: &Api<Lease>) {
        let current = match api.get_opt(&self.name).await {
            Ok(Some(lease)) => lease,
            Ok(None) => return,
            Err(err) => {
                tracing::warn!(%err, "cannot release leader lease");
                return;
            }
        };
        let mut lease = current;
        let Some(spec) = lease.spec.as_mut() else {
            return;
        };
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(jiff::Timestamp::now()));
        match api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => tracing::info!(lease = %self.name, "released leader lease"),
            Err(err) => tracing::warn!(%err, "cannot release leader lease"),
        }
    }
}
