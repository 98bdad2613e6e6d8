//! The `ocm` command.
fn main() {}
