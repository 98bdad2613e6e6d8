//! Answers a policy's access checks the way a webhook must: by asking the API server
//! (SubjectAccessReview for the requester as the server reported it), and reads the one other
//! fact policies need (whether a cluster namespace is terminating).
//!
//! Policies are synchronous and may ask different questions depending on earlier answers, so
//! [`decide`] runs a policy with the answers known so far, collects the questions it could not
//! answer, asks the server, and runs it again — until a run asks nothing new.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::policy::{Access, Facts, Phase, Review, Verdict, admit};

/// Why a webhook could not reach a decision.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    /// The API server did not answer a SubjectAccessReview or a read.
    #[error("asking the API server")]
    Api(#[from] kube::Error),
    /// A policy kept asking new questions.
    #[error("the policy asked too many access questions")]
    TooManyQuestions,
}

/// The API server a webhook asks.
#[derive(Clone)]
pub struct ServerAccess {
    client: kube::Client,
}

impl std::fmt::Debug for ServerAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerAccess").finish_non_exhaustive()
    }
}

impl ServerAccess {
    /// Asks through `client` (which needs `create` on subjectaccessreviews and `get` on
    /// namespaces).
    pub fn new(client: kube::Client) -> ServerAccess {
        ServerAccess { client }
    }

    /// Whether the user in `user_info` (an AdmissionReview `userInfo`) may do `access`.
    pub async fn allowed(&self, user_info: &Value, access: &Access) -> Result<bool, AccessError> {
        let review: SubjectAccessReview = serde_json::from_value(json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": user_info.get("username").cloned().unwrap_or(json!("")),
                "uid": user_info.get("uid").cloned().unwrap_or(json!("")),
                "groups": user_info.get("groups").cloned().unwrap_or(json!([])),
                "extra": user_info.get("extra").cloned().unwrap_or(json!({})),
                "resourceAttributes": {
                    "verb": access.verb,
                    "group": access.group,
                    "resource": access.resource,
                    "subresource": access.subresource,
                    "namespace": access.namespace,
                    "name": access.name,
                },
            },
        }))
        .map_err(|e| AccessError::Api(kube::Error::SerdeError(e)))?;
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let answer = api.create(&PostParams::default(), &review).await?;
        Ok(answer.status.is_some_and(|s| s.allowed))
    }

    /// Whether namespace `name` exists and is terminating.
    pub async fn namespace_terminating(&self, name: &str) -> Result<bool, AccessError> {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let Some(ns) = api.get_opt(name).await? else {
            return Ok(false);
        };
        Ok(ns.metadata.deletion_timestamp.is_some()
            || ns.status.and_then(|s| s.phase).as_deref() == Some("Terminating"))
    }
}

/// Runs the `phase` policy for a request of `user_info`, answering its access checks through `access`.
pub async fn decide(
    access: &ServerAccess,
    user_info: &Value,
    review: &Review,
    facts: &Facts,
    phase: Phase,
) -> Result<Verdict, AccessError> {
    let mut known: HashMap<Access, bool> = HashMap::new();
    for _round in 0..8 {
        let unknown = Mutex::new(Vec::new());
        let verdict = admit(phase, review, facts, &|question: &Access| {
            known.get(question).copied().unwrap_or_else(|| {
                if let Ok(mut unknown) = unknown.lock() {
                    unknown.push(question.clone());
                }
                // Provisional: assume allowed so the run goes on to ask what else it needs.
                true
            })
        });
        let unknown = unknown.into_inner().unwrap_or_default();
        if unknown.is_empty() {
            return Ok(verdict);
        }
        for question in unknown {
            let answer = access.allowed(user_info, &question).await?;
            known.insert(question, answer);
        }
    }
    Err(AccessError::TooManyQuestions)
}
