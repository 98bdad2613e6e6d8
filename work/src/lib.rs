//! Work: the agent that applies ManifestWork to its managed cluster, and the hub's ManifestWorkReplicaSet fan-out.
