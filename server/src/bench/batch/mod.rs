//! `kernel-lsp bench --batch INPUT`: judges many candidates, each against its
//! reference, with one warm sandboxed worker per GPU of this host (or a pool
//! on the CPU interpreter), or as Ray tasks across hosts (`--ray`).
//!
//! Order of work: read the pairs (`pairs`), skip those the output already
//! judged (by content hash), reject on the CPU cores, in parallel, what
//! cannot run (a syntax error, no `ModelNew`) so it never holds a GPU, then
//! hand the rest to the pool (`pool`) or to Ray (`ray`). Each verdict is
//! appended to the output JSONL as it arrives: `bench --format json`'s object
//! plus `pair` (id, files, hash). The summary (`summary`) is KernelBench's.
//!
//! Every pair is LLM-written code as far as this module knows: it runs only
//! in the sandbox (`Sandbox::command`), from copies in the sandbox's folder.

mod compiled;
mod pairs;
mod pool;
mod ray;
mod summary;

pub(crate) use ray::serve;

use std::collections::HashSet;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};

use self::pairs::Pair;
use self::pool::{Worker, WorkerConfig};
use super::cli::{BenchArgs, Format};
use super::sandbox::{self, Limits, Sandbox};
use super::{BenchRequest, BenchResult};
use crate::config::Settings;

/// One pair ready to run: its files' text travels with it (a Ray task may run on another host).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Job {
    pub id: String,
    pub hash: String,
    pub candidate: String,
    pub reference: Option<String>,
    pub candidate_text: String,
    pub reference_text: Option<String>,
    /// The harness's options after `--candidate`/`--reference`.
    pub options: Vec<String>,
    pub timeout: f64,
    pub cpu: bool,
}

/// Everything a run of the batch decided from the command line.
struct Batch {
    settings: Settings,
    python: String,
    cpu: bool,
    timeout: f64,
}

pub(crate) fn run_cli(args: &BenchArgs, input: &Path) -> i32 {
    match run(args, input) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

fn settings_for(args: &BenchArgs, at: &Path) -> Result<Settings, String> {
    let (mut settings, _) = Settings::discover(at).map_err(|e| e.to_string())?;
    if let Some(t) = args.tolerance {
        settings.bench.tolerance = t;
    }
    if let Some(p) = args.precision {
        settings.bench.precision = p;
    }
    Ok(settings)
}

fn prepare_sandbox(settings: &Settings, python: &str) -> Result<Arc<Sandbox>, String> {
    let limits = Limits { data_bytes: sandbox::memory_limit(settings.llm.sandbox_memory_mb), ..Limits::default() };
    let sb = sandbox::prepare(settings.llm.sandbox, python, limits)
        .map_err(|e| e.replace("LLM answers are run", "A batch's candidates are run"))?;
    Ok(Arc::new(sb))
}

fn run(args: &BenchArgs, input: &Path) -> Result<i32, String> {
    let started = Instant::now();
    let settings = settings_for(args, input)?;
    let probe = BenchRequest {
        python: args.python.clone(),
        settings: settings.clone(),
        candidate: input.join("x.py"),
        ..Default::default()
    };
    let python = super::resolve_python(&probe);
    let gpus = pool::visible_gpus();
    let address = args.ray.as_deref().filter(|a| !a.is_empty());
    let cpu = args.cpu || args.small || (gpus.is_empty() && address.is_none());
    let batch = Batch { timeout: args.timeout.unwrap_or(settings.bench.timeout), python, cpu, settings };
    let pairs = pairs::read(input, args.tasks.as_deref(), &batch.settings)?;
    let out_path = args.out.clone().unwrap_or_else(|| default_out(input));
    let judged = already_judged(&out_path);
    let mut jobs = Vec::new();
    for pair in &pairs {
        jobs.push(job(args, &batch, pair)?);
    }
    let wanted: HashSet<String> = jobs.iter().map(|j| j.hash.clone()).collect();
    let pending: Vec<Job> = jobs.into_iter().filter(|j| !judged.contains(&j.hash)).collect();
    let skipped = pairs.len() - pending.len();
    let workers = match (batch.cpu, args.workers) {
        (_, Some(n)) => n.max(1),
        (false, None) => gpus.len().max(1),
        (true, None) => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
    };
    eprintln!(
        "batch: {} pairs ({skipped} already judged in {}), {}",
        pairs.len(),
        out_path.display(),
        match (&args.ray, batch.cpu) {
            (Some(_), _) => format!("Ray tasks on {}", address.unwrap_or("a local cluster")),
            (None, true) => format!("{workers} CPU-interpreter workers (correctness only)"),
            (None, false) => format!("{workers} GPU workers ({})", gpus.join(",")),
        }
    );
    let cpu = batch.cpu;
    let mut out = Output::open(&out_path, pending.len(), skipped)?;
    let (rejected, runnable) = static_checks(pending);
    // Syntax errors confirmed by CPython, sure compile errors: verdicts without a GPU.
    let (syntax, held) = rejected
        .into_iter()
        .partition::<Vec<_>, _>(|(_, r)| r.extra.get("static_check").and_then(|v| v.as_str()) == Some("syntax"));
    for (job, result) in held {
        out.write(&job, result, None)?;
    }
    let nothing_runs = syntax.is_empty() && runnable.is_empty();
    let (python, settings) = (batch.python.clone(), batch.settings.clone());
    let compile_stage = move || {
        let t0 = Instant::now();
        let (compiled, runnable, why) = match settings.compile.enabled {
            true => compiled::check(&python, &settings, syntax, runnable),
            false => (syntax, runnable, Some("compile.enabled is off".to_string())),
        };
        match why {
            Some(why) => eprintln!("batch: no compile stage ({why}); the workers judge every candidate that parses"),
            None => eprintln!(
                "batch: compile stage {:.1} s: {} refused before any {}",
                t0.elapsed().as_secs_f64(),
                compiled.len(),
                if cpu { "worker" } else { "GPU" }
            ),
        }
        (compiled, runnable)
    };
    if args.ray.is_some() {
        let (compiled, runnable) = compile_stage();
        for (job, result) in compiled {
            out.write(&job, result, None)?;
        }
        if !runnable.is_empty() {
            ray::run(&batch.python, address, batch.cpu, workers, &runnable, &mut out)?;
        }
    } else if !nothing_runs {
        let sandbox = prepare_sandbox(&batch.settings, &batch.python)?;
        run_pool(&sandbox, batch.cpu, &gpus, workers, compile_stage, &mut out)?;
    }
    out.finish();
    let lines = lines_of(&out_path, &wanted);
    let mut summary = summary::summarize(&lines);
    summary["seconds"] = json!((started.elapsed().as_secs_f64() * 100.0).round() / 100.0);
    summary["results"] = json!(out_path.display().to_string());
    if args.format == Format::Json {
        println!("{}", serde_json::to_string_pretty(&summary).unwrap_or_default());
    } else {
        print!("{}", summary::render(&summary));
        println!("results    {} ({:.1} s)", out_path.display(), started.elapsed().as_secs_f64());
    }
    Ok(if lines.len() == wanted.len() { 0 } else { 2 })
}

/// `INPUT/kernel-lsp-results.jsonl`, or `INPUT.results.jsonl` beside a JSONL input.
fn default_out(input: &Path) -> PathBuf {
    if input.is_dir() {
        return input.join("kernel-lsp-results.jsonl");
    }
    let mut name = input.file_stem().unwrap_or_default().to_os_string();
    name.push(".results.jsonl");
    input.with_file_name(name)
}

/// The job of one pair: the harness's options as a single `bench` builds them (sandboxed, so `--strict`).
fn job(args: &BenchArgs, b: &Batch, pair: &Pair) -> Result<Job, String> {
    let mut req = BenchRequest {
        candidate: pair.candidate.clone(),
        reference: pair.reference.clone(),
        settings: b.settings.clone(),
        python: Some(b.python.clone()),
        overrides: args.set.clone(),
        cpu: b.cpu,
        timeout: Some(b.timeout),
        record_history: false,
        origin: None,
        sandbox: None,
        reduced: args.small,
        full_size: args.full_size,
    };
    if args.small {
        let reduced = super::reduced_sizes(&req);
        req.overrides.extend(reduced.iter().map(|(n, _, v)| (n.clone(), v.to_string())));
    }
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    let candidate = std::path::absolute(&pair.candidate).map_err(|e| e.to_string())?;
    let mut options = super::harness_args(&req, &candidate);
    options.drain(..2);
    if let Some(i) = options.iter().position(|a| a == "--reference") {
        options.drain(i..i + 2);
    }
    if let Some(i) = options.iter().position(|a| a == "--config-reference") {
        options.drain(i..i + 2);
    }
    options.push("--strict".to_string());
    let key = format!("{}{options:?}", if b.cpu { "cpu" } else { "gpu" });
    let reference = pair.reference.as_deref().map(std::path::absolute).transpose().map_err(|e| e.to_string())?;
    Ok(Job {
        id: pair.id.clone(),
        hash: pairs::content_hash(pair, &key),
        candidate: candidate.display().to_string(),
        reference: reference.as_ref().map(|r| r.display().to_string()),
        candidate_text: read(&candidate)?,
        reference_text: reference.as_deref().map(read).transpose()?,
        options,
        timeout: b.timeout,
        cpu: b.cpu,
    })
}

/// Hashes of the pairs the output file already holds a verdict for.
fn already_judged(out: &Path) -> HashSet<String> {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["pair"]["hash"].as_str().map(str::to_string))
        .collect()
}

/// The output's lines for `wanted` hashes, the last of each.
fn lines_of(out: &Path, wanted: &HashSet<String>) -> Vec<Value> {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    let mut by_hash = std::collections::BTreeMap::new();
    for v in text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()) {
        if let Some(h) = v["pair"]["hash"].as_str().filter(|h| wanted.contains(*h)) {
            by_hash.insert(h.to_string(), v);
        }
    }
    by_hash.into_values().collect()
}

/// Splits off what cannot run, with the verdict the harness would give it:
/// a candidate that does not parse or defines no `ModelNew` fails to load.
/// Parsed on the CPU cores in parallel.
fn static_checks(jobs: Vec<Job>) -> (Vec<(Job, BenchResult)>, Vec<Job>) {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let chunk = jobs.len().div_ceil(cores).max(1);
    let verdicts: Vec<Option<BenchResult>> = std::thread::scope(|s| {
        let handles: Vec<_> =
            jobs.chunks(chunk).map(|c| s.spawn(move || c.iter().map(cannot_run).collect::<Vec<_>>())).collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    });
    let mut rejected = Vec::new();
    let mut runnable = Vec::new();
    for (job, verdict) in jobs.into_iter().zip(verdicts) {
        match verdict {
            Some(r) => rejected.push((job, r)),
            None => runnable.push(job),
        }
    }
    (rejected, runnable)
}

fn cannot_run(job: &Job) -> Option<BenchResult> {
    let text = &job.candidate_text;
    let tree = crate::model::parse_forest(text);
    let file = Path::new(&job.candidate);
    let mode = if job.cpu { "cpu-interpreter" } else { "gpu" };
    if let Some(d) = crate::model::syntax::errors(text, &tree).first() {
        let index = crate::text::LineIndex::new(text);
        let (line, col) = index.position(text, d.range.start, crate::text::ColumnUnit::Char);
        let mut r =
            BenchResult::failed("exception", format!("SyntaxError: {}", d.message), Some(file), Some(line as u32 + 1));
        if let Some(e) = r.error.as_mut() {
            e.column = Some(col as u32 + 1);
        }
        r.mode = mode.to_string();
        r.extra.insert("static_check".into(), "syntax".into());
        return Some(r);
    }
    if !text.lines().any(|l| l.starts_with("class ModelNew")) {
        let mut r = BenchResult::failed("exception", "the candidate defines no `class ModelNew`", Some(file), None);
        r.mode = mode.to_string();
        r.extra.insert("static_check".into(), "no-model-new".into());
        return Some(r);
    }
    None
}

/// Runs the jobs `stage` leaves runnable on one worker per GPU (or `workers`
/// interpreter workers), each pulling the next job when it is free. The
/// workers start (torch and triton imported) while `stage` compiles on the CPU
/// cores; its verdicts are written as soon as it ends.
fn run_pool(
    sandbox: &Arc<Sandbox>,
    cpu: bool,
    gpus: &[String],
    workers: usize,
    stage: impl FnOnce() -> (Vec<(Job, BenchResult)>, Vec<Job>) + Send + 'static,
    out: &mut Output,
) -> Result<(), String> {
    let harness = super::write_harness().map_err(|e| e.to_string())?;
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let cfg = Arc::new(WorkerConfig {
        reads: vec![harness.clone()],
        harness,
        cpu,
        sandbox: sandbox.clone(),
        threads: cpu.then(|| (cores / workers).max(1)),
    });
    let queue = Arc::new(Mutex::new(Queue::default()));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let (ready_tx, ready) = tokio::sync::watch::channel(false);
        let (staged_tx, staged) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let _ = staged_tx.send(stage());
        });
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(Job, BenchResult, Option<String>, f64)>();
        for w in 0..workers {
            let gpu = if cpu { None } else { gpus.get(w).cloned() };
            let (queue, tx, cfg, mut ready) = (queue.clone(), tx.clone(), cfg.clone(), ready.clone());
            tokio::spawn(async move {
                let mut worker = Worker::new(gpu.clone());
                worker.warm(&cfg).await;
                if ready.wait_for(|r| *r).await.is_err() {
                    return;
                }
                while let Some(job) = queue.lock().ok().and_then(|mut q| q.next()) {
                    let t0 = Instant::now();
                    let result = judge(&mut worker, &cfg, &job).await;
                    let seconds = t0.elapsed().as_secs_f64();
                    if let Ok(mut q) = queue.lock() {
                        q.done(&job, seconds);
                    }
                    if tx.send((job, result, gpu.clone(), seconds)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let (compiled, runnable) = staged.await.map_err(|_| "the compile stage failed".to_string())?;
        for (job, result) in compiled {
            out.write(&job, result, None)?;
        }
        if let Ok(mut q) = queue.lock() {
            q.jobs = runnable;
        }
        let _ = ready_tx.send(true);
        while let Some((job, result, gpu, seconds)) = rx.recv().await {
            out.write_timed(&job, result, gpu.as_deref(), Some(seconds)).map_err(|e| e.to_string())?;
        }
        Ok::<(), String>(())
    })
}

/// The pool's order: a pair of a reference not yet seen first (how long its
/// pairs take is learnt from it), then the pairs of the slowest reference so
/// far, so that the last pairs to run are short ones and the GPUs finish
/// together. Input order breaks ties.
#[derive(Default)]
struct Queue {
    jobs: Vec<Job>,
    /// Per reference: seconds of its judged pairs, and how many.
    seconds: std::collections::HashMap<String, (f64, u32)>,
}

impl Queue {
    fn key(job: &Job) -> &str {
        job.reference.as_deref().unwrap_or("")
    }

    /// The mean seconds of the reference's pairs; unknown counts as longest.
    fn expected(&self, job: &Job) -> f64 {
        match self.seconds.get(Self::key(job)) {
            Some((total, n)) if *n > 0 => total / f64::from(*n),
            _ => f64::INFINITY,
        }
    }

    fn next(&mut self) -> Option<Job> {
        let mut best: Option<(usize, (bool, f64))> = None;
        for (i, job) in self.jobs.iter().enumerate() {
            let rank = (!self.seconds.contains_key(Self::key(job)), self.expected(job));
            if best.is_none_or(|(_, b)| (rank.0 && !b.0) || (rank.0 == b.0 && rank.1 > b.1)) {
                best = Some((i, rank));
            }
        }
        let (i, _) = best?;
        let job = self.jobs.remove(i);
        self.seconds.entry(Self::key(&job).to_string()).or_insert((0.0, 0));
        Some(job)
    }

    fn done(&mut self, job: &Job, seconds: f64) {
        let e = self.seconds.entry(Self::key(job).to_string()).or_insert((0.0, 0));
        e.0 += seconds;
        e.1 += 1;
    }
}

/// One job on `worker`: staged into the sandbox, run, tried once more on a
/// fresh worker if the worker died without a verdict; twice is the candidate's doing.
pub(crate) async fn judge(worker: &mut Worker, cfg: &WorkerConfig, job: &Job) -> BenchResult {
    let (plan, staged) = match stage(cfg, job) {
        Ok(p) => p,
        Err(e) => return BenchResult::failed("harness", e, Some(Path::new(&job.candidate)), None),
    };
    let mut judged = worker.judge(cfg, &plan).await;
    if judged.worker_died {
        judged = worker.judge(cfg, &plan).await;
        if judged.worker_died {
            if let Some(e) = judged.result.error.as_mut() {
                e.message = format!("the run killed its worker twice (restarted each time): {}", e.message);
            }
        }
    }
    let mut result = unstage(judged.result, &staged, job);
    if let Some(e) = result.error.as_mut() {
        e.message = cfg.sandbox.redact(&e.message);
    }
    result
}

/// Writes the job's files into the sandbox's folder and builds the run's plan.
fn stage(cfg: &WorkerConfig, job: &Job) -> Result<(super::process::Plan, Vec<(String, String)>), String> {
    let name =
        |p: &str| Path::new(p).file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or("candidate.py".into());
    let dir = &job.hash[..16];
    let cand = cfg
        .sandbox
        .write(&format!("{dir}/{}", name(&job.candidate)), &job.candidate_text)
        .map_err(|e| e.to_string())?;
    let mut argv = vec!["--candidate".to_string(), cand.display().to_string()];
    let mut staged = vec![(cand.display().to_string(), job.candidate.clone())];
    if let (Some(r), Some(text)) = (&job.reference, &job.reference_text) {
        let mut rname = name(r);
        if rname == name(&job.candidate) {
            rname = format!("reference_{rname}");
        }
        let rp = cfg.sandbox.write(&format!("{dir}/{rname}"), text).map_err(|e| e.to_string())?;
        argv.extend(["--reference".to_string(), rp.display().to_string()]);
        staged.push((rp.display().to_string(), r.clone()));
    }
    argv.extend(job.options.iter().cloned());
    let plan = super::process::Plan {
        python: String::new(),
        harness: cfg.harness.clone(),
        argv,
        cpu: job.cpu,
        timeout: std::time::Duration::from_secs_f64(job.timeout.max(0.1)),
        candidate: cand,
        sandbox: Some(cfg.sandbox.clone()),
        reads: vec![cfg.harness.clone()],
    };
    Ok((plan, staged))
}

/// The result with the staged copies' paths replaced by the pair's own.
fn unstage(result: BenchResult, staged: &[(String, String)], job: &Job) -> BenchResult {
    let Ok(mut text) = serde_json::to_string(&result) else { return result };
    for (copy, original) in staged {
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let (c, o) = (quote(copy), quote(original));
        text = text.replace(&c[1..c.len() - 1], &o[1..o.len() - 1]);
    }
    let mut r: BenchResult = serde_json::from_str(&text).unwrap_or(result);
    r.extra.insert("candidate".into(), job.candidate.clone().into());
    r
}

/// The output JSONL, appended a line per verdict as it arrives, and the progress line.
pub(crate) struct Output {
    file: std::fs::File,
    total: usize,
    done: usize,
    correct: usize,
    failed: usize,
    skipped: usize,
    started: Instant,
    terminal: bool,
}

impl Output {
    fn open(path: &Path, total: usize, skipped: usize) -> Result<Output, String> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        let terminal = std::io::stderr().is_terminal();
        Ok(Output { file, total, done: 0, correct: 0, failed: 0, skipped, started: Instant::now(), terminal })
    }

    /// Appends the verdict of `job` (one line, flushed) and updates the progress line.
    pub(crate) fn write(&mut self, job: &Job, result: BenchResult, gpu: Option<&str>) -> Result<(), String> {
        self.write_timed(job, result, gpu, None)
    }

    /// The same with the seconds the pair held its worker.
    fn write_timed(
        &mut self,
        job: &Job,
        result: BenchResult,
        gpu: Option<&str>,
        seconds: Option<f64>,
    ) -> Result<(), String> {
        let mut line = serde_json::to_value(&result).map_err(|e| e.to_string())?;
        line["pair"] = json!({
            "id": job.id, "candidate": job.candidate, "reference": job.reference, "hash": job.hash, "gpu": gpu,
        });
        if let Some(s) = seconds {
            line["pair"]["seconds"] = json!((s * 1000.0).round() / 1000.0);
        }
        self.write_line(line)
    }

    /// Appends a finished line (`pair` already in it).
    pub(crate) fn write_line(&mut self, line: Value) -> Result<(), String> {
        let text = line.to_string() + "\n";
        self.file.write_all(text.as_bytes()).and_then(|_| self.file.flush()).map_err(|e| e.to_string())?;
        self.done += 1;
        match line["correct"].as_bool() {
            Some(true) => self.correct += 1,
            _ => self.failed += 1,
        }
        if self.terminal {
            let elapsed = self.started.elapsed().as_secs_f64();
            let left = elapsed / self.done as f64 * (self.total - self.done.min(self.total)) as f64;
            eprint!(
                "\r\x1b[2K[{}/{}] {} correct, {} not, {} already judged · {:.0} s, about {:.0} s left",
                self.done, self.total, self.correct, self.failed, self.skipped, elapsed, left
            );
        }
        Ok(())
    }

    fn finish(&mut self) {
        if self.terminal {
            eprintln!();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: &str, reference: &str) -> Job {
        Job {
            id: id.into(),
            hash: id.into(),
            candidate: format!("{id}.py"),
            reference: Some(reference.into()),
            candidate_text: String::new(),
            reference_text: None,
            options: Vec::new(),
            timeout: 1.0,
            cpu: false,
        }
    }

    fn ids(q: &mut Queue, n: usize) -> Vec<String> {
        (0..n).filter_map(|_| q.next()).map(|j| j.id).collect()
    }

    #[test]
    fn each_reference_is_tried_once_then_the_slowest_go_first() {
        let jobs = vec![job("a1", "a"), job("a2", "a"), job("b1", "b"), job("b2", "b"), job("c1", "c"), job("c2", "c")];
        let mut q = Queue { jobs, ..Queue::default() };
        // One pair of each reference first, in input order, while nothing is known.
        assert_eq!(ids(&mut q, 3), ["a1", "b1", "c1"]);
        q.done(&job("a1", "a"), 1.0);
        q.done(&job("b1", "b"), 9.0);
        q.done(&job("c1", "c"), 4.0);
        assert_eq!(ids(&mut q, 4), ["b2", "c2", "a2"]);
        assert!(q.next().is_none());
    }

    #[test]
    fn a_reference_whose_first_pair_still_runs_counts_as_long() {
        let jobs = vec![job("a1", "a"), job("a2", "a"), job("b1", "b"), job("b2", "b")];
        let mut q = Queue { jobs, ..Queue::default() };
        assert_eq!(ids(&mut q, 2), ["a1", "b1"]);
        q.done(&job("a1", "a"), 5.0);
        // b's first pair has not finished: its next one goes before a's known 5 s.
        assert_eq!(ids(&mut q, 2), ["b2", "a2"]);
    }
}
