//! The AddOnPlacementScores a snapshot holds, indexed for the prioritizers and the CEL
//! `scores` function.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use ocm_api::cluster::v1alpha1::AddOnPlacementScore;

/// AddOnPlacementScores by resource name, aligned with the cluster indices, plus the cluster
/// index by name (shared with the CEL `scores` function).
pub(crate) struct ScoreIndex {
    pub(crate) cluster_index: HashMap<Arc<str>, u32>,
    pub(crate) by_resource: HashMap<String, ResourceScores>,
}

/// The AddOnPlacementScores of one name, one slot per cluster, with their score names
/// interned so that a prioritizer compares integers.
pub(crate) struct ResourceScores {
    /// Score name → id.
    pub(crate) score_ids: HashMap<String, u32>,
    /// By cluster index.
    pub(crate) slots: Vec<Option<ScoreSlot>>,
}

/// One AddOnPlacementScore, digested.
pub(crate) struct ScoreSlot {
    pub(crate) object: Arc<AddOnPlacementScore>,
    pub(crate) valid_until: Option<Timestamp>,
    /// (score id, value), in the object's order.
    pub(crate) items: Vec<(u32, i32)>,
}

impl ScoreIndex {
    /// The score object `resource` of cluster `index`.
    pub(crate) fn get(&self, resource: &str, index: u32) -> Option<&Arc<AddOnPlacementScore>> {
        self.by_resource
            .get(resource)
            .and_then(|r| r.slots.get(index as usize))
            .and_then(Option::as_ref)
            .map(|slot| &slot.object)
    }
}
