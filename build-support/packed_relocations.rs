// Shared by the build scripts of `ocm` and `ocm-agent` (`include!`d, so no crate of its own).
//
// Packed relative relocations (lld's `-z pack-relative-relocs`, DT_RELR): a position-independent
// executable carries one 24-byte record for every pointer the loader must move (114,000 in
// `ocm`, 2.8 MiB), read once at start and then kept resident with the program's pages; packed,
// they take 31 KiB. The loader of glibc 2.36 and later applies them, and an executable that has
// them refuses to start under an older one (it needs the version `GLIBC_ABI_DT_RELR`), so they
// are packed only when the glibc this build links against is 2.36 or later — then the machine
// that builds can run what it built. Set `OCM_PORTABLE_RELOCATIONS=1` to build a release that
// must also run on an older glibc than the build machine's.

/// Whether to link `bin` with packed relative relocations, and if so says so to cargo.
fn pack_relative_relocations(bin: &str) {
    println!("cargo:rerun-if-env-changed=OCM_PORTABLE_RELOCATIONS");
    let env = |name: &str| std::env::var(name).unwrap_or_default();
    let native = env("TARGET") == env("HOST") && env("TARGET") == "x86_64-unknown-linux-gnu";
    if !native || env("PROFILE") != "release" || !env("OCM_PORTABLE_RELOCATIONS").is_empty() {
        return;
    }
    if glibc_at_least((2, 36)) {
        println!("cargo:rustc-link-arg-bin={bin}=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether this machine's glibc (`getconf GNU_LIBC_VERSION`: `glibc 2.36`) is `wanted` or later.
fn glibc_at_least(wanted: (u32, u32)) -> bool {
    let Ok(out) = std::process::Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
    else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut numbers = text
        .trim()
        .strip_prefix("glibc ")
        .unwrap_or_default()
        .split('.')
        .map(|n| n.parse::<u32>().ok());
    match (numbers.next().flatten(), numbers.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= wanted,
        _ => false,
    }
}
