//! The checked-in CRD manifests are exactly what `crdgen` generates today.

use ocm_api::crds::{
    Target, file_name, for_target, json_file_name, stored, to_json_array, to_yaml,
};

#[test]
fn checked_in_manifests_match_generated() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests");
    for target in Target::ALL {
        let dir = root.join(target.dir_name());
        let crds = for_target(target);
        assert!(!crds.is_empty(), "no CRDs for {target:?}");
        let mut expected_files: Vec<String> = crds.iter().map(file_name).collect();
        expected_files.sort();
        let mut present: Vec<String> = std::fs::read_dir(&dir)
            .map(|rd| {
                rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        present.sort();
        assert_eq!(
            present,
            expected_files,
            "files in {} differ from the generated set; run `cargo run -p ocm-api --bin crdgen`",
            dir.display()
        );
        let json = root.join(json_file_name(target));
        let on_disk = std::fs::read_to_string(&json).unwrap_or_default();
        assert!(
            on_disk == to_json_array(&crds).unwrap(),
            "{} is stale; run `cargo run -p ocm-api --bin crdgen`",
            json.display()
        );
        assert_eq!(
            stored(target),
            on_disk,
            "the embedded {target:?} CRDs are the file's"
        );
        for crd in &crds {
            let path = dir.join(file_name(crd));
            let on_disk = std::fs::read_to_string(&path).unwrap();
            assert!(
                on_disk == to_yaml(crd).unwrap(),
                "{} is stale; run `cargo run -p ocm-api --bin crdgen`",
                path.display()
            );
        }
    }
}
