//! Object validation as kube-apiserver does it: the kind-independent checks (names, labels,
//! object metadata, ConfigMap and Secret data, the [`Cause`] lists of a 422 Status) are the
//! `ocm-apiserver-validation` crate, re-exported here; the validation of the flow-control kinds,
//! which needs the server's own [`crate::flowcontrol`] defaults, is here.

mod flowcontrol;

pub use flowcontrol::{validate_flow_schema, validate_flowcontrol_status, validate_priority_level};
pub(crate) use ocm_apiserver_validation::*;
