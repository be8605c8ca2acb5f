//! A language server over stdio for the benchmarks (`lsp_latency`,
//! `lsp_requests`, `compile_latency`): framed JSON-RPC out, a reader thread
//! in, the server's own requests answered (empty settings), its memory read
//! from `/proc`.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub struct StdioServer {
    pub child: Child,
    stdin: ChildStdin,
    rx: Receiver<Value>,
    next_id: i64,
    timeout: Duration,
}

/// One frame's JSON body from `reader`; `None` at the end or on a broken frame.
pub fn read_frame(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length:") {
            length = v.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0u8; length?];
    std::io::Read::read_exact(reader, &mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

impl StdioServer {
    /// Starts `command` (program and arguments) in `cwd`; every wait gives up after `timeout`.
    pub fn start(command: &[String], cwd: Option<&Path>, timeout: Duration) -> StdioServer {
        let mut cmd = Command::new(&command[0]);
        // `KL_SERVER_STDERR=FILE`: the server's log (`KERNEL_LSP_LOG`) appended to FILE, for profiling.
        let stderr = std::env::var_os("KL_SERVER_STDERR")
            .and_then(|p| std::fs::OpenOptions::new().create(true).append(true).open(p).ok())
            .map_or_else(Stdio::null, Stdio::from);
        cmd.args(&command[1..]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(stderr);
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let stdin = child.stdin.take().expect("stdin");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(msg) = read_frame(&mut reader) {
                if tx.send(msg).is_err() {
                    break;
                }
            }
        });
        StdioServer { child, stdin, rx, next_id: 1, timeout }
    }

    /// How long each later wait gives up after.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    pub fn send(&mut self, msg: &Value) {
        let body = serde_json::to_vec(msg).expect("json");
        let _ = write!(self.stdin, "Content-Length: {}\r\n\r\n", body.len());
        let _ = self.stdin.write_all(&body);
        let _ = self.stdin.flush();
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Waits for a message matching `pred`, answering the server's own requests.
    pub fn wait(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + self.timeout;
        loop {
            let msg = self
                .rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("the server answers in time");
            if msg.get("method").is_some() && msg.get("id").is_some() {
                let n = msg["params"]["items"].as_array().map_or(1, Vec::len);
                let result =
                    if msg["method"] == "workspace/configuration" { json!(vec![Value::Null; n]) } else { Value::Null };
                self.send(&json!({"jsonrpc": "2.0", "id": msg["id"], "result": result}));
                continue;
            }
            if pred(&msg) {
                return msg;
            }
        }
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait(|m| m.get("method").is_none() && m["id"] == json!(id))
    }

    /// A `/proc/PID/status` field in kB (`"VmRSS:"`, `"VmHWM:"`).
    pub fn memory_kb(&self, field: &str) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    }

    /// `shutdown` and `exit`, then a kill if it lingers.
    pub fn stop(mut self) {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
