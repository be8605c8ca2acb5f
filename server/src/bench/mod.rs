//! Benchmarks the open kernel against its PyTorch reference by running the
//! Python harness (`server/harness/harness.py`, embedded in the binary) with
//! the user's Python. Reads its JSON lines, maps errors to source ranges,
//! keeps a warm worker, appends every run to `.kernel-lsp/history.jsonl`.
//!
//! Cancellation is dropping the future: the runner kills the harness's whole
//! process group when it is dropped.
//!
//! What lives here: the request/result types (the interface the LSP uses),
//! turning a request into harness arguments, and the two ways to run it
//! (`process`: one-shot or through the warm worker). `history` keeps the
//! timeline, `cli` the `bench` and `history` subcommands. Nothing here knows
//! about the LSP.

pub(crate) mod batch;
pub mod cli;
pub mod history;
mod process;
pub(crate) use process::GroupKill;
pub mod sandbox;
pub(crate) mod sha256;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::{Settings, Tolerance};

/// The harness, written to a cache directory at run time under a content-hashed name.
pub const HARNESS_SOURCE: &str = include_str!("../../harness/harness.py");

/// What to benchmark.
#[derive(Debug, Clone)]
pub struct BenchRequest {
    pub candidate: PathBuf,
    /// Explicit reference; otherwise found by the harness's rules.
    pub reference: Option<PathBuf>,
    pub settings: Settings,
    /// `--python`, overriding `settings.python`.
    pub python: Option<String>,
    /// Module-level constants to override in both files (e.g. `SEQ=16`), for CPU-sized runs.
    pub overrides: Vec<(String, String)>,
    /// Run under Triton's interpreter on the CPU even when a GPU is present.
    pub cpu: bool,
    /// Seconds before the run is killed; `settings.bench.timeout` when `None`.
    pub timeout: Option<f64>,
    /// Append the run to `.kernel-lsp/history.jsonl` (true by default; the
    /// rewrite pipeline turns it off for its temporary candidate files).
    pub record_history: bool,
    /// The user's file that `candidate` (a copy elsewhere) stands for: the
    /// history records the run under it, and settings are found from it.
    pub origin: Option<PathBuf>,
    /// Run the harness in this sandbox (always a fresh process, never the
    /// warm worker). Set for every run of LLM-written code.
    pub sandbox: Option<std::sync::Arc<sandbox::Sandbox>>,
    /// Check correctness at reduced sizes ([`reduced_sizes`]) on the CPU
    /// interpreter; the result's `reduced_sizes` says which.
    pub reduced: bool,
    /// On the CPU interpreter, run at the task's sizes even where the size
    /// guard (`too-large-for-interpreter`) would refuse them.
    pub full_size: bool,
}

impl Default for BenchRequest {
    fn default() -> Self {
        BenchRequest {
            candidate: PathBuf::new(),
            reference: None,
            settings: Settings::default(),
            python: None,
            overrides: Vec::new(),
            cpu: false,
            timeout: None,
            record_history: true,
            origin: None,
            sandbox: None,
            reduced: false,
            full_size: false,
        }
    }
}

/// A located error from the harness: compile error, out of resources, mismatch, race, timeout, ...
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchErrorInfo {
    /// `compile-error`, `out-of-resources`, `exception`, `mismatch`, `nondeterministic`,
    /// `timeout`, `no-reference`, `missing-dependency`, `harness`.
    pub kind: String,
    pub message: String,
    pub file: Option<String>,
    /// 1-based.
    pub line: Option<u32>,
    /// 1-based.
    pub column: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelStats {
    pub name: String,
    pub registers: Option<u32>,
    pub spills: Option<u32>,
    pub shared: Option<u64>,
    pub num_warps: Option<u32>,
    pub num_stages: Option<u32>,
    /// Launches of this kernel in one forward.
    #[serde(default)]
    pub launches: Option<u64>,
    /// File and 1-based line of the kernel's `def`.
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub line: Option<u32>,
}

/// One benchmark result, as `bench --format json` prints it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    /// `gpu` or `cpu-interpreter`; `none` when the run never started.
    pub mode: String,
    pub correct: Option<bool>,
    pub speedup: Option<f64>,
    pub ref_ms: Option<f64>,
    pub new_ms: Option<f64>,
    pub launches_per_forward: Option<u64>,
    #[serde(default)]
    pub kernels: Vec<KernelStats>,
    pub device: Option<String>,
    pub error: Option<BenchErrorInfo>,
    /// Anything else the harness reported (spread, worst difference, versions,
    /// `worker_pid`, ...).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl BenchResult {
    /// A result for a run that could not happen, with the error that says why.
    pub fn failed(kind: &str, message: impl Into<String>, file: Option<&Path>, line: Option<u32>) -> BenchResult {
        BenchResult {
            mode: "none".to_string(),
            correct: None,
            speedup: None,
            ref_ms: None,
            new_ms: None,
            launches_per_forward: None,
            kernels: Vec::new(),
            device: None,
            error: Some(BenchErrorInfo {
                kind: kind.to_string(),
                message: message.into(),
                file: file.map(|f| f.display().to_string()),
                line,
                column: line.map(|_| 1),
            }),
            extra: serde_json::Map::new(),
        }
    }

    /// The process exit code for this result: 0 ran and correct, 1 ran and
    /// incorrect, 2 could not run or ran and was flagged (correct outputs
    /// with an error kind: a cheat the run showed).
    pub(crate) fn exit_code(&self) -> i32 {
        match (self.correct, &self.error) {
            (Some(true), None) => 0,
            (Some(false), _) => 1,
            _ => 2,
        }
    }

    /// The pid of the warm worker that forked this run, if one did.
    pub fn worker_pid(&self) -> Option<u64> {
        self.extra.get("worker_pid").and_then(|v| v.as_u64())
    }
}

/// Why a benchmark could not run at all (the harness never got to say).
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    Setup(String),
    #[error("cannot write the harness to {path}: {source}")]
    WriteHarness { path: PathBuf, source: std::io::Error },
    #[error("cannot start `{python}`: {source}")]
    Spawn { python: String, source: std::io::Error },
    #[error("lost the harness's output: {0}")]
    Io(#[from] std::io::Error),
}

impl BenchError {
    /// The same failure as a result, so every surface reports it one way.
    pub(crate) fn into_result(self, candidate: &Path) -> BenchResult {
        let kind = match &self {
            BenchError::Spawn { source, .. } if source.kind() == std::io::ErrorKind::NotFound => "missing-dependency",
            _ => "harness",
        };
        let mut message = self.to_string();
        if kind == "missing-dependency" {
            message.push_str(
                ": no such interpreter. Point kernel-lsp at a Python with torch and triton (--python PATH, or the `python` setting).",
            );
        }
        BenchResult::failed(kind, message, Some(candidate), None)
    }
}

/// Runs one benchmark through the warm worker (started on first use and kept
/// for the process's life), and appends it to the history. `on_progress`
/// receives the harness's progress messages.
pub async fn run(req: BenchRequest, on_progress: impl FnMut(String) + Send) -> Result<BenchResult, BenchError> {
    run_with(req, true, on_progress).await
}

/// Runs one benchmark in a fresh Python process (no worker left behind): what
/// the CLI uses, since it exits right after.
pub async fn run_cold(req: BenchRequest, on_progress: impl FnMut(String) + Send) -> Result<BenchResult, BenchError> {
    run_with(req, false, on_progress).await
}

/// `run` for callers without an async runtime (scripts, tests): blocks the
/// calling thread. The warm worker is shared with `run`.
pub fn run_blocking(req: BenchRequest, on_progress: impl FnMut(String) + Send) -> Result<BenchResult, BenchError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(run(req, on_progress))
}

async fn run_with(
    mut req: BenchRequest,
    warm: bool,
    on_progress: impl FnMut(String) + Send,
) -> Result<BenchResult, BenchError> {
    let candidate = std::path::absolute(&req.candidate)?;
    let reduced = if req.reduced { reduced_sizes(&req) } else { Vec::new() };
    if req.reduced {
        // Reduced sizes are a correctness check: on the interpreter, never timed.
        req.cpu = true;
        req.overrides.extend(reduced.iter().map(|(n, _, v)| (n.clone(), v.to_string())));
    }
    // Sandboxed code never runs in the shared warm worker.
    let warm = warm && req.sandbox.is_none();
    let mut argv = harness_args(&req, &candidate);
    // The profiler's exact launch count costs seconds to attach in every
    // forked child; a warm re-run of the same content reuses the count.
    let profile_key = format!("{}\n{argv:?}", sha256::hex(&std::fs::read(&candidate).unwrap_or_default()));
    let known_launches =
        if warm { profiled_launches().lock().ok().and_then(|m| m.get(&profile_key).copied()) } else { None };
    if known_launches.is_some() {
        argv.push("--no-profiler".to_string());
    }
    let plan = plan(&req, argv, candidate.clone())?;
    let result =
        if warm { process::run_warm(&plan, on_progress).await } else { process::run_cold(&plan, on_progress).await };
    let mut result = match result {
        Ok(r) => r,
        Err(e) => e.into_result(&candidate),
    };
    remember_launches(&mut result, &profile_key, known_launches);
    if req.reduced {
        let sizes: serde_json::Map<String, serde_json::Value> =
            reduced.iter().map(|(n, task, v)| (n.clone(), serde_json::json!([task, v]))).collect();
        result.extra.insert("reduced_sizes".into(), serde_json::Value::Object(sizes));
    }
    if let Some(e) = result.error.as_mut().filter(|e| e.kind == "missing-dependency") {
        let (python, source) = python_and_source(&req);
        e.message.push_str(&format!(
            "\nkernel-lsp ran {python} ({source}). Choose another with --python PATH, the `python` setting \
             (kernel-lsp.toml; a relative path is read from the config file's folder), or a .venv in the project."
        ));
    }
    if let (Some(sb), Some(e)) = (&req.sandbox, result.error.as_mut()) {
        // What sandboxed code printed is redacted before it is kept anywhere.
        e.message = sb.redact(&e.message);
    }
    if req.record_history {
        let recorded_as = req.origin.as_deref().map(std::path::absolute).transpose()?;
        if let Err(e) = history::append(&candidate, recorded_as.as_deref().unwrap_or(&candidate), &result) {
            tracing::warn!("cannot append to the benchmark history: {e}");
        }
    }
    Ok(result)
}

/// The rewrite pipeline's final ranking: the reference, `req.candidate` (the
/// current file) and each of `files`, built as the correctness check builds
/// them and timed interleaved in one fresh harness process, so that their
/// ratios compare times taken side by side. No correctness check: the files
/// were checked before. The result's `ranking` lists each with `role`, `file`
/// and `ms` (or `error`); `ranking_clock` says what was measured.
pub async fn rank(req: BenchRequest, files: &[PathBuf]) -> Result<BenchResult, BenchError> {
    let candidate = std::path::absolute(&req.candidate)?;
    let mut argv = harness_args(&req, &candidate);
    for f in files {
        argv.extend(["--rank".to_string(), std::path::absolute(f)?.display().to_string()]);
    }
    let plan = plan(&req, argv, candidate)?;
    process::run_cold(&plan, |_| {}).await
}

/// What `process` needs to start the harness for `req`: the files a sandbox
/// must let it read are the harness and the files named after `--reference`
/// and `--config-reference`.
fn plan(req: &BenchRequest, argv: Vec<String>, candidate: PathBuf) -> Result<process::Plan, BenchError> {
    let harness = write_harness()?;
    let mut reads = vec![harness.clone()];
    for pair in argv.windows(2) {
        if pair[0] == "--reference" || pair[0] == "--config-reference" {
            reads.push(PathBuf::from(&pair[1]));
        }
    }
    Ok(process::Plan {
        python: resolve_python(req),
        harness,
        argv,
        cpu: req.cpu,
        timeout: std::time::Duration::from_secs_f64(req.timeout.unwrap_or(req.settings.bench.timeout).max(0.1)),
        candidate,
        sandbox: req.sandbox.clone(),
        reads,
    })
}

/// Milliseconds of one ranked file, by role and path, from a `rank` result.
pub(crate) fn ranked_ms(result: &BenchResult, file: &Path) -> Option<f64> {
    let file = std::path::absolute(file).ok()?;
    result
        .extra
        .get("ranking")?
        .as_array()?
        .iter()
        .find_map(|e| (e.get("file")?.as_str()? == file.display().to_string()).then(|| e.get("ms")?.as_f64())?)
}

fn profiled_launches() -> &'static std::sync::Mutex<std::collections::HashMap<String, u64>> {
    static COUNTS: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<String, u64>>> =
        std::sync::OnceLock::new();
    COUNTS.get_or_init(Default::default)
}

/// Keeps a fresh profiler count, or puts the remembered one in a run that skipped the profiler.
fn remember_launches(result: &mut BenchResult, key: &str, known: Option<u64>) {
    let source = result.extra.get("launch_count_source").and_then(|v| v.as_str()).unwrap_or_default();
    if result.mode != "gpu" || result.error.is_some() {
        return;
    }
    match (source, known, result.launches_per_forward) {
        ("profiler", _, Some(n)) => {
            if let Ok(mut m) = profiled_launches().lock() {
                m.insert(key.to_string(), n);
            }
        }
        (_, Some(n), _) => {
            result.launches_per_forward = Some(n);
            result.extra.insert("launch_count_source".into(), "profiler (earlier run of this content)".into());
        }
        _ => {}
    }
}

/// `--python`, else the `python` setting, else the active virtualenv, else
/// the project's `.venv`/`venv` (beside the file or in a folder above it, up
/// to the project root), else `python3`.
pub fn resolve_python(req: &BenchRequest) -> String {
    python_and_source(req).0
}

/// The interpreter [`resolve_python`] picks, and where it came from (for messages).
pub(crate) fn python_and_source(req: &BenchRequest) -> (String, &'static str) {
    if let Some(p) = &req.python {
        return (p.clone(), "--python");
    }
    if let Some(p) = &req.settings.python {
        return (p.clone(), "the `python` setting");
    }
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV") {
        let p = Path::new(&venv).join("bin").join("python");
        if p.is_file() {
            return (p.display().to_string(), "the active virtualenv ($VIRTUAL_ENV)");
        }
    }
    let file = req.origin.as_deref().unwrap_or(&req.candidate);
    if let Ok(file) = std::path::absolute(file) {
        let root = history::project_root(&file);
        let mut dir = file.parent();
        while let Some(d) = dir {
            for venv in [".venv", "venv"] {
                let p = d.join(venv).join("bin").join("python");
                if p.is_file() {
                    return (p.display().to_string(), "the project's virtualenv");
                }
            }
            if d == root {
                break;
            }
            dir = d.parent();
        }
    }
    ("python3".to_string(), "python3 on PATH")
}

fn harness_args(req: &BenchRequest, candidate: &Path) -> Vec<String> {
    let s = &req.settings;
    let mut argv = vec!["--candidate".to_string(), candidate.display().to_string()];
    if let Some(r) = &req.reference {
        let r = std::path::absolute(r).unwrap_or_else(|_| r.clone());
        argv.extend(["--reference".to_string(), r.display().to_string()]);
    }
    if let Some(r) = &s.reference {
        let from = req.origin.as_deref().unwrap_or(candidate);
        argv.extend(["--config-reference".to_string(), config_relative(from, r).display().to_string()]);
    }
    let profile = match s.bench.tolerance {
        Tolerance::KernelBench => "kernelbench".to_string(),
        Tolerance::Legacy => "legacy".to_string(),
        Tolerance::Value(v) => {
            argv.extend(["--tolerance".to_string(), v.to_string()]);
            "custom".to_string()
        }
    };
    for (flag, value) in [
        ("--profile", profile),
        ("--precision", s.bench.precision.as_str().to_string()),
        ("--atol", s.atol.to_string()),
        ("--rtol", s.rtol.to_string()),
        ("--trials", s.bench.correctness_trials.to_string()),
        ("--warmup", s.bench.warmup.to_string()),
        ("--repeats", s.bench.repeats.to_string()),
    ] {
        argv.extend([flag.to_string(), value]);
    }
    for (name, value) in &req.overrides {
        argv.extend(["--set".to_string(), format!("{name}={value}")]);
    }
    if req.cpu {
        argv.push("--cpu".to_string());
    }
    if req.full_size {
        argv.push("--full-size".to_string());
    }
    if req.sandbox.is_some() {
        // LLM-written code: its `# kernel-lsp: ignore` comments silence no run finding.
        argv.push("--strict".to_string());
    }
    argv
}

/// The `reference` setting is relative to the config file that set it.
pub(crate) fn config_relative(candidate: &Path, reference: &str) -> PathBuf {
    let base = match Settings::discover(candidate) {
        Ok((_, Some(cfg))) => cfg.parent().map(Path::to_path_buf),
        _ => None,
    };
    base.or_else(|| candidate.parent().map(Path::to_path_buf)).unwrap_or_default().join(reference)
}

/// Writes the embedded harness under a content-hashed name (once per version).
fn write_harness() -> Result<PathBuf, BenchError> {
    let dir = cache_dir();
    let hash = sha256::hex(HARNESS_SOURCE.as_bytes());
    let path = dir.join(format!("harness-{}.py", &hash[..16]));
    if path.is_file() {
        return Ok(path);
    }
    let err = |source| BenchError::WriteHarness { path: path.clone(), source };
    std::fs::create_dir_all(&dir).map_err(err)?;
    let tmp = dir.join(format!("harness-{}.{}.tmp", &hash[..16], std::process::id()));
    std::fs::write(&tmp, HARNESS_SOURCE).map_err(err)?;
    std::fs::rename(&tmp, &path).map_err(err)?;
    Ok(path)
}

pub(crate) fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("kernel-lsp");
    }
    if let Some(h) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(h).join(".cache").join("kernel-lsp");
    }
    std::env::temp_dir().join("kernel-lsp")
}

/// What a timeout under the CPU interpreter means for this file, from what
/// its kernels do (not a guess): a kernel that spins waiting on other
/// programs never ends there; otherwise the task is too large to interpret.
pub(crate) fn interpreter_timeout_hint(candidate: &Path) -> String {
    let text = std::fs::read_to_string(candidate).unwrap_or_default();
    let tree = crate::model::parse_forest(&text);
    let model = crate::model::FileModel::build(&text, &tree);
    let spinning: Vec<&str> = model.kernels.iter().filter(|k| k.spins(&model)).map(|k| k.name.as_str()).collect();
    match spinning.first() {
        Some(name) => format!(
            "`{name}` spins in a `while` loop until other programs arrive (a grid-wide barrier); the CPU \
             interpreter runs programs one at a time, so it never ends there. Check this file on a GPU."
        ),
        None => "No kernel of this file waits on other programs: the task is too large for the CPU interpreter \
                 in this time. Shrink it with --set NAME=VALUE on its size constants (batch, sequence, hidden \
                 sizes) to check correctness in seconds, or raise the timeout (--timeout, bench.timeout)."
            .to_string(),
    }
}

/// The reference as the harness would find it from the original file (a
/// candidate in the sandbox's directory has no siblings, and an answer's own
/// reference comment must not choose what it is checked against), and its
/// path for the prompt. `None`: `Model` is in the file.
pub(crate) fn find_reference(file: &Path, text: &str, explicit: Option<&Path>, settings: &Settings) -> Option<PathBuf> {
    if let Some(r) = explicit {
        return Some(std::path::absolute(r).unwrap_or_else(|_| r.to_path_buf()));
    }
    let dir = file.parent()?;
    let comment = text.lines().find_map(|l| {
        let rest = l.trim().strip_prefix('#')?.trim().strip_prefix("kernel-lsp:")?.trim().strip_prefix("reference")?;
        Some(rest.trim().strip_prefix('=')?.trim().to_string())
    });
    if let Some(c) = comment {
        return Some(dir.join(c));
    }
    let has_model = |t: &str| t.lines().any(|l| l.starts_with("class Model(") || l.starts_with("class Model:"));
    if has_model(text) {
        return None;
    }
    if let Some(r) = &settings.reference {
        return Some(config_relative(file, r));
    }
    let stem = file.file_stem()?.to_str()?;
    let mut names = Vec::new();
    let bases: Vec<&str> = ["_new", "_triton", "_candidate", "_opt", "_kernel"]
        .iter()
        .filter_map(|s| stem.strip_suffix(s).filter(|b| !b.is_empty()))
        .collect();
    names.extend(bases.iter().map(|b| format!("{b}.py")));
    for b in bases.iter().copied().chain([stem]) {
        names.push(format!("{b}_ref.py"));
        names.push(format!("{b}_reference.py"));
    }
    names.extend(["reference.py".to_string(), "ref.py".to_string()]);
    names
        .into_iter()
        .map(|n| dir.join(n))
        .find(|p| p != file && std::fs::read_to_string(p).is_ok_and(|t| has_model(&t)))
}

/// The task's size constants (lowercase top-level `name = <int>` of the
/// reference, else of the file) scaled down for a correctness check on the
/// CPU interpreter: 16 and above become 16, 3 to 15 become 2; names the user
/// set are left alone. Each entry: name, task value, reduced value.
pub fn reduced_sizes(req: &BenchRequest) -> Vec<(String, i64, i64)> {
    let Ok(candidate) = std::path::absolute(&req.candidate) else { return Vec::new() };
    let text = std::fs::read_to_string(&candidate).unwrap_or_default();
    let origin = req.origin.clone().unwrap_or_else(|| candidate.clone());
    let source = find_reference(&origin, &text, req.reference.as_deref(), &req.settings)
        .and_then(|r| std::fs::read_to_string(r).ok())
        .unwrap_or(text);
    let mut out = Vec::new();
    for line in source.lines() {
        let Some((name, value)) = line.split_once('=') else { continue };
        let name = name.trim_end();
        let value = value.split('#').next().unwrap_or_default().trim();
        let is_name = !name.is_empty()
            && !line.starts_with(char::is_whitespace)
            && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && name.starts_with(|c: char| c.is_ascii_lowercase());
        let Ok(v) = value.parse::<i64>() else { continue };
        if !is_name
            || req.overrides.iter().any(|(n, _)| n == name)
            || out.iter().any(|(n, _, _): &(String, i64, i64)| n == name)
        {
            continue;
        }
        let reduced = match v {
            16.. => 16,
            3..=15 => 2,
            _ => continue,
        };
        if reduced != v {
            out.push((name.to_string(), v, reduced));
        }
    }
    out
}

/// 1-based line of `class ModelNew` in the candidate, where run-level errors land.
fn model_new_line(candidate: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(candidate).ok()?;
    text.lines().position(|l| l.starts_with("class ModelNew")).map(|i| i as u32 + 1)
}
