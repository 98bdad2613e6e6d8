//! Every example object is accepted by its CRD's schema, every invalid example is rejected,
//! and every served kind and version has at least one of each.

use crate::common;

use std::collections::BTreeSet;

use common::{all_crds, load, validate};

#[test]
fn valid_examples_are_accepted() {
    let examples = load("valid");
    assert!(!examples.is_empty());
    let mut failures = Vec::new();
    for ex in &examples {
        if let Err(errors) = validate(ex) {
            failures.push(format!("{}: {}", ex.origin, errors.join("; ")));
        }
    }
    assert!(
        failures.is_empty(),
        "valid examples rejected:\n{}",
        failures.join("\n")
    );
}

#[test]
fn invalid_examples_are_rejected() {
    let examples = load("invalid");
    assert!(!examples.is_empty());
    let accepted: Vec<&str> = examples
        .iter()
        .filter(|ex| validate(ex).is_ok())
        .map(|ex| ex.origin.as_str())
        .collect();
    assert!(
        accepted.is_empty(),
        "invalid examples accepted: {accepted:?}"
    );
}

fn served_kinds() -> BTreeSet<(String, String)> {
    all_crds()
        .iter()
        .flat_map(|crd| {
            crd.spec.versions.iter().filter(|v| v.served).map(move |v| {
                (
                    format!("{}/{}", crd.spec.group, v.name),
                    crd.spec.names.kind.clone(),
                )
            })
        })
        .collect()
}

fn kinds_in(sub: &str) -> BTreeSet<(String, String)> {
    load(sub)
        .iter()
        .map(|e| (e.api_version().to_string(), e.kind().to_string()))
        .collect()
}

#[test]
fn every_served_version_has_valid_and_invalid_examples() {
    let served = served_kinds();
    let valid = kinds_in("valid");
    let invalid = kinds_in("invalid");
    let missing_valid: Vec<_> = served.difference(&valid).collect();
    let missing_invalid: Vec<_> = served.difference(&invalid).collect();
    assert!(
        missing_valid.is_empty(),
        "no valid example for {missing_valid:?}"
    );
    assert!(
        missing_invalid.is_empty(),
        "no invalid example for {missing_invalid:?}"
    );
}
