//! Command-line front end. Only this module and `main` use `anyhow`.

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "kernel-lsp", version, about = "Language server and checker for Triton GPU kernels")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The transport arguments LSP clients pass to a server they spawn
/// (vscode-languageclient appends `--stdio` and `--clientProcessId=N`).
#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// Speak LSP on stdin/stdout (the only transport; accepted because clients pass it).
    #[arg(long)]
    stdio: bool,
    /// Exit when the process with this id (the editor) is gone.
    #[arg(long = "clientProcessId", value_name = "PID")]
    client_process_id: Option<u32>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Speak the Language Server Protocol on stdin/stdout.
    Serve(ServeArgs),
    /// Check files or directories (the rules: see `check_about`).
    Check(crate::check_cmd::CheckArgs),
    /// List the rules, or explain one (`kernel-lsp rules KL001`).
    Rules {
        code: Option<String>,
        #[arg(long, value_enum, default_value_t = crate::check_cmd::Format::Text)]
        format: crate::check_cmd::Format,
    },
    Bench(kernel_lsp::bench::cli::BenchArgs),
    History(kernel_lsp::bench::cli::HistoryArgs),
    Rewrite(kernel_lsp::llm::cli::RewriteArgs),
    Timeline(kernel_lsp::llm::cli::TimelineArgs),
}

/// `check`'s one line of help, with the rule ranges read from the registry.
fn check_about() -> String {
    let [mistakes, hygiene] = kernel_lsp::rules::code_ranges("-");
    format!("Check files or directories for the {mistakes} mistakes and the {hygiene} KernelBench hygiene rules")
}

pub fn main() -> i32 {
    let command = Cli::command().mut_subcommand("check", |c| c.about(check_about()));
    let cli = match command.try_get_matches().and_then(|m| Cli::from_arg_matches(&m)) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    if !matches!(cli.command, Command::Serve(_)) {
        // A command-line tool piped into `head` ends quietly when the reader
        // goes, as ruff and the coreutils do, instead of panicking on EPIPE.
        // SAFETY: restoring the default disposition of one signal at start-up.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    match cli.command {
        Command::Serve(ServeArgs { stdio: _, client_process_id }) => kernel_lsp::lsp::serve_stdio(client_process_id),
        Command::Bench(args) => kernel_lsp::bench::cli::run_cli(args),
        Command::History(args) => kernel_lsp::bench::cli::history_cli(args),
        Command::Rewrite(args) => kernel_lsp::llm::cli::run_cli(args),
        Command::Timeline(args) => kernel_lsp::llm::cli::timeline_cli(args),
        Command::Check(args) => crate::check_cmd::run(args),
        Command::Rules { code, format } => crate::check_cmd::rules_cmd(code, format),
    }
}
