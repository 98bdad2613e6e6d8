//! Applying one manifest to the managed cluster with its update strategy, after resolving its
//! resource through discovery and, when the work names an executor, checking the executor's
//! permissions.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::Scope;
use ocm_api::work::names::DEFAULT_FIELD_MANAGER;
use ocm_api::work::v1::{
    ManifestConfigOption, ManifestWorkSubjectServiceAccount, UpdateStrategyType,
};
use serde_json::{Value, json};

use super::compare::{
    already_applied, has_owner_references, merged_for_update, merged_owner_references,
};
use super::ignore::{spec_hash, without_ignored};
use ocm_api::work::names::{CONFIG_SPEC_HASH_ANNOTATION, manifest_reasons};

/// Why a manifest could not be applied: the manifest condition's reason and message.
#[derive(Debug)]
pub(crate) struct ApplyFailure {
    /// Reason of the manifest's `Applied=False` condition.
    pub(crate) reason: &'static str,
    /// What went wrong.
    pub(crate) message: String,
}

impl From<String> for ApplyFailure {
    fn from(message: String) -> ApplyFailure {
        ApplyFailure {
            reason: manifest_reasons::APPLIED_MANIFEST_FAILED,
            message,
        }
    }
}

/// A manifest's resource as discovery resolved it.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    pub(crate) resource: ApiResource,
    pub(crate) namespaced: bool,
}

/// Discovery results by apiVersion/kind, refreshed for kinds not (yet) known, so CRDs applied
/// earlier in the same work become usable.
#[derive(Default)]
pub(crate) struct Discovery {
    known: Mutex<HashMap<(String, String), Resolved>>,
}

impl Discovery {
    /// The resource of `apiVersion`/`kind`.
    pub(crate) async fn resolve(
        &self,
        spoke: &kube::Client,
        api_version: &str,
        kind: &str,
    ) -> Result<Resolved, String> {
        let key = (api_version.to_owned(), kind.to_owned());
        if let Some(found) = self.known.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(found);
        }
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, caps) = kube::discovery::pinned_kind(spoke, &gvk)
            .await
            .map_err(|e| format!("the server does not know {kind} in {api_version}: {e}"))?;
        let resolved = Resolved {
            resource,
            namespaced: caps.scope == Scope::Namespaced,
        };
        if let Ok(mut m) = self.known.lock() {
            m.insert(key, resolved.clone());
        }
        Ok(resolved)
    }
}

/// The result of applying one manifest.
#[derive(Debug)]
pub(crate) struct Applied {
    /// The live object after the apply (or as read, for ReadOnly / CreateOnly).
    pub(crate) live: Option<Value>,
    /// Whether the agent wrote to the cluster.
    pub(crate) wrote: bool,
}

/// The Api for one object.
pub(crate) fn api(spoke: &kube::Client, r: &Resolved, namespace: &str) -> Api<DynamicObject> {
    if r.namespaced {
        Api::namespaced_with(spoke.clone(), namespace, &r.resource)
    } else {
        Api::all_with(spoke.clone(), &r.resource)
    }
}

fn to_dynamic(value: &Value) -> Result<DynamicObject, String> {
    serde_json::from_value(value.clone()).map_err(|e| format!("invalid object: {e}"))
}

fn api_error(e: kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message,
        other => other.to_string(),
    }
}

/// Asks the managed cluster whether `sa` may `verb` the object.
async fn executor_allowed(
    spoke: &kube::Client,
    sa: &ManifestWorkSubjectServiceAccount,
    r: &Resolved,
    namespace: &str,
    name: &str,
    verb: &str,
) -> Result<bool, String> {
    let review: SubjectAccessReview = serde_json::from_value(json!({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {
            "user": format!("system:serviceaccount:{}:{}", sa.namespace, sa.name),
            "groups": ["system:serviceaccounts",
                       format!("system:serviceaccounts:{}", sa.namespace),
                       "system:authenticated"],
            "resourceAttributes": {
                "group": r.resource.group, "version": r.resource.version,
                "resource": r.resource.plural, "namespace": namespace, "name": name,
                "verb": verb,
            }
        }
    }))
    .map_err(|e| e.to_string())?;
    let out = Api::<SubjectAccessReview>::all(spoke.clone())
        .create(&PostParams::default(), &review)
        .await
        .map_err(api_error)?;
    Ok(out.status.is_some_and(|s| s.allowed))
}

/// The spec hash annotation of a live object.
fn spec_hash_of(live: &Value) -> Option<&str> {
    live.pointer("/metadata/annotations")
        .and_then(|a| a.get(CONFIG_SPEC_HASH_ANNOTATION))
        .and_then(Value::as_str)
}

/// `object` with the spec hash annotation set.
fn with_spec_hash(mut object: Value, hash: &str) -> Value {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Some(a) = annotations.as_object_mut() {
            a.insert(CONFIG_SPEC_HASH_ANNOTATION.to_owned(), json!(hash));
        }
    }
    object
}

/// Adds the owner references of `desired` that `live` lacks, touching nothing else.
async fn add_owners(
    api: &Api<DynamicObject>,
    name: &str,
    desired: &Value,
    live: &Value,
) -> Result<Applied, ApplyFailure> {
    let merged = merged_owner_references(desired, live);
    let patch = json!({"metadata": {"ownerReferences": merged,
                                    "resourceVersion": live.pointer("/metadata/resourceVersion")}});
    let patched = api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(api_error)?;
    Ok(Applied {
        live: serde_json::to_value(patched).ok(),
        wrote: true,
    })
}

async fn create(api: &Api<DynamicObject>, desired: &Value) -> Result<Applied, String> {
    let created = api
        .create(&PostParams::default(), &to_dynamic(desired)?)
        .await
        .map_err(api_error)?;
    Ok(Applied {
        live: serde_json::to_value(created).ok(),
        wrote: true,
    })
}

/// Applies `desired` (owner reference already set) with the strategy of `config`.
/// `changed`: the manifest differs from the one last applied to this object, so `Update`
/// and `ServerSideApply` write even when the live object already holds all its fields
/// (that is how fields removed from a manifest leave the object). `complete`: a condition
/// rule reported the object `Complete`, so it is only read, never written (nor re-created).
pub(crate) async fn apply(
    spoke: &kube::Client,
    r: &Resolved,
    desired: &Value,
    config: Option<&ManifestConfigOption>,
    executor: Option<&ManifestWorkSubjectServiceAccount>,
    changed: bool,
    complete: bool,
) -> Result<Applied, ApplyFailure> {
    let name = desired
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let namespace = desired
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default")
        .to_owned();
    let api = api(spoke, r, &namespace);
    let strategy = config
        .and_then(|c| c.update_strategy.as_ref())
        .map(|s| s.type_)
        .unwrap_or_default();
    let live = api.get_opt(&name).await.map_err(api_error)?;
    let live_json = live
        .as_ref()
        .map(|l| serde_json::to_value(l).unwrap_or(Value::Null));
    if complete {
        return Ok(Applied {
            live: live_json,
            wrote: false,
        });
    }
    let (name_ref, namespace_ref) = (&name, &namespace);
    let needs = |verb: &'static str| async move {
        match executor {
            None => Ok(()),
            Some(sa) => {
                let ns = if r.namespaced {
                    namespace_ref.as_str()
                } else {
                    ""
                };
                let name = name_ref;
                if executor_allowed(spoke, sa, r, ns, name, verb).await? {
                    Ok(())
                } else {
                    Err(format!(
                        "not allowed to apply the resource {} {}, {} {} with service account {}/{}: {verb} is forbidden",
                        r.resource.group, r.resource.plural, ns, name, sa.namespace, sa.name
                    ))
                }
            }
        }
    };
    match strategy {
        UpdateStrategyType::ReadOnly => match live_json {
            Some(l) => Ok(Applied {
                live: Some(l),
                wrote: false,
            }),
            None => Err(format!("{} {name} does not exist (ReadOnly)", r.resource.kind).into()),
        },
        UpdateStrategyType::CreateOnly => match live_json {
            Some(l) => Ok(Applied {
                live: Some(l),
                wrote: false,
            }),
            None => {
                needs("create").await?;
                Ok(create(&api, desired).await?)
            }
        },
        UpdateStrategyType::ServerSideApply => {
            let ssa = config
                .and_then(|c| c.update_strategy.as_ref())
                .and_then(|s| s.server_side_apply.as_ref());
            let manager = ssa
                .and_then(|s| s.field_manager.clone())
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| DEFAULT_FIELD_MANAGER.to_owned());
            let ignored = ssa.map(|s| s.ignore_fields.as_slice()).unwrap_or_default();
            let mut body = desired.clone();
            if !ignored.is_empty() {
                let required =
                    without_ignored(desired, ignored).map_err(|message| ApplyFailure {
                        reason: manifest_reasons::APPLIED_MANIFEST_SSA_IGNORE_FIELD_ERROR,
                        message,
                    })?;
                let hash = spec_hash(&required);
                match &live_json {
                    Some(l) if spec_hash_of(l) == Some(hash.as_str()) => {
                        if has_owner_references(desired, l) {
                            return Ok(Applied {
                                live: live_json,
                                wrote: false,
                            });
                        }
                        needs("patch").await?;
                        return add_owners(&api, &name, desired, l).await;
                    }
                    // An existing object gets the manifest without the OnSpokePresent fields;
                    // a new one all of it.
                    Some(_) => body = with_spec_hash(required, &hash),
                    None => body = with_spec_hash(desired.clone(), &hash),
                }
            } else if let Some(l) = &live_json
                && !changed
                && already_applied(desired, l)
            {
                return Ok(Applied {
                    live: live_json,
                    wrote: false,
                });
            }
            needs("patch").await?;
            let mut params = PatchParams::apply(&manager);
            params.force = ssa.and_then(|s| s.force).unwrap_or(false);
            let applied = api
                .patch(&name, &params, &Patch::Apply(&body))
                .await
                .map_err(api_error)?;
            Ok(Applied {
                live: serde_json::to_value(applied).ok(),
                wrote: true,
            })
        }
        UpdateStrategyType::Update => match live_json {
            None => {
                needs("create").await?;
                Ok(create(&api, desired).await?)
            }
            Some(l) if !changed && already_applied(desired, &l) => Ok(Applied {
                live: Some(l),
                wrote: false,
            }),
            Some(l) => {
                needs("update").await?;
                let merged = merged_for_update(desired, &l);
                let updated = api
                    .replace(&name, &PostParams::default(), &to_dynamic(&merged)?)
                    .await
                    .map_err(api_error)?;
                Ok(Applied {
                    live: serde_json::to_value(updated).ok(),
                    wrote: true,
                })
            }
        },
    }
}
