//! `kernel-lsp rewrite` and `kernel-lsp timeline`.
//!
//! `rewrite` exit codes: 0 a verified rewrite was found (and written with
//! `--apply`), 1 none qualified, 2 could not run (LLM unreachable or failing,
//! benchmark broken, bad arguments). The file is written only with `--apply`
//! and a winner, and only if it did not change during the run.

use std::path::PathBuf;

use super::{timeline, Action, RewriteOutcome, RewriteRequest, StageEvent};
use crate::bench::history;
use crate::config::Settings;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// Ask the LLM for a rewrite, check every answer, and show the best verified one.
#[derive(clap::Args, Debug)]
pub struct RewriteArgs {
    /// The candidate file (defining `class ModelNew`).
    pub file: PathBuf,
    #[arg(long, value_enum)]
    pub action: Action,
    /// Candidates asked for in parallel (default: `llm.candidates`).
    #[arg(long, value_name = "N")]
    pub candidates: Option<u32>,
    /// Repair attempts per candidate (default: `llm.repairs`).
    #[arg(long, value_name = "R")]
    pub repairs: Option<u32>,
    /// Write the winning rewrite to FILE.
    #[arg(long)]
    pub apply: bool,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Python interpreter with torch and triton (default: the `python` setting, $VIRTUAL_ENV, python3).
    #[arg(long, value_name = "PATH")]
    pub python: Option<String>,
    /// Seconds for one LLM call (default: `llm.timeout`); the stream may stall for half of it.
    #[arg(long, value_name = "S")]
    pub timeout: Option<f64>,
    /// The reference file (default: found as `kernel-lsp bench` finds it).
    #[arg(long)]
    pub reference: Option<PathBuf>,
    /// Override a module-level constant in the benchmark runs, e.g. `--set seq_len=4`.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = crate::bench::cli::parse_override)]
    pub set: Vec<(String, String)>,
    /// Verify on the Triton CPU interpreter (correctness only) even with a GPU.
    #[arg(long)]
    pub cpu: bool,
    /// Seconds per benchmark run (default: `bench.timeout`).
    #[arg(long, value_name = "S")]
    pub bench_timeout: Option<f64>,
}

/// Show the LLM rewrite timeline kept in `.kernel-lsp/timeline.jsonl`.
#[derive(clap::Args, Debug)]
pub struct TimelineArgs {
    /// A file: its rewrites only. Without it, every file of the project around the current directory.
    pub file: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

fn init_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("KERNEL_LSP_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("kernel_lsp=warn"));
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(false).with_env_filter(filter).try_init();
}

pub fn run_cli(args: RewriteArgs) -> i32 {
    init_logs();
    let settings = match Settings::discover(&args.file) {
        Ok((s, _)) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let original = match std::fs::read(&args.file) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", args.file.display());
            return 2;
        }
    };
    let Ok(text) = String::from_utf8(original.clone()) else {
        eprintln!("error: {} is not UTF-8 text", args.file.display());
        return 2;
    };
    let mut req = RewriteRequest::new(args.file.clone(), args.action, settings);
    req.text = Some(text);
    req.candidates = args.candidates;
    req.repairs = args.repairs;
    req.llm_timeout = args.timeout;
    req.python = args.python;
    req.reference = args.reference;
    req.overrides = args.set;
    req.cpu = args.cpu;
    req.bench_timeout = args.bench_timeout;
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return 2;
        }
    };
    let json = args.format == Format::Json;
    let progress = move |ev: StageEvent| {
        if json {
            return;
        }
        let r = &ev.record;
        let who = match (r.candidate, r.attempt) {
            (Some(c), Some(a)) => format!("candidate {c}, try {}", a + 1),
            _ => "current file".to_string(),
        };
        if ev.finished {
            let problem = if r.problem.is_empty() { String::new() } else { format!(" — {}", r.problem) };
            eprintln!("  {:<10} {who}: {} ({:.1} s){problem}", r.stage, r.score, r.latency_ms as f64 / 1000.0);
        } else {
            eprintln!("  {:<10} {who}…", r.stage);
        }
    };
    // Ctrl-C or SIGTERM mid-rewrite: the sandbox's directory goes, and its
    // processes die with this one.
    let run = async {
        crate::bench::sandbox::exit_cleanly_on_signals();
        super::rewrite(req, progress).await
    };
    let outcome = match runtime.block_on(run) {
        Ok(o) => o,
        Err(e) => {
            if json {
                println!("{}", serde_json::json!({ "error": e.to_string() }));
            }
            eprintln!("error: {e}");
            return 2;
        }
    };
    if json {
        match serde_json::to_string_pretty(&outcome) {
            Ok(t) => println!("{t}"),
            Err(e) => {
                eprintln!("error: {e}");
                return 2;
            }
        }
    } else {
        print!("{}", render_text(&outcome));
    }
    let Some(new_text) = &outcome.new_text else {
        return 1;
    };
    if args.apply {
        match std::fs::read(&args.file) {
            Ok(now) if now == original => {}
            _ => {
                eprintln!("error: {} changed during the rewrite; not applied", args.file.display());
                return 2;
            }
        }
        let abs = std::path::absolute(&args.file).unwrap_or_else(|_| args.file.clone());
        let root = crate::bench::history::project_root(&abs);
        let backup = match crate::files::keep_backup(&root, &abs, &original) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("error: cannot keep the previous text under {}: {e}; not applied", root.display());
                return 2;
            }
        };
        if let Err(e) = crate::files::write_atomically(&abs, new_text.as_bytes()) {
            eprintln!("error: cannot write {}: {e}; the file is unchanged", args.file.display());
            return 2;
        }
        eprintln!("applied to {}; the previous text is in {}", args.file.display(), backup.display());
    }
    0
}

/// The run's timeline, each candidate's outcome, the title and the diff.
pub(crate) fn render_text(o: &RewriteOutcome) -> String {
    let mut out = timeline::render_table(&o.timeline);
    out.push('\n');
    for c in &o.candidates {
        let status =
            serde_json::to_value(c.status).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let problem = c.problem.as_deref().map(|p| format!(": {p}")).unwrap_or_default();
        let tokens = c.tokens.prompt_tokens + c.tokens.completion_tokens;
        out.push_str(&format!(
            "candidate {} — {status} after {} answer(s), {tokens} tokens{problem}\n",
            c.index, c.attempts
        ));
    }
    out.push_str(&format!("\n{}\n", o.title));
    if let Some(diff) = &o.diff {
        out.push('\n');
        out.push_str(diff);
    }
    out
}

pub fn timeline_cli(args: TimelineArgs) -> i32 {
    let (root, file) = match history::root_and_file(args.file.as_deref()) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let records = match timeline::read(&root) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", timeline::timeline_path(&root).display());
            return 2;
        }
    };
    let records: Vec<_> = records.into_iter().filter(|r| file.as_ref().is_none_or(|f| &r.file == f)).collect();
    if args.format == Format::Json {
        return match serde_json::to_string_pretty(&records) {
            Ok(t) => {
                println!("{t}");
                0
            }
            Err(e) => {
                eprintln!("error: {e}");
                2
            }
        };
    }
    if records.is_empty() {
        println!("no rewrites recorded in {}", timeline::timeline_path(&root).display());
        return 0;
    }
    print!("{}", timeline::render_table(&records));
    0
}
