//! The generic controller `ocm hub` runs for every addon: ClusterManagementAddOn install
//! strategies ([`crate::install::plan`]) and the configs each ManagedClusterAddOn should run,
//! handed out per rollout strategy.
//!
//! Strategy-governed addons also get their cluster's addon annotations
//! ([`crate::install::annotation_changes`]), and addons whose agents use the token driver their
//! ServiceAccount, Role and RoleBinding ([`crate::token_infra`]).
//!
//! The controller reads caches fed by watches (ClusterManagementAddOns, ManagedClusterAddOns,
//! PlacementDecisions, ManagedClusters, AddOnDeploymentConfigs, AddOnTemplates, and the token infrastructure's
//! ServiceAccounts, Roles and RoleBindings), writes only differences, and plans only what
//! changed: each watch event names the addons it affects ([`crate::install_changes`]) — none
//! for fields no step reads, such as an agent's `Available` — and a pass re-plans those addons
//! whole, or only the steps of a single ManagedClusterAddOn, or puts back the `Configured`
//! condition a writer of its status (an addon agent replacing the conditions) dropped. A full
//! pass runs at the start, after a watch lost and listed again, and every [`FULL_RESYNC`] as a
//! safety net; rollouts waiting on the clock and addons whose configs are read without a watch
//! are looked at again on their own timers, and failed writes at the next event of any kind (a
//! conflict's newer version) or after [`RETRY`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use ocm_api::addon::v1alpha1::AddOnDeploymentConfig;
use ocm_api::addon::v1beta1::{ClusterManagementAddOn, ManagedClusterAddOn};
use ocm_api::cluster::v1::ManagedCluster;
use ocm_api::cluster::v1beta1::PlacementDecision;
use ocm_runtime::shutdown::Shutdown;
use tokio::time::Instant;

use crate::install_changes::{self as changes, Dirty};
use crate::install_steps::{Caches, UnknownAddonEvents};
use crate::install_watch::{Changes, Watches};
use crate::stored_template::StoredTemplate;

pub use crate::install_steps::UNKNOWN_ADDON;

/// How often addons whose configs are read from the hub without a watch (any config kind but
/// AddOnDeploymentConfig and AddOnTemplate: an addon's own config CRD) are looked at again.
const POLL: Duration = Duration::from_secs(30);

/// How often every addon is planned again, whatever changed: the safety net for an event
/// missed.
pub const FULL_RESYNC: Duration = Duration::from_secs(300);

/// How soon a failed write is tried again at the latest (without an event before).
const RETRY: Duration = Duration::from_secs(2);

/// Counts of the install controller's passes: how much of the fleet each looked at.
#[derive(Debug, Default)]
pub struct InstallStats {
    passes: AtomicU64,
    full_passes: AtomicU64,
    examined: AtomicU64,
}

impl InstallStats {
    /// Passes run so far.
    pub fn passes(&self) -> u64 {
        self.passes.load(Ordering::Relaxed)
    }

    /// Of those, full passes (at the start, after a watch listed again, every
    /// [`FULL_RESYNC`]).
    pub fn full_passes(&self) -> u64 {
        self.full_passes.load(Ordering::Relaxed)
    }

    /// ManagedClusterAddOns the passes looked at so far (one addon in two passes counts twice),
    /// counted when a pass starts, before it writes anything.
    pub fn examined(&self) -> u64 {
        self.examined.load(Ordering::Relaxed)
    }
}

/// Follows every ClusterManagementAddOn's install strategy and hands out its configs until
/// `shutdown`, planning what each change affects.
#[inline(never)]
pub fn run_install_strategies(
    client: kube::Client,
    shutdown: Shutdown,
) -> futures::future::BoxFuture<'static, ()> {
    run_install_strategies_counted(client, shutdown, Arc::default())
}

/// [`run_install_strategies`], counting its passes in `stats`.
#[inline(never)]
pub fn run_install_strategies_counted(
    client: kube::Client,
    shutdown: Shutdown,
    stats: Arc<InstallStats>,
) -> futures::future::BoxFuture<'static, ()> {
    Box::pin(run_install_strategies_body(client, shutdown, stats))
}

async fn run_install_strategies_body(
    client: kube::Client,
    shutdown: Shutdown,
    stats: Arc<InstallStats>,
) {
    let shared = Arc::new(Changes::default());
    let watches = Watches {
        client: &client,
        changes: &shared,
        shutdown: &shutdown,
    };
    let (cmas, cma_feed) =
        watches.all::<ClusterManagementAddOn, _>(|_, old, new| changes::cma_change(old, new));
    let (mcas, mca_feed) = watches.watch::<ManagedClusterAddOn, _>(
        watcher::Config::default(),
        |pending, store| pending.index.rebuild(store),
        |pending, old, new| {
            match new {
                Some(new) => pending.index.insert(new),
                None => old.into_iter().for_each(|o| pending.index.remove(o)),
            }
            changes::addon_change(old, new)
        },
    );
    let cmas_seen = cmas.clone();
    let (decisions, decision_feed) = watches.all::<PlacementDecision, _>(move |_, old, new| {
        changes::decision_change(&cmas_seen.state(), old, new)
    });
    let cmas_seen = cmas.clone();
    let (clusters, cluster_feed) = watches.all::<ManagedCluster, _>(move |pending, old, new| {
        let cluster = new.or(old).and_then(|c| c.metadata.name.as_deref());
        let addons = cluster
            .map(|c| pending.index.names_on(c))
            .unwrap_or_default();
        changes::cluster_change(&cmas_seen.state(), &addons, old, new)
    });
    let cmas_seen = cmas.clone();
    let (deployment_configs, config_feed) =
        watches.all::<AddOnDeploymentConfig, _>(move |pending, old, new| {
            let users = new
                .or(old)
                .map(|c| {
                    pending.index.config_users(
                        changes::DEPLOYMENT_CONFIGS,
                        c.metadata.namespace.as_deref().unwrap_or_default(),
                        c.metadata.name.as_deref().unwrap_or_default(),
                    )
                })
                .unwrap_or_default();
            changes::deployment_config_change(&cmas_seen.state(), &users, old, new)
        });
    let cmas_seen = cmas.clone();
    let (templates, template_feed) = watches.all::<StoredTemplate, _>(move |pending, old, new| {
        let users = new
            .or(old)
            .map(|t| {
                pending.index.config_users(
                    changes::TEMPLATES,
                    "",
                    t.metadata.name.as_deref().unwrap_or_default(),
                )
            })
            .unwrap_or_default();
        changes::template_change(&cmas_seen.state(), &users, old, new)
    });
    // The token infrastructure's objects only, by their label: each kind holds one object
    // per ManagedClusterAddOn of the token driver.
    let token_objects = watcher::Config::default().labels(&format!(
        "{}=true",
        ocm_api::addon::names::labels::TOKEN_INFRASTRUCTURE
    ));
    let (token_accounts, account_feed) = watches.watch::<ServiceAccount, _>(
        token_objects.clone(),
        |_, _| {},
        |_, old, new| changes::account_change(old, new),
    );
    let (token_roles, role_feed) = watches.watch::<Role, _>(
        token_objects.clone(),
        |_, _| {},
        |_, old, new| changes::role_change(old, new),
    );
    let (token_bindings, binding_feed) = watches.watch::<RoleBinding, _>(
        token_objects,
        |_, _| {},
        |_, old, new| changes::binding_change(old, new),
    );
    let feeds = [
        cma_feed,
        mca_feed,
        decision_feed,
        cluster_feed,
        config_feed,
        template_feed,
        account_feed,
        role_feed,
        binding_feed,
    ];
    let caches = Caches {
        cmas,
        mcas,
        decisions,
        clusters,
        deployment_configs,
        templates,
        token_accounts,
        token_roles,
        token_bindings,
    };
    let ready = async {
        let _ = caches.cmas.wait_until_ready().await;
        let _ = caches.mcas.wait_until_ready().await;
        let _ = caches.decisions.wait_until_ready().await;
        let _ = caches.clusters.wait_until_ready().await;
        let _ = caches.deployment_configs.wait_until_ready().await;
        let _ = caches.templates.wait_until_ready().await;
        let _ = caches.token_accounts.wait_until_ready().await;
        let _ = caches.token_roles.wait_until_ready().await;
        let _ = caches.token_bindings.wait_until_ready().await;
    };
    let mut controller = Controller {
        client: &client,
        caches: &caches,
        shared: &shared,
        stats: &stats,
        unknown_events: UnknownAddonEvents::new(&client),
        token_infra: crate::token_infra::TokenInfra::default(),
        timers: Timers::new(Instant::now()),
    };
    tokio::select! {
        _ = shutdown.cancelled() => {}
        _ = ready => loop {
            let started = Instant::now();
            controller.pass(started).await;
            let took = started.elapsed();
            let wake = controller.timers.next_wake(started + took);
            // A failed write (most often a conflict: a newer version is on its way) is
            // retried on the next event of any kind, or after RETRY.
            let retrying = !controller.timers.retry.is_empty();
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = shared.changed.notified() => {}
                _ = shared.seen.notified(), if retrying => {}
                _ = tokio::time::sleep_until(wake) => {}
            }
            // While a large fleet's addons keep changing, the next pass waits so that the
            // passes take at most about a fifth of a core: the changes meanwhile are
            // coalesced into it.
            let pause = pass_pause(took);
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep_until(started + took + pause) => {}
            }
        }
    }
    for feed in feeds {
        feed.abort();
    }
}

/// The clock-driven work of the controller: the next full pass, addons whose rollout changes
/// at a time, addons polled for configs read without a watch, and failed writes.
#[derive(Debug)]
struct Timers {
    next_full: Instant,
    /// Per addon: when its rollout changes by the clock alone.
    rechecks: BTreeMap<String, Instant>,
    /// Addons with configs read without a watch, and when they are next looked at.
    polled: BTreeSet<String>,
    next_poll: Instant,
    /// What failed in the last pass.
    retry: Dirty,
}

impl Timers {
    /// The timers of a controller starting at `now`: its first pass is a full one.
    fn new(now: Instant) -> Timers {
        Timers {
            next_full: now + FULL_RESYNC,
            rechecks: BTreeMap::new(),
            polled: BTreeSet::new(),
            next_poll: now + POLL,
            retry: Dirty::everything(),
        }
    }

    /// Adds to `work` what is due at `now` (and the failures of the last pass).
    fn due(&mut self, now: Instant, work: &mut Dirty) {
        work.merge(std::mem::take(&mut self.retry));
        if now >= self.next_full {
            work.all = true;
        }
        if work.all {
            self.next_full = now + FULL_RESYNC;
        }
        work.addons.extend(
            self.rechecks
                .iter()
                .filter(|(_, at)| **at <= now)
                .map(|(name, _)| name.clone()),
        );
        if now >= self.next_poll {
            work.addons.extend(self.polled.iter().cloned());
            self.next_poll = now + POLL;
        }
    }

    /// Records what planning addon `name` at `now` came to.
    fn planned(
        &mut self,
        name: &str,
        now: Instant,
        configured: &crate::install_configs::Configured,
    ) {
        match configured.recheck {
            Some(after) => self.rechecks.insert(name.to_owned(), now + after),
            None => self.rechecks.remove(name),
        };
        if configured.read_live {
            self.polled.insert(name.to_owned());
        } else {
            self.polled.remove(name);
        }
    }

    /// Forgets addon `name` (its ClusterManagementAddOn is gone).
    fn forget(&mut self, name: &str) {
        self.rechecks.remove(name);
        self.polled.remove(name);
    }

    /// When the controller wakes without an event, after a pass that ended at `ended`.
    fn next_wake(&self, ended: Instant) -> Instant {
        let mut wake = self.next_full;
        if let Some(at) = self.rechecks.values().min() {
            wake = wake.min(*at);
        }
        if !self.polled.is_empty() {
            wake = wake.min(self.next_poll);
        }
        if !self.retry.is_empty() {
            wake = wake.min(ended + RETRY);
        }
        wake
    }
}

/// The install controller's state between passes.
struct Controller<'a> {
    client: &'a kube::Client,
    caches: &'a Caches,
    shared: &'a Changes,
    stats: &'a InstallStats,
    unknown_events: UnknownAddonEvents,
    token_infra: crate::token_infra::TokenInfra,
    timers: Timers,
}

impl Controller<'_> {
    /// One pass at `now` over what changed and what is due.
    async fn pass(&mut self, now: Instant) {
        let mut work = std::mem::take(&mut self.shared.lock().dirty);
        self.timers.due(now, &mut work);
        if work.is_empty() {
            return;
        }
        let full = work.all;
        if full {
            let pending = self.shared.lock();
            work.addons.extend(pending.index.names().cloned());
            drop(pending);
            work.addons.extend(
                self.caches
                    .cmas
                    .state()
                    .iter()
                    .filter_map(|c| c.metadata.name.clone()),
            );
        }
        // What the pass looks at, read and counted before it writes anything: whoever sees
        // a write of this pass sees it counted.
        let whole: Vec<(String, Vec<Arc<ManagedClusterAddOn>>)> = {
            let pending = self.shared.lock();
            work.addons
                .iter()
                .map(|name| (name.clone(), pending.index.named(&self.caches.mcas, name)))
                .collect()
        };
        let single: Vec<(String, Arc<ManagedClusterAddOn>)> = work
            .single
            .iter()
            .filter(|(name, _)| !work.addons.contains(name))
            .filter_map(|(name, cluster)| {
                let mca = self
                    .caches
                    .mcas
                    .get(&ObjectRef::new(name).within(cluster))?;
                Some((name.clone(), mca))
            })
            .collect();
        // Dropped `Configured` conditions, put back after the addons' plans (a plan that
        // wrote one meanwhile makes that a conflict, and the next pass sees it there).
        let restore: Vec<(Arc<ManagedClusterAddOn>, &Condition)> = work
            .configured
            .iter()
            .filter_map(|((name, cluster), lost)| {
                let mca = self
                    .caches
                    .mcas
                    .get(&ObjectRef::new(name).within(cluster))?;
                Some((mca, lost))
            })
            .collect();
        let examined =
            whole.iter().map(|(_, m)| m.len()).sum::<usize>() + single.len() + restore.len();
        self.stats.passes.fetch_add(1, Ordering::Relaxed);
        if full {
            self.stats.full_passes.fetch_add(1, Ordering::Relaxed);
        }
        self.stats
            .examined
            .fetch_add(examined as u64, Ordering::Relaxed);
        let mut retry = Dirty::default();
        let clock = jiff::Timestamp::now();
        for (name, mcas) in &whole {
            self.plan_addon(name, mcas, now, clock, &mut retry).await;
        }
        for (name, mca) in single {
            self.addon_steps(&name, &[mca], &mut retry).await;
        }
        for (mca, lost) in restore {
            if let Err(err) =
                crate::install_configs::restore_configured(self.client, &mca, lost).await
            {
                let name = mca.metadata.name.as_deref().unwrap_or_default();
                let cluster = mca.metadata.namespace.as_deref().unwrap_or_default();
                tracing::debug!(addon = name, cluster, %err, "Configured condition not put back yet");
                retry.merge(Dirty::configured(name, cluster, lost.clone()));
            }
        }
        self.timers.retry = retry;
        tracing::debug!(
            full,
            addons = work.addons.len(),
            single = work.single.len(),
            configured = work.configured.len(),
            examined,
            seconds = now.elapsed().as_secs_f64(),
            "addon install and config pass"
        );
    }

    /// Plans addon `name` whole, with `mcas` all of its ManagedClusterAddOns: its install
    /// strategy, each addon's own steps, and its configs.
    async fn plan_addon(
        &mut self,
        name: &str,
        mcas: &[Arc<ManagedClusterAddOn>],
        now: Instant,
        clock: jiff::Timestamp,
        retry: &mut Dirty,
    ) {
        let Some(cma) = self.caches.cmas.get(&ObjectRef::new(name)) else {
            self.timers.forget(name);
            self.addon_steps(name, mcas, retry).await;
            return;
        };
        match crate::install_steps::install_addon(self.client, self.caches, &cma, mcas, retry).await
        {
            Ok(true) => self.addon_steps(name, mcas, retry).await,
            // As before a strategy it cannot follow: no owner references or annotations.
            Ok(false) => self.unmanaged_steps(true, mcas, retry).await,
            Err(err) => {
                tracing::debug!(addon = name, %err, "install strategy not followed; retrying");
                retry.merge(Dirty::addon(name));
                self.unmanaged_steps(true, mcas, retry).await;
            }
        }
        let configured = crate::install_configs::configure_addon(
            self.client,
            self.caches,
            &cma,
            mcas,
            clock,
            retry,
        )
        .await;
        self.timers.planned(name, now, &configured);
    }

    /// The steps of each of `mcas` (ManagedClusterAddOns of addon `name`) on its own: owner
    /// reference and cluster annotations from the ClusterManagementAddOn, or the unknown-addon
    /// Event without one; token infrastructure.
    async fn addon_steps(
        &mut self,
        name: &str,
        mcas: &[Arc<ManagedClusterAddOn>],
        retry: &mut Dirty,
    ) {
        let cma = self.caches.cmas.get(&ObjectRef::new(name));
        if let Some(cma) = &cma {
            crate::install_steps::adopt_addons(self.client, mcas, cma, retry).await;
            if crate::install_steps::strategy_type(cma)
                == ocm_api::addon::names::INSTALL_STRATEGY_PLACEMENTS
            {
                crate::install_steps::sync_addon_annotations(self.client, self.caches, mcas, retry)
                    .await;
            }
        }
        self.unmanaged_steps(cma.is_some(), mcas, retry).await;
    }

    /// The steps of `mcas` that need no install strategy: the unknown-addon Event (when not
    /// `known`), token infrastructure.
    async fn unmanaged_steps(
        &mut self,
        known: bool,
        mcas: &[Arc<ManagedClusterAddOn>],
        retry: &mut Dirty,
    ) {
        crate::install_steps::mark_unknown_addons(
            self.client,
            known,
            mcas,
            &mut self.unknown_events,
            retry,
        )
        .await;
        let failed = self
            .token_infra
            .pass(self.client, mcas.iter(), &self.caches.token())
            .await;
        for (addon, cluster) in failed {
            retry.merge(Dirty::single(&addon, &cluster));
        }
    }
}

/// How long after a pass that took `took` the next one may start: four times as long (so that
/// back-to-back passes use at most a fifth of a core), at most 5 s; nothing for a pass under
/// 10 ms (a small fleet's changes are handled at once).
fn pass_pause(took: Duration) -> Duration {
    if took < Duration::from_millis(10) {
        return Duration::ZERO;
    }
    (took * 4).min(Duration::from_secs(5))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_of_a_large_fleet_are_spaced_and_small_ones_are_not() {
        assert_eq!(pass_pause(Duration::from_millis(3)), Duration::ZERO);
        assert_eq!(
            pass_pause(Duration::from_millis(100)),
            Duration::from_millis(400)
        );
        assert_eq!(pass_pause(Duration::from_secs(4)), Duration::from_secs(5));
    }

    #[test]
    fn timers_bring_back_what_is_due_and_nothing_else() {
        let start = Instant::now();
        let mut timers = Timers::new(start);
        let mut work = Dirty::default();
        timers.due(start, &mut work);
        assert!(work.all, "the first pass is a full one");

        let configured =
            |recheck, read_live| crate::install_configs::Configured { recheck, read_live };
        timers.planned(
            "soaking",
            start,
            &configured(Some(Duration::from_secs(10)), false),
        );
        timers.planned("templated", start, &configured(None, true));
        timers.planned("settled", start, &configured(None, false));
        assert_eq!(timers.next_wake(start), start + Duration::from_secs(10));

        let mut work = Dirty::default();
        timers.due(start + Duration::from_secs(1), &mut work);
        assert!(work.is_empty(), "{work:?}");
        timers.due(start + Duration::from_secs(10), &mut work);
        assert_eq!(work, Dirty::addon("soaking"));
        let mut work = Dirty::default();
        timers.due(start + POLL, &mut work);
        assert!(work.addons.contains("templated") && !work.addons.contains("settled"));
        let mut work = Dirty::default();
        timers.due(start + FULL_RESYNC, &mut work);
        assert!(work.all);

        // Planned again with nothing waiting on the clock: a failure is retried first.
        timers.planned("soaking", start + FULL_RESYNC, &configured(None, false));
        timers.retry = Dirty::single("a", "c1");
        assert_eq!(
            timers.next_wake(start + FULL_RESYNC),
            start + FULL_RESYNC + RETRY
        );
    }
}
