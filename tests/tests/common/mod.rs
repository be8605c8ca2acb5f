//! A small LSP client for end-to-end tests: starts the real `kernel-lsp serve`
//! binary and speaks framed JSON-RPC to it over stdio.
//!
//! Server-to-client requests are answered the way an editor would
//! (`workspace/applyEdit` is applied and recorded, registrations, progress
//! tokens and refreshes are acknowledged), so a test reads like a session.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub const TIMEOUT: Duration = Duration::from_secs(20);

/// The Triton file most tests open: KL005 on `tl.tanh`, KL004 on `tl.arange(0, H)`.
pub const FIXTURE: &str = r#"import triton
import triton.language as tl

@triton.jit
def act(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, tl.tanh(x), mask=offs < n)


@triton.jit
def fill(x_ptr, H):
    offs = tl.arange(0, H)
    tl.store(x_ptr + offs, offs)


class ModelNew:
    def forward(self, x, y):
        act[(4,)](x, y, x.numel(), BLOCK=128)
        return y
"#;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `target/debug/kernel-lsp` (under `CARGO_TARGET_DIR` when set), built once if missing.
pub fn server_binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let root = workspace_root();
        let target = match std::env::var_os("CARGO_TARGET_DIR") {
            Some(dir) => root.join(dir), // an absolute CARGO_TARGET_DIR replaces `root`
            None => root.join("target"),
        };
        let bin = target.join("debug").join(format!("kernel-lsp{}", std::env::consts::EXE_SUFFIX));
        if !bin.is_file() {
            let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                .args(["build", "-p", "kernel-lsp"])
                .current_dir(&root)
                .status()
                .expect("cargo runs");
            assert!(status.success(), "cargo build -p kernel-lsp failed");
        }
        bin
    })
}

pub fn file_uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// A fresh directory for one test's workspace.
pub fn temp_workspace(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kernel-lsp-e2e-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create temp workspace");
    dir
}

/// Reads one `Content-Length` frame; None at end of stream.
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
    reader.read_exact(&mut body).ok()?;
    Some(serde_json::from_slice(&body).expect("the server writes valid JSON"))
}

pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

pub struct LspClient {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<Value>,
    next_id: i64,
    /// Messages read but not yet consumed (notifications, server requests).
    pending: VecDeque<Value>,
    /// `workspace/applyEdit` requests the server sent, in order.
    pub applied_edits: Vec<Value>,
    /// `window/showMessage` notifications, in order.
    pub messages: Vec<Value>,
    /// What `workspace/configuration` answers.
    pub configuration: Value,
}

impl LspClient {
    pub fn start() -> Self {
        Self::start_command(Command::new(server_binary()).arg("serve"))
    }

    pub fn start_command(command: &mut Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let stdin = child.stdin.take();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(msg) = read_frame(&mut reader) {
                if tx.send(msg).is_err() {
                    break;
                }
            }
        });
        LspClient {
            child,
            stdin,
            rx,
            next_id: 1,
            pending: VecDeque::new(),
            applied_edits: Vec::new(),
            messages: Vec::new(),
            configuration: Value::Null,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to server");
        stdin.flush().expect("flush");
    }

    pub fn send(&mut self, msg: &Value) {
        let body = serde_json::to_vec(msg).expect("serialize");
        self.send_raw(&frame(&body));
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and returns its id without waiting.
    pub fn send_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Sends a request and waits for its whole response message (`result` or `error`).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.response(id)
    }

    /// The `result` of a request that must succeed.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    pub fn response(&mut self, id: i64) -> Value {
        self.wait_for(|m| m.get("method").is_none() && m["id"] == json!(id), &format!("response {id}"))
    }

    /// Next message for which `pred` holds; answers server requests and keeps other messages.
    pub fn wait_for(&mut self, pred: impl Fn(&Value) -> bool, what: &str) -> Value {
        if let Some(i) = self.pending.iter().position(&pred) {
            return self.pending.remove(i).expect("index in range");
        }
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let msg = match self.rx.recv_timeout(left) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => {
                    panic!("timed out waiting for {what}; pending: {:?}", self.pending)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("server closed stdout while waiting for {what}")
                }
            };
            self.observe(&msg);
            if pred(&msg) {
                return msg;
            }
            self.pending.push_back(msg);
        }
    }

    /// Whether a message for which `pred` holds has been read and kept (by
    /// [`Self::wait_for`], while it waited for another that came later).
    pub fn was_read(&self, pred: impl Fn(&Value) -> bool) -> bool {
        self.pending.iter().any(pred)
    }

    /// Messages that arrive within `within`, without waiting for any in particular.
    pub fn drain(&mut self, within: Duration) -> Vec<Value> {
        let deadline = Instant::now() + within;
        let mut out: Vec<Value> = self.pending.drain(..).collect();
        while let Ok(msg) = self.rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            self.observe(&msg);
            out.push(msg);
        }
        out
    }

    fn observe(&mut self, msg: &Value) {
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            return;
        };
        if method == "window/showMessage" {
            self.messages.push(msg["params"].clone());
        }
        let Some(id) = msg.get("id").cloned() else {
            return;
        };
        let result = match method {
            "workspace/applyEdit" => {
                self.applied_edits.push(msg["params"].clone());
                json!({"applied": true})
            }
            "workspace/configuration" => {
                let n = msg["params"]["items"].as_array().map_or(1, Vec::len);
                Value::Array(vec![self.configuration.clone(); n])
            }
            _ => Value::Null,
        };
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    /// `initialize` + `initialized` with the given client capabilities and options.
    pub fn initialize_with(&mut self, capabilities: Value, options: Value, root: Option<&Path>) -> Value {
        let folders = root.map(|r| json!([{"uri": file_uri(r), "name": "ws"}])).unwrap_or(Value::Null);
        let result = self.call(
            "initialize",
            json!({
                "processId": null,
                "rootUri": root.map(file_uri),
                "workspaceFolders": folders,
                "capabilities": capabilities,
                "initializationOptions": options,
            }),
        );
        self.notify("initialized", json!({}));
        result
    }

    /// Initializes as an editor offering `encodings` that takes pushed diagnostics.
    pub fn initialize(&mut self, encodings: &[&str]) -> Value {
        self.initialize_with(Self::capabilities(encodings), Value::Null, None)
    }

    pub fn capabilities(encodings: &[&str]) -> Value {
        json!({
            "general": {"positionEncodings": encodings},
            "workspace": {
                "applyEdit": true,
                "workspaceEdit": {"documentChanges": true},
                "configuration": true,
                "codeLens": {"refreshSupport": true},
            },
            "textDocument": {
                "publishDiagnostics": {"versionSupport": true, "dataSupport": true},
                "codeAction": {"dataSupport": true},
            },
            "window": {"workDoneProgress": true},
        })
    }

    pub fn open(&mut self, uri: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
        );
    }

    pub fn change(&mut self, uri: &str, version: i64, changes: Value) {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": changes}),
        );
    }

    /// The next `publishDiagnostics` for `uri` with `version` (skipping older ones).
    pub fn diagnostics(&mut self, uri: &str, version: i64) -> Vec<Value> {
        let msg = self.wait_for(
            |m| {
                m["method"] == "textDocument/publishDiagnostics"
                    && m["params"]["uri"] == uri
                    && m["params"]["version"] == json!(version)
            },
            &format!("diagnostics for {uri} v{version}"),
        );
        msg["params"]["diagnostics"].as_array().cloned().unwrap_or_default()
    }

    /// `shutdown`, then `exit`; returns the server's exit status.
    pub fn shutdown(mut self) -> ExitStatus {
        let response = self.request("shutdown", Value::Null);
        assert!(response.get("error").is_none(), "shutdown failed: {response}");
        self.notify("exit", Value::Null);
        self.wait_exit()
    }

    pub fn wait_exit(&mut self) -> ExitStatus {
        self.stdin.take();
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for LspClient {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Codes of a list of LSP diagnostics, in order.
pub fn codes(diags: &[Value]) -> Vec<String> {
    diags.iter().filter_map(|d| d["code"].as_str().map(str::to_string)).collect()
}

/// Applies LSP text edits (positions in `encoding`: "utf-8" or "utf-16") to `text`.
pub fn apply_text_edits(text: &str, edits: &[Value], encoding: &str) -> String {
    let offset = |pos: &Value| -> usize {
        let line = pos["line"].as_u64().expect("line") as usize;
        let col = pos["character"].as_u64().expect("character") as usize;
        let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
        let line_text = text[start..].split('\n').next().unwrap_or("");
        let mut units = 0;
        for (i, ch) in line_text.char_indices() {
            if units >= col {
                return start + i;
            }
            units += if encoding == "utf-8" { ch.len_utf8() } else { ch.len_utf16() };
        }
        start + line_text.len()
    };
    let mut spans: Vec<(usize, usize, String)> = edits
        .iter()
        .map(|e| {
            (offset(&e["range"]["start"]), offset(&e["range"]["end"]), e["newText"].as_str().unwrap_or("").to_string())
        })
        .collect();
    spans.sort_by_key(|s| std::cmp::Reverse(s.0));
    let mut out = text.to_string();
    for (s, e, t) in spans {
        out.replace_range(s..e, &t);
    }
    out
}
