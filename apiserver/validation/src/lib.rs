//! Object metadata validation as kube-apiserver does it: names, labels, annotations,
//! finalizers, owner references, managed fields and the immutable fields of an update; plus
//! the keys and immutability of ConfigMap and Secret data.
//!
//! Every check returns a list of [`Cause`]s: the `details.causes` entries of a 422 `Invalid`
//! Status, with kube-apiserver's message texts (Kubernetes 1.33 wording). The same type is used
//! by the API server's custom-resource schema validation and by its selectors for structured
//! label selectors. The validation of particular kinds that needs more of the server
//! (FlowSchemas, PriorityLevelConfigurations) stays in the server.
//!
//! All functions are pure: no I/O, no clock, no randomness.

mod cause;
mod config_data;
mod meta;
mod names;

pub use cause::{BadValue, Cause, CauseType, invalid_message};
pub use config_data::{
    validate_config_map, validate_config_map_update, validate_secret, validate_secret_update,
};
pub use meta::{
    MetaDecodeError, coerce_object_meta, finalizer_warnings, validate_object_meta,
    validate_object_meta_update,
};
pub use names::{
    GENERATE_NAME_ALPHABET, GENERATE_NAME_SUFFIX_LEN, NameRule, generate_name, is_dns1035_label,
    is_dns1123_label, is_dns1123_subdomain, is_label_value, is_path_segment_name,
    is_qualified_name, name_rule_for, validate_label_key, validate_label_value, validate_labels,
};

pub use cause::{child, index, key};
pub use cause::{go_float, go_json, go_quote};
pub use meta::validate_meta_at;
pub use names::{
    dns1035_label_errors, dns1123_label_errors, dns1123_subdomain_errors, path_segment_name_errors,
    qualified_name_errors,
};
