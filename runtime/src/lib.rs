//! What every ocm-rs controller process needs: clients from kubeconfigs, reconciler runner, leader election, metrics and health endpoints, tracing, shutdown.
