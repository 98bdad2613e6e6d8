//! `ocm join`'s checks of the hubs named with `--hub-apiserver`/`--hub-token` (and
//! `--ca-file`): the flags first, then each hub (its CA, and that it accepts the token), and —
//! when a hub does not answer — what an earlier join left on the managed cluster.
//! [`super::join_plan`] decides from that; nothing is written anywhere here.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams};
use ocm_hub::join::{AGENT_NAMESPACE, bootstrap_kubeconfig, is_bootstrap_secret};
use ocm_registration::agent::HUB_KUBECONFIG_SECRET;

use super::join_plan::{self, CheckedHub, EarlierJoin, HubCheck, hub_label};

/// The flags of `ocm join` that name the hubs, and what their checks need besides.
pub struct HubFlags<'a> {
    /// `--hub-apiserver`, in order.
    pub urls: &'a [String],
    /// `--hub-token`, one per URL.
    pub tokens: &'a [String],
    /// `--ca-file`, one per URL or none.
    pub ca_files: &'a [PathBuf],
    /// `--cluster-name`.
    pub cluster_name: Option<&'a str>,
    /// `--spoke-kubeconfig`: where an earlier join is looked for.
    pub spoke_kubeconfig: Option<&'a Path>,
    /// `--operator`.
    pub operator: bool,
    /// `--hub-connection-timeout-seconds`.
    pub hub_connection_timeout_seconds: u64,
}

/// Checks the hub URL: absolute https with a host.
pub fn check_hub_url(url: &str) -> anyhow::Result<()> {
    let uri: http::Uri = url
        .parse()
        .with_context(|| format!("invalid hub URL {url:?}"))?;
    if uri.scheme_str() != Some("https") || uri.host().is_none() {
        bail!("invalid hub URL {url:?}: must be https://host[:port]");
    }
    Ok(())
}

/// The least `hubConnectionTimeoutSeconds` the Klusterlet API takes.
const MIN_OPERATOR_TIMEOUT: u64 = 180;

/// The bootstrap kubeconfig of each hub named with --hub-apiserver/--hub-token (and
/// --ca-file), in order, as [`join_plan::plan`] decides; its warnings go to stderr.
pub async fn hub_bootstrap_kubeconfigs(
    args: &HubFlags<'_>,
) -> anyhow::Result<Vec<(String, String)>> {
    let ca_pems = check_flags(args)?;
    let total = args.urls.len();
    let mut checked = Vec::new();
    for (url, (token, ca)) in args.urls.iter().zip(args.tokens.iter().zip(&ca_pems)) {
        let check = check_hub(url, token, ca.as_deref(), args.cluster_name).await;
        let refused = matches!(check, HubCheck::Refused(_));
        checked.push(CheckedHub {
            url: url.clone(),
            check,
        });
        if refused {
            break;
        }
    }
    let mut earlier = EarlierJoin::default();
    if checked
        .iter()
        .any(|h| matches!(h.check, HubCheck::Unreachable { .. }))
    {
        earlier = read_earlier_join(args.spoke_kubeconfig).await?;
        for (hub, (token, ca)) in checked.iter_mut().zip(args.tokens.iter().zip(&ca_pems)) {
            if let HubCheck::Unreachable { earlier: known, .. } = &mut hub.check {
                *known = join_plan::earlier_kubeconfig(
                    &earlier.bootstrap_kubeconfigs,
                    &hub.url,
                    token,
                    ca.as_deref(),
                );
            }
        }
    }
    let plan = join_plan::plan(checked, total, &earlier)?;
    for warning in &plan.warnings {
        eprintln!("warning: {warning}");
    }
    Ok(plan.hubs)
}

/// Checks the flags naming the hubs before any hub is asked anything: URL and token pairs,
/// well-formed, no hub twice, one CA file per hub or none (returned read, per hub).
fn check_flags(args: &HubFlags<'_>) -> anyhow::Result<Vec<Option<String>>> {
    let hubs = args.urls.len();
    if hubs == 0 || args.tokens.len() != hubs {
        bail!(
            "--hub-apiserver and --hub-token go in pairs (got {hubs} --hub-apiserver and {} --hub-token), or use --bootstrap-kubeconfig",
            args.tokens.len()
        );
    }
    if !args.ca_files.is_empty() && args.ca_files.len() != hubs {
        bail!(
            "--ca-file: give one per --hub-apiserver ({hubs}) or none (got {})",
            args.ca_files.len()
        );
    }
    if hubs > 1 && args.operator && args.hub_connection_timeout_seconds < MIN_OPERATOR_TIMEOUT {
        bail!(
            "--hub-connection-timeout-seconds {} is below {MIN_OPERATOR_TIMEOUT}, the least the \
             Klusterlet's hubConnectionTimeoutSeconds takes (with --operator)",
            args.hub_connection_timeout_seconds
        );
    }
    let mut ca_pems = Vec::new();
    for (i, (url, token)) in args.urls.iter().zip(args.tokens).enumerate() {
        let which = |e: anyhow::Error| {
            if hubs > 1 {
                e.context(hub_label(i, hubs, url))
            } else {
                e
            }
        };
        check_hub_url(url).map_err(which)?;
        if token.trim().is_empty() || token.contains(char::is_whitespace) {
            return Err(which(anyhow::anyhow!(
                "invalid hub token: empty or contains whitespace"
            )));
        }
        if args.urls[..i].contains(url) {
            bail!("hub {url} is named twice");
        }
        let ca = args
            .ca_files
            .get(i)
            .map(PathBuf::as_path)
            .map(read_ca_file)
            .transpose()
            .map_err(which)?;
        ca_pems.push(ca);
    }
    Ok(ca_pems)
}

/// The CA bundle in `path`.
fn read_ca_file(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading CA file {}", path.display()))
}

/// Asks the hub at `url`: its CA (`ca`, else from its `kube-public/cluster-info`), then whether
/// it accepts `token`; says so on stdout when it does.
async fn check_hub(url: &str, token: &str, ca: Option<&str>, cluster: Option<&str>) -> HubCheck {
    let asked = async {
        let ca = match ca {
            Some(ca) => ca.to_owned(),
            None => ocm_setup::discovery::discover_ca(url, token).await?,
        };
        let bootstrap = bootstrap_kubeconfig(url, &ca, token);
        ocm_setup::discovery::check_token(url, &bootstrap, cluster).await?;
        anyhow::Ok(bootstrap)
    };
    match asked.await {
        Ok(bootstrap) => {
            println!("hub {url} reachable, token accepted");
            HubCheck::Accepted(bootstrap)
        }
        Err(error) if ocm_setup::discovery::is_unreachable(&error) => HubCheck::Unreachable {
            error,
            earlier: None,
        },
        Err(error) => HubCheck::Refused(error),
    }
}

/// What an earlier join left in the agent namespace of the managed cluster at
/// `spoke_kubeconfig`: its bootstrap kubeconfigs, and whether the agent holds a hub kubeconfig.
/// Nothing without a kubeconfig (a simulated cluster is started after the hubs are checked).
async fn read_earlier_join(spoke_kubeconfig: Option<&Path>) -> anyhow::Result<EarlierJoin> {
    let Some(path) = spoke_kubeconfig else {
        return Ok(EarlierJoin::default());
    };
    let spoke = ocm_runtime::kubeconfig::client_from_file(path)
        .await
        .with_context(|| format!("loading {}", path.display()))?;
    let secrets = Api::<Secret>::namespaced(spoke, AGENT_NAMESPACE)
        .list(&ListParams::default())
        .await
        .context(
            "reading the bootstrap kubeconfig secrets of an earlier join on the managed cluster",
        )?;
    let kubeconfig = |secret: &Secret| {
        secret
            .data
            .as_ref()?
            .get("kubeconfig")
            .and_then(|b| String::from_utf8(b.0.clone()).ok())
    };
    let mut earlier = EarlierJoin::default();
    for secret in &secrets.items {
        let name = secret.metadata.name.as_deref().unwrap_or_default();
        if is_bootstrap_secret(name) {
            earlier.bootstrap_kubeconfigs.extend(kubeconfig(secret));
        } else if name == HUB_KUBECONFIG_SECRET {
            earlier.registered = kubeconfig(secret).is_some();
        }
    }
    Ok(earlier)
}
