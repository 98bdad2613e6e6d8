//! `POST .../serviceaccounts/{name}/token`: the TokenRequest subresource, issuing a
//! service-account JWT signed by the server's key.

use http::StatusCode;
use jiff::Timestamp;
use serde_json::Value;

use super::{Reply, ResourceRequest, decode_json};
use crate::tokens::{issue_token, parse_token_request};
use ocm_apiserver_status::{ApiError, Gr};
use ocm_apiserver_storage::{Bucket, ObjectKey};

fn stored(req: &ResourceRequest, resource: &str, ns: &str, name: &str) -> Option<Value> {
    let key = ObjectKey::new(Bucket::new(&req.cluster, resource), ns, name);
    let object = req.inner.store.get(&key)?;
    serde_json::from_slice(&object.value).ok()
}

/// Answers a TokenRequest.
pub(crate) fn create(req: &ResourceRequest, body: &[u8]) -> Result<Reply, ApiError> {
    let name = req.path.name.clone().unwrap_or_default();
    let namespace = req.namespace().to_owned();
    let obj = decode_json(req, body)?;
    let spec = parse_token_request(&req.inner.sa_config, &namespace, &name, &obj)?;
    let not_found = |resource: &'static str, n: &str| {
        ApiError::not_found(
            Gr {
                group: "",
                resource,
            },
            n,
        )
    };
    let sa = stored(req, "/serviceaccounts", &namespace, &name)
        .ok_or_else(|| not_found("serviceaccounts", &name))?;
    let bound = match &spec.bound_object_ref {
        Some(r) => {
            let ns = if r.namespaced() {
                namespace.as_str()
            } else {
                ""
            };
            let found = stored(req, &format!("/{}", r.resource()), ns, &r.name)
                .ok_or_else(|| not_found(r.resource(), &r.name))?;
            Some(found)
        }
        None => None,
    };
    let issued = issue_token(
        &req.inner.sa_config,
        &req.inner.sa_key,
        &spec,
        &sa,
        bound.as_ref(),
        Timestamp::now(),
    )?;
    let mut reply = Reply::json(StatusCode::CREATED, &issued.response);
    reply.warnings.extend(spec.warnings.iter().cloned());
    Ok(reply)
}
