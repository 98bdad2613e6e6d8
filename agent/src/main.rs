//! `ocm-agent`: the agents of a managed cluster alone, a much smaller program than `ocm`
//! (which serves the same commands as `ocm agent` and `ocm work agent`). Thin: everything is
//! in the library.

fn main() -> std::process::ExitCode {
    ocm_agent::main()
}
