//! Well-known names of the `work` API group: labels, annotations, finalizers, conditions.
