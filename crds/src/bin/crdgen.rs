//! Writes the generated CRD manifests to `crds/manifests/{hub,klusterlet,about,multicluster}/`, one file per
//! CRD, removing files of CRDs that no longer exist, and each target's CRDs as one JSON array
//! to `crds/manifests/<target>.json` (what the hub and simulated clusters install).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ocm_api::crds::{Target, file_name, for_target, json_file_name, to_json_array, to_yaml};

fn main() -> ExitCode {
    let root = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests"));
    match write_all(&root) {
        Ok(n) => {
            println!("wrote {n} CRD manifests under {}", root.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("crdgen: {e}");
            ExitCode::FAILURE
        }
    }
}

fn write_all(root: &Path) -> Result<usize, Box<dyn std::error::Error>> {
    let mut written = 0;
    for target in Target::ALL {
        let dir = root.join(target.dir_name());
        std::fs::create_dir_all(&dir)?;
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.extension().is_some_and(|x| x == "yaml") {
                std::fs::remove_file(&path)?;
            }
        }
        let crds = for_target(target);
        for crd in &crds {
            std::fs::write(dir.join(file_name(crd)), to_yaml(crd)?)?;
            written += 1;
        }
        std::fs::write(root.join(json_file_name(target)), to_json_array(&crds)?)?;
    }
    Ok(written)
}
