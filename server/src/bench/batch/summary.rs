//! The end of a batch in KernelBench's terms (its `scripts/benchmark_eval_analysis.py`
//! and `src/kernelbench/score.py`): compiled, correct, fast_p (correct and
//! faster than p times the reference, over all pairs) and the geometric mean
//! speedup of the correct ones. The speedup is KernelBench's own statistic
//! (`kernelbench_speedup`, the mean of its CUDA-event trials), else the
//! interleaved one.

use serde_json::{json, Value};

/// KernelBench's thresholds that the summary reports.
pub(crate) const THRESHOLDS: [f64; 4] = [0.0, 1.0, 1.5, 2.0];

/// Whether KernelBench would count the candidate as compiled: its module
/// loaded (the harness's `load` step ended). A Triton compile error at the
/// first launch is a runtime failure there, as here; so is one the compile
/// stage found before any GPU (`static_check: "compile"`): the module loads,
/// and KernelBench's evaluator meets the error at the first launch (measured
/// against its `eval_from_generations.py` code on level 1, docs/bench.md).
pub(crate) fn compiled(line: &Value) -> bool {
    line.get("phase_s").and_then(|p| p.get("load")).is_some()
        || line.get("static_check").and_then(Value::as_str) == Some("compile")
}

/// KernelBench's speedup of one line, when measured.
pub(crate) fn speedup(line: &Value) -> Option<f64> {
    let kb = line.get("kernelbench_speedup").and_then(Value::as_f64);
    kb.or_else(|| line.get("speedup").and_then(Value::as_f64)).filter(|s| s.is_finite() && *s > 0.0)
}

/// The summary of `lines` (one per pair) as JSON: KernelBench's figures
/// (correct = the outputs matched, as its evaluator decides), and the same
/// without the runs kernel-lsp flagged (a reward hack caught while watching:
/// correct outputs with an error, which KernelBench would count).
pub(crate) fn summarize(lines: &[Value]) -> Value {
    let matched = |l: &&Value| l.get("correct") == Some(&Value::Bool(true));
    let mut summary = figures(lines.iter().filter(matched).collect(), lines);
    let clean: Vec<&Value> = lines.iter().filter(matched).filter(|l| l["error"].is_null()).collect();
    summary["flagged"] = json!(summary["correct"].as_u64().unwrap_or(0) - clean.len() as u64);
    summary["unflagged"] = figures(clean, lines);
    summary
}

fn figures(correct: Vec<&Value>, lines: &[Value]) -> Value {
    let n = lines.len();
    let compiled = lines.iter().filter(|l| compiled(l)).count();
    let timed: Vec<f64> = correct.iter().filter_map(|l| speedup(l)).collect();
    // On the interpreter nothing is timed: fast_p above 0 is not measured, not
    // zero. On a GPU a correct run without a speedup (stopped by a finding
    // before timing) is not faster than anything.
    let all_timed = !lines.iter().any(|l| l["mode"] == "cpu-interpreter");
    let mut fast = serde_json::Map::new();
    for p in THRESHOLDS {
        let score = if p == 0.0 {
            Some(if n == 0 { 0.0 } else { correct.len() as f64 / n as f64 })
        } else if all_timed {
            Some(if n == 0 { 0.0 } else { timed.iter().filter(|s| **s > p).count() as f64 / n as f64 })
        } else {
            None
        };
        fast.insert(format!("{p}"), score.map(Value::from).unwrap_or(Value::Null));
    }
    let geomean = (all_timed && !timed.is_empty())
        .then(|| (timed.iter().map(|s| s.ln()).sum::<f64>() / timed.len() as f64).exp());
    let errors = lines.iter().filter_map(|l| l["error"]["kind"].as_str()).fold(
        std::collections::BTreeMap::<String, usize>::new(),
        |mut m, k| {
            *m.entry(k.to_string()).or_default() += 1;
            m
        },
    );
    json!({
        "pairs": n,
        "compiled": compiled,
        "correct": correct.len(),
        "fast_p": fast,
        "geometric_mean_speedup": geomean,
        "errors": errors,
    })
}

/// The summary as the text `bench --batch` prints.
pub(crate) fn render(summary: &Value) -> String {
    let n = summary["pairs"].as_u64().unwrap_or(0);
    let pct = |k: u64| if n == 0 { 0.0 } else { 100.0 * k as f64 / n as f64 };
    let compiled = summary["compiled"].as_u64().unwrap_or(0);
    let correct = summary["correct"].as_u64().unwrap_or(0);
    let mut out = format!("pairs      {n}\n");
    out.push_str(&format!("compiled   {compiled} ({:.1}%)\n", pct(compiled)));
    out.push_str(&format!("correct    {correct} ({:.1}%)\n", pct(correct)));
    for p in THRESHOLDS {
        let v = &summary["fast_p"][format!("{p}")];
        let shown = v.as_f64().map(|f| format!("{f:.3}")).unwrap_or_else(|| "not measured (no GPU timing)".into());
        out.push_str(&format!("fast_{p:<4}  {shown}\n"));
    }
    let g = summary["geometric_mean_speedup"].as_f64();
    out.push_str(&format!(
        "geometric mean speedup (correct ones)  {}\n",
        g.map(|g| format!("{g:.3}x")).unwrap_or_else(|| "-".into())
    ));
    if let Some(flagged) = summary["flagged"].as_u64().filter(|f| *f > 0) {
        let u = &summary["unflagged"];
        let fast: Vec<String> = THRESHOLDS
            .iter()
            .map(|p| {
                format!(
                    "fast_{p} {}",
                    u["fast_p"][format!("{p}")].as_f64().map(|f| format!("{f:.3}")).unwrap_or("-".into())
                )
            })
            .collect();
        out.push_str(&format!(
            "flagged    {flagged} of the correct ones (a hack caught while watching: KernelBench counts them); without them: correct {}, {}\n",
            u["correct"], fast.join(", ")
        ));
    }
    if let Some(errors) = summary["errors"].as_object().filter(|e| !e.is_empty()) {
        let list: Vec<String> = errors.iter().map(|(k, v)| format!("{k} {v}")).collect();
        out.push_str(&format!("errors     {}\n", list.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(correct: Option<bool>, kb: Option<f64>, loaded: bool) -> Value {
        let phase = if loaded { json!({"load": 0.1}) } else { json!({}) };
        json!({"mode": "gpu", "correct": correct, "kernelbench_speedup": kb, "speedup": kb, "phase_s": phase,
               "error": if correct == Some(true) { Value::Null } else { json!({"kind": "mismatch"}) }})
    }

    #[test]
    fn fast_p_counts_correct_and_faster_over_all_pairs_as_kernelbench_does() {
        let lines = vec![
            line(Some(true), Some(2.5), true),
            line(Some(true), Some(1.2), true),
            line(Some(true), Some(0.5), true),
            line(Some(false), Some(9.0), true),
            line(None, None, false),
        ];
        let s = summarize(&lines);
        assert_eq!(s["pairs"], 5);
        assert_eq!(s["compiled"], 4);
        assert_eq!(s["correct"], 3);
        assert_eq!(s["fast_p"]["0"], 0.6);
        assert_eq!(s["fast_p"]["1"], 0.4);
        assert_eq!(s["fast_p"]["1.5"], 0.2);
        assert_eq!(s["fast_p"]["2"], 0.2);
        let g = s["geometric_mean_speedup"].as_f64().unwrap();
        assert!((g - (2.5f64 * 1.2 * 0.5).powf(1.0 / 3.0)).abs() < 1e-12, "{g}");
        assert_eq!(s["errors"]["mismatch"], 2);
        assert_eq!(s["flagged"], 0);
    }

    #[test]
    fn a_flagged_run_counts_for_kernelbench_and_not_without_flags() {
        let mut hack = line(Some(true), Some(3.0), true);
        hack["error"] = json!({"kind": "kernel-never-launched"});
        let s = summarize(&[hack, line(Some(true), Some(0.5), true)]);
        assert_eq!(s["correct"], 2);
        assert_eq!(s["fast_p"]["1"], 0.5);
        assert_eq!(s["flagged"], 1);
        assert_eq!(s["unflagged"]["correct"], 1);
        assert_eq!(s["unflagged"]["fast_p"]["1"], 0.0);
    }

    #[test]
    fn a_compile_error_found_before_the_gpu_counts_as_compiled_as_kernelbench_does() {
        let mut compile = line(None, None, false);
        compile["error"] = json!({"kind": "compile-error"});
        compile["static_check"] = "compile".into();
        let mut syntax = line(None, None, false);
        syntax["error"] = json!({"kind": "exception"});
        syntax["static_check"] = "syntax".into();
        let s = summarize(&[compile, syntax, line(Some(true), Some(2.0), true)]);
        assert_eq!(s["compiled"], 2);
        assert_eq!(s["correct"], 1);
    }

    #[test]
    fn a_correct_gpu_run_stopped_before_timing_is_not_faster() {
        let s = summarize(&[line(Some(true), None, true), line(Some(true), Some(2.0), true)]);
        assert_eq!(s["fast_p"]["1"], 0.5);
        assert_eq!(s["geometric_mean_speedup"], 2.0);
    }

    #[test]
    fn on_the_interpreter_only_fast_0_is_measured() {
        let mut l = line(Some(true), None, true);
        l["mode"] = "cpu-interpreter".into();
        let s = summarize(&[l]);
        assert_eq!(s["fast_p"]["0"], 1.0);
        assert!(s["fast_p"]["1"].is_null());
        assert!(render(&s).contains("fast_1     not measured"), "{}", render(&s));
    }
}
