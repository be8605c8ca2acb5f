//! The end of a rewrite: the correct candidates timed side by side with the
//! current file (`Ctx::rank`), the winner chosen and the outcome titled (`pick`).

use super::*;

/// The final ranking: times of the current file and of each correct candidate,
/// taken interleaved in one harness process (`bench::rank`).
pub(super) struct Ranking {
    pub(super) result: BenchResult,
    pub(super) current_ms: Option<f64>,
    pub(super) reference_ms: Option<f64>,
    /// By index into the candidates; only those that were ranked.
    pub(super) ms: Vec<(usize, Option<f64>)>,
}

impl Ctx {
    /// Times the current text, the reference and every correct candidate
    /// together; `None` when no candidate is correct.
    pub(super) async fn rank(&self, candidates: &[CandidateOutcome]) -> Option<Ranking> {
        let ranked: Vec<(usize, &str)> = candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| c.bench.as_ref().is_some_and(|b| b.correct == Some(true) && b.error.is_none()))
            .filter_map(|(i, c)| Some((i, c.text.as_deref()?)))
            .collect();
        if ranked.is_empty() {
            return None;
        }
        let _turn = self.bench_lock.lock().await;
        let current = match self.candidate_file("rank", &self.text) {
            Ok(t) => t,
            Err(e) => {
                let result = BenchResult::failed("harness", e.to_string(), Some(&self.file), None);
                return Some(Ranking { result, current_ms: None, reference_ms: None, ms: Vec::new() });
            }
        };
        let mut files = Vec::new();
        for (i, text) in &ranked {
            match self.candidate_file(&format!("rank{}", candidates[*i].index), text) {
                Ok(t) => files.push((*i, t)),
                Err(e) => tracing::warn!("cannot write a candidate for the ranking: {e}"),
            }
        }
        let request = self.request(current.0.clone(), false);
        let paths: Vec<PathBuf> = files.iter().map(|(_, t)| t.0.clone()).collect();
        let result = bench::rank(request, &paths).await.unwrap_or_else(|e| e.into_result(&current.0));
        let reference_ms = result
            .extra
            .get("ranking")
            .and_then(|r| r.as_array())
            .and_then(|r| r.iter().find(|e| e.get("role").and_then(|v| v.as_str()) == Some("reference")))
            .and_then(|e| e.get("ms")?.as_f64());
        Some(Ranking {
            current_ms: bench::ranked_ms(&result, &current.0),
            reference_ms,
            ms: files.iter().map(|(i, t)| (*i, bench::ranked_ms(&result, &t.0))).collect(),
            result,
        })
    }
}

/// Chooses the winner and fills in the statuses and the title. With a
/// ranking, "vs current" is time(current) / time(candidate) from the one
/// process that timed them side by side; without one (it could not run), the
/// ratio of the two runs' speedups, and the title says so.
pub(super) fn pick(
    ctx: &Ctx,
    baseline: BenchResult,
    candidates: &mut [CandidateOutcome],
    ranking: Option<&Ranking>,
) -> RewriteOutcome {
    let verb = ctx.req.action.title();
    let base_correct = baseline.correct == Some(true) && baseline.error.is_none();
    let base_speed = if base_correct { baseline.speedup } else { None };
    let correct = |c: &CandidateOutcome| c.bench.as_ref().is_some_and(|b| b.correct == Some(true) && b.error.is_none());
    let mut winner: Option<usize> = None;
    let mut title = String::new();
    let mut speedup = None;
    let mut mode = None;
    let gpu = candidates.iter().any(|c| correct(c) && c.bench.as_ref().is_some_and(|b| b.mode == "gpu"));
    let direct = |i: usize| ranking.and_then(|r| r.ms.iter().find(|(j, _)| *j == i).and_then(|(_, ms)| *ms));
    let current_ms = ranking.and_then(|r| r.current_ms).filter(|_| base_correct);
    let reference_ms = ranking.and_then(|r| r.reference_ms);
    for (i, c) in candidates.iter_mut().enumerate() {
        if let (Some(cur), Some(ms)) = (current_ms, direct(i)) {
            c.speedup_vs_current = Some(cur / ms);
        }
    }

    if gpu && ranking.is_some_and(|r| r.ms.iter().any(|(_, ms)| ms.is_some())) {
        // On the GPU, measured directly: the fastest correct candidate that beats the current file.
        let mut best: Option<(usize, f64)> = None;
        for (i, c) in candidates.iter_mut().enumerate() {
            let Some(ms) = direct(i).filter(|_| correct(c)) else {
                continue;
            };
            if let Some(cur) = current_ms.filter(|cur| ms >= *cur) {
                c.status = CandidateStatus::Slower;
                c.problem = Some(format!("correct, but {:.2}x the current file's speed (timed together)", cur / ms));
                continue;
            }
            if best.is_none_or(|(_, b)| ms < b) {
                best = Some((i, ms));
            }
        }
        if let Some((i, ms)) = best {
            let device =
                candidates[i].bench.as_ref().and_then(|b| b.device.clone()).unwrap_or_else(|| "the GPU".into());
            title = match (current_ms, reference_ms) {
                (Some(cur), _) => format!(
                    "{verb}: {:.2}x vs current (timed together with the current file and the reference on {device})",
                    cur / ms
                ),
                (None, Some(r)) => format!(
                    "{verb}: correct, {:.2}x vs PyTorch (timed together on {device}; the current file does not run correctly)",
                    r / ms
                ),
                (None, None) => format!("{verb}: correct, {ms:.3} ms (verified on {device})"),
            };
            speedup = current_ms.map(|cur| cur / ms).or(reference_ms.map(|r| r / ms));
            mode = Some("gpu".to_string());
            winner = Some(i);
        }
    } else if gpu {
        // The ranking could not run: the ratio of two runs' speedups, said as such.
        let why = ranking
            .and_then(|r| r.result.error.as_ref())
            .map(|e| format!("{}: {}", e.kind, ctx.clean(e.message.lines().last().unwrap_or_default())))
            .unwrap_or_else(|| "no ranking".to_string());
        let mut best: Option<(usize, f64)> = None;
        for (i, c) in candidates.iter_mut().enumerate() {
            let Some(s) = c.bench.as_ref().filter(|_| correct(c)).and_then(|b| b.speedup) else {
                continue;
            };
            c.speedup_vs_current = base_speed.map(|base| s / base);
            if base_speed.is_some_and(|base| s <= base) {
                c.status = CandidateStatus::Slower;
                c.problem = Some(format!("correct, but {:.2}x the current file's speed", s / base_speed.unwrap_or(s)));
                continue;
            }
            if best.is_none_or(|(_, bs)| s > bs) {
                best = Some((i, s));
            }
        }
        if let Some((i, s)) = best {
            let device =
                candidates[i].bench.as_ref().and_then(|b| b.device.clone()).unwrap_or_else(|| "the GPU".into());
            title = match base_speed {
                Some(base) => format!(
                    "{verb}: {:.2}x vs current (ratio of two separate runs' speedups on {device}; the direct ranking failed: {why})",
                    s / base
                ),
                None => format!(
                    "{verb}: correct, {s:.2}x vs PyTorch (verified on {device}; the current file does not run correctly)"
                ),
            };
            speedup = Some(base_speed.map_or(s, |base| s / base));
            mode = Some("gpu".to_string());
            winner = Some(i);
        }
    } else {
        // On the CPU interpreter nothing is timed on a GPU: the correct candidate with the fewest launches.
        let cpu = candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| correct(c) && c.bench.as_ref().is_some_and(|b| b.mode == "cpu-interpreter"))
            .min_by_key(|(_, c)| (c.bench.as_ref().and_then(|b| b.launches_per_forward).unwrap_or(u64::MAX), c.index));
        if let Some((i, _)) = cpu {
            // The ranking's interpreter wall-time ratio stays in `speedup_vs_current`
            // and `ranking`: it is not a GPU speed, so the title claims none.
            title = format!("{verb}: correct on the CPU interpreter; speed not measured");
            mode = Some("cpu-interpreter".to_string());
            winner = Some(i);
        }
    }
    if let Some(i) = winner {
        candidates[i].status = CandidateStatus::Winner;
    }
    if winner.is_none() {
        let parts: Vec<String> = candidates
            .iter()
            .map(|c| format!("#{} {}", c.index, c.problem.as_deref().unwrap_or(c.status.word())))
            .collect();
        title = format!("{verb}: no verified rewrite ({})", parts.join("; "));
    }
    let new_text = winner.and_then(|i| candidates[i].text.clone());
    let name = ctx.rel.clone();
    let diff =
        new_text.as_ref().map(|t| crate::llm::diff::unified(&ctx.text, t, &format!("a/{name}"), &format!("b/{name}")));
    let mut tokens = Usage::default();
    for c in candidates.iter() {
        tokens.add(c.tokens);
    }
    RewriteOutcome {
        action: ctx.req.action,
        file: ctx.file.clone(),
        new_text,
        diff,
        title,
        speedup,
        verified_mode: mode,
        winner: winner.map(|i| candidates[i].index),
        baseline: Some(baseline),
        ranking: ranking.map(|r| r.result.clone()),
        candidates: Vec::new(),
        timeline: Vec::new(),
        tokens,
    }
}
