//! The joined phase: with its own certificate the agent follows its ManagedCluster, renews its
//! lease, syncs status, rotates the certificate and serves its addons' registrations and lease
//! health ([`super::addons`], [`super::addon_health`]), until the hub refuses it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Node};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, GetParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use ocm_api::about::v1alpha1::ClusterProperty;
use ocm_api::cluster::names::{MANAGED_CLUSTER_LEASE, conditions, labels};
use ocm_api::cluster::v1::{ManagedCluster, ManagedClusterStatus, ManagedClusterVersion};
use ocm_api::cluster::v1alpha1::ClusterClaim;
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::conditions::{condition, is_true, set_condition};
use serde_json::json;
use tokio::sync::{Notify, watch};

use super::bootstrap::request_certificate;
use super::certs;
use super::rotation::{CertValidity, RotationSchedule};
use super::secrets::{self, HubCreds};
use super::status::{self, Availability, Claim, accepted};
use super::{AgentError, AgentProgress, Backoff, Ctx, keys, status_code};

/// Lease duration when the ManagedCluster gives none (or 0).
const DEFAULT_LEASE_SECONDS: i32 = 60;

/// Why the joined phase ended.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// Why, in words.
    pub(crate) reason: String,
    /// The stored certificate must not be reused.
    pub(crate) force_bootstrap: bool,
    /// The certificate expired (this says how); reported on the ManagedCluster once the agent
    /// can write again.
    pub(crate) expired: Option<String>,
}

struct Joined<'a> {
    ctx: &'a Ctx,
    cluster: &'a str,
    agent: &'a str,
    hub: watch::Sender<kube::Client>,
    creds: Mutex<HubCreds>,
    cluster_tx: watch::Sender<Option<ManagedCluster>>,
    cluster_rx: watch::Receiver<Option<ManagedCluster>>,
    sync: Notify,
    readable: AtomicBool,
    /// Label of the namespaces this agent manages for the hub's cluster sets.
    namespace_label: String,
    /// The hub deleted the ManagedCluster (seen by the watch); it is not created again.
    deleted: AtomicBool,
}

/// Runs the joined phase until the agent must start over.
pub(crate) async fn run(
    ctx: &Ctx,
    creds: HubCreds,
    cluster: &str,
    agent: &str,
    expiry_note: Option<String>,
) -> Result<Outcome, AgentError> {
    let client = creds.client(&ctx.hub_client).await?;
    let namespace_label = super::managed_namespaces::hub_cluster_set_label(&creds.server.server);
    let (hub, hub_rx) = watch::channel(client);
    let addon_env = super::addon_env::AddonEnv {
        spoke: ctx.spoke.clone(),
        management: ctx.secrets.clone(),
        hub: hub_rx,
        cluster: cluster.to_owned(),
        server: creds.server.clone(),
        options: ctx.options.clone(),
    };
    let (cluster_tx, cluster_rx) = watch::channel(None);
    let joined = Joined {
        ctx,
        cluster,
        agent,
        hub,
        creds: Mutex::new(creds),
        cluster_tx,
        cluster_rx,
        sync: Notify::new(),
        readable: AtomicBool::new(false),
        namespace_label,
        deleted: AtomicBool::new(false),
    };
    tokio::select! {
        outcome = joined.watch_cluster() => Ok(outcome),
        outcome = joined.status_loop() => Ok(outcome),
        outcome = joined.lease_loop() => Ok(outcome),
        outcome = joined.rotation_loop() => Ok(outcome),
        never = joined.spoke_triggers() => match never {},
        never = joined.report_expiry(expiry_note) => match never {},
        never = super::addons::run(addon_env) => match never {},
    }
}

/// The lease duration of `cluster` (0 or unset → 60 s).
fn lease_duration(cluster: &ManagedCluster) -> Duration {
    let secs = cluster
        .spec
        .lease_duration_seconds
        .filter(|s| *s > 0)
        .unwrap_or(DEFAULT_LEASE_SECONDS);
    Duration::from_secs(u64::try_from(secs).unwrap_or(60))
}

/// `base` stretched by a random factor in [1, 1.25] (upstream's jitter 0.25).
fn jittered(base: Duration) -> Duration {
    base.mul_f64(1.0 + certs::random_in((0.0, 0.25)))
}

impl Joined<'_> {
    fn hub(&self) -> kube::Client {
        self.hub.borrow().clone()
    }

    /// Decides whether a failed hub call sends the agent back to bootstrap: only a 401 (the
    /// hub no longer accepts the certificate, or it expired). A 403 — the hub denied the
    /// cluster or deleted its ManagedCluster and with it the cluster's RBAC — does not: as
    /// upstream, the agent creates its ManagedCluster only while bootstrapping, so a cluster a
    /// hub admin deleted stays deleted until the agent registers again.
    fn classify(&self, code: Option<u16>) -> Option<Outcome> {
        if code != Some(401) {
            return None;
        }
        let validity = self
            .creds
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .validity();
        if validity.expired(Timestamp::now()) {
            return Some(self.expired_outcome(&validity));
        }
        Some(Outcome {
            reason: "the hub no longer accepts the client certificate (401 Unauthorized)".into(),
            force_bootstrap: true,
            expired: None,
        })
    }

    /// Publishes a ManagedCluster read outside the watch when it is newer than the last one.
    fn observed(&self, cluster: &ManagedCluster) {
        self.cluster_tx.send_if_modified(|current| {
            let newer = current
                .as_ref()
                .is_none_or(|c| c.metadata.resource_version != cluster.metadata.resource_version);
            if newer {
                *current = Some(cluster.clone());
            }
            newer
        });
    }

    fn own_cluster_readable(&self) {
        self.readable.store(true, Ordering::Relaxed);
        self.deleted.store(false, Ordering::Relaxed);
    }

    /// Follows the ManagedCluster (restarting the watch when the hub client changes).
    async fn watch_cluster(&self) -> Outcome {
        let tx = &self.cluster_tx;
        let mut clients = self.hub.subscribe();
        loop {
            let client = clients.borrow_and_update().clone();
            let api = Api::<ManagedCluster>::all(client);
            let config =
                watcher::Config::default().fields(&format!("metadata.name={}", self.cluster));
            let mut events = std::pin::pin!(watcher(api, config).backoff_on_errors());
            loop {
                let event = tokio::select! {
                    changed = clients.changed() => {
                        if changed.is_err() {
                            std::future::pending::<()>().await;
                        }
                        break;
                    }
                    event = events.next() => event,
                };
                match event {
                    None => break,
                    Some(Ok(watcher::Event::Apply(mc) | watcher::Event::InitApply(mc))) => {
                        self.own_cluster_readable();
                        if !mc.spec.hub_accepts_client {
                            // Seen before the hub takes the agent's access away (several hubs:
                            // a hub that withdrew its acceptance is left).
                            self.ctx.hub_contact.not_accepted();
                        }
                        tx.send_replace(Some(mc));
                        self.sync.notify_one();
                    }
                    Some(Ok(watcher::Event::Delete(_))) => {
                        self.deleted.store(true, Ordering::Relaxed);
                        tracing::warn!(
                            cluster = self.cluster,
                            "the hub deleted this cluster's ManagedCluster; it is not created again until the agent registers again (a new bootstrap kubeconfig)"
                        );
                        self.ctx.set_progress(AgentProgress::Deleted);
                        tx.send_replace(None);
                    }
                    Some(Ok(_)) => {}
                    Some(Err(err)) => {
                        let code = match &err {
                            watcher::Error::InitialListFailed(e)
                            | watcher::Error::WatchStartFailed(e)
                            | watcher::Error::WatchFailed(e) => status_code(e),
                            watcher::Error::WatchError(s) => Some(s.code),
                            watcher::Error::NoResourceVersion => None,
                        };
                        if let Some(outcome) = self.classify(code) {
                            return outcome;
                        }
                        tracing::warn!(error = %err, "watching the ManagedCluster");
                    }
                }
            }
        }
    }

    /// Syncs the status periodically and on every trigger.
    async fn status_loop(&self) -> Outcome {
        let mut availability = Availability::default();
        let mut backoff = Backoff::default();
        let period = self.ctx.options.status_sync_period;
        loop {
            let delay = match self.sync_status(&mut availability).await {
                Ok(()) => {
                    backoff.reset();
                    if availability.failing_since.is_some() {
                        period.min(status::RETRY_WHILE_FAILING)
                    } else {
                        period
                    }
                }
                Err(SyncError::Restart(outcome)) => return outcome,
                Err(SyncError::Failed(err)) => {
                    let delay = backoff.next_delay();
                    tracing::warn!(error = %err, retry_in = ?delay, "syncing cluster status");
                    delay
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = self.sync.notified() => {}
            }
        }
    }

    /// One status sync: joined, available, version, resources, claims. The ManagedCluster
    /// the watch last delivered is the starting point (no read of the hub while it is
    /// current); a conflict — the watch was behind — reads it afresh.
    async fn sync_status(&self, availability: &mut Availability) -> Result<(), SyncError> {
        let api = Api::<ManagedCluster>::all(self.hub());
        for attempt in 0..5 {
            let watched = if attempt == 0 {
                self.cluster_rx.borrow().clone()
            } else {
                None
            };
            let read = match watched {
                Some(cluster) => Ok(cluster),
                None => api.get(self.cluster).await,
            };
            let cluster = match read {
                Ok(c) => {
                    self.own_cluster_readable();
                    self.observed(&c);
                    c
                }
                Err(err) => {
                    let code = status_code(&err);
                    if self.deleted.load(Ordering::Relaxed) && matches!(code, Some(403 | 404)) {
                        // Deleted by the hub admin: nothing to report until it is back.
                        self.ctx.set_progress(AgentProgress::Deleted);
                        return Ok(());
                    }
                    if code == Some(403) && !self.readable.load(Ordering::Relaxed) {
                        // The hub grants access to the ManagedCluster on acceptance.
                        self.ctx.set_progress(AgentProgress::WaitingForAcceptance);
                        return Ok(());
                    }
                    return Err(self.hub_error(err));
                }
            };
            if !accepted(&cluster) {
                self.ctx.set_progress(AgentProgress::WaitingForAcceptance);
                return Ok(());
            }
            let old = cluster.status.clone().unwrap_or_default();
            if old
                .conditions
                .iter()
                .any(|c| c.type_ == conditions::CLOCK_SYNCED && c.status == "False")
            {
                tracing::warn!(
                    "the managed cluster's clock is out of sync with the hub; not updating the cluster status"
                );
                return Ok(());
            }
            let deleting = cluster.metadata.deletion_timestamp.is_some();
            let new = self.desired_status(&old, deleting, availability).await;
            let available = is_true(&new.conditions, conditions::AVAILABLE);
            if let Some(mut patch) = status::status_patch(&old, &new) {
                patch["metadata"] = json!({ "resourceVersion": cluster.metadata.resource_version });
                match api
                    .patch_status(self.cluster, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                {
                    // The written object is the newest: the next sync starts from it even
                    // before the watch brings it.
                    Ok(written) => self.observed(&written),
                    Err(kube::Error::Api(s)) if s.code == 409 => continue,
                    Err(err) => return Err(self.hub_error(err)),
                }
            }
            self.ctx.set_progress(if available {
                AgentProgress::Available
            } else {
                AgentProgress::Joined
            });
            return Ok(());
        }
        Err(SyncError::Failed(AgentError::Certificate(
            "status update kept conflicting".into(),
        )))
    }

    fn hub_error(&self, err: kube::Error) -> SyncError {
        match self.classify(status_code(&err)) {
            Some(outcome) => SyncError::Restart(outcome),
            None => SyncError::Failed(AgentError::Hub(err)),
        }
    }

    /// The status the agent wants, computed from `old` and the managed cluster.
    async fn desired_status(
        &self,
        old: &ManagedClusterStatus,
        deleting: bool,
        availability: &mut Availability,
    ) -> ManagedClusterStatus {
        let spoke = &self.ctx.spoke;
        let mut new = old.clone();
        set_condition(
            &mut new.conditions,
            condition(
                conditions::JOINED,
                "True",
                conditions::joined::JOINED,
                "Managed cluster joined",
                None,
            ),
        );
        let probe = probe_health(spoke).await;
        let healthy = probe.is_ok();
        if let Some((state, reason, message)) =
            status::availability(availability, probe, Instant::now())
        {
            set_condition(
                &mut new.conditions,
                condition(conditions::AVAILABLE, state, reason, &message, None),
            );
        }
        if !healthy {
            // As upstream: no resource or claim gathering against an unhealthy API server.
            return new;
        }
        match spoke.apiserver_version().await {
            Ok(info) => {
                new.version = Some(ManagedClusterVersion {
                    kubernetes: info.git_version,
                });
            }
            Err(err) => tracing::warn!(error = %err, "reading the managed cluster version"),
        }
        match Api::<Node>::all(spoke.clone())
            .list(&ListParams::default())
            .await
        {
            Ok(nodes) => {
                let (capacity, allocatable) = status::node_resources(&nodes.items);
                new.capacity = status::merged_capacity(&old.capacity, capacity);
                new.allocatable = allocatable;
            }
            Err(err) => tracing::warn!(error = %err, "listing nodes"),
        }
        // Claims and (with the ClusterProperty gate) properties; a failed list keeps what
        // was reported, a missing API reports none of that kind.
        let spoke_only = |meta: &kube::api::ObjectMeta| {
            meta.labels
                .as_ref()
                .is_some_and(|l| l.contains_key(labels::SPOKE_ONLY_CLAIM))
        };
        let mut listed = true;
        let mut properties = Vec::new();
        if self.ctx.options.cluster_properties {
            match Api::<ClusterProperty>::all(spoke.clone())
                .list(&ListParams::default())
                .await
            {
                Ok(list) => {
                    properties = list
                        .items
                        .iter()
                        .map(|p| Claim {
                            name: p.metadata.name.clone().unwrap_or_default(),
                            value: p.spec.value.clone(),
                            spoke_only: spoke_only(&p.metadata),
                        })
                        .collect();
                }
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(err) => {
                    listed = false;
                    tracing::warn!(error = %err, "listing cluster properties");
                }
            }
        }
        let mut claims = Vec::new();
        if self.ctx.options.cluster_claims {
            match Api::<ClusterClaim>::all(spoke.clone())
                .list(&ListParams::default())
                .await
            {
                Ok(list) => {
                    claims = list
                        .items
                        .iter()
                        .map(|c| Claim {
                            name: c.metadata.name.clone().unwrap_or_default(),
                            value: c.spec.value.clone(),
                            spoke_only: spoke_only(&c.metadata),
                        })
                        .collect();
                }
                // No ClusterClaim API on the managed cluster: no claims.
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(err) => {
                    listed = false;
                    tracing::warn!(error = %err, "listing cluster claims");
                }
            }
        }
        if listed {
            new.cluster_claims = status::reported_claims(
                &status::with_properties(properties, claims),
                self.ctx.options.max_custom_cluster_claims,
                &self.ctx.options.reserved_claim_suffixes,
            );
        }
        super::managed_namespaces::reconcile(
            spoke,
            &self.namespace_label,
            &mut new.managed_namespaces,
            deleting,
        )
        .await;
        new
    }

    /// Renews the lease every lease duration (jittered) while the cluster is accepted.
    async fn lease_loop(&self) -> Outcome {
        let mut rx = self.cluster_rx.clone();
        let mut backoff = Backoff::default();
        loop {
            let waited = rx
                .wait_for(|c| c.as_ref().is_some_and(accepted))
                .await
                .map(|cluster| cluster.as_ref().map(lease_duration).unwrap_or_default());
            let Ok(duration) = waited else {
                return std::future::pending().await;
            };
            let mut wait = jittered(duration);
            match self.renew_lease().await {
                Ok(()) => {
                    self.ctx.hub_contact.reached();
                    backoff.reset();
                }
                Err(err) => {
                    self.ctx.hub_contact.failed();
                    if let Some(outcome) = self.classify(status_code(&err)) {
                        return outcome;
                    }
                    wait = wait.min(backoff.next_delay());
                    tracing::warn!(error = %err, retry_in = ?wait, "renewing the cluster lease");
                }
            }
            let deadline = tokio::time::Instant::now() + wait;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => break,
                    changed = rx.changed() => {
                        if changed.is_err() {
                            return std::future::pending().await;
                        }
                        let restart = rx.borrow().as_ref().is_none_or(|c| {
                            !accepted(c) || lease_duration(c) != duration
                        });
                        if restart {
                            break;
                        }
                    }
                }
            }
        }
    }

    async fn renew_lease(&self) -> Result<(), kube::Error> {
        let api = Api::<Lease>::namespaced(self.hub(), self.cluster);
        for _ in 0..3 {
            let mut lease = api.get(MANAGED_CLUSTER_LEASE).await?;
            lease.spec.get_or_insert_default().renew_time = Some(MicroTime(jiff::Timestamp::now()));
            match api
                .replace(MANAGED_CLUSTER_LEASE, &PostParams::default(), &lease)
                .await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    /// Rotates the certificate at its deadline (see [`super::rotation`]), sooner when the hub
    /// kubeconfig secret no longer holds it, and looks again at least every
    /// `cert_check_period` (a safety net). Past the deadline, failed renewals are retried with
    /// backoff while the certificate is valid; an expired one ends the joined phase.
    async fn rotation_loop(&self) -> Outcome {
        let ns = self.ctx.options.agent_namespace.clone();
        let mut schedule = RotationSchedule::new(self.ctx.options.rotation_threshold);
        loop {
            let (validity, cert_pem) = {
                let creds = self.creds.lock().unwrap_or_else(|p| p.into_inner());
                (creds.validity(), creds.cert_pem.clone())
            };
            let now = Timestamp::now();
            if validity.expired(now) {
                return self.expired_outcome(&validity);
            }
            let stored = secrets::read_secret(&self.ctx.secrets, &ns, super::HUB_KUBECONFIG_SECRET)
                .await
                .ok()
                .map(|s| s.and_then(|s| secrets::text(&s, keys::TLS_CRT)));
            let deadline = schedule.deadline(&validity);
            let reason = if now >= deadline {
                Some("the client certificate reached its rotation deadline")
            } else if matches!(&stored, Some(s) if s.as_deref() != Some(cert_pem.trim())) {
                Some("the hub kubeconfig secret no longer holds the client certificate")
            } else {
                None
            };
            let wake = match reason {
                None => deadline,
                Some(reason) => {
                    tracing::info!(
                        reason,
                        expires = %validity.not_after,
                        "rotating the client certificate"
                    );
                    let attempt = tokio::select! {
                        attempt = self.rotate() => attempt,
                        () = sleep_until(validity.not_after) => {
                            return self.expired_outcome(&validity);
                        }
                    };
                    match attempt {
                        Ok(()) => {
                            schedule.succeeded();
                            // Schedule the new certificate right away.
                            continue;
                        }
                        Err(SyncError::Restart(outcome)) => return outcome,
                        Err(SyncError::Failed(err)) => {
                            let retry = schedule.failed(&validity, Timestamp::now());
                            tracing::warn!(
                                error = %err,
                                retry_at = %retry,
                                expires = %validity.not_after,
                                "rotating the client certificate"
                            );
                            let message = err.to_string();
                            let _ = self
                                .set_rotated_condition(
                                    "False",
                                    conditions::certificate_rotated::UPDATE_FAILED,
                                    &message,
                                )
                                .await;
                            retry
                        }
                    }
                }
            };
            let safety_net = Timestamp::now()
                .checked_add(self.ctx.options.cert_check_period)
                .unwrap_or(wake);
            tokio::select! {
                () = sleep_until(wake.min(safety_net)) => {}
                _ = secrets::wait_for_hub_secret_change(&self.ctx.secrets, &ns, &cert_pem) => {}
            }
        }
    }

    /// The current certificate expired before it could be renewed: back to bootstrap, with a
    /// note to report once the agent can write to the hub again.
    fn expired_outcome(&self, validity: &CertValidity) -> Outcome {
        let message = format!(
            "the client certificate expired at {} before it could be rotated; registering again with the bootstrap kubeconfig",
            validity.not_after
        );
        tracing::error!(cluster = self.cluster, "{message}");
        Outcome {
            reason: message.clone(),
            force_bootstrap: true,
            expired: Some(message),
        }
    }

    /// Reports an earlier expiry (`ClusterCertificateRotated` False, reason
    /// `ClientCertificateExpired`) once the cluster is accepted, retrying until the hub takes
    /// it. Never returns.
    async fn report_expiry(&self, note: Option<String>) -> std::convert::Infallible {
        if let Some(message) = note {
            let mut rx = self.cluster_rx.clone();
            let mut backoff = Backoff::default();
            loop {
                if rx
                    .wait_for(|c| c.as_ref().is_some_and(accepted))
                    .await
                    .is_err()
                {
                    break;
                }
                match self
                    .set_rotated_condition(
                        "False",
                        conditions::certificate_rotated::EXPIRED,
                        &message,
                    )
                    .await
                {
                    Ok(()) => break,
                    Err(err) => {
                        let delay = backoff.next_delay();
                        tracing::warn!(error = %err, retry_in = ?delay, "reporting the certificate expiry");
                        tokio::time::sleep(delay).await;
                    }
                }
            }
        }
        std::future::pending().await
    }

    /// Gets a new certificate with the current hub credentials, stores it and switches the
    /// hub client.
    async fn rotate(&self) -> Result<(), SyncError> {
        let hub = self.hub();
        let (key_pem, cert_pem, cert) =
            request_certificate(self.ctx, &hub, self.cluster, self.agent, false)
                .await
                .map_err(|err| match &err {
                    AgentError::Hub(e) => match self.classify(status_code(e)) {
                        Some(outcome) => SyncError::Restart(outcome),
                        None => SyncError::Failed(err),
                    },
                    _ => SyncError::Failed(err),
                })?;
        let server = self
            .creds
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .server
            .clone();
        let creds = HubCreds {
            server,
            cert_pem,
            key_pem,
            cert: cert.clone(),
            received: Some(Timestamp::now()),
        };
        secrets::write_hub_secret(
            &self.ctx.secrets,
            &self.ctx.options.agent_namespace,
            &creds,
            self.cluster,
            self.agent,
        )
        .await
        .map_err(|e| SyncError::Failed(AgentError::Spoke(e)))?;
        let client = creds
            .client(&self.ctx.hub_client)
            .await
            .map_err(|e| SyncError::Failed(AgentError::Kubeconfig(e)))?;
        *self.creds.lock().unwrap_or_else(|p| p.into_inner()) = creds;
        self.hub.send_replace(client);
        let message = format!(
            "client certificate rotated starting from {} to {}",
            timestamp(cert.not_before),
            timestamp(cert.not_after)
        );
        tracing::info!(%message);
        if let Err(err) = self
            .set_rotated_condition("True", conditions::certificate_rotated::UPDATED, &message)
            .await
        {
            tracing::warn!(error = %err, "reporting the certificate rotation");
        }
        Ok(())
    }

    /// Sets `ClusterCertificateRotated` on the ManagedCluster.
    async fn set_rotated_condition(
        &self,
        state: &str,
        reason: &str,
        message: &str,
    ) -> Result<(), kube::Error> {
        let api = Api::<ManagedCluster>::all(self.hub());
        for _ in 0..5 {
            let cluster = api.get(self.cluster).await?;
            let mut list = cluster
                .status
                .as_ref()
                .map(|s| s.conditions.clone())
                .unwrap_or_default();
            if !set_condition(
                &mut list,
                condition(
                    conditions::CERTIFICATE_ROTATED,
                    state,
                    reason,
                    message,
                    None,
                ),
            ) {
                return Ok(());
            }
            let patch = json!({
                "metadata": {"resourceVersion": cluster.metadata.resource_version},
                "status": {"conditions": list},
            });
            match api
                .patch_status(self.cluster, &PatchParams::default(), &Patch::Merge(patch))
                .await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    /// Triggers a status sync on changes of nodes, cluster claims and (with the gate)
    /// cluster properties, and when a managed namespace is deleted or loses its label (a
    /// labelled watch reports both as deletions). Never returns.
    async fn spoke_triggers(&self) -> std::convert::Infallible {
        let spoke = &self.ctx.spoke;
        let nodes = watcher(Api::<Node>::all(spoke.clone()), watcher::Config::default())
            .backoff_on_errors()
            .touched_objects()
            .map(|r| r.is_ok())
            .boxed();
        let claims = watcher(
            Api::<ClusterClaim>::all(spoke.clone()),
            watcher::Config::default(),
        )
        .backoff_on_errors()
        .touched_objects()
        .map(|r| r.is_ok())
        .boxed();
        let properties = if self.ctx.options.cluster_properties {
            watcher(
                Api::<ClusterProperty>::all(spoke.clone()),
                watcher::Config::default(),
            )
            .backoff_on_errors()
            .touched_objects()
            .map(|r| r.is_ok())
            .boxed()
        } else {
            futures::stream::pending().boxed()
        };
        let namespaces = watcher(
            Api::<Namespace>::all(spoke.clone()),
            watcher::Config::default().labels(&format!("{}=true", self.namespace_label)),
        )
        .backoff_on_errors()
        .map(|e| matches!(e, Ok(watcher::Event::Delete(_))))
        .boxed();
        let mut merged = futures::stream::select_all([nodes, claims, properties, namespaces]);
        while let Some(trigger) = merged.next().await {
            if trigger {
                self.sync.notify_one();
            }
        }
        std::future::pending().await
    }
}

/// Sleeps until `at` (wall clock); returns at once when it has passed.
async fn sleep_until(at: Timestamp) {
    let wait = Duration::try_from(at.duration_since(Timestamp::now())).unwrap_or(Duration::ZERO);
    tokio::time::sleep(wait).await;
}

fn timestamp(secs: i64) -> String {
    jiff::Timestamp::from_second(secs)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| secs.to_string())
}

/// Probes `/livez`, falling back to `/healthz` when it is not served or not allowed. The
/// error reads `status code: <code>, <detail>` (code 0 when there was no HTTP answer).
async fn probe_health(spoke: &kube::Client) -> Result<(), String> {
    let describe = |(code, detail): (u16, String)| format!("status code: {code}, {detail}");
    match get_path(spoke, "livez").await {
        Ok(()) => Ok(()),
        Err((403 | 404, _)) => get_path(spoke, "healthz").await.map_err(describe),
        Err(other) => Err(describe(other)),
    }
}

/// GET `/<path>`; the error is the HTTP status (0 without one) and a description.
async fn get_path(client: &kube::Client, path: &str) -> Result<(), (u16, String)> {
    let request = kube::core::Request::new("")
        .get(path, &GetParams::default())
        .map_err(|e| (0, e.to_string()))?;
    match client.request_text(request).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) => Err((s.code, s.message)),
        Err(err) => Err((0, err.to_string())),
    }
}

/// A failed sync: start over, or retry later.
enum SyncError {
    Restart(Outcome),
    Failed(AgentError),
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn lease_duration_defaults_to_sixty_seconds() {
        let mut mc = ManagedCluster::new("c1", Default::default());
        assert_eq!(lease_duration(&mc), Duration::from_secs(60));
        mc.spec.lease_duration_seconds = Some(0);
        assert_eq!(lease_duration(&mc), Duration::from_secs(60));
        mc.spec.lease_duration_seconds = Some(5);
        assert_eq!(lease_duration(&mc), Duration::from_secs(5));
        for _ in 0..50 {
            let d = jittered(Duration::from_secs(4));
            assert!(
                d >= Duration::from_secs(4) && d <= Duration::from_secs(5),
                "{d:?}"
            );
        }
    }
}
