//! One warm, sandboxed harness worker (`harness.py serve`) per GPU, or per
//! share of the CPU cores on the interpreter. A worker judges one pair at a
//! time: nothing else is timed on its GPU meanwhile, and the reference is
//! timed in the same forked child as its candidate. A candidate that hangs
//! past the timeout, or kills its worker, takes down that worker only: it is
//! killed and started again for the next pair.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::time::Instant;

use super::super::process::{self, CappedLines, Ending, GroupKill, Plan, RunState};
use super::super::sandbox::Sandbox;
use super::super::BenchResult;

/// Seconds a fresh worker may take to import torch and triton.
const START_SECS: u64 = 180;

/// What every worker of a batch shares.
pub(crate) struct WorkerConfig {
    pub harness: PathBuf,
    pub cpu: bool,
    pub sandbox: Arc<Sandbox>,
    /// Folders the harness reads (the batch's candidates and references), bound read-only.
    pub reads: Vec<PathBuf>,
    /// `OMP_NUM_THREADS` of each worker on the interpreter (the cores shared out).
    pub threads: Option<usize>,
}

/// A worker's place: the GPU it sees (`CUDA_VISIBLE_DEVICES`), or none (inherit).
pub(crate) struct Worker {
    pub gpu: Option<String>,
    live: Option<Live>,
    /// How many times its process was started (1 + restarts).
    pub starts: u32,
}

struct Live {
    child: Child,
    stdin: ChildStdin,
    lines: CappedLines<BufReader<ChildStdout>>,
    pid: Option<i32>,
    stderr: Arc<Mutex<String>>,
}

/// How a pair's run ended for its worker.
pub(crate) struct Judged {
    pub result: BenchResult,
    /// The worker process died during the run without a result (the run may be tried again).
    pub worker_died: bool,
}

impl Worker {
    pub(crate) fn new(gpu: Option<String>) -> Worker {
        Worker { gpu, live: None, starts: 0 }
    }

    /// Starts the worker ahead of its first pair (torch and triton imported), so
    /// that the start overlaps other work; a failure is reported by `judge`.
    pub(crate) async fn warm(&mut self, cfg: &WorkerConfig) {
        if self.live.is_none() && self.start(cfg).await.is_err() {
            self.live = None;
        }
    }

    async fn start(&mut self, cfg: &WorkerConfig) -> Result<(), String> {
        let mut args = vec![cfg.harness.display().to_string(), "serve".to_string()];
        if cfg.cpu {
            args.push("--cpu".to_string());
        }
        let mut cmd = cfg.sandbox.command(&args, &cfg.reads);
        if let Some(g) = &self.gpu {
            cmd.env("CUDA_VISIBLE_DEVICES", g);
        }
        if let Some(n) = cfg.threads {
            cmd.env("OMP_NUM_THREADS", n.to_string());
        }
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true).process_group(0);
        let mut child = cmd.spawn().map_err(|e| format!("cannot start a benchmark worker: {e}"))?;
        self.starts += 1;
        let stderr = process::drain_stderr(child.stderr.take(), None);
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the worker has no stdin or stdout".to_string());
        };
        let pid = child.id().and_then(|p| i32::try_from(p).ok());
        let mut lines = CappedLines::new(BufReader::new(stdout));
        let deadline = Instant::now() + Duration::from_secs(START_SECS);
        loop {
            let line = tokio::time::timeout_at(deadline, lines.next_line()).await;
            let tail = || stderr.lock().map(|s| s.trim().to_string()).unwrap_or_default();
            let line = match line {
                Err(_) => return Err(format!("the benchmark worker did not start in {START_SECS} s:\n{}", tail())),
                Ok(Ok(Some(line))) => line,
                Ok(_) => return Err(format!("the benchmark worker exited while starting:\n{}", tail())),
            };
            let Ok(Value::Object(msg)) = serde_json::from_str::<Value>(&line) else { continue };
            match msg.get("type").and_then(Value::as_str) {
                Some("ready") => break,
                Some("error") => return Err(msg.get("message").and_then(Value::as_str).unwrap_or("").to_string()),
                _ => {}
            }
        }
        self.live = Some(Live { child, stdin, lines, pid, stderr });
        Ok(())
    }

    /// Kills the worker's process group (the sandbox, or the interpreter and what it forked).
    fn kill(&mut self) {
        if let Some(mut live) = self.live.take() {
            if let Some(pid) = live.pid {
                // SAFETY: killpg has no memory-safety preconditions; a stale group id fails with ESRCH.
                unsafe {
                    libc::killpg(pid, libc::SIGKILL);
                }
            }
            let _ = live.child.start_kill();
        }
    }

    /// Runs one pair (the harness arguments in `plan`) to its verdict.
    pub(crate) async fn judge(&mut self, cfg: &WorkerConfig, plan: &Plan) -> Judged {
        if self.live.is_none() {
            if let Err(e) = self.start(cfg).await {
                let result = BenchResult::failed("harness", e, Some(&plan.candidate), None);
                return Judged { result, worker_died: true };
            }
        }
        let Some(live) = self.live.as_mut() else {
            let result = BenchResult::failed("harness", "no worker", Some(&plan.candidate), None);
            return Judged { result, worker_died: true };
        };
        if let Ok(mut s) = live.stderr.lock() {
            s.clear();
        }
        let request = serde_json::json!({ "argv": plan.argv }).to_string() + "\n";
        let mut state = RunState::default();
        // Without bwrap the forked child leads its own group, announced by pid; in
        // bwrap the pid is the namespace's and is refused, and killing the worker ends all.
        let mut child_kill = GroupKill { pgid: None, worker: live.pid };
        let ending = match live.stdin.write_all(request.as_bytes()).await {
            Err(_) => Ok(Ending::Eof),
            Ok(()) => {
                let deadline = Instant::now() + plan.timeout;
                process::pump(&mut live.lines, deadline, &mut child_kill, &mut state, &mut |_| {}).await
            }
        };
        match ending {
            Ok(Ending::Done) => {
                child_kill.disarm();
                let result = state.result.take().unwrap_or_else(|| {
                    process::crashed_result(plan, "the candidate's run ended without a result", &live.stderr)
                });
                Judged { result, worker_died: false }
            }
            Ok(Ending::TimedOut) => {
                child_kill.kill_now();
                self.kill();
                Judged { result: process::timeout_result(plan, &state), worker_died: false }
            }
            Ok(Ending::Eof) | Err(_) => {
                child_kill.kill_now();
                let had = state.result.is_some();
                let failed = process::crashed_result(plan, "the benchmark worker died during the run", &live.stderr);
                self.kill();
                Judged { result: state.result.take().unwrap_or(failed), worker_died: !had }
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The GPUs this host offers: `CUDA_VISIBLE_DEVICES` when set, else the
/// driver's list under `/proc/driver/nvidia/gpus` (no CUDA, no Python asked).
pub(crate) fn visible_gpus() -> Vec<String> {
    if let Ok(v) = std::env::var("CUDA_VISIBLE_DEVICES") {
        return v
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty() && !s.starts_with('-'))
            .map(str::to_string)
            .collect();
    }
    let n = std::fs::read_dir("/proc/driver/nvidia/gpus").map(|d| d.flatten().count()).unwrap_or(0);
    (0..n).map(|i| i.to_string()).collect()
}

/// Reads one JSON line per pair on stdin and answers each with its batch
/// line on stdout, through one worker (`bench --batch-serve`: what a Ray task
/// talks to, so that the sandbox and the verdict are the pool's own).
pub(crate) async fn serve_lines(
    cfg: &WorkerConfig,
    mut judge: impl AsyncFnMut(&mut Worker, &WorkerConfig, &Value) -> Value,
) -> std::io::Result<()> {
    let mut worker = Worker::new(None);
    serve_stream(&mut worker, cfg, BufReader::new(tokio::io::stdin()), tokio::io::stdout(), &mut judge).await
}

/// The same on a Unix socket at `path`, one connection at a time, so that the
/// Ray worker processes of a host share one warm worker per GPU whichever of
/// them Ray hands the next task. Ends when `path` is removed (the run is
/// over) or after `idle` without a connection.
pub(crate) async fn serve_socket(
    cfg: &WorkerConfig,
    path: &std::path::Path,
    idle: Duration,
    mut judge: impl AsyncFnMut(&mut Worker, &WorkerConfig, &Value) -> Value,
) -> std::io::Result<()> {
    let listener = tokio::net::UnixListener::bind(path)?;
    let mut worker = Worker::new(None);
    let mut last = Instant::now();
    loop {
        let accepted = tokio::time::timeout(Duration::from_secs(1), listener.accept()).await;
        match accepted {
            Ok(Ok((stream, _))) => {
                let (read, write) = stream.into_split();
                // A client that goes away mid-answer ends its connection, not the server.
                let _ = serve_stream(&mut worker, cfg, BufReader::new(read), write, &mut judge).await;
                last = Instant::now();
            }
            Ok(Err(e)) => return Err(e),
            Err(_) if !path.exists() || last.elapsed() > idle => return Ok(()),
            Err(_) => {}
        }
    }
}

async fn serve_stream<R, W>(
    worker: &mut Worker,
    cfg: &WorkerConfig,
    reader: R,
    mut out: W,
    judge: &mut impl AsyncFnMut(&mut Worker, &WorkerConfig, &Value) -> Value,
) -> std::io::Result<()>
where
    R: tokio::io::AsyncBufRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut input = reader.lines();
    while let Some(line) = input.next_line().await? {
        let Ok(request) = serde_json::from_str::<Value>(&line) else { continue };
        let answer = judge(worker, cfg, &request).await;
        out.write_all((answer.to_string() + "\n").as_bytes()).await?;
        out.flush().await?;
    }
    Ok(())
}
