//! The klusterlet's self-report of where its agents run (`spec.deployOption.reportHostingCluster:
//! Enable`): the ClusterClaim `hosting-cluster.open-cluster-management.io` on the managed
//! cluster, naming `spec.clusterName`, or in the Hosted modes
//! `spec.deployOption.hosted.managementClusterName`. The registration agent reports it to the
//! hub, which refuses hosted addons placed anywhere else — pure.

use ocm_api::cluster::names::claims::HOSTING_CLUSTER;
use ocm_api::operator::v1::Klusterlet;
use serde_json::{Value, json};

use super::render::Mode;

/// The claim to apply on the managed cluster: `None` when reporting is off; `Err` when it is
/// on but the name to report is not set.
pub fn hosting_claim(klusterlet: &Klusterlet) -> Result<Option<Value>, String> {
    let option = klusterlet.spec.deploy_option.as_ref();
    if option.and_then(|o| o.report_hosting_cluster.as_deref()) != Some("Enable") {
        return Ok(None);
    }
    let value = if Mode::of(klusterlet).hosted() {
        option
            .and_then(|o| o.hosted.as_ref())
            .map(|h| h.management_cluster_name.clone())
            .filter(|n| !n.is_empty())
            .ok_or("reportHostingCluster needs deployOption.hosted.managementClusterName in the Hosted modes")?
    } else {
        Some(klusterlet.spec.cluster_name.clone())
            .filter(|n| !n.is_empty())
            .ok_or("reportHostingCluster needs spec.clusterName")?
    };
    Ok(Some(json!({
        "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
        "kind": "ClusterClaim",
        "metadata": {"name": HOSTING_CLUSTER},
        "spec": {"value": value},
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn klusterlet(spec: Value) -> Klusterlet {
        serde_json::from_value(
            json!({"apiVersion": "operator.open-cluster-management.io/v1",
            "kind": "Klusterlet", "metadata": {"name": "klusterlet"}, "spec": spec}),
        )
        .unwrap()
    }

    #[test]
    fn reports_where_the_agents_run() {
        let off = klusterlet(json!({"clusterName": "c1"}));
        assert_eq!(hosting_claim(&off), Ok(None));
        let own = klusterlet(json!({"clusterName": "c1",
            "deployOption": {"mode": "Default", "reportHostingCluster": "Enable"}}));
        assert_eq!(hosting_claim(&own).unwrap().unwrap()["spec"]["value"], "c1");
        let hosted = klusterlet(
            json!({"clusterName": "c1", "deployOption": {"mode": "Hosted",
            "reportHostingCluster": "Enable", "hosted": {"managementClusterName": "h"}}}),
        );
        let claim = hosting_claim(&hosted).unwrap().unwrap();
        assert_eq!(claim["metadata"]["name"], HOSTING_CLUSTER);
        assert_eq!(claim["spec"]["value"], "h");
        let missing = klusterlet(json!({"clusterName": "c1",
            "deployOption": {"mode": "Hosted", "reportHostingCluster": "Enable"}}));
        assert!(
            hosting_claim(&missing)
                .unwrap_err()
                .contains("managementClusterName")
        );
    }
}
