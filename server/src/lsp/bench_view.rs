//! How a benchmark result shows in the editor: the code-lens title on
//! `ModelNew`, per-kernel inlay hints, and the harness's located error as a
//! `KL9xx` diagnostic. The table of `KL9xx` codes lives here, in one place.

use crate::bench::{BenchErrorInfo, BenchResult, KernelStats};
use crate::config::Settings;
use crate::diagnostic::{Diagnostic, Severity};
use crate::text::{LineIndex, TextRange};

/// A result from running the kernel: harness error kind -> code, name, severity, doc.
pub struct BenchCode {
    pub kind: &'static str,
    pub code: &'static str,
    pub name: &'static str,
    pub severity: Severity,
    pub doc: &'static str,
}

pub static BENCH_CODES: &[BenchCode] = &[
    BenchCode {
        kind: "compile-error",
        code: "KL901",
        name: "compile-error",
        severity: Severity::Error,
        doc: "## What it means\nTriton could not compile the kernel. The diagnostic sits on the line the compiler \
              named (Triton reports `at L:C` relative to the kernel's `def`; the harness maps it back to the file).\n\n\
              ## What to do\nRead the compiler message; common causes are non-constexpr shapes, unsupported \
              operations, or mismatched block shapes.",
    },
    BenchCode {
        kind: "out-of-resources",
        code: "KL902",
        name: "out-of-resources",
        severity: Severity::Error,
        doc: "## What it means\nThe compiled kernel needs more shared memory or registers than the GPU has.\n\n\
              ## What to do\nShrink `BLOCK_*` sizes or `num_stages`; see KL006 for the static estimate.",
    },
    BenchCode {
        kind: "mismatch",
        code: "KL903",
        name: "mismatch",
        severity: Severity::Error,
        doc: "## What it means\n`ModelNew` gives results that differ from the reference `Model` beyond the \
              tolerances (`atol`, `rtol`) on fresh random inputs.\n\n## What to do\nCheck masks, accumulation \
              dtype, and boundary handling.",
    },
    BenchCode {
        kind: "nondeterministic",
        code: "KL904",
        name: "nondeterministic",
        severity: Severity::Error,
        doc: "## What it means\nTwo runs on the same input gave different results: usually a race between \
              programs of the grid (see KL003) or unordered atomics.",
    },
    BenchCode {
        kind: "timeout",
        code: "KL905",
        name: "timeout",
        severity: Severity::Warning,
        doc: "## What it means\nThe benchmark did not finish within `bench.timeout` seconds and was killed.",
    },
    BenchCode {
        kind: "exception",
        code: "KL906",
        name: "exception",
        severity: Severity::Error,
        doc: "## What it means\nRunning the model raised a Python exception at this line.",
    },
    BenchCode {
        kind: "no-reference",
        code: "KL907",
        name: "no-reference",
        severity: Severity::Warning,
        doc: "## What it means\nNo reference model was found: add `# kernel-lsp: reference = PATH`, a `Model` \
              class in the same file, or `reference` in the settings.",
    },
    BenchCode {
        kind: "missing-dependency",
        code: "KL908",
        name: "missing-dependency",
        severity: Severity::Warning,
        doc: "## What it means\nThe Python interpreter (`python` setting) lacks torch or triton.",
    },
    BenchCode {
        kind: "non-tensor-output",
        code: "KL910",
        name: "non-tensor-output",
        severity: Severity::Error,
        doc: "## What it means\n`ModelNew.forward` returns something other than one tensor (a tuple, a list). \
              KernelBench compares one output tensor and counts this as incorrect. Return what the reference returns.",
    },
    BenchCode {
        kind: "local-import",
        code: "KL911",
        name: "local-import",
        severity: Severity::Error,
        doc: "## What it means\nThe candidate imports a module beside it. KernelBench loads a candidate from its \
              source alone (a temporary file), so the import fails there and the candidate counts as a compilation \
              failure; kernel-lsp loads it the same way. Put what it needs in the candidate file (see KL109).",
    },
    BenchCode {
        kind: "unknown-override",
        code: "KL912",
        name: "unknown-override",
        severity: Severity::Warning,
        doc: "## What it means\nA `--set NAME=VALUE` names no top-level assignment of the candidate or the reference.",
    },
    BenchCode {
        kind: "kernel-never-launched",
        code: "KL103",
        name: "kernel-never-launched",
        severity: Severity::Error,
        doc: "## What it means\nThe run watched `ModelNew.forward` and saw no launch of any of the file's \
              `@triton.jit` kernels: the output came from something else (PyTorch, a cache). The static rule \
              KL103 reads the code; this is the run's verdict, whatever the spelling.",
    },
    BenchCode {
        kind: "output-reused",
        code: "KL104",
        name: "output-reused-across-calls",
        severity: Severity::Error,
        doc: "## What it means\nThe run gave `ModelNew` new inputs and the reference's output changed, but \
              the candidate returned the same output as before: it does not depend on the input (a cached or \
              stored result). The static rule KL104 reads the code; this is the run's verdict.",
    },
    BenchCode {
        kind: "torch-computes-the-task",
        code: "KL102",
        name: "torch-computes-the-task",
        severity: Severity::Error,
        doc: "## What it means\nThe run watched every PyTorch operator `ModelNew.forward` dispatched (outside \
              Triton's launches) and weighed it against the reference's own forward: matrix products, convolutions \
              and attention by their FLOPs (`mm`, `addmm`, `bmm` and `einsum` are one family), other operators by \
              the elements they touch; views, copies, casts and allocations do not count. More than three quarters \
              of the reference's work was redone by PyTorch, so a speedup would be PyTorch's, not the kernel's. \
              The static rule KL102 reads the code; this is the run's verdict, whatever the spelling.",
    },
    BenchCode {
        kind: "precision-downgrade",
        code: "KL106",
        name: "precision-downgrade",
        severity: Severity::Error,
        doc: "## What it means\nOn a fp32 task, the run saw `ModelNew.forward` make fp16 or bf16 tensors (a cast, \
              an operator computing in half precision) or launch a kernel with one. That is less work than the task, \
              and not what KernelBench times, even where the output lands within tolerance. Where the output also \
              failed the check, the message says so. The static rule KL106 reads the code; this is the run's verdict.",
    },
    BenchCode {
        kind: "side-stream-or-thread",
        code: "KL105",
        name: "side-stream-or-thread",
        severity: Severity::Error,
        doc: "## What it means\nThe run saw a kernel launched from a thread other than the one running \
              `ModelNew.forward`, work on a CUDA stream other than the current one, or launches after forward \
              returned. Timers stop when forward's work on the current stream is done, so that work would not be \
              timed. The static rule KL105 reads the code; this is the run's verdict.",
    },
    BenchCode {
        kind: "timer-patch",
        code: "KL107",
        name: "timer-patch",
        severity: Severity::Error,
        doc: "## What it means\nThe run saw a clock or timing function (`time.perf_counter`, \
              `torch.cuda.synchronize`, `torch.cuda.Event` and its methods, `triton.testing.do_bench`, the \
              harness's own timing) replaced by another object after the candidate was imported or ran: no \
              figure is reported. The static rule KL107 finds the plain assignments; this is the run's verdict, \
              whatever the spelling.",
    },
    BenchCode {
        kind: "reference-error",
        code: "KL913",
        name: "reference-error",
        severity: Severity::Warning,
        doc: "## What it means\nThe reference itself failed (its `get_inputs`, `get_init_inputs`, `Model(...)` or \
              `forward`), so the candidate was not judged. The message and the line are the reference's.",
    },
    BenchCode {
        kind: "too-large-for-interpreter",
        code: "KL914",
        name: "too-large-for-interpreter",
        severity: Severity::Warning,
        doc: "## What it means\nThe task's inputs (made on the meta device: shapes only, nothing allocated) are too \
              large for Triton's CPU interpreter, which runs each program in numpy one at a time: over 64 Mi \
              elements, or more memory than half of what is free. The run was refused before it started.\n\n\
              ## What to do\nCheck correctness at reduced sizes (`kernel-lsp bench --small`, or the code action \
              Benchmark at reduced sizes), shrink the task with `--set NAME=VALUE`, run on a GPU, or run it anyway \
              (`--full-size`, or the code action).",
    },
    BenchCode {
        kind: "harness",
        code: "KL909",
        name: "harness-error",
        severity: Severity::Warning,
        doc: "## What it means\nThe benchmark harness itself failed; the message says why.",
    },
];

pub(crate) fn bench_code(kind: &str) -> &'static BenchCode {
    BENCH_CODES.iter().find(|c| c.kind == kind).unwrap_or(&BENCH_CODES[BENCH_CODES.len() - 1])
}

pub(crate) fn bench_code_by_code(code: &str) -> Option<&'static BenchCode> {
    BENCH_CODES.iter().find(|c| c.code.eq_ignore_ascii_case(code.trim()))
}

/// The code-lens title for a finished benchmark.
pub(crate) fn lens_title(r: &BenchResult) -> String {
    let correct = match r.correct {
        Some(true) => "correct",
        Some(false) => "INCORRECT",
        None => "correctness unknown",
    };
    if r.mode == "cpu-interpreter" {
        return format!("{correct} (CPU interpreter, no timing)");
    }
    let mut parts = Vec::new();
    let extra = |k: &str| r.extra.get(k).and_then(|v| v.as_f64());
    if let Some(s) = r.speedup {
        parts.push(format!("{s:.2}x vs PyTorch"));
    }
    if let Some(kb) = extra("kernelbench_speedup") {
        let flag = if r.extra.get("excessive_speedup").and_then(|v| v.as_bool()) == Some(true) {
            " ⚠ over 10x, KernelBench flags it"
        } else {
            ""
        };
        let moves = if r.extra.get("launch_bound_reference").and_then(|v| v.as_bool()) == Some(true) {
            ", launch-bound reference: moves between runs"
        } else {
            ""
        };
        parts.push(format!("KernelBench {kb:.2}x (mean{moves}){flag}"));
    }
    if let Some(g) = extra("graph_speedup") {
        parts.push(format!("{g:.2}x vs CUDA graph"));
    }
    if let (Some(new), Some(old)) = (r.new_ms, r.ref_ms) {
        parts.push(format!("{new:.1} ms vs {old:.1} ms"));
    }
    parts.push(correct.to_string());
    if let Some(n) = r.launches_per_forward {
        parts.push(format!("{n} launch{}", if n == 1 { "" } else { "es" }));
    }
    if let Some(e) = &r.error {
        parts.push(e.kind.clone());
    }
    parts.join(" · ")
}

/// Markdown for the hover over `ModelNew` once it was benchmarked: every
/// figure with what it is, so the robust number and KernelBench's are never
/// confused.
pub(crate) fn hover_section(r: &BenchResult) -> String {
    let extra = |k: &str| r.extra.get(k).and_then(|v| v.as_f64());
    let text = |k: &str| r.extra.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let mut lines = vec![format!("**Benchmark** ({})", if r.mode == "gpu" { "GPU" } else { r.mode.as_str() })];
    let verdict = match r.correct {
        Some(true) => "correct",
        Some(false) => "incorrect",
        None => "correctness unknown",
    };
    let mut v = format!("- {verdict}");
    if let Some(t) = extra("tolerance") {
        let profile = text("tolerance_profile").unwrap_or_else(|| "custom".into());
        v.push_str(&format!(" at atol = rtol = {t:e} ({profile})"));
    }
    if let Some(d) = extra("max_abs_diff") {
        v.push_str(&format!("; max abs diff {d:.2e}"));
        if let Some(idx) = r.extra.get("max_abs_diff_index").and_then(|v| v.as_array()) {
            let idx: Vec<String> = idx.iter().map(|i| i.to_string()).collect();
            v.push_str(&format!(" at output[{}]", idx.join(", ")));
        }
    }
    lines.push(v);
    if let Some(note) = text("verdict_note") {
        lines.push(format!("- {note}"));
    }
    if r.mode == "cpu-interpreter" {
        lines.push("- no timing: Triton's CPU interpreter says nothing about GPU speed".into());
    }
    if let Some(s) = r.speedup {
        let stat = text("timing_statistic").unwrap_or_else(|| "p10".into());
        lines.push(format!("- {s:.2}x vs PyTorch: robust figure, interleaved runs, {stat} of each side"));
    }
    if let Some(kb) = extra("kernelbench_speedup") {
        lines.push(format!("- {kb:.2}x KernelBench's speedup: mean of its CUDA-event trials, L2 cleared before each"));
        if r.extra.get("excessive_speedup").and_then(|v| v.as_bool()) == Some(true) {
            let note = text("excessive_speedup_note").unwrap_or_else(|| "over 10x: KernelBench flags it".into());
            lines.push(format!("- ⚠ {note}"));
        }
        if let Some(note) = text("kernelbench_spread_note") {
            lines.push(format!("- {note}"));
        }
    }
    if let Some(g) = extra("graph_speedup") {
        lines.push(format!("- {g:.2}x vs the reference captured in a CUDA graph (no launch overhead)"));
    }
    if let (Some(new), Some(old)) = (r.new_ms, r.ref_ms) {
        lines.push(format!("- {new:.3} ms vs {old:.3} ms per forward"));
    }
    if let Some(e) = &r.error {
        lines.push(format!("- {}: {}", e.kind, e.message));
    }
    lines.join("\n")
}

/// The inlay-hint label for one compiled kernel.
pub(crate) fn kernel_hint(k: &KernelStats) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(r) = k.registers {
        parts.push(format!("regs {r}"));
    }
    if let Some(s) = k.spills {
        parts.push(format!("spills {s}"));
    }
    if let Some(b) = k.shared {
        parts.push(format!("smem {:.1} KB", b as f64 / 1024.0));
    }
    if let Some(w) = k.num_warps {
        parts.push(format!("warps {w}"));
    }
    (!parts.is_empty()).then(|| parts.join(" · "))
}

/// The harness's error as a diagnostic on its line (1-based line/column), when
/// it concerns this file; without a line, on `fallback`. A shared-memory
/// `OutOfResources` (KL902) carries the deterministic shrink as its fix
/// (`fix::oor`), when one can be built and verified on `text`.
pub(crate) fn error_diagnostic(
    e: &BenchErrorInfo,
    this_file: &std::path::Path,
    text: &str,
    index: &LineIndex,
    fallback: TextRange,
    settings: &Settings,
) -> Diagnostic {
    let code = bench_code(&e.kind);
    let same_file = match &e.file {
        None => true,
        Some(f) => {
            let p = std::path::Path::new(f);
            p == this_file || this_file.ends_with(p) || p.file_name() == this_file.file_name()
        }
    };
    let range = match e.line.filter(|l| *l >= 1 && same_file) {
        Some(line) => {
            let line = (line as usize - 1).min(index.line_count().saturating_sub(1));
            let start = index.line_start(line);
            let line_text = text[start.min(text.len())..].split('\n').next().unwrap_or("");
            let indent = line_text.len() - line_text.trim_start().len();
            let col = e.column.map(|c| c.saturating_sub(1) as usize).unwrap_or(indent);
            let col_byte = index.offset(text, line, col, crate::text::ColumnUnit::Char) - start;
            let col_byte = col_byte.min(line_text.len());
            let end = line_text.trim_end().len().max(col_byte + 1).min(line_text.len());
            TextRange::new(start + col_byte, start + end)
        }
        None => fallback,
    };
    let location = match (&e.file, e.line) {
        (Some(f), Some(l)) if !same_file => format!(" (at {f}:{l})"),
        _ => String::new(),
    };
    let fix = match e.kind.as_str() {
        "out-of-resources" => {
            let line = e.line.filter(|_| same_file);
            crate::fix::oor::fix(text, settings, &e.message, line)
                .map_err(|why| tracing::debug!("no shrink for this OutOfResources: {why}"))
                .ok()
        }
        _ => None,
    };
    Diagnostic {
        code: code.code.into(),
        name: code.name.into(),
        severity: code.severity,
        range,
        message: format!("{}{location}", e.message.trim()).into(),
        related: Vec::new(),
        fix,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(mode: &str) -> BenchResult {
        BenchResult {
            mode: mode.to_string(),
            correct: Some(true),
            speedup: Some(1.6187),
            ref_ms: Some(48.4),
            new_ms: Some(29.9),
            launches_per_forward: Some(6),
            kernels: Vec::new(),
            device: None,
            error: None,
            extra: Default::default(),
        }
    }

    #[test]
    fn hover_names_every_figure() {
        let mut kb = result("gpu");
        kb.extra.insert("kernelbench_speedup".into(), 28.86.into());
        kb.extra.insert("excessive_speedup".into(), true.into());
        kb.extra.insert("graph_speedup".into(), 4.06.into());
        kb.extra.insert("tolerance".into(), 1e-4.into());
        kb.extra.insert("tolerance_profile".into(), "kernelbench".into());
        kb.extra.insert("max_abs_diff".into(), 7.6e-5.into());
        kb.extra.insert("max_abs_diff_index".into(), serde_json::json!([3, 7, 12]));
        let h = hover_section(&kb);
        assert!(
            h.contains("correct at atol = rtol = 1e-4 (kernelbench); max abs diff 7.60e-5 at output[3, 7, 12]"),
            "{h}"
        );
        assert!(h.contains("1.62x vs PyTorch: robust figure"), "{h}");
        assert!(h.contains("28.86x KernelBench's speedup: mean"), "{h}");
        assert!(h.contains("⚠ over 10x"), "{h}");
        assert!(h.contains("4.06x vs the reference captured in a CUDA graph"), "{h}");
        let cpu = hover_section(&result("cpu-interpreter"));
        assert!(cpu.contains("no timing") && !cpu.contains("KernelBench's speedup"), "{cpu}");
    }

    #[test]
    fn a_launch_bound_reference_is_named_wherever_kernelbenchs_figure_is() {
        let note = "launch-bound reference (63.1 ms eager, 8.9 ms as a CUDA graph): its time follows the host";
        let mut kb = result("gpu");
        kb.extra.insert("kernelbench_speedup".into(), 28.86.into());
        kb.extra.insert("kernelbench_ref_ms".into(), 63.1.into());
        kb.extra.insert("kernelbench_new_ms".into(), 2.19.into());
        kb.extra.insert("graph_speedup".into(), 4.06.into());
        kb.extra.insert("launch_bound_reference".into(), true.into());
        kb.extra.insert("kernelbench_spread_note".into(), note.into());
        assert!(lens_title(&kb).contains("KernelBench 28.86x (mean, launch-bound reference: moves between runs)"));
        assert!(hover_section(&kb).contains(&format!("- {note}")), "{}", hover_section(&kb));
        let text = crate::bench::cli::render_text(std::path::Path::new("/w/c.py"), &kb);
        assert!(text.contains(&format!("KernelBench's figure: {note}")), "{text}");
        // a GPU-bound reference says none of it
        kb.extra.remove("launch_bound_reference");
        kb.extra.remove("kernelbench_spread_note");
        assert!(!lens_title(&kb).contains("launch-bound"));
        assert!(!hover_section(&kb).contains("launch-bound"));
        assert!(!crate::bench::cli::render_text(std::path::Path::new("/w/c.py"), &kb).contains("launch-bound"));
    }

    #[test]
    fn lens_titles() {
        assert_eq!(lens_title(&result("gpu")), "1.62x vs PyTorch · 29.9 ms vs 48.4 ms · correct · 6 launches");
        assert_eq!(lens_title(&result("cpu-interpreter")), "correct (CPU interpreter, no timing)");
        let mut kb = result("gpu");
        kb.extra.insert("kernelbench_speedup".into(), 28.86.into());
        kb.extra.insert("excessive_speedup".into(), true.into());
        kb.extra.insert("graph_speedup".into(), 4.06.into());
        assert_eq!(
            lens_title(&kb),
            "1.62x vs PyTorch · KernelBench 28.86x (mean) ⚠ over 10x, KernelBench flags it · 4.06x vs CUDA graph · \
             29.9 ms vs 48.4 ms · correct · 6 launches"
        );
    }

    #[test]
    fn errors_land_on_their_line() {
        let text = "import triton\n\ndef k():\n    x = tl.foo(1)\n";
        let index = LineIndex::new(text);
        let e = BenchErrorInfo {
            kind: "compile-error".into(),
            message: "foo is not defined".into(),
            file: Some("/w/k.py".into()),
            line: Some(4),
            column: Some(9),
        };
        let d = error_diagnostic(
            &e,
            std::path::Path::new("/w/k.py"),
            text,
            &index,
            TextRange::new(0, 1),
            &Settings::default(),
        );
        assert_eq!(d.code, "KL901");
        assert_eq!(&text[d.range.start..d.range.end], "tl.foo(1)");
        assert_eq!(d.fix, None);
    }

    /// The error as the harness reported it on an H100 (Triton 3.6), on the launch's line.
    #[test]
    fn out_of_resources_carries_the_shrink() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/matmul_smem/candidate_big_blocks.py");
        let text = std::fs::read_to_string(&path).expect("example");
        let index = LineIndex::new(&text);
        let line = text.lines().position(|l| l.contains("linear_bias_relu_kernel[grid](")).expect("launch") + 1;
        let e = BenchErrorInfo {
            kind: "out-of-resources".into(),
            message: "out of resource: shared memory, Required: 1048576, Hardware limit: 232448. Reducing block \
                      sizes or `num_stages` may help."
                .into(),
            file: Some(path.display().to_string()),
            line: Some(line as u32),
            column: Some(9),
        };
        let d = error_diagnostic(&e, &path, &text, &index, TextRange::new(0, 1), &Settings::default());
        assert_eq!(d.code, "KL902");
        let fix = d.fix.expect("the shrink");
        assert_eq!(fix.applicability, crate::diagnostic::Applicability::NeedsReview);
        assert!(fix.title.starts_with("Shrink to BLOCK_K="), "{}", fix.title);
        // Another resource: no shrink.
        let e =
            BenchErrorInfo { message: "out of resource: threads, Required: 2048, Hardware limit: 1024".into(), ..e };
        let d = error_diagnostic(&e, &path, &text, &index, TextRange::new(0, 1), &Settings::default());
        assert_eq!(d.fix, None);
    }
}
