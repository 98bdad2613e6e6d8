//! `cluster.open-cluster-management.io`: typed round trips of every example, and the schema
//! defaults the reference names.

mod common;

use common::{assert_roundtrip, schema_at, schema_for, valid_examples_of_group};
use ocm_api::cluster::v1;
use serde_json::json;

#[test]
fn every_example_round_trips_through_its_type() {
    let examples = valid_examples_of_group(ocm_api::cluster::GROUP);
    assert!(!examples.is_empty());
    for ex in &examples {
        match (ex.api_version(), ex.kind()) {
            ("cluster.open-cluster-management.io/v1", "ManagedCluster") => {
                assert_roundtrip::<v1::ManagedCluster>(ex)
            }
            (v, k) => panic!("{}: no typed round trip for {v} {k}", ex.origin),
        }
    }
}

#[test]
fn managed_cluster_schema_defaults() {
    let s = schema_for("cluster.open-cluster-management.io/v1", "ManagedCluster").unwrap();
    assert_eq!(
        schema_at(&s, "spec.leaseDurationSeconds")["default"],
        json!(60)
    );
    assert_eq!(
        schema_at(&s, "spec.taints.[].effect")["enum"],
        json!(["NoSelect", "PreferNoSelect", "NoSelectIfNew"])
    );
}
