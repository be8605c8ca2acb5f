//! `kernel-lsp check` and `kernel-lsp rules`: ruff-like output for people,
//! one JSON object for pipelines.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use kernel_lsp::checker::{self, CheckResult};
use kernel_lsp::config::{validate_selectors, Settings, TritonNames};
use kernel_lsp::diagnostic::{apply_edits, Applicability, Diagnostic};
use kernel_lsp::model;
use kernel_lsp::model::triton_names;
use kernel_lsp::rules::{self, RULES};
use kernel_lsp::text::{ColumnUnit, LineIndex};
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Files larger than this are refused with a clear error rather than analysed.
const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// Files or directories (searched for `*.py`).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Only these rule codes (or prefixes), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub select: Vec<String>,
    /// Never report these rule codes (or prefixes), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub ignore: Vec<String>,
    /// GPU whose limits apply (h100, h200, a100, l4, rtx4090, rtx3090, v100, turing).
    #[arg(long)]
    pub target_gpu: Option<String>,
    /// Apply safe fixes to the files.
    #[arg(long)]
    pub fix: bool,
    /// With --fix, also apply fixes that need review.
    #[arg(long)]
    pub unsafe_fixes: bool,
    /// Also compile every kernel with your Triton (no GPU needed), in parallel over the cores:
    /// compile errors (KL901) at their line, and registers, spills and shared memory per kernel.
    #[arg(long)]
    pub compile: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

pub(crate) struct FileReport {
    pub(crate) path: PathBuf,
    pub(crate) text: String,
    pub(crate) result: CheckResult,
    fixed: usize,
    /// With `--compile`: each compiled kernel configuration.
    pub(crate) resources: Vec<kernel_lsp::compile::Resources>,
}

/// A requested file (or path, or the whole run when `path` is `None`) that could not be checked.
struct CheckError {
    path: Option<PathBuf>,
    message: String,
}

pub fn run(mut args: CheckArgs) -> i32 {
    // Rule codes are case-insensitive, as `kernel-lsp rules kl001` is.
    for s in args.select.iter_mut().chain(args.ignore.iter_mut()) {
        *s = s.to_ascii_uppercase();
    }
    if let Some(gpu) = &args.target_gpu {
        if kernel_lsp::config::gpu_by_name(gpu).is_none() {
            eprintln!("error: {}", kernel_lsp::config::ConfigError::UnknownGpu(gpu.clone()));
            return 2;
        }
    }
    // A typo in a selector would otherwise turn the checker off without a word.
    for (selectors, key) in [(&args.select, "--select"), (&args.ignore, "--ignore")] {
        if let Err(e) = validate_selectors(selectors, key) {
            eprintln!("error: {e}");
            return 2;
        }
    }
    let mut errors = Vec::new();
    let mut files = Vec::new();
    for p in &args.paths {
        if let Err(e) = collect_files(p, &mut files) {
            errors.push(CheckError { path: Some(p.clone()), message: e.to_string() });
        }
    }
    if files.is_empty() && errors.is_empty() {
        errors.push(CheckError { path: None, message: NO_FILES.to_string() });
    }
    let mut reports = Vec::new();
    for (path, result) in files.iter().zip(check_files(&files, &args)) {
        match result {
            Ok(r) => reports.push(r),
            Err(message) => errors.push(CheckError { path: Some(path.clone()), message }),
        }
    }
    for e in &errors {
        match &e.path {
            Some(p) => eprintln!("error: {}: {}", p.display(), e.message),
            // In text the summary line says it; JSON's stdout is for the pipeline.
            None if args.format == Format::Json => eprintln!("error: {}", e.message),
            None => {}
        }
    }
    let compiled = if args.compile { Some(crate::compile_cmd::compile_reports(&mut reports, &args)) } else { None };
    if let Some(Err(why)) = &compiled {
        eprintln!("error: --compile: {why}; static diagnostics only");
    }
    let total: usize = reports.iter().map(|r| r.result.diagnostics.len()).sum();
    let out = std::io::stdout();
    let mut out = out.lock();
    let written = match args.format {
        Format::Text => print_text(&mut out, &reports, &errors, &args).and_then(|()| match &compiled {
            Some(Ok(summary)) => crate::compile_cmd::print_text(&mut out, &reports, summary),
            _ => Ok(()),
        }),
        Format::Json => print_json(&mut out, &reports, &errors, compiled.as_ref()),
    };
    // The process ends next: handing every text and result back to the
    // allocator one by one would only delay the exit.
    std::mem::forget(reports);
    if written.is_err() {
        return 2;
    }
    if !errors.is_empty() || matches!(compiled, Some(Err(_))) {
        2
    } else if total > 0 {
        1
    } else {
        0
    }
}

const NO_FILES: &str = "No Python files found under the given paths: nothing was checked";

fn collect_files(path: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if meta.is_file() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for e in entries {
        let name = e.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') || matches!(name, "__pycache__" | "node_modules" | "target" | "venv") {
            continue;
        }
        if e.is_dir() {
            collect_files(&e, out)?;
        } else if name.ends_with(".py") {
            out.push(e);
        }
    }
    Ok(())
}

pub(crate) fn settings_for(path: &Path, args: &CheckArgs) -> Result<Settings, String> {
    let (mut settings, _) = Settings::discover(&absolute(path)).map_err(|e| e.to_string())?;
    if !args.select.is_empty() {
        settings.select = args.select.clone();
    }
    if !args.ignore.is_empty() {
        settings.ignore.extend(args.ignore.iter().cloned());
    }
    if let Some(gpu) = &args.target_gpu {
        settings.target_gpu = gpu.clone();
    }
    if let Some(python) = settings.python.clone() {
        match triton_names_of(&python) {
            Ok(names) => settings.triton_names = Some(names),
            Err(why) => settings.triton_names_fallback = Some(why),
        }
    }
    Ok(settings)
}

/// The `triton.language` names of `python`'s Triton, asked once per
/// interpreter for the whole run (a fixed script of ours, no user code);
/// on failure KL005 uses the bundled list, and stderr says why, once.
fn triton_names_of(python: &str) -> Result<Arc<TritonNames>, String> {
    type Cache = Mutex<HashMap<String, Result<Arc<TritonNames>, String>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    cache
        .entry(python.to_string())
        .or_insert_with(|| {
            let loaded = triton_names::load(python, Duration::from_secs(30)).map(Arc::new);
            if let Err(why) = &loaded {
                eprintln!("kernel-lsp: KL005 checks against the bundled list of `triton.language` names: {why}");
            }
            loaded
        })
        .clone()
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Checks `files` on up to `available_parallelism` threads (or
/// `KERNEL_LSP_THREADS`); the results come back in the order of `files`, so
/// the output never depends on scheduling.
fn check_files(files: &[PathBuf], args: &CheckArgs) -> Vec<Result<FileReport, String>> {
    let threads = std::env::var("KERNEL_LSP_THREADS").ok().and_then(|v| v.trim().parse::<usize>().ok());
    let threads =
        threads.filter(|&n| n > 0).unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let workers = threads.min(files.len());
    if workers <= 1 {
        return files.iter().enumerate().map(|(i, p)| check_file(p, args, i + 1 == files.len())).collect();
    }
    let next = AtomicUsize::new(0);
    let mut results: Vec<Option<Result<FileReport, String>>> = files.iter().map(|_| None).collect();
    let done: Vec<Vec<(usize, Result<FileReport, String>)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(path) = files.get(i) else { break };
                        // Only the last `workers` files keep their trees, so at most that many go unfreed.
                        let last = i + workers >= files.len();
                        mine.push((i, check_file(path, args, last)));
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    });
    for (i, r) in done.into_iter().flatten() {
        results[i] = Some(r);
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("internal error: the file was not checked".to_string())))
        .collect()
}

/// Reads, parses and checks one file. With `last`, the syntax tree is not
/// freed: the process exits soon, and tearing down a large tree node by node
/// costs tens of milliseconds.
fn check_file(path: &Path, args: &CheckArgs, last: bool) -> Result<FileReport, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!("file is {} bytes, over the {} byte limit for analysis", meta.len(), MAX_FILE_BYTES));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    let mut text = String::from_utf8(bytes)
        .map_err(|e| format!("not UTF-8 text (byte {}): not a Python source file", e.utf8_error().valid_up_to()))?;
    if text.contains('\0') {
        return Err("contains NUL bytes: not a Python source file".to_string());
    }
    let settings = settings_for(path, args)?;
    let mut fixed = 0;
    if args.fix {
        let threshold = if args.unsafe_fixes { Applicability::NeedsReview } else { Applicability::Safe };
        // Fixes can uncover or overlap each other: apply non-overlapping ones, re-check, repeat.
        for _ in 0..10 {
            let result = checker::check_text(&text, &settings);
            let (new_text, n) = apply_fixes(&text, &result.diagnostics, threshold);
            if n == 0 {
                break;
            }
            text = new_text;
            fixed += n;
        }
        if fixed > 0 {
            std::fs::write(path, &text).map_err(|e| e.to_string())?;
        }
    }
    let tree = model::parse_forest(&text);
    let result = checker::check(&text, &tree, &settings);
    if last {
        std::mem::forget(tree);
    }
    Ok(FileReport { path: path.to_path_buf(), text, result, fixed, resources: Vec::new() })
}

/// Applies the fixes at or above `threshold` that do not overlap; returns the new text and how many applied.
pub fn apply_fixes(text: &str, diagnostics: &[Diagnostic], threshold: Applicability) -> (String, usize) {
    let mut edits = Vec::new();
    let mut taken: Vec<(usize, usize)> = Vec::new();
    let mut count = 0;
    for d in diagnostics {
        let Some(fix) = &d.fix else { continue };
        if fix.applicability > threshold || fix.edits.is_empty() {
            continue;
        }
        let overlaps = fix
            .edits
            .iter()
            .any(|e| taken.iter().any(|(s, t)| e.range.start < *t && *s < e.range.end.max(e.range.start + 1)));
        if overlaps {
            continue;
        }
        taken.extend(fix.edits.iter().map(|e| (e.range.start, e.range.end.max(e.range.start + 1))));
        edits.extend(fix.edits.iter().cloned());
        count += 1;
    }
    match apply_edits(text, &edits) {
        Ok(t) => (t, count),
        Err(_) => (text.to_string(), 0),
    }
}

pub(crate) fn position(text: &str, index: &LineIndex, offset: usize) -> (usize, usize) {
    let (l, c) = index.position(text, offset, ColumnUnit::Char);
    (l + 1, c + 1)
}

fn print_text(
    out: &mut impl Write,
    reports: &[FileReport],
    errors: &[CheckError],
    args: &CheckArgs,
) -> std::io::Result<()> {
    let mut total = 0;
    let mut fixable = 0;
    let mut review = 0;
    let mut fixed = 0;
    for r in reports {
        let index = LineIndex::new(&r.text);
        fixed += r.fixed;
        for d in &r.result.diagnostics {
            let (line, col) = position(&r.text, &index, d.range.start);
            let marker = match &d.fix {
                Some(f) if f.applicability == Applicability::Safe => {
                    fixable += 1;
                    "[*] "
                }
                Some(f) if f.applicability == Applicability::NeedsReview => {
                    review += 1;
                    "[review] "
                }
                _ => "",
            };
            writeln!(out, "{}:{}:{}: {} {}{}", r.path.display(), line, col, d.code, marker, d.message)?;
            total += 1;
        }
    }
    if fixed > 0 {
        writeln!(out, "Fixed {fixed} {}.", plural(fixed, "error", "errors"))?;
    }
    if total > 0 {
        writeln!(out, "Found {total} {}.", plural(total, "error", "errors"))?;
        if fixable > 0 && !args.fix {
            writeln!(out, "[*] {fixable} fixable with `kernel-lsp check --fix`.")?;
        }
        if review > 0 && !args.unsafe_fixes {
            writeln!(
                out,
                "[review] {review} more fixable with `kernel-lsp check --fix --unsafe-fixes` (fixes to review before keeping)."
            )?;
        }
    }
    // Green only when every requested file was read, parsed (else KL900 above) and clean.
    let unchecked = errors.iter().filter(|e| e.path.is_some()).count();
    if unchecked > 0 {
        writeln!(out, "{unchecked} {} could not be checked.", plural(unchecked, "file", "files"))?;
    } else if !errors.is_empty() {
        writeln!(out, "{NO_FILES}.")?;
    } else if total == 0 && fixed == 0 {
        writeln!(out, "All checks passed!")?;
    }
    Ok(())
}

fn plural<'s>(n: usize, one: &'s str, many: &'s str) -> &'s str {
    if n == 1 {
        one
    } else {
        many
    }
}

fn print_json(
    out: &mut impl Write,
    reports: &[FileReport],
    errors: &[CheckError],
    compiled: Option<&Result<crate::compile_cmd::Summary, String>>,
) -> std::io::Result<()> {
    let mut diagnostics = Vec::new();
    let mut kernels = Vec::new();
    for r in reports {
        let index = LineIndex::new(&r.text);
        let file = r.path.display().to_string();
        for d in &r.result.diagnostics {
            let (line, column) = position(&r.text, &index, d.range.start);
            let (end_line, end_column) = position(&r.text, &index, d.range.end);
            let fix = d.fix.as_ref().map(|f| {
                json!({
                    "title": f.title,
                    "applicability": f.applicability,
                    "edits": f.edits.iter().map(|e| {
                        let (l, c) = position(&r.text, &index, e.range.start);
                        let (el, ec) = position(&r.text, &index, e.range.end);
                        json!({"line": l, "column": c, "end_line": el, "end_column": ec, "content": e.new_text})
                    }).collect::<Vec<_>>(),
                })
            });
            let related: Vec<_> = d
                .related
                .iter()
                .map(|rel| {
                    let (l, c) = position(&r.text, &index, rel.range.start);
                    json!({"line": l, "column": c, "message": rel.message})
                })
                .collect();
            diagnostics.push(json!({
                "file": file, "code": d.code, "name": d.name, "severity": d.severity,
                "line": line, "column": column, "end_line": end_line, "end_column": end_column,
                "message": d.message, "fix": fix, "related": related,
            }));
        }
        for k in &r.result.kernels {
            let (line, column) = position(&r.text, &index, k.range.start);
            kernels.push(json!({
                "file": file, "name": k.name, "line": line, "column": column,
                "persistent": k.persistent, "has_time_loop": k.has_time_loop,
                "launch_sites": k.launch_sites, "launches_per_forward": k.launches_per_forward,
            }));
        }
    }
    let errors: Vec<_> = errors
        .iter()
        .map(|e| json!({"file": e.path.as_ref().map(|p| p.display().to_string()), "message": e.message}))
        .collect();
    let mut doc = json!({"diagnostics": diagnostics, "kernels": kernels, "errors": errors});
    if let Some(c) = compiled {
        doc["compile"] = crate::compile_cmd::json(reports, c);
    }
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}

pub fn rules_cmd(code: Option<String>, format: Format) -> i32 {
    match code {
        Some(code) => match rules::by_code(&code) {
            Some(rule) => {
                println!("{}", rule.doc.trim_end());
                0
            }
            None => {
                eprintln!("error: no rule `{code}`; `kernel-lsp rules` lists them");
                2
            }
        },
        None => {
            if format == Format::Json {
                let list: Vec<_> = RULES
                    .iter()
                    .map(|r| json!({"code": r.code, "name": r.name, "severity": r.severity, "summary": r.summary}))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&list).unwrap_or_default());
            } else {
                for r in RULES {
                    println!("{}  {:<32} {:<8} {}", r.code, r.name, r.severity.as_str(), r.summary);
                }
            }
            0
        }
    }
}
