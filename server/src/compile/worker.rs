//! The compile worker process: `server/harness/compile_worker.py` in the
//! user's Python, started lazily through the sandbox every untrusted run goes
//! through ([`crate::bench::sandbox::Sandbox::command`]), asked one JSON line
//! at a time, and started again when it dies or stops answering.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::bench::sandbox::{self, Limits, Sandbox, SandboxSetting};
use crate::bench::GroupKill;

/// The worker's script, shipped inside the binary.
pub const SCRIPT: &str = include_str!("../../harness/compile_worker.py");

/// Seconds the worker may take to start (importing Triton) and say hello.
const START_SECS: u64 = 120;

/// What the worker said when it started.
#[derive(Debug, Clone, PartialEq)]
pub struct Hello {
    pub triton: String,
    pub python: String,
    /// The GPU of this machine, `(major, minor)`; `None` without one.
    pub capability: Option<(u32, u32)>,
}

struct Process {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    /// The process group the worker leads (`process_group(0)`), killed whole
    /// when the process is dropped. The sandbox is `bwrap`, which forks its
    /// own init for the new PID namespace: a `bwrap` killed while it sets up
    /// leaves that init waiting forever for a signal from the dead parent
    /// (seen once, an orphan from a test run); killing the group reaches it.
    _group: GroupKill,
}

/// One worker: its sandbox (a private directory, removed when dropped) and its process, once started.
pub struct Worker {
    sandbox: Sandbox,
    script: PathBuf,
    python: String,
    process: Option<Process>,
    next_id: u64,
    hello: Option<Hello>,
    /// How many times a process was started (1 after the first request).
    pub starts: u32,
    /// Compiles nobody waits for (the editor's): the process runs at idle priority.
    pub background: bool,
}

impl Worker {
    /// Prepares the sandbox around `python`; the process starts on the first request.
    pub fn new(python: &str, setting: Option<SandboxSetting>, memory_mb: u64) -> Result<Worker, String> {
        let limits = Limits { data_bytes: sandbox::memory_limit(memory_mb), ..Limits::default() };
        let sandbox = sandbox::prepare(setting, python, limits)
            .map_err(|e| e.replace("LLM answers are run", "The compile worker runs"))?;
        let script = sandbox
            .write("compile_worker.py", SCRIPT)
            .map_err(|e| format!("cannot write the compile worker into its sandbox: {e}"))?;
        Ok(Worker {
            sandbox,
            script,
            python: python.to_string(),
            process: None,
            next_id: 0,
            hello: None,
            starts: 0,
            background: false,
        })
    }

    pub fn hello(&self) -> Option<&Hello> {
        self.hello.as_ref()
    }

    /// The process id of the running worker (bwrap's, when sandboxed).
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().and_then(|p| p.child.id())
    }

    /// Starts the process if none runs and returns what it said; an error says
    /// what is missing (no interpreter, no Triton, no sandbox).
    pub async fn start(&mut self) -> Result<Hello, String> {
        if self.process.is_some() {
            if let Some(h) = &self.hello {
                return Ok(h.clone());
            }
        }
        let mut cmd = self.sandbox.command(&[self.script.display().to_string()], std::slice::from_ref(&self.script));
        // Below the editor's priority: on a machine with few cores a compilation
        // never takes a core from the server's analysis of the next edit. In the
        // editor (`background`) it runs only on a core nothing else wants
        // (SCHED_IDLE: any ordinary thread that wakes takes the core at once);
        // for `check --compile` and a batch, which wait for it, at nice 10.
        sandbox::below_the_editor(&mut cmd, self.background, 10);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .process_group(0);
        let mut child = cmd.spawn().map_err(|e| format!("cannot start the Python {}: {e}", self.python))?;
        let group = GroupKill { pgid: child.id().and_then(|p| i32::try_from(p).ok()), worker: None };
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the compile worker has no pipes".to_string());
        };
        self.process = Some(Process { child, stdin, stdout: BufReader::new(stdout).lines(), _group: group });
        self.starts += 1;
        let reply = self.exchange(json!({"type": "hello"}), Duration::from_secs(START_SECS)).await;
        let reply = match reply {
            Ok(r) if r["ok"] == true => r,
            Ok(r) => {
                self.stop();
                return Err(r["message"].as_str().unwrap_or("the compile worker refused to start").to_string());
            }
            Err(e) => {
                self.stop();
                return Err(format!(
                    "the Python {} cannot run the compile worker ({e}); it needs Triton installed",
                    self.python
                ));
            }
        };
        let capability = reply["capability"]
            .as_array()
            .and_then(|c| Some((c.first()?.as_u64()? as u32, c.get(1)?.as_u64()? as u32)));
        let hello = Hello {
            triton: reply["triton"].as_str().unwrap_or("?").to_string(),
            python: reply["python"].as_str().unwrap_or("?").to_string(),
            capability,
        };
        self.hello = Some(hello.clone());
        Ok(hello)
    }

    /// Kills the process; the next request starts a fresh one.
    pub fn stop(&mut self) {
        if let Some(mut p) = self.process.take() {
            let _ = p.child.start_kill();
        }
    }

    /// Sends `request` and waits up to `timeout` for its reply, starting the
    /// process if needed; a process that died or timed out is started again
    /// and asked once more.
    pub async fn request(&mut self, request: Value, timeout: Duration) -> Result<Value, String> {
        let mut last = String::new();
        for _ in 0..2 {
            self.start().await?;
            match self.exchange(request.clone(), timeout).await {
                Ok(reply) => return Ok(reply),
                Err(e) => {
                    self.stop();
                    last = e;
                }
            }
        }
        Err(last)
    }

    async fn exchange(&mut self, mut request: Value, timeout: Duration) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        request["id"] = json!(id);
        let Some(p) = self.process.as_mut() else { return Err("the compile worker is not running".to_string()) };
        let mut line = serde_json::to_string(&request).map_err(|e| e.to_string())?;
        line.push('\n');
        let io = async {
            p.stdin.write_all(line.as_bytes()).await.map_err(|e| format!("the compile worker is gone ({e})"))?;
            p.stdin.flush().await.map_err(|e| format!("the compile worker is gone ({e})"))?;
            loop {
                let Some(text) = p.stdout.next_line().await.map_err(|e| e.to_string())? else {
                    return Err("the compile worker ended".to_string());
                };
                let Ok(reply) = serde_json::from_str::<Value>(&text) else { continue };
                // A reply to a request whose caller gave up (a newer edit) is dropped.
                if reply["id"] == json!(id) {
                    return Ok(reply);
                }
            }
        };
        match tokio::time::timeout(timeout, io).await {
            Ok(r) => r,
            Err(_) => Err(format!("the compile worker did not answer within {} s", timeout.as_secs())),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dropping the worker's group kills what the worker forked too (bwrap's
    /// own init, here a shell's background child), not the worker alone.
    #[test]
    fn dropping_the_group_kills_the_children_the_worker_forked() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async {
            let mut child = tokio::process::Command::new("sh")
                .args(["-c", "sleep 60 & sleep 60"])
                .process_group(0)
                .kill_on_drop(true)
                .spawn()
                .expect("sh starts");
            let pgid = child.id().and_then(|p| i32::try_from(p).ok()).expect("pid");
            // SAFETY: signal 0 only asks whether a process of the group exists.
            let group_alive = || unsafe { libc::killpg(pgid, 0) } == 0;
            tokio::time::sleep(Duration::from_millis(200)).await;
            // What `stop` did alone: the worker killed, what it forked left running.
            let _ = child.start_kill();
            let _ = child.wait().await;
            assert!(group_alive(), "the forked child outlives the worker killed alone");
            drop(GroupKill { pgid: Some(pgid), worker: None });
            let mut waited = 0;
            while group_alive() && waited < 50 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                waited += 1;
            }
            assert!(!group_alive(), "a process of the worker's group outlived it");
        });
    }
}
