//! The rewrite pipeline: baseline, candidates in parallel (answer -> extract
//! -> gate -> harness -> repair), pick. See the module doc of `llm`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc::UnboundedSender;

use super::client::{Client, ClientConfig, Message};
use super::extract::{self, ExtractError};
use super::timeline::{self, StageRecord};
use super::{
    prompts, Action, CandidateOutcome, CandidateStatus, LlmError, RewriteOutcome, RewriteRequest, StageEvent, Usage,
};
use crate::bench::{self, BenchRequest, BenchResult};

mod compiled;
mod first;
mod ranking;
use compiled::compile_stage;
use first::first_prompt;
use ranking::pick;

/// Everything the candidates share, resolved once.
struct Ctx {
    req: RewriteRequest,
    file: PathBuf,
    text: String,
    root: PathBuf,
    rel: String,
    run: String,
    reference: Option<PathBuf>,
    system: String,
    first_prompt: String,
    repairs: u32,
    gpu: String,
    smem: String,
    /// One benchmark at a time: parallel runs would spoil each other's timings.
    bench_lock: tokio::sync::Mutex<()>,
    /// Where the answers' code runs (see `bench::sandbox`): every harness run
    /// of this pipeline is built by `Ctx::request`, which sets it.
    sandbox: Arc<super::sandbox::Sandbox>,
    /// The interpreter whose Triton compiles each answer, and its compiler once prepared.
    compile_python: String,
    compiler: tokio::sync::OnceCell<Result<Arc<crate::compile::Compiler>, String>>,
}

/// Runs the pipeline; `on_stage` hears every stage start and end. Drop the
/// future to cancel. `Err` when nothing could be tried: the LLM unreachable
/// or failing for every candidate, the benchmark unable to run, bad settings.
pub async fn rewrite(
    req: RewriteRequest,
    mut on_stage: impl FnMut(StageEvent) + Send,
) -> Result<RewriteOutcome, LlmError> {
    let file = std::path::absolute(&req.file).map_err(|e| LlmError::Setup(format!("{}: {e}", req.file.display())))?;
    let text = match &req.text {
        Some(t) => t.clone(),
        None => std::fs::read_to_string(&file)
            .map_err(|e| LlmError::Setup(format!("cannot read {}: {e}", file.display())))?,
    };
    let client = Arc::new(Client::new(ClientConfig::from_settings(&req.settings.llm, req.llm_timeout)?)?);
    let root = bench::history::project_root(&file);
    let rel = file.strip_prefix(&root).unwrap_or(&file).display().to_string();
    let unix = unix_now();
    let prompts_dir = req.settings.prompts_dir.as_ref().map(|d| match Path::new(d).is_absolute() {
        true => PathBuf::from(d),
        false => root.join(d),
    });
    let reference = bench::find_reference(&file, &text, req.reference.as_deref(), &req.settings);
    let gpu_spec = req.settings.gpu();
    // The sandbox's preparation starts processes and waits for them (bwrap
    // and the interpreter asked where they live): on the blocking pool, not
    // on the thread that serves the editor.
    let sandbox = {
        let req = req.clone();
        tokio::task::spawn_blocking(move || sandbox_for(&req))
            .await
            .map_err(|e| LlmError::Setup(format!("the sandbox could not be prepared: {e}")))??
    };
    let mut ctx = Ctx {
        repairs: req.repairs.unwrap_or(req.settings.llm.repairs),
        system: prompts::load(prompts::SYSTEM, prompts_dir.as_deref())?,
        first_prompt: String::new(),
        gpu: gpu_spec.name.to_string(),
        smem: gpu_spec.smem_per_block.to_string(),
        run: format!("{unix}-{}", std::process::id()),
        file,
        text,
        root,
        rel,
        reference,
        bench_lock: tokio::sync::Mutex::new(()),
        sandbox: Arc::new(sandbox),
        compile_python: bench::resolve_python(&BenchRequest {
            python: req.python.clone(),
            settings: req.settings.clone(),
            ..Default::default()
        }),
        compiler: tokio::sync::OnceCell::new(),
        req,
    };
    let mut records = Vec::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<StageEvent>();
    let forward = |ev: StageEvent, records: &mut Vec<StageRecord>, on_stage: &mut (dyn FnMut(StageEvent) + Send)| {
        if ev.finished {
            records.push(ev.record.clone());
        }
        on_stage(ev);
    };

    let _ = tx.send(StageEvent {
        finished: true,
        record: ctx.record("sandbox", None, None, ctx.sandbox.kind.to_string(), 0, &ctx.sandbox.description, None),
    });
    // No benchmark before the endpoint answers: a missing LLM is said at once.
    let default_endpoint = ctx.req.settings.llm.base_url == crate::config::LlmSettings::default().base_url;
    client.check_reachable(default_endpoint).await?;
    // The baseline: the current text, benchmarked as a candidate would be.
    let baseline = ctx.bench("baseline", None, None, &ctx.text, &tx).await?;
    while let Ok(ev) = rx.try_recv() {
        forward(ev, &mut records, &mut on_stage);
    }
    if let Some(e) = baseline.error.as_ref().filter(|e| is_environment_failure(&e.kind)) {
        save_timeline(&ctx, &records);
        return Err(LlmError::Bench(format!("{}: {}", e.kind, ctx.clean(&e.message))));
    }
    // A repair also reads what the compiler says of the current file: on the CPU interpreter
    // the baseline runs kernels as Python and does not see what only the compiler rejects.
    let compile_errors = match ctx.req.action {
        Action::Repair => ctx.compile_verdict(&ctx.text).await.map(|v| v.errors).unwrap_or_default(),
        _ => Vec::new(),
    };
    ctx.first_prompt = first_prompt(&ctx, &baseline, &compile_errors, prompts_dir.as_deref())?;

    let ctx = Arc::new(ctx);
    let count = ctx.req.candidates.unwrap_or(ctx.req.settings.llm.candidates).max(1);
    let mut tasks = tokio::task::JoinSet::new();
    for index in 1..=count {
        let (ctx, client, tx, dir) = (ctx.clone(), client.clone(), tx.clone(), prompts_dir.clone());
        tasks.spawn(async move { candidate(&ctx, &client, index, &tx, dir.as_deref()).await });
    }
    drop(tx);
    let mut outcomes: Vec<(CandidateOutcome, Option<LlmError>)> = Vec::new();
    loop {
        tokio::select! {
            Some(ev) = rx.recv() => forward(ev, &mut records, &mut on_stage),
            joined = tasks.join_next() => match joined {
                None => break,
                Some(Ok(outcome)) => outcomes.push(outcome),
                Some(Err(e)) => tracing::error!("a rewrite candidate task ended abnormally: {e}"),
            },
        }
    }
    while let Ok(ev) = rx.try_recv() {
        forward(ev, &mut records, &mut on_stage);
    }
    outcomes.sort_by_key(|(o, _)| o.index);

    if !outcomes.is_empty() && outcomes.iter().all(|(o, _)| o.status == CandidateStatus::LlmError) {
        save_timeline(&ctx, &records);
        let first = outcomes.into_iter().find_map(|(_, e)| e);
        return Err(first.unwrap_or_else(|| LlmError::Setup("every candidate failed".into())));
    }
    let mut candidates: Vec<CandidateOutcome> = outcomes.into_iter().map(|(o, _)| o).collect();
    let start = Instant::now();
    let ranking = ctx.rank(&candidates).await;
    if let Some(r) = &ranking {
        let problem = match (&r.result.error, r.result.extra.get("ranking_clock").and_then(|v| v.as_str())) {
            (Some(e), _) => format!("{}: {}", e.kind, ctx.clean(&e.message)),
            (None, Some(clock)) => {
                format!("current, reference and {} correct candidate(s) timed together: {clock}", r.ms.len())
            }
            _ => String::new(),
        };
        let record = ctx.record("rank", None, None, "-".into(), start.elapsed().as_millis() as u64, &problem, None);
        forward(StageEvent { finished: true, record }, &mut records, &mut on_stage);
    }
    let outcome = pick(&ctx, baseline, &mut candidates, ranking.as_ref());
    let pick_record = ctx.record(
        "pick",
        None,
        None,
        outcome.winner.map(|w| format!("#{w}")).unwrap_or("-".into()),
        0,
        &outcome.title,
        None,
    );
    forward(StageEvent { finished: true, record: pick_record }, &mut records, &mut on_stage);
    save_timeline(&ctx, &records);
    Ok(RewriteOutcome { candidates, timeline: records, ..outcome })
}

/// The sandbox for one rewrite, from its settings.
fn sandbox_for(req: &RewriteRequest) -> Result<super::sandbox::Sandbox, LlmError> {
    let python = bench::resolve_python(&BenchRequest {
        python: req.python.clone(),
        settings: req.settings.clone(),
        ..Default::default()
    });
    let limits = super::sandbox::Limits {
        data_bytes: super::sandbox::memory_limit(req.settings.llm.sandbox_memory_mb),
        ..Default::default()
    };
    let mut sandbox = super::sandbox::prepare(req.settings.llm.sandbox, &python, limits).map_err(LlmError::Setup)?;
    if let Some(var) = &req.settings.llm.api_key_env {
        sandbox.keep_secret(std::env::var(var).unwrap_or_default());
    }
    Ok(sandbox)
}

fn save_timeline(ctx: &Ctx, records: &[StageRecord]) {
    if let Err(e) = timeline::append(&ctx.root, records) {
        tracing::warn!("cannot append to {}: {e}", timeline::timeline_path(&ctx.root).display());
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Kinds of benchmark failure that say the set-up is broken, not the code.
fn is_environment_failure(kind: &str) -> bool {
    matches!(kind, "missing-dependency" | "harness" | "no-reference" | "reference-error")
}

/// What the harness saw the candidate do that makes its speedup not count
/// (KL102-KL107 as run results): refused, and said so in the repair prompt.
const WATCHED_HACKS: &[&str] = &[
    "torch-computes-the-task",
    "kernel-never-launched",
    "output-reused",
    "side-stream-or-thread",
    "precision-downgrade",
    "timer-patch",
];

fn repair_template(kind: &str) -> &'static str {
    match kind {
        "mismatch" | "nondeterministic" => prompts::REPAIR_ACCURACY,
        _ => prompts::REPAIR_COMPILE,
    }
}

/// `line L: CODE name: message` per diagnostic (only `codes` when given).
fn diagnostics_text(text: &str, settings: &crate::config::Settings, codes: Option<&[&str]>) -> String {
    let result = crate::checker::check_text(text, settings);
    let index = crate::text::LineIndex::new(text);
    let lines: Vec<String> = result
        .diagnostics
        .iter()
        .filter(|d| codes.is_none_or(|c| c.contains(&&*d.code)))
        .map(|d| format!("- line {}: {} {}: {}", index.line_of(d.range.start) + 1, d.code, d.name, d.message))
        .collect();
    if lines.is_empty() {
        "(no diagnostics)".to_string()
    } else {
        lines.join("\n")
    }
}

/// What went wrong in one attempt, and how to ask for the repair.
struct Problem {
    stage: &'static str,
    template: &'static str,
    summary: String,
    detail: String,
    status: CandidateStatus,
}

async fn candidate(
    ctx: &Ctx,
    client: &Client,
    index: u32,
    tx: &UnboundedSender<StageEvent>,
    dir: Option<&Path>,
) -> (CandidateOutcome, Option<LlmError>) {
    let mut out = CandidateOutcome {
        index,
        status: CandidateStatus::Failed,
        attempts: 0,
        problem: None,
        bench: None,
        text: None,
        tokens: Usage::default(),
        speedup_vs_current: None,
    };
    let mut messages = vec![Message::system(ctx.system.clone()), Message::user(ctx.first_prompt.clone())];
    for attempt in 0..=ctx.repairs {
        out.attempts = attempt + 1;
        let stage = if attempt == 0 { "llm" } else { "repair-llm" };
        let _ = tx.send(StageEvent {
            finished: false,
            record: ctx.record(stage, Some(index), Some(attempt), "-".into(), 0, "", None),
        });
        let start = Instant::now();
        let answer = match client.chat(&messages).await {
            Ok(a) => a,
            Err(e) => {
                let ms = start.elapsed().as_millis() as u64;
                let _ = tx.send(StageEvent {
                    finished: true,
                    record: ctx.record(stage, Some(index), Some(attempt), "error".into(), ms, &e.to_string(), None),
                });
                out.status = CandidateStatus::LlmError;
                out.problem = Some(e.to_string());
                return (out, Some(e));
            }
        };
        out.tokens.add(answer.usage);
        let ms = answer.latency.as_millis() as u64;
        let chars = format!("{} chars", answer.text.chars().count());
        let _ = tx.send(StageEvent {
            finished: true,
            record: ctx.record(stage, Some(index), Some(attempt), chars, ms, "", Some(answer.usage)),
        });
        messages.push(Message::assistant(answer.text.clone()));

        let problem = match evaluate(ctx, index, attempt, &answer.text, tx, &mut out).await {
            Ok(None) => return (out, None),
            Ok(Some(p)) => p,
            Err(e) => {
                out.status = CandidateStatus::Failed;
                out.problem = Some(e.to_string());
                return (out, None);
            }
        };
        out.status = problem.status;
        out.problem = Some(format!("{}: {}", problem.stage, problem.summary));
        if attempt == ctx.repairs {
            break;
        }
        let template = match prompts::load(problem.template, dir) {
            Ok(t) => t,
            Err(e) => {
                out.problem = Some(e.to_string());
                break;
            }
        };
        let prompt = prompts::render(
            &template,
            &[("stage", problem.stage), ("error", &problem.detail), ("gpu", &ctx.gpu), ("smem_limit", &ctx.smem)],
        );
        messages.push(Message::user(prompt));
    }
    (out, None)
}

/// Extract, gate and benchmark one answer. `Ok(None)`: correct (the outcome
/// holds its benchmark); `Ok(Some)`: a problem to repair; `Err`: the set-up broke.
async fn evaluate(
    ctx: &Ctx,
    index: u32,
    attempt: u32,
    answer: &str,
    tx: &UnboundedSender<StageEvent>,
    out: &mut CandidateOutcome,
) -> Result<Option<Problem>, LlmError> {
    let start = Instant::now();
    let done = |stage: &str, score: &str, problem: &str| {
        let ms = start.elapsed().as_millis() as u64;
        let _ = tx.send(StageEvent {
            finished: true,
            record: ctx.record(stage, Some(index), Some(attempt), score.into(), ms, problem, None),
        });
    };
    // A repair may answer with only the functions it changed: splice them into its last file.
    let base = out.text.clone().unwrap_or_else(|| ctx.text.clone());
    let text = match extract::candidate_file(answer, &base) {
        Ok(t) => t,
        Err(e) => {
            done("extract", "rejected", &e.to_string());
            let detail = match &e {
                ExtractError::NoCode => {
                    "Your answer has no ```python code block. Answer with the complete file in one ```python block."
                        .to_string()
                }
                other => other.to_string(),
            };
            let status = CandidateStatus::Failed;
            return Ok(Some(Problem {
                stage: "the code could not be used",
                template: prompts::REPAIR_COMPILE,
                summary: e.to_string(),
                detail,
                status,
            }));
        }
    };
    out.text = Some(text.clone());
    done("extract", "ok", "");

    let gate_start = Instant::now();
    let refused = super::gate::refusals(&text, ctx.reference.as_deref());
    if let Some(reason) = super::gate::merge(gate(ctx.req.action, &text, &ctx.req.settings), refused) {
        let ms = gate_start.elapsed().as_millis() as u64;
        let summary = reason.lines().next().unwrap_or_default().to_string();
        let _ = tx.send(StageEvent {
            finished: true,
            record: ctx.record("gate", Some(index), Some(attempt), "rejected".into(), ms, &summary, None),
        });
        let detail = format!("The static checker rejected the file without running it:\n\n{reason}");
        return Ok(Some(Problem {
            stage: "rejected by the static checker",
            template: prompts::REPAIR_COMPILE,
            summary,
            detail,
            status: CandidateStatus::Rejected,
        }));
    }
    let ms = gate_start.elapsed().as_millis() as u64;
    let _ = tx.send(StageEvent {
        finished: true,
        record: ctx.record("gate", Some(index), Some(attempt), "pass".into(), ms, "", None),
    });
    if let Some(problem) = compile_stage(ctx, index, attempt, &text, tx).await {
        return Ok(Some(problem));
    }

    let result = ctx.bench("bench", Some(index), Some(attempt), &text, tx).await?;
    out.bench = Some(result.clone());
    if let Some(e) = result.error.as_ref().filter(|e| is_environment_failure(&e.kind)) {
        return Err(LlmError::Bench(format!("{}: {}", e.kind, ctx.clean(&e.message))));
    }
    if result.correct == Some(true) && result.error.is_none() {
        out.status = CandidateStatus::Correct;
        out.problem = None;
        return Ok(None);
    }
    let kind = result.error.as_ref().map(|e| e.kind.clone()).unwrap_or_else(|| "mismatch".into());
    let detail = ctx.error_text(&result, &text);
    let summary = detail.lines().last().unwrap_or_default().to_string();
    let stage = if WATCHED_HACKS.contains(&kind.as_str()) {
        "the run saw work that makes a speedup not count"
    } else {
        match repair_template(&kind) {
            prompts::REPAIR_ACCURACY => "the results differ from the reference",
            _ => "the kernel does not compile or run",
        }
    };
    Ok(Some(Problem { stage, template: repair_template(&kind), summary, detail, status: CandidateStatus::Failed }))
}

/// The rules whose findings mean the rewrite did not do what `action` asks:
/// a time loop still outside the kernel (KL001), a race between its programs
/// (KL003) or the input projection left in its loop (KL009, which rejects only
/// as an error: as a warning the answer is offered with it) for "make
/// persistent", and so on. A finding of any other rule is no reason to reject
/// a correct, measured answer.
fn guarded_rules(action: Action) -> &'static [&'static str] {
    match action {
        Action::Persistent => &["KL001", "KL003", "KL009"],
        other => other.gate_codes(),
    }
}

/// Why the checker rejects `text` for `action`, or `None` when it passes.
fn gate(action: Action, text: &str, settings: &crate::config::Settings) -> Option<String> {
    let only_guards = crate::config::Settings {
        select: guarded_rules(action).iter().map(|c| c.to_string()).collect(),
        ..settings.clone()
    };
    let result = crate::checker::check_text(text, &only_guards);
    let mut reasons: Vec<String> = Vec::new();
    if !text.lines().any(|l| l.starts_with("class ModelNew")) {
        reasons.push("- the file defines no `class ModelNew`".to_string());
    }
    let codes = guarded_rules(action);
    // The mistake the action removes (and the KL003 race) always rejects; another guard
    // only as an error: a warning (KL009's input projection left in the loop) does not
    // drop an otherwise correct answer, which is offered and shows it in the editor.
    let errors: Vec<&str> = result
        .diagnostics
        .iter()
        .filter(|d| codes.contains(&&*d.code))
        .filter(|d| action.gate_codes().contains(&&*d.code) || d.severity == crate::diagnostic::Severity::Error)
        .map(|d| &*d.code)
        .collect();
    if !errors.is_empty() {
        reasons.push(diagnostics_text(text, settings, Some(&errors)));
    }
    if action == Action::Persistent && !result.kernels.iter().any(|k| k.persistent) {
        reasons.push(
            "- no `@triton.jit` kernel has the time loop inside it: the recurrence is not persistent".to_string(),
        );
    }
    (!reasons.is_empty()).then(|| reasons.join("\n"))
}

impl Ctx {
    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        stage: &str,
        candidate: Option<u32>,
        attempt: Option<u32>,
        score: String,
        latency_ms: u64,
        problem: &str,
        tokens: Option<Usage>,
    ) -> StageRecord {
        StageRecord {
            time: bench::history::utc_time(unix_now()),
            run: self.run.clone(),
            file: self.rel.clone(),
            action: self.req.action.name().to_string(),
            stage: stage.to_string(),
            candidate,
            attempt,
            score,
            latency_ms,
            problem: self.sandbox.redact(problem.lines().next().unwrap_or_default()),
            tokens,
        }
    }

    /// Candidate paths in the sandbox replaced by the user's file name, and
    /// anything shaped like a credential redacted: the text came out of
    /// sandboxed code and goes into prompts, the timeline and the output.
    fn clean(&self, message: &str) -> String {
        let name = self.file.display().to_string();
        let prefix = format!("{}/{}", self.sandbox.dir().join("work").display(), CANDIDATE_PREFIX);
        let mut out = String::new();
        let mut rest = message;
        while let Some(at) = rest.find(&prefix) {
            out.push_str(&rest[..at]);
            let tail = &rest[at..];
            let end = tail.find(".py").map(|e| e + 3).unwrap_or(tail.len());
            out.push_str(&name);
            rest = &tail[end..];
        }
        out.push_str(rest);
        self.sandbox.redact(&out)
    }

    /// The harness run of `candidate` (a file in the sandbox): every run of
    /// this pipeline is built here, in the sandbox.
    fn request(&self, candidate: PathBuf, record_history: bool) -> BenchRequest {
        BenchRequest {
            candidate,
            reference: self.reference.clone(),
            settings: self.req.settings.clone(),
            python: self.req.python.clone(),
            overrides: self.req.overrides.clone(),
            cpu: self.req.cpu,
            timeout: self.req.bench_timeout,
            record_history,
            origin: Some(self.file.clone()),
            sandbox: Some(self.sandbox.clone()),
            reduced: false,
            full_size: false,
        }
    }

    /// A result names the user's file where the harness saw a candidate in
    /// the sandbox, and its messages are cleaned.
    fn own_paths(&self, result: &mut BenchResult) {
        let mine = |p: &str| p.starts_with(&self.sandbox.dir().display().to_string());
        let user = self.file.display().to_string();
        if let Some(v) = result.extra.get_mut("candidate") {
            if v.as_str().is_some_and(mine) {
                *v = serde_json::Value::from(user.clone());
            }
        }
        for k in &mut result.kernels {
            if k.file.as_deref().is_some_and(mine) {
                k.file = Some(user.clone());
            }
        }
        if let Some(e) = &mut result.error {
            if e.file.as_deref().is_some_and(mine) {
                e.file = Some(user.clone());
            }
            e.message = self.clean(&e.message);
        }
    }

    /// Writes `text` into the sandbox's directory as a candidate file.
    fn candidate_file(&self, tag: &str, text: &str) -> Result<TempFile, LlmError> {
        let name = format!("{CANDIDATE_PREFIX}{tag}.py");
        self.sandbox.write(&name, text).map(TempFile).map_err(|e| {
            LlmError::Setup(format!("cannot write a candidate into {}: {e}", self.sandbox.dir().display()))
        })
    }

    /// The error for a repair prompt: kind and place, the source line, and
    /// the last lines of the message (the part that says what broke).
    fn error_text(&self, result: &BenchResult, text: &str) -> String {
        let Some(e) = &result.error else {
            return "The output does not match the reference (no further detail).".to_string();
        };
        let mut out = String::new();
        match e.line {
            Some(l) => {
                out.push_str(&format!("{} at line {l}", e.kind));
                if let Some(c) = e.column {
                    out.push_str(&format!(", column {c}"));
                }
                out.push_str(":\n");
                if let Some(src) = extract::source_line(text, l) {
                    out.push_str(&format!("    {}\n", src.trim_end()));
                }
            }
            None => out.push_str(&format!("{}:\n", e.kind)),
        }
        let message = self.clean(&e.message);
        let lines: Vec<&str> = message.lines().collect();
        let tail = &lines[lines.len().saturating_sub(30)..];
        out.push_str(&tail.join("\n"));
        out
    }

    /// Benchmarks `text` from a candidate file in the sandbox, in the sandbox.
    async fn bench(
        &self,
        stage: &str,
        candidate: Option<u32>,
        attempt: Option<u32>,
        text: &str,
        tx: &UnboundedSender<StageEvent>,
    ) -> Result<BenchResult, LlmError> {
        let _turn = self.bench_lock.lock().await;
        let _ = tx.send(StageEvent {
            finished: false,
            record: self.record(stage, candidate, attempt, "-".into(), 0, "", None),
        });
        let start = Instant::now();
        let tag = match (candidate, attempt) {
            (Some(c), Some(a)) => format!("c{c}a{a}"),
            _ => "base".to_string(),
        };
        let temp = self.candidate_file(&tag, text)?;
        // The baseline is the user's file and is worth recording; candidates are not.
        let request = self.request(temp.0.clone(), candidate.is_none());
        let ran = bench::run_cold(request, |_| {}).await;
        let mut result = ran.unwrap_or_else(|e| e.into_result(&temp.0));
        self.own_paths(&mut result);
        drop(temp);
        let ms = start.elapsed().as_millis() as u64;
        let score = match (result.speedup, result.correct) {
            (Some(s), Some(true)) => format!("{s:.3}x"),
            (None, Some(true)) => "correct (no timing)".to_string(),
            (_, Some(false)) => "incorrect".to_string(),
            _ => "error".to_string(),
        };
        let problem = match &result.error {
            Some(e) => format!("{}: {}", e.kind, self.clean(e.message.lines().last().unwrap_or_default())),
            None => result
                .launches_per_forward
                .map(|n| format!("ok, {}", bench::history::launches_text(n)))
                .unwrap_or_else(|| "ok".into()),
        };
        let _ = tx.send(StageEvent {
            finished: true,
            record: self.record(stage, candidate, attempt, score, ms, &problem, None),
        });
        Ok(result)
    }
}

/// Candidate files in the sandbox are named `candidate_TAG.py`.
const CANDIDATE_PREFIX: &str = "candidate_";

/// A candidate file in the sandbox's directory, removed when dropped (the
/// directory goes with the sandbox, on every exit path).
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_rewrite_future_can_be_spawned() {
        fn assert_send<T: Send>(_: &T) {}
        let req = super::RewriteRequest::new("x.py", super::Action::Persistent, Default::default());
        let future = super::rewrite(req, |_| {});
        assert_send(&future);
    }

    #[test]
    fn gate_rejects_a_python_time_loop_and_a_file_without_model_new() {
        let looped = r#"
import triton
import triton.language as tl

@triton.jit
def step(x_ptr):
    pass

class ModelNew:
    def forward(self, x):
        for t in range(x.size(0)):
            step[(1,)](x)
"#;
        let reason = super::gate(super::Action::Persistent, looped, &Default::default()).unwrap();
        assert!(reason.contains("KL001"), "{reason}");
        let reason = super::gate(super::Action::Repair, "import torch\n", &Default::default()).unwrap();
        assert!(reason.contains("no `class ModelNew`"), "{reason}");
    }

    #[test]
    fn a_warning_of_a_guarding_rule_does_not_drop_a_persistent_answer() {
        // KL009 (a warning: the input projection left in the persistent loop) guards
        // "make persistent", but only an error rejects: the answer is offered and shows it.
        let kernels = include_str!("../../../tests/fixtures/rules/KL009.py");
        let text = format!("{kernels}\nclass ModelNew:\n    def forward(self, x):\n        return x\n");
        let all = crate::checker::check_text(&text, &Default::default());
        let kl009: Vec<_> = all.diagnostics.iter().filter(|d| d.code == "KL009").collect();
        assert!(!kl009.is_empty() && kl009.iter().all(|d| d.severity == crate::diagnostic::Severity::Warning));
        assert_eq!(super::gate(super::Action::Persistent, &text, &Default::default()), None);
    }

    #[test]
    fn gate_ignores_findings_of_rules_that_do_not_guard_the_action() {
        // A persistent kernel (the time loop inside) beside a scalar direct
        // convolution (KL008): "make persistent" did its job.
        let text = r#"
import triton
import triton.language as tl

@triton.jit
def layer(x_ptr, w_ptr, h_ptr, out_ptr, steps, stride_t, H: tl.constexpr):
    offs = tl.arange(0, H)
    w = tl.load(w_ptr + offs[:, None] * H + offs[None, :])
    h = tl.load(h_ptr + offs)
    for t in range(steps):
        x = tl.load(x_ptr + t * stride_t + offs)
        h = tl.sigmoid(tl.sum(h[:, None] * w, axis=0) + x)
        tl.store(out_ptr + t * stride_t + offs, h)

@triton.jit
def conv(x_ptr, w_ptr, y_ptr, C, H, W, KH: tl.constexpr, KW: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for c in range(C):
        for ky in range(KH):
            for kx in range(KW):
                xv = tl.load(x_ptr + c * H * W + (offs // W + ky) * W + (offs % W + kx))
                wv = tl.load(w_ptr + c * KH * KW + ky * KW + kx)
                acc += xv * wv
    tl.store(y_ptr + offs, acc)

class ModelNew:
    def forward(self, x, w, h, out):
        layer[(1,)](x, w, h, out, x.size(0), x.stride(0), H=64)
        return out
"#;
        let all = crate::checker::check_text(text, &Default::default());
        assert!(all.diagnostics.iter().any(|d| d.code == "KL008"), "{:?}", all.diagnostics);
        assert_eq!(super::gate(super::Action::Persistent, text, &Default::default()), None);
        let reason = super::gate(super::Action::Grid2d, "import torch\n", &Default::default()).unwrap();
        assert!(reason.contains("no `class ModelNew`"), "{reason}");
    }
}
