//! Benchmarks the open kernel against its PyTorch reference by running the
//! Python harness (`server/harness/harness.py`, embedded in the binary) with
//! the user's Python. Reads its JSON lines, maps errors to source ranges,
//! keeps a warm worker, appends every run to `.kernel-lsp/history.jsonl`.
//!
//! Cancellation is dropping the future: the runner kills the harness's whole
//! process group when it is dropped.
//!
//! (Interface agreed between the LSP and the runner; the body is being written.)

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::Settings;

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
}

/// One benchmark result, as `bench --format json` prints it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    /// `gpu` or `cpu-interpreter`.
    pub mode: String,
    pub correct: Option<bool>,
    pub speedup: Option<f64>,
    pub ref_ms: Option<f64>,
    pub new_ms: Option<f64>,
    pub launches_per_forward: Option<u64>,
    pub kernels: Vec<KernelStats>,
    pub device: Option<String>,
    pub error: Option<BenchErrorInfo>,
    /// Anything else the harness reported (spread, worst difference, versions, ...).
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// Why a benchmark could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    Setup(String),
}

/// Runs one benchmark. `on_progress` receives the harness's progress messages.
pub async fn run(
    _req: BenchRequest,
    _on_progress: impl FnMut(String) + Send,
) -> Result<BenchResult, BenchError> {
    Err(BenchError::Setup("the benchmark runner is not built yet".into()))
}
