//! A logical cluster's first objects: what kube-apiserver and kube-controller-manager leave in
//! a new cluster before anyone writes to it.

use serde_json::{Value, json};

use crate::control::ServerAccess;
use crate::state::SYSTEM_NAMESPACES;
use ocm_apiserver_status::ApiError;
use ocm_apiserver_storage::{Bucket, ObjectKey, StorageError};

/// Creates logical cluster `cluster` if it does not exist yet: its system namespaces, kube's
/// bootstrap RBAC policy, the system PriorityClasses, the objects every namespace has and the
/// API Priority and Fairness configuration.
pub(crate) async fn ensure_cluster(server: &ServerAccess, cluster: &str) -> Result<(), ApiError> {
    if server.cluster_known(cluster) {
        return Ok(());
    }
    let bucket = Bucket::new(cluster, "/namespaces");
    for ns in SYSTEM_NAMESPACES {
        let key = ObjectKey::new(bucket.clone(), "", ns);
        if server.get(&key).is_some() {
            continue;
        }
        let object = json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": ns,
                "uid": uuid::Uuid::new_v4().to_string(),
                "creationTimestamp": crate::meta::now(),
                "labels": {"kubernetes.io/metadata.name": ns},
            },
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        });
        let gr = ocm_apiserver_status::Gr {
            group: "",
            resource: "namespaces",
        };
        create_unless_stored(server, key, object, gr).await?;
    }
    create_default_rbac(server, cluster).await?;
    create_system_priority_classes(server, cluster).await?;
    for ns in SYSTEM_NAMESPACES {
        // What is not made now, the publisher makes once it runs.
        super::publish(server, cluster, ns).await;
    }
    super::bootstrap_flowcontrol(server, cluster).await;
    server.mark_cluster_known(cluster);
    Ok(())
}

/// Creates the default RBAC objects (kube's bootstrap policy) that are missing.
async fn create_default_rbac(server: &ServerAccess, cluster: &str) -> Result<(), ApiError> {
    // Aggregated roles are stored with their rules filled, as the aggregation controller
    // would leave them, so a fresh cluster is quiet.
    let aggregated = ocm_apiserver_rbac::Policy::bootstrap();
    for mut object in ocm_apiserver_rbac::bootstrap::default_objects() {
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind == "ClusterRole"
            && object.get("aggregationRule").is_some()
            && let Some(role) = aggregated.cluster_role(crate::meta::meta_str(&object, "name"))
            && let Ok(rules) = serde_json::to_value(role.rules.clone().unwrap_or_default())
        {
            object["rules"] = rules;
        }
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
        let plural = match kind {
            "ClusterRole" => "clusterroles",
            "ClusterRoleBinding" => "clusterrolebindings",
            "Role" => "roles",
            _ => "rolebindings",
        };
        let name = crate::meta::meta_str(&object, "name").to_owned();
        let namespace = crate::meta::meta_str(&object, "namespace").to_owned();
        let bucket = Bucket::new(
            cluster,
            &format!("{}/{plural}", ocm_apiserver_rbac::RBAC_GROUP),
        );
        let key = ObjectKey::new(bucket, &namespace, &name);
        if server.get(&key).is_some() {
            continue;
        }
        born(&mut object);
        let gr = ocm_apiserver_status::Gr {
            group: ocm_apiserver_rbac::RBAC_GROUP,
            resource: plural,
        };
        create_unless_stored(server, key, object, gr).await?;
    }
    Ok(())
}

/// Creates kube's system PriorityClasses that are missing.
async fn create_system_priority_classes(
    server: &ServerAccess,
    cluster: &str,
) -> Result<(), ApiError> {
    let bucket = Bucket::new(cluster, "scheduling.k8s.io/priorityclasses");
    for mut object in crate::kinds::system_priority_classes() {
        let name = crate::meta::meta_str(&object, "name").to_owned();
        let key = ObjectKey::new(bucket.clone(), "", &name);
        if server.get(&key).is_some() {
            continue;
        }
        born(&mut object);
        let gr = ocm_apiserver_status::Gr {
            group: "scheduling.k8s.io",
            resource: "priorityclasses",
        };
        create_unless_stored(server, key, object, gr).await?;
    }
    Ok(())
}

/// Gives an object made with the cluster its uid and creation time.
fn born(object: &mut Value) {
    crate::meta::set_meta(object, "uid", Some(json!(uuid::Uuid::new_v4().to_string())));
    crate::meta::set_meta(object, "creationTimestamp", Some(json!(crate::meta::now())));
}

/// Stores `object` at `key` unless an object is there already (made meanwhile by another
/// request for the same new cluster).
async fn create_unless_stored(
    server: &ServerAccess,
    key: ObjectKey,
    object: Value,
    gr: ocm_apiserver_status::Gr<'_>,
) -> Result<(), ApiError> {
    let name = key.name.clone();
    match server.create_stored(key, object).await {
        Ok(_) | Err(StorageError::AlreadyExists) => Ok(()),
        Err(err) => Err(ApiError::from_storage(err, gr, &name)),
    }
}
