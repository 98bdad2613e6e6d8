//! Addon registrations on the agent: client certificates for addon agents.
//!
//! The hub's addon manager writes into each ManagedClusterAddOn (in the cluster namespace) the
//! addon's install namespace on this cluster (`status.namespace`) and the credentials its agent
//! needs (`status.registrations`). For every registration the agent keeps a valid certificate
//! in a Secret in the install namespace ([`install_namespace`]; created if missing):
//!
//! * `kubeClient` → [`hub_kubeconfig_secret_name`] `<addon>-hub-kubeconfig` with `kubeconfig`,
//!   `tls.crt` and `tls.key`; the kubeconfig points at the hub (server and CA of the agent's own
//!   hub kubeconfig) and names the certificate files `tls.crt` / `tls.key` relative to where the
//!   secret is mounted, as upstream does;
//! * `customSigner` → [`client_cert_secret_name`] `<addon>-<signer, "/" → "-">-client-cert`
//!   with `tls.crt` and `tls.key`.
//!
//! A certificate is requested when there is none, when it does not match its key or the
//! registration's subject (CN = user, O = groups), when it expired, or when its rotation
//! deadline has come — the same rule and [`RotationSchedule`] as the cluster's own certificate.
//! The CSR (generateName `addon-<cluster>-<addon>-`, labels cluster-name and addon-name, an
//! ECDSA P-256 key that never leaves the cluster, DNS SAN `<addon>.addon.open-cluster-management.io`)
//! is created with the agent's hub credentials; the addon manager approves it (and signs it for
//! a custom signer). No CSR is created while [`MAX_PENDING_CSRS`] CSRs of the same cluster and
//! addon are pending. The outcome is the MCA condition `ClusterCertificateRotated`
//! (`ClientCertificateUpdated` naming the secret, or `ClientCertificateUpdateFailed`), written as
//! a merge patch of `status.conditions` conditional on the resourceVersion read.
//!
//! Secrets of registrations that went away (or of MCAs that were deleted) are deleted: those
//! labelled `open-cluster-management.io/addon-name` whose name is one this module gives.
//!
//! Deviation: rcgen keeps one value per attribute type, and the second O (or OU) is written
//! under its OID spelled as a custom type, so a subject carries at most two groups and two
//! organizational units; a registration with more fails with a message saying so.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use kube::runtime::watcher;
use ocm_api::addon::names::conditions::CLUSTER_CERTIFICATE_ROTATED;
use ocm_api::addon::names::labels::{ADDON_NAME, ADDON_NAMESPACE};
use ocm_api::addon::v1beta1::{KubeClientDriver, ManagedClusterAddOn, RegistrationType};
use ocm_api::cluster::names::conditions::certificate_rotated;
use ocm_api::cluster::names::labels::CLUSTER_NAME;
use ocm_runtime::backoff::WatchBackoffExt;
use ocm_runtime::kubeconfig::ServerInfo;
use rcgen::{
    CertificateParams, DistinguishedName, DnType, KeyPair, PKCS_ECDSA_P256_SHA256, SanType,
};
use serde_json::json;
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinSet};

pub use super::addon_env::{AddonCredential, install_namespace, is_hosted};
use super::addon_env::{AddonEnv, SeenAddons, report_condition, write_secret_data};
use super::addon_tokens::{AddonKubeClientAuth, service_account_uid, token_user};
use super::certs::{self, CertInfo};
use super::rotation::{CertValidity, RotationSchedule};
use super::secrets;
use super::{AgentError, Backoff, CLIENT_SIGNER, MAX_PENDING_CSRS, keys};

/// Suffix of the secret of a `kubeClient` registration.
const HUB_KUBECONFIG_SUFFIX: &str = "-hub-kubeconfig";
/// Suffix of the secret of a `customSigner` registration.
const CLIENT_CERT_SUFFIX: &str = "-client-cert";

/// `<addon>-hub-kubeconfig`: the secret of an addon's `kubeClient` registration.
pub fn hub_kubeconfig_secret_name(addon: &str) -> String {
    format!("{addon}{HUB_KUBECONFIG_SUFFIX}")
}

/// `<addon>-<signer with "/" replaced by "-">-client-cert`: the secret of an addon's
/// `customSigner` registration.
pub fn client_cert_secret_name(addon: &str, signer: &str) -> String {
    format!("{addon}-{}{CLIENT_CERT_SUFFIX}", signer.replace('/', "-"))
}

/// Whether `secret` is a name this module gives a secret of `addon`.
fn is_registration_secret_name(addon: &str, secret: &str) -> bool {
    secret == hub_kubeconfig_secret_name(addon)
        || (secret.starts_with(&format!("{addon}-")) && secret.ends_with(CLIENT_CERT_SUFFIX))
}

/// `<addon>.addon.open-cluster-management.io`: the DNS SAN of an addon's certificates.
pub fn addon_dns_name(addon: &str) -> String {
    format!("{addon}.addon.open-cluster-management.io")
}

/// Upstream's default user of an addon agent:
/// `system:open-cluster-management:cluster:<cluster>:addon:<addon>:agent:<addon>`.
pub fn default_addon_user(cluster: &str, addon: &str) -> String {
    format!("system:open-cluster-management:cluster:{cluster}:addon:{addon}:agent:{addon}")
}

/// Upstream's default group of an addon agent:
/// `system:open-cluster-management:cluster:<cluster>:addon:<addon>`.
pub fn default_addon_group(cluster: &str, addon: &str) -> String {
    format!("system:open-cluster-management:cluster:{cluster}:addon:{addon}")
}

/// The certificates `mca` asks for on `cluster`: one per registration (in its
/// [`install_namespace`]); none for an MCA being deleted. Missing subjects get upstream's
/// defaults (kubeClient: the default user and the cluster's addon group). With the token
/// driver (`auth`) a `kubeClient` registration is a token of the addon agent's ServiceAccount
/// instead, once the registration says `driver: token` and the hub says the ServiceAccount
/// is ready; a `kubeClient` registration of the other driver than the agent's waits for the
/// agent to declare its own.
pub fn desired_credentials(
    cluster: &str,
    mca: &ManagedClusterAddOn,
    auth: AddonKubeClientAuth,
) -> Vec<AddonCredential> {
    let Some(status) = mca.status.as_ref() else {
        return Vec::new();
    };
    if mca.metadata.deletion_timestamp.is_some() {
        return Vec::new();
    }
    let namespace = install_namespace(mca);
    let addon = mca.metadata.name.clone().unwrap_or_default();
    if addon.is_empty() {
        return Vec::new();
    }
    let hosted = is_hosted(mca);
    let mut out: Vec<AddonCredential> = Vec::new();
    for registration in &status.registrations {
        let credential = match registration.type_ {
            RegistrationType::KubeClient => {
                let declared = registration
                    .kube_client
                    .as_ref()
                    .and_then(|k| k.driver)
                    .unwrap_or(KubeClientDriver::Csr);
                if declared != auth.driver() {
                    continue;
                }
                if declared == KubeClientDriver::Token {
                    let Some(uid) = service_account_uid(mca) else {
                        continue;
                    };
                    let credential = AddonCredential {
                        addon: addon.clone(),
                        namespace: namespace.clone(),
                        signer: CLIENT_SIGNER.to_owned(),
                        user: token_user(cluster, &addon),
                        groups: Vec::new(),
                        organization_units: Vec::new(),
                        secret: hub_kubeconfig_secret_name(&addon),
                        hosted,
                        token_of: Some(uid),
                    };
                    if !out.iter().any(|c| c.secret == credential.secret) {
                        out.push(credential);
                    }
                    continue;
                }
                let subject = registration
                    .kube_client
                    .as_ref()
                    .and_then(|k| k.subject.clone())
                    .unwrap_or_default();
                AddonCredential {
                    addon: addon.clone(),
                    namespace: namespace.clone(),
                    signer: CLIENT_SIGNER.to_owned(),
                    user: subject
                        .user
                        .filter(|u| !u.is_empty())
                        .unwrap_or_else(|| default_addon_user(cluster, &addon)),
                    groups: if subject.groups.is_empty() {
                        vec![default_addon_group(cluster, &addon)]
                    } else {
                        subject.groups
                    },
                    organization_units: Vec::new(),
                    secret: hub_kubeconfig_secret_name(&addon),
                    hosted,
                    token_of: None,
                }
            }
            RegistrationType::CustomSigner => {
                let Some(custom) = registration.custom_signer.as_ref() else {
                    continue;
                };
                if custom.signer_name.is_empty() {
                    continue;
                }
                let subject = custom.subject.clone().unwrap_or_default();
                AddonCredential {
                    addon: addon.clone(),
                    namespace: namespace.clone(),
                    signer: custom.signer_name.clone(),
                    user: subject
                        .user
                        .filter(|u| !u.is_empty())
                        .unwrap_or_else(|| default_addon_user(cluster, &addon)),
                    groups: subject.groups,
                    organization_units: subject.organization_units,
                    secret: client_cert_secret_name(&addon, &custom.signer_name),
                    hosted,
                    token_of: None,
                }
            }
        };
        if !out.iter().any(|c| c.secret == credential.secret) {
            out.push(credential);
        }
    }
    out
}

/// A fresh ECDSA P-256 key and a PEM certificate request for `credential`: CN = user,
/// O = groups, OU = organizational units, DNS SAN [`addon_dns_name`].
pub fn new_key_and_request(credential: &AddonCredential) -> Result<(KeyPair, String), AgentError> {
    let crypto = |e: rcgen::Error| AgentError::Certificate(e.to_string());
    if credential.groups.len() > 2 || credential.organization_units.len() > 2 {
        return Err(AgentError::Certificate(format!(
            "addon {}: at most two groups and two organizational units can be requested",
            credential.addon
        )));
    }
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(crypto)?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, credential.user.clone());
    // One value per attribute type in rcgen: the second one goes in under the same OID
    // spelled as a custom type.
    for (i, group) in credential.groups.iter().enumerate() {
        let ty = if i == 0 {
            DnType::OrganizationName
        } else {
            DnType::CustomDnType(vec![2, 5, 4, 10])
        };
        dn.push(ty, group.clone());
    }
    for (i, unit) in credential.organization_units.iter().enumerate() {
        let ty = if i == 0 {
            DnType::OrganizationalUnitName
        } else {
            DnType::CustomDnType(vec![2, 5, 4, 11])
        };
        dn.push(ty, unit.clone());
    }
    params.distinguished_name = dn;
    let dns = addon_dns_name(&credential.addon)
        .try_into()
        .map_err(crypto)?;
    params.subject_alt_names = vec![SanType::DnsName(dns)];
    let request = params.serialize_request(&key).map_err(crypto)?;
    let pem = request.pem().map_err(crypto)?;
    Ok((key, pem))
}

/// The CSR object asking for `credential` with `request_pem`.
pub fn csr_object(
    cluster: &str,
    credential: &AddonCredential,
    request_pem: &str,
    expiration_seconds: Option<i64>,
) -> CertificateSigningRequest {
    CertificateSigningRequest {
        metadata: ObjectMeta {
            generate_name: Some(format!("addon-{cluster}-{}-", credential.addon)),
            labels: Some(
                [
                    (CLUSTER_NAME.to_owned(), cluster.to_owned()),
                    (ADDON_NAME.to_owned(), credential.addon.clone()),
                ]
                .into_iter()
                .collect(),
            ),
            ..Default::default()
        },
        spec: super::bootstrap::client_csr_spec(
            request_pem,
            &credential.signer,
            expiration_seconds,
        ),
        status: None,
    }
}

/// The certificate stored for `credential` in `secret`, if it can be used at `now` (Unix
/// seconds): key and certificate present and matching, CN = user, O = groups (in any order),
/// valid now. The error says why not.
pub fn usable_stored_certificate(
    credential: &AddonCredential,
    secret: Option<&Secret>,
    now: i64,
) -> Result<CertInfo, String> {
    let secret = secret.ok_or_else(|| format!("secret {} does not exist", credential.secret))?;
    let get = |key: &str| {
        secrets::text(secret, key)
            .ok_or_else(|| format!("no {key} in secret {}", credential.secret))
    };
    let cert_pem = get(keys::TLS_CRT)?;
    let key_pem = get(keys::TLS_KEY)?;
    let cert = certs::parse_cert(cert_pem.as_bytes()).map_err(|e| e.to_string())?;
    let key = KeyPair::from_pem(&key_pem).map_err(|e| format!("tls.key: {e}"))?;
    if !certs::matches_key(&cert, &key) {
        return Err("tls.crt does not match tls.key".into());
    }
    if cert.common_name != credential.user {
        return Err(format!(
            "certificate is issued to {:?}, not {:?}",
            cert.common_name, credential.user
        ));
    }
    let have: BTreeSet<&String> = cert.organizations.iter().collect();
    let want: BTreeSet<&String> = credential.groups.iter().collect();
    if have != want {
        return Err(format!(
            "certificate groups {:?} are not {:?}",
            cert.organizations, credential.groups
        ));
    }
    if now >= cert.not_after {
        return Err("certificate has expired".into());
    }
    if now < cert.not_before {
        return Err("certificate is not valid yet".into());
    }
    Ok(cert)
}

/// Why `credential` needs a new certificate at `now`, or `None` while the stored one serves:
/// it is unusable ([`usable_stored_certificate`]) or its rotation deadline (from `schedule`)
/// has come. `received` is when the agent got the stored certificate, if it did.
pub fn needs_new_certificate(
    credential: &AddonCredential,
    secret: Option<&Secret>,
    now: Timestamp,
    received: Option<Timestamp>,
    schedule: &mut RotationSchedule,
) -> Option<String> {
    match usable_stored_certificate(credential, secret, now.as_second()) {
        Err(reason) => Some(reason),
        Ok(cert) => {
            let validity = CertValidity::from_seconds(cert.not_before, cert.not_after, received);
            schedule
                .due(&validity, now)
                .then(|| "the client certificate reached its rotation deadline".to_owned())
        }
    }
}

/// The data of the secret for `credential`.
fn secret_data(
    credential: &AddonCredential,
    server: &ServerInfo,
    cert_pem: &str,
    key_pem: &str,
) -> BTreeMap<String, ByteString> {
    let mut data = BTreeMap::new();
    data.insert(
        keys::TLS_CRT.to_owned(),
        ByteString(cert_pem.as_bytes().to_vec()),
    );
    data.insert(
        keys::TLS_KEY.to_owned(),
        ByteString(key_pem.as_bytes().to_vec()),
    );
    if credential.is_kube_client() {
        data.insert(
            keys::KUBECONFIG.to_owned(),
            ByteString(secrets::hub_kubeconfig(server).into_bytes()),
        );
    }
    data
}

/// Whether a CSR is still waiting: no certificate, not denied or failed.
fn pending(csr: &CertificateSigningRequest) -> bool {
    let status = csr.status.as_ref();
    let issued = status
        .and_then(|s| s.certificate.as_ref())
        .is_some_and(|c| !c.0.is_empty());
    let refused = status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| (c.type_ == "Denied" || c.type_ == "Failed") && c.status == "True");
    !issued && !refused
}

/// Runs the addon side of the agent: follows the MCAs, keeps their certificates and judges
/// Lease health. Never returns; dropping it stops everything it started.
pub(crate) async fn run(env: AddonEnv) -> std::convert::Infallible {
    let (tx, rx) = watch::channel(None);
    tokio::select! {
        never = watch_addons(env.clone(), tx) => never,
        never = keep_registrations(env.clone(), rx.clone()) => never,
        never = super::addon_health::run(env, rx) => never,
    }
}

/// Follows the MCAs in the cluster namespace (restarting when the hub client changes).
async fn watch_addons(
    env: AddonEnv,
    tx: watch::Sender<Option<BTreeMap<String, ManagedClusterAddOn>>>,
) -> std::convert::Infallible {
    let mut clients = env.hub.clone();
    loop {
        let client = clients.borrow_and_update().clone();
        let api = Api::<ManagedClusterAddOn>::namespaced(client, &env.cluster);
        let mut events =
            std::pin::pin!(watcher(api, watcher::Config::default()).backoff_on_errors());
        let mut building: BTreeMap<String, ManagedClusterAddOn> = BTreeMap::new();
        loop {
            let event = tokio::select! {
                changed = clients.changed() => {
                    if changed.is_err() {
                        return std::future::pending().await;
                    }
                    break;
                }
                event = events.next() => event,
            };
            let name = |m: &ManagedClusterAddOn| m.metadata.name.clone().unwrap_or_default();
            match event {
                None => break,
                Some(Ok(watcher::Event::Init)) => building.clear(),
                Some(Ok(watcher::Event::InitApply(mca))) => {
                    building.insert(name(&mca), mca);
                }
                Some(Ok(watcher::Event::InitDone)) => {
                    tx.send_replace(Some(std::mem::take(&mut building)));
                }
                Some(Ok(watcher::Event::Apply(mca))) => {
                    tx.send_modify(|seen| {
                        seen.get_or_insert_default().insert(name(&mca), mca);
                    });
                }
                Some(Ok(watcher::Event::Delete(mca))) => {
                    tx.send_modify(|seen| {
                        if let Some(seen) = seen {
                            seen.remove(&name(&mca));
                        }
                    });
                }
                Some(Err(err)) => {
                    tracing::debug!(error = %err, "watching the cluster's ManagedClusterAddOns");
                }
            }
        }
    }
}

/// Starts one task per wanted certificate, stops those no longer wanted and deletes their
/// secrets.
async fn keep_registrations(env: AddonEnv, mut seen: SeenAddons) -> std::convert::Infallible {
    let mut tasks: JoinSet<()> = JoinSet::new();
    let mut running: BTreeMap<(String, String), (AddonCredential, AbortHandle)> = BTreeMap::new();
    let mut sweep_failed = false;
    // The wanted secrets at the last sweep: an addon's status changes often, its wanted
    // credentials rarely, and each sweep lists secrets on the managed cluster.
    let mut swept: Option<BTreeSet<(String, String)>> = None;
    let mut periodic = false;
    loop {
        while tasks.try_join_next().is_some() {}
        let snapshot = seen.borrow_and_update().clone();
        if let Some(addons) = snapshot {
            let wanted: BTreeMap<(String, String), AddonCredential> = addons
                .values()
                .flat_map(|mca| {
                    desired_credentials(&env.cluster, mca, env.options.addon_kube_client_auth)
                })
                .map(|c| ((c.namespace.clone(), c.secret.clone()), c))
                .collect();
            running.retain(|key, (credential, handle)| {
                let keep = wanted.get(key) == Some(credential);
                if !keep {
                    handle.abort();
                }
                keep
            });
            for (key, credential) in &wanted {
                if !running.contains_key(key) {
                    let handle = match &credential.token_of {
                        Some(uid) => tasks.spawn(super::addon_tokens::keep_token(
                            env.clone(),
                            credential.clone(),
                            uid.clone(),
                        )),
                        None => tasks.spawn(keep_certificate(env.clone(), credential.clone())),
                    };
                    running.insert(key.clone(), (credential.clone(), handle));
                }
            }
            declare_drivers(&env, &addons).await;
            let keys: BTreeSet<(String, String)> = wanted.keys().cloned().collect();
            if sweep_failed || periodic || swept.as_ref() != Some(&keys) {
                let swept_all = match sweep_secrets(&env.spoke, None, &wanted).await {
                    Ok(()) => sweep_secrets(&env.management, Some(&env.cluster), &wanted).await,
                    Err(err) => Err(err),
                };
                sweep_failed = match swept_all {
                    Ok(()) => false,
                    Err(err) => {
                        tracing::warn!(error = %err, "deleting secrets of removed addon registrations");
                        true
                    }
                };
                swept = Some(keys);
            }
        }
        let retry = if sweep_failed {
            env.options.cert_check_period.min(Duration::from_secs(5))
        } else {
            env.options.cert_check_period
        };
        periodic = tokio::select! {
            changed = seen.changed() => {
                if changed.is_err() {
                    return std::future::pending().await;
                }
                false
            }
            _ = tokio::time::sleep(retry) => true,
        };
    }
}

/// Deletes the registration secrets (labelled with an addon name, named as this module names
/// them) that no wanted credential uses: on `cluster`, those of hosted addons of cluster `owner`
/// (labelled with it), or with `owner` `None` those of the cluster's own addons (no such label).
async fn sweep_secrets(
    cluster: &kube::Client,
    owner: Option<&str>,
    wanted: &BTreeMap<(String, String), AddonCredential>,
) -> Result<(), kube::Error> {
    let api = Api::<Secret>::all(cluster.clone());
    let list = api.list(&ListParams::default().labels(ADDON_NAME)).await?;
    for secret in list.items {
        let (Some(ns), Some(name)) = (
            secret.metadata.namespace.clone(),
            secret.metadata.name.clone(),
        ) else {
            continue;
        };
        let hosted_for = secret
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(ADDON_NAMESPACE))
            .map(String::as_str);
        if hosted_for != owner {
            continue;
        }
        let addon = secret
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(ADDON_NAME))
            .cloned()
            .unwrap_or_default();
        if !is_registration_secret_name(&addon, &name)
            || wanted.contains_key(&(ns.clone(), name.clone()))
        {
            continue;
        }
        tracing::info!(
            namespace = ns,
            secret = name,
            addon,
            "deleting the secret of a removed addon registration"
        );
        match Api::<Secret>::namespaced(cluster.clone(), &ns)
            .delete(&name, &DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// Keeps a valid certificate for `credential` in its secret, renewing it at its deadline.
async fn keep_certificate(env: AddonEnv, credential: AddonCredential) {
    let mut schedule = RotationSchedule::new(env.options.rotation_threshold);
    let mut received: Option<(String, Timestamp)> = None;
    let mut backoff = Backoff::default();
    let secrets_api =
        Api::<Secret>::namespaced(env.agent_cluster(credential.hosted), &credential.namespace);
    loop {
        let now = Timestamp::now();
        let stored = match secrets_api.get_opt(&credential.secret).await {
            Ok(stored) => stored,
            Err(err) => {
                let delay = backoff.next_delay();
                tracing::warn!(error = %err, retry_in = ?delay, secret = credential.secret, "reading an addon secret");
                tokio::time::sleep(delay).await;
                continue;
            }
        };
        let stored_cert = stored
            .as_ref()
            .and_then(|s| secrets::text(s, keys::TLS_CRT));
        let got_at = received
            .as_ref()
            .filter(|(pem, _)| Some(pem.trim()) == stored_cert.as_deref())
            .map(|(_, at)| *at);
        let reason =
            needs_new_certificate(&credential, stored.as_ref(), now, got_at, &mut schedule);
        let Some(reason) = reason else {
            backoff.reset();
            refresh_kubeconfig(&env, &credential, stored.as_ref()).await;
            let wake = usable_stored_certificate(&credential, stored.as_ref(), now.as_second())
                .map(|c| {
                    schedule.deadline(&CertValidity::from_seconds(
                        c.not_before,
                        c.not_after,
                        got_at,
                    ))
                })
                .unwrap_or(now);
            let wait = Duration::try_from(wake.duration_since(Timestamp::now()))
                .unwrap_or(Duration::ZERO)
                .min(env.options.cert_check_period);
            tokio::time::sleep(wait).await;
            continue;
        };
        tracing::info!(addon = credential.addon, secret = credential.secret, %reason, "requesting an addon client certificate");
        match renew(&env, &credential).await {
            Ok((cert_pem, cert)) => {
                schedule.succeeded();
                backoff.reset();
                received = Some((cert_pem.trim().to_owned(), Timestamp::now()));
                let message = format!(
                    "client certificate in secret {}/{} rotated starting from {} to {}",
                    credential.namespace,
                    credential.secret,
                    timestamp(cert.not_before),
                    timestamp(cert.not_after)
                );
                tracing::info!(addon = credential.addon, %message);
                report_condition(
                    &env,
                    &credential,
                    CLUSTER_CERTIFICATE_ROTATED,
                    "True",
                    certificate_rotated::UPDATED,
                    &message,
                )
                .await;
            }
            Err(err) => {
                let delay = backoff.next_delay();
                tracing::warn!(error = %err, retry_in = ?delay, addon = credential.addon, secret = credential.secret, "requesting an addon client certificate");
                let message = format!(
                    "failed to rotate the client certificate in secret {}/{}: {err}",
                    credential.namespace, credential.secret
                );
                report_condition(
                    &env,
                    &credential,
                    CLUSTER_CERTIFICATE_ROTATED,
                    "False",
                    certificate_rotated::UPDATE_FAILED,
                    &message,
                )
                .await;
                tokio::time::sleep(delay).await;
            }
        }
    }
}

/// Rewrites the kubeconfig of a kubeClient secret whose hub server or CA changed.
async fn refresh_kubeconfig(env: &AddonEnv, credential: &AddonCredential, stored: Option<&Secret>) {
    if !credential.is_kube_client() {
        return;
    }
    let want = secrets::hub_kubeconfig(&env.server);
    let have = stored.and_then(|s| secrets::data(s, keys::KUBECONFIG));
    if have.as_deref() == Some(want.as_bytes()) {
        return;
    }
    let patch = json!({"data": {keys::KUBECONFIG: ByteString(want.into_bytes())}});
    if let Err(err) =
        Api::<Secret>::namespaced(env.agent_cluster(credential.hosted), &credential.namespace)
            .patch(
                &credential.secret,
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await
    {
        tracing::warn!(error = %err, secret = credential.secret, "updating an addon kubeconfig");
    }
}

/// Requests a certificate for `credential` and stores it. Returns the certificate.
async fn renew(
    env: &AddonEnv,
    credential: &AddonCredential,
) -> Result<(String, CertInfo), AgentError> {
    let hub = env.hub();
    let api = Api::<CertificateSigningRequest>::all(hub);
    let selector = format!(
        "{CLUSTER_NAME}={},{ADDON_NAME}={}",
        env.cluster, credential.addon
    );
    let existing = api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(AgentError::Hub)?;
    let count = existing.items.iter().filter(|c| pending(c)).count();
    if count >= MAX_PENDING_CSRS {
        return Err(AgentError::TooManyAddonCsrs {
            cluster: env.cluster.clone(),
            addon: credential.addon.clone(),
            count,
        });
    }
    let (key, request_pem) = new_key_and_request(credential)?;
    let created = api
        .create(
            &PostParams::default(),
            &csr_object(
                &env.cluster,
                credential,
                &request_pem,
                env.options.client_cert_expiration_seconds,
            ),
        )
        .await
        .map_err(AgentError::Hub)?;
    let name = created.metadata.name.unwrap_or_default();
    tracing::info!(
        csr = name,
        addon = credential.addon,
        "created an addon certificate signing request"
    );
    let done = await_condition(api, &name, |csr: Option<&CertificateSigningRequest>| {
        csr.is_none_or(|csr| !pending(csr))
    })
    .await
    .map_err(|e| AgentError::Certificate(format!("watching CSR {name}: {e}")))?;
    let Some(csr) = done else {
        return Err(AgentError::CsrNotIssued {
            name,
            outcome: "deleted".into(),
            message: "the CSR disappeared before it was signed".into(),
        });
    };
    let status = csr.status.clone().unwrap_or_default();
    let cert_pem = status
        .certificate
        .as_ref()
        .and_then(|c| String::from_utf8(c.0.clone()).ok())
        .filter(|c| !c.is_empty());
    let Some(cert_pem) = cert_pem else {
        let refused = status
            .conditions
            .unwrap_or_default()
            .into_iter()
            .find(|c| c.type_ == "Denied" || c.type_ == "Failed");
        return Err(AgentError::CsrNotIssued {
            name,
            outcome: refused
                .as_ref()
                .map(|c| c.type_.to_lowercase())
                .unwrap_or_else(|| "failed".into()),
            message: refused.and_then(|c| c.message).unwrap_or_default(),
        });
    };
    let cert = certs::parse_cert(cert_pem.as_bytes())?;
    if !certs::matches_key(&cert, &key) {
        return Err(AgentError::Certificate(format!(
            "the certificate of CSR {name} does not match the private key"
        )));
    }
    if cert.common_name != credential.user {
        return Err(AgentError::Certificate(format!(
            "the certificate of CSR {name} is issued to {:?}, not {:?}",
            cert.common_name, credential.user
        )));
    }
    // A certificate without the groups asked for would be asked for again at once: an error
    // (retried with backoff) rather than a CSR after CSR.
    let have: BTreeSet<&String> = cert.organizations.iter().collect();
    let want: BTreeSet<&String> = credential.groups.iter().collect();
    if have != want {
        return Err(AgentError::Certificate(format!(
            "the certificate of CSR {name} has groups {:?}, not {:?}",
            cert.organizations, credential.groups
        )));
    }
    let key_pem = key.serialize_pem();
    write_secret(env, credential, &cert_pem, &key_pem)
        .await
        .map_err(AgentError::Spoke)?;
    Ok((cert_pem, cert))
}

/// Writes the secret of `credential` (and its namespace, if missing).
async fn write_secret(
    env: &AddonEnv,
    credential: &AddonCredential,
    cert_pem: &str,
    key_pem: &str,
) -> Result<(), kube::Error> {
    write_secret_data(
        env,
        credential,
        secret_data(credential, &env.server, cert_pem, key_pem),
    )
    .await
}

/// Declares this agent's `kubeClient` driver on every MCA that does not say it yet
/// ([`super::addon_tokens::driver_changes`]): a merge patch of `status.registrations`,
/// conditional on the resourceVersion read (a conflict waits for the next change).
async fn declare_drivers(env: &AddonEnv, addons: &BTreeMap<String, ManagedClusterAddOn>) {
    let api = Api::<ManagedClusterAddOn>::namespaced(env.hub(), &env.cluster);
    for (name, mca) in addons {
        if mca.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let Some(registrations) = super::addon_tokens::driver_changes(
            &env.cluster,
            mca,
            env.options.addon_kube_client_auth,
        ) else {
            continue;
        };
        let patch = json!({
            "metadata": {"resourceVersion": mca.metadata.resource_version},
            "status": {"registrations": registrations},
        });
        match api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
        {
            Ok(_) => tracing::info!(
                addon = name,
                driver = ?env.options.addon_kube_client_auth.driver(),
                "declared the addon's kubeClient driver"
            ),
            Err(err) => {
                tracing::debug!(error = %err, addon = name, "declaring the addon's kubeClient driver")
            }
        }
    }
}

fn timestamp(secs: i64) -> String {
    Timestamp::from_second(secs)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| secs.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn wanted(cluster: &str, mca: &ManagedClusterAddOn) -> Vec<AddonCredential> {
        desired_credentials(cluster, mca, AddonKubeClientAuth::Csr)
    }
    use ocm_api::addon::v1beta1::{
        CustomSignerConfig, KubeClientConfig, KubeClientSubject, ManagedClusterAddOnStatus,
        RegistrationConfig, Subject,
    };

    fn mca(
        name: &str,
        namespace: &str,
        registrations: Vec<RegistrationConfig>,
    ) -> ManagedClusterAddOn {
        let mut mca = ManagedClusterAddOn::new(name, Default::default());
        mca.status = Some(ManagedClusterAddOnStatus {
            namespace: namespace.into(),
            registrations,
            ..Default::default()
        });
        mca
    }

    fn kube_client(user: Option<&str>, groups: &[&str]) -> RegistrationConfig {
        RegistrationConfig {
            type_: RegistrationType::KubeClient,
            kube_client: Some(KubeClientConfig {
                subject: Some(KubeClientSubject {
                    user: user.map(str::to_owned),
                    groups: groups.iter().map(|g| (*g).to_owned()).collect(),
                }),
                driver: None,
            }),
            custom_signer: None,
        }
    }

    fn custom(signer: &str) -> RegistrationConfig {
        RegistrationConfig {
            type_: RegistrationType::CustomSigner,
            kube_client: None,
            custom_signer: Some(CustomSignerConfig {
                signer_name: signer.into(),
                subject: Some(Subject {
                    user: Some("u1".into()),
                    groups: vec!["g1".into()],
                    organization_units: vec!["ou1".into(), "ou2".into()],
                }),
            }),
        }
    }

    #[test]
    fn secret_names_are_upstreams() {
        assert_eq!(hub_kubeconfig_secret_name("hello"), "hello-hub-kubeconfig");
        assert_eq!(
            client_cert_secret_name("hello", "example.com/signer"),
            "hello-example.com-signer-client-cert"
        );
        assert!(is_registration_secret_name("hello", "hello-hub-kubeconfig"));
        assert!(is_registration_secret_name(
            "hello",
            "hello-example.com-signer-client-cert"
        ));
        assert!(!is_registration_secret_name(
            "hello",
            "other-hub-kubeconfig"
        ));
        assert!(!is_registration_secret_name("hello", "hello-config"));
        assert_eq!(
            addon_dns_name("hello"),
            "hello.addon.open-cluster-management.io"
        );
    }

    #[test]
    fn credentials_follow_the_status_with_upstream_defaults() {
        // No registrations: nothing. No namespace from the hub: upstream's default one.
        let defaulted = wanted("c1", &mca("a", "", vec![kube_client(None, &[])]));
        assert_eq!(defaulted.len(), 1);
        assert_eq!(
            defaulted[0].namespace,
            "open-cluster-management-agent-addon"
        );
        assert!(wanted("c1", &mca("a", "ns", vec![])).is_empty());
        assert!(wanted("c1", &ManagedClusterAddOn::new("a", Default::default())).is_empty());
        let creds = wanted(
            "c1",
            &mca(
                "a",
                "ns",
                vec![kube_client(None, &[]), custom("example.com/s")],
            ),
        );
        assert_eq!(creds.len(), 2);
        assert_eq!(creds[0].secret, "a-hub-kubeconfig");
        assert_eq!(creds[0].signer, CLIENT_SIGNER);
        assert_eq!(
            creds[0].user,
            "system:open-cluster-management:cluster:c1:addon:a:agent:a"
        );
        assert_eq!(
            creds[0].groups,
            ["system:open-cluster-management:cluster:c1:addon:a"]
        );
        assert!(creds[0].is_kube_client());
        assert_eq!(creds[1].secret, "a-example.com-s-client-cert");
        assert_eq!(creds[1].signer, "example.com/s");
        assert_eq!(creds[1].organization_units, ["ou1", "ou2"]);
        assert!(!creds[1].is_kube_client());
        // Given subjects are kept.
        let given = wanted("c1", &mca("a", "ns", vec![kube_client(Some("u"), &["g"])]));
        assert_eq!(
            (given[0].user.as_str(), given[0].groups.clone()),
            ("u", vec!["g".to_owned()])
        );
        // Being deleted: nothing (its secrets go).
        let mut deleting = mca("a", "ns", vec![kube_client(None, &[])]);
        deleting.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::now()),
        );
        assert!(wanted("c1", &deleting).is_empty());
    }

    #[test]
    fn requests_carry_the_subject_and_the_addon_san() {
        let cred = wanted("c1", &mca("a", "ns", vec![custom("example.com/s")]))
            .pop()
            .unwrap();
        let cred = AddonCredential {
            groups: vec!["g1".into(), "g2".into()],
            ..cred
        };
        let (_key, pem) = new_key_and_request(&cred).unwrap();
        let (_, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).unwrap();
        let (_, csr) = <x509_parser::certification_request::X509CertificationRequest as x509_parser::prelude::FromDer<_>>::from_der(&block.contents).unwrap();
        let subject = &csr.certification_request_info.subject;
        let texts = |it: &mut dyn Iterator<Item = &x509_parser::x509::AttributeTypeAndValue>| {
            it.map(|a| a.as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(texts(&mut subject.iter_common_name()), ["u1"]);
        assert_eq!(texts(&mut subject.iter_organization()), ["g1", "g2"]);
        assert_eq!(
            texts(&mut subject.iter_organizational_unit()),
            ["ou1", "ou2"]
        );
        let sans: Vec<String> = csr
            .requested_extensions()
            .into_iter()
            .flatten()
            .filter_map(|e| match e {
                x509_parser::extensions::ParsedExtension::SubjectAlternativeName(san) => Some(
                    san.general_names
                        .iter()
                        .map(|n| n.to_string())
                        .collect::<Vec<_>>(),
                ),
                _ => None,
            })
            .flatten()
            .collect();
        assert_eq!(sans, ["DNSName(a.addon.open-cluster-management.io)"]);
        let three = AddonCredential {
            groups: vec!["1".into(), "2".into(), "3".into()],
            ..cred.clone()
        };
        assert!(new_key_and_request(&three).is_err());

        let csr = csr_object("c1", &cred, "PEM", Some(600));
        let json = serde_json::to_value(&csr).unwrap();
        assert_eq!(json["metadata"]["generateName"], "addon-c1-a-");
        assert_eq!(
            json["metadata"]["labels"],
            json!({"open-cluster-management.io/cluster-name": "c1",
                   "open-cluster-management.io/addon-name": "a"})
        );
        assert_eq!(json["spec"]["signerName"], "example.com/s");
        assert_eq!(
            json["spec"]["usages"],
            json!(["digital signature", "key encipherment", "client auth"])
        );
        assert_eq!(json["spec"]["expirationSeconds"], 600);
    }

    fn self_signed(cn: &str, orgs: &[&str], key: &KeyPair, hours: i64) -> String {
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, cn);
        for (i, o) in orgs.iter().enumerate() {
            let ty = if i == 0 {
                DnType::OrganizationName
            } else {
                DnType::CustomDnType(vec![2, 5, 4, 10])
            };
            dn.push(ty, *o);
        }
        params.distinguished_name = dn;
        let now = std::time::SystemTime::now();
        params.not_before = (now - Duration::from_secs(60)).into();
        params.not_after = (now + Duration::from_secs(u64::try_from(hours).unwrap() * 3600)).into();
        params.self_signed(key).unwrap().pem()
    }

    fn secret_with(cert: &str, key: &str) -> Secret {
        Secret {
            data: Some(
                [
                    ("tls.crt".to_owned(), ByteString(cert.as_bytes().to_vec())),
                    ("tls.key".to_owned(), ByteString(key.as_bytes().to_vec())),
                ]
                .into_iter()
                .collect(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn a_new_certificate_is_needed_when_missing_foreign_or_due() {
        let cred = wanted(
            "c1",
            &mca("a", "ns", vec![kube_client(Some("u"), &["g1", "g2"])]),
        )
        .pop()
        .unwrap();
        let mut schedule = RotationSchedule::new((0.2, 0.2));
        let now = Timestamp::now();
        assert!(
            needs_new_certificate(&cred, None, now, None, &mut schedule)
                .unwrap()
                .contains("does not exist")
        );
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let good = self_signed("u", &["g2", "g1"], &key, 10);
        let secret = secret_with(&good, &key.serialize_pem());
        assert_eq!(
            needs_new_certificate(&cred, Some(&secret), now, None, &mut schedule),
            None
        );
        // Past 80 % of its lifetime: due.
        let late = now
            .checked_add(jiff::SignedDuration::from_hours(9))
            .unwrap();
        assert!(
            needs_new_certificate(&cred, Some(&secret), late, None, &mut schedule)
                .unwrap()
                .contains("deadline")
        );
        // Another subject, another key, expired.
        let other_cn = secret_with(
            &self_signed("v", &["g1", "g2"], &key, 10),
            &key.serialize_pem(),
        );
        assert!(needs_new_certificate(&cred, Some(&other_cn), now, None, &mut schedule).is_some());
        let other_groups = secret_with(&self_signed("u", &["g1"], &key, 10), &key.serialize_pem());
        assert!(
            needs_new_certificate(&cred, Some(&other_groups), now, None, &mut schedule).is_some()
        );
        let other_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let mismatched = secret_with(&good, &other_key.serialize_pem());
        assert!(
            needs_new_certificate(&cred, Some(&mismatched), now, None, &mut schedule)
                .unwrap()
                .contains("does not match")
        );
        let gone = now
            .checked_add(jiff::SignedDuration::from_hours(11))
            .unwrap();
        assert!(
            usable_stored_certificate(&cred, Some(&secret), gone.as_second())
                .unwrap_err()
                .contains("expired")
        );
    }

    #[test]
    fn only_undecided_unissued_csrs_count_as_pending() {
        use k8s_openapi::api::certificates::v1::{
            CertificateSigningRequestCondition, CertificateSigningRequestStatus,
        };
        let mut csr = CertificateSigningRequest::default();
        assert!(pending(&csr));
        let approved = CertificateSigningRequestCondition {
            type_: "Approved".into(),
            status: "True".into(),
            ..Default::default()
        };
        csr.status = Some(CertificateSigningRequestStatus {
            conditions: Some(vec![approved.clone()]),
            certificate: None,
        });
        assert!(pending(&csr), "approved but not issued yet");
        csr.status.as_mut().unwrap().certificate = Some(ByteString(b"PEM".to_vec()));
        assert!(!pending(&csr));
        for refusal in ["Denied", "Failed"] {
            csr.status = Some(CertificateSigningRequestStatus {
                conditions: Some(vec![CertificateSigningRequestCondition {
                    type_: refusal.into(),
                    ..approved.clone()
                }]),
                certificate: None,
            });
            assert!(!pending(&csr), "{refusal}");
        }
    }

    #[test]
    fn kube_client_secrets_carry_a_kubeconfig_with_relative_files() {
        let server = ServerInfo {
            server: "https://hub:6443".into(),
            ca_pem: None,
            proxy_url: None,
        };
        let cred = wanted(
            "c1",
            &mca("a", "ns", vec![kube_client(None, &[]), custom("x.io/y")]),
        );
        let data = secret_data(&cred[0], &server, "CERT", "KEY");
        assert_eq!(
            data.keys().collect::<Vec<_>>(),
            ["kubeconfig", "tls.crt", "tls.key"]
        );
        let kubeconfig = String::from_utf8(data["kubeconfig"].0.clone()).unwrap();
        assert!(
            kubeconfig.contains("client-certificate: tls.crt"),
            "{kubeconfig}"
        );
        assert!(kubeconfig.contains("default-context"), "{kubeconfig}");
        let data = secret_data(&cred[1], &server, "CERT", "KEY");
        assert_eq!(data.keys().collect::<Vec<_>>(), ["tls.crt", "tls.key"]);
    }
}
