//! Scenario tests across crates: an embedded hub plus simulated managed clusters, real processes and real kubectl.
