//! Bootstrap: create the ManagedCluster and get a client certificate through a CSR. The CSR
//! half is shared with certificate rotation.

use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestSpec,
};
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use kube::runtime::wait::await_condition;
use ocm_api::addon::names as addon_names;
use ocm_api::cluster::names::{annotations, labels};
use ocm_api::cluster::v1::{ClientConfig, ManagedCluster, ManagedClusterSpec};

use super::certs::{self, CertInfo};
use super::secrets::{self, Bootstrap, HubCreds};
use super::status::accepted_and_prepared;
use super::{AgentError, AgentOptions, AgentProgress, CLIENT_SIGNER, Ctx, MAX_PENDING_CSRS};

/// Runs the bootstrap phase: ManagedCluster, CSR, approval, hub kubeconfig secret.
pub(crate) async fn bootstrap(
    ctx: &Ctx,
    bootstrap: &Bootstrap,
    cluster: &str,
    agent: &str,
) -> Result<HubCreds, AgentError> {
    ctx.set_progress(AgentProgress::Bootstrapping);
    let client = ocm_runtime::kubeconfig::client_from_yaml(&bootstrap.raw).await?;
    ensure_managed_cluster(&client, &ctx.options, cluster).await?;
    let (key_pem, cert_pem, cert) = request_certificate(ctx, &client, cluster, agent, true).await?;
    let creds = HubCreds {
        server: bootstrap.server.clone(),
        cert_pem,
        key_pem,
        cert,
        received: Some(jiff::Timestamp::now()),
    };
    secrets::write_hub_secret(
        &ctx.secrets,
        &ctx.options.agent_namespace,
        &creds,
        cluster,
        agent,
    )
    .await
    .map_err(AgentError::Spoke)?;
    ctx.set_progress(AgentProgress::CertificateIssued);
    wait_for_acceptance(ctx, &client, cluster).await;
    Ok(creds)
}

/// Waits until the hub accepts the cluster, watching its ManagedCluster with the bootstrap
/// identity (which may watch ManagedClusters, as upstream's bootstrap role allows): the agent's
/// own identity may read its cluster only once accepted, so its watch is refused until then
/// and, backing off, would notice the acceptance up to half a minute late. Returns at once
/// when the bootstrap identity may not watch, or the cluster is gone: the joined phase then
/// waits by its own watch.
async fn wait_for_acceptance(ctx: &Ctx, client: &kube::Client, cluster: &str) {
    let api = Api::<ManagedCluster>::all(client.clone());
    if api
        .get_opt(cluster)
        .await
        .ok()
        .flatten()
        .is_none_or(|mc| accepted_and_prepared(&mc))
    {
        return;
    }
    ctx.set_progress(AgentProgress::WaitingForAcceptance);
    let done = await_condition(api, cluster, |mc: Option<&ManagedCluster>| {
        mc.is_none_or(accepted_and_prepared)
    })
    .await;
    if let Err(err) = done {
        tracing::debug!(error = %err, "not watching for acceptance with the bootstrap identity");
    }
}

/// The ManagedCluster the agent creates.
pub(crate) fn desired_managed_cluster(options: &AgentOptions, cluster: &str) -> ManagedCluster {
    let annotations = options
        .cluster_annotations
        .iter()
        .filter(|(k, _)| k.starts_with(annotations::AGENT_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect::<std::collections::BTreeMap<_, _>>();
    ManagedCluster {
        metadata: ObjectMeta {
            name: Some(cluster.to_owned()),
            labels: Some(options.cluster_labels.clone()).filter(|l| !l.is_empty()),
            annotations: Some(annotations).filter(|a| !a.is_empty()),
            ..Default::default()
        },
        spec: ManagedClusterSpec {
            managed_cluster_client_configs: client_configs(options),
            hub_accepts_client: false,
            ..Default::default()
        },
        status: None,
    }
}

fn client_configs(options: &AgentOptions) -> Vec<ClientConfig> {
    options
        .external_server_urls
        .iter()
        .map(|(url, ca)| ClientConfig {
            url: url.clone(),
            ca_bundle: ca.clone().map(ByteString),
        })
        .collect()
}

/// `existing` with the configured client configs it lacks appended (and the agent
/// annotations set), or `None` when it lacks none (upstream updates only then).
pub(crate) fn with_missing_client_configs(
    existing: &ManagedCluster,
    options: &AgentOptions,
) -> Option<ManagedCluster> {
    let mut updated = existing.clone();
    for config in client_configs(options) {
        let known = updated
            .spec
            .managed_cluster_client_configs
            .iter()
            .any(|c| c.url == config.url);
        if !known {
            updated.spec.managed_cluster_client_configs.push(config);
        }
    }
    if updated.spec.managed_cluster_client_configs.len()
        == existing.spec.managed_cluster_client_configs.len()
    {
        return None;
    }
    let desired = desired_managed_cluster(options, existing.metadata.name.as_deref().unwrap_or(""));
    if let Some(annotations) = desired.metadata.annotations {
        updated
            .metadata
            .annotations
            .get_or_insert_default()
            .extend(annotations);
    }
    Some(updated)
}

/// Gets or creates the ManagedCluster; Unauthorized/Forbidden answers are ignored (the
/// bootstrap identity may have lost the permission after bootstrap, as upstream tolerates).
async fn ensure_managed_cluster(
    client: &kube::Client,
    options: &AgentOptions,
    cluster: &str,
) -> Result<(), AgentError> {
    let api = Api::<ManagedCluster>::all(client.clone());
    let ignorable = |err: &kube::Error| matches!(super::status_code(err), Some(401 | 403));
    match api.get_opt(cluster).await {
        Ok(Some(existing)) => {
            let Some(updated) = with_missing_client_configs(&existing, options) else {
                return Ok(());
            };
            match api.replace(cluster, &PostParams::default(), &updated).await {
                Ok(_) => Ok(()),
                Err(err) if ignorable(&err) => Ok(()),
                Err(err) => Err(AgentError::Hub(err)),
            }
        }
        Ok(None) => match api
            .create(
                &PostParams::default(),
                &desired_managed_cluster(options, cluster),
            )
            .await
        {
            Ok(_) => {
                tracing::info!(cluster, "created the ManagedCluster");
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
            Err(err) if ignorable(&err) => {
                tracing::warn!(error = %err, "cannot create the ManagedCluster; continuing");
                Ok(())
            }
            Err(err) => Err(AgentError::Hub(err)),
        },
        Err(err) if ignorable(&err) => {
            tracing::warn!(error = %err, "cannot read the ManagedCluster; continuing");
            Ok(())
        }
        Err(err) => Err(AgentError::Hub(err)),
    }
}

/// The spec of a client-certificate CSR: the request, the signer, the client usages and the
/// requested lifetime (when positive).
pub(crate) fn client_csr_spec(
    request_pem: &str,
    signer: &str,
    expiration_seconds: Option<i64>,
) -> CertificateSigningRequestSpec {
    CertificateSigningRequestSpec {
        request: ByteString(request_pem.as_bytes().to_vec()),
        signer_name: signer.to_owned(),
        usages: Some(vec![
            "digital signature".to_owned(),
            "key encipherment".to_owned(),
            "client auth".to_owned(),
        ]),
        expiration_seconds: expiration_seconds
            .filter(|s| *s > 0)
            .and_then(|s| i32::try_from(s).ok()),
        ..Default::default()
    }
}

/// The CSR object for `request_pem`.
pub(crate) fn csr_object(
    cluster: &str,
    request_pem: &str,
    expiration_seconds: Option<i64>,
) -> CertificateSigningRequest {
    CertificateSigningRequest {
        metadata: ObjectMeta {
            generate_name: Some(format!("{cluster}-")),
            labels: Some(
                [(labels::CLUSTER_NAME.to_owned(), cluster.to_owned())]
                    .into_iter()
                    .collect(),
            ),
            ..Default::default()
        },
        spec: client_csr_spec(request_pem, CLIENT_SIGNER, expiration_seconds),
        status: None,
    }
}

/// Creates a CSR with `client` (bootstrap or current hub credentials), waits for the
/// certificate and checks it. Returns (key PEM, certificate PEM, certificate facts).
pub(crate) async fn request_certificate(
    ctx: &Ctx,
    client: &kube::Client,
    cluster: &str,
    agent: &str,
    report_progress: bool,
) -> Result<(String, String, CertInfo), AgentError> {
    let api = Api::<CertificateSigningRequest>::all(client.clone());
    let existing = api
        .list(&ListParams::default().labels(&format!("{}={cluster}", labels::CLUSTER_NAME)))
        .await
        .map_err(AgentError::Hub)?;
    let count = existing
        .items
        .iter()
        .filter(|csr| {
            !csr.metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(addon_names::labels::ADDON_NAME))
        })
        .count();
    if count >= MAX_PENDING_CSRS {
        return Err(AgentError::TooManyCsrs {
            cluster: cluster.to_owned(),
            count,
        });
    }
    let (key, request_pem) = certs::new_key_and_request(cluster, agent)?;
    let created = api
        .create(
            &PostParams::default(),
            &csr_object(
                cluster,
                &request_pem,
                ctx.options.client_cert_expiration_seconds,
            ),
        )
        .await
        .map_err(AgentError::Hub)?;
    let name = created.metadata.name.unwrap_or_default();
    tracing::info!(csr = name, "created a certificate signing request");
    if report_progress {
        ctx.set_progress(AgentProgress::WaitingForCsrApproval {
            csr_name: name.clone(),
        });
    }
    let done = await_condition(api, &name, |csr: Option<&CertificateSigningRequest>| {
        csr.is_none_or(|csr| issued(csr).is_some() || refused(csr).is_some())
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
    if let Some((outcome, message)) = refused(&csr) {
        return Err(AgentError::CsrNotIssued {
            name,
            outcome,
            message,
        });
    }
    let cert_pem = issued(&csr).unwrap_or_default();
    let cert = certs::parse_cert(cert_pem.as_bytes())?;
    if !certs::matches_key(&cert, &key) {
        return Err(AgentError::Certificate(format!(
            "the certificate of CSR {name} does not match the private key"
        )));
    }
    if let Some(reason) =
        certs::unusable_reason(&cert, cluster, agent, jiff::Timestamp::now().as_second())
    {
        return Err(AgentError::Certificate(format!("CSR {name}: {reason}")));
    }
    Ok((key.serialize_pem(), cert_pem, cert))
}

/// The issued certificate PEM, if any.
fn issued(csr: &CertificateSigningRequest) -> Option<String> {
    csr.status
        .as_ref()
        .and_then(|s| s.certificate.as_ref())
        .filter(|c| !c.0.is_empty())
        .and_then(|c| String::from_utf8(c.0.clone()).ok())
}

/// `("denied" | "failed", message)` when the CSR was refused.
fn refused(csr: &CertificateSigningRequest) -> Option<(String, String)> {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| (c.type_ == "Denied" || c.type_ == "Failed") && c.status == "True")
        .map(|c| {
            (
                c.type_.to_lowercase(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn managed_cluster_carries_client_configs_labels_and_agent_annotations_only() {
        let options = AgentOptions {
            cluster_labels: BTreeMap::from([("env".into(), "dev".into())]),
            cluster_annotations: BTreeMap::from([
                ("agent.open-cluster-management.io/a".into(), "1".into()),
                ("other.io/b".into(), "2".into()),
            ]),
            external_server_urls: vec![("https://spoke:6443".into(), Some(b"CA".to_vec()))],
            ..Default::default()
        };
        let mc = desired_managed_cluster(&options, "c1");
        let json = serde_json::to_value(&mc).unwrap();
        assert_eq!(json["metadata"]["labels"]["env"], "dev");
        assert_eq!(
            json["metadata"]["annotations"],
            serde_json::json!({"agent.open-cluster-management.io/a": "1"})
        );
        assert_eq!(json["spec"]["hubAcceptsClient"], false);
        assert_eq!(
            json["spec"]["managedClusterClientConfigs"][0]["url"],
            "https://spoke:6443"
        );
    }

    #[test]
    fn only_missing_client_configs_are_appended() {
        let options = AgentOptions {
            external_server_urls: vec![
                ("https://a:6443".into(), None),
                ("https://b:6443".into(), None),
            ],
            ..Default::default()
        };
        let mut existing = desired_managed_cluster(&AgentOptions::default(), "c1");
        existing.spec.managed_cluster_client_configs = vec![ClientConfig {
            url: "https://a:6443".into(),
            ca_bundle: None,
        }];
        let updated = with_missing_client_configs(&existing, &options).unwrap();
        let urls: Vec<_> = updated
            .spec
            .managed_cluster_client_configs
            .iter()
            .map(|c| c.url.as_str())
            .collect();
        assert_eq!(urls, ["https://a:6443", "https://b:6443"]);
        assert!(with_missing_client_configs(&updated, &options).is_none());
    }

    #[test]
    fn csr_has_the_upstream_shape() {
        let csr = csr_object("c1", "PEM", Some(3600));
        let json = serde_json::to_value(&csr).unwrap();
        assert_eq!(json["metadata"]["generateName"], "c1-");
        assert_eq!(
            json["metadata"]["labels"]["open-cluster-management.io/cluster-name"],
            "c1"
        );
        assert_eq!(
            json["spec"]["signerName"],
            "kubernetes.io/kube-apiserver-client"
        );
        assert_eq!(
            json["spec"]["usages"],
            serde_json::json!(["digital signature", "key encipherment", "client auth"])
        );
        assert_eq!(json["spec"]["expirationSeconds"], 3600);
        let without = serde_json::to_value(csr_object("c1", "PEM", None)).unwrap();
        assert!(without["spec"].get("expirationSeconds").is_none());
    }
}
