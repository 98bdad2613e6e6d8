//! Well-known names of the `operator` API group: labels, annotations, finalizers, conditions.
