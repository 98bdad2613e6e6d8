//! Benchmark of the pure scheduler core, in the shapes of upstream's placement benchmark:
//! every placement uses mode Exact with an AddOn score, ResourceAllocatableCPU and Balance
//! (weight 1 each) and `numberOfClusters: 10`; clusters sit in one set bound into the
//! placements' namespace and each has an AddOnPlacementScore `demo` (value 80, valid for
//! 1000 minutes). Every placement already has decisions (10 clusters), so Balance and Steady
//! have data. Prints one row per shape: the time to index the snapshot once, and the mean
//! time to schedule one placement against it.
//!
//! Run with `cargo bench -p ocm-placement`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use ocm_api::cluster::names::labels;
use ocm_api::cluster::v1::{ManagedCluster, ManagedClusterSpec, ManagedClusterStatus};
use ocm_api::cluster::v1alpha1::{
    AddOnPlacementScore, AddOnPlacementScoreItem, AddOnPlacementScoreStatus,
};
use ocm_api::cluster::v1beta1::{
    AddOnScore, ClusterDecision, Placement, PlacementDecision, PlacementDecisionStatus,
    PlacementSpec, PrioritizerConfig, PrioritizerPolicy, ScoreCoordinate, ScoreCoordinateType,
};
use ocm_api::cluster::v1beta2::{
    ManagedClusterSet, ManagedClusterSetBinding, ManagedClusterSetBindingSpec,
};
use ocm_placement::scheduler::{Snapshot, SnapshotInput, schedule};

const NAMESPACE: &str = "benchmark";
const SET: &str = "benchmark";

fn cluster(i: usize, now: Timestamp) -> (Arc<ManagedCluster>, Arc<AddOnPlacementScore>) {
    let name = format!("cluster{i}");
    let mut c = ManagedCluster::new(&name, ManagedClusterSpec::default());
    c.metadata.labels = Some(BTreeMap::from([
        (labels::CLUSTER_SET.to_string(), SET.to_string()),
        ("shard".to_string(), (i % 8).to_string()),
    ]));
    // Allocatable CPU from 1 to 64 cores, spread deterministically.
    let cpu = Quantity(format!("{}", (i * 7919) % 64 + 1));
    let mut status = ManagedClusterStatus::default();
    status.allocatable.insert("cpu".into(), cpu.clone());
    status.capacity.insert("cpu".into(), cpu);
    c.status = Some(status);

    let mut s = AddOnPlacementScore::new("demo", Default::default());
    s.metadata.namespace = Some(name);
    s.status = Some(AddOnPlacementScoreStatus {
        conditions: Vec::new(),
        scores: vec![AddOnPlacementScoreItem {
            name: "demo".into(),
            value: 80,
        }],
        valid_until: now
            .checked_add(SignedDuration::from_mins(1000))
            .ok()
            .map(Time),
    });
    (Arc::new(c), Arc::new(s))
}

fn placement(i: usize) -> Placement {
    variant(i, PlacementSpec::default())
}

/// Placement `i` with upstream's benchmark prioritizers on top of `base`.
fn variant(i: usize, base: PlacementSpec) -> Placement {
    let config = |type_, built_in: &str, add_on| PrioritizerConfig {
        score_coordinate: ScoreCoordinate {
            type_,
            built_in: built_in.to_string(),
            add_on,
        },
        weight: Some(1),
    };
    let mut p = Placement::new(
        &format!("benchmark-{i}"),
        PlacementSpec {
            number_of_clusters: Some(10),
            prioritizer_policy: Some(PrioritizerPolicy {
                mode: Some("Exact".into()),
                configurations: vec![
                    config(
                        ScoreCoordinateType::AddOn,
                        "",
                        Some(AddOnScore {
                            resource_name: "demo".into(),
                            score_name: "demo".into(),
                        }),
                    ),
                    config(ScoreCoordinateType::BuiltIn, "ResourceAllocatableCPU", None),
                    config(ScoreCoordinateType::BuiltIn, "Balance", None),
                ],
            }),
            ..base
        },
    );
    p.metadata.namespace = Some(NAMESPACE.into());
    p
}

/// The existing decisions of placement `i`: 10 clusters.
fn decision(i: usize, clusters: usize) -> Arc<PlacementDecision> {
    let placement = format!("benchmark-{i}");
    let mut d = PlacementDecision::new(&format!("{placement}-decision-1"), Default::default());
    d.metadata = ObjectMeta {
        name: Some(format!("{placement}-decision-1")),
        namespace: Some(NAMESPACE.into()),
        labels: Some(BTreeMap::from([(labels::PLACEMENT.to_string(), placement)])),
        ..ObjectMeta::default()
    };
    d.status = Some(PlacementDecisionStatus {
        decisions: (0..10.min(clusters))
            .map(|k| ClusterDecision {
                cluster_name: format!("cluster{}", (i * 10 + k) % clusters),
                reason: String::new(),
                score: None,
            })
            .collect(),
    });
    Arc::new(d)
}

struct Row {
    clusters: usize,
    placements: usize,
    snapshot: Duration,
    per_placement: Duration,
    selected: usize,
}

fn run(clusters: usize, placements: usize) -> Row {
    run_with(clusters, placements, placement)
}

fn run_with(clusters: usize, placements: usize, make: impl Fn(usize) -> Placement) -> Row {
    let now = Timestamp::now();
    let (cluster_objects, scores): (Vec<_>, Vec<_>) =
        (0..clusters).map(|i| cluster(i, now)).unzip();
    let mut set = ManagedClusterSet::new(SET, Default::default());
    set.metadata.name = Some(SET.into());
    let mut binding = ManagedClusterSetBinding::new(
        SET,
        ManagedClusterSetBindingSpec {
            cluster_set: SET.into(),
        },
    );
    binding.metadata.namespace = Some(NAMESPACE.into());
    let input = SnapshotInput {
        clusters: cluster_objects,
        cluster_sets: vec![Arc::new(set)],
        bindings: vec![Arc::new(binding)],
        scores,
        decisions: (0..placements).map(|i| decision(i, clusters)).collect(),
        now,
    };
    let started = Instant::now();
    let snapshot = Snapshot::new(input);
    let snapshot_time = started.elapsed();

    let placements_list: Vec<Placement> = (0..placements).map(make).collect();
    // Warm up, then repeat the whole set of placements until at least 1 s has passed.
    let mut selected = 0;
    for p in placements_list.iter().take(3) {
        selected = black_box(schedule(p, &snapshot)).selected.len();
    }
    let started = Instant::now();
    let mut runs = 0usize;
    while started.elapsed() < Duration::from_secs(1) || runs == 0 {
        for p in &placements_list {
            black_box(schedule(black_box(p), &snapshot));
        }
        runs += 1;
    }
    let per_placement = started.elapsed() / (runs * placements) as u32;
    Row {
        clusters,
        placements,
        snapshot: snapshot_time,
        per_placement,
        selected,
    }
}

fn spec(json: serde_json::Value) -> PlacementSpec {
    serde_json::from_value(json).unwrap_or_default()
}

fn print(label: &str, row: &Row) {
    println!(
        "{:>9} {:>11} {:>12.2} {:>17.1} {:>9}  {label}",
        row.clusters,
        row.placements,
        row.snapshot.as_secs_f64() * 1e3,
        row.per_placement.as_secs_f64() * 1e6,
        row.selected
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing special. Either way
    // run every shape.
    let shapes = [
        (1, 100),
        (1_000, 1_000),
        (10_000, 1),
        (10_000, 100),
        (10_000, 1_000),
    ];
    println!(
        "{:>9} {:>11} {:>12} {:>17} {:>9}  shape",
        "clusters", "placements", "snapshot ms", "µs per placement", "selected"
    );
    for (clusters, placements) in shapes {
        print("upstream's shape", &run(clusters, placements));
    }
    // The same placement with more machinery, over 10,000 clusters.
    let variants = [
        (
            "+ label predicate (1 in 8 clusters)",
            spec(
                serde_json::json!({"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchExpressions": [{"key": "cluster.open-cluster-management.io/clusterset", "operator": "In", "values": ["benchmark"]}, {"key": "shard", "operator": "In", "values": ["3"]}]}}}]}),
            ),
        ),
        (
            "+ CEL predicate",
            spec(
                serde_json::json!({"predicates": [{"requiredClusterSelector": {"celSelector": {"celExpressions": ["managedCluster.metadata.labels[\"shard\"] == \"3\""]}}}]}),
            ),
        ),
        (
            "+ spread, DoNotSchedule over 8 shards",
            spec(
                serde_json::json!({"spreadPolicy": {"spreadConstraints": [{"topologyKey": "shard", "topologyKeyType": "Label", "whenUnsatisfiable": "DoNotSchedule"}]}}),
            ),
        ),
        (
            "+ 4 decision groups",
            spec(
                serde_json::json!({"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "25%"}}}),
            ),
        ),
    ];
    for (label, base) in variants {
        print(label, &run_with(10_000, 10, |i| variant(i, base.clone())));
    }
}
