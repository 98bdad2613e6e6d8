//! The admission hooks registered in-process ([`crate::ApiServer::register_admission`]) run
//! on a write: in registration order, each seeing the previous one's mutation.

use serde_json::Value;

use crate::admission::{AdmissionOperation, AdmissionRequest, AdmissionResult};
use ocm_apiserver_rbac::Attributes;
use ocm_apiserver_status::ApiError;

/// Runs the hooks matching a write in registration order, chaining mutations. `object` is
/// replaced by the last mutation; the first denial ends the run.
pub(crate) fn run(
    ctx: &super::Ctx,
    operation: AdmissionOperation,
    namespace: &str,
    name: &str,
    subresource: Option<&str>,
    object: Option<&mut Value>,
    old_object: Option<&Value>,
) -> Result<(), ApiError> {
    let hooks = ctx
        .inner
        .admission_hooks(&ctx.res.group, &ctx.res.plural, subresource);
    if hooks.is_empty() {
        return Ok(());
    }
    let inner = ctx.inner.clone();
    let cluster = ctx.cluster.clone();
    let authorizer = move |attrs: &Attributes| {
        attrs.user.is_master() || inner.policy(&cluster).authorize(attrs).allowed
    };
    let mut object = object;
    for hook in hooks {
        let current = object.as_deref().cloned();
        let object_name = current
            .as_ref()
            .map(|o| crate::meta::meta_str(o, "name").to_owned())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| name.to_owned());
        let request = AdmissionRequest {
            operation,
            cluster: &ctx.cluster,
            group: &ctx.res.group,
            version: &ctx.version,
            resource: &ctx.res.plural,
            subresource,
            namespace,
            name: &object_name,
            object: current.as_ref(),
            old_object,
            user: &ctx.identity,
            dry_run: ctx.dry_run,
            authorizer: &authorizer,
        };
        match hook(&request) {
            AdmissionResult::Allow => {}
            AdmissionResult::Mutate(new) => {
                if let Some(slot) = object.as_deref_mut() {
                    *slot = new;
                }
            }
            AdmissionResult::Deny(denial) => {
                return Err(denial.to_api_error(ctx.gr(), &ctx.res.kind, &object_name));
            }
        }
    }
    Ok(())
}
