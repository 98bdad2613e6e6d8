//! Well-known names of the `cluster` API group: labels, annotations, finalizers, conditions.
