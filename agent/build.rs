//! Release builds of `ocm-agent` (and the `agent` profile the image ships) pack their relative
//! relocations when the build machine's glibc can load them
//! (`build-support/packed_relocations.rs`): every managed cluster runs this program.

include!("../build-support/packed_relocations.rs");

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../build-support/packed_relocations.rs");
    pack_relative_relocations("ocm-agent");
}
