//! `kernel-lsp serve` with the transport arguments LSP clients append:
//! vscode-languageclient spawns `kernel-lsp serve --stdio` and may add
//! `--clientProcessId=N`. The server speaks LSP with them, exits once the
//! watched process is gone, and refuses anything else by name.

mod common;

use std::io::{BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use common::{frame, read_frame, server_binary, FIXTURE};
use serde_json::{json, Value};

/// A process to watch that the test can end when it wants.
fn watched_process() -> Child {
    Command::new("sleep").arg("600").spawn().expect("sleep starts")
}

/// The real binary, spawned as vscode-languageclient spawns it, with a reader
/// thread on its stdout.
struct Served {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<Value>,
}

impl Served {
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(server_binary())
            .arg("serve")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let stdin = child.stdin.take().expect("piped stdin");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(msg) = read_frame(&mut reader) {
                if tx.send(msg).is_err() {
                    break;
                }
            }
        });
        Served { child, stdin, rx }
    }

    fn send(&mut self, msg: Value) {
        let body = serde_json::to_vec(&msg).expect("serialize");
        self.stdin.write_all(&frame(&body)).expect("write to server");
        self.stdin.flush().expect("flush");
    }

    /// The next message for which `pred` holds (server requests get a null result).
    fn wait_for(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let msg = self.rx.recv_timeout(common::TIMEOUT).expect("a message from the server");
            if let (Some(id), Some(_)) = (msg.get("id"), msg.get("method")) {
                let id = id.clone();
                self.send(json!({"jsonrpc": "2.0", "id": id, "result": null}));
            }
            if pred(&msg) {
                return msg;
            }
        }
    }

    fn initialize(&mut self) {
        self.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"processId": null, "rootUri": null, "capabilities": {}}}));
        let answer = self.wait_for(|m| m["id"] == 1 && m.get("method").is_none());
        assert!(answer["result"]["capabilities"].is_object(), "initialize over --stdio: {answer}");
        self.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
    }

    /// Waits up to `within` for the server to exit; its status, if it did.
    fn exit_within(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        None
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn speaks_lsp_with_stdio_and_exits_when_the_client_process_is_gone() {
    let mut editor = watched_process();
    let mut server = Served::start(&["--stdio", &format!("--clientProcessId={}", editor.id())]);
    server.initialize();
    let uri = "file:///ws/act.py";
    server.send(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument":
        {"uri": uri, "languageId": "python", "version": 1, "text": FIXTURE}}}));
    let published = server.wait_for(|m| m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri);
    let codes: Vec<&str> = published["params"]["diagnostics"]
        .as_array()
        .expect("diagnostics array")
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert!(codes.contains(&"KL005"), "diagnostics over --stdio: {codes:?}");

    // Still serving while the editor lives (two poll periods).
    assert!(server.exit_within(Duration::from_secs(7)).is_none(), "exited while the client process lived");
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover",
        "params": {"textDocument": {"uri": uri}, "position": {"line": 7, "character": 30}}}));
    let hover = server.wait_for(|m| m["id"] == 2 && m.get("method").is_none());
    assert!(hover["result"].to_string().contains("KL005"), "still answers requests: {hover}");

    editor.kill().expect("kill the watched process");
    editor.wait().expect("reap it"); // a zombie still exists for kill(pid, 0)
    let status = server.exit_within(Duration::from_secs(10));
    assert!(status.is_some(), "server still running 10 s after its client process died");
}

#[test]
fn client_process_id_as_a_separate_argument_is_watched_too() {
    let mut editor = watched_process();
    let pid = editor.id().to_string();
    let mut server = Served::start(&["--stdio", "--clientProcessId", &pid]);
    server.initialize();
    editor.kill().expect("kill the watched process");
    editor.wait().expect("reap it");
    assert!(
        server.exit_within(Duration::from_secs(10)).is_some(),
        "server still running 10 s after its client process died"
    );
}

#[test]
fn without_client_process_id_the_server_keeps_serving_until_exit() {
    let mut server = Served::start(&["--stdio"]);
    server.initialize();
    assert!(server.exit_within(Duration::from_secs(4)).is_none(), "exited on its own");
    server.send(json!({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}));
    server.wait_for(|m| m["id"] == 3 && m.get("method").is_none());
    server.send(json!({"jsonrpc": "2.0", "method": "exit"}));
    let status = server.exit_within(Duration::from_secs(5)).expect("exits after exit");
    assert_eq!(status.code(), Some(0));
}

fn serve_with(args: &[&str]) -> std::process::Output {
    Command::new(server_binary()).arg("serve").args(args).stdin(Stdio::null()).output().expect("the server runs")
}

#[test]
fn unknown_arguments_are_refused_by_name() {
    let out = serve_with(&["--stdio", "--tcp"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains("unexpected argument '--tcp'"), "stderr: {stderr}");
    assert!(stderr.contains("Usage: kernel-lsp serve"), "stderr: {stderr}");
    assert!(out.stdout.is_empty(), "nothing on stdout, the protocol channel");

    let out = serve_with(&["--clientProcessId=abc"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains("--clientProcessId") && stderr.contains("abc"), "stderr: {stderr}");
}
