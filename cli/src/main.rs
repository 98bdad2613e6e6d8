//! The `ocm` command: one binary to run and operate an Open Cluster Management hub, its
//! agents and the embedded API server. Thin: everything is in the library.

#[global_allocator]
static GLOBAL: ocm::Allocator = ocm::ALLOCATOR;

fn main() -> std::process::ExitCode {
    ocm::purge_freed_memory_promptly();
    ocm::commands::main()
}
