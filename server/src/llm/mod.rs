//! LLM rewrites that are proven before they are offered: "make persistent",
//! "2-D grid", "block sizes" and "repair" (issue 7).
//!
//! The pipeline: the current file is benchmarked once (the baseline), then N
//! candidates run in parallel, each: ask the LLM (`client`) -> take the code
//! from the answer (`extract`: whole file, or definitions spliced in by name)
//! -> parse -> static gate (the checker's own diagnostics: a "persistent"
//! answer that still launches per time step, or one with the KL003 race, is
//! rejected without running) -> the harness (correctness, speed) -> on any
//! failure, a repair prompt with the error, up to R times. The best correct
//! candidate that beats the current file wins (on the CPU interpreter: the
//! best correct one, labelled as unmeasured). Every stage is reported to the
//! caller and appended to `.kernel-lsp/timeline.jsonl`.
//!
//! Candidates are written into the sandbox's private directory, never into
//! the project, and the reference is resolved from the user's file once and
//! passed explicitly; the user's file is never written here. Cancellation is dropping the future: candidate tasks
//! are aborted and running benchmarks killed.
//!
//! May depend on `model`, `rules`, `checker`, `config`, `bench`, `text`, `diagnostic`; nothing
//! here knows about the LSP.

pub mod cli;
pub mod client;
pub mod diff;
pub mod extract;
pub mod gate;
pub mod prompts;
/// Where answers run: the one sandbox every stage uses (`bench::sandbox`).
pub use crate::bench::sandbox;
pub mod timeline;

mod pipeline;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use client::{LlmError, Usage};
pub use pipeline::rewrite;
pub use timeline::StageRecord;

use crate::bench::BenchResult;
use crate::config::Settings;

/// What to ask the LLM for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Move the time loop into the kernel (KL001).
    Persistent,
    /// Cover the hidden dimension with a 2-D grid (KL002), with a barrier for recurrences.
    #[value(name = "grid-2d")]
    #[serde(rename = "grid-2d")]
    Grid2d,
    /// Fit the block sizes in shared memory (KL006).
    BlockSize,
    /// Repair a compile error or a mismatch found by the benchmark.
    Repair,
}

impl Action {
    pub fn title(self) -> &'static str {
        match self {
            Action::Persistent => "Make persistent",
            Action::Grid2d => "Convert to 2-D grid",
            Action::BlockSize => "Reduce block sizes",
            Action::Repair => "Repair with LLM",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Action::Persistent => "persistent",
            Action::Grid2d => "grid-2d",
            Action::BlockSize => "block-size",
            Action::Repair => "repair",
        }
    }

    /// Diagnostics that reject an answer before it runs: the mistake the
    /// action exists to remove, and the KL003 race, which no answer may have.
    pub(crate) fn gate_codes(self) -> &'static [&'static str] {
        match self {
            Action::Persistent => &["KL001", "KL003"],
            Action::Grid2d => &["KL002", "KL003"],
            Action::BlockSize => &["KL006", "KL003"],
            Action::Repair => &["KL003"],
        }
    }
}

/// One rewrite to run. `Default` has no file; set at least `file` and `action`.
#[derive(Debug, Clone)]
pub struct RewriteRequest {
    pub file: PathBuf,
    /// The text to rewrite (the editor's buffer); the file's content when `None`.
    pub text: Option<String>,
    pub action: Action,
    pub settings: Settings,
    /// Overrides `llm.candidates`.
    pub candidates: Option<u32>,
    /// Overrides `llm.repairs`.
    pub repairs: Option<u32>,
    /// Overrides `llm.timeout` (seconds per LLM call).
    pub llm_timeout: Option<f64>,
    /// Python for the harness, overriding `settings.python`.
    pub python: Option<String>,
    /// Explicit reference file; otherwise found as the benchmark finds it.
    pub reference: Option<PathBuf>,
    /// Module constants overridden in the benchmark runs (`seq_len=4`), for CPU-sized checks.
    pub overrides: Vec<(String, String)>,
    /// Benchmark on the Triton CPU interpreter even with a GPU.
    pub cpu: bool,
    /// Seconds per benchmark run; `bench.timeout` when `None`.
    pub bench_timeout: Option<f64>,
}

impl RewriteRequest {
    pub fn new(file: impl Into<PathBuf>, action: Action, settings: Settings) -> RewriteRequest {
        RewriteRequest {
            file: file.into(),
            text: None,
            action,
            settings,
            candidates: None,
            repairs: None,
            llm_timeout: None,
            python: None,
            reference: None,
            overrides: Vec::new(),
            cpu: false,
            bench_timeout: None,
        }
    }
}

/// A stage starting or ending; `record` is final when `finished`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageEvent {
    pub finished: bool,
    pub record: StageRecord,
}

/// How one candidate ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CandidateStatus {
    /// Chosen: the offered rewrite.
    Winner,
    /// Correct, and faster than the current file, but another was faster.
    Correct,
    /// Correct but not faster than the current file.
    Slower,
    /// Rejected by the static gate on its last attempt.
    Rejected,
    /// Failed to parse, compile or match the reference on its last attempt.
    Failed,
    /// The LLM call itself failed.
    LlmError,
}

impl CandidateStatus {
    /// The status as one word, as `--format json` writes it (`llm-error`).
    pub fn word(self) -> &'static str {
        match self {
            CandidateStatus::Winner => "winner",
            CandidateStatus::Correct => "correct",
            CandidateStatus::Slower => "slower",
            CandidateStatus::Rejected => "rejected",
            CandidateStatus::Failed => "failed",
            CandidateStatus::LlmError => "llm-error",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CandidateOutcome {
    /// 1-based.
    pub index: u32,
    pub status: CandidateStatus,
    /// LLM answers this candidate got (1 + repairs used).
    pub attempts: u32,
    /// Why it did not qualify (the last problem), if it did not.
    pub problem: Option<String>,
    /// Its last benchmark, if it got that far.
    pub bench: Option<BenchResult>,
    /// The candidate file of its last attempt.
    pub text: Option<String>,
    pub tokens: Usage,
    /// time(current) / time(candidate), timed together in the final ranking;
    /// under the CPU interpreter that is interpreter wall time, not a GPU figure.
    pub speedup_vs_current: Option<f64>,
}

/// The result of a rewrite: the edit to offer (if any candidate qualified) and the evidence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RewriteOutcome {
    pub action: Action,
    pub file: PathBuf,
    /// The rewritten file; `None` when no candidate qualified.
    pub new_text: Option<String>,
    /// Unified diff from the current text to `new_text`.
    pub diff: Option<String>,
    /// "Make persistent: 1.74x vs current (verified on NVIDIA H100 ...)", or why none qualified.
    pub title: String,
    /// Speedup of the winner over the current file (over PyTorch when the
    /// current file does not run correctly); `None` on the CPU interpreter.
    pub speedup: Option<f64>,
    /// `gpu` or `cpu-interpreter`: how the winner was verified; `None` without a winner.
    pub verified_mode: Option<String>,
    /// 1-based index of the winner.
    pub winner: Option<u32>,
    pub baseline: Option<BenchResult>,
    /// The final ranking: the current file, the reference and every correct
    /// candidate timed interleaved in one process (`bench::rank`); `None`
    /// when no candidate was correct.
    pub ranking: Option<BenchResult>,
    pub candidates: Vec<CandidateOutcome>,
    pub timeline: Vec<StageRecord>,
    pub tokens: Usage,
}
