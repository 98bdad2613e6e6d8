//! Which hubs `ocm join` goes ahead with, decided from what it learned of each (no I/O here).
//!
//! A hub that accepts the token is joined. One that answers and refuses fails the join. One
//! that does not answer fails it too, unless this cluster joined it before with the very same
//! URL, CA and token: then the bootstrap kubeconfig of that join is kept, with a warning, so
//! that re-running `ocm join` (a restart, a reboot) works while that hub is down. When no hub
//! answers at all, the join goes ahead only on a cluster whose agent registered before (it
//! holds a hub kubeconfig): its agent carries on as it would after any restart, retrying its
//! hub and the others; a cluster that never registered has nothing to carry on with.

use ocm_hub::join::bootstrap_kubeconfig;

/// What `ocm join` learned of one hub.
#[derive(Debug)]
pub enum HubCheck {
    /// It answered and accepts the token: the bootstrap kubeconfig to write.
    Accepted(String),
    /// It answered and refused the token (or gave an answer `ocm join` cannot use).
    Refused(anyhow::Error),
    /// It did not answer.
    Unreachable {
        /// Why not.
        error: anyhow::Error,
        /// The bootstrap kubeconfig an earlier join of this cluster wrote for it with the same
        /// URL, CA and token, if there is one ([`earlier_kubeconfig`]).
        earlier: Option<String>,
    },
}

/// A hub as `ocm join` was given it, and what it learned of it.
#[derive(Debug)]
pub struct CheckedHub {
    /// Its URL (`--hub-apiserver`).
    pub url: String,
    /// What its check found.
    pub check: HubCheck,
}

/// What an earlier join left on the managed cluster.
#[derive(Debug, Default)]
pub struct EarlierJoin {
    /// The kubeconfigs in its bootstrap kubeconfig secrets.
    pub bootstrap_kubeconfigs: Vec<String>,
    /// Its agent registered with a hub: it holds a hub kubeconfig.
    pub registered: bool,
}

/// What `ocm join` goes ahead with.
#[derive(Debug, PartialEq, Eq)]
pub struct JoinPlan {
    /// (URL, bootstrap kubeconfig) of each hub, in the order given.
    pub hubs: Vec<(String, String)>,
    /// One line per hub kept from the earlier join without an answer from it.
    pub warnings: Vec<String>,
}

/// How messages name the hub at `index` (from 0) of `total`.
pub fn hub_label(index: usize, total: usize, url: &str) -> String {
    if total > 1 {
        format!("hub {} of {total} ({url})", index + 1)
    } else {
        format!("hub {url}")
    }
}

/// Decides from the checked hubs (in order; the checks may have stopped at the first refusal,
/// `total` is how many were given) and what an earlier join left: every hub's bootstrap
/// kubeconfig and a warning per hub kept unchecked, or the error naming the first hub that
/// fails the join.
pub fn plan(
    hubs: Vec<CheckedHub>,
    total: usize,
    earlier: &EarlierJoin,
) -> anyhow::Result<JoinPlan> {
    let name_hub = |index: usize, url: &str, error: anyhow::Error| {
        if total > 1 {
            error.context(hub_label(index, total, url))
        } else {
            error
        }
    };
    let mut plan = JoinPlan {
        hubs: Vec::new(),
        warnings: Vec::new(),
    };
    let mut unanswered = Vec::new();
    let mut answered = false;
    for (index, hub) in hubs.into_iter().enumerate() {
        let label = hub_label(index, total, &hub.url);
        let kubeconfig = match hub.check {
            HubCheck::Accepted(kubeconfig) => {
                answered = true;
                kubeconfig
            }
            HubCheck::Refused(error) => return Err(name_hub(index, &hub.url, error)),
            HubCheck::Unreachable {
                error,
                earlier: None,
            } => {
                let error = if earlier.bootstrap_kubeconfigs.is_empty() {
                    error
                } else {
                    anyhow::anyhow!(
                        "{error:#}; this cluster has not joined it before with this URL, CA \
                         and token, so there is no bootstrap kubeconfig of an earlier join to keep"
                    )
                };
                return Err(name_hub(index, &hub.url, error));
            }
            HubCheck::Unreachable {
                error,
                earlier: Some(kubeconfig),
            } => {
                plan.warnings.push(format!(
                    "{label}: not reachable now; keeping its bootstrap kubeconfig from the \
                     earlier join ({error:#})"
                ));
                unanswered.push(format!("{label}: {error:#}"));
                kubeconfig
            }
        };
        plan.hubs.push((hub.url, kubeconfig));
    }
    if plan.hubs.len() < total {
        anyhow::bail!("only {} of the {total} hubs were checked", plan.hubs.len());
    }
    if !answered && !earlier.registered {
        anyhow::bail!(
            "no hub answers, and this cluster's agent has not registered with any of them (it \
             holds no hub kubeconfig), so there is no agent to carry on: {}",
            unanswered.join("; ")
        );
    }
    Ok(plan)
}

/// The bootstrap kubeconfig, among those an earlier join left (`stored`), of the hub at `url`
/// with bearer `token` and (when `--ca-file` gave one) CA `ca_pem`: rendered as `ocm join`
/// renders it from the stored CA, so writing it again changes nothing. Kubeconfigs that point
/// elsewhere, carry another token or CA, a proxy, or files are not it.
pub fn earlier_kubeconfig(
    stored: &[String],
    url: &str,
    token: &str,
    ca_pem: Option<&str>,
) -> Option<String> {
    stored.iter().find_map(|text| {
        let config = ocm_runtime::kubeconfig::parse(text).ok()?;
        if ocm_runtime::kubeconfig::untrusted_features(&config).is_some() {
            return None;
        }
        let server = ocm_runtime::kubeconfig::current_server(&config).ok()?;
        let stored_ca = server.ca_pem?;
        let same = server.server == url
            && server.proxy_url.is_none()
            && ocm_runtime::kubeconfig::current_token(&config).as_deref() == Some(token)
            && ca_pem.is_none_or(|ca| ca.trim() == stored_ca.trim());
        same.then(|| bootstrap_kubeconfig(url, &stored_ca, token))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const A: &str = "https://hub-a:6443";
    const B: &str = "https://hub-b:6443";
    const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    fn accepted(url: &str) -> CheckedHub {
        CheckedHub {
            url: url.into(),
            check: HubCheck::Accepted(format!("kubeconfig of {url}")),
        }
    }

    fn refused(url: &str) -> CheckedHub {
        CheckedHub {
            url: url.into(),
            check: HubCheck::Refused(anyhow::anyhow!("the hub at {url} rejected the token")),
        }
    }

    fn unreachable(url: &str, known: bool) -> CheckedHub {
        CheckedHub {
            url: url.into(),
            check: HubCheck::Unreachable {
                error: anyhow::anyhow!("cannot reach the hub at {url}: connection refused"),
                earlier: known.then(|| format!("earlier kubeconfig of {url}")),
            },
        }
    }

    /// The error of a join of two hubs that fails, as printed.
    fn failure(hubs: Vec<CheckedHub>, earlier: &EarlierJoin) -> String {
        format!("{:#}", plan(hubs, 2, earlier).unwrap_err())
    }

    fn joined_before(registered: bool) -> EarlierJoin {
        EarlierJoin {
            bootstrap_kubeconfigs: vec!["something".into()],
            registered,
        }
    }

    #[test]
    fn hubs_that_answer_are_joined_in_order_without_warnings() {
        let joined = plan(vec![accepted(A), accepted(B)], 2, &EarlierJoin::default()).unwrap();
        assert_eq!(
            joined.hubs,
            vec![
                (A.to_owned(), format!("kubeconfig of {A}")),
                (B.to_owned(), format!("kubeconfig of {B}"))
            ]
        );
        assert!(joined.warnings.is_empty());
    }

    #[test]
    fn a_known_hub_that_does_not_answer_is_kept_with_a_warning_naming_it() {
        let kept = plan(
            vec![accepted(A), unreachable(B, true)],
            2,
            &joined_before(true),
        )
        .unwrap();
        assert_eq!(
            kept.hubs[1],
            (B.to_owned(), format!("earlier kubeconfig of {B}"))
        );
        assert_eq!(kept.warnings.len(), 1);
        assert!(
            kept.warnings[0].starts_with(&format!(
                "hub 2 of 2 ({B}): not reachable now; keeping its bootstrap kubeconfig from \
                 the earlier join"
            )),
            "{}",
            kept.warnings[0]
        );
        assert!(kept.warnings[0].contains("connection refused"));
        // The same with the agent not registered yet: the other hub answers.
        let kept = plan(
            vec![unreachable(A, true), accepted(B)],
            2,
            &joined_before(false),
        )
        .unwrap();
        assert!(kept.warnings[0].starts_with(&format!("hub 1 of 2 ({A}): not reachable now")));
    }

    #[test]
    fn an_unknown_hub_that_does_not_answer_fails_the_join_naming_it() {
        let text = failure(
            vec![accepted(A), unreachable(B, false)],
            &EarlierJoin::default(),
        );
        assert!(
            text.starts_with(&format!("hub 2 of 2 ({B}): cannot reach")),
            "{text}"
        );
        // Joined before, but not with these credentials (say, a new token).
        let text = failure(
            vec![unreachable(A, false), accepted(B)],
            &joined_before(true),
        );
        assert!(text.starts_with(&format!("hub 1 of 2 ({A}): ")), "{text}");
        assert!(
            text.contains("has not joined it before with this URL, CA and token"),
            "{text}"
        );
        assert!(text.contains("cannot reach"), "{text}");
    }

    #[test]
    fn a_hub_that_refuses_fails_the_join_even_when_others_are_known() {
        let text = failure(vec![unreachable(A, true), refused(B)], &joined_before(true));
        assert!(text.starts_with(&format!("hub 2 of 2 ({B}): ")), "{text}");
        assert!(text.contains("rejected the token"), "{text}");
    }

    #[test]
    fn with_no_hub_answering_only_a_registered_agent_carries_on() {
        let plan_ok = plan(
            vec![unreachable(A, true), unreachable(B, true)],
            2,
            &joined_before(true),
        )
        .unwrap();
        assert_eq!(plan_ok.hubs.len(), 2);
        assert_eq!(plan_ok.warnings.len(), 2);
        let err = failure(
            vec![unreachable(A, true), unreachable(B, true)],
            &joined_before(false),
        );
        assert!(err.starts_with("no hub answers"), "{err}");
        assert!(
            err.contains(&format!("hub 1 of 2 ({A}): cannot reach")),
            "{err}"
        );
        assert!(
            err.contains(&format!("hub 2 of 2 ({B}): cannot reach")),
            "{err}"
        );
        // One hub: the same rule, and the messages name it by its URL.
        let single = plan(vec![unreachable(A, true)], 1, &joined_before(true)).unwrap();
        assert!(
            single.warnings[0].starts_with(&format!("hub {A}: not reachable now")),
            "{:?}",
            single.warnings
        );
        assert!(plan(vec![unreachable(A, true)], 1, &joined_before(false)).is_err());
        let single_unknown = plan(vec![unreachable(A, false)], 1, &EarlierJoin::default());
        assert!(format!("{:#}", single_unknown.unwrap_err()).starts_with("cannot reach the hub"));
    }

    #[test]
    fn checks_that_stopped_early_never_make_a_plan() {
        let err = plan(vec![accepted(A)], 2, &EarlierJoin::default()).unwrap_err();
        assert!(err.to_string().contains("only 1 of the 2"), "{err}");
    }

    #[test]
    fn the_earlier_kubeconfig_needs_the_same_url_token_and_ca() {
        let written = bootstrap_kubeconfig(A, CA, "abcdef.0123456789abcdef");
        let stored = vec![
            bootstrap_kubeconfig(B, CA, "bbbbbb.0123456789abcdef"),
            written.clone(),
        ];
        // Without --ca-file the stored CA is kept; the kubeconfig is the one written before.
        assert_eq!(
            earlier_kubeconfig(&stored, A, "abcdef.0123456789abcdef", None),
            Some(written.clone())
        );
        assert_eq!(
            earlier_kubeconfig(&stored, A, "abcdef.0123456789abcdef", Some(CA.trim())),
            Some(written)
        );
        let other_ca = "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n";
        for (url, token, ca) in [
            (A, "zzzzzz.0123456789abcdef", None),
            ("https://hub-a:6444", "abcdef.0123456789abcdef", None),
            (A, "abcdef.0123456789abcdef", Some(other_ca)),
        ] {
            assert_eq!(
                earlier_kubeconfig(&stored, url, token, ca),
                None,
                "{url} {token}"
            );
        }
    }

    #[test]
    fn malformed_or_file_based_kubeconfigs_are_never_the_earlier_one() {
        let token = "abcdef.0123456789abcdef";
        let with_ca_file = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {A}\n    \
             certificate-authority: /etc/hostname\ncontexts:\n- name: c\n  context: {{cluster: \
             c, user: u}}\ncurrent-context: c\nusers:\n- name: u\n  user: {{token: {token}}}\n"
        );
        let stored = vec!["not a kubeconfig".to_owned(), String::new(), with_ca_file];
        assert_eq!(earlier_kubeconfig(&stored, A, token, None), None);
    }
}
