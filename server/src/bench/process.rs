//! Running the harness: one-shot (a fresh Python per run, for the CLI) or
//! through the warm worker (one long-lived `harness.py serve` per interpreter
//! and mode that has imported torch and triton and forks a child per run).
//!
//! Both read the same JSON lines, and both kill the process group of the code
//! that runs the user's kernels on timeout or when the future is dropped:
//! a kernel spinning on a grid barrier must end, not hang the editor.
//!
//! The worker's pipes belong to a small runtime of their own, so the worker
//! outlives whichever runtime asked for the first run (the CLI's, a test's,
//! the server's).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::Instant;

use super::{model_new_line, BenchError, BenchResult};

/// Everything one run needs, already resolved.
pub(crate) struct Plan {
    pub python: String,
    pub harness: PathBuf,
    pub argv: Vec<String>,
    pub cpu: bool,
    pub timeout: Duration,
    pub candidate: PathBuf,
    /// Where the harness runs: in this sandbox, or as the user.
    pub sandbox: Option<Arc<super::sandbox::Sandbox>>,
    /// Files outside the sandbox's directory that the harness reads.
    pub reads: Vec<PathBuf>,
}

/// The longest protocol line kept; a longer one (a flood from user code) is dropped.
const MAX_LINE: u64 = 1 << 20;

/// The harness's stdout as lines of at most `MAX_LINE` bytes: code in the
/// harness's process cannot make the server hold an unbounded line.
pub(super) struct CappedLines<R> {
    inner: R,
}

impl<R: AsyncBufRead + Unpin> CappedLines<R> {
    pub(super) fn new(inner: R) -> Self {
        CappedLines { inner }
    }

    pub(super) async fn next_line(&mut self) -> std::io::Result<Option<String>> {
        let mut buf = Vec::new();
        let n = (&mut self.inner).take(MAX_LINE).read_until(b'\n', &mut buf).await?;
        if n == 0 {
            return Ok(None);
        }
        if buf.last() != Some(&b'\n') && n as u64 == MAX_LINE {
            loop {
                let mut skip = Vec::new();
                let m = (&mut self.inner).take(MAX_LINE).read_until(b'\n', &mut skip).await?;
                if m == 0 || skip.last() == Some(&b'\n') {
                    break;
                }
            }
            return Ok(Some(String::new()));
        }
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
    }
}

/// Kills a process group when dropped (cancel) or asked (timeout), unless disarmed.
pub(crate) struct GroupKill {
    pub(crate) pgid: Option<i32>,
    /// The warm worker's pid, whose forked children may announce themselves.
    pub(crate) worker: Option<i32>,
}

/// Whether `pid` leads its own process group and is a child of `parent`.
fn is_group_child_of(pid: i32, parent: i32) -> bool {
    if pid <= 1 {
        return false;
    }
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    // pid (comm) state ppid pgrp ...: comm may hold spaces, so read after its last ')'.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { return false };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    fields.get(1).and_then(|f| f.parse::<i32>().ok()) == Some(parent)
        && fields.get(2).and_then(|f| f.parse::<i32>().ok()) == Some(pid)
}

impl GroupKill {
    pub(super) fn kill_now(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // SAFETY: killpg has no memory-safety preconditions; a stale group id fails with ESRCH.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }

    pub(super) fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupKill {
    fn drop(&mut self) {
        self.kill_now();
    }
}

/// What the protocol has said so far in one run.
#[derive(Default)]
pub(super) struct RunState {
    pub(super) result: Option<BenchResult>,
    last_progress: Option<String>,
}

pub(super) enum Ending {
    /// End of output: the process exited.
    Eof,
    /// The worker says the forked child has ended.
    Done,
    TimedOut,
}

/// Reads protocol lines until the output ends, the worker reports `done`, or the deadline.
pub(super) async fn pump<R: AsyncBufRead + Unpin>(
    lines: &mut CappedLines<R>,
    deadline: Instant,
    kill: &mut GroupKill,
    state: &mut RunState,
    on_progress: &mut (dyn FnMut(String) + Send),
) -> std::io::Result<Ending> {
    loop {
        let line = match tokio::time::timeout_at(deadline, lines.next_line()).await {
            Err(_) => return Ok(Ending::TimedOut),
            Ok(line) => line?,
        };
        let Some(line) = line else { return Ok(Ending::Eof) };
        let Ok(Value::Object(mut msg)) = serde_json::from_str::<Value>(&line) else {
            tracing::debug!("harness: {line}");
            continue;
        };
        let kind = msg.remove("type").and_then(|t| t.as_str().map(str::to_string)).unwrap_or_default();
        match kind.as_str() {
            // Only the warm worker's forked child is announced this way; a
            // one-shot run's group is the process the runner started, and a
            // pid from inside a sandbox means nothing outside it. The worker's
            // word is taken only for a child of the worker in its own group.
            "started" => {
                if let (Some(worker), Some(pid)) = (kill.worker, msg.get("pid").and_then(Value::as_i64)) {
                    if let Some(pid) = i32::try_from(pid).ok().filter(|p| is_group_child_of(*p, worker)) {
                        kill.pgid = Some(pid);
                    }
                }
            }
            "progress" => {
                let text = |k: &str| msg.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                let (stage, message) = (text("stage"), text("message"));
                state.last_progress = Some(format!("{stage}: {message}"));
                on_progress(message);
            }
            "result" => state.result = Some(parse_result(msg)),
            "error" => {
                let text = |k: &str| msg.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                state.result = Some(BenchResult::failed(&text("kind"), text("message"), None, None));
            }
            "done" => return Ok(Ending::Done),
            _ => {}
        }
    }
}

fn parse_result(mut msg: serde_json::Map<String, Value>) -> BenchResult {
    if !msg.get("mode").is_some_and(Value::is_string) {
        msg.insert("mode".into(), Value::from("none"));
    }
    match serde_json::from_value(Value::Object(msg)) {
        Ok(r) => r,
        Err(e) => BenchResult::failed("harness", format!("unreadable result from the harness: {e}"), None, None),
    }
}

pub(super) fn timeout_result(plan: &Plan, state: &RunState) -> BenchResult {
    let stage = state.last_progress.as_deref().unwrap_or("starting");
    let mut message = format!("timed out after {:.0} s ({stage}); the run was killed.", plan.timeout.as_secs_f64());
    if plan.cpu || state.result.is_none() {
        message.push(' ');
        message.push_str(&super::interpreter_timeout_hint(&plan.candidate));
    }
    let mut result = BenchResult::failed("timeout", message, Some(&plan.candidate), model_new_line(&plan.candidate));
    if plan.cpu {
        result.mode = "cpu-interpreter".to_string();
    }
    result
}

pub(super) fn crashed_result(plan: &Plan, what: &str, stderr: &Mutex<String>) -> BenchResult {
    let tail = stderr.lock().map(|s| s.trim().to_string()).unwrap_or_default();
    let message = if tail.is_empty() { what.to_string() } else { format!("{what}:\n{tail}") };
    BenchResult::failed("harness", message, Some(&plan.candidate), None)
}

/// Keeps the last few KB of a child's stderr (user prints, tracebacks) for error messages.
pub(super) fn drain_stderr(
    stderr: Option<tokio::process::ChildStderr>,
    spawn_on: Option<&tokio::runtime::Runtime>,
) -> Arc<Mutex<String>> {
    const KEEP: usize = 4000;
    let tail = Arc::new(Mutex::new(String::new()));
    let Some(mut stderr) = stderr else { return tail };
    let sink = tail.clone();
    let task = async move {
        let mut buf = vec![0u8; 8192];
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            let Ok(mut s) = sink.lock() else { break };
            s.push_str(&String::from_utf8_lossy(&buf[..n]));
            if s.len() > 2 * KEEP {
                let mut cut = s.len() - KEEP;
                while !s.is_char_boundary(cut) {
                    cut += 1;
                }
                s.drain(..cut);
            }
        }
    };
    match spawn_on {
        Some(rt) => drop(rt.spawn(task)),
        None => drop(tokio::spawn(task)),
    }
    tail
}

/// The harness's command: in the plan's sandbox when it has one (the only
/// way LLM-written code is started), else the user's interpreter.
fn harness_command(plan: &Plan, mode_args: &[&str]) -> Command {
    let mut args = vec![plan.harness.display().to_string()];
    args.extend(mode_args.iter().map(|s| s.to_string()));
    if mode_args == ["run"] {
        args.extend(plan.argv.iter().cloned());
    }
    let mut cmd = match &plan.sandbox {
        Some(sb) => sb.command(&args, &plan.reads),
        None => {
            let mut cmd = Command::new(&plan.python);
            cmd.args(&args);
            cmd
        }
    };
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).env("PYTHONUNBUFFERED", "1").kill_on_drop(true).process_group(0);
    cmd
}

fn spawn_error(plan: &Plan) -> impl FnOnce(std::io::Error) -> BenchError + '_ {
    move |source| BenchError::Spawn { python: plan.python.clone(), source }
}

// ---------------------------------------------------------------- one-shot

pub(super) async fn run_cold(
    plan: &Plan,
    mut on_progress: impl FnMut(String) + Send,
) -> Result<BenchResult, BenchError> {
    let mut cmd = harness_command(plan, &["run"]);
    cmd.stdin(Stdio::null());
    let mut child = cmd.spawn().map_err(spawn_error(plan))?;
    let mut kill = GroupKill { pgid: child.id().and_then(|p| i32::try_from(p).ok()), worker: None };
    let stderr = drain_stderr(child.stderr.take(), None);
    let stdout = child.stdout.take().ok_or_else(|| BenchError::Setup("the harness has no stdout".into()))?;
    let mut lines = CappedLines::new(BufReader::new(stdout));
    let deadline = Instant::now() + plan.timeout;
    let mut state = RunState::default();
    let ending = pump(&mut lines, deadline, &mut kill, &mut state, &mut on_progress).await?;
    if matches!(ending, Ending::TimedOut) {
        kill.kill_now();
        let _ = child.wait().await;
        return Ok(timeout_result(plan, &state));
    }
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    kill.disarm();
    if let Some(result) = state.result {
        return Ok(result);
    }
    let what = match status {
        Ok(Ok(s)) => format!("the harness ended without a result ({s})"),
        _ => "the harness ended without a result".to_string(),
    };
    Ok(crashed_result(plan, &what, &stderr))
}

// ---------------------------------------------------------------- warm worker

struct Worker {
    _child: Child,
    stdin: ChildStdin,
    lines: CappedLines<BufReader<ChildStdout>>,
    pid: Option<i32>,
    stderr: Arc<Mutex<String>>,
    /// A forked run was sent whose `done` has not been read (its future was dropped).
    unsettled: bool,
}

type WorkerKey = (String, bool);

fn workers() -> &'static tokio::sync::Mutex<HashMap<WorkerKey, Worker>> {
    static WORKERS: OnceLock<tokio::sync::Mutex<HashMap<WorkerKey, Worker>>> = OnceLock::new();
    WORKERS.get_or_init(Default::default)
}

/// The runtime that owns the workers' pipes; lives as long as the process.
fn worker_runtime() -> Result<&'static tokio::runtime::Runtime, BenchError> {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    if let Some(rt) = RT.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("kernel-lsp-bench-worker")
        .enable_all()
        .build()?;
    Ok(RT.get_or_init(|| rt))
}

/// Seconds a fresh worker may take to import torch and triton.
const WORKER_START: Duration = Duration::from_secs(180);

/// Starts `harness.py serve`; a harness-level failure (no torch) comes back as a result.
async fn start_worker(plan: &Plan) -> Result<Result<Worker, BenchResult>, BenchError> {
    let rt = worker_runtime()?;
    let mode: &[&str] = if plan.cpu { &["serve", "--cpu"] } else { &["serve"] };
    let mut child = {
        let _enter = rt.enter();
        let mut cmd = harness_command(plan, mode);
        cmd.stdin(Stdio::piped());
        cmd.spawn().map_err(spawn_error(plan))?
    };
    let stderr = drain_stderr(child.stderr.take(), Some(rt));
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(BenchError::Setup("the worker has no stdin or stdout".into()));
    };
    let mut lines = CappedLines::new(BufReader::new(stdout));
    let deadline = Instant::now() + WORKER_START.max(plan.timeout);
    loop {
        let line = match tokio::time::timeout_at(deadline, lines.next_line()).await {
            Err(_) => return Ok(Err(crashed_result(plan, "the benchmark worker did not start in time", &stderr))),
            Ok(line) => line?,
        };
        let Some(line) = line else {
            return Ok(Err(crashed_result(plan, "the benchmark worker exited while starting", &stderr)));
        };
        let Ok(Value::Object(msg)) = serde_json::from_str::<Value>(&line) else { continue };
        match msg.get("type").and_then(Value::as_str) {
            Some("ready") => {
                let pid = child.id().and_then(|p| i32::try_from(p).ok());
                return Ok(Ok(Worker { _child: child, stdin, lines, stderr, unsettled: false, pid }));
            }
            Some("error") => {
                let text = |k: &str| msg.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                return Ok(Err(BenchResult::failed(&text("kind"), text("message"), Some(&plan.candidate), None)));
            }
            _ => {}
        }
    }
}

impl Worker {
    /// Reads what a cancelled run left behind, up to its `done`; false if the worker is unusable.
    async fn settle(&mut self) -> bool {
        if !self.unsettled {
            return true;
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match tokio::time::timeout_at(deadline, self.lines.next_line()).await {
                Ok(Ok(Some(line))) if line.contains("\"type\": \"done\"") => {
                    self.unsettled = false;
                    return true;
                }
                Ok(Ok(Some(_))) => continue,
                _ => return false,
            }
        }
    }
}

pub(super) async fn run_warm(
    plan: &Plan,
    mut on_progress: impl FnMut(String) + Send,
) -> Result<BenchResult, BenchError> {
    let key: WorkerKey = (plan.python.clone(), plan.cpu);
    let mut map = workers().lock().await;
    if let Some(w) = map.get_mut(&key) {
        if !w.settle().await {
            map.remove(&key);
        }
    }
    let worker = match map.entry(key.clone()) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => match start_worker(plan).await? {
            Ok(w) => e.insert(w),
            Err(failed) => return Ok(failed),
        },
    };
    if let Ok(mut s) = worker.stderr.lock() {
        s.clear();
    }
    let request = serde_json::json!({ "argv": plan.argv }).to_string() + "\n";
    if worker.stdin.write_all(request.as_bytes()).await.is_err() {
        let failed = crashed_result(plan, "the benchmark worker has exited", &worker.stderr);
        map.remove(&key);
        return Ok(failed);
    }
    worker.unsettled = true;
    let mut kill = GroupKill { pgid: None, worker: worker.pid };
    let mut state = RunState::default();
    let deadline = Instant::now() + plan.timeout;
    let ending = pump(&mut worker.lines, deadline, &mut kill, &mut state, &mut on_progress).await;
    match ending {
        Ok(Ending::Done) => {
            worker.unsettled = false;
            kill.disarm();
        }
        Ok(Ending::TimedOut) => {
            kill.kill_now();
            if !worker.settle().await {
                map.remove(&key);
            }
            return Ok(timeout_result(plan, &state));
        }
        Ok(Ending::Eof) | Err(_) => {
            kill.kill_now();
            let failed = crashed_result(plan, "the benchmark worker exited during the run", &worker.stderr);
            map.remove(&key);
            return Ok(state.result.unwrap_or(failed));
        }
    }
    match state.result {
        Some(result) => Ok(result),
        None => Ok(crashed_result(plan, "the run ended without a result", &worker.stderr)),
    }
}
