//! The container image `scripts/build-image` writes (`target/oci/ocm.tar`, or `$OCM_IMAGE_ARCHIVE`):
//! a valid OCI image layout whose blobs match their digests, also loadable by `docker load`, a
//! config with the entrypoint, a non-root user and the labels, and one reproducible layer (root
//! owned, mtime 0) holding a static `ocm` that runs and prints the workspace version.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const VERSION: &str = env!("CARGO_PKG_VERSION");
const ENTRYPOINT: &str = "/usr/local/bin/ocm";

fn archive() -> PathBuf {
    let path = match std::env::var_os("OCM_IMAGE_ARCHIVE") {
        Some(path) => PathBuf::from(path),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/oci/ocm.tar"),
    };
    assert!(
        path.is_file(),
        "no image archive at {}: run `scripts/build-image` first (`bash scripts/test` does), \
         or point OCM_IMAGE_ARCHIVE at one",
        path.display()
    );
    path
}

/// Runs a command, asserts that it succeeds, and returns its standard output.
fn run(command: &mut Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn sha256(path: &Path) -> String {
    let out = run(Command::new("sha256sum").arg(path));
    out.split_whitespace().next().unwrap().to_string()
}

/// The path of a blob after checking that its content matches the descriptor's digest and size.
fn blob(layout: &Path, descriptor: &Value) -> PathBuf {
    let digest = descriptor["digest"]
        .as_str()
        .expect("descriptor without digest");
    let hex = digest
        .strip_prefix("sha256:")
        .unwrap_or_else(|| panic!("digest {digest} is not sha256"));
    let path = layout.join("blobs/sha256").join(hex);
    assert!(path.is_file(), "blob {digest} is missing");
    assert_eq!(
        sha256(&path),
        hex,
        "blob {digest} does not match its digest"
    );
    assert_eq!(
        Some(std::fs::metadata(&path).unwrap().len()),
        descriptor["size"].as_u64(),
        "size of blob {digest}"
    );
    path
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap())
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn u16_at(bytes: &[u8], offset: usize) -> usize {
    usize::from(u16::from_le_bytes(
        bytes[offset..offset + 2].try_into().unwrap(),
    ))
}

/// Whether an x86-64 ELF64 executable has a PT_INTERP program header (needs a dynamic loader).
fn has_interpreter(elf: &[u8]) -> bool {
    assert!(
        elf.len() >= 64 && elf.starts_with(b"\x7fELF"),
        "not an ELF file"
    );
    assert_eq!(elf[4], 2, "not a 64-bit ELF file");
    assert_eq!(elf[5], 1, "not a little-endian ELF file");
    assert_eq!(u16_at(elf, 18), 62, "not an x86-64 binary");
    let phoff = usize::try_from(u64::from_le_bytes(elf[32..40].try_into().unwrap())).unwrap();
    let (phentsize, phnum) = (u16_at(elf, 54), u16_at(elf, 56));
    (0..phnum).any(|i| {
        let at = phoff + i * phentsize;
        u32::from_le_bytes(elf[at..at + 4].try_into().unwrap()) == 3
    })
}

#[test]
fn the_image_archive_holds_a_static_ocm_and_ocm_agent_running_as_non_root() {
    let archive = archive();
    let dir = tempfile::tempdir().unwrap();
    let layout = dir.path().join("layout");
    std::fs::create_dir(&layout).unwrap();
    run(Command::new("tar")
        .arg("-xf")
        .arg(&archive)
        .arg("-C")
        .arg(&layout));

    // The OCI image layout: index → manifest → config and layer.
    assert_eq!(
        read_json(&layout.join("oci-layout"))["imageLayoutVersion"],
        "1.0.0"
    );
    let index = read_json(&layout.join("index.json"));
    assert_eq!(index["schemaVersion"], 2);
    let manifests = index["manifests"].as_array().unwrap();
    assert_eq!(manifests.len(), 1, "one image in {index}");
    let entry = &manifests[0];
    assert_eq!(
        entry["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    assert_eq!(
        entry["annotations"]["org.opencontainers.image.ref.name"],
        VERSION
    );
    assert_eq!(entry["platform"]["architecture"], "amd64");
    assert_eq!(entry["platform"]["os"], "linux");
    let manifest = read_json(&blob(&layout, entry));
    assert_eq!(manifest["schemaVersion"], 2);
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.oci.image.config.v1+json"
    );
    let config_path = blob(&layout, &manifest["config"]);
    let config = read_json(&config_path);
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "one layer in {manifest}");
    assert_eq!(
        layers[0]["mediaType"],
        "application/vnd.oci.image.layer.v1.tar+gzip"
    );
    let layer_gz = blob(&layout, &layers[0]);

    // What `docker load` reads points at the same blobs.
    let docker = read_json(&layout.join("manifest.json"));
    let docker = &docker.as_array().expect("manifest.json is a list")[0];
    let blob_name = |path: &Path| {
        format!(
            "blobs/sha256/{}",
            path.file_name().unwrap().to_str().unwrap()
        )
    };
    assert_eq!(docker["Config"], blob_name(&config_path));
    assert_eq!(docker["Layers"], serde_json::json!([blob_name(&layer_gz)]));
    assert_eq!(
        docker["RepoTags"],
        serde_json::json!([format!("ocm:{VERSION}")])
    );

    // The config.
    assert_eq!(config["architecture"], "amd64");
    assert_eq!(config["os"], "linux");
    let settings = &config["config"];
    assert_eq!(settings["Entrypoint"], serde_json::json!([ENTRYPOINT]));
    let user = settings["User"].as_str().expect("the image sets a user");
    let (uid, gid) = user.split_once(':').unwrap_or((user, ""));
    let uid: u32 = uid
        .parse()
        .unwrap_or_else(|_| panic!("user {user} is not numeric (runAsNonRoot needs a uid)"));
    assert_ne!(uid, 0, "the image runs as root");
    assert_ne!(gid, "0", "the image runs with group root");
    let labels = &settings["Labels"];
    assert_eq!(labels["org.opencontainers.image.title"], "ocm");
    assert_eq!(labels["org.opencontainers.image.version"], VERSION);
    assert_eq!(
        labels["org.opencontainers.image.licenses"],
        env!("CARGO_PKG_LICENSE")
    );
    assert!(
        labels["org.opencontainers.image.source"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "no source label in {labels}"
    );
    let env = settings["Env"].as_array().unwrap();
    assert!(
        env.iter()
            .any(|e| e.as_str().is_some_and(|e| e.starts_with("PATH="))),
        "no PATH in {env:?}"
    );

    // The layer: its uncompressed digest is the config's diff_id.
    let layer = dir.path().join("layer.tar");
    let status = Command::new("gzip")
        .arg("-dc")
        .arg(&layer_gz)
        .stdout(std::fs::File::create(&layer).unwrap())
        .status()
        .unwrap();
    assert!(status.success(), "gzip -dc {}", layer_gz.display());
    assert_eq!(
        config["rootfs"]["diff_ids"],
        serde_json::json!([format!("sha256:{}", sha256(&layer))])
    );

    // Every entry is owned by root with mtime 0, except the user's home directory.
    let listing = run(Command::new("tar")
        .env("TZ", "UTC")
        .args(["--numeric-owner", "-tvf"])
        .arg(&layer));
    let mut names = Vec::new();
    for line in listing.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [mode, owner, _size, date, time, name] = fields[..] else {
            panic!("unexpected tar listing line: {line}");
        };
        let expected_owner = if name == "home/ocm/" {
            format!("{uid}/{gid}")
        } else {
            "0/0".to_string()
        };
        assert_eq!(owner, expected_owner, "owner of {name}");
        assert_eq!((date, time), ("1970-01-01", "00:00"), "mtime of {name}");
        names.push((name.to_string(), mode.to_string()));
    }
    for (name, mode) in [
        ("usr/local/bin/ocm", "-rwxr-xr-x"),
        ("usr/local/bin/ocm-agent", "-rwxr-xr-x"),
        ("etc/ssl/certs/ca-certificates.crt", "-rw-r--r--"),
        ("etc/passwd", "-rw-r--r--"),
        ("etc/group", "-rw-r--r--"),
        ("etc/nsswitch.conf", "-rw-r--r--"),
        ("tmp/", "drwxrwxrwt"),
        ("home/ocm/", "drwxr-xr-x"),
    ] {
        assert!(
            names.contains(&(name.to_string(), mode.to_string())),
            "no {name} with mode {mode} in the layer:\n{listing}"
        );
    }

    let rootfs = dir.path().join("rootfs");
    std::fs::create_dir(&rootfs).unwrap();
    run(Command::new("tar")
        .arg("-xf")
        .arg(&layer)
        .arg("-C")
        .arg(&rootfs));
    let passwd = std::fs::read_to_string(rootfs.join("etc/passwd")).unwrap();
    assert!(
        passwd
            .lines()
            .any(|l| l.split(':').nth(2) == Some(&uid.to_string())),
        "the image's user {uid} is not in /etc/passwd:\n{passwd}"
    );
    let certs = std::fs::read_to_string(rootfs.join("etc/ssl/certs/ca-certificates.crt")).unwrap();
    assert!(
        certs.contains("-----BEGIN CERTIFICATE-----"),
        "empty CA bundle"
    );

    // The binary is static and is the workspace's `ocm`.
    let ocm = rootfs.join(ENTRYPOINT.trim_start_matches('/'));
    assert!(
        !has_interpreter(&std::fs::read(&ocm).unwrap()),
        "the image's ocm is dynamically linked (it has PT_INTERP); the image has no libc"
    );
    let version = run(Command::new(&ocm).arg("--version"));
    assert_eq!(version.trim(), format!("ocm {VERSION}"));

    // Beside it, the agents alone: static too, the workspace's `ocm-agent`, and smaller.
    let agent = rootfs.join("usr/local/bin/ocm-agent");
    let agent_bytes = std::fs::read(&agent).unwrap();
    assert!(
        !has_interpreter(&agent_bytes),
        "the image's ocm-agent is dynamically linked (it has PT_INTERP); the image has no libc"
    );
    let version = run(Command::new(&agent).arg("--version"));
    assert_eq!(version.trim(), format!("ocm-agent {VERSION}"));
    let ocm_size = std::fs::metadata(&ocm).unwrap().len();
    assert!(
        (agent_bytes.len() as u64) < ocm_size,
        "ocm-agent ({} bytes) is not smaller than ocm ({ocm_size} bytes)",
        agent_bytes.len()
    );
}

/// `docker build` sees only what the Dockerfile copies: every workspace member's directory must
/// be there, every directory a member's build script includes from, and the workspace's cargo
/// configuration (`.cargo`) when there is one, or the image build fails or builds something
/// else than `cargo build` here.
#[test]
fn the_dockerfile_copies_every_workspace_member() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dockerfile = std::fs::read_to_string(root.join("Dockerfile")).unwrap();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members = manifest
        .split("members = [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("a members list in Cargo.toml");
    let copied: Vec<&str> = dockerfile
        .lines()
        .filter_map(|line| line.strip_prefix("COPY "))
        .filter_map(|rest| rest.split_whitespace().next())
        .collect();
    if root.join(".cargo").exists() {
        assert!(
            copied.contains(&".cargo"),
            "the Dockerfile does not copy `.cargo` (the workspace's cargo configuration)"
        );
    }
    for member in members.split(',').map(|m| m.trim().trim_matches('"')) {
        if member.is_empty() {
            continue;
        }
        let top = member.split('/').next().unwrap_or(member);
        assert!(
            copied.contains(&top),
            "the Dockerfile does not copy `{top}` (workspace member `{member}`)"
        );
        let build_script = std::fs::read_to_string(root.join(member).join("build.rs"));
        for included in build_script
            .iter()
            .flat_map(|s| s.split("include!(\"../").skip(1))
        {
            let dir = included.split('/').next().unwrap_or_default();
            assert!(
                copied.contains(&dir),
                "the Dockerfile does not copy `{dir}` (included by {member}/build.rs)"
            );
        }
    }
}
