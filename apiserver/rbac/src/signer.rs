//! Authorization on the synthetic `signers` resource (group `certificates.k8s.io`), as the
//! CertificateApproval and CertificateSigning admission plugins check it: `approve` when a CSR's
//! `/approval` is updated, `sign` when its `status.certificate` changes.

use super::attributes::Attributes;
use super::forbidden::Forbidden;
use super::policy::Policy;
use crate::Identity;
use ocm_apiserver_validation::go_quote;

const CERTIFICATES_GROUP: &str = "certificates.k8s.io";

/// kube's `IsAuthorizedForSignerName`: `verb` (`approve` or `sign`) on `signers` named
/// `signer_name`, or else on `<domain>/*` (e.g. `kubernetes.io/*`).
pub fn authorized_for_signer(
    policy: &Policy,
    user: &Identity,
    verb: &str,
    signer_name: &str,
) -> bool {
    let check = |name: &str| {
        policy.allows(
            &Attributes::resource(user.clone(), verb, CERTIFICATES_GROUP, "signers", "")
                .with_name(name),
        )
    };
    if check(signer_name) {
        return true;
    }
    let domain = signer_name.split('/').next().unwrap_or("");
    check(&format!("{domain}/*"))
}

/// The admission error for a CSR `csr_name` whose `verb` on `signer_name` was refused:
/// `certificatesigningrequests.certificates.k8s.io "<name>" is forbidden: user not permitted to
/// <verb> requests with signerName "<signer>"`.
pub fn signer_forbidden(csr_name: &str, verb: &str, signer_name: &str) -> Forbidden {
    Forbidden::new(
        CERTIFICATES_GROUP,
        "certificatesigningrequests",
        csr_name,
        format!(
            "user not permitted to {verb} requests with signerName {}",
            go_quote(signer_name)
        ),
    )
}
