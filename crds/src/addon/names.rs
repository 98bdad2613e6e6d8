//! Well-known names of the `addon` API group: labels, annotations, finalizers, conditions.
