//! The `kernel-lsp` binary: serve | check | bench | rewrite | rules | history.
//!
//! Exit codes follow ruff: 0 clean, 1 findings (or an incorrect candidate),
//! 2 usage or I/O errors (or a benchmark that could not run).

mod check_cmd;
mod cli;
mod compile_cmd;

fn main() {
    std::process::exit(cli::main());
}
