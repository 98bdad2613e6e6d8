//! CSR approval by the hub: renewals of accepted clusters, attack requests, never-accepted
//! clusters, and auto-approval of bootstrap users.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support_accept;

use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestSpec,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use ocm_api::cluster::v1::{ManagedCluster, ManagedClusterSpec};
use ocm_registration::hub::HubOptions;
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};
use serde_json::json;
use support_accept::{Hub, cluster_condition, wait_for};

const SIGNER: &str = "kubernetes.io/kube-apiserver-client";
const CONTROLLER: &str = "csr-approval";

fn request(cn: &str, orgs: &[&str]) -> Vec<u8> {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    // rcgen keeps one value per attribute type; a second organization goes in under
    // the same OID (2.5.4.10) spelled as a custom type.
    for (i, o) in orgs.iter().enumerate() {
        let ty = match i {
            0 => DnType::OrganizationName,
            1 => DnType::CustomDnType(vec![2, 5, 4, 10]),
            _ => panic!("at most two organizations"),
        };
        dn.push(ty, *o);
    }
    params.distinguished_name = dn;
    params
        .serialize_request(&key)
        .unwrap()
        .pem()
        .unwrap()
        .into_bytes()
}

fn csr(name: &str, cluster: &str, req: Vec<u8>) -> CertificateSigningRequest {
    CertificateSigningRequest {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(
                [(
                    "open-cluster-management.io/cluster-name".to_owned(),
                    cluster.to_owned(),
                )]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        spec: CertificateSigningRequestSpec {
            request: ByteString(req),
            signer_name: SIGNER.to_owned(),
            usages: Some(vec![
                "digital signature".to_owned(),
                "key encipherment".to_owned(),
                "client auth".to_owned(),
            ]),
            ..CertificateSigningRequestSpec::default()
        },
        status: None,
    }
}

fn approved(c: &CertificateSigningRequest) -> bool {
    c.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Approved" && c.status == "True")
        })
}

fn signed(c: &CertificateSigningRequest) -> bool {
    c.status
        .as_ref()
        .and_then(|s| s.certificate.as_ref())
        .is_some_and(|b| !b.0.is_empty())
}

fn pending(c: &CertificateSigningRequest) -> bool {
    c.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_none_or(|cs| cs.is_empty())
}

async fn accepted_cluster(hub: &Hub, name: &str) {
    hub.create_cluster(name, true).await;
    let clusters: Api<ManagedCluster> = Api::all(hub.admin.clone());
    wait_for(&clusters, name, "cluster accepted", |c| {
        cluster_condition(c, "HubAcceptedManagedCluster").is_some_and(|(s, _, _)| s == "True")
    })
    .await;
}

/// Lets `subject_group` create and read CSRs (as a bootstrap identity may).
async fn grant_csr_create(hub: &Hub, name: &str, user: &str, with_clusters: bool) {
    let mut rules = vec![PolicyRule {
        api_groups: Some(vec!["certificates.k8s.io".to_owned()]),
        resources: Some(vec!["certificatesigningrequests".to_owned()]),
        verbs: vec![
            "create".to_owned(),
            "get".to_owned(),
            "list".to_owned(),
            "watch".to_owned(),
        ],
        ..PolicyRule::default()
    }];
    if with_clusters {
        rules.push(PolicyRule {
            api_groups: Some(vec!["cluster.open-cluster-management.io".to_owned()]),
            resources: Some(vec!["managedclusters".to_owned()]),
            verbs: vec!["create".to_owned(), "get".to_owned()],
            ..PolicyRule::default()
        });
    }
    Api::<ClusterRole>::all(hub.admin.clone())
        .create(
            &PostParams::default(),
            &ClusterRole {
                metadata: ObjectMeta {
                    name: Some(name.to_owned()),
                    ..ObjectMeta::default()
                },
                rules: Some(rules),
                ..ClusterRole::default()
            },
        )
        .await
        .unwrap();
    Api::<ClusterRoleBinding>::all(hub.admin.clone())
        .create(
            &PostParams::default(),
            &ClusterRoleBinding {
                metadata: ObjectMeta {
                    name: Some(name.to_owned()),
                    ..ObjectMeta::default()
                },
                role_ref: RoleRef {
                    api_group: "rbac.authorization.k8s.io".to_owned(),
                    kind: "ClusterRole".to_owned(),
                    name: name.to_owned(),
                },
                subjects: Some(vec![Subject {
                    kind: "User".to_owned(),
                    api_group: Some("rbac.authorization.k8s.io".to_owned()),
                    name: user.to_owned(),
                    namespace: None,
                }]),
            },
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn an_accepted_clusters_renewal_is_approved_and_signed_and_attacks_stay_pending() {
    let hub = Hub::start(HubOptions::default()).await;
    accepted_cluster(&hub, "c1").await;
    let agent = hub.agent("c1", "agent1");
    let csrs: Api<CertificateSigningRequest> = Api::all(agent.clone());
    let cn = "system:open-cluster-management:c1:agent1";
    let org = "system:open-cluster-management:c1";

    // Created first, all by c1's own agent identity (so spec.username is its CN).
    let attacks = [
        (
            "attack-prefix-org",
            request(cn, &["system:open-cluster-management:c1x"]),
        ),
        (
            "attack-other-cluster",
            request(
                "system:open-cluster-management:c2:agent1",
                &["system:open-cluster-management:c2"],
            ),
        ),
        ("attack-extra-org", request(cn, &[org, "system:masters"])),
        (
            "attack-username-mismatch",
            request("system:open-cluster-management:c1:someone-else", &[org]),
        ),
        (
            "attack-garbage",
            b"-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"
                .to_vec(),
        ),
    ];
    for (name, req) in &attacks {
        let created = csrs
            .create(&PostParams::default(), &csr(name, "c1", req.clone()))
            .await;
        // The garbage request may be refused by the server already; that is fine too.
        if *name != "attack-garbage" {
            created.unwrap();
        }
    }
    // A valid request for another signer is not ours to approve.
    let mut other_signer = csr("attack-wrong-signer", "c1", request(cn, &[org]));
    other_signer.spec.signer_name = "example.com/custom".to_owned();
    csrs.create(&PostParams::default(), &other_signer)
        .await
        .unwrap();

    let created = csrs
        .create(
            &PostParams::default(),
            &csr("renewal", "c1", request(cn, &[org])),
        )
        .await
        .unwrap();
    assert_eq!(created.spec.username.as_deref(), Some(cn));

    let admin_csrs: Api<CertificateSigningRequest> = Api::all(hub.admin.clone());
    let done = wait_for(&admin_csrs, "renewal", "renewal approved and signed", |c| {
        approved(c) && signed(c)
    })
    .await;
    let cond = done
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Approved"))
        .unwrap();
    assert_eq!(
        cond.reason.as_deref(),
        Some("AutoApprovedByHubCSRApprovingController")
    );

    // Every kube-apiserver-client CSR has been looked at at least once by now.
    let existing = admin_csrs
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|c| c.spec.signer_name == SIGNER)
        .count() as u64;
    hub.wait_reconciles(CONTROLLER, existing).await;
    for c in admin_csrs.list(&Default::default()).await.unwrap() {
        if c.name_any() != "renewal" {
            assert!(
                pending(&c),
                "{} must stay pending: {:?}",
                c.name_any(),
                c.status.as_ref().and_then(|s| s.conditions.as_ref())
            );
        }
    }
}

#[tokio::test]
async fn a_never_accepted_clusters_renewal_is_not_approved() {
    let hub = Hub::start(HubOptions::default()).await;
    hub.create_cluster("c3", false).await;
    let cn = "system:open-cluster-management:c3:agent1";
    let org = "system:open-cluster-management:c3";
    grant_csr_create(&hub, "test-csr-create", cn, false).await;
    let csrs: Api<CertificateSigningRequest> = Api::all(hub.agent("c3", "agent1"));
    let created = csrs
        .create(
            &PostParams::default(),
            &csr("not-accepted", "c3", request(cn, &[org])),
        )
        .await
        .unwrap();
    assert_eq!(created.spec.username.as_deref(), Some(cn));
    hub.wait_reconciles(CONTROLLER, 1).await;
    // The reconcile counted above ends with a SubjectAccessReview and no approval; let a
    // second CSR for an accepted cluster go through to be sure the first one is finished.
    accepted_cluster(&hub, "c4").await;
    let c4_csrs: Api<CertificateSigningRequest> = Api::all(hub.agent("c4", "a"));
    c4_csrs
        .create(
            &PostParams::default(),
            &csr(
                "c4-renewal",
                "c4",
                request(
                    "system:open-cluster-management:c4:a",
                    &["system:open-cluster-management:c4"],
                ),
            ),
        )
        .await
        .unwrap();
    let admin_csrs: Api<CertificateSigningRequest> = Api::all(hub.admin.clone());
    wait_for(&admin_csrs, "c4-renewal", "c4 renewal approved", approved).await;
    assert!(pending(&admin_csrs.get("not-accepted").await.unwrap()));
}

#[tokio::test]
async fn a_bootstrap_csr_is_approved_only_for_auto_approved_users_and_the_cluster_is_accepted() {
    let bootstrap = "system:bootstrap:ocm-test";
    let stranger = "system:bootstrap:stranger";
    let hub = Hub::start(HubOptions {
        auto_approved_users: vec![bootstrap.to_owned()],
        ..HubOptions::default()
    })
    .await;
    grant_csr_create(&hub, "bootstrap", bootstrap, true).await;
    grant_csr_create(&hub, "stranger", stranger, true).await;

    let as_bootstrap = hub.client_as(bootstrap, &["system:bootstrappers:managedcluster"]);
    let as_stranger = hub.client_as(stranger, &["system:bootstrappers:managedcluster"]);
    // The stranger's CSR first: it must stay pending.
    Api::<CertificateSigningRequest>::all(as_stranger)
        .create(
            &PostParams::default(),
            &csr(
                "stranger-csr",
                "c8",
                request(
                    "system:open-cluster-management:c8:a",
                    &["system:open-cluster-management:c8"],
                ),
            ),
        )
        .await
        .unwrap();
    Api::<ManagedCluster>::all(as_bootstrap.clone())
        .create(
            &PostParams::default(),
            &ManagedCluster::new("c7", ManagedClusterSpec::default()),
        )
        .await
        .unwrap();
    Api::<CertificateSigningRequest>::all(as_bootstrap)
        .create(
            &PostParams::default(),
            &csr(
                "bootstrap-csr",
                "c7",
                request(
                    "system:open-cluster-management:c7:a",
                    &["system:open-cluster-management:c7"],
                ),
            ),
        )
        .await
        .unwrap();

    let admin_csrs: Api<CertificateSigningRequest> = Api::all(hub.admin.clone());
    wait_for(
        &admin_csrs,
        "bootstrap-csr",
        "bootstrap csr approved and signed",
        |c| approved(c) && signed(c),
    )
    .await;
    let clusters: Api<ManagedCluster> = Api::all(hub.admin.clone());
    let c7 = wait_for(&clusters, "c7", "c7 accepted automatically", |c| {
        c.spec.hub_accepts_client
            && cluster_condition(c, "HubAcceptedManagedCluster")
                .is_some_and(|(s, _, _)| s == "True")
    })
    .await;
    let stamp = c7
        .annotations()
        .get("open-cluster-management.io/automatically-accepted-on")
        .cloned()
        .unwrap();
    assert!(stamp.parse::<jiff::Timestamp>().is_ok(), "{stamp}");

    hub.wait_reconciles(CONTROLLER, 2).await;
    assert!(pending(&admin_csrs.get("stranger-csr").await.unwrap()));

    // The admin may deny after auto-acceptance; it stays denied.
    clusters
        .patch(
            "c7",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"hubAcceptsClient": false}})),
        )
        .await
        .unwrap();
    wait_for(&clusters, "c7", "c7 denied", |c| {
        cluster_condition(c, "HubAcceptedManagedCluster")
            .is_some_and(|(s, r, _)| s == "False" && r == "HubClusterAdminDenied")
    })
    .await;
    let c7 = clusters.get("c7").await.unwrap();
    assert!(!c7.spec.hub_accepts_client);
    assert_eq!(
        c7.annotations()
            .get("open-cluster-management.io/automatically-accepted-on"),
        Some(&stamp)
    );
}
