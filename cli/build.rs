//! Release builds of the `ocm` executable lay its functions out in the order they run
//! (`symbol-order.txt`, made by `scripts/symbol-order`): the code that a hub, a joined
//! cluster or an agent runs at start and while idle then sits together at the start of the
//! executable's code instead of being spread over all of it, and the kernel, which maps
//! program pages 64 KiB at a time, keeps fewer of them resident (docs/performance.md,
//! Footprint, "Functions laid out in the order they run"). Only for the release
//! profile (and those inheriting from it) on x86_64 Linux, where rustc links with LLD; dev and
//! test builds are left as they are.
//!
//! Release builds also pack their relative relocations when the build machine's glibc can
//! load them (`build-support/packed_relocations.rs`).

use std::path::Path;

include!("../build-support/packed_relocations.rs");

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../build-support/packed_relocations.rs");
    pack_relative_relocations("ocm");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let lld_target = std::env::var("TARGET").is_ok_and(|t| t == "x86_64-unknown-linux-gnu");
    if !(release && lld_target) {
        return;
    }
    let Ok(dir) = std::env::var("CARGO_MANIFEST_DIR") else {
        return;
    };
    // Only here, so that a new order file rebuilds release builds alone.
    println!("cargo:rerun-if-changed=symbol-order.txt");
    let order = Path::new(&dir).join("symbol-order.txt");
    // Symbols of the file that this build does not have (code changed since the profile) are
    // skipped without a warning for each.
    println!(
        "cargo:rustc-link-arg-bin=ocm=-Wl,--symbol-ordering-file={}",
        order.display()
    );
    println!("cargo:rustc-link-arg-bin=ocm=-Wl,--no-warn-symbol-ordering");
}
