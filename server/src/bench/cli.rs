//! `kernel-lsp bench` and `kernel-lsp history`: the benchmark as a table or
//! one JSON object, and a file's timeline of scores.
//!
//! Exit codes: 0 ran and correct, 1 ran and incorrect, 2 could not run.

use std::path::{Path, PathBuf};

use super::{history, BenchErrorInfo, BenchRequest, BenchResult};
use crate::config::{Precision, Settings, Tolerance};
use crate::diagnostic::{apply_edits, Applicability, Fix};
use crate::text::{ColumnUnit, LineIndex};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// Benchmark a candidate (`ModelNew`) against its PyTorch reference (`Model`).
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// The candidate file, defining `class ModelNew`.
    #[arg(required_unless_present_any = ["batch", "batch_serve"])]
    pub candidate: Option<PathBuf>,
    /// Judge many pairs: a directory of candidates (each finds its reference as
    /// a single run does), a JSONL file of `{"candidate", "reference", "id"}`,
    /// or KernelBench's generations (`level_L_problem_P_sample_S_kernel.py`;
    /// tasks from --tasks). One sandboxed worker per GPU; results stream to --out.
    #[arg(long, value_name = "INPUT", conflicts_with_all = ["candidate", "fix", "runs"])]
    pub batch: Option<PathBuf>,
    /// With --batch: the results JSONL, one line per pair, appended as each
    /// finishes; pairs it already holds (same content hash) are skipped.
    /// Default: INPUT/kernel-lsp-results.jsonl.
    #[arg(long, value_name = "FILE", requires = "batch")]
    pub out: Option<PathBuf>,
    /// With --batch on KernelBench's generations: the folder of its `levelN/` task files (default: INPUT).
    #[arg(long, value_name = "DIR", requires = "batch")]
    pub tasks: Option<PathBuf>,
    /// With --batch: how many workers (default: one per visible GPU; on the CPU interpreter, one per core).
    #[arg(long, value_name = "N", requires = "batch")]
    pub workers: Option<usize>,
    /// With --batch: run each pair as a Ray task asking for one GPU (one CPU on
    /// the interpreter), on the cluster at ADDRESS (`auto`: the one this host
    /// joined) or, without ADDRESS, a local one started for the run.
    #[arg(long, value_name = "ADDRESS", num_args = 0..=1, default_missing_value = "", requires = "batch")]
    pub ray: Option<String>,
    /// The per-host worker a Ray task talks to: jobs on stdin, results on stdout.
    #[arg(long, hide = true)]
    pub batch_serve: bool,
    /// With --batch-serve: listen on this Unix socket instead (one per host and GPU, shared by Ray's workers).
    #[arg(long, hide = true, value_name = "PATH", requires = "batch_serve")]
    pub serve_socket: Option<PathBuf>,
    /// With --serve-socket: seconds without a connection before the server ends.
    #[arg(long, hide = true, value_name = "SECS", default_value_t = 600)]
    pub serve_idle: u64,
    /// The reference file, defining `class Model`; found by the rules in the README ("Finding the reference") when omitted.
    #[arg(long)]
    pub reference: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Seconds before the run is killed (default: the `bench.timeout` setting, 300).
    #[arg(long, value_name = "S")]
    pub timeout: Option<f64>,
    /// Python interpreter with torch and triton (default: the `python` setting, $VIRTUAL_ENV, python3).
    #[arg(long, value_name = "PATH")]
    pub python: Option<String>,
    /// Override a module-level constant in both files, e.g. `--set SEQ=8` for a CPU-sized run.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = parse_override)]
    pub set: Vec<(String, String)>,
    /// Run under Triton's interpreter on the CPU (correctness only) even with a GPU.
    #[arg(long)]
    pub cpu: bool,
    /// Check correctness on the CPU interpreter at reduced sizes: the task's size
    /// constants (lowercase `name = <int>` at the top of the reference) of 16 and
    /// above become 16, of 3 to 15 become 2 (names given with --set are kept).
    /// Seconds instead of minutes on a laptop; the result lists each size.
    #[arg(long)]
    pub small: bool,
    /// On the CPU interpreter, run at the task's sizes even where they are too
    /// large for it (over 64 Mi input elements, or more memory than is free),
    /// which is otherwise refused before anything is allocated.
    #[arg(long, conflicts_with = "small")]
    pub full_size: bool,
    /// The tolerance that decides "correct": `kernelbench` (KernelBench main's for
    /// the precision: 1e-4 fp32, 1e-2 fp16/bf16), `legacy` (1e-2), or a number
    /// (atol = rtol). Default: the `bench.tolerance` setting, `kernelbench`.
    #[arg(long, value_name = "kernelbench|legacy|FLOAT", value_parser = parse_tolerance)]
    pub tolerance: Option<Tolerance>,
    /// The task precision inputs and models are cast to (default: the `bench.precision` setting, fp32).
    #[arg(long, value_enum)]
    pub precision: Option<Precision>,
    /// Run N times through one warm worker (as the editor does) and report each
    /// run's turnaround; the last run's result is printed.
    #[arg(long, value_name = "N")]
    pub runs: Option<u32>,
    /// After a shared-memory OutOfResources (KL902), apply the shrink to the
    /// candidate and run again. Applies only safe fixes (fewer `num_stages`);
    /// see --unsafe-fixes.
    #[arg(long)]
    pub fix: bool,
    /// With --fix, also apply fixes that need review (smaller BLOCK_* sizes).
    #[arg(long, requires = "fix")]
    pub unsafe_fixes: bool,
}

/// Show the timeline of benchmark runs kept in `.kernel-lsp/history.jsonl`.
#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    /// A candidate file: its runs only. Without it, every file of the project around the current directory.
    pub file: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// `NAME=VALUE` for `--set` (shared with `kernel-lsp rewrite`).
pub(crate) fn parse_override(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
        _ => Err(format!("expected NAME=VALUE, got `{s}`")),
    }
}

/// `--tolerance kernelbench|legacy|FLOAT` (shared with `kernel-lsp rewrite`).
pub(crate) fn parse_tolerance(s: &str) -> Result<Tolerance, String> {
    s.parse()
}

pub fn run_cli(args: BenchArgs) -> i32 {
    if args.batch_serve {
        return super::batch::serve(&args);
    }
    if let Some(input) = args.batch.clone() {
        return super::batch::run_cli(&args, &input);
    }
    let Some(candidate) = args.candidate.clone() else {
        eprintln!("error: no candidate file");
        return 2;
    };
    run_one(args, candidate)
}

fn run_one(args: BenchArgs, candidate: PathBuf) -> i32 {
    let mut settings = match Settings::discover(&candidate) {
        Ok((s, _)) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    if let Some(t) = args.tolerance {
        settings.bench.tolerance = t;
    }
    if let Some(p) = args.precision {
        settings.bench.precision = p;
    }
    let json = args.format == Format::Json;
    let threshold = if args.unsafe_fixes { Applicability::NeedsReview } else { Applicability::Safe };
    let req = BenchRequest {
        candidate: candidate.clone(),
        reference: args.reference,
        settings: settings.clone(),
        python: args.python,
        overrides: args.set,
        cpu: args.cpu,
        timeout: args.timeout,
        record_history: true,
        origin: None,
        sandbox: None,
        reduced: args.small,
        full_size: args.full_size,
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return 2;
        }
    };
    let progress = |message: String| {
        if !json {
            eprintln!("  {message}");
        }
    };
    let run = |req: BenchRequest| {
        let outcome = match args.runs {
            None => runtime.block_on(super::run_cold(req, progress)),
            Some(n) => runtime.block_on(run_warm_times(req, n.max(1), progress)),
        };
        outcome.unwrap_or_else(|e| e.into_result(&candidate))
    };
    let mut result = run(req.clone());
    if args.fix {
        result = fix_and_rerun(&candidate, &settings, threshold, json, result, || run(req.clone()));
    }
    if json {
        match serde_json::to_string_pretty(&result) {
            Ok(text) => println!("{text}"),
            Err(e) => {
                eprintln!("error: {e}");
                return 2;
            }
        }
    } else {
        print!("{}", render_text(&candidate, &result));
    }
    result.exit_code()
}

/// A fix for a failed run, ready to write: what `bench --fix` applies.
#[derive(Debug, Clone)]
pub struct RunFix {
    pub fix: Fix,
    /// The candidate's text with the fix applied.
    pub fixed: String,
    /// One line per edit: `LINE:COL: old -> new`.
    pub changes: Vec<String>,
}

/// The deterministic fix for the error of a run of `candidate`, if there is
/// one: the shrink after a shared-memory `OutOfResources` (`fix::oor`). `Ok(None)`
/// when the error is of another kind; `Err` says why an out-of-resources error
/// has no fix.
pub fn fix_for_error(candidate: &Path, error: &BenchErrorInfo, settings: &Settings) -> Result<Option<RunFix>, String> {
    if error.kind != "out-of-resources" {
        return Ok(None);
    }
    let text = std::fs::read_to_string(candidate).map_err(|e| format!("cannot read {}: {e}", candidate.display()))?;
    let same_file = error.file.as_deref().is_none_or(|f| {
        let f = Path::new(f);
        f == candidate || std::path::absolute(candidate).is_ok_and(|c| c == f) || candidate.ends_with(f)
    });
    let line = error.line.filter(|_| same_file);
    let fix = crate::fix::oor::fix(&text, settings, &error.message, line)?;
    let fixed = apply_edits(&text, &fix.edits)?;
    let index = LineIndex::new(&text);
    let changes = fix
        .edits
        .iter()
        .map(|e| {
            let (l, c) = index.position(&text, e.range.start, ColumnUnit::Char);
            let old = &text[e.range.start..e.range.end];
            if old.is_empty() {
                format!("{}:{}: insert `{}`", l + 1, c + 1, e.new_text)
            } else {
                format!("{}:{}: `{old}` -> `{}`", l + 1, c + 1, e.new_text)
            }
        })
        .collect();
    Ok(Some(RunFix { fix, fixed, changes }))
}

/// `bench --fix`: after an error with a deterministic fix at or under
/// `threshold`, writes the fixed candidate and returns the second run, with
/// the fix and the first run under `fix` in its extra fields. Otherwise the
/// first run, with why nothing was applied under `fix`. `json` silences the
/// text report.
pub fn fix_and_rerun(
    candidate: &Path,
    settings: &Settings,
    threshold: Applicability,
    json: bool,
    first: BenchResult,
    rerun: impl FnOnce() -> BenchResult,
) -> BenchResult {
    let say = |line: String| {
        if !json {
            println!("{line}");
        }
    };
    let mut report = serde_json::Map::new();
    let Some(error) = first.error.clone() else {
        say("fix: the run raised no error; nothing to fix".to_string());
        report.insert("applied".into(), false.into());
        report.insert("reason".into(), "the run raised no error".into());
        return with_fix_report(first, report);
    };
    let run_fix = match fix_for_error(candidate, &error, settings) {
        Ok(Some(f)) => f,
        Ok(None) => {
            let why = format!("no deterministic fix for a `{}` error", error.kind);
            say(format!("fix: {why}"));
            report.insert("applied".into(), false.into());
            report.insert("reason".into(), why.into());
            return with_fix_report(first, report);
        }
        Err(why) => {
            say(format!("fix: none for this error: {why}"));
            report.insert("applied".into(), false.into());
            report.insert("reason".into(), why.into());
            return with_fix_report(first, report);
        }
    };
    let applicability = serde_json::to_value(run_fix.fix.applicability).unwrap_or_default();
    report.insert("title".into(), run_fix.fix.title.to_string().into());
    report.insert("applicability".into(), applicability);
    report.insert("changes".into(), run_fix.changes.clone().into());
    if !json && run_fix.fix.applicability <= threshold {
        // The first run's table, before the second replaces it.
        println!("{}", render_text(candidate, &first));
    }
    say(format!("fix[KL902]: {} ({:?})", run_fix.fix.title, run_fix.fix.applicability));
    for change in &run_fix.changes {
        say(format!("  {}:{change}", candidate.display()));
    }
    if run_fix.fix.applicability > threshold {
        let why = "the fix changes block sizes and needs review: pass --unsafe-fixes to apply it";
        say(format!("fix: not applied: {why}"));
        report.insert("applied".into(), false.into());
        report.insert("reason".into(), why.into());
        return with_fix_report(first, report);
    }
    if let Err(e) = std::fs::write(candidate, &run_fix.fixed) {
        let why = format!("cannot write {}: {e}", candidate.display());
        say(format!("fix: not applied: {why}"));
        report.insert("applied".into(), false.into());
        report.insert("reason".into(), why.into());
        return with_fix_report(first, report);
    }
    say(format!("fix: applied to {}; running again\n", candidate.display()));
    report.insert("applied".into(), true.into());
    report.insert("before".into(), serde_json::to_value(&first).unwrap_or_default());
    with_fix_report(rerun(), report)
}

fn with_fix_report(mut result: BenchResult, report: serde_json::Map<String, serde_json::Value>) -> BenchResult {
    result.extra.insert("fix".into(), serde_json::Value::Object(report));
    result
}

/// `n` runs through the warm worker; each run's wall seconds go in `turnaround_s`.
async fn run_warm_times(
    req: BenchRequest,
    n: u32,
    mut progress: impl FnMut(String) + Send,
) -> Result<BenchResult, super::BenchError> {
    let mut turnaround = Vec::new();
    let mut last = None;
    for i in 1..=n {
        let start = std::time::Instant::now();
        let result = super::run(req.clone(), &mut progress).await?;
        let secs = start.elapsed().as_secs_f64();
        eprintln!("run {i}: {secs:.2} s (worker pid {})", super::BenchResult::worker_pid(&result).unwrap_or(0));
        turnaround.push(serde_json::Value::from((secs * 1000.0).round() / 1000.0));
        last = Some(result);
    }
    let mut result = last.ok_or_else(|| super::BenchError::Setup("no run".into()))?;
    result.extra.insert("turnaround_s".into(), serde_json::Value::Array(turnaround));
    Ok(result)
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".to_string())
}

fn ms(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".to_string())
}

fn num(r: &BenchResult, key: &str) -> Option<f64> {
    r.extra.get(key).and_then(|v| v.as_f64())
}

/// `4.1e-4`, `0.5`, `12`: a difference or tolerance, short.
pub(crate) fn short_float(v: f64) -> String {
    if v == 0.0 || (1e-2 < v.abs() && v.abs() < 1e3) {
        return format!("{}", (v * 1000.0).round() / 1000.0);
    }
    let text = format!("{v:.1e}");
    text.replace(".0e", "e")
}

/// `output[3, 7, 12]` from the JSON index.
pub(crate) fn index_text(r: &BenchResult) -> Option<String> {
    let index = r.extra.get("max_abs_diff_index")?.as_array()?;
    let parts: Vec<String> = index.iter().map(|v| v.to_string()).collect();
    Some(if parts.is_empty() { "output".to_string() } else { format!("output[{}]", parts.join(", ")) })
}

/// The correctness line: verdict, tolerance, worst difference and where.
pub(crate) fn correctness_line(r: &BenchResult) -> Option<String> {
    let tol = num(r, "tolerance")?;
    let profile = r.extra.get("tolerance_profile").and_then(|v| v.as_str()).unwrap_or("-");
    let precision = r.extra.get("precision").and_then(|v| v.as_str()).unwrap_or("fp32");
    let label = match profile {
        "kernelbench" => format!("KernelBench's {precision} tolerance {}", short_float(tol)),
        "legacy" => format!("legacy tolerance {}", short_float(tol)),
        _ => format!("tolerance {}", short_float(tol)),
    };
    let verdict = match r.correct {
        Some(true) => "correct",
        Some(false) => "INCORRECT",
        None => "not decided",
    };
    let mut line = format!("{verdict} at {label} (atol = rtol, {} trials)", num(r, "trials").unwrap_or(0.0) as u64);
    if let Some(d) = num(r, "max_abs_diff") {
        line.push_str(&format!("; max abs diff {}", short_float(d)));
        if let Some(at) = index_text(r) {
            line.push_str(&format!(" at {at}"));
        }
    }
    Some(line)
}

/// The figures of a run that happened: times, speedups, verdict.
fn render_figures(r: &BenchResult) -> String {
    let mut out = String::new();
    let correct = match r.correct {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "-",
    };
    let x = |v: Option<f64>| v.map(|s| format!("{s:.3}x")).unwrap_or_else(|| "-".to_string());
    out.push_str(&format!("{:>10} {:>10} {:>9} {:>8} {:>9}\n", "ref ms", "new ms", "speedup", "correct", "launches"));
    out.push_str(&format!(
        "{:>10} {:>10} {:>9} {:>8} {:>9}\n",
        ms(r.ref_ms),
        ms(r.new_ms),
        x(r.speedup),
        correct,
        opt(r.launches_per_forward)
    ));
    if let Some(line) = correctness_line(r) {
        out.push_str(&format!("{line}\n"));
    }
    let note = r.extra.get("verdict_note").and_then(|v| v.as_str());
    if let Some(note) = note.filter(|n| r.error.as_ref().is_none_or(|e| e.message != *n)) {
        out.push_str(&format!("profiles disagree: {note}\n"));
    }
    if r.mode == "gpu" && r.speedup.is_some() {
        out.push_str(&format!("speedup (interleaved, p10)      {}\n", x(r.speedup)));
    }
    match num(r, "kernelbench_speedup") {
        Some(kb) => {
            out.push_str(&format!(
                "speedup (KernelBench, mean)     {}   ref {} ms, new {} ms\n",
                x(Some(kb)),
                ms(num(r, "kernelbench_ref_ms")),
                ms(num(r, "kernelbench_new_ms"))
            ));
            if let Some(note) = r.extra.get("excessive_speedup_note").and_then(|v| v.as_str()) {
                out.push_str(&format!("excessive speedup: {note}\n"));
            }
            if let Some(note) = r.extra.get("kernelbench_spread_note").and_then(|v| v.as_str()) {
                out.push_str(&format!("KernelBench's figure: {note}\n"));
            }
        }
        None => {
            if let Some(why) = r.extra.get("kernelbench_timing").and_then(|v| v.as_str()) {
                out.push_str(&format!("KernelBench speedup: {why}\n"));
            }
        }
    }
    match (num(r, "graph_speedup"), r.extra.get("graph_error").and_then(|v| v.as_str())) {
        (Some(g), _) => out.push_str(&format!(
            "speedup over the reference as a CUDA graph   {}   graph {} ms\n",
            x(Some(g)),
            ms(num(r, "graph_ref_ms"))
        )),
        (None, Some(why)) => out.push_str(&format!("CUDA-graph speedup: none ({why})\n")),
        _ => {}
    }
    if r.mode == "cpu-interpreter" && r.error.is_none() {
        out.push_str("(CPU interpreter: correctness only, no timing)\n");
    }
    out
}

/// The `bench` report.
pub(crate) fn render_text(candidate: &Path, r: &BenchResult) -> String {
    let mut out = String::new();
    let extra = |k: &str| r.extra.get(k).and_then(|v| v.as_str()).unwrap_or("-").to_string();
    out.push_str(&format!("candidate  {}\n", candidate.display()));
    if let Some(reference) = r.extra.get("reference").and_then(|v| v.as_str()) {
        // As the candidate is given: relative to the current folder when under it.
        let cwd = std::env::current_dir().unwrap_or_default();
        let shown = Path::new(reference).strip_prefix(&cwd).map(|p| p.display().to_string());
        let reference = shown.unwrap_or_else(|_| reference.to_string());
        out.push_str(&format!("reference  {reference} (found by {})\n", extra("reference_found_by")));
    }
    if let Some(sizes) = r.extra.get("reduced_sizes").and_then(|v| v.as_object()).filter(|m| !m.is_empty()) {
        let list: Vec<String> = sizes.iter().map(|(n, v)| format!("{n} {} -> {}", v[0], v[1])).collect();
        out.push_str(&format!("sizes      reduced for the CPU interpreter (not the task's): {}\n", list.join(", ")));
    }
    out.push_str(&format!(
        "mode       {} on {} · torch {} · triton {}\n\n",
        r.mode,
        r.device.as_deref().unwrap_or("-"),
        extra("torch"),
        extra("triton")
    ));
    let ran = r.correct.is_some() || r.ref_ms.is_some();
    if ran {
        out.push_str(&render_figures(r));
    }
    if !r.kernels.is_empty() {
        out.push_str(&format!(
            "\n{:<32} {:>5} {:>8} {:>5} {:>7} {:>6} {:>6}\n",
            "kernel", "line", "launches", "regs", "spills", "smem", "warps"
        ));
        for k in &r.kernels {
            out.push_str(&format!(
                "{:<32} {:>5} {:>8} {:>5} {:>7} {:>6} {:>6}\n",
                k.name,
                opt(k.line),
                opt(k.launches),
                opt(k.registers),
                opt(k.spills),
                opt(k.shared),
                opt(k.num_warps)
            ));
        }
    }
    if let Some(e) = &r.error {
        let place = match (&e.file, e.line) {
            (Some(f), Some(l)) => format!("{f}:{l}:{}: ", e.column.unwrap_or(1)),
            (Some(f), None) => format!("{f}: "),
            _ => String::new(),
        };
        out.push_str(&format!("\nerror[{}]: {place}{}\n", e.kind, e.message));
    }
    out
}

pub fn history_cli(args: HistoryArgs) -> i32 {
    if let Some(f) = args.file.as_deref().filter(|f| !f.exists()) {
        // A file that was benchmarked and then deleted still has its runs; a typo has none.
        let recorded = history::root_and_file(Some(f))
            .ok()
            .and_then(|(root, rel)| Some(history::timeline(&history::read(&root).ok()?, rel.as_deref()).len()))
            .unwrap_or(0);
        if recorded == 0 {
            eprintln!("error: {} does not exist and has no benchmark runs recorded", f.display());
            return 2;
        }
    }
    let (root, file) = match history::root_and_file(args.file.as_deref()) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let entries = match history::read(&root) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", history::history_path(&root).display());
            return 2;
        }
    };
    let rows = history::timeline(&entries, file.as_deref());
    if args.format == Format::Json {
        match serde_json::to_string_pretty(&rows) {
            Ok(text) => println!("{text}"),
            Err(e) => {
                eprintln!("error: {e}");
                return 2;
            }
        }
        return 0;
    }
    if rows.is_empty() {
        println!("no benchmark runs recorded in {}", history::history_path(&root).display());
        return 0;
    }
    let (runs, setup): (Vec<_>, Vec<_>) = rows.into_iter().partition(|r| !r.setup_failure);
    if !runs.is_empty() {
        let file_w = runs.iter().map(|r| r.file.len()).max().unwrap_or(4).max(4);
        println!(
            "| {:<20} | {:<5} | {:<file_w$} | {:<8} | {:<19} | {:<24} | problem |",
            "time", "stage", "file", "hash", "score", "latency"
        );
        println!("|{:-<22}|{:-<7}|{:-<w$}|{:-<10}|{:-<21}|{:-<26}|---------|", "", "", "", "", "", "", w = file_w + 2);
        for r in &runs {
            println!(
                "| {:<20} | {:<5} | {:<file_w$} | {:<8} | {:<19} | {:<24} | {} |",
                r.time, r.stage, r.file, r.hash, r.score, r.latency, r.problem
            );
        }
    } else {
        println!("no benchmark run reached the candidate's code");
    }
    if !setup.is_empty() {
        let n = setup.len();
        println!(
            "\n{n} set-up {} (nothing of the file ran; not versions):",
            if n == 1 { "failure" } else { "failures" }
        );
        for r in &setup {
            println!("  {}  {}  {}", r.time, r.file, r.problem);
        }
    }
    0
}
